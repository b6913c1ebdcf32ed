/*
 * lf_fstype.h: is a directory on node-local or shared storage? Decides
 * save_on_each_node (docs/contracts.md 2: node-local output_dir
 * needs it true, shared storage needs it false).
 *
 * Classification by statfs(2)'s f_type magic number; the adapter
 * (lf_sys.h) calls statfs, this file only classifies. A site policy
 * (plain text, given by the admin) overrides the magic number for mounts
 * it names.
 */
#ifndef DISTENV_LF_FSTYPE_H
#define DISTENV_LF_FSTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"

enum lf_storage {
	LF_STORAGE_UNKNOWN = 0, /* not in the table: the user or site decides */
	LF_STORAGE_LOCAL, /* each node sees its own files */
	LF_STORAGE_SHARED, /* every node sees the same files */
};

/* "local", "shared" or "unknown". */
const char *lf_storage_name(enum lf_storage s);

/*
 * Classify a statfs f_type. *fs_name (may be NULL) gets the file
 * system's name ("ext4", "nfs", ...) or "unknown". Every magic number in
 * the table cites its source (linux/magic.h or the file system's own
 * source) in lf_fstype.c. FUSE counts as unknown: sshfs and a node-local
 * FUSE mount look the same.
 */
enum lf_storage lf_fstype_classify(uint64_t f_type, const char **fs_name);

/*
 * The site policy's verdict for path, or LF_STORAGE_UNKNOWN when no entry
 * covers it. policy: entries separated by commas, newlines or spaces,
 * each "shared:/mount" or "local:/mount"; the longest mount that is
 * path itself or a parent directory of it wins (/scratch covers
 * /scratch/u1 but not /scratch2). Errors: a malformed entry, named.
 */
int lf_site_storage(const char *policy, const char *path, enum lf_storage *out,
		    struct distenv_error *err);

#endif
