/* Unit tests: option values and plugstack arguments. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_options.h"

static void mode_values(void **state)
{
	struct distenv_error err;
	enum distenv_mode m = DISTENV_MODE_UNSET;

	(void)state;
	assert_int_equal(distenv_parse_mode(NULL, "--distenv", &m, &err), 0);
	assert_int_equal(m, DISTENV_MODE_TORCHRUN);
	assert_int_equal(distenv_parse_mode("tasks", "--distenv", &m, &err), 0);
	assert_int_equal(m, DISTENV_MODE_TASKS);
	assert_int_equal(distenv_parse_mode("off", "--distenv", &m, &err), 0);
	assert_int_equal(m, DISTENV_MODE_OFF);
	assert_int_equal(distenv_parse_mode("mpi", "--distenv", &m, &err), -1);
	assert_string_equal(err.where, "--distenv");
	assert_string_equal(err.what, "unknown mode 'mpi'");
	assert_non_null(strstr(err.fix, "torchrun"));
}

static void port_values(void **state)
{
	struct distenv_error err;
	uint16_t p = 0;

	(void)state;
	assert_int_equal(distenv_parse_port("1024", "--distenv-port", &p, &err), 0);
	assert_int_equal(p, 1024);
	assert_int_equal(distenv_parse_port("65535", "--distenv-port", &p, &err), 0);
	assert_int_equal(p, 65535);
	assert_int_equal(distenv_parse_port("1023", "--distenv-port", &p, &err), -1);
	assert_string_equal(err.what, "'1023' is not a port number from 1024 to 65535");
	assert_int_equal(distenv_parse_port("65536", "--distenv-port", &p, &err), -1);
	assert_int_equal(distenv_parse_port("abc", "--distenv-port", &p, &err), -1);
	assert_string_equal(err.where, "--distenv-port");
	assert_string_equal(err.fix, "give a port number from 1024 to 65535");
	assert_int_equal(distenv_parse_port("", "--distenv-port", &p, &err), -1);
	assert_string_equal(err.what, "no value given");
	assert_int_equal(distenv_parse_port("+2000", "--distenv-port", &p, &err), -1);
	assert_int_equal(distenv_parse_port("2000 ", "--distenv-port", &p, &err), -1);
	assert_int_equal(distenv_parse_port("99999999999999999999", "--distenv-port", &p, &err), -1);
}

static void nproc_values(void **state)
{
	struct distenv_error err;
	uint32_t n = 0;

	(void)state;
	assert_int_equal(distenv_parse_nproc("8", "--distenv-nproc", &n, &err), 0);
	assert_int_equal(n, 8);
	assert_int_equal(distenv_parse_nproc("0", "--distenv-nproc", &n, &err), -1);
	assert_string_equal(err.what, "'0' is not a process count from 1 to 1024");
	assert_int_equal(distenv_parse_nproc("1025", "--distenv-nproc", &n, &err), -1);
	assert_int_equal(distenv_parse_nproc("-1", "--distenv-nproc", &n, &err), -1);
}

static void elastic_values(void **state)
{
	struct distenv_error err;
	enum distenv_mode m;
	uint32_t lo = 0, hi = 0, n = 0;

	(void)state;
	assert_int_equal(distenv_parse_mode("elastic", "--distenv", &m, &err), 0);
	assert_int_equal(m, DISTENV_MODE_ELASTIC);
	assert_string_equal(distenv_mode_name(m), "elastic");
	assert_int_equal(distenv_parse_nodes_range("2:4", "--distenv-nodes", &lo,
						   &hi, &err), 0);
	assert_true(lo == 2 && hi == 4);
	assert_int_equal(distenv_parse_nodes_range("3", "--distenv-nodes", &lo,
						   &hi, &err), 0);
	assert_true(lo == 3 && hi == 3);
	assert_int_equal(distenv_parse_nodes_range("4:2", "--distenv-nodes", &lo,
						   &hi, &err), -1);
	assert_string_equal(err.what, "MIN 4 is larger than MAX 2");
	assert_int_equal(distenv_parse_nodes_range(":2", "--distenv-nodes", &lo,
						   &hi, &err), -1);
	assert_int_equal(distenv_parse_nodes_range("0:2", "--distenv-nodes", &lo,
						   &hi, &err), -1);
	assert_int_equal(distenv_parse_nodes_range("2:x", "--distenv-nodes", &lo,
						   &hi, &err), -1);
	assert_string_equal(err.where, "--distenv-nodes");
	assert_int_equal(distenv_parse_max_restarts("0", "--distenv-max-restarts",
						    &n, &err), 0);
	assert_int_equal(distenv_parse_max_restarts("1001",
						    "--distenv-max-restarts",
						    &n, &err), -1);
}

static void port_range_values(void **state)
{
	struct distenv_error err;
	uint16_t lo = 0, hi = 0;

	(void)state;
	assert_int_equal(distenv_parse_port_range("20000-20000", "r", &lo, &hi, &err), 0);
	assert_int_equal(lo, 20000);
	assert_int_equal(hi, 20000);
	assert_int_equal(distenv_parse_port_range("1024-65535", "r", &lo, &hi, &err), 0);
	assert_int_equal(distenv_parse_port_range("30000-20000", "r", &lo, &hi, &err), -1);
	assert_string_equal(err.what, "'30000-20000' is not a valid port range");
	assert_int_equal(distenv_parse_port_range("1000-2000", "r", &lo, &hi, &err), -1);
	assert_int_equal(distenv_parse_port_range("20000", "r", &lo, &hi, &err), -1);
	assert_string_equal(err.what, "'20000' is not a range LO-HI");
	assert_int_equal(distenv_parse_port_range("-20000", "r", &lo, &hi, &err), -1);
	assert_int_equal(distenv_parse_port_range("20000-", "r", &lo, &hi, &err), -1);
	assert_int_equal(distenv_parse_port_range("2-3-4", "r", &lo, &hi, &err), -1);
}

static void plugstack_args(void **state)
{
	struct distenv_site site;
	struct distenv_error err;
	char *good[] = {"default=tasks", "port_range=40000-40100"};
	char *unknown[] = {"default=torchrun", "colour=blue"};
	char *bad_mode[] = {"default=yes"};
	char *empty_mode[] = {"default="};

	(void)state;
	assert_int_equal(distenv_parse_plugstack(0, NULL, &site, &err), 0);
	assert_int_equal(site.default_mode, DISTENV_MODE_OFF);
	assert_int_equal(site.port_lo, DISTENV_PORT_LO_DEFAULT);
	assert_int_equal(site.port_hi, DISTENV_PORT_HI_DEFAULT);
	assert_int_equal(distenv_parse_plugstack(2, good, &site, &err), 0);
	assert_int_equal(site.default_mode, DISTENV_MODE_TASKS);
	assert_int_equal(site.port_lo, 40000);
	assert_int_equal(site.port_hi, 40100);
	assert_int_equal(distenv_parse_plugstack(2, unknown, &site, &err), -1);
	assert_string_equal(err.where, "plugstack.conf argument 'colour=blue'");
	assert_string_equal(err.what, "unknown argument");
	assert_int_equal(distenv_parse_plugstack(1, bad_mode, &site, &err), -1);
	assert_string_equal(err.where, "plugstack.conf argument 'default=yes'");
	assert_string_equal(err.what, "unknown mode 'yes'");
	assert_int_equal(distenv_parse_plugstack(1, empty_mode, &site, &err), -1);
	assert_string_equal(err.what, "no mode given");
	/* Every bad argument at once: the first in full, the others named. */
	{
		char *three[] = {"colour=blue", "default=torchrun", "default=yes",
				 "port_range=1-2"};

		assert_int_equal(distenv_parse_plugstack(4, three, &site, &err),
				 -1);
		assert_string_equal(err.where,
				    "plugstack.conf argument 'colour=blue'");
		assert_string_equal(err.what,
				    "unknown argument (and 2 more bad arguments: "
				    "'default=yes', 'port_range=1-2')");
	}
}

