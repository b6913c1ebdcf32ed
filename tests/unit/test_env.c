/* Unit tests: environment look-ups and the DISTENV_SET marker. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_env.h"
#include "distenv_env_check.h"

static void lookup(void **state)
{
	const char *env[] = {"A=1", "AB=2", "C=", NULL};

	(void)state;
	assert_string_equal(distenv_env_get(env, "A"), "1");
	assert_string_equal(distenv_env_get(env, "AB"), "2");
	assert_string_equal(distenv_env_get(env, "C"), "");
	assert_null(distenv_env_get(env, "D"));
	assert_null(distenv_env_get(NULL, "A"));
}

static void marker_round_trip(void **state)
{
	struct distenv_vars vars = {0};
	struct distenv_error err;
	char marker[512], entry[600];
	const char *env[4] = {"NNODES=2", "MASTER_PORT=29500", NULL, NULL};

	(void)state;
	distenv_vars_add(&vars, "NNODES", "2", DISTENV_ACTION_SET, &err, "r");
	distenv_vars_add(&vars, "MASTER_PORT", "29500", DISTENV_ACTION_KEPT,
			 &err, "r");
	assert_int_equal(distenv_env_marker(&vars, marker, sizeof(marker), &err), 0);
	snprintf(entry, sizeof(entry), "NNODES:%08x", distenv_value_hash("2"));
	assert_string_equal(marker, entry);
	snprintf(entry, sizeof(entry), "DISTENV_SET=%s", marker);
	env[2] = entry;
	/* distenv's own value: not the user's. */
	assert_null(distenv_env_user_value(env, "NNODES"));
	/* not in the marker: the user's. */
	assert_string_equal(distenv_env_user_value(env, "MASTER_PORT"), "29500");
	/* the user changed it after distenv set it: the user's. */
	env[0] = "NNODES=3";
	assert_string_equal(distenv_env_user_value(env, "NNODES"), "3");
	/* a name that only ends like a marked one is not matched. */
	env[0] = "XNNODES=2";
	assert_null(distenv_env_user_value(env, "NNODES"));
	distenv_vars_free(&vars);
	assert_int_equal(distenv_env_marker(&vars, marker, 0, &err), -1);
}

static void hash_is_fnv1a(void **state)
{
	(void)state;
	/* Published FNV-1a 32-bit test vectors. */
	assert_int_equal(distenv_value_hash(""), 0x811c9dc5u);
	assert_int_equal(distenv_value_hash("a"), 0xe40c292cu);
	assert_int_equal(distenv_value_hash("foobar"), 0xbf9cf968u);
}

static void numbers(void **state)
{
	uint32_t v;

	(void)state;
	assert_int_equal(distenv_parse_u32("4294967295", UINT32_MAX, &v), 0);
	assert_int_equal(v, 4294967295u);
	assert_int_equal(distenv_parse_u32("4294967296", UINT32_MAX, &v), -1);
	assert_int_equal(distenv_parse_u32("", 10, &v), -1);
	assert_int_equal(distenv_parse_u32("11", 10, &v), -1);
	assert_int_equal(distenv_parse_u32(" 1", 10, &v), -1);
}

/* DISTENV_SET as distenv builds it for the values given. */
static void marker_of(char *buf, size_t len, const char *nnodes,
		      const char *port)
{
	snprintf(buf, len, "DISTENV_SET=NNODES:%08x  MASTER_PORT:%08x",
		 distenv_value_hash(nnodes), distenv_value_hash(port));
}

static void check_same_replaced_dropped(void **state)
{
	struct distenv_env_found found[DISTENV_ENV_CHECK_MAX];
	struct distenv_error err;
	char marker[128];
	const char *env[4] = { "NNODES=2", "MASTER_PORT=21007", marker, NULL };
	size_t n = 99;

	(void) state;
	marker_of(marker, sizeof(marker), "2", "21007");
	assert_int_equal(distenv_env_check(env, found, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(found[0].name, "NNODES");
	assert_string_equal(found[0].live, "2");
	assert_int_equal(found[0].same, 1);
	assert_string_equal(found[1].name, "MASTER_PORT");
	assert_int_equal(found[1].same, 1);
	/* the image's value over distenv's; a variable dropped */
	env[0] = "NNODES=7";
	env[1] = marker;
	env[2] = NULL;
	assert_int_equal(distenv_env_check(env, found, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(found[0].live, "7");
	assert_int_equal(found[0].same, 0);
	assert_null(found[1].live);
	assert_int_equal(found[1].same, 0);
}

static void check_errors(void **state)
{
	struct distenv_env_found found[DISTENV_ENV_CHECK_MAX];
	struct distenv_error err;
	const char *none[] = { "NNODES=2", NULL };
	const char *bad[] = { "DISTENV_SET=NNODES:370cabd5 PORT:12", NULL };
	const char *empty_name[] = { "DISTENV_SET=:370cabd5", NULL };
	const char *upper[] = { "DISTENV_SET=NNODES:370CABD5", NULL };
	size_t n;

	(void) state;
	assert_int_equal(distenv_env_check(none, found, &n, &err), -1);
	assert_string_equal(err.where, "DISTENV_SET");
	assert_non_null(strstr(err.what, "not set"));
	assert_int_equal(distenv_env_check(bad, found, &n, &err), -1);
	assert_string_equal(err.what,
			    "\"PORT:12\" is not NAME:HASH (8 hex digits)");
	assert_int_equal(distenv_env_check(empty_name, found, &n, &err), -1);
	/* distenv writes %08x: lower case only */
	assert_int_equal(distenv_env_check(upper, found, &n, &err), -1);
}

static void check_at_most_max(void **state)
{
	struct distenv_env_found found[DISTENV_ENV_CHECK_MAX];
	struct distenv_error err;
	static char marker[20 * (DISTENV_ENV_CHECK_MAX + 2)];
	const char *env[] = { marker, NULL };
	size_t n, used, i;

	(void) state;
	used = (size_t) snprintf(marker, sizeof(marker), "DISTENV_SET=");
	for (i = 0; i < DISTENV_ENV_CHECK_MAX; i++)
		used += (size_t) snprintf(marker + used, sizeof(marker) - used,
					  "V%zu:00000000 ", i);
	assert_int_equal(distenv_env_check(env, found, &n, &err), 0);
	assert_int_equal(n, DISTENV_ENV_CHECK_MAX);
	assert_int_equal(found[0].same, 0); /* V0 is not set */
	snprintf(marker + used, sizeof(marker) - used, "X:00000000");
	assert_int_equal(distenv_env_check(env, found, &n, &err), -1);
	assert_non_null(strstr(err.what, "more than"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lookup),
		cmocka_unit_test(marker_round_trip),
		cmocka_unit_test(hash_is_fnv1a),
		cmocka_unit_test(numbers),
		cmocka_unit_test(check_same_replaced_dropped),
		cmocka_unit_test(check_errors),
		cmocka_unit_test(check_at_most_max),
	};

	return cmocka_run_group_tests_name("env", tests, NULL, NULL);
}
