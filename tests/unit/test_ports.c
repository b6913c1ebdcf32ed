/* Unit tests: SLURM_STEP_RESV_PORTS, ephemeral range, derived port. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_ports.h"

static void resv_forms(void **state)
{
	struct distenv_error err;
	uint16_t p = 0;

	(void)state;
	assert_int_equal(distenv_resv_ports_first("20000-20002", &p, &err), 0);
	assert_int_equal(p, 20000);
	assert_int_equal(distenv_resv_ports_first("20000,20005-20006", &p, &err), 0);
	assert_int_equal(p, 20000);
	assert_int_equal(distenv_resv_ports_first("21001", &p, &err), 0);
	assert_int_equal(p, 21001);
	assert_int_equal(distenv_resv_ports_first("65535", &p, &err), 0);
	assert_int_equal(p, 65535);
}

static void resv_errors(void **state)
{
	const char *bad[] = {"", "abc", "20000-", "-20000", "20002-20000",
			     "20000,", "20000,,20001", "0", "65536",
			     "20000 20001", "20000-20002x", "1234567"};
	struct distenv_error err;
	uint16_t p = 0;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(distenv_resv_ports_first(bad[i], &p, &err), -1);
		assert_string_equal(err.where, "SLURM_STEP_RESV_PORTS");
	}
	distenv_resv_ports_first("abc", &p, &err);
	assert_string_equal(err.what, "'abc' is not a port list like 20000-20002 or 20000,20005");
}

static void ephemeral(void **state)
{
	struct distenv_error err;
	uint16_t lo, hi;

	(void)state;
	assert_int_equal(distenv_parse_ephemeral("32768\t60999\n", &lo, &hi, &err), 0);
	assert_int_equal(lo, 32768);
	assert_int_equal(hi, 60999);
	assert_int_equal(distenv_parse_ephemeral("1024 65535", &lo, &hi, &err), 0);
	assert_int_equal(distenv_parse_ephemeral("60999 32768", &lo, &hi, &err), -1);
	assert_int_equal(distenv_parse_ephemeral("32768", &lo, &hi, &err), -1);
	assert_int_equal(distenv_parse_ephemeral("1 2 3", &lo, &hi, &err), -1);
	assert_int_equal(distenv_parse_ephemeral("70000 80000", &lo, &hi, &err), -1);
}

static void derived_port_in_range(void **state)
{
	struct distenv_error err;
	uint16_t p;
	uint32_t job;

	(void)state;
	/* No overlap with the ephemeral range: every port in range. */
	for (job = 0; job < 5000; job += 7) {
		assert_int_equal(distenv_derive_port(job, 3, 29600, 32767, 32768,
						     60999, &p, &err), 0);
		assert_true(p >= 29600 && p <= 32767);
	}
	/* Same ids, same port: every node of a step agrees. */
	{
		uint16_t a, b;

		distenv_derive_port(123456, 7, 29600, 32767, 32768, 60999, &a, &err);
		distenv_derive_port(123456, 7, 29600, 32767, 32768, 60999, &b, &err);
		assert_int_equal(a, b);
	}
}

static void derived_port_skips_ephemeral(void **state)
{
	struct distenv_error err;
	uint16_t p;
	uint32_t job, step;

	(void)state;
	/* Range 30000-40000 overlapping ephemeral 32768-60999: only
	 * 30000-32767 is usable. */
	for (job = 1; job < 3000; job++)
		for (step = 0; step < 3; step++) {
			assert_int_equal(distenv_derive_port(job, step, 30000, 40000,
							     32768, 60999, &p, &err), 0);
			assert_true(p >= 30000 && p <= 32767);
		}
	/* Ephemeral in the middle: both pieces used, never inside. */
	{
		int below = 0, above = 0;

		for (job = 1; job < 3000; job++) {
			distenv_derive_port(job, 0, 20000, 20099, 20010, 20089, &p, &err);
			assert_false(p >= 20010 && p <= 20089);
			below += p < 20010;
			above += p > 20089;
		}
		assert_true(below > 0);
		assert_true(above > 0);
	}
	/* Edges: one-port range; range exactly the ephemeral range. */
	assert_int_equal(distenv_derive_port(9, 9, 20000, 20000, 32768, 60999, &p, &err), 0);
	assert_int_equal(p, 20000);
	assert_int_equal(distenv_derive_port(9, 9, 32768, 60999, 32768, 60999, &p, &err), -1);
	assert_string_equal(err.what, "every port of 32768-60999 lies in the kernel's "
				      "ephemeral range 32768-60999");
	/* lo > hi means "no ephemeral range known". */
	assert_int_equal(distenv_derive_port(9, 0, 40000, 40000, 1, 0, &p, &err), 0);
	assert_int_equal(p, 40000);
}

static void concurrent_steps_differ(void **state)
{
	struct distenv_error err;
	uint16_t seen[64];
	uint32_t step, j;

	(void)state;
	/* Steps of one job running at the same time get different ports. */
	for (step = 0; step < 64; step++) {
		distenv_derive_port(4242, step, 29600, 32767, 32768, 60999,
				    &seen[step], &err);
		for (j = 0; j < step; j++)
			assert_int_not_equal(seen[j], seen[step]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(resv_forms),
		cmocka_unit_test(resv_errors),
		cmocka_unit_test(ephemeral),
		cmocka_unit_test(derived_port_in_range),
		cmocka_unit_test(derived_port_skips_ephemeral),
		cmocka_unit_test(concurrent_steps_differ),
	};

	return cmocka_run_group_tests_name("ports", tests, NULL, NULL);
}
