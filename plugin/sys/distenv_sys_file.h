/*
 * distenv_sys_file.h: the one reader of whole files in distenv (the site
 * policy, topology XML, a user's training YAML and its DeepSpeed and
 * model files, checkpoint `latest` tags, the NVIDIA driver's GPU files
 * and the kernel's ephemeral port range in /proc).
 *
 * A file a user names may be anything: a symbolic link to another
 * user's file, a FIFO nobody writes (the reader would wait forever, and
 * in task_init the job's own tasks with it), a directory, a device, or
 * a file of gigabytes. This reader takes regular files only, of at most
 * a size the caller gives, and says what was wrong and what to do.
 */
#ifndef DISTENV_SYS_FILE_H
#define DISTENV_SYS_FILE_H

#include <stddef.h>

#include "distenv_error.h"

/* Who may own the file; checked on the open descriptor (fstat(2)). */
enum distenv_file_owner {
	/* No check: a file the caller names and reads with its own rights
	 * (docs/contracts.md 5: a user's file is read as the user). */
	DISTENV_FILE_ANY_OWNER = 0,
	/* Owned by root (uid 0), and neither group- nor other-writable
	 * (S_IWGRP, S_IWOTH in inode(7)): read as root, a file someone else
	 * could write would let them steer what root does. */
	DISTENV_FILE_ROOT,
	/* As DISTENV_FILE_ROOT, but owned by the caller (geteuid(2)) is
	 * accepted too: drafts and tests of a root-owned file. */
	DISTENV_FILE_ROOT_OR_SELF,
};

struct distenv_file_rules {
	/* The file's role in messages, "cannot open NAME: ...", e.g. "the
	 * site policy file"; NULL: "the file". */
	const char *name;
	/* What to do when the file cannot be opened (missing, no
	 * permission); NULL: nothing said. */
	const char *fix;
	/* The most bytes accepted (below SIZE_MAX); a larger file is
	 * refused, not cut. */
	size_t max;
	enum distenv_file_owner owner;
};

/* What was read; distenv_file_free() in every case. */
struct distenv_file {
	char *data; /* malloc'ed, len bytes and a NUL after them */
	size_t len; /* bytes read, the NUL not counted; 0 for an empty file */
	int errnum; /* after a failure: the errno of the call that failed,
		      * or ELOOP (a symbolic link), EINVAL (not a regular
		      * file), EPERM (owner or mode refused), EFBIG (over
		      * max), ENOMEM; 0 after success */
};

/*
 * Read the whole of path into out, checking the file on the descriptor
 * that is read (fstat(2)), so the file checked is the file read:
 *
 *   lstat(2) first: a symbolic link, FIFO, directory or device is
 *     refused without being opened (opening a device runs its driver:
 *     st(4), a tape rewinds when closed);
 *   open(2) O_RDONLY: never written;
 *   O_NOFOLLOW: a symbolic link put in place after the lstat fails with
 *     ELOOP instead of being followed to a file the caller did not name;
 *   O_NONBLOCK: a FIFO put in place after the lstat does not block the
 *     open (fifo(7): a read-only open in nonblocking mode succeeds with
 *     no writer) and is refused by the fstat check;
 *   O_CLOEXEC: the descriptor does not leak into a task that another
 *     thread forks and executes meanwhile (open(2), O_CLOEXEC);
 *   fstat(2): regular files only (S_ISREG, inode(7)), the owner rule,
 *     and st_size against max before any byte is read.
 *
 * Then read(2) to end of file, not to st_size: files in /proc are made
 * as they are read and report st_size 0, and any file may grow or
 * shrink meanwhile. read(2) may return fewer bytes than asked or fail
 * with EINTR (signal(7)); both are read on. More than max bytes read is
 * refused like an oversize file, found in the same read(2) that would
 * pass max (a sysctl file in /proc/sys ends at the second read).
 *
 * Inputs: path (opened as given, with the caller's rights), rules (max
 * in bytes). Returns 0, or -1 with err (may be NULL) filled: where is
 * path; what is "cannot open NAME: REASON" (REASON "it is a symbolic
 * link" or errno's text), "refused: not a regular file", "refused:
 * owned by uid U, not root", "refused: mode M lets ... write it",
 * "refused: N bytes, over the cap of MAX bytes", "cannot read NAME:
 * REASON"; fix says what to do.
 */
int distenv_file_read(const char *path, const struct distenv_file_rules *rules,
		      struct distenv_file *out, struct distenv_error *err);

/* Free out->data and reset out. */
void distenv_file_free(struct distenv_file *out);

#endif
