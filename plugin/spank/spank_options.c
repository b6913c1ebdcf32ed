/*
 * spank_options.c: the --distenv* options, one small idempotent callback
 * each (Slurm may call a callback twice with the same value).
 *
 * On the submit side (srun, sbatch, salloc, remote == 0) a bad value
 * fails the command at once. In slurmstepd (remote == 1) a callback must
 * not fail, so the error is kept and reported from task_init.
 */
#include <stdio.h>
#include <string.h>

#include <slurm/spank.h>

#include "distenv_ifspec.h"
#include "lf_ckpt.h"
#include "lf_decide.h"
#include "lf_model.h"
#include "spank_state.h"

static int reject(int remote)
{
	if (remote)
		return 0;
	distenv_log_error(&distenv_state.option_error);
	return -1;
}

/* Slurm 22.05 forwards an optional-argument option given without a
 * value (#SBATCH --distenv, salloc --distenv) to the inner srun as
 * SLURM_SPANK__SLURM_SPANK_OPTION_distenv_distenv=(null), the NULL
 * value printed with "%s" (seen on Debian's 22.05.8, tests/cluster). */
static const char *no_value_as_null(const char *optarg)
{
	return optarg && strcmp(optarg, "(null)") == 0 ? NULL : optarg;
}

static int opt_mode(int val, const char *optarg, int remote)
{
	(void)val;
	optarg = no_value_as_null(optarg);
	if (distenv_parse_mode(optarg, "--distenv", &distenv_state.req.mode,
			       &distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_port(int val, const char *optarg, int remote)
{
	(void)val;
	if (distenv_parse_port(optarg, "--distenv-port",
			       &distenv_state.req.port,
			       &distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_ifname(int val, const char *optarg, int remote)
{
	struct distenv_request *req = &distenv_state.req;

	(void)val;
	if (distenv_ifspec_validate(optarg, "--distenv-ifname",
				    &distenv_state.option_error))
		return reject(remote);
	snprintf(req->ifname, sizeof(req->ifname), "%s", optarg);
	return 0;
}

static int opt_nproc(int val, const char *optarg, int remote)
{
	(void)val;
	if (distenv_parse_nproc(optarg, "--distenv-nproc",
				&distenv_state.req.nproc,
				&distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_nodes(int val, const char *optarg, int remote)
{
	(void)val;
	if (distenv_parse_nodes_range(optarg, "--distenv-nodes",
				      &distenv_state.req.min_nodes,
				      &distenv_state.req.max_nodes,
				      &distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_max_restarts(int val, const char *optarg, int remote)
{
	(void)val;
	if (distenv_parse_max_restarts(optarg, "--distenv-max-restarts",
				       &distenv_state.req.max_restarts,
				       &distenv_state.option_error))
		return reject(remote);
	distenv_state.req.max_restarts_given = 1;
	return 0;
}

/* The options without a value; val says which (the table below). */
enum { FLAG_SHOW = 1, FLAG_MARK_STORAGE };

static int opt_flag(int val, const char *optarg, int remote)
{
	(void)optarg;
	(void)remote;
	if (val == FLAG_SHOW)
		distenv_state.req.show = 1;
	else if (val == FLAG_MARK_STORAGE)
		distenv_state.req.mark_storage = 1;
	return 0;
}

/* --distenv-lf-config and friends (plugin/lf/). The file is checked
 * on the submit side only, where the callback runs as the user;
 * slurmstepd (root) only records the path: the task reads it. */
static int opt_lf_config(int val, const char *optarg, int remote)
{
	struct distenv_request *req = &distenv_state.req;

	(void)val;
	if (!optarg || !optarg[0] || strlen(optarg) >= sizeof(req->lf_config)) {
		distenv_error_set(&distenv_state.option_error,
				  "--distenv-lf-config", "name the training YAML",
				  "missing or too long a path");
		return reject(remote);
	}
	if (!remote && distenv_lf_config_check(optarg,
					       &distenv_state.option_error)) {
		distenv_error_prefix_where(&distenv_state.option_error,
					   "--distenv-lf-config");
		return reject(remote);
	}
	snprintf(req->lf_config, sizeof(req->lf_config), "%s", optarg);
	return 0;
}

static int opt_save_on_each_node(int val, const char *optarg, int remote)
{
	(void)val;
	if (lf_parse_soen(optarg, "--distenv-save-on-each-node",
			  &distenv_state.req.save_on_each_node,
			  &distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_offload(int val, const char *optarg, int remote)
{
	(void)val;
	if (lf_parse_offload(optarg, "--distenv-offload",
			     &distenv_state.req.offload,
			     &distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_check(int val, const char *optarg, int remote)
{
	(void)val;
	if (lf_parse_check(optarg, "--distenv-check", &distenv_state.req.check,
			   &distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_model_params(int val, const char *optarg, int remote)
{
	(void)val;
	if (lf_parse_params(optarg, "--distenv-model-params",
			    &distenv_state.req.model_params,
			    &distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_gpu_mem(int val, const char *optarg, int remote)
{
	(void)val;
	if (lf_parse_mem(optarg, "--distenv-gpu-mem", &distenv_state.req.gpu_mem,
			 &distenv_state.option_error))
		return reject(remote);
	return 0;
}

/* --distenv-resume (plugin/lf/lf_ckpt.h). */
static int opt_resume(int val, const char *optarg, int remote)
{
	struct distenv_request *req = &distenv_state.req;

	(void)val;
	if (lf_parse_resume(optarg, "--distenv-resume", &req->resume,
			    req->resume_path, sizeof(req->resume_path),
			    &distenv_state.option_error))
		return reject(remote);
	return 0;
}

static struct spank_option options[] = {
	{"distenv", "[torchrun|elastic|tasks|off]",
	 "Derive NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT, NPROC_PER_NODE, "
	 "NCCL/GLOO_SOCKET_IFNAME for torchrun or LLaMA-Factory "
	 "(torchrun: one task per node; elastic: the same with c10d "
	 "rendezvous; tasks: one task per rank)",
	 2, 0, opt_mode},
	{"distenv-nodes", "MIN:MAX",
	 "Node counts an elastic launch accepts (MIN_NNODES, MAX_NNODES); "
	 "default: the step's",
	 1, 0, opt_nodes},
	{"distenv-max-restarts", "N",
	 "Worker restarts of an elastic launch (MAX_RESTARTS); default 0",
	 1, 0, opt_max_restarts},
	{"distenv-port", "PORT",
	 "MASTER_PORT (1024-65535) when Slurm reserved no ports for the step",
	 1, 0, opt_port},
	{"distenv-ifname", "NAME",
	 "Interface for NCCL/Gloo (a name, or NCCL's =name / ^name list)",
	 1, 0, opt_ifname},
	{"distenv-nproc", "N",
	 "Processes per node (NPROC_PER_NODE); default: GPUs of the task",
	 1, 0, opt_nproc},
	{"distenv-show", NULL,
	 "Print each node's derived variables and their sources to stderr",
	 0, FLAG_SHOW, opt_flag},
	{"distenv-lf-config", "FILE",
	 "LLaMA-Factory training YAML: write a resolved copy per node "
	 "(DISTENV_LF_CONFIG) and check the run before launch",
	 1, 0, opt_lf_config},
	{"distenv-save-on-each-node", "auto|yes|no",
	 "save_on_each_node for --distenv-lf-config (auto: by output_dir's "
	 "storage, node-local or shared)",
	 1, 0, opt_save_on_each_node},
	{"distenv-offload", "none|cpu|auto",
	 "ZeRO-3 CPU offload in the resolved DeepSpeed config (default: as "
	 "the config says)",
	 1, 0, opt_offload},
	{"distenv-check", "warn|strict|off",
	 "LLaMA-Factory and network preflight checks: warn (default), "
	 "strict (fail the step), off",
	 1, 0, opt_check},
	{"distenv-model-params", "COUNT",
	 "Model size for the memory plan when config.json is not local "
	 "(70B, 7.6B)",
	 1, 0, opt_model_params},
	{"distenv-gpu-mem", "SIZE",
	 "GPU memory per GPU for the memory plan (80G)",
	 1, 0, opt_gpu_mem},
	{"distenv-resume", "auto|off|PATH",
	 "Checkpoint to resume from with --distenv-lf-config: auto (the "
	 "newest complete on the node; default on a requeued job), off, or "
	 "a checkpoint directory",
	 1, 0, opt_resume},
	{"distenv-mark-storage", NULL,
	 "Only mark output_dir of --distenv-lf-config on each node, so that "
	 "later steps of the job see whether the nodes share it (srun, one "
	 "task per node)",
	 0, FLAG_MARK_STORAGE, opt_flag},
	SPANK_OPTIONS_TABLE_END};

int distenv_options_register(spank_t sp)
{
	size_t i;

	for (i = 0; options[i].name; i++) {
		spank_err_t rc = spank_option_register(sp, &options[i]);

		if (rc != ESPANK_SUCCESS) {
			slurm_error("distenv: cannot register --%s: %s",
				    options[i].name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

void distenv_log_error(const struct distenv_error *err)
{
	char line[3 * DISTENV_ERROR_TEXT];

	distenv_error_format(err, line, sizeof(line));
	slurm_error("distenv: %s", line);
}
