/* Unit tests: environment look-ups and the DISTENV_SET marker. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_env.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lookup),
		cmocka_unit_test(marker_round_trip),
		cmocka_unit_test(hash_is_fnv1a),
		cmocka_unit_test(numbers),
	};

	return cmocka_run_group_tests_name("env", tests, NULL, NULL);
}
