/*
 * distenv_cpus.h: the CPU budget of a task. Pure: the task's CPU count
 * (its affinity, read by plugin/sys), the processes it starts and the
 * job's CPUs on the node in; a finding and OMP_NUM_THREADS out.
 *
 * Why: a task bound to fewer CPUs than it runs processes shares them,
 * and nothing fails, so the training is just slower (2-3x in public
 * reports). What bounds a task (srun(1), OPTIONS and INPUT ENVIRONMENT
 * VARIABLES; measured with task/affinity on 22.05,
 * tests/cluster/cpu_budget.bats):
 * - srun --cpu-bind (and SLURM_CPU_BIND, which srun reads as the same
 *   option): task/affinity binds each task to the CPUs it names;
 * - srun -c (srun(1) of 24.11 also reads SLURM_CPUS_PER_TASK and
 *   SLURM_TRES_PER_TASK cpu=N as it): the CPUs each task gets; without
 *   it srun counts 1 CPU per task (a step of several tasks per node, or
 *   with --exact, then binds each to 1; on 22.05 a step of one task per
 *   node still got all of the job's CPUs there: measured), and srun of
 *   Slurm 22.05 (srun(1) 22.05, -c: "not automatically inherited by
 *   srun") up to 23.02 does not take sbatch's -c: it must be given to
 *   srun again, or as SRUN_CPUS_PER_TASK;
 * - sbatch run from inside another job's step passes that step's
 *   SLURM_CPU_BIND* and SLURM_CPUS_PER_TASK into the new job's
 *   environment (sbatch exports the caller's environment and overwrites
 *   only the variables of its own job; measured on 22.05), where its
 *   srun reads them.
 * The rule (kept simple): every process a task starts wants a CPU of its
 * own, so a task with fewer CPUs than processes is short; and a task
 * with less than half of its share of the job's CPUs on the node (the
 * job's CPUs there / the step's tasks there) leaves most of what the job
 * holds idle. Data loader workers are not counted: their number is the
 * training's, not the step's.
 */
#ifndef DISTENV_CPUS_H
#define DISTENV_CPUS_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"

struct distenv_cpu_view {
	uint32_t task_cpus; /* CPUs the task may run on; 0: unknown */
	const char *task_list; /* their ids ("0-3,8"), for messages, or NULL */
	uint32_t procs; /* processes the task starts (>= 1) */
	const char *procs_from; /* what says so ("NPROC_PER_NODE=8") */
	uint32_t job_cpus; /* CPUs the job holds on this node; 0: unknown */
	uint32_t local_tasks; /* the step's tasks on this node (>= 1) */
	const char *node; /* this node's name, for messages */
};

/*
 * The CPUs the job holds on node node_id of a step of step_nnodes nodes,
 * from SLURM_JOB_CPUS_PER_NODE of envp ("2(x3),1", sbatch(1) OUTPUT
 * ENVIRONMENT VARIABLES; one entry per node of the job, in the job's
 * order). A step's node index is the job's only when the step spans the
 * job's nodes (SLURM_JOB_NUM_NODES equal to step_nnodes), or when every
 * node holds the same count. Returns the count, or 0: unknown.
 */
uint32_t distenv_job_cpus_on_node(const char *const *envp, uint32_t node_id,
				  uint32_t step_nnodes);

/*
 * Whether the task is short of CPUs (the rule above), with the finding
 * in *finding: what (CPUs against processes, or against the share of
 * the job's CPUs), the cause as far as envp shows it (SLURM_CPU_BIND,
 * SLURM_CPUS_PER_TASK, SLURM_TRES_PER_TASK, or neither: srun's default
 * of 1 CPU per task) and the fix. Returns 1 with *finding set, 0 when
 * the task is fine or its CPUs are unknown.
 */
int distenv_cpu_budget_check(const struct distenv_cpu_view *v,
			     const char *const *envp,
			     struct distenv_error *finding);

/*
 * OMP_NUM_THREADS for the task: its CPUs shared by the processes it
 * starts, at least 1; 0 when its CPUs are unknown. torchrun sets 1 for
 * its workers when the variable is unset and it starts more than one
 * (torch/distributed/run.py), as enroot's PyTorch hook does; a value in
 * the environment keeps both from doing so.
 */
uint32_t distenv_omp_threads(const struct distenv_cpu_view *v);

/*
 * The submit side (sbatch, salloc) with its own environment envp:
 * whether it runs inside another job (SLURM_JOB_ID is set: Slurm sets it
 * only in a job's processes) and would pass that job's CPU variables on
 * to the new one: SLURM_CPU_BIND (srun reads it as --cpu-bind, and binds
 * the new job's tasks to the old job's CPUs), SLURM_CPUS_PER_TASK,
 * SLURM_TRES_PER_TASK. sbatch exports its whole environment by default
 * and overwrites only the variables of its own job, so the new job's
 * steps read them (measured on 22.05: tests/cluster/cpu_budget.bats).
 * Returns 1 with *finding (a warning: the submitter may mean it), 0
 * otherwise.
 */
int distenv_submit_inherits_cpus(const char *const *envp,
				 struct distenv_error *finding);

#endif
