/*
 * tmpdir_fixture.h: a fresh directory under /tmp for each test, and real
 * files in it, for the tests of what reads files (the file reader, the
 * site policy loader). Include after cmocka.h.
 */
#ifndef DISTENV_TMPDIR_FIXTURE_H
#define DISTENV_TMPDIR_FIXTURE_H

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_dir[64];
static char tmp_path[128]; /* the last path in_dir() made */

/* tmp_dir/name, in tmp_path. */
static const char *in_dir(const char *name)
{
	snprintf(tmp_path, sizeof(tmp_path), "%s/%s", tmp_dir, name);
	return tmp_path;
}

/* Create tmp_dir as /tmp/STEM-XXXXXX (mkdtemp(3)). */
static void tmpdir_make(const char *stem)
{
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/%s-XXXXXX", stem);
	assert_non_null(mkdtemp(tmp_dir));
}

/* Remove the files or empty directories names (NULL-ended) from
 * tmp_dir, then tmp_dir. */
static void tmpdir_remove(const char *const *names)
{
	size_t i;

	for (i = 0; names[i]; i++) {
		unlink(in_dir(names[i]));
		rmdir(in_dir(names[i]));
	}
	rmdir(tmp_dir);
}

/* Write len bytes of data to tmp_dir/name with mode (tmp_path then
 * names it). */
static void write_bytes(const char *name, const char *data, size_t len,
			mode_t mode)
{
	FILE *f = fopen(in_dir(name), "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(tmp_path, mode), 0);
}

static void write_file(const char *name, const char *text, mode_t mode)
{
	write_bytes(name, text, strlen(text), mode);
}

/* tmp_dir/link: a symbolic link to tmp_dir/name. */
static void make_link(const char *name, const char *link)
{
	char target[sizeof(tmp_path)];

	snprintf(target, sizeof(target), "%s", in_dir(name));
	assert_int_equal(symlink(target, in_dir(link)), 0);
}

#endif
