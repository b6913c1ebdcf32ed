/* Unit tests: pyxis's --container-mounts grammar and the path mapping. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_mounts.h"

static struct distenv_mounts ms;

static void parse_forms(void **state)
{
	struct distenv_error err;

	(void) state;
	assert_int_equal(distenv_mounts_parse(NULL, "o", &ms, &err), 0);
	assert_int_equal(ms.count, 0);
	assert_int_equal(distenv_mounts_parse("/data:/mnt/data:ro+rprivate,"
					      "/scratch,tmpfs:/tmp/x,"
					      "umount:/opt,./rel:/r,/a:/b:",
					      "o", &ms, &err),
			 0);
	assert_int_equal(ms.count, 6);
	assert_string_equal(ms.m[0].src, "/data");
	assert_string_equal(ms.m[0].dst, "/mnt/data");
	assert_string_equal(ms.m[0].flags, "ro+rprivate");
	assert_true(ms.m[0].readonly);
	/* one path: mounted at the same place */
	assert_string_equal(ms.m[1].src, "/scratch");
	assert_string_equal(ms.m[1].dst, "/scratch");
	assert_string_equal(ms.m[1].flags, "");
	assert_false(ms.m[1].readonly);
	assert_int_equal(ms.m[2].kind, DISTENV_MOUNT_TMPFS);
	assert_int_equal(ms.m[3].kind, DISTENV_MOUNT_UMOUNT);
	assert_true(ms.m[4].relative);
	assert_false(ms.m[0].relative);
	/* "SRC:DST:" has no flags (args.c: an empty remainder) */
	assert_string_equal(ms.m[5].flags, "");
	assert_int_equal(distenv_mounts_parse("/a:/b:rw+ro", "o", &ms, &err),
			 0);
	assert_true(ms.m[0].readonly);
	assert_int_equal(distenv_mounts_parse("/a:/b:rox", "o", &ms, &err), 0);
	assert_false(ms.m[0].readonly);
}

static void parse_errors(void **state)
{
	struct distenv_error err;

	(void) state;
	assert_int_equal(distenv_mounts_parse("/a,,/b", "--container-mounts",
					      &ms, &err),
			 -1);
	assert_string_equal(err.where, "--container-mounts");
	assert_string_equal(err.what, "'' has an empty SRC");
	assert_int_equal(ms.count, 0);
	assert_int_equal(distenv_mounts_parse("/a,", "o", &ms, &err), -1);
	assert_int_equal(distenv_mounts_parse("/a:", "o", &ms, &err), -1);
	assert_string_equal(err.what, "'/a' has an empty DST");
	assert_int_equal(distenv_mounts_parse(":/b", "o", &ms, &err), -1);
	assert_int_equal(distenv_mounts_parse("data:/b", "o", &ms, &err), -1);
	assert_string_equal(err.what, "source 'data' is not a path");
	assert_int_equal(distenv_mounts_parse("/a:b", "o", &ms, &err), -1);
	assert_string_equal(err.what, "target 'b' is not a path");
	assert_int_equal(distenv_mounts_parse("tmpfs", "o", &ms, &err), -1);
}

static void parse_limits(void **state)
{
	char list[DISTENV_MOUNTS_TEXT + 8];
	struct distenv_error err;
	size_t i;

	(void) state;
	list[0] = '\0';
	for (i = 0; i <= DISTENV_MOUNTS_MAX; i++)
		strcat(list, i ? ",/a" : "/a");
	assert_int_equal(distenv_mounts_parse(list, "o", &ms, &err), -1);
	assert_non_null(strstr(err.what, "more than 64 entries"));
	memset(list, 'a', sizeof(list) - 1);
	list[0] = '/';
	list[sizeof(list) - 1] = '\0';
	assert_int_equal(distenv_mounts_parse(list, "o", &ms, &err), -1);
	assert_non_null(strstr(err.what, "longer than"));
}

