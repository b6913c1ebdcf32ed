/* Unit tests: the site policy loader refuses files a user could have
 * planted or changed (links, FIFOs, other owners, group/other write). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "distenv_policy.h"
#include "tmpdir_fixture.h"

static struct distenv_policy_file file;
static struct distenv_error err;

static int load(const char *name, int flags)
{
	distenv_error_clear(&err);
	return distenv_policy_load(in_dir(name), flags, &file, &err);
}

static int setup(void **state)
{
	(void)state;
	tmpdir_make("distenv-policy");
	distenv_policy_file_init(&file);
	return 0;
}

static int teardown(void **state)
{
	const char *const names[] = {"ok.yaml", "gw.yaml", "ow.yaml",
				     "link.yaml", "fifo.yaml", "big.yaml",
				     "bad.yaml", "other.yaml", "sub", NULL};

	(void)state;
	tmpdir_remove(names);
	distenv_policy_file_free(&file);
	return 0;
}

static void own_file(void **state)
{
	char want[160];

	(void)state;
	write_file("ok.yaml", "default_mode: tasks\n", 0644);
	assert_int_equal(load("ok.yaml", DISTENV_POLICY_LOAD_TRUST_OWNER), 0);
	assert_int_equal(file.global.default_mode, DISTENV_MODE_TASKS);
	assert_string_equal(file.path, in_dir("ok.yaml"));
	if (geteuid() == 0) {
		/* root owns it: strict accepts it too */
		assert_int_equal(load("ok.yaml", DISTENV_POLICY_LOAD_STRICT), 0);
		return;
	}
	assert_int_equal(load("ok.yaml", DISTENV_POLICY_LOAD_STRICT), -1);
	snprintf(want, sizeof(want), "refused: owned by uid %u, not root",
		 (unsigned)geteuid());
	assert_string_equal(err.what, want);
	assert_int_equal(file.global.set, 0);
}

static void writable_by_others(void **state)
{
	(void)state;
	write_file("gw.yaml", "hca: off\n", 0664);
	assert_int_equal(load("gw.yaml", DISTENV_POLICY_LOAD_TRUST_OWNER), -1);
	assert_string_equal(err.where, in_dir("gw.yaml"));
	assert_string_equal(err.what, "refused: mode 0664 lets its group write it");
	assert_non_null(strstr(err.fix, "chown root: FILE && chmod 644 FILE"));
	write_file("ow.yaml", "hca: off\n", 0602);
	assert_int_equal(load("ow.yaml", DISTENV_POLICY_LOAD_TRUST_OWNER), -1);
	assert_string_equal(err.what, "refused: mode 0602 lets anyone write it");
	assert_int_equal(file.global.set, 0);
}

static void other_owner(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* only root can give a file away */
	write_file("other.yaml", "hca: off\n", 0644);
	assert_int_equal(chown(tmp_path, 65534, 65534), 0);
	assert_int_equal(load("other.yaml", DISTENV_POLICY_LOAD_STRICT), -1);
	assert_string_equal(err.what, "refused: owned by uid 65534, not root");
	/* The test override trusts the caller's own files, not others'. */
	assert_int_equal(load("other.yaml", DISTENV_POLICY_LOAD_TRUST_OWNER), -1);
	assert_string_equal(err.what, "refused: owned by uid 65534, not root");
}

static void not_a_plain_file(void **state)
{
	(void)state;
	write_file("ok.yaml", "hca: off\n", 0644);
	make_link("ok.yaml", "link.yaml");
	assert_int_equal(load("link.yaml", DISTENV_POLICY_LOAD_TRUST_OWNER), -1);
	assert_string_equal(err.what,
			    "cannot open the site policy file: it is a symbolic link");
	assert_string_equal(err.fix, "name the file itself, not a symbolic link");

	/* A FIFO must neither hang the loader nor be read. */
	assert_int_equal(mkfifo(in_dir("fifo.yaml"), 0644), 0);
	assert_int_equal(load("fifo.yaml", DISTENV_POLICY_LOAD_TRUST_OWNER), -1);
	assert_string_equal(err.what, "refused: not a regular file");

	assert_int_equal(mkdir(in_dir("sub"), 0755), 0);
	assert_int_equal(load("sub", DISTENV_POLICY_LOAD_TRUST_OWNER), -1);
	assert_string_equal(err.what, "refused: not a regular file");

	assert_int_equal(load("missing.yaml", DISTENV_POLICY_LOAD_TRUST_OWNER), -1);
	assert_string_equal(err.what,
			    "cannot open the site policy file: No such file or "
			    "directory");
	assert_string_equal(err.where, in_dir("missing.yaml"));

	assert_int_equal(distenv_policy_load("etc/distenv.yaml",
					     DISTENV_POLICY_LOAD_TRUST_OWNER,
					     &file, &err),
			 -1);
	assert_string_equal(err.what, "not an absolute path");
}

static void too_big(void **state)
{
	FILE *f;
	int i;

	(void)state;
	f = fopen(in_dir("big.yaml"), "w");
	assert_non_null(f);
	for (i = 0; i < 70000; i++)
		fputs("# padding\n", f); /* 700,000 bytes: accepted */
	fclose(f);
	assert_int_equal(load("big.yaml", DISTENV_POLICY_LOAD_TRUST_OWNER), 0);
	f = fopen(in_dir("big.yaml"), "a");
	assert_non_null(f);
	for (i = 0; i < 40000; i++)
		fputs("# padding\n", f);
	fclose(f);
	assert_int_equal(load("big.yaml", DISTENV_POLICY_LOAD_TRUST_OWNER), -1);
	assert_string_equal(err.what,
			    "refused: 1100000 bytes, over the cap of 1048576 bytes");
	assert_string_equal(err.fix, "name a file of at most 1048576 bytes");
}

static void parse_errors_name_the_file(void **state)
{
	char want[160];

	(void)state;
	write_file("bad.yaml", "version: 1\ndefault_mode: always\n", 0644);
	assert_int_equal(load("bad.yaml", DISTENV_POLICY_LOAD_TRUST_OWNER), -1);
	snprintf(want, sizeof(want), "%s:2:15", in_dir("bad.yaml"));
	assert_string_equal(err.where, want);
	assert_string_equal(err.what, "default_mode: unknown mode 'always'");
	assert_int_equal(file.global.set, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(own_file, setup, teardown),
		cmocka_unit_test_setup_teardown(writable_by_others, setup, teardown),
		cmocka_unit_test_setup_teardown(other_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(not_a_plain_file, setup, teardown),
		cmocka_unit_test_setup_teardown(too_big, setup, teardown),
		cmocka_unit_test_setup_teardown(parse_errors_name_the_file, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("policy_load", tests, NULL, NULL);
}
