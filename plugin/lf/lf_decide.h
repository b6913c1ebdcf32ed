/*
 * lf_decide.h: the decisions distenv makes for a LLaMA-Factory run and
 * the checks that stop runs that would fail hours later (resume, storage,
 * host memory; docs/contracts.md 1, 2). Pure: parsed files, a directory
 * listing and plain facts in; decisions, a memory plan and messages out.
 */
#ifndef DISTENV_LF_DECIDE_H
#define DISTENV_LF_DECIDE_H

#include <stdint.h>

#include "distenv_error.h"
#include "distenv_options.h"
#include "lf_doc.h"
#include "lf_fstype.h"
#include "lf_model.h"
#include "lf_resume.h"
#include "plan_memory.h"
#include "plan_seqfit.h"
#include "plan_stack.h"

/* --distenv-save-on-each-node */
enum lf_soen {
	LF_SOEN_AUTO = 0,
	LF_SOEN_YES,
	LF_SOEN_NO
};

/* --distenv-offload; UNSET: as the DeepSpeed config says */
enum lf_offload {
	LF_OFFLOAD_UNSET = 0,
	LF_OFFLOAD_NONE,
	LF_OFFLOAD_CPU,
	LF_OFFLOAD_AUTO
};

/* --distenv-check: the core's values (distenv_options.h) */
enum lf_check {
	LF_CHECK_WARN = DISTENV_CHECK_WARN,
	LF_CHECK_STRICT = DISTENV_CHECK_STRICT,
	LF_CHECK_OFF = DISTENV_CHECK_OFF,
};

/* Parsers for the option values (where: the option, for the error). */
int lf_parse_soen(const char *value, const char *where, int *out,
		  struct distenv_error *err);
int lf_parse_offload(const char *value, const char *where, int *out,
		     struct distenv_error *err);
int lf_parse_check(const char *value, const char *where, int *out,
		   struct distenv_error *err);

enum lf_level {
	LF_WARN = 0,
	LF_ERROR
};

#define LF_MSG_MAX 32

struct lf_msgs {
	struct {
		enum lf_level level;
		struct distenv_error e;
	} items[LF_MSG_MAX];

	size_t count;
	size_t errors; /* items with LF_ERROR */
};

struct lf_inputs {
	struct lf_doc *yaml; /* the training YAML, loaded */
	struct lf_doc *ds; /* its DeepSpeed config, or NULL */
	int ds_unreadable; /* deepspeed: set, file not readable */
	const char *ds_problem; /* why (strerror), for the message */
	int model_missing; /* model_name_or_path: a local path
				       * (lf_model_path_is_local) that
				       * cannot be read */
	const char *model_problem; /* why (strerror), for the message */
	const struct plan_model_config *model; /* config.json, or NULL */
	uint64_t model_params; /* --distenv-model-params, 0 none */
	int soen; /* enum lf_soen */
	int offload; /* enum lf_offload */
	int check; /* enum lf_check */
	uint32_t nnodes, node_id, gpus_per_node;
	const char *force_torchrun; /* the task's FORCE_TORCHRUN, or NULL */
	const char *alloc_conf; /* the task's PYTORCH_CUDA_ALLOC_CONF */
	const char *optim_torch; /* the task's OPTIM_TORCH, or NULL */
	enum lf_storage out_storage; /* of output_dir (or its parent) */
	const char *out_fs; /* its file system name, for messages */
	const char *out_how; /* how out_storage was found, for
				       * messages ("probed: ...", "file
				       * system type ext4, a guess"); NULL:
				       * out_fs says it */
	double gpu_mem; /* bytes per GPU, 0 unknown */
	double host_mem; /* bytes per node, 0 unknown */
	const struct plan_stack *stack; /* versions; NULL: unknown */
	uint32_t answer_tokens; /* --answer-tokens, 0: the default
				       * (plan_seqfit.h) */
	const struct lf_listing *out_ls; /* output_dir, relative; or NULL */
	const struct lf_listing *ckpt_ls; /* explicit resume: listing of its
					   * parent directory; or NULL */
	const char *latest_tag; /* the checkpoint's `latest`, or NULL */
	const char *resume_override; /* --distenv-resume (lf_ckpt.h): NULL
				       * as the YAML says; "" no resume
				       * check; else the checkpoint the
				       * resolved copy names (listed in
				       * ckpt_ls) */
};

#define LF_CHANGE_MAX 8

struct lf_decision {
	int soen; /* resolved save_on_each_node */
	int soen_set; /* write it into the resolved YAML */
	int offload_cpu; /* resolved: both offloads on cpu */
	int ds_changed; /* the resolved DeepSpeed JSON differs */
	int ds_offload_write; /* 1 add cpu offload, -1 remove, 0 keep */
	int zero_stage; /* 0 = no DeepSpeed */
	int gather16;
	char alloc_conf[512]; /* PYTORCH_CUDA_ALLOC_CONF to export */
	int alloc_conf_set;
	/* Export OPTIM_TORCH=0 and TORCH_NCCL_AVOID_RECORD_STREAMS=1:
	 * LLaMA-Factory 0.9.3+ would replace a PYTORCH_CUDA_ALLOC_CONF that
	 * holds more than expandable_segments:True (keep_alloc_conf). */
	int optim_torch_off;
	char output_dir[1024]; /* from the YAML, "" when absent */
	char deepspeed[1024]; /* from the YAML, "" when absent */
	int resume; /* a resume will happen */
	char resume_ckpt[512]; /* the checkpoint (relative to listing) */
	/* lf_resume.h: this node's copy lacks only DeepSpeed's `latest`;
	 * the writer restores it as restore_dir/latest = restore_tag */
	int restore_latest;
	char restore_dir[1024];
	char restore_tag[128];
	int have_plan;
	struct plan_mem_input mem_in;
	struct plan_mem_plan mem;
	/* the longest row and prompt that fit (plan_seqfit.h): needs the
	 * model's config.json and the GPU's memory */
	int have_fit;
	struct plan_fit_input fit_in;
	struct plan_fit fit;
	struct plan_stack stack; /* the versions planned for */
	char changes[LF_CHANGE_MAX][400]; /* header lines: what and why */
	size_t nchanges;
	struct lf_msgs msgs;
};

/*
 * Decide. Returns -1 only for errors in the user's files that make any
 * decision meaningless (wrong types for the keys distenv uses); every
 * other finding is a message in dec->msgs (under check=strict warnings
 * count as errors; check=off keeps only the decisions, no checks).
 */
int lf_decide(const struct lf_inputs *in, struct lf_decision *dec,
	      struct distenv_error *err);

/*
 * The resume check's view of this node (lf_resume.h) from in, for a run
 * of ZeRO stage zero_stage: its ranks (a node or GPU count of 0 counts
 * as 1), and the storage of output_dir. checkpoint and latest_tag are
 * left NULL for the caller.
 */
void lf_resume_input_of(const struct lf_inputs *in, int zero_stage,
			struct lf_resume_input *ri);

/*
 * The checks that need only the YAML and the submitting host's files,
 * for srun/sbatch/salloc before anything starts: unknown keys, and a
 * local model_name_or_path that cannot be read (in->model_missing).
 * in->yaml and in->check are read; the rest may be zero. Findings go to
 * dec->msgs, as lf_decide's.
 */
void lf_decide_submit(const struct lf_inputs *in, const char *model_path,
		      struct lf_decision *dec);

/* Add a message (dropped past LF_MSG_MAX, counted). */
void lf_msgs_add(struct lf_msgs *m, enum lf_level level,
		 const struct distenv_error *e);

#endif
