/* Unit tests: a pyxis step's YAML paths seen from the host. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lf_container.h"

static struct lf_container c;

static int every_dir(const char *path)
{
	return strcmp(path, "/not-a-dir") != 0;
}

static void setup_mounts(const char *list)
{
	struct distenv_error err;

	memset(&c, 0, sizeof(c));
	c.active = 1;
	c.mounts_where = "--container-mounts";
	assert_int_equal(distenv_mounts_parse(list, c.mounts_where, &c.mounts,
					      &err),
			 0);
}

static void host_paths(void **state)
{
	struct distenv_error warn;
	char host[256];

	(void) state;
	/* no container: every path is its own */
	assert_int_equal(lf_container_host(NULL, "output_dir", "/x", host,
					   sizeof(host), &warn),
			 0);
	assert_string_equal(host, "/x");
	setup_mounts("/gpfs/run:/out,tmpfs:/scratch");
	assert_int_equal(lf_container_host(&c, "output_dir", "/out/dpo", host,
					   sizeof(host), &warn),
			 0);
	assert_string_equal(host, "/gpfs/run/dpo");
	distenv_error_clear(&warn);
	assert_int_equal(lf_container_host(&c, "output_dir", "/home/u/dpo",
					   host, sizeof(host), &warn),
			 -1);
	assert_string_equal(warn.where, "output_dir");
	assert_non_null(strstr(warn.what, "/home/u/dpo is a path in the pyxis "
					  "container under no entry of "
					  "--container-mounts, so it was not "
					  "checked on this node"));
	assert_non_null(strstr(warn.fix, "--container-mounts=SRC:DST"));
	assert_int_equal(lf_container_host(&c, "deepspeed", "/scratch/ds.json",
					   host, sizeof(host), &warn),
			 -1);
	assert_non_null(strstr(warn.what, "under a tmpfs entry"));
}

static void container_paths(void **state)
{
	char path[256];

	(void) state;
	assert_int_equal(lf_container_path(NULL, "/tmp/a", path, sizeof(path)),
			 0);
	assert_string_equal(path, "/tmp/a");
	setup_mounts("/gpfs/run:/out");
	assert_int_equal(lf_container_path(&c, "/gpfs/run/distenv-1", path,
					   sizeof(path)),
			 0);
	assert_string_equal(path, "/out/distenv-1");
	assert_int_equal(lf_container_path(&c, "/tmp/distenv-1", path,
					   sizeof(path)),
			 -1);
	assert_string_equal(path, "/tmp/distenv-1");
}

static void default_dir(void **state)
{
	char name[128];

	(void) state;
	assert_null(lf_container_default_dir(NULL, every_dir));
	setup_mounts("/models:/models:ro,tmpfs:/t,./rel:/r,/not-a-dir:/n,"
		     "/gpfs/a b:/a b,/gpfs/run:/out,/gpfs/other");
	assert_string_equal(lf_container_default_dir(&c, every_dir),
			    "/gpfs/run");
	c.active = 0;
	assert_null(lf_container_default_dir(&c, every_dir));
	lf_container_name("/out/x", "/gpfs/run/x", name, sizeof(name));
	assert_string_equal(name, "/out/x (host path /gpfs/run/x)");
	lf_container_name("/out/x", "/out/x", name, sizeof(name));
	assert_string_equal(name, "/out/x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(host_paths),
		cmocka_unit_test(container_paths),
		cmocka_unit_test(default_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
