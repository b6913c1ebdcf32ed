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
#include <string.h>

#include <slurm/spank.h>

#include "distenv_env.h"
#include "distenv_launch_line.h"
#include "spank_state.h"

int distenv_remote_launch_check(spank_t sp, const struct distenv_step *step,
				struct distenv_vars *vars,
				struct distenv_error *err)
{
	const struct distenv_request *r = &distenv_state.req;
	struct distenv_launch_facts f;
	struct distenv_error warn;
	const char *backend;
	char **argv = NULL;
	int argc = 0;

	if (r->check == DISTENV_CHECK_OFF || step->kind == DISTENV_STEP_BATCH ||
	    step->nnodes <= 1 ||
	    spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS)
		return 0;
	memset(&f, 0, sizeof(f));
	f.nnodes = step->nnodes;
	f.node_id = step->node_id;
	f.master_node_id = step->master_node_id;
	f.node_name = step->node_name;
	f.master_host = step->master_host[0] ? step->master_host : NULL;
	/* the values in force: derived, or the user's kept */
	f.master_addr = distenv_vars_value(vars, "MASTER_ADDR");
	f.nproc = distenv_vars_value(vars, "NPROC_PER_NODE");
	backend = distenv_vars_value(vars, "PET_RDZV_BACKEND");
	f.rdzv_backend =
		backend ? backend :
			  distenv_env_get(step->envp, "PET_RDZV_BACKEND");
	if (distenv_launch_line_check(argc, argv, &f, err, &warn))
		return -1;
	if (!distenv_error_is_set(&warn))
		return 0;
	if (r->check == DISTENV_CHECK_STRICT) {
		*err = warn;
		return -1;
	}
	distenv_vars_warn(vars, &warn);
	return 0;
}
