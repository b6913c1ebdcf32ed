/*
 * cmd_prepare.c: `distenv prepare --lf-config FILE ...` inside an srun
 * step, for clusters without the plugin: does what --distenv-lf-config
 * does in task_init (plugin/lf/lf_prepare.h) and prints export lines:
 *   eval "$(distenv prepare --lf-config dpo.yaml)"
 *   llamafactory-cli train "$DISTENV_LF_CONFIG"
 */
#include <getopt.h>
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

int distenv_cmd_prepare(int argc, char **argv)
{
	const char *const *envp = (const char *const *)environ;
	struct lf_prepare_request req;
	struct lf_prepare_facts facts;
	struct lf_prepare_result res;
	struct distenv_step step;
	struct distenv_error err;
	uint32_t mem = 0;
	int rc, i, cfg = -1;
	char partner[256], resume_path[DISTENV_LF_PATH_MAX];

	memset(&req, 0, sizeof(req));
	memset(&facts, 0, sizeof(facts));
	distenv_error_clear(&err);
	/* --lf-config FILE first, then the plan options. */
	for (i = 1; i < argc - 1; i++)
		if (!strcmp(argv[i], "--lf-config"))
			cfg = i;
	if (cfg < 0) {
		distenv_error_set(&err, "--lf-config", "see distenv --help",
				  "name the training YAML");
		distenv_cmd_fail(&err);
		return 2;
	}
	req.config = argv[cfg + 1];
	for (i = cfg; i + 2 < argc; i++)
		argv[i] = argv[i + 2];
	argc -= 2;
	if (distenv_step_from_env(envp, 0, &step, &err))
		return distenv_cmd_fail(&err);
	facts.job_id = step.job_id;
	facts.step_id = step.step_id;
	facts.nnodes = step.nnodes;
	facts.node_id = step.node_id;
	facts.gpus_per_node = distenv_gpus_per_node(envp, NULL);
	facts.node_name = distenv_env_get(envp, "SLURMD_NODENAME");
	if (distenv_lf_cmd_options(argc, argv, 0, &req, &facts, NULL, &err)) {
		distenv_cmd_fail(&err);
		return 2;
	}
	req.config = req.config ? req.config : "";
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
