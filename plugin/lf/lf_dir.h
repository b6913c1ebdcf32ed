/*
 * lf_dir.h: where the resolved copies of --distenv-lf-config go (pure).
 *
 * Each step writes, on each node, one folder
 *   BASE/distenv-<uid>-<job>.<step>-<node index>[-r<restart>]/
 * holding lf_config.yaml (DISTENV_LF_CONFIG) and, when the DeepSpeed
 * config is rewritten, ds_config.json (the copy's `deepspeed:` names
 * it). BASE, first that applies:
 *   1. --distenv-lf-dir=DIR (distenv prepare: --lf-dir DIR), the user's;
 *   2. lf_dir: of the site policy file (the job's partition's section,
 *      else the top level), the admin's;
 *   3. under a pyxis step, the source of its first writable
 *      --container-mounts directory (lf_container_default_dir), exported
 *      under its path in the container;
 *   4. $TMPDIR, unless unset, empty or holding whitespace;
 *   5. /tmp.
 * Why a choice: a container runtime may give the task its own /tmp.
 * pyxis's enroot mounts a fresh tmpfs there (enroot 4.1.2,
 * conf/mounts/10-system.fstab), as does `ch-run --private-tmp`
 * (Charliecloud), so a copy written on the host under /tmp is not in the
 * container. A DIR the container mounts at the same path (beside
 * output_dir, which the training must see anyway) is.
 */
#ifndef DISTENV_LF_DIR_H
#define DISTENV_LF_DIR_H

#include <stddef.h>
#include <stdint.h>

enum lf_dir_source {
	LF_DIR_FROM_TMP = 0, /* /tmp: TMPDIR unset or empty */
	LF_DIR_FROM_OPTION, /* --distenv-lf-dir */
	LF_DIR_FROM_SITE, /* the site file's lf_dir: */
	LF_DIR_FROM_TMPDIR, /* $TMPDIR */
	LF_DIR_FROM_TMP_BLANK, /* /tmp: TMPDIR holds whitespace */
	LF_DIR_FROM_MOUNT, /* a directory of --container-mounts */
};

struct lf_dir_choice {
	const char *base; /* points into the arguments, or "/tmp" */
	enum lf_dir_source source;
};

/* The base, by the order above. option and site: NULL or "" for none;
 * both already checked by distenv_parse_lf_dir (distenv_options.h). */
void lf_dir_choose(const char *option, const char *site, const char *tmpdir,
		   struct lf_dir_choice *out);

/* Step 3: when out came from steps 4 or 5 and mounted is not NULL (a
 * directory the pyxis container mounts), mounted instead. */
void lf_dir_prefer_mounted(struct lf_dir_choice *out, const char *mounted);

/* Why that base, for --distenv-show and the copy's header:
 * "--distenv-lf-dir", "the site file's lf_dir:", "TMPDIR", "the default
 * /tmp (TMPDIR is not set)", ... */
const char *lf_dir_source_text(enum lf_dir_source source);

/* 1 when a path is /tmp or under it: hidden by a container's own /tmp. */
int lf_dir_under_tmp(const char *path);

/*
 * lf_resolved_base(TMPDIR): TMPDIR, or /tmp when it is unset, empty or
 * holds whitespace (steps 4 and 5 above). lf_resolved_dir writes
 * BASE/distenv-<uid>-<job>.<step>-<node index>[-r<restart>] into buf:
 * one folder per step and node (a BASE shared by the nodes must not make
 * them race), and per requeue (a requeued job keeps its id and numbers
 * its steps from 0 again). The plugin's exit callback removes the same
 * folder, found by the same choice.
 */
const char *lf_resolved_base(const char *tmpdir);
void lf_resolved_dir(const char *base, unsigned uid, uint32_t job_id,
		     uint32_t step_id, uint32_t node_id, uint32_t restart,
		     char *buf, size_t len);

#endif
