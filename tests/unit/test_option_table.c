/* Unit tests: the option table's rows are well formed, and
 * distenv_request_set takes every row of its parser and no other. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_option_table.h"
#include "distenv_options.h"

/* SPANK_OPTION_MAXLEN of slurm/spank.h (22.05 to 26.05): longer names
 * are refused by spank_option_register. */
#define SPANK_NAME_MAX 75

static void rows_are_well_formed(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < DISTENV_OPT_COUNT; i++) {
		const struct distenv_option_row *r = &distenv_option_table[i];

		/* every id has a row, and the row a name */
		assert_true(r->plugin_name || r->command_name);
		assert_non_null(r->usage);
		assert_true(r->usage[0] != '\0');
		assert_null(strchr(r->usage, '\n'));
		assert_true(r->has_arg >= 0 && r->has_arg <= 2);
		/* a value is named exactly when the option takes one */
		assert_int_equal(r->arg != NULL, r->has_arg != 0);
		/* an optional value needs --opt=VALUE, which getopt_long
		 * only takes so: the command's options never have one */
		if (r->has_arg == 2)
			assert_null(r->command_name);
		assert_int_equal(r->command_name != NULL, r->commands != 0);
		assert_int_equal(r->commands & ~DISTENV_IN_EVERY, 0);
		if (r->plugin_name) {
			assert_int_equal(strncmp(r->plugin_name, "distenv", 7), 0);
			assert_true(strlen(r->plugin_name) <= SPANK_NAME_MAX);
		}
	}
}

/* No two options of the plugin, or of one subcommand, share a name or
 * a letter, and every subcommand takes --help. */
static void names_are_unique_where_taken(void **state)
{
	unsigned bit;
	size_t i, j;

	(void)state;
	for (i = 0; i < DISTENV_OPT_COUNT; i++)
		for (j = i + 1; j < DISTENV_OPT_COUNT; j++) {
			const struct distenv_option_row *a = &distenv_option_table[i];
			const struct distenv_option_row *b = &distenv_option_table[j];

			if (a->plugin_name && b->plugin_name)
				assert_string_not_equal(a->plugin_name,
							b->plugin_name);
			if (!(a->commands & b->commands))
				continue;
			assert_string_not_equal(a->command_name, b->command_name);
			if (a->letter)
				assert_int_not_equal(a->letter, b->letter);
		}
	for (bit = 1; bit & DISTENV_IN_EVERY; bit <<= 1)
		assert_true(distenv_option_table[DISTENV_OPT_HELP].commands & bit);
}

static void request_rows_set_the_request(void **state)
{
	struct distenv_request req;
	struct distenv_error err;

	(void)state;
	memset(&req, 0, sizeof(req));
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_MODE, NULL,
					     "--distenv", &err), 0);
	assert_int_equal(req.mode, DISTENV_MODE_TORCHRUN);
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_CMD_MODE,
					     "elastic", "--mode", &err), 0);
	assert_int_equal(req.mode, DISTENV_MODE_ELASTIC);
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_NODE_RANGE,
					     "2:4", "--nodes", &err), 0);
	assert_int_equal(req.min_nodes, 2);
	assert_int_equal(req.max_nodes, 4);
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_MAX_RESTARTS,
					     "0", "--max-restarts", &err), 0);
	assert_int_equal(req.max_restarts, 0);
	assert_int_equal(req.max_restarts_given, 1);
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_PORT, "29500",
					     "--distenv-port", &err), 0);
	assert_int_equal(req.port, 29500);
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_IFNAME, "=ib0",
					     "--distenv-ifname", &err), 0);
	assert_string_equal(req.ifname, "=ib0");
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_NPROC, "8",
					     "--nproc", &err), 0);
	assert_int_equal(req.nproc, 8);
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_SHOW, NULL,
					     "--distenv-show", &err), 0);
	assert_int_equal(req.show, 1);
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_MARK_STORAGE,
					     NULL, "--distenv-mark-storage",
					     &err), 0);
	assert_int_equal(req.mark_storage, 1);
}

static void errors_name_the_option_as_given(void **state)
{
	struct distenv_request req;
	struct distenv_error err;

	(void)state;
	memset(&req, 0, sizeof(req));
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_PORT, "80",
					     "--port", &err), -1);
	assert_string_equal(err.where, "--port");
	assert_string_equal(err.what,
			    "'80' is not a port number from 1024 to 65535");
	assert_int_equal(req.port, 0);
	/* a bad interface list leaves the request's as it was */
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_IFNAME,
					     "eth0;x", "--distenv-ifname", &err),
			 -1);
	assert_string_equal(err.where, "--distenv-ifname");
	assert_string_equal(req.ifname, "");
	assert_int_equal(distenv_request_set(&req, DISTENV_OPT_MAX_RESTARTS,
					     "1001", "--max-restarts", &err),
			 -1);
	assert_int_equal(req.max_restarts_given, 0);
}

/* Exactly the rows of DISTENV_PARSE_REQUEST are distenv_request_set's. */
static void other_rows_are_refused(void **state)
{
	struct distenv_request req;
	struct distenv_error err;
	size_t i;

	(void)state;
	for (i = 0; i < DISTENV_OPT_COUNT; i++) {
		const struct distenv_option_row *r = &distenv_option_table[i];

		if (r->parser == DISTENV_PARSE_REQUEST)
			continue;
		memset(&req, 0, sizeof(req));
		assert_int_equal(distenv_request_set(&req, i, "1", "--x", &err),
				 -1);
		assert_string_equal(err.what, "not an option of the request");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rows_are_well_formed),
		cmocka_unit_test(names_are_unique_where_taken),
		cmocka_unit_test(request_rows_set_the_request),
		cmocka_unit_test(errors_name_the_option_as_given),
		cmocka_unit_test(other_rows_are_refused),
	};

	return cmocka_run_group_tests_name("option_table", tests, NULL, NULL);
}
