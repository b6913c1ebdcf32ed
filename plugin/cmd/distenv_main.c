/*
 * distenv_main.c: the distenv command: a table of subcommands, each a
 * thin shell around the core in its own cmd_*.c file. Exit status, in
 * every subcommand: 0 done, 1 the work failed (an error about the
 * inputs' contents), 2 a usage error (unknown option, bad option value,
 * missing argument).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "config.h"

static const struct distenv_command commands[] = {
	{"env", "env  [--mode torchrun|elastic|tasks] [--port PORT] [--ifname SPEC] [--nproc N] [--nodes MIN:MAX] [--max-restarts N]",
	 distenv_cmd_env},
	{"show", "show [same options as env]", distenv_cmd_show},
	{"topo", "topo [--xml FILE] [--gpus LIST] [--nvidia-dir DIR]",
	 distenv_cmd_topo},
	{"check-config", "check-config FILE [--partition NAME] [--trust-owner] | check-config [--slurm-conf PATH]",
	 distenv_cmd_check_config},
	{"plan", "plan FILE --nodes N --gpus-per-node G [--gpu-mem 80G] [--host-mem 1T] [--model-params 70B] [--answer-tokens N] [--offload none|cpu|auto] [--save-on-each-node auto|yes|no] [--check warn|strict|off] [--print-yaml] [--json]",
	 distenv_cmd_plan},
	{"prepare", "prepare --lf-config FILE [plan options]  (inside srun: prints exports)",
	 distenv_cmd_prepare},
	{NULL, NULL, NULL}};

int distenv_cmd_fail(const struct distenv_error *err)
{
	char line[3 * DISTENV_ERROR_TEXT];

	distenv_error_format(err, line, sizeof(line));
	fprintf(stderr, "distenv: error: %s\n", line);
	return 1;
}

static void usage(FILE *out)
{
	size_t i;

	for (i = 0; commands[i].name; i++)
		fprintf(out, "%s distenv %s\n", i ? "      " : "usage:",
			commands[i].usage);
	fprintf(out, "       distenv --version\n\n"
		     "env and show run inside a Slurm step (srun): env prints "
		     "export lines for\neval \"$(distenv env)\"; show prints "
		     "each variable with where it came from.\n");
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;
	size_t i;

	if (!cmd || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("distenv %s (built against Slurm %s)\n", PACKAGE_VERSION,
		       DISTENV_SLURM_VERSION);
		return 0;
	}
	for (i = 0; commands[i].name; i++) {
		if (strcmp(cmd, commands[i].name))
			continue;
		/* `distenv plan --help`: that command's usage, exit 0. */
		if (argc > 2 && (strcmp(argv[2], "--help") == 0 ||
				 strcmp(argv[2], "-h") == 0)) {
			printf("usage: distenv %s\n", commands[i].usage);
			return 0;
		}
		return commands[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "distenv: error: unknown command '%s'. See distenv "
			"--help\n", cmd);
	return 2;
}
