/* distenv_sys_file.c: read a whole regular file (contract and the reason
 * for each check in distenv_sys_file.h). */
#include "distenv_sys_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes asked of a file that reports st_size 0 (/proc) at first. */
#define FIRST_READ 4096

static const char owner_fix[] =
	"make root own it and only root write it: chown root: FILE && chmod "
	"644 FILE";

static const char *name_of(const struct distenv_file_rules *rules)
{
	return rules->name ? rules->name : "the file";
}

/* What a file that is neither regular nor a link is (inode(7)). */
static const char *kind_of(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	if (S_ISSOCK(mode))
		return "a socket";
	return "another kind of file";
}

/* Every refusal: out empty, its errno kept; err was filled. */
static int fail(struct distenv_file *out, int errnum)
{
	distenv_file_free(out);
	out->errnum = errnum;
	return -1;
}

static int refuse_kind(const char *path, mode_t mode,
		       const struct distenv_file_rules *rules,
		       struct distenv_file *out, struct distenv_error *err)
{
	char fix[64];

	if (S_ISLNK(mode))
		distenv_error_set(err, path,
				  "name the file itself, not a "
				  "symbolic link",
				  "cannot open %s: it is a "
				  "symbolic link",
				  name_of(rules));
	else {
		snprintf(fix, sizeof(fix), "name a regular file, not %s",
			 kind_of(mode));
		distenv_error_set(err, path, fix,
				  "refused: not a regular file");
	}
	return fail(out, S_ISLNK(mode) ? ELOOP : EINVAL);
}

static int refuse_open(const char *path, int errnum,
		       const struct distenv_file_rules *rules,
		       struct distenv_file *out, struct distenv_error *err)
{
	distenv_error_set(err, path, rules->fix, "cannot open %s: %s",
			  name_of(rules), strerror(errnum));
	return fail(out, errnum);
}

/* The owner rule of rules on the open file's st. */
static int check_owner(const char *path, const struct stat *st,
		       const struct distenv_file_rules *rules,
		       struct distenv_file *out, struct distenv_error *err)
{
	if (rules->owner == DISTENV_FILE_ANY_OWNER)
		return 0;
	if (st->st_uid != 0 && !(rules->owner == DISTENV_FILE_ROOT_OR_SELF &&
				 st->st_uid == geteuid())) {
		distenv_error_set(err, path, owner_fix,
				  "refused: owned by uid %u, not root",
				  (unsigned) st->st_uid);
		return fail(out, EPERM);
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		distenv_error_set(err, path, owner_fix,
				  "refused: mode %04o lets %s write it",
				  (unsigned) (st->st_mode & 07777),
				  (st->st_mode & S_IWOTH) ? "anyone" :
							    "its group");
		return fail(out, EPERM);
	}
	return 0;
}

static int refuse_size(const char *path, long long size, size_t max,
		       struct distenv_file *out, struct distenv_error *err)
{
	char fix[96];

	snprintf(fix, sizeof(fix), "name a file of at most %zu bytes", max);
	if (size >= 0)
		distenv_error_set(err, path, fix,
				  "refused: %lld bytes, over the cap of %zu "
				  "bytes",
				  size, max);
	else
		distenv_error_set(err, path, fix,
				  "refused: more than the cap of %zu bytes",
				  max);
	return fail(out, EFBIG);
}

/* read(2) into buf, again after EINTR; its result. */
static ssize_t read_some(int fd, char *buf, size_t len)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n;
}

/*
 * Read fd to end of file into out, hint bytes expected (st_size), at
 * most max: 0, or the errno (EFBIG past max). The buffer has room for
 * max + 1 bytes at most: filling that room shows the file is too long
 * without a later read, which matters for /proc/sys: a sysctl file
 * gives all it has to the first read(2) and end of file to a read at
 * any later offset (kernel/sysctl.c, __do_proc_dointvec), so a read cut
 * at max and a second one would see a cut value as the whole file. One
 * byte more than the hint lets the read that finds the end fit; past
 * it the room doubles.
 */
static int read_to_eof(int fd, size_t hint, size_t max,
		       struct distenv_file *out)
{
	size_t limit = max + 1;
	size_t room = hint ? hint + 1 : FIRST_READ; /* bytes, without NUL */
	char *data;
	ssize_t n;

	if (room > limit)
		room = limit;
	out->data = malloc(room + 1);
	if (!out->data)
		return ENOMEM;
	for (;;) {
		if (out->len == room) {
			if (room == limit)
				return EFBIG;
			room = room > limit / 2 ? limit : room * 2;
			data = realloc(out->data, room + 1);
			if (!data)
				return ENOMEM;
			out->data = data;
		}
		n = read_some(fd, out->data + out->len, room - out->len);
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		out->len += (size_t) n;
	}
	out->data[out->len] = '\0';
	return 0;
}

/* The checks on the open descriptor: what fstat(2) says it is. */
static int check_open_file(int fd, const char *path,
			   const struct distenv_file_rules *rules, size_t *size,
			   struct distenv_file *out, struct distenv_error *err)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return refuse_open(path, errno, rules, out, err);
	if (!S_ISREG(st.st_mode))
		return refuse_kind(path, st.st_mode, rules, out, err);
	if (check_owner(path, &st, rules, out, err))
		return -1;
	if ((unsigned long long) st.st_size > rules->max)
		return refuse_size(path, (long long) st.st_size, rules->max,
				   out, err);
	*size = (size_t) st.st_size;
	return 0;
}

int distenv_file_read(const char *path, const struct distenv_file_rules *rules,
		      struct distenv_file *out, struct distenv_error *err)
{
	struct stat st;
	size_t size = 0;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	if (lstat(path, &st) < 0)
		return refuse_open(path, errno, rules, out, err);
	if (!S_ISREG(st.st_mode))
		return refuse_kind(path, st.st_mode, rules, out, err);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return refuse_open(path, errno, rules, out, err);
	rc = check_open_file(fd, path, rules, &size, out, err);
	if (!rc)
		rc = read_to_eof(fd, size, rules->max, out);
	close(fd);
	if (rc == EFBIG)
		return refuse_size(path, -1, rules->max, out, err);
	if (rc > 0) {
		distenv_error_set(err, path, NULL, "cannot read %s: %s",
				  name_of(rules), strerror(rc));
		return fail(out, rc);
	}
	return rc;
}

void distenv_file_free(struct distenv_file *out)
{
	free(out->data);
	memset(out, 0, sizeof(*out));
}
