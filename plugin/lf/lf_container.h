/*
 * lf_container.h: the paths of a --distenv-lf-config step that runs in a
 * pyxis container, seen from the host (pure).
 *
 * The YAML names paths inside the container (output_dir, the resume
 * checkpoint, deepspeed, model_name_or_path); distenv reads and checks
 * them on the host, before pyxis starts the container. Under a pyxis
 * step each is looked at through its --container-mounts
 * (distenv_mounts.h: the longest target wins); a path under no entry,
 * or under a tmpfs, umount or relative one, has no host path distenv
 * knows, and its check says so instead of reporting it missing. Without
 * a pyxis step every path is its own host path.
 *
 * The copies distenv writes go the other way: a host directory, exported
 * under its path inside the container.
 */
#ifndef DISTENV_LF_CONTAINER_H
#define DISTENV_LF_CONTAINER_H

#include <stddef.h>

#include "distenv_error.h"
#include "distenv_mounts.h"

struct lf_container {
	/* The step asked pyxis for a container (--container-image or
	 * --container-name, or their PYXIS_* defaults) and pyxis is
	 * loaded: 0 means "no container", and nothing is mapped. */
	int active;
	struct distenv_mounts mounts; /* its --container-mounts */
	const char *mounts_where; /* "--container-mounts", or
				   * "PYXIS_CONTAINER_MOUNTS" */
};

/*
 * The host path of path, which the YAML's key names, into host (len
 * bytes). 0: host holds it (path itself without a container). -1: no
 * host path; warn (may be NULL) then says which path was not checked
 * and why, naming key and the option.
 */
int lf_container_host(const struct lf_container *c, const char *key,
		      const char *path, char *host, size_t len,
		      struct distenv_error *warn);

/*
 * The path inside the container of a host path distenv wrote, into
 * path. 0: path holds it (host itself without a container); -1: no
 * entry mounts it (path then holds host).
 */
int lf_container_path(const struct lf_container *c, const char *host,
		      char *path, size_t len);

/*
 * The default base of the resolved copies under a pyxis step when
 * neither --distenv-lf-dir nor lf_dir: is given (lf_dir.h): the source
 * of the first writable bind entry with absolute paths whose source
 * is_dir accepts; NULL when there is none or no container. The same
 * answer in task_init and at the step's end, from the options alone.
 */
const char *lf_container_default_dir(const struct lf_container *c,
				     int (*is_dir)(const char *path));

/* For messages: "PATH", or "PATH (host path HOST)" when they differ. */
void lf_container_name(const char *path, const char *host, char *buf,
		       size_t len);

#endif
