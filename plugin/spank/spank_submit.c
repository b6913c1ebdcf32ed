/*
 * spank_submit.c: srun, sbatch and salloc, after option parsing. Option
 * values were checked in their callbacks already; what is left is a
 * broken plugstack line, which only stops commands that ask for distenv,
 * and options that do nothing without --distenv.
 */
#include <stdio.h>

#include <slurm/spank.h>

#include "distenv_derive.h"
#include "lf_prepare.h"
#include "spank_state.h"

int distenv_local_user_init(spank_t sp)
{
	uint32_t ntasks = 0, nnodes = 0, job = 0, step = 0;
	struct distenv_error err;

	/* Only a step that asked for distenv: a site default never fails a
	 * job (spank_task.c, leave_alone). */
	if (distenv_state.req.mode == DISTENV_MODE_UNSET ||
	    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) !=
		    ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS)
		return 0;
	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	if (!distenv_check_step_layout(distenv_state.req.mode, ntasks, nnodes,
				       job, step, &err))
		return 0;
	distenv_log_error(&err);
	return -1;
}

int distenv_submit_post_opt(spank_t sp)
{
	enum distenv_mode mode =
		distenv_effective_mode(&distenv_state.site, &distenv_state.req);

	(void) sp;
	if (distenv_error_is_set(&distenv_state.option_error))
		return -1; /* already logged by the option callback */
	if (mode != DISTENV_MODE_OFF &&
	    distenv_error_is_set(&distenv_state.site_error)) {
		distenv_log_error(&distenv_state.site_error);
		slurm_error(
			"distenv: the plugin's configuration is broken; ask "
			"your admin, or run without --distenv");
		return -1;
	}
	/* Findings that fail every node anyway fail the command instead,
	 * before the job waits in the queue (lf_prepare.h). Here, not in
	 * the option's callback: --distenv-check may come after it. */
	if (mode != DISTENV_MODE_OFF && distenv_state.req.lf_config[0] &&
	    lf_prepare_submit_check(distenv_state.req.lf_config,
				    distenv_state.lf.check,
				    &distenv_state.option_error)) {
		distenv_error_prefix_where(&distenv_state.option_error,
					   "--distenv-lf-config");
		distenv_log_error(&distenv_state.option_error);
		return -1;
	}
	/* The run preparation rides on the derivation: without distenv the
	 * option would be dropped without a word. */
	if (mode == DISTENV_MODE_OFF && distenv_state.req.lf_config[0])
		fprintf(stderr, "distenv: warning: --distenv-lf-config does "
				"nothing without --distenv (unless the site "
				"file turns distenv on for the partition)\n");
	return 0;
}
