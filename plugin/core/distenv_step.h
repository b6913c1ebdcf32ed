/*
 * distenv_step.h: the allocation facts of one task of one step, as plain
 * values. The SPANK glue fills them from spank_get_item() and the task's
 * environment; the distenv command from the environment alone
 * (distenv_step_from_env).
 */
#ifndef DISTENV_STEP_H
#define DISTENV_STEP_H

#include <stdint.h>

#include "distenv_error.h"

#define DISTENV_HOST_MAX 256

struct distenv_topo;

enum distenv_step_kind {
	DISTENV_STEP_TASKS, /* an srun step: derive everything */
	DISTENV_STEP_BATCH, /* the batch script or salloc's interactive step:
			     * only the step-independent values */
};

struct distenv_step {
	enum distenv_step_kind kind;
	uint32_t job_id;
	uint32_t step_id;
	uint32_t nnodes; /* nodes in the step (batch: in the job) */
	uint32_t node_id; /* this node's index in the step (SLURM_NODEID) */
	uint32_t ntasks; /* tasks in the step */
	uint32_t local_ntasks; /* tasks of the step on this node */
	uint32_t procid; /* this task's rank in the step (SLURM_PROCID) */
	uint32_t localid; /* its index on this node (SLURM_LOCALID) */
	char node_name[DISTENV_HOST_MAX]; /* this node, for messages */
	int alloc_shell; /* batch kind outside slurmstepd (no SLURMD_NODENAME):
			  * the shell salloc starts on the submit host */
	char master_host[DISTENV_HOST_MAX]; /* name of node index 0, or of
					     * the node of task 0 (below) */
	/* Tasks mode with a task layout that can put task 0 elsewhere
	 * (SLURM_DISTRIBUTION=arbitrary, srun(1) --distribution): the node
	 * index of master_host, and the distribution; 0 and NULL when
	 * master_host is node index 0. */
	uint32_t master_node_id;
	const char *master_dist;
	const char *resv_ports; /* SLURM_STEP_RESV_PORTS or NULL */
	uint16_t ephemeral_lo; /* kernel ephemeral port range */
	uint16_t ephemeral_hi;
	const char *const *envp; /* the task's environment */
	/* This node's topology (distenv_topo.h), loaded once
	 * per step per node, or NULL: no topology, and no NCCL_IB_HCA. */
	const struct distenv_topo *topo;
	const char *topo_note; /* where it came from, or why there is none,
				* for --distenv-show; NULL or "" = say nothing */
	/* SLURM_STEP_GPUS as the step's environment held it before Slurm
	 * bound GPUs to tasks (the plugin reads it in user_init), or NULL:
	 * unknown (distenv_gpus.h). */
	const char *step_gpus;
	/* The job's end by its time limit (epoch seconds) as slurmctld gave
	 * it to the sys layer where the environment has no
	 * SLURM_JOB_END_TIME (Slurm < 23.02), or 0: distenv_job_end. */
	long long job_end;
	/* The CPUs the task may run on: its affinity (sched_getaffinity(2)
	 * of the task's process, read by the sys layer after Slurm's task
	 * plugin bound it), their count and ids ("0-3,8"); 0 and "": unknown
	 * (distenv_cpus.h). */
	uint32_t task_cpus;
	char task_cpu_list[128];
};

/*
 * Tasks on node node_id from a SLURM_STEP_TASKS_PER_NODE /
 * SLURM_TASKS_PER_NODE value such as "2(x3),1" (sbatch(1), OUTPUT
 * ENVIRONMENT VARIABLES). Errors: malformed, or node_id beyond the list.
 */
int distenv_tasks_on_node(const char *value, uint32_t node_id, uint32_t *count,
			  struct distenv_error *err);

/*
 * Fill step from the environment of a task inside srun (SLURM_JOB_ID,
 * SLURM_STEP_ID, SLURM_STEP_NUM_NODES, SLURM_NODEID, SLURM_STEP_NUM_TASKS,
 * SLURM_STEP_TASKS_PER_NODE, SLURM_PROCID, SLURM_LOCALID,
 * SLURMD_NODENAME, SLURM_STEP_RESV_PORTS); outside a step (no
 * SLURM_STEP_ID) from the job's variables as the batch script sees them.
 * master_host is left empty: the caller resolves the node list
 * (SLURM_STEP_NODELIST or SLURM_JOB_NODELIST) with Slurm's hostlist
 * functions. batch: 1 for the batch step, 0 for an srun step, -1 to
 * decide by whether SLURM_STEP_ID is set and names an srun step (the
 * distenv command; the id of salloc's interactive step, 4294967290 or,
 * from 26.05, -6, is a shell of the job like the batch script). Errors
 * name the missing or malformed variable.
 */
int distenv_step_from_env(const char *const *envp, int batch,
			  struct distenv_step *step, struct distenv_error *err);

/* The node list variable to read for step: SLURM_STEP_NODELIST for a
 * task step, SLURM_JOB_NODELIST for the batch step. */
const char *distenv_step_nodelist_var(const struct distenv_step *step);

/* Which step a slurmstepd serves, and where its node stands in it. */
struct distenv_step_ids {
	uint32_t job_id; /* the step's job; a heterogeneous step: the
			   * leader's (the job id of component 0) */
	uint32_t step_id;
	uint32_t nnodes; /* nodes in the step, every component's */
	uint32_t node_id; /* this node's index among them */
	int het; /* 1: a step over several components of a
			   * heterogeneous job */
};

/*
 * The step's ids from slurmstepd's own (items: S_JOB_ID, S_JOB_STEPID,
 * S_JOB_NNODES, S_JOB_NODEID) and the task's environment envp, into *out.
 *
 * Slurm runs a heterogeneous step (srun --het-group=0,1, or srun's colon
 * syntax; Slurm's "Heterogeneous Job Support" page) as one step per
 * component: each slurmstepd's items name its component's job id and
 * count only that component's nodes, while the tasks' environment
 * describes the whole step as MPI sees it: SLURM_JOB_ID is the leader's
 * id, SLURM_STEP_NUM_NODES and SLURM_NODEID count every component's
 * nodes (measured on 22.05, 24.11 and 26.05:
 * tests/cluster/het_interactive.bats).
 * Cancelling the component's step would leave the other components
 * waiting for their peers; cancelling the leader's id reaches every
 * component (slurmctld signals the whole heterogeneous step when no
 * component is named, step_het_comp NO_VAL).
 *
 * So: where SLURM_HET_SIZE is set and SLURM_STEP_NUM_NODES exceeds the
 * items' node count (a step over one component, srun --het-group=1, has
 * equal counts: its own job id is right, and SLURM_JOB_ID would name the
 * leader's step of the same number instead), out takes SLURM_JOB_ID,
 * SLURM_STEP_NUM_NODES and SLURM_NODEID, and het = 1; otherwise out is
 * items, het = 0. A malformed variable keeps the items. Never fails.
 */
void distenv_step_ids_resolve(const struct distenv_step_ids *items,
			      const char *const *envp,
			      struct distenv_step_ids *out);

#endif