static void effective_mode(void **state)
{
	struct distenv_site site;
	struct distenv_request req;

	(void)state;
	distenv_site_defaults(&site);
	memset(&req, 0, sizeof(req));
	assert_int_equal(distenv_effective_mode(&site, &req), DISTENV_MODE_OFF);
	site.default_mode = DISTENV_MODE_TASKS;
	assert_int_equal(distenv_effective_mode(&site, &req), DISTENV_MODE_TASKS);
	req.mode = DISTENV_MODE_OFF; /* --distenv=off beats default= */
	assert_int_equal(distenv_effective_mode(&site, &req), DISTENV_MODE_OFF);
	req.mode = DISTENV_MODE_TORCHRUN;
	assert_int_equal(distenv_effective_mode(&site, &req), DISTENV_MODE_TORCHRUN);
}

static void error_format(void **state)
{
	struct distenv_error err;
	char line[2048];

	(void)state;
	distenv_error_set(&err, "--distenv-port", "give a port", "'x' is bad");
	distenv_error_format(&err, line, sizeof(line));
	assert_string_equal(line, "--distenv-port: 'x' is bad. Give a port");
	distenv_error_prefix_where(&err, "node n2");
	assert_string_equal(err.where, "node n2: --distenv-port");
	distenv_error_set(&err, NULL, NULL, "plain");
	distenv_error_format(&err, line, sizeof(line));
	assert_string_equal(line, "plain");
	distenv_error_clear(&err);
	assert_false(distenv_error_is_set(&err));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mode_values),
		cmocka_unit_test(port_values),
		cmocka_unit_test(nproc_values),
		cmocka_unit_test(elastic_values),
		cmocka_unit_test(port_range_values),
		cmocka_unit_test(plugstack_args),
		cmocka_unit_test(effective_mode),
		cmocka_unit_test(error_format),
	};

	return cmocka_run_group_tests_name("options", tests, NULL, NULL);
}
