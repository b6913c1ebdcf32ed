/*
 * spank_ids.c: which step this slurmstepd serves, and where its node
 * stands in it, for the glue's own uses of job, step and node ids
 * (cancelling the step, the run preparation's directories and marks):
 * slurmstepd's items, or the whole heterogeneous step's ids from the
 * tasks' environment (distenv_step_ids_resolve, distenv_step.h).
 */
#include "config.h"

#include <slurm/spank.h>

#include "spank_state.h"

int distenv_spank_step_ids(spank_t sp, struct distenv_step_ids *out)
{
	struct distenv_step_ids items = { 0, 0, 0, 0, 0 };
	char **envp = NULL;

	if (spank_get_item(sp, S_JOB_ID, &items.job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &items.step_id) !=
		    ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &items.nnodes) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NODEID, &items.node_id) != ESPANK_SUCCESS)
		return -1;
	if (spank_get_item(sp, S_JOB_ENV, &envp) != ESPANK_SUCCESS)
		envp = NULL;
	distenv_step_ids_resolve(&items, (const char *const *) envp, out);
	return 0;
}
