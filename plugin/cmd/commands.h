/*
 * commands.h: the subcommands of the distenv command. Each lives in its
 * own file (cmd_NAME.c), takes argc/argv starting at its own name
 * (argv[0] is "env", "topo", ...), prints its output to stdout and its
 * errors to stderr as "distenv: error: ...", and returns the exit status
 * (0 ok, 1 a failure the message explains, 2 a usage error).
 */
#ifndef DISTENV_COMMANDS_H
#define DISTENV_COMMANDS_H

#include <stdio.h>

#include "distenv_error.h"

struct distenv_command {
	const char *name;
	const char *usage; /* one line, after "distenv " */
	int (*run)(int argc, char **argv);
};

/* distenv env / distenv show (cmd_env.c). */
int distenv_cmd_env(int argc, char **argv);
int distenv_cmd_show(int argc, char **argv);

/* distenv topo: GPU -> NIC/HCA locality of a node (cmd_topo.c). */
int distenv_cmd_topo(int argc, char **argv);

/* distenv check-config: validate a site policy file and print the
 * effective policy per partition (cmd_check_config.c). */
int distenv_cmd_check_config(int argc, char **argv);

/* distenv plan / distenv prepare: LLaMA-Factory run preparation
 * (cmd_plan.c, cmd_prepare.c; plugin/lf/lf_prepare.h). */
int distenv_cmd_plan(int argc, char **argv);
int distenv_cmd_prepare(int argc, char **argv);
struct lf_prepare_request;
struct lf_prepare_facts;
struct lf_decision;
/* Output of distenv plan (bits of *output) */
#define DISTENV_PLAN_YAML 1 /* --print-yaml */
#define DISTENV_PLAN_JSON 2 /* --json */
/* Their shared options (--nodes, --gpus-per-node, --gpu-mem, ...);
 * need_file: one positional training YAML; output: NULL to accept and
 * ignore --print-yaml and --json. */
int distenv_lf_cmd_options(int argc, char **argv, int need_file,
			   struct lf_prepare_request *req,
			   struct lf_prepare_facts *facts, int *output,
			   struct distenv_error *err);
/* distenv plan's longest-prompt section, as text or as one JSON object
 * (cmd_plan_print.c); nodes and GPUs as planned. */
void distenv_plan_print_fit(FILE *out, const struct lf_decision *dec);
void distenv_plan_print_json(FILE *out, const struct lf_decision *dec);
/* Print the warnings and errors of a preparation, one per line. */
void distenv_lf_print_msgs(FILE *out, const struct lf_decision *dec);

/* Print err as "distenv: error: WHERE: WHAT. FIX" to stderr; returns 1. */
int distenv_cmd_fail(const struct distenv_error *err);

/* `distenv check-config` without FILE: the configuration slurmd runs,
 * from slurm.conf at path (NULL: $SLURM_CONF, else
 * /etc/slurm/slurm.conf); cmd_check_slurm.c. Returns the exit status. */
int distenv_check_slurm_conf(const char *path);

#endif
