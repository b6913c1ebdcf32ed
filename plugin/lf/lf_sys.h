/*
 * lf_sys.h: the system calls of the LLaMA-Factory preparation: how a
 * user's files are read, classify a directory's storage, list a checkpoint
 * tree, write the resolved copies. Run as the user only (the distenv
 * command, or task_init, which runs fully as the user;
 * docs/contracts.md 5: never open a user-named file as root).
 */
#ifndef DISTENV_LF_SYS_H
#define DISTENV_LF_SYS_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"
#include "distenv_sys_file.h"
#include "lf_fstype.h"
#include "lf_resume.h"
#include "lf_storage_mark.h"

/*
 * distenv_file_read's rules (distenv_sys_file.h) for the files the
 * preparation reads: the training YAML, the DeepSpeed JSON it names and
 * the model's config.json (each at most LF_DOC_MAX_BYTES), and a
 * checkpoint's `latest` tag (a line). A user's files, read as the user:
 * any owner.
 */
extern const struct distenv_file_rules lf_sys_yaml_rules;
extern const struct distenv_file_rules lf_sys_ds_rules;
extern const struct distenv_file_rules lf_sys_model_rules;
extern const struct distenv_file_rules lf_sys_latest_rules;

/*
 * Storage class of path: the site policy's verdict if it names a mount
 * covering path, else statfs(2) f_type of path or, when path does not
 * exist yet, of its nearest existing parent. *fs_name gets a static
 * name ("nfs", "site policy", ...).
 */
int lf_sys_storage(const char *path, const char *policy, enum lf_storage *out,
		   const char **fs_name, struct distenv_error *err);

/* A listing owned by the caller (lf_sys_listing_free). */
struct lf_sys_listing {
	struct lf_listing ls;
	char **paths;
	size_t cap;
};

/*
 * List dir down to depth levels (1: its entries only), as paths
 * relative to dir, directories with a trailing '/', prefixed with
 * prefix (may be NULL; e.g. a checkpoint's base name). Symbolic links
 * are listed but not followed. At most 65536 entries. A missing dir
 * gives an empty listing and returns 0.
 */
int lf_sys_list(const char *dir, int depth, const char *prefix,
		struct lf_sys_listing *out, struct distenv_error *err);
void lf_sys_listing_free(struct lf_sys_listing *l);

/* Physical memory of this node in bytes (sysconf), 0 if unknown. */
uint64_t lf_sys_node_ram(void);

/*
 * Create dir (mode 0700) unless it exists as a directory owned by this
 * user with no group/other access (a job-private directory: anything
 * else is refused, so another user cannot plant it).
 */
int lf_sys_private_dir(const char *dir, struct distenv_error *err);

/*
 * Write data to dir/name: created with O_EXCL|O_NOFOLLOW (mode 0600)
 * under a temporary name, then linked into place, so that readers see
 * the whole file or none. An existing dir/name is left alone (written
 * by an earlier callback of the same step) and counts as success.
 */
int lf_sys_write_new(const char *dir, const char *name, const char *data,
		     size_t len, struct distenv_error *err);

/*
 * Write data to dir/name in a directory of lf_sys_private_dir, the same
 * way, but an existing dir/name whose bytes differ is replaced (rename
 * over it): the directory is distenv's own, and a copy left there by an
 * earlier job with the same job and step id (job ids start again after
 * a controller's state is reset; a persistent /tmp keeps the files) must
 * not be taken for this step's. The same bytes are left alone.
 */
int lf_sys_write_private(const char *dir, const char *name, const char *data,
			 size_t len, struct distenv_error *err);

/*
 * Storage marks (lf_storage_mark.h), as the user. lf_sys_mark_write
 * creates output_dir/.distenv/storage (and output_dir itself, as
 * LLaMA-Factory would; mode 0777 less the umask) and writes text as the
 * file NODE there, whole or not at all (a temporary file renamed into
 * place), replacing an earlier job's mark. Errors: a directory or the
 * file cannot be made, named with the reason.
 *
 * lf_sys_mark_read: node's mark into buf (NUL-terminated), 1 when read,
 * 0 when missing or not a small regular file (not an error: no mark).
 * output_dir relative: to the working directory, like LLaMA-Factory.
 */
int lf_sys_mark_write(const char *output_dir, const char *node,
		      const char *text, struct distenv_error *err);
int lf_sys_mark_read(const char *output_dir, const char *node, char *buf,
		     size_t len);

/*
 * The name of the node whose mark node node_id of an nnodes-node step
 * reads (lf_mark_partner_index), from the step's SLURM_STEP_NODELIST in
 * env (distenv_nth_host), into buf; "" when there is none or the list
 * cannot give it (then no marks are read).
 */
void lf_sys_mark_partner(const char *const *env, uint32_t node_id,
			 uint32_t nnodes, char *buf, size_t len);

#endif
