/*
 * cmd_plan.c: `distenv plan FILE --nodes N --gpus-per-node G ...`: the
 * memory plan and the resolved LLaMA-Factory settings for a training
 * YAML, without Slurm and without writing anything (plugin/lf/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "distenv_env.h"
#include "lf_prepare.h"
#include "lf_request.h"
#include "lf_sys.h"
#include "plan_memory.h"

extern char **environ;

/* The value of one option of plan or prepare (the rows with
 * DISTENV_IN_PLAN or DISTENV_IN_PREPARE) into req (lf_request_set, as
 * the plugin sets its own), facts or *output. */
static int set_option(int id, const char *value, const char *where,
		      struct lf_prepare_request *req,
		      struct lf_prepare_facts *facts, int *output,
		      struct distenv_error *err)
{
	int rc = lf_request_set(req, id, value, where, err);

	if (rc != LF_REQUEST_NOT_OWNED)
		return rc;
	switch (id) {
	case DISTENV_OPT_STEP_NODES:
		return lf_parse_count(value, 1, 100000, "a node count", where,
				      &facts->nnodes, err);
	case DISTENV_OPT_GPUS_PER_NODE:
		return lf_parse_count(value, 1, 1024, "a GPU count", where,
				      &facts->gpus_per_node, err);
	case DISTENV_OPT_NODE_ID:
		return lf_parse_count(value, 0, 99999, "a node index", where,
				      &facts->node_id, err);
	case DISTENV_OPT_PRINT_YAML: /* plan's only: output is set */
		*output |= DISTENV_PLAN_YAML;
		return 0;
	case DISTENV_OPT_JSON:
		*output |= DISTENV_PLAN_JSON;
		return 0;
	default:
		return distenv_error_set(err, where, NULL,
					 "not an option of plan or prepare");
	}
}

int distenv_lf_cmd_options(const struct distenv_command *cmd, int argc,
			   char **argv, struct lf_prepare_request *req,
			   struct lf_prepare_facts *facts, int *output)
{
	struct distenv_cmd_options o;
	struct distenv_error err;
	const char *value;
	int id, rc, plan;

	distenv_error_clear(&err);
	distenv_cmd_options_begin(&o, cmd);
	while ((id = distenv_cmd_option(&o, argc, argv, &value, &err)) >= 0)
		if (set_option(id, value, o.where, req, facts, output, &err))
			return distenv_cmd_usage_error(&err);
	/* plan: one training YAML; prepare: none, but --lf-config */
	plan = o.cmd->operands[0] != '\0';
	rc = distenv_cmd_options_end(&o, id, argc, argv, plan, plan, &err);
	if (rc >= 0)
		return rc;
	if (plan)
		req->config = argv[optind];
	if (!req->config || !req->config[0]) {
		distenv_error_set(&err, "--lf-config", o.fix,
				  "name the training YAML");
		return distenv_cmd_usage_error(&err);
	}
	if (facts->nnodes && facts->node_id >= facts->nnodes) {
		distenv_error_set(&err, "--node-id", NULL,
				  "node %u is not in a %u-node step",
				  facts->node_id, facts->nnodes);
		return distenv_cmd_usage_error(&err);
	}
	distenv_cmd_stack_detect(&req->stack);
	return -1;
}

void distenv_lf_print_msgs(FILE *out, const struct lf_decision *dec)
{
	char line[3 * DISTENV_ERROR_TEXT];
	size_t i;

	for (i = 0; i < dec->msgs.count; i++) {
		distenv_error_format(&dec->msgs.items[i].e, line, sizeof(line));
		fprintf(out, "distenv: %s: %s\n",
			dec->msgs.items[i].level == LF_ERROR ? "error" :
							       "warning",
			line);
	}
	if (dec->msgs.count < dec->msgs.errors)
		fprintf(out, "distenv: (more messages left out)\n");
}

/* The step's shape when the user gave none: one node, one GPU, said
 * in the plan's first line, since both decide save_on_each_node and the
 * memory per GPU. Returns whether anything was assumed. */
