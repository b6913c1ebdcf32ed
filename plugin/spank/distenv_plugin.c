/*
 * distenv_plugin.c: the SPANK entry points. This file only dispatches on
 * the context; each context's work lives in its own file.
 *
 * Who does what, as which user (spank(8); ../shared/CONTRACTS.md 5):
 *
 *  callback              context            runs as        distenv does
 *  --------------------  -----------------  -------------  ---------------------------
 *  slurm_spank_init      srun, sbatch,      the user       parse plugstack arguments,
 *                        salloc                            register options
 *  option callbacks      srun, sbatch,      the user       validate the value; a bad
 *                        salloc                            one fails the command
 *  slurm_spank_init_post_opt  srun, sbatch, the user       fail the command on a
 *                        salloc                            recorded error if distenv
 *                                                          was asked for
 *  slurm_spank_init      slurmstepd         root           parse plugstack arguments,
 *                                                          register options; never
 *                                                          fails (that could drain)
 *  option callbacks      slurmstepd         root           record the value or the
 *                                                          error; never fail
 *  slurm_spank_task_init slurmstepd, per    the user,      gather facts (interfaces,
 *                        task (forked       fully          resolver), derive, export;
 *                        child)                            report recorded errors;
 *                                                          -1 fails the step only
 *  everything else       -                  -              nothing
 *
 * No file named by a user is opened in any callback.
 */
#include <string.h>

#include <slurm/spank.h>

#include "spank_state.h"

SPANK_PLUGIN(distenv, 1);

struct distenv_plugin_state distenv_state;

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE)
		return 0;
	memset(&distenv_state, 0, sizeof(distenv_state));
	if (distenv_parse_plugstack(ac, av, &distenv_state.site,
				    &distenv_state.site_error)) {
		/* Jobs that did not ask for distenv must go on: run with
		 * the defaults (mode off) and tell the admin. */
		distenv_log_error(&distenv_state.site_error);
		distenv_site_defaults(&distenv_state.site);
	}
	if (distenv_options_register(sp) && ctx != S_CTX_REMOTE)
		return -1;
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	(void)ac;
	(void)av;
	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
		return distenv_submit_post_opt(sp);
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return distenv_remote_task_init(sp);
}
