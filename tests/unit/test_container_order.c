/* Unit tests: a container plugin loaded after distenv (distenv_sys.h),
 * from the list of loaded objects in load order, and the live check in
 * this test program, which loads no plugin. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "distenv_sys.h"

static void only_spank_pyxis_is_a_container_plugin(void **state)
{
	(void) state;
	assert_true(distenv_is_container_plugin("spank_pyxis.so"));
	assert_true(distenv_is_container_plugin(
		"/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so"));
	assert_false(distenv_is_container_plugin("/usr/lib/spank_pyxis.so.1"));
	assert_false(distenv_is_container_plugin("/usr/lib/pyxis.so"));
	assert_false(distenv_is_container_plugin("/x/distenv.so"));
	assert_false(distenv_is_container_plugin(NULL));
}

static void after_means_later_in_load_order(void **state)
{
	const char *self = "/usr/lib/slurm/distenv.so";
	const char *after[] = { "", "/lib/libc.so.6", self, "/lib/libyaml.so",
				"/usr/lib/slurm/spank_pyxis.so" };
	const char *before[] = { "", "/usr/lib/slurm/spank_pyxis.so", self,
				 "/lib/libyaml.so" };
	const char *none[] = { "", self, "/usr/lib/slurm/other.so" };
	const char *no_self[] = { "", "/usr/lib/slurm/spank_pyxis.so" };

	(void) state;
	assert_int_equal(distenv_container_after(after, 5, self), 4);
	assert_int_equal(distenv_container_after(before, 4, self), -1);
	assert_int_equal(distenv_container_after(none, 3, self), -1);
	assert_int_equal(distenv_container_after(no_self, 2, self), -1);
	assert_int_equal(distenv_container_after(after, 5, NULL), -1);
	/* within the first n only */
	assert_int_equal(distenv_container_after(after, 4, self), -1);
}

static void no_container_plugin_in_this_program(void **state)
{
	char name[256] = "";

	(void) state;
	assert_int_equal(distenv_container_plugin_after(
				 (const void *) distenv_container_after, name,
				 sizeof(name)),
			 0);
	assert_string_equal(name, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(only_spank_pyxis_is_a_container_plugin),
		cmocka_unit_test(after_means_later_in_load_order),
		cmocka_unit_test(no_container_plugin_in_this_program),
	};

	return cmocka_run_group_tests_name("container_order", tests, NULL,
					   NULL);
}
