/*
 * lf_resume.h: before a resume, does this node's copy of the checkpoint
 * hold what this node's ranks will read?
 *
 * What a Transformers + DeepSpeed checkpoint-N/ holds and who reads it
 * (transformers trainer.py _load_from_checkpoint / _load_rng_state,
 * integrations/deepspeed.py deepspeed_load_checkpoint; DeepSpeed
 * runtime/engine.py load_checkpoint, _get_zero_ckpt_name;
 * docs/contracts.md 2):
 * - trainer_state.json: read by every process;
 * - latest: read by every rank (DeepSpeed's load_checkpoint without a
 *   tag), naming the tag directory global_stepN;
 * - global_stepN/: ZeRO-3 per rank R: zero_pp_rank_R_mp_rank_00_model_states.pt
 *   and {bf16_,fp16_,}zero_pp_rank_R_mp_rank_00_optim_states.pt; ZeRO
 *   1/2: mp_rank_00_model_states.pt (read by all) and the rank's optim
 *   states;
 * - rng_state_R.pth per rank (rng_state.pth in a one-process run):
 *   Transformers only warns when it is missing, so it is reported as a
 *   warning, not an error.
 *
 * `latest` on nodes other than node 0: DeepSpeed 0.19 (runtime/engine.py,
 * save_checkpoint and _commit_decoupled_checkpoint) writes it on global
 * rank 0 only, also when checkpoint.use_node_local_storage is on, which
 * Transformers turns on with save_on_each_node (integrations/
 * deepspeed.py). On node-local disks every other node's copy of the
 * checkpoint then lacks it, and DeepSpeed's load_checkpoint, called by
 * Transformers without a tag, finds nothing to load there ("Unable to find
 * latest file", then "[deepspeed] failed to resume from checkpoint").
 * With restore_latest set (the caller's output_dir is node-local), a
 * node other than node 0 whose copy lacks only `latest` is complete but
 * for it: latest_restorable is set and tag names the directory the
 * missing file would name (global_step<N> of checkpoint-<N>, DeepSpeed's
 * default tag, which Transformers uses).
 *
 * Pure: the adapter lists the directory (lf_sys.h); paths here are
 * relative to output_dir.
 */
#ifndef DISTENV_LF_RESUME_H
#define DISTENV_LF_RESUME_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"

/* A directory listing: relative paths, directories ending in '/'. */
struct lf_listing {
	const char *const *paths;
	size_t count;
};

/*
 * The newest checkpoint-N directory in listing (as transformers'
 * get_last_checkpoint: names ^checkpoint-[0-9]+$, the largest N), into
 * name (e.g. "checkpoint-500"). Returns 1 found, 0 none.
 */
int lf_last_checkpoint(const struct lf_listing *ls, char *name, size_t len);

struct lf_resume_input {
	const char *checkpoint; /* checkpoint dir relative to the listing
				   * root, e.g. "checkpoint-500" */
	const char *latest_tag; /* content of its `latest` file, or NULL:
				   * then global_step<N> from the name */
	uint32_t node_id; /* this node */
	uint32_t gpus_per_node; /* ranks of node n: n*G .. n*G+G-1 */
	uint32_t world_size; /* all ranks */
	int zero_stage; /* 0-3; 0 = no DeepSpeed */
	int restore_latest; /* node-local storage: a missing `latest`
				   * on node > 0 may be restored (above) */
	int shared; /* output_dir on storage every node sees */
};

#define LF_RESUME_MISSING_MAX 64

struct lf_resume_result {
	size_t missing_required; /* files the resume cannot do without */
	size_t missing_rng; /* rng_state files (warning only) */
	char missing[LF_RESUME_MISSING_MAX][128]; /* the first ones, named */
	size_t listed;
	int latest_restorable; /* only `latest` is missing (above) */
	char tag[128]; /* what it would hold */
};

/*
 * Check the listing for what this node's ranks need. Returns 0 when
 * nothing required is missing; -1 with err naming the node's missing
 * files (up to a few, then a count) and the fix. res may be NULL.
 * With DeepSpeed (zero_stage > 0), also -1 when the tag directory holds
 * ZeRO shards of a rank at or beyond world_size (saved by a larger
 * world), or, with shared set and this node's files all there, none of
 * a rank below world_size from some rank on (a smaller world, or an
 * unfinished save): DeepSpeed refuses another world size
 * only after the model has loaded (lf_resume.c, check_world).
 */
int lf_resume_check(const struct lf_listing *ls,
		    const struct lf_resume_input *in,
		    struct lf_resume_result *res, struct distenv_error *err);

#endif
