/*
 * lf_ckpt.h: which checkpoint a restarted job resumes from
 * (--distenv-resume). Pure: a listing of output_dir in, a choice
 * and the reasons out.
 *
 * The rule, per node: walk the checkpoint-N directories of output_dir from
 * the largest N down and take the first one that holds every file this
 * node's ranks read on a resume (lf_resume_check: trainer_state.json,
 * `latest`, the ranks' ZeRO shards; docs/contracts.md 2). A newer one
 * that misses any of them is a save that was cut (the job was requeued or
 * killed while saving) and is skipped, named with what it misses.
 *
 * One node sees only its own disk when output_dir is node-local, so the
 * nodes can reach different answers (node 0 finished checkpoint-8, node 1
 * was cut in it). The plugin cannot talk between nodes in task_init, so
 * agreement is the job's: the templates run a first step that prints each
 * node's answer (DISTENV_LF_RESUME) and start training with the oldest of
 * them as an explicit --distenv-resume=PATH (DISTENV_RESUME), which every
 * node then checks with the resume preflight and fails the step before
 * launch if it does not hold it. On shared storage there is one view and
 * every node's answer is the same.
 */
#ifndef DISTENV_LF_CKPT_H
#define DISTENV_LF_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"
#include "lf_resume.h"

/* --distenv-resume; DEFAULT: AUTO on a requeued job (SLURM_RESTART_COUNT
 * > 0), else OFF (the YAML and LLaMA-Factory decide, as without it). */
enum lf_resume_mode {
	LF_RESUME_DEFAULT = 0,
	LF_RESUME_AUTO,
	LF_RESUME_OFF,
	LF_RESUME_PATH
};

/*
 * Parse "auto", "off" or a checkpoint directory (an absolute path, or
 * one relative to the directory the job runs in; at most path_len - 1
 * bytes) into *mode and path. Errors: empty value, a path too long.
 */
int lf_parse_resume(const char *value, const char *where, int *mode, char *path,
		    size_t path_len, struct distenv_error *err);

/* The `latest` file of checkpoint dir name, or NULL (the caller's). */
typedef const char *(*lf_latest_fn)(void *ctx, const char *name);

#define LF_CKPT_SKIPPED_MAX 8

struct lf_ckpt_choice {
	int found;
	char chosen[64]; /* "checkpoint-N", "" when none */
	size_t candidates; /* checkpoint-N directories seen */
	size_t nskipped; /* newer ones skipped (all counted) */

	struct {
		char name[64];
		size_t missing; /* required files missing here */
		char first[128]; /* the first of them */
		/* another reason, when none is missing (a checkpoint of
		 * another data-parallel world size, lf_resume.h); "" else */
		char why[DISTENV_ERROR_TEXT];
	} skipped[LF_CKPT_SKIPPED_MAX];
};

/*
 * Choose from ls (output_dir listed to depth 3, paths relative to it) the
 * newest checkpoint-N complete for this node's ranks (in: node_id,
 * gpus_per_node, world_size, zero_stage; in->checkpoint and
 * in->latest_tag are ignored: latest(ctx, name) gives each one's tag,
 * latest may be NULL). Always returns 0; ch->found is 0 when no
 * checkpoint is complete.
 */
int lf_ckpt_choose(const struct lf_listing *ls,
		   const struct lf_resume_input *in, lf_latest_fn latest,
		   void *ctx, struct lf_ckpt_choice *ch);

/*
 * One line for the job log and --distenv-show: which checkpoint and why
 * the newer ones were skipped, e.g. "resume from checkpoint-4 (newest
 * complete on this node of 2; skipped checkpoint-8: 3 file(s) missing,
 * first checkpoint-8/latest)".
 */
void lf_ckpt_describe(const struct lf_ckpt_choice *ch, char *buf, size_t len);

#endif
