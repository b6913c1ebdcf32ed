/*
 * distenv_main.c: the distenv command: a table of subcommands, each a
 * thin shell around the core in its own cmd_*.c file, with its options
 * from the option table (distenv_option_table.h, cmd_options.c). Exit
 * status, in every subcommand: 0 done (or --help), 1 the work failed (an
 * error about the inputs' contents), 2 a usage error (unknown option,
 * bad option value, missing or extra argument).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "config.h"

static const struct distenv_command commands[] = {
	{ "env", DISTENV_IN_ENV, "[-- CMD...]", -1,
	  "Inside a Slurm step (srun): print the variables distenv derives "
	  "for this task as export lines, for eval \"$(distenv env)\"; with "
	  "CMD, fail (exit 1) when its launch line contradicts this node's "
	  "values, as the plugin does.",
	  distenv_cmd_env },
	{ "show", DISTENV_IN_SHOW, "", -1,
	  "Inside a Slurm step (srun): print each variable distenv derives for "
	  "this task with where it came from.",
	  distenv_cmd_show },
	{ "topo", DISTENV_IN_TOPO, "", -1,
	  "Print the node's GPUs, network interfaces and HCAs as hwloc sees "
	  "them, and the NCCL_IB_HCA and NCCL_SOCKET_IFNAME distenv would "
	  "choose for a step holding those GPUs.",
	  distenv_cmd_topo },
	{ "check-config", DISTENV_IN_CHECK_CONFIG, "[FILE]", -1,
	  "With FILE: check a site file as the plugin loads it and print the "
	  "policy each partition gets. Without: the configuration slurmd runs "
	  "(slurm.conf, its plugstack files, distenv's line and site file), "
	  "with warnings for what would fail or weaken jobs.",
	  distenv_cmd_check_config },
	{ "check-env", DISTENV_IN_CHECK_ENV, "[-- COMMAND [ARG...]]", -1,
	  "Inside a step, as the first command in a container: fail, naming "
	  "each variable, when what distenv set for the step was replaced or "
	  "dropped here, or its resolved LLaMA-Factory YAML cannot be read "
	  "here; else run COMMAND in its place.",
	  distenv_cmd_check_env },
	{ "plan", DISTENV_IN_PLAN, "FILE", -1,
	  "The memory plan and the resolved settings of a LLaMA-Factory "
	  "training YAML for a step of that shape, without Slurm, writing "
	  "nothing.",
	  distenv_cmd_plan },
	{ "prepare", DISTENV_IN_PREPARE, "", DISTENV_OPT_LF_CONFIG,
	  "Inside a Slurm step (srun): do what --distenv-lf-config does (write "
	  "the resolved copy, check the run) and print export lines.",
	  distenv_cmd_prepare },
	{ NULL, 0, NULL, -1, NULL, NULL }
};

static const struct distenv_command *command_named(const char *name)
{
	size_t i;

	for (i = 0; commands[i].name; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void usage(FILE *out)
{
	size_t i;

	for (i = 0; commands[i].name; i++)
		distenv_cmd_print_usage(out,
					i ? "      " : "usage:", &commands[i]);
	/* the options of distenv itself, from the table */
	for (i = 0; i < DISTENV_OPT_COUNT; i++)
		if (distenv_option_table[i].commands & DISTENV_IN_MAIN)
			fprintf(out, "       distenv --%s\n",
				distenv_option_table[i].command_name);
	fprintf(out,
		"\nenv and show run inside a Slurm step (srun): env prints "
		"export lines for\neval \"$(distenv env)\"; show prints "
		"each variable with where it came from.\n"
		"distenv COMMAND --help explains COMMAND and its options.\n");
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;
	const struct distenv_command *c;

	if (!cmd || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("distenv %s (built against Slurm %s)\n", PACKAGE_VERSION,
		       DISTENV_SLURM_VERSION);
		return 0;
	}
	c = command_named(cmd);
	if (c)
		return c->run(c, argc - 1, argv + 1);
	fprintf(stderr,
		"distenv: error: unknown command '%s'. See distenv "
		"--help\n",
		cmd);
	return 2;
}
