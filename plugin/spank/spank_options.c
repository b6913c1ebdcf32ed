/*
 * spank_options.c: the --distenv* options, one small idempotent callback
 * each (Slurm may call a callback twice with the same value).
 *
 * On the submit side (srun, sbatch, salloc, remote == 0) a bad value
 * fails the command at once. In slurmstepd (remote == 1) a callback must
 * not fail, so the error is kept and reported from task_init.
 */
#include <stdio.h>
#include <string.h>

#include <slurm/spank.h>

#include "distenv_ifspec.h"
#include "spank_state.h"

static int reject(int remote)
{
	if (remote)
		return 0;
	distenv_log_error(&distenv_state.option_error);
	return -1;
}

/* Slurm 22.05 forwards an optional-argument option given without a
 * value (#SBATCH --distenv, salloc --distenv) to the inner srun as
 * SLURM_SPANK__SLURM_SPANK_OPTION_distenv_distenv=(null), the NULL
 * value printed with "%s" (seen on Debian's 22.05.8, tests/cluster). */
static const char *no_value_as_null(const char *optarg)
{
	return optarg && strcmp(optarg, "(null)") == 0 ? NULL : optarg;
}

static int opt_mode(int val, const char *optarg, int remote)
{
	(void)val;
	optarg = no_value_as_null(optarg);
	if (distenv_parse_mode(optarg, "--distenv", &distenv_state.req.mode,
			       &distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_port(int val, const char *optarg, int remote)
{
	(void)val;
	if (distenv_parse_port(optarg, "--distenv-port",
			       &distenv_state.req.port,
			       &distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_ifname(int val, const char *optarg, int remote)
{
	struct distenv_request *req = &distenv_state.req;

	(void)val;
	if (distenv_ifspec_validate(optarg, "--distenv-ifname",
				    &distenv_state.option_error))
		return reject(remote);
	snprintf(req->ifname, sizeof(req->ifname), "%s", optarg);
	return 0;
}

static int opt_nproc(int val, const char *optarg, int remote)
{
	(void)val;
	if (distenv_parse_nproc(optarg, "--distenv-nproc",
				&distenv_state.req.nproc,
				&distenv_state.option_error))
		return reject(remote);
	return 0;
}

static int opt_show(int val, const char *optarg, int remote)
{
	(void)val;
	(void)optarg;
	(void)remote;
	distenv_state.req.show = 1;
	return 0;
}

static struct spank_option options[] = {
	{"distenv", "[torchrun|tasks|off]",
	 "Derive NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT, NPROC_PER_NODE, "
	 "NCCL/GLOO_SOCKET_IFNAME for torchrun or LLaMA-Factory "
	 "(torchrun: one task per node; tasks: one task per rank)",
	 2, 0, opt_mode},
	{"distenv-port", "PORT",
	 "MASTER_PORT (1024-65535) when Slurm reserved no ports for the step",
	 1, 0, opt_port},
	{"distenv-ifname", "NAME",
	 "Interface for NCCL/Gloo (a name, or NCCL's =name / ^name list)",
	 1, 0, opt_ifname},
	{"distenv-nproc", "N",
	 "Processes per node (NPROC_PER_NODE); default: GPUs of the task",
	 1, 0, opt_nproc},
	{"distenv-show", NULL,
	 "Print each node's derived variables and their sources to stderr",
	 0, 0, opt_show},
	SPANK_OPTIONS_TABLE_END};

int distenv_options_register(spank_t sp)
{
	size_t i;

	for (i = 0; options[i].name; i++) {
		spank_err_t rc = spank_option_register(sp, &options[i]);

		if (rc != ESPANK_SUCCESS) {
			slurm_error("distenv: cannot register --%s: %s",
				    options[i].name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

void distenv_log_error(const struct distenv_error *err)
{
	char line[3 * DISTENV_ERROR_TEXT];

	distenv_error_format(err, line, sizeof(line));
	slurm_error("distenv: %s", line);
}
