/*
 * spank_launch.c: the step's command against the values distenv
 * derived for this node, in slurmstepd's task_init, fully as the user
 * (distenv_launch_line.h). A literal --node_rank, --nnodes,
 * --master_addr or --rdzv_endpoint that contradicts the step, or
 * --standalone, fails the step before launch under
 * --distenv-check=warn and strict: such a line can only hang the
 * rendezvous or split the step into worlds of their own. A c10d
 * rendezvous given --node_rank, or another --nproc_per_node than
 * NPROC_PER_NODE, is a warning (strict: an error), printed with the
 * derivation's other warnings by the node's first task. Nothing under
 * --distenv-check=off, in the batch script, or in a one-node step.
 */
#include <slurm/spank.h>

#include "distenv_launch_line.h"
#include "spank_state.h"

int distenv_remote_launch_check(spank_t sp, const struct distenv_step *step,
				struct distenv_vars *vars,
				struct distenv_error *err)
{
	char **argv = NULL;
	int argc = 0;

	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS)
		return 0;
	return distenv_launch_check_task(distenv_state.req.check, step, vars,
					 argc, argv, err);
}
