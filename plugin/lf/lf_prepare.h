/*
 * lf_prepare.h: the one entry point of the LLaMA-Factory preparation,
 * called by the SPANK glue (task_init, as the user), by `distenv
 * prepare` inside a step and by `distenv plan` (no files written).
 *
 * It reads the user's training YAML, the DeepSpeed JSON it names and
 * the model's config.json (each read by distenv_file_read: regular
 * files only, no symbolic link, never modified), classifies
 * output_dir's storage (by the marks of a --distenv-mark-storage step
 * when there are some, lf_storage_mark.h; else the site policy or the
 * file system type), lists the checkpoint to resume from, decides
 * (lf_decide.h), writes the resolved copies and returns what to export.
 *
 * Where the resolved copies go: BASE/
 * distenv-<uid>-<job>.<step>-<node index>[-r<restart>]/lf_config.yaml and
 * ds_config.json, BASE by lf_dir.h (--distenv-lf-dir, the site's lf_dir:,
 * $TMPDIR, /tmp): a directory private to the user (0700), one per step
 * on each node (the node index keeps nodes apart even when BASE is
 * shared), and at a path
 * every task of the node computes the same way. Only the writer (local
 * task 0) creates it; the node's other tasks wait for the file.
 */
#ifndef DISTENV_LF_PREPARE_H
#define DISTENV_LF_PREPARE_H

#include <limits.h>
#include <stdint.h>

#include "distenv_error.h"
#include "lf_container.h"
#include "lf_decide.h"
#include "lf_dir.h"
#include "plan_stack.h"

struct lf_prepare_request {
	const char *config; /* --distenv-lf-config */
	int soen; /* enum lf_soen */
	int offload; /* enum lf_offload */
	int check; /* enum lf_check */
	uint64_t model_params; /* --distenv-model-params, 0 none */
	uint64_t gpu_mem; /* --distenv-gpu-mem, bytes, 0 unknown */
	uint64_t host_mem; /* bytes per node; 0: from the facts */
	uint32_t answer_tokens; /* --answer-tokens, 0: the default */
	/* --lf-version, --transformers-version (plan_stack.h); the
	 * plugin leaves both unknown: it does not run the job's Python */
	struct plan_stack stack;
	const char *storage_policy; /* site: "shared:/gpfs,local:/scratch" */
	int resume; /* enum lf_resume_mode (lf_ckpt.h) */
	const char *resume_path; /* LF_RESUME_PATH: the checkpoint */
	/* The base folder of the copies (lf_dir.h), each checked by
	 * distenv_parse_lf_dir (distenv_options.h); NULL: none. */
	const char *dir; /* --distenv-lf-dir, --lf-dir */
	const char *site_dir; /* the site file's lf_dir: */
	/* The step's pyxis container (lf_container.h), NULL: none. The
	 * YAML's paths are then read through its mounts, and the copies
	 * exported under their path in the container. */
	const struct lf_container *container;
};

enum lf_prepare_write {
	LF_WRITE_NONE = 0, /* distenv plan: compute, write nothing */
	LF_WRITE_FILES, /* the node's writer (local task 0) */
	LF_WRITE_WAIT, /* another task of the node: wait for the file */
};

struct lf_prepare_facts {
	uint32_t job_id, step_id;
	uint32_t nnodes, node_id, gpus_per_node;
	const char *force_torchrun; /* the task's FORCE_TORCHRUN, or NULL */
	const char *alloc_conf; /* its PYTORCH_CUDA_ALLOC_CONF, or NULL */
	const char *optim_torch; /* its OPTIM_TORCH (set by the user), or
				     * NULL */
	uint64_t alloc_mem_mb; /* S_STEP_ALLOC_MEM / S_JOB_ALLOC_MEM
				     * (MB on this node), 0 unknown */
	uint64_t node_ram; /* bytes, 0 unknown */
	const char *tmpdir; /* $TMPDIR, NULL: /tmp */
	uint32_t restart_count; /* SLURM_RESTART_COUNT, 0 first run */
	/* Storage marks (lf_storage_mark.h): this node's name and that of
	 * the node whose mark it reads (lf_mark_partner_index); NULL: no
	 * marks are read, the file system type decides. */
	const char *node_name, *partner_name;
	int write; /* enum lf_prepare_write */
};

