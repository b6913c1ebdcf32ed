/*
 * spank_state.h: what the plugin holds between SPANK callbacks of one
 * process (srun, sbatch, salloc or one slurmstepd): the site settings
 * from the plugstack line, the user's request from the options, and the
 * first error met, kept to be reported where reporting is safe
 * (../shared/CONTRACTS.md 5: an error returned from remote init or
 * init_post_opt can drain the node; from task_init it fails the step).
 */
#ifndef DISTENV_SPANK_STATE_H
#define DISTENV_SPANK_STATE_H

#include <slurm/spank.h>

#include "distenv_error.h"
#include "distenv_options.h"

struct distenv_plugin_state {
	struct distenv_site site;
	struct distenv_request req;
	struct distenv_error site_error;   /* bad plugstack arguments */
	struct distenv_error option_error; /* bad --distenv* value */
};

extern struct distenv_plugin_state distenv_state;

/* Register the --distenv* options (every context: sbatch and salloc do
 * not read a spank_options table, ../shared/CONTRACTS.md 5). */
int distenv_options_register(spank_t sp);

/* Log err through Slurm's log (srun/sbatch stderr, or slurmd's log) as
 * "distenv: error: ...". */
void distenv_log_error(const struct distenv_error *err);

/* Submit side (srun, sbatch, salloc) after the options: fail the command
 * on a recorded error when the user asked for distenv. */
int distenv_submit_post_opt(spank_t sp);

/* slurmstepd, per task, as the user: derive and export. */
int distenv_remote_task_init(spank_t sp);

#endif
