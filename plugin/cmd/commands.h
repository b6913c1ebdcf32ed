/*
 * commands.h: the subcommands of the distenv command. Each lives in its
 * own file (cmd_NAME.c), takes argc/argv starting at its own name
 * (argv[0] is "env", "topo", ...), prints its output to stdout and its
 * errors to stderr as "distenv: error: ...", and returns the exit status
 * (0 ok, 1 a failure the message explains, 2 a usage error).
 */
#ifndef DISTENV_COMMANDS_H
#define DISTENV_COMMANDS_H

#include "distenv_error.h"

struct distenv_command {
	const char *name;
	const char *usage; /* one line, after "distenv " */
	int (*run)(int argc, char **argv);
};

/* distenv env / distenv show (cmd_env.c). */
int distenv_cmd_env(int argc, char **argv);
int distenv_cmd_show(int argc, char **argv);

/* Print err as "distenv: error: WHERE: WHAT. FIX" to stderr; returns 1. */
int distenv_cmd_fail(const struct distenv_error *err);

#endif
