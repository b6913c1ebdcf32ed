/* lf_container.c: container paths seen from the host (lf_container.h). */
#include "lf_container.h"

#include <stdio.h>
#include <string.h>

int lf_container_host(const struct lf_container *c, const char *key,
		      const char *path, char *host, size_t len,
		      struct distenv_error *warn)
{
	const struct distenv_mount *by = NULL;
	enum distenv_map m;
	char fix[DISTENV_ERROR_TEXT];

	if (!c || !c->active) {
		snprintf(host, len, "%s", path);
		return 0;
	}
	m = distenv_mounts_map(&c->mounts, path, host, len, &by);
	if (m == DISTENV_MAP_HOST)
		return 0;
	snprintf(fix, sizeof(fix),
		 "mount its host directory with %s=SRC:DST (at the same "
		 "path: SRC alone) so that distenv can check it",
		 c->mounts_where ? c->mounts_where : "--container-mounts");
	if (m == DISTENV_MAP_UNMOUNTED)
		distenv_error_set(warn, key, fix,
				  "%s is a path in the pyxis container under "
				  "no entry of %s, so it was not checked on "
				  "this node (the site's enroot mounts may "
				  "still show it there)",
				  path,
				  c->mounts_where ? c->mounts_where :
						    "--container-mounts");
	else
		distenv_error_set(warn, key, fix,
				  "%s is a path in the pyxis container with "
				  "no host path distenv knows (%s), so it was "
				  "not checked on this node",
				  path,
				  path[0] != '/' ? "a relative path" :
				  by && by->kind == DISTENV_MOUNT_TMPFS ?
						   "under a tmpfs entry" :
				  by && by->kind == DISTENV_MOUNT_UMOUNT ?
						   "under an umount entry" :
						   "under a relative entry");
	return -1;
}

int lf_container_path(const struct lf_container *c, const char *host,
		      char *path, size_t len)
{
	if (c && c->active &&
	    !distenv_mounts_unmap(&c->mounts, host, path, len))
		return 0;
	snprintf(path, len, "%s", host);
	return c && c->active ? -1 : 0;
}

const char *lf_container_default_dir(const struct lf_container *c,
				     int (*is_dir)(const char *path))
{
	size_t i;

	for (i = 0; c && c->active && i < c->mounts.count; i++) {
		const struct distenv_mount *m = &c->mounts.m[i];

		/* no blank in the exported path (lf_dir.c) */
		if (m->kind == DISTENV_MOUNT_BIND && !m->relative &&
		    !m->readonly && !m->dst[strcspn(m->dst, " \t\n\r\v\f")] &&
		    is_dir(m->src))
			return m->src;
	}
	return NULL;
}

void lf_container_name(const char *path, const char *host, char *buf,
		       size_t len)
{
	if (!host || !strcmp(path, host))
		snprintf(buf, len, "%s", path);
	else
		snprintf(buf, len, "%s (host path %s)", path, host);
}
