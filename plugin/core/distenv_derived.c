/* distenv_derived.c: the variables the derivation sets (rules in the .h),
 * in the order torchrun mode, elastic mode and tasks mode add them. */
#include "distenv_derived.h"

#include <string.h>

#include "distenv_env.h"

#define STEP_FIX \
	"distenv derives it for each step (use port_range:, interfaces: or " \
	"master_name: to steer it)"
#define ELASTIC_FIX \
	"distenv derives it for each step (users steer it with " \
	"--distenv-nodes and --distenv-max-restarts)"
#define SETS_FIX "distenv sets it"

const struct distenv_derived_var distenv_derived_vars[] = {
	{ "NNODES", STEP_FIX },
	{ "NODE_RANK", STEP_FIX },
	{ "RANK", STEP_FIX },
	{ "NPROC_PER_NODE", STEP_FIX },
	{ "MASTER_ADDR", STEP_FIX },
	{ "MASTER_PORT", STEP_FIX },
	{ "FORCE_TORCHRUN", STEP_FIX },
	{ "PET_NNODES", SETS_FIX },
	{ "PET_NODE_RANK", SETS_FIX },
	{ "PET_NPROC_PER_NODE", SETS_FIX },
	{ "PET_MASTER_ADDR", SETS_FIX },
	{ "PET_MASTER_PORT", SETS_FIX },
	{ "RDZV_ID", ELASTIC_FIX },
	{ "MIN_NNODES", ELASTIC_FIX },
	{ "MAX_NNODES", ELASTIC_FIX },
	{ "MAX_RESTARTS", ELASTIC_FIX },
	{ "PET_RDZV_BACKEND", SETS_FIX },
	{ "PET_RDZV_ENDPOINT", SETS_FIX },
	{ "PET_RDZV_ID", SETS_FIX },
	{ "PET_MAX_RESTARTS", SETS_FIX },
	{ "PET_RDZV_CONF", SETS_FIX },
	{ "PET_LOCAL_ADDR", SETS_FIX },
	{ "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", ELASTIC_FIX },
	{ "WORLD_SIZE", STEP_FIX },
	{ "LOCAL_RANK", STEP_FIX },
	{ "LOCAL_WORLD_SIZE", STEP_FIX },
	{ "NCCL_SOCKET_IFNAME", STEP_FIX },
	{ "GLOO_SOCKET_IFNAME", STEP_FIX },
	{ "NCCL_IB_HCA", "distenv derives it from the topology (use hca:)" },
	{ "OMP_NUM_THREADS", "distenv derives it from the task's CPUs; a "
			     "user's value is kept" },
	{ "DISTENV_JOB_END", "distenv exports the job's end from Slurm's "
			     "time limit" },
	{ DISTENV_MARKER_VAR, SETS_FIX },
};

const size_t distenv_derived_count =
	sizeof(distenv_derived_vars) / sizeof(distenv_derived_vars[0]);

const struct distenv_derived_var *distenv_derived_find(const char *name)
{
	size_t i;

	for (i = 0; i < distenv_derived_count; i++)
		if (strcmp(distenv_derived_vars[i].name, name) == 0)
			return &distenv_derived_vars[i];
	return NULL;
}
