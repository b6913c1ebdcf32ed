/*
 * distenv_option_table.h: every option distenv takes, in one table: the
 * --distenv* options the plugin registers with Slurm (srun, sbatch,
 * salloc, #SBATCH lines) and the options of each subcommand of the
 * distenv command. The views are built from it, never typed again:
 * spank_options.c makes the array it registers, each subcommand its
 * getopt_long(3) array and its --help text (plugin/cmd/cmd_options.c),
 * and tests/cmd/options.bats checks distenv(1), distenv(8) and docs/user-guide.md
 * against it in both directions.
 *
 * Plain data. A row says which code parses its value (enum
 * distenv_opt_parser); the row's index is its id, which the SPANK
 * callback gets as its val and each subcommand switches on.
 */
#ifndef DISTENV_OPTION_TABLE_H
#define DISTENV_OPTION_TABLE_H

#include <stddef.h>

/* Where a command option is taken (bits of distenv_option_row.commands). */
#define DISTENV_IN_MAIN 0x01u /* distenv itself: distenv --version */
#define DISTENV_IN_ENV 0x02u
#define DISTENV_IN_SHOW 0x04u
#define DISTENV_IN_TOPO 0x08u
#define DISTENV_IN_CHECK_CONFIG 0x10u
#define DISTENV_IN_PLAN 0x20u
#define DISTENV_IN_PREPARE 0x40u
#define DISTENV_IN_CHECK_ENV 0x80u
#define DISTENV_IN_EVERY 0xffu

/* The rows, in table order: the order of srun --help and of each
 * subcommand's --help. */
enum distenv_opt_id {
	/* The plugin's, most also options of a subcommand, and the
	 * command's own, grouped by what they are about. */
	DISTENV_OPT_MODE = 0,
	DISTENV_OPT_CMD_MODE, /* the command's: its value is not optional */
	DISTENV_OPT_NODE_RANGE,
	DISTENV_OPT_MAX_RESTARTS,
	DISTENV_OPT_PORT,
	DISTENV_OPT_IFNAME,
	DISTENV_OPT_NPROC,
	DISTENV_OPT_SHOW,
	DISTENV_OPT_LF_CONFIG,
	DISTENV_OPT_LF_DIR,
	DISTENV_OPT_STEP_NODES,
	DISTENV_OPT_GPUS_PER_NODE,
	DISTENV_OPT_NODE_ID,
	DISTENV_OPT_GPU_MEM,
	DISTENV_OPT_HOST_MEM,
	DISTENV_OPT_MODEL_PARAMS,
	DISTENV_OPT_ANSWER_TOKENS,
	DISTENV_OPT_LF_VERSION,
	DISTENV_OPT_TF_VERSION,
	DISTENV_OPT_OFFLOAD,
	DISTENV_OPT_SAVE_ON_EACH_NODE,
	DISTENV_OPT_CHECK,
	DISTENV_OPT_STORAGE_POLICY,
	DISTENV_OPT_RESUME,
	DISTENV_OPT_MARK_STORAGE,
	DISTENV_OPT_PRINT_YAML,
	DISTENV_OPT_JSON,
	DISTENV_OPT_XML,
	DISTENV_OPT_GPUS,
	DISTENV_OPT_NVIDIA_DIR,
	DISTENV_OPT_PARTITION,
	DISTENV_OPT_TRUST_OWNER,
	DISTENV_OPT_SLURM_CONF,
	DISTENV_OPT_HELP,
	DISTENV_OPT_VERSION,
	DISTENV_OPT_COUNT
};

/* Who turns a row's value into a setting. */
enum distenv_opt_parser {
	/* distenv_request_set (distenv_options.h), for the plugin and for
	 * distenv env / show alike. */
	DISTENV_PARSE_REQUEST = 0,
	/* lf_request_set (plugin/lf/lf_request.h) into the request of
	 * the LLaMA-Factory run preparation, for the plugin and for plan /
	 * prepare alike; the plugin's --distenv-resume by lf_parse_resume
	 * (lf_ckpt.h) into its own buffer. */
	DISTENV_PARSE_LF,
	/* The subcommand itself (a path, a name, a count of its own). */
	DISTENV_PARSE_COMMAND,
};

struct distenv_option_row {
	/* --NAME on srun, sbatch, salloc ("distenv-port"); NULL: not a
	 * plugin option. */
	const char *plugin_name;
	/* --NAME of the subcommands in commands ("port"); NULL: none. */
	const char *command_name;
	unsigned commands; /* DISTENV_IN_* */
	/* 0 no value, 1 required, 2 optional: SPANK's numbering (struct
	 * spank_option, slurm/spank.h) and getopt_long's no_argument,
	 * required_argument, optional_argument (getopt(3)) agree. */
	int has_arg;
	const char *arg; /* its value in usage lines ("PORT"), or NULL */
	const char *usage; /* one line: srun --help, distenv SUB --help */
	enum distenv_opt_parser parser;
	char letter; /* a short form ('h' for -h), or 0 */
};

extern const struct distenv_option_row distenv_option_table[DISTENV_OPT_COUNT];

#endif
