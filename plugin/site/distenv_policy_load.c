/*
 * distenv_policy_load.c: the adapter that reads the site policy file from
 * disk, refusing anything a user could have planted or changed, then
 * hands the bytes to the pure parser.
 */
#include "distenv_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char owner_fix[] =
	"make root own it and only root write it: chown root: FILE && chmod "
	"644 FILE";

/* Whether st may be trusted: owned by root (or, with TRUST_OWNER, by the
 * caller) and writable by its owner only. */
static int check_owner(const char *path, const struct stat *st, int flags,
		       struct distenv_error *err)
{
	uid_t me = geteuid();

	if (st->st_uid != 0 &&
	    !((flags & DISTENV_POLICY_LOAD_TRUST_OWNER) && st->st_uid == me))
		return distenv_error_set(err, path, owner_fix,
					 "refused: owned by uid %u, not root",
					 (unsigned)st->st_uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return distenv_error_set(
			err, path, owner_fix,
			"refused: mode %04o lets %s write it",
			(unsigned)(st->st_mode & 07777),
			(st->st_mode & S_IWOTH) ? "anyone" : "its group");
	return 0;
}

int distenv_policy_load(const char *path, int flags,
			struct distenv_policy_file *out,
			struct distenv_error *err)
{
	struct stat st;
	char *text = NULL;
	size_t got = 0;
	int fd, rc = -1;

	distenv_policy_file_free(out);
	if (!path || path[0] != '/')
		return distenv_error_set(err, path ? path : "config=",
					 "give the absolute path of the file",
					 "not an absolute path");
	/* O_NOFOLLOW: a symbolic link is refused (open(2): ELOOP), so the
	 * file checked is the file read. O_NONBLOCK: a FIFO put in its place
	 * must not hang slurmd; it fails the regular-file check below. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		return distenv_error_set(
			err, path,
			e == ELOOP ? "name the file itself, not a symbolic link"
				   : "check config= on the plugstack line",
			"cannot open the site policy file: %s",
			e == ELOOP ? "it is a symbolic link" : strerror(e));
	}
	if (fstat(fd, &st)) {
		distenv_error_set(err, path, NULL, "cannot stat: %s",
				  strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		distenv_error_set(err, path, "name a regular file",
				  "refused: not a regular file");
		goto out;
	}
	if (check_owner(path, &st, flags, err))
		goto out;
	if (st.st_size > DISTENV_POLICY_FILE_MAX) {
		distenv_error_set(err, path, "keep the policy under 1 MiB",
				  "refused: %lld bytes", (long long)st.st_size);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		distenv_error_set(err, path, NULL, "out of memory");
		goto out;
	}
	/* Read to EOF, at most the size seen (the file may shrink). */
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, text + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			distenv_error_set(err, path, NULL, "cannot read: %s",
					  strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	text[got] = '\0';
	rc = distenv_policy_parse(text, got, path, out, err);
out:
	free(text);
	close(fd);
	return rc;
}
