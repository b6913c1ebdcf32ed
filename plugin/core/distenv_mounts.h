/*
 * distenv_mounts.h: pyxis's --container-mounts list and the host path of
 * a path inside the container (pure).
 *
 * The grammar, as NVIDIA/pyxis v0.24.0 args.c (spank_option_mount,
 * parse_mount_option, add_mount) reads it:
 *   LIST  = ENTRY { "," ENTRY }
 *   ENTRY = SRC [ ":" DST [ ":" FLAGS ] ]     FLAGS joined by "+"
 * An entry given as one path mounts it at the same path (DST = SRC). An
 * empty SRC, or an empty DST after a ":", is an error. SRC is a path
 * (starting with "/" or "."), or "tmpfs" (a fresh tmpfs at DST) or
 * "umount" (DST taken away); DST starts with "/" or ".". A relative path
 * is resolved by enroot, not by pyxis, so distenv maps absolute paths
 * only. pyxis also takes the list from PYXIS_CONTAINER_MOUNTS when the
 * option is not given (args.c, pyxis_args_check_environment_variables).
 *
 * The host path of a container path: the mount whose DST is the longest
 * prefix of the path, at a "/" boundary, wins (enroot applies the
 * entries in order, so of two equal DSTs the later one, mounted on top);
 * the rest of the path is appended to its SRC. The site's own enroot
 * mounts (fstab, the home directory) are not in the list: a path under
 * no entry may still be mounted, which distenv cannot see.
 */
#ifndef DISTENV_MOUNTS_H
#define DISTENV_MOUNTS_H

#include <stddef.h>

#include "distenv_error.h"

#define DISTENV_MOUNTS_MAX 64
#define DISTENV_MOUNTS_TEXT 8192

enum distenv_mount_kind {
	DISTENV_MOUNT_BIND = 0, /* a host path */
	DISTENV_MOUNT_TMPFS, /* "tmpfs": empty, in the container only */
	DISTENV_MOUNT_UMOUNT, /* "umount": DST removed */
};

struct distenv_mount {
	const char *src, *dst; /* into the list's text */
	const char *flags; /* as given ("ro+rprivate"), "" for none */
	enum distenv_mount_kind kind;
	int relative; /* SRC or DST is relative: not mapped */
	int readonly; /* "ro" is one of the flags */
};

struct distenv_mounts {
	char text[DISTENV_MOUNTS_TEXT];
	struct distenv_mount m[DISTENV_MOUNTS_MAX];
	size_t count;
};

/*
 * Parse list (NULL or "": no mounts) into out. where names the source in
 * errors ("--container-mounts", "PYXIS_CONTAINER_MOUNTS"). Errors: an
 * empty entry, SRC or DST; a SRC or DST pyxis refuses; more than
 * DISTENV_MOUNTS_MAX entries or a list longer than DISTENV_MOUNTS_TEXT.
 * Returns 0 or -1 with err set (out then holds no mounts).
 */
int distenv_mounts_parse(const char *list, const char *where,
			 struct distenv_mounts *out, struct distenv_error *err);

enum distenv_map {
	DISTENV_MAP_HOST = 0, /* host holds the host path */
	DISTENV_MAP_UNMOUNTED, /* under no entry of the list */
	DISTENV_MAP_NOT_HOST, /* under a tmpfs, umount or relative entry,
			       * or a relative path: no host path */
};

/*
 * The host path of cpath, a path in the container, into host (len
 * bytes), and the entry that decided in *by (may be NULL; NULL when
 * none). "." and ".." components are not resolved; repeated and
 * trailing "/" are. A host path longer than len is DISTENV_MAP_NOT_HOST.
 */
enum distenv_map distenv_mounts_map(const struct distenv_mounts *m,
				    const char *cpath, char *host, size_t len,
				    const struct distenv_mount **by);

/*
 * The container path of hpath, a host path, by the same rule read the
 * other way (the longest SRC of a bind entry); 0, or -1 when no entry
 * mounts it.
 */
int distenv_mounts_unmap(const struct distenv_mounts *m, const char *hpath,
			 char *cpath, size_t len);

/* 1 when the comma-separated list (pyxis --container-env NAME[,NAME])
 * holds name. */
int distenv_name_list_has(const char *list, const char *name);

#endif
