/*
 * lf_request.h: the options of the LLaMA-Factory run preparation into
 * the request lf_prepare takes (lf_prepare.h). One parser for the
 * plugin's --distenv-* options (srun, sbatch, salloc and slurmstepd) and
 * for those of `distenv plan` and `distenv prepare`, so that the plugin
 * and the command cannot read the same value two ways. Pure.
 */
#ifndef DISTENV_LF_REQUEST_H
#define DISTENV_LF_REQUEST_H

#include <stdint.h>

#include "distenv_error.h"
#include "distenv_option_table.h"
#include "lf_prepare.h"

/* lf_request_set's answer for an option it leaves to its caller. */
#define LF_REQUEST_NOT_OWNED 1

/*
 * The value of the option whose row (distenv_option_table.h) is id into
 * req:
 *   save-on-each-node  auto|yes|no             soen (enum lf_soen)
 *   offload            none|cpu|auto           offload (enum lf_offload)
 *   check              warn|strict|off         check (enum lf_check)
 *   model-params       a count with its unit   model_params (70B, 7.6B)
 *   gpu-mem, host-mem  a size with its unit    gpu_mem, host_mem, bytes
 *                                              (80G, 1T; plan_parse_mem)
 *   answer-tokens      1 to 1048576            answer_tokens
 *   lf-version,        0.9.5, 4.46.1, unknown  stack.lf, stack.tf
 *   transformers-version                       (plan_parse_version);
 *                                              stack.*_from: the option
 *   lf-config          the training YAML       config
 *   lf-dir             an absolute directory   dir (distenv_parse_lf_dir)
 *   storage-policy     the site's list         storage_policy
 * lf-config, lf-dir and storage-policy are not copied: req points at value, which must
 * outlive req (the plugin passes its own copy of Slurm's optarg).
 *
 * where names the option as the user gave it ("--distenv-offload",
 * "--offload") and the errors name it: those of lf_parse_soen,
 * lf_parse_offload, lf_parse_check (lf_decide.h), plan_parse_params,
 * plan_parse_mem (plugin/plan/plan_model.h), plan_parse_version
 * (plan_stack.h) and lf_parse_count.
 *
 * Returns 0, -1 with err set, or LF_REQUEST_NOT_OWNED (req and err
 * untouched) for any other id, which the caller handles: the plugin's
 * --distenv-resume (its path needs a buffer that outlives optarg) and
 * the submit-side check of --distenv-lf-config's file; plan's and
 * prepare's step facts (--nodes, --gpus-per-node, --node-id) and
 * output (--print-yaml, --json).
 */
int lf_request_set(struct lf_prepare_request *req, int id, const char *value,
		   const char *where, struct distenv_error *err);

/*
 * A count from lo to hi (decimal digits only, hi at most UINT32_MAX),
 * what naming it in the error at where: "'0' is not a node count from 1
 * to 100000". For answer-tokens and the step facts of plan and prepare.
 */
int lf_parse_count(const char *value, uint32_t lo, uint32_t hi,
		   const char *what, const char *where, uint32_t *out,
		   struct distenv_error *err);

#endif
