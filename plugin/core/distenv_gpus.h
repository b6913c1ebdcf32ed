/*
 * distenv_gpus.h: the GPUs of a task, and of its step on this node, read
 * once from the task's environment. Every GPU count in distenv comes from
 * here: NPROC_PER_NODE, the LOCAL_RANK note of tasks mode, the GPUs
 * NCCL_IB_HCA serves (distenv_topo_node_gpus), the memory plan of
 * `distenv prepare` and --distenv-lf-config. Pure: no system call. (The
 * node's own GPUs, which the NVIDIA driver lists, are the topology's:
 * distenv_topo_driver_gpus in plugin/topo, the one reader of that list.)
 *
 * What Slurm 22.05 puts into a task's environment (srun(1), OUTPUT
 * ENVIRONMENT VARIABLES; src/plugins/gres/common/gres_common.c,
 * gres_common_gpu_set_env and common_gres_set_env; docs/contracts.md 7):
 * - SLURM_GPUS_ON_NODE: how many GPUs the step holds on this node. A task
 *   bound to some of them keeps the step's count.
 * - SLURM_STEP_GPUS: their global indices; in a bound task only the
 *   task's own. --gpus-per-task=N implies --gpu-bind=per_task:N
 *   (src/srun/libsrun/launch.c), so with one GPU per task every task
 *   names its one GPU here.
 * - CUDA_VISIBLE_DEVICES: what CUDA enumerates for the task, as global
 *   indices, as indices from 0 under cgroup device constraints, or as
 *   UUIDs; a bound task's own only. "NoDevFiles" and "" mean none.
 * - SLURM_JOB_GPUS: set for the batch script and salloc's interactive
 *   step only; an srun step inherits the batch script's value, which
 *   names the batch host's GPUs, so it is never read.
 * The step's list before Slurm binds the tasks is in the step's own
 * environment, which the plugin reads in user_init (slurmstepd sets the
 * step's GRES variables before spank_user, the task's after it:
 * src/slurmd/slurmstepd/slurmstepd.c, task.c): step_gpus below.
 */
#ifndef DISTENV_GPUS_H
#define DISTENV_GPUS_H

#include <stdint.h>

#include "distenv_error.h"

struct distenv_gpus {
	/* The task: what CUDA shows it. */
	int task_known; /* CUDA_VISIBLE_DEVICES is set */
	uint32_t task_count; /* its entries; 0 for "" and "NoDevFiles" */
	const char *task_list; /* its value when it names GPUs, else NULL */
	/* The step on this node. */
	uint32_t node_count; /* 0: none, or nothing says */
	const char *node_count_from; /* the variable it came from, or NULL */
	/* Global indices of the step's GPUs here, NULL when no variable
	 * holds all of them (a bound task without step_gpus). */
	const char *node_list;
	const char *node_list_from;
	/* SLURM_STEP_GPUS of the task's environment was read (it may name
	 * only the task's GPUs). */
	int task_step_gpus;
};

/*
 * Read envp (the task's environment) and step_gpus (SLURM_STEP_GPUS as
 * the step's environment held it, from the plugin's user_init; NULL or ""
 * when unknown: the distenv command). Rules:
 * - node_list: step_gpus; else the task's SLURM_STEP_GPUS when no
 *   SLURM_GPUS_ON_NODE says the step holds more; else NULL.
 * - node_count: SLURM_GPUS_ON_NODE; else the entries of node_list; else
 *   those of CUDA_VISIBLE_DEVICES (no Slurm GPU variable: the value was
 *   exported by hand, the same for every task); else 0.
 * Never fails: a malformed count counts as absent.
 */
void distenv_gpus_read(const char *const *envp, const char *step_gpus,
		       struct distenv_gpus *out);

/* Entries of a comma-separated list; 0 for NULL, "" and "NoDevFiles"
 * (Slurm's word for a GRES without device files). */
uint32_t distenv_gpus_list_count(const char *list);

/*
 * An entry of the task's CUDA_VISIBLE_DEVICES that names a GPU the task
 * does not have. Slurm sets the variable for each task of a GRES step
 * (gres_common.c, above), overwriting what the user exported, either
 * as the GPUs' global indices (a subset of SLURM_STEP_GPUS) or, under
 * ConstrainDevices=yes in cgroup.conf, renumbered 0 to n-1, which is
 * how CUDA then numbers the devices the task can open. A value from the
 * environment cannot be told apart from Slurm's by its origin (Slurm
 * leaves no mark on it), so only what Slurm never sets is judged: a
 * plain index that is neither below the step's GPU count here nor one
 * of the global indices (step_gpus, the node list above, or the task's
 * SLURM_STEP_GPUS). CUDA shows only the devices listed before the first
 * index it cannot use (CUDA C Programming Guide, CUDA Environment
 * Variables). Nothing is judged without a Slurm GPU list and count, or
 * with an entry that is not a plain index (GPU-<UUID>, MIG-...).
 * Returns -1 with err filled (where "node NODE_NAME:
 * CUDA_VISIBLE_DEVICES", the fix naming the task's GPUs in both
 * numberings), 0 otherwise.
 */
int distenv_gpus_check_visible(const char *const *envp, const char *step_gpus,
			       const char *node_name,
			       struct distenv_error *err);

/*
 * Processes per node for a memory plan: NPROC_PER_NODE when set (torchrun
 * mode: the value distenv derived, or the user's), else the step's GPUs
 * on this node (distenv_gpus_read), else 1.
 */
uint32_t distenv_gpus_per_node(const char *const *envp, const char *step_gpus);

#endif
