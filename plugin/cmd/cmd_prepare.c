/*
 * cmd_prepare.c: `distenv prepare --lf-config FILE ...` inside an srun
 * step, for clusters without the plugin: does what --distenv-lf-config
 * does in task_init (plugin/lf/lf_prepare.h) and prints export lines:
 *   eval "$(distenv prepare --lf-config dpo.yaml)"
 *   llamafactory-cli train "$DISTENV_LF_CONFIG"
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "distenv_env.h"
#include "distenv_gpus.h"
#include "distenv_step.h"
#include "lf_prepare.h"
#include "lf_sys.h"

extern char **environ;

/* Single-quote s for a POSIX shell (XCU 2.2.2). */
static void print_quoted(const char *s)
{
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

int distenv_cmd_prepare(const struct distenv_command *cmd, int argc,
			char **argv)
{
	const char *const *envp = (const char *const *) environ;
	struct lf_prepare_request req;
	struct lf_prepare_facts facts;
	struct lf_prepare_result res;
	struct distenv_step step;
	struct distenv_error err;
	uint32_t mem = 0;
	int rc, step_rc;
	char partner[256], resume_path[DISTENV_LF_PATH_MAX];

	memset(&req, 0, sizeof(req));
	memset(&facts, 0, sizeof(facts));
	distenv_error_clear(&err);
	/* The step's shape first, so that options given override it; its
	 * error waits until --help and usage errors have had their say. */
	step_rc = distenv_step_from_env(envp, 0, &step, &err);
	if (!step_rc) {
		facts.job_id = step.job_id;
		facts.step_id = step.step_id;
		facts.nnodes = step.nnodes;
		facts.node_id = step.node_id;
		facts.gpus_per_node = distenv_gpus_per_node(envp, NULL);
		facts.node_name = distenv_env_get(envp, "SLURMD_NODENAME");
	}
	rc = distenv_lf_cmd_options(cmd, argc, argv, &req, &facts, NULL);
	if (rc >= 0)
		return rc;
	if (step_rc)
		return distenv_cmd_fail(&err);
	/* the same as the plugin takes them (lf_prepare.h) */
	lf_prepare_facts_env(envp, &facts, partner, sizeof(partner));
	if (lf_prepare_resume_env(envp, &req, resume_path, sizeof(resume_path),
				  &err))
		return distenv_cmd_fail(&err);
	/* SLURM_MEM_PER_NODE (MB): what --mem gave the job on each node. */
	if (distenv_env_u32(envp, "SLURM_MEM_PER_NODE", 0, &mem, NULL) == 1)
		facts.alloc_mem_mb = mem;
	facts.node_ram = lf_sys_node_ram();
	facts.write = step.localid == 0 ? LF_WRITE_FILES : LF_WRITE_WAIT;
	rc = lf_prepare(&req, &facts, &res, &err);
	distenv_lf_print_msgs(stderr, &res.dec);
	if (rc) {
		lf_prepare_result_free(&res);
		return distenv_cmd_fail(&err);
	}
	fputs("export DISTENV_LF_CONFIG=", stdout);
	print_quoted(res.config_path);
	putchar('\n');
	if (res.resume_set) {
		fputs("export DISTENV_LF_RESUME=", stdout);
		print_quoted(res.resume_path[0] ? res.resume_path : "none");
		putchar('\n');
	}
	if (res.alloc_conf_set) {
		fputs("export PYTORCH_CUDA_ALLOC_CONF=", stdout);
		print_quoted(res.alloc_conf);
		putchar('\n');
	}
	if (res.dec.optim_torch_off) {
		puts("export OPTIM_TORCH=0");
		if (!distenv_env_get(envp, "TORCH_NCCL_AVOID_RECORD_STREAMS"))
			puts("export TORCH_NCCL_AVOID_RECORD_STREAMS=1");
	}
	lf_prepare_result_free(&res);
	return 0;
}
