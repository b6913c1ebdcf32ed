/* Unit tests: the first and later hosts of Slurm node lists, through libslurm's
 * hostlist functions (no Slurm daemon involved). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_sys.h"

static const char *first(const char *list)
{
	static char buf[256];
	struct distenv_error err;

	if (distenv_first_host(list, "SLURM_STEP_NODELIST", buf, sizeof(buf), &err))
		return NULL;
	return buf;
}

static void common_forms(void **state)
{
	(void)state;
	assert_string_equal(first("gpu-[001-064]"), "gpu-001");
	assert_string_equal(first("a[1-2],b[01-03]"), "a1");
	assert_string_equal(first("n1"), "n1");
	assert_string_equal(first("node[7,3,5]"), "node7");
}

/* The step's own order, not sorted order (docs/contracts.md 5). */
static void step_order_is_kept(void **state)
{
	(void)state;
	assert_string_equal(first("nb,na"), "nb");
	assert_string_equal(first("b[01-03],a[1-2]"), "b01");
	assert_string_equal(first("gpu-[064,001-063]"), "gpu-064");
}

static void ten_thousand_nodes(void **state)
{
	size_t len = 10000 * 12 + 1, used = 0;
	char *list = malloc(len);
	int i;

	(void)state;
	assert_string_equal(first("gpu-[00001-10000]"), "gpu-00001");
	assert_non_null(list);
	for (i = 10000; i >= 1; i--)
		used += (size_t)snprintf(list + used, len - used, "%sh%d",
					 used ? "," : "", i);
	assert_string_equal(first(list), "h10000");
	free(list);
}

static void errors(void **state)
{
	char buf[4];
	struct distenv_error err;

	(void)state;
	assert_int_equal(distenv_first_host("", "SLURM_STEP_NODELIST", buf,
					    sizeof(buf), &err), -1);
	assert_string_equal(err.where, "SLURM_STEP_NODELIST");
	assert_string_equal(err.what, "no node list");
	assert_int_equal(distenv_first_host(NULL, "SLURM_JOB_NODELIST", buf,
					    sizeof(buf), &err), -1);
	assert_int_equal(distenv_first_host("gpu-[001-064]", "X", buf,
					    sizeof(buf), &err), -1);
	assert_string_equal(err.what, "host name is too long");
	assert_int_equal(distenv_first_host("gpu-[064-001", "X", buf,
					    sizeof(buf), &err), -1);
	/* Shapes libslurm's parser stalls on are refused before it. */
	assert_int_equal(distenv_first_host("n[1-?3333333][10?33]", "X", buf,
					    sizeof(buf), &err), -1);
	assert_string_equal(err.what, "'n[1-?3333333][10?33]' is not a Slurm node list");
	assert_int_equal(distenv_first_host("n[[1-2]]", "X", buf, sizeof(buf), &err), -1);
	assert_int_equal(distenv_first_host("n[1-99999999999]", "X", buf, sizeof(buf), &err), -1);
	assert_int_equal(distenv_first_host("n;1", "X", buf, sizeof(buf), &err), -1);
}

/* Several bracket groups in one name: libslurm builds one range per
 * combination of all groups but the last. A few are fine; 20 groups of
 * [1-2] (tests/fuzz/corpus/fuzz_nodelist/regress-many-brackets) took it
 * past 10 s, so more than 4096 prefixes are refused before libslurm. */
static void bracket_groups(void **state)
{
	char buf[256], list[400];
	struct distenv_error err;
	int i, used = 0;

	(void)state;
	assert_string_equal(first("rack[1-2]-node[1-4]"), "rack1-node1");
	assert_string_equal(first("r[3,1]-s[1-2]-n[7-9]"), "r3-s1-n7");
	/* 4096 prefixes (2^12 groups before the last) still go through. */
	for (i = 0; i < 12; i++)
		used += snprintf(list + used, sizeof(list) - (size_t)used, "a[1-2]");
	snprintf(list + used, sizeof(list) - (size_t)used, "n[5-6]");
	assert_string_equal(first(list), "a1a1a1a1a1a1a1a1a1a1a1a1n5");
	/* One more group is refused, with the reason. */
	snprintf(list, sizeof(list), "b[1-2]%s", "a[1-2]a[1-2]a[1-2]a[1-2]a[1-2]a[1-2]a[1-2]a[1-2]a[1-2]a[1-2]a[1-2]a[1-2]n[5-6]");
	assert_int_equal(distenv_first_host(list, "SLURM_STEP_NODELIST", buf,
					    sizeof(buf), &err), -1);
	assert_string_equal(err.where, "SLURM_STEP_NODELIST");
	assert_non_null(strstr(err.what, "stands for more than 4096 name prefixes"));
	/* The last group is a range, not prefixes: wide is fine there,
	 * and not before it. */
	assert_string_equal(first("x[1-2]y[0-9999]"), "x1y0");
	assert_int_equal(distenv_first_host("x[0-9999]y[1-2]", "X", buf,
					    sizeof(buf), &err), -1);
}

static const char *nth(const char *list, uint32_t idx)
{
	static char buf[256];
	struct distenv_error err;

	if (distenv_nth_host(list, idx, "SLURM_STEP_NODELIST", buf,
			     sizeof(buf), &err))
		return NULL;
	return buf;
}

/* Names past the first, element by element, in the list's order. */
static void later_names(void **state)
{
	struct distenv_error err;
	char buf[64];

	(void)state;
	assert_string_equal(nth("n[1-2]", 1), "n2");
	assert_string_equal(nth("nb,na", 1), "na");
	assert_string_equal(nth("a[1-2],b[01-03]", 2), "b01");
	assert_string_equal(nth("a[1-2],b[01-03]", 4), "b03");
	assert_string_equal(nth("gpu-[00001-10000]", 1), "gpu-00002");
	assert_string_equal(nth("gpu-[064,001-063]", 1), "gpu-001");
	assert_int_equal(distenv_nth_host("n1", 1, "SLURM_STEP_NODELIST", buf,
					  sizeof(buf), &err), -1);
	assert_string_equal(err.what, "'n1' has no name at index 1");
	assert_int_equal(distenv_nth_host("a[1-2],b[01-03]", 5, "X", buf,
					  sizeof(buf), &err), -1);
	/* an element after the one asked for is never parsed */
	assert_string_equal(nth("n[1-2],n;1", 1), "n2");
	assert_null(nth("n[1-2],n;1", 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(common_forms),
		cmocka_unit_test(step_order_is_kept),
		cmocka_unit_test(ten_thousand_nodes),
		cmocka_unit_test(errors),
		cmocka_unit_test(bracket_groups),
		cmocka_unit_test(later_names),
	};

	return cmocka_run_group_tests_name("hostlist", tests, NULL, NULL);
}