struct lf_prepare_result {
	char dir[PATH_MAX]; /* on the host, where the copies are written */
	int dir_source; /* enum lf_dir_source: why dir's base */
	/* dir's path in the container (dir itself without one), and 0
	 * when no --container-mounts entry shows it there */
	char dir_c[PATH_MAX];
	int dir_seen;
	/* DISTENV_LF_CONFIG and the copy's deepspeed:, under dir_c */
	char config_path[PATH_MAX];
	char ds_path[PATH_MAX]; /* "" when the DeepSpeed config is kept */
	char alloc_conf[512]; /* PYTORCH_CUDA_ALLOC_CONF to export */
	int alloc_conf_set;
	/* --distenv-resume auto or PATH (lf_ckpt.h): resume_set is 1, the
	 * checkpoint in resume_path ("" when none is complete here) and
	 * the reason in resume_note (for the job log). */
	int resume_set;
	char resume_path[PATH_MAX];
	char resume_note[2048];
	char *yaml_text; /* the resolved YAML (malloc'd) */
	char *ds_text; /* the resolved JSON, or NULL */
	struct lf_decision dec; /* decisions, memory plan, messages */
};

/*
 * Prepare. Returns 0 when the run may start (warnings may be in
 * res->dec.msgs), -1 with err set when it must not: unreadable or
 * malformed files, wrong types, a failed write, or a check that found
 * an error (under check=strict every warning is one; err then holds the
 * first, res->dec.msgs all of them). Free with lf_prepare_result_free.
 */
int lf_prepare(const struct lf_prepare_request *req,
	       const struct lf_prepare_facts *facts,
	       struct lf_prepare_result *res, struct distenv_error *err);

void lf_prepare_result_free(struct lf_prepare_result *res);

/* The job's start: SLURM_RESTART_COUNT in env (sbatch(1), OUTPUT
 * ENVIRONMENT VARIABLES), 0 when unset or malformed. */
uint32_t lf_restart_count(const char *const *env);

/*
 * The facts of lf_prepare_facts that come from the task's environment
 * env, the same for the plugin (task_init) and `distenv prepare`:
 * FORCE_TORCHRUN and OPTIM_TORCH as the user set them (not distenv),
 * PYTORCH_CUDA_ALLOC_CONF, TMPDIR, the start (lf_restart_count); partner
 * gets the name of the node whose storage mark this node reads
 * (lf_sys_mark_partner), from f->node_id and f->nnodes, which the caller
 * sets first, as it sets f->node_name (SLURMD_NODENAME, which the plugin
 * reads once for its messages too). The pointers point into env and
 * partner.
 */
void lf_prepare_facts_env(const char *const *env, struct lf_prepare_facts *f,
			  char *partner, size_t partner_len);

/*
 * DISTENV_RESUME in env, the checkpoint a job script agreed on for all
 * nodes (templates/, lf_ckpt.h), when req->resume is still the default:
 * sets req->resume and req->resume_path (into path). 0, or -1 with err
 * when the value is malformed.
 */
int lf_prepare_resume_env(const char *const *env,
			  struct lf_prepare_request *req, char *path,
			  size_t path_len, struct distenv_error *err);

/*
 * The --distenv-mark-storage step, on each node (local task 0, as the
 * user): read config's output_dir and write this node's mark of the
 * job's start there (lf_sys_mark_write), at its host path under a pyxis
 * step (container, NULL: none; lf_container.h). *written (may be NULL)
 * gets the host path marked. Errors: the YAML
 * cannot be read or has no output_dir, a pyxis step's output_dir has
 * no host path, or the mark cannot be written.
 */
int lf_prepare_mark_storage(const char *config,
			    const struct lf_container *container,
			    uint32_t job_id, uint32_t restart, const char *node,
			    char *written, size_t len,
			    struct distenv_error *err);

/*
 * At submit (srun, sbatch, salloc: the user, on the submitting host):
 * load config and run the checks whose failure is certain on every node
 * (lf_decide_submit: unknown keys, a local model path that cannot be
 * read, unless container: the step runs in a pyxis container, whose
 * paths the task looks at through its mounts). check: enum lf_check;
 * off checks nothing. Errors: the file cannot be read or parsed, or the
 * first finding, "(and N more)".
 */
int lf_prepare_submit_check(const char *config, int check, int container,
			    struct distenv_error *err);

#endif