static void map_longest(void **state)
{
	struct distenv_error err;
	const struct distenv_mount *by;
	char host[256];

	(void) state;
	assert_int_equal(distenv_mounts_parse("/gpfs/u:/work,/gpfs/out:/work/"
					      "out/,/nvme:/work/outx",
					      "o", &ms, &err),
			 0);
	assert_int_equal(distenv_mounts_map(&ms, "/work/out/run1", host,
					    sizeof(host), &by),
			 DISTENV_MAP_HOST);
	assert_string_equal(host, "/gpfs/out/run1");
	assert_ptr_equal(by, &ms.m[1]);
	/* "/work/outx" is not under "/work/out": whole components */
	assert_int_equal(distenv_mounts_map(&ms, "/work/outx/a", host,
					    sizeof(host), NULL),
			 DISTENV_MAP_HOST);
	assert_string_equal(host, "/nvme/a");
	assert_int_equal(distenv_mounts_map(&ms, "/work//outy/", host,
					    sizeof(host), NULL),
			 DISTENV_MAP_HOST);
	assert_string_equal(host, "/gpfs/u/outy");
	assert_int_equal(distenv_mounts_map(&ms, "/work", host, sizeof(host),
					    NULL),
			 DISTENV_MAP_HOST);
	assert_string_equal(host, "/gpfs/u");
	assert_int_equal(distenv_mounts_map(&ms, "/home/u/out", host,
					    sizeof(host), &by),
			 DISTENV_MAP_UNMOUNTED);
	assert_null(by);
	assert_string_equal(host, "");
	assert_int_equal(distenv_mounts_map(&ms, "out", host, sizeof(host),
					    NULL),
			 DISTENV_MAP_NOT_HOST);
	/* too long for the buffer */
	assert_int_equal(distenv_mounts_map(&ms, "/work/out/run1", host, 8,
					    NULL),
			 DISTENV_MAP_NOT_HOST);
}

static void map_special(void **state)
{
	struct distenv_error err;
	char host[256];

	(void) state;
	/* of two equal targets, the later is mounted on top */
	assert_int_equal(distenv_mounts_parse("/a:/w,/b:/w,tmpfs:/w/t,"
					      "./r:/w/r,/:/root",
					      "o", &ms, &err),
			 0);
	assert_int_equal(distenv_mounts_map(&ms, "/w/x", host, sizeof(host),
					    NULL),
			 DISTENV_MAP_HOST);
	assert_string_equal(host, "/b/x");
	assert_int_equal(distenv_mounts_map(&ms, "/w/t/x", host, sizeof(host),
					    NULL),
			 DISTENV_MAP_NOT_HOST);
	assert_int_equal(distenv_mounts_map(&ms, "/w/r/x", host, sizeof(host),
					    NULL),
			 DISTENV_MAP_NOT_HOST);
	assert_int_equal(distenv_mounts_map(&ms, "/root/etc", host,
					    sizeof(host), NULL),
			 DISTENV_MAP_HOST);
	assert_string_equal(host, "/etc");
	assert_int_equal(distenv_mounts_map(&ms, "/root", host, sizeof(host),
					    NULL),
			 DISTENV_MAP_HOST);
	assert_string_equal(host, "/");
	/* a source with trailing "/" (found by fuzz_mounts: it looped) */
	assert_int_equal(distenv_mounts_parse("//,/b//:/c", "o", &ms, &err), 0);
	assert_int_equal(distenv_mounts_map(&ms, "/x", host, sizeof(host),
					    NULL),
			 DISTENV_MAP_HOST);
	assert_string_equal(host, "/x");
	assert_int_equal(distenv_mounts_map(&ms, "/c/y", host, sizeof(host),
					    NULL),
			 DISTENV_MAP_HOST);
	assert_string_equal(host, "/b/y");
}

static void unmap(void **state)
{
	struct distenv_error err;
	char c[256];

	(void) state;
	assert_int_equal(distenv_mounts_parse("/gpfs:/data,/gpfs/out:/out,"
					      "tmpfs:/t",
					      "o", &ms, &err),
			 0);
	assert_int_equal(distenv_mounts_unmap(&ms, "/gpfs/out/r", c,
					      sizeof(c)),
			 0);
	assert_string_equal(c, "/out/r");
	assert_int_equal(distenv_mounts_unmap(&ms, "/gpfs/x", c, sizeof(c)), 0);
	assert_string_equal(c, "/data/x");
	assert_int_equal(distenv_mounts_unmap(&ms, "/tmp/x", c, sizeof(c)), -1);
}

static void name_list(void **state)
{
	(void) state;
	assert_true(distenv_name_list_has("MASTER_ADDR,MASTER_PORT",
					  "MASTER_PORT"));
	assert_true(distenv_name_list_has("MASTER_ADDR", "MASTER_ADDR"));
	assert_false(distenv_name_list_has("MASTER_ADDRX", "MASTER_ADDR"));
	assert_false(distenv_name_list_has("", "A"));
	assert_false(distenv_name_list_has(NULL, "A"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_forms), cmocka_unit_test(parse_errors),
		cmocka_unit_test(parse_limits), cmocka_unit_test(map_longest),
		cmocka_unit_test(map_special), cmocka_unit_test(unmap),
		cmocka_unit_test(name_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
