/*
 * cmd_plan.c: `distenv plan FILE --nodes N --gpus-per-node G ...`: the
 * memory plan and the resolved LLaMA-Factory settings for a training
 * YAML, without Slurm and without writing anything (plugin/lf/).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "distenv_env.h"
#include "lf_prepare.h"
#include "lf_sys.h"

extern char **environ;

/* One option of distenv plan and distenv prepare (getopt_long's c and
 * optarg; opt: the word given, for an unknown one). */
static int lf_cmd_option(int c, const char *arg, const char *opt,
			 struct lf_prepare_request *req,
			 struct lf_prepare_facts *facts, int *output,
			 struct distenv_error *err)
{
	int rc = 0;

	switch (c) {
	case 'N':
		if (distenv_parse_u32(arg, 100000, &facts->nnodes) ||
		    !facts->nnodes)
			rc = distenv_error_set(err, "--nodes", NULL,
					       "'%s' is not a node "
					       "count", arg);
		break;
	case 'G':
		if (distenv_parse_u32(arg, 1024,
				      &facts->gpus_per_node) ||
		    !facts->gpus_per_node)
			rc = distenv_error_set(err, "--gpus-per-node",
					       NULL, "'%s' is not a GPU "
					       "count", arg);
		break;
	case 'i':
		if (distenv_parse_u32(arg, 100000, &facts->node_id))
			rc = distenv_error_set(err, "--node-id", NULL,
					       "'%s' is not a node "
					       "index", arg);
		break;
	case 'g':
		rc = lf_parse_mem(arg, "--gpu-mem", &req->gpu_mem,
				  err);
		break;
	case 'h':
		rc = lf_parse_mem(arg, "--host-mem", &req->host_mem,
				  err);
		break;
	case 'p':
		rc = lf_parse_params(arg, "--model-params",
				     &req->model_params, err);
		break;
	case 's':
		rc = lf_parse_soen(arg, "--save-on-each-node",
				   &req->soen, err);
		break;
	case 'o':
		rc = lf_parse_offload(arg, "--offload",
				      &req->offload, err);
		break;
	case 'c':
		rc = lf_parse_check(arg, "--check", &req->check,
				    err);
		break;
	case 'P':
		req->storage_policy = arg;
		break;
	case 'a':
		if (distenv_parse_u32(arg, 1048576,
				      &req->answer_tokens) ||
		    !req->answer_tokens)
			rc = distenv_error_set(err, "--answer-tokens",
					       "give the longest "
					       "answer in tokens, "
					       "1 to 1048576",
					       "'%s' is not a token "
					       "count", arg);
		break;
	case 'y':
		if (output)
			*output |= DISTENV_PLAN_YAML;
		break;
	case 'j':
		if (output)
			*output |= DISTENV_PLAN_JSON;
		break;
	default:
		return distenv_error_set(err, opt, "see distenv --help",
					 "unknown option or missing value");
	}
	return rc;
}

/* The operands left after the options, and the node index in the step. */
static int lf_cmd_operands(int argc, char **argv, int need_file,
			   struct lf_prepare_request *req,
			   const struct lf_prepare_facts *facts,
			   struct distenv_error *err)
{
	if (need_file) {
		if (optind != argc - 1)
			return distenv_error_set(err, "distenv plan",
						 "see distenv --help",
						 "give exactly one training "
						 "YAML");
		req->config = argv[optind];
	} else if (optind < argc) {
		return distenv_error_set(err, argv[optind],
					 "see distenv --help",
					 "unexpected argument");
	}
	if (facts->nnodes && facts->node_id >= facts->nnodes)
		return distenv_error_set(err, "--node-id", NULL,
					 "node %u is not in a %u-node step",
					 facts->node_id, facts->nnodes);
	return 0;
}

int distenv_lf_cmd_options(int argc, char **argv, int need_file,
			   struct lf_prepare_request *req,
			   struct lf_prepare_facts *facts, int *output,
			   struct distenv_error *err)
{
	static const struct option longopts[] = {
		{"nodes", required_argument, NULL, 'N'},
		{"gpus-per-node", required_argument, NULL, 'G'},
		{"node-id", required_argument, NULL, 'i'},
		{"gpu-mem", required_argument, NULL, 'g'},
		{"host-mem", required_argument, NULL, 'h'},
		{"model-params", required_argument, NULL, 'p'},
		{"save-on-each-node", required_argument, NULL, 's'},
		{"offload", required_argument, NULL, 'o'},
		{"check", required_argument, NULL, 'c'},
		{"storage-policy", required_argument, NULL, 'P'},
		{"answer-tokens", required_argument, NULL, 'a'},
		{"print-yaml", no_argument, NULL, 'y'},
		{"json", no_argument, NULL, 'j'},
		{NULL, 0, NULL, 0}};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1)
		if (lf_cmd_option(c, optarg, argv[optind - 1], req, facts,
				  output, err))
			return -1;
	return lf_cmd_operands(argc, argv, need_file, req, facts, err);
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
		snprintf(buf, len, "%s%s%s (not given: give both for the real "
			 "step)", n ? "--nodes 1" : "", n && g ? " " : "",
			 g ? "--gpus-per-node 1" : "");
	return n || g;
}

int distenv_cmd_plan(int argc, char **argv)
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
	facts.force_torchrun = distenv_env_get((const char *const *)environ,
					       "FORCE_TORCHRUN");
	facts.alloc_conf = distenv_env_get((const char *const *)environ,
					   "PYTORCH_CUDA_ALLOC_CONF");
	/* whether LLaMA-Factory's launcher sets expandable segments */
	facts.optim_torch = distenv_env_get((const char *const *)environ,
					    "OPTIM_TORCH");
	distenv_error_clear(&err);
	if (distenv_lf_cmd_options(argc, argv, 1, &req, &facts, &output,
				   &err)) {
		distenv_cmd_fail(&err);
		return 2;
	}
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
	for (i = 0; i < (int)dec->nchanges; i++)
		printf("  changed: %s\n", dec->changes[i]);
	if (dec->have_plan)
		lf_mem_plan_print(stdout, &dec->mem_in, &dec->mem);
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
