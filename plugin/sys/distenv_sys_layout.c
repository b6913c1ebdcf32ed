/* distenv_sys_layout.c: what only slurmctld knows of a job: the node
 * that holds task 0 of a step (its step layout), and the job's end on
 * releases that do not export it (contracts in distenv_sys.h). */
#include "config.h"

#include "distenv_sys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

/* Node index holding task 0 in layout, or -1. */
static int task0_node(const slurm_step_layout_t *layout)
{
	uint32_t i;
	uint16_t j;

	for (i = 0; i < layout->node_cnt; i++)
		for (j = 0;
		     layout->tasks && layout->tids && j < layout->tasks[i]; j++)
			if (layout->tids[i] && layout->tids[i][j] == 0)
				return (int) i;
	return -1;
}

int distenv_task0_host(uint32_t job_id, uint32_t step_id, char *host,
		       size_t len, uint32_t *node_id, struct distenv_error *err)
{
	slurm_step_id_t id;
	slurm_step_layout_t *layout;
	int idx, rc;

	memset(&id, 0, sizeof(id));
	id.job_id = job_id;
	id.step_id = step_id;
	id.step_het_comp = NO_VAL;
	/* libslurm leaves its error code in errno (slurm_get_errno is
	 * gone from slurm.h in 24.11) */
	layout = slurm_job_step_layout_get(&id);
	if (!layout)
		return distenv_error_set(err, "SLURM_DISTRIBUTION",
					 "export MASTER_ADDR as the host of "
					 "task 0, or use a block or cyclic "
					 "distribution",
					 "cannot get step %u.%u's task layout "
					 "from slurmctld (%s), and with this "
					 "distribution task 0 may be on any "
					 "node",
					 job_id, step_id,
					 slurm_strerror(errno));
	idx = task0_node(layout);
	if (idx < 0) {
		slurm_job_step_layout_free(layout);
		return distenv_error_set(err, "SLURM_DISTRIBUTION", NULL,
					 "step %u.%u's task layout has no "
					 "task 0",
					 job_id, step_id);
	}
	*node_id = (uint32_t) idx;
	rc = distenv_nth_host(layout->node_list, (uint32_t) idx,
			      "the step's task layout", host, len, err);
	slurm_job_step_layout_free(layout);
	return rc;
}

long long distenv_sys_job_end(uint32_t job_id)
{
	job_info_msg_t *msg = NULL;
	long long end = 0;

	/* One request to slurmctld; a failure only means "unknown". */
#if defined(DISTENV_LOAD_JOB_BY_STEP_ID)
	slurm_step_id_t id;

	memset(&id, 0, sizeof(id));
	id.job_id = job_id;
	id.step_id = NO_VAL;
	id.step_het_comp = NO_VAL;
	if (slurm_load_job(&msg, id, SHOW_LOCAL) != SLURM_SUCCESS || !msg)
		return 0;
#else
	if (slurm_load_job(&msg, job_id, SHOW_LOCAL) != SLURM_SUCCESS || !msg)
		return 0;
#endif
	if (msg->record_count > 0 && msg->job_array[0].time_limit != INFINITE)
		end = (long long) msg->job_array[0].end_time;
	slurm_free_job_info_msg(msg);
	return end;
}