static int assume_shape(struct lf_prepare_facts *facts, char *buf, size_t len)
{
	int n = !facts->nnodes, g = !facts->gpus_per_node;

	buf[0] = '\0';
	if (n)
		facts->nnodes = 1;
	if (g)
		facts->gpus_per_node = 1;
	if (n || g)
		snprintf(buf, len,
			 "%s%s%s (not given: give both for the real "
			 "step)",
			 n ? "--nodes 1" : "", n && g ? " " : "",
			 g ? "--gpus-per-node 1" : "");
	return n || g;
}

int distenv_cmd_plan(const struct distenv_command *cmd, int argc, char **argv)
{
	char assumed_text[128];
	int assumed;
	struct lf_prepare_request req;
	struct lf_prepare_facts facts;
	struct lf_prepare_result res;
	struct distenv_error err;
	const struct lf_decision *dec = &res.dec;
	int output = 0, rc, i;

	memset(&req, 0, sizeof(req));
	memset(&facts, 0, sizeof(facts));
	facts.write = LF_WRITE_NONE;
	facts.node_ram = lf_sys_node_ram();
	facts.force_torchrun = distenv_env_get((const char *const *) environ,
					       "FORCE_TORCHRUN");
	facts.alloc_conf = distenv_env_get((const char *const *) environ,
					   "PYTORCH_CUDA_ALLOC_CONF");
	/* whether LLaMA-Factory's launcher sets expandable segments */
	facts.optim_torch =
		distenv_env_get((const char *const *) environ, "OPTIM_TORCH");
	rc = distenv_lf_cmd_options(cmd, argc, argv, &req, &facts, &output);
	if (rc >= 0)
		return rc;
	distenv_error_clear(&err);
	assumed = assume_shape(&facts, assumed_text, sizeof(assumed_text));
	rc = lf_prepare(&req, &facts, &res, &err);
	if (rc && !res.yaml_text) {
		distenv_lf_print_msgs(stderr, dec);
		lf_prepare_result_free(&res);
		return distenv_cmd_fail(&err);
	}
	if (output & DISTENV_PLAN_JSON) {
		distenv_plan_print_json(stdout, dec);
		distenv_lf_print_msgs(stderr, dec);
		lf_prepare_result_free(&res);
		return rc ? 1 : 0;
	}
	printf("resolved settings for %s (%u node%s x %u GPU%s, node %u)%s%s\n",
	       req.config, facts.nnodes, facts.nnodes == 1 ? "" : "s",
	       facts.gpus_per_node, facts.gpus_per_node == 1 ? "" : "s",
	       facts.node_id, assumed ? "; assumed " : "", assumed_text);
	printf("  save_on_each_node: %s%s\n", dec->soen ? "true" : "false",
	       dec->soen_set ? " (decided by distenv)" : "");
	printf("  deepspeed: %s (ZeRO stage %d)\n",
	       dec->deepspeed[0] ? dec->deepspeed : "none", dec->zero_stage);
	printf("  offload: %s%s\n", dec->offload_cpu ? "cpu" : "none",
	       dec->ds_changed ? " (decided by distenv)" : "");
	if (dec->alloc_conf_set)
		printf("  PYTORCH_CUDA_ALLOC_CONF=%s\n", dec->alloc_conf);
	printf("  resume: %s\n", dec->resume ? dec->resume_ckpt : "no");
	for (i = 0; i < (int) dec->nchanges; i++)
		printf("  changed: %s\n", dec->changes[i]);
	if (dec->have_plan)
		plan_mem_plan_print(stdout, &dec->mem_in, &dec->mem);
	else
		printf("memory plan: no model size (model_name_or_path is not "
		       "a local directory with config.json; give "
		       "--model-params 70B)\n");
	distenv_plan_print_fit(stdout, dec);
	if ((output & DISTENV_PLAN_YAML) && res.yaml_text)
		printf("--- resolved YAML\n%s", res.yaml_text);
	distenv_lf_print_msgs(stderr, dec);
	lf_prepare_result_free(&res);
	return rc ? 1 : 0;
}
