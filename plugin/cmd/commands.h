/*
 * commands.h: the subcommands of the distenv command. Each lives in its
 * own file (cmd_NAME.c), takes argc/argv starting at its own name
 * (argv[0] is "env", "topo", ...), prints its output to stdout and its
 * errors to stderr as "distenv: error: ...", and returns the exit status
 * (0 ok or --help, 1 a failure the message explains, 2 a usage error:
 * an unknown option, a bad option value, a missing or extra argument).
 */
#ifndef DISTENV_COMMANDS_H
#define DISTENV_COMMANDS_H

#include <getopt.h>
#include <stdio.h>

#include "distenv_error.h"
#include "distenv_option_table.h"

struct distenv_command {
	const char *name;
	unsigned in;          /* its DISTENV_IN_* bit in the option table */
	const char *operands; /* after the name in its usage line, or "" */
	int needs;            /* an option it cannot do without, or -1 */
	const char *summary;  /* what it does, for its --help */
	int (*run)(int argc, char **argv);
};

/* The subcommand called name, or NULL (distenv_main.c). */
const struct distenv_command *distenv_command_named(const char *name);

/*
 * A subcommand's options, read with getopt_long(3) from the rows of the
 * option table that name it (cmd_options.c), so that its --help, its
 * usage line and what it accepts are the table's.
 */
struct distenv_cmd_options {
	const struct distenv_command *cmd;
	struct option longopts[DISTENV_OPT_COUNT + 1];
	char shortopts[8];
	char where[64]; /* the option last read, "--port", for errors */
	char fix[64];   /* "see distenv NAME --help" */
};

/* What distenv_cmd_option returns besides a row id. */
#define DISTENV_CMD_OPTIONS_END (-1)  /* done: operands start at optind */
#define DISTENV_CMD_OPTIONS_HELP (-2) /* --help printed to stdout: exit 0 */
#define DISTENV_CMD_OPTIONS_BAD (-3)  /* err says why: a usage error */

/* Start reading the options of the subcommand argv[0]. Returns 0, or -1
 * for a name that is no subcommand. */
int distenv_cmd_options_begin(struct distenv_cmd_options *o, char **argv);

/* The next option: its row id with its value in *value (NULL when it
 * takes none) and its name in o->where, or one of the codes above. */
int distenv_cmd_option(struct distenv_cmd_options *o, int argc, char **argv,
		       const char **value, struct distenv_error *err);

/* After the loop that ended in code: -1 to go on with the operands
 * argv[optind..], of which there must be min to max, else the exit
 * status to return (0 after --help; 2 a usage error, printed). */
int distenv_cmd_options_end(const struct distenv_cmd_options *o, int code,
			    int argc, char **argv, int min, int max,
			    struct distenv_error *err);

/* Print err as a usage error; returns 2. */
int distenv_cmd_usage_error(const struct distenv_error *err);

/* Print the usage line of cmd, wrapped, starting with lead ("usage:"). */
void distenv_cmd_print_usage(FILE *out, const char *lead,
			     const struct distenv_command *cmd);

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
/* Their options (--nodes, --gpus-per-node, --gpu-mem, ...; plan's
 * --print-yaml and --json into *output, NULL for prepare); plan takes
 * one training YAML as its operand, prepare --lf-config. Returns -1
 * when the command goes on, else the exit status to return now (0 after
 * --help; 2 a usage error, printed). */
int distenv_lf_cmd_options(int argc, char **argv,
			   struct lf_prepare_request *req,
			   struct lf_prepare_facts *facts, int *output);
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
