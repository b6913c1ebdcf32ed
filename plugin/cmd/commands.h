/*
 * commands.h: the subcommands of the distenv command, and what they
 * share. Each lives in its own file (cmd_NAME.c) and is called by
 * distenv_main.c as cmd->run(cmd, argc, argv), with its row of the
 * command table and argc/argv starting at its own name (argv[0] is
 * "env", "topo", ...). It reads its options with cmd_options.h, prints
 * its output to stdout and its errors to stderr as "distenv: error:
 * ...", and returns the exit status (0 ok or --help, 1 a failure the
 * message explains, 2 a usage error: an unknown option, a bad option
 * value, a missing or extra argument).
 */
#ifndef DISTENV_COMMANDS_H
#define DISTENV_COMMANDS_H

#include <stdio.h>

#include "cmd_options.h"

struct plan_stack;

/* distenv env / distenv show (cmd_env.c). */
int distenv_cmd_env(const struct distenv_command *cmd, int argc, char **argv);
int distenv_cmd_show(const struct distenv_command *cmd, int argc, char **argv);

/* distenv check-env: inside a container, did distenv's variables and
 * its resolved YAML arrive? Then run the rest (cmd_check_env.c). */
int distenv_cmd_check_env(const struct distenv_command *cmd, int argc,
			  char **argv);

/* distenv topo: GPU -> NIC/HCA locality of a node (cmd_topo.c). */
int distenv_cmd_topo(const struct distenv_command *cmd, int argc, char **argv);

/* distenv check-config: validate a site policy file and print the
 * effective policy per partition (cmd_check_config.c). */
int distenv_cmd_check_config(const struct distenv_command *cmd, int argc,
			     char **argv);

/* `distenv check-config` without FILE: the configuration slurmd runs,
 * from slurm.conf at path (NULL: $SLURM_CONF, else
 * /etc/slurm/slurm.conf); cmd_check_slurm.c. Returns the exit status. */
int distenv_check_slurm_conf(const char *path);

/* distenv plan / distenv prepare: LLaMA-Factory run preparation
 * (cmd_plan.c, cmd_prepare.c; plugin/lf/lf_prepare.h). */
int distenv_cmd_plan(const struct distenv_command *cmd, int argc, char **argv);
int distenv_cmd_prepare(const struct distenv_command *cmd, int argc,
			char **argv);
struct lf_prepare_request;
struct lf_prepare_facts;
struct lf_decision;
/* Output of distenv plan (bits of *output) */
#define DISTENV_PLAN_YAML 1 /* --print-yaml */
#define DISTENV_PLAN_JSON 2 /* --json */
/* The options of cmd, plan or prepare (--nodes, --gpus-per-node,
 * --gpu-mem, ...; plan's --print-yaml and --json into *output, NULL for
 * prepare); plan takes one training YAML as its operand, prepare
 * --lf-config. Returns -1 when the command goes on, else the exit status
 * to return now (0 after --help; 2 a usage error, printed). */
int distenv_lf_cmd_options(const struct distenv_command *cmd, int argc,
			   char **argv, struct lf_prepare_request *req,
			   struct lf_prepare_facts *facts, int *output);
/* distenv plan's longest-prompt section, as text or as one JSON object
 * (cmd_plan_print.c); nodes and GPUs as planned. */
void distenv_plan_print_fit(FILE *out, const struct lf_decision *dec);
void distenv_plan_print_json(FILE *out, const struct lf_decision *dec);
/* The versions --lf-version and --transformers-version left unset
 * (their *_from NULL), from the templates' Python (cmd_stack.c). */
void distenv_cmd_stack_detect(struct plan_stack *s);
/* Print the warnings and errors of a preparation, one per line. */
void distenv_lf_print_msgs(FILE *out, const struct lf_decision *dec);

#endif
