/*
 * cmd_options.h: what every subcommand of the distenv command reads and
 * reports with (cmd_options.c): its options, read with getopt_long(3)
 * from the rows of the option table that name it (distenv_option_table.h),
 * so that its --help, its usage line and what it accepts are the
 * table's; and its errors, printed to stderr as "distenv: error: WHERE:
 * WHAT. FIX" (distenv_error_format).
 *
 * It knows a subcommand only by the struct distenv_command it is given,
 * never through the command table (distenv_main.c): the table uses this
 * file, not the other way round.
 */
#ifndef DISTENV_CMD_OPTIONS_H
#define DISTENV_CMD_OPTIONS_H

#include <getopt.h>
#include <stdio.h>

#include "distenv_error.h"
#include "distenv_option_table.h"

/* One subcommand, a row of distenv_main.c's table. */
struct distenv_command {
	const char *name;
	unsigned in; /* its DISTENV_IN_* bit in the option table */
	const char *operands; /* after the name in its usage line, or "" */
	int needs; /* an option it cannot do without, or -1 */
	const char *summary; /* what it does, for its --help */
	/* Its entry point (commands.h): argv starts at its name. */
	int (*run)(const struct distenv_command *cmd, int argc, char **argv);
};

/* The options of one subcommand, while they are read. */
struct distenv_cmd_options {
	const struct distenv_command *cmd;
	struct option longopts[DISTENV_OPT_COUNT + 1];
	char shortopts[8];
	char where[64]; /* the option last read, "--port", for errors */
	char fix[64]; /* "see distenv NAME --help" */
};

/* What distenv_cmd_option returns besides a row id. */
#define DISTENV_CMD_OPTIONS_END (-1) /* done: operands start at optind */
#define DISTENV_CMD_OPTIONS_HELP (-2) /* --help printed to stdout: exit 0 */
#define DISTENV_CMD_OPTIONS_BAD (-3) /* err says why: a usage error */

/* Start reading the options of cmd, from an argv that starts at its
 * name. */
void distenv_cmd_options_begin(struct distenv_cmd_options *o,
			       const struct distenv_command *cmd);

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

/* Print the usage line of cmd, wrapped, starting with lead ("usage:"). */
void distenv_cmd_print_usage(FILE *out, const char *lead,
			     const struct distenv_command *cmd);

/* Print err as "distenv: error: WHERE: WHAT. FIX" to stderr; returns 1,
 * the exit status of a failure the message explains. */
int distenv_cmd_fail(const struct distenv_error *err);

/* Print err as a usage error; returns 2. */
int distenv_cmd_usage_error(const struct distenv_error *err);

#endif
