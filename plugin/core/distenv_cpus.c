/*
 * distenv_cpus.c: the CPU budget of a task (rules and sources in
 * distenv_cpus.h).
 */
#include "distenv_cpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_env.h"
#include "distenv_step.h"

/* A positive decimal count, or 0. */
static uint32_t count_value(const char *text)
{
	char *end;
	unsigned long v;

	if (!text || *text < '0' || *text > '9')
		return 0;
	v = strtoul(text, &end, 10);
	if (*end || v > 1000000UL)
		return 0;
	return (uint32_t) v;
}

/* Every node the same count: "N" or "N(xM)". */
static uint32_t uniform_count(const char *value)
{
	char *end;
	unsigned long v;

	if (!value || *value < '0' || *value > '9')
		return 0;
	v = strtoul(value, &end, 10);
	if (v > 1000000UL)
		return 0;
	if (*end == '\0')
		return (uint32_t) v;
	if (end[0] != '(' || end[1] != 'x')
		return 0;
	end += 2;
	if (*end < '0' || *end > '9')
		return 0;
	strtoul(end, &end, 10);
	return strcmp(end, ")") == 0 ? (uint32_t) v : 0;
}

uint32_t distenv_job_cpus_on_node(const char *const *envp, uint32_t node_id,
				  uint32_t step_nnodes)
{
	const char *value = distenv_env_get(envp, "SLURM_JOB_CPUS_PER_NODE");
	uint32_t job_nnodes =
		count_value(distenv_env_get(envp, "SLURM_JOB_NUM_NODES"));
	uint32_t count = uniform_count(value);

	if (count || !value)
		return count;
	if (!job_nnodes || job_nnodes != step_nnodes ||
	    distenv_tasks_on_node(value, node_id, &count, NULL))
		return 0;
	return count;
}

/* The cpu=N of a --tres-per-task value ("cpu=4", "cpu:4,gres/gpu:1"),
 * or 0. */
static uint32_t tres_cpus(const char *value)
{
	const char *p = value;

	while (p && *p) {
		if (strncmp(p, "cpu=", 4) == 0 || strncmp(p, "cpu:", 4) == 0)
			return (uint32_t) strtoul(p + 4, NULL, 10);
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return 0;
}

/* What bounds the task, as far as its environment shows, into buf: a
 * binding; a per-task CPU count that explains the task's (one above it
 * does not: something else bound the task); or neither, srun's default
 * of 1 CPU per task. */
static void cause(const struct distenv_cpu_view *v, const char *const *envp,
		  char *buf, size_t len)
{
	const char *bind = distenv_env_get(envp, "SLURM_CPU_BIND");
	const char *cpt = distenv_env_get(envp, "SLURM_CPUS_PER_TASK");
	const char *tres = distenv_env_get(envp, "SLURM_TRES_PER_TASK");
	uint32_t asked = cpt ? count_value(cpt) : tres_cpus(tres);
	char shown[128];
	size_t used;

	snprintf(buf, len, "cause:");
	if (bind && (strstr(bind, "map_") || strstr(bind, "mask_"))) {
		used = strlen(buf);
		snprintf(buf + used, len - used,
			 " SLURM_CPU_BIND=%s binds it (srun --cpu-bind, "
			 "srun's default binding, or a SLURM_CPU_BIND left by "
			 "another job's step: sbatch run in a step passes it "
			 "on);",
			 distenv_printable(bind, shown, sizeof(shown)));
	}
	used = strlen(buf);
	if (asked && asked <= v->task_cpus)
		snprintf(buf + used, len - used,
			 " %s=%s (srun %s, or left by another job's step);",
			 cpt ? "SLURM_CPUS_PER_TASK" : "SLURM_TRES_PER_TASK",
			 distenv_printable(cpt ? cpt : tres, shown,
					   sizeof(shown)),
			 cpt ? "-c" : "--tres-per-task");
	else if (!cpt && !asked)
		snprintf(buf + used, len - used,
			 " no -c: srun counts 1 CPU per task, and srun of "
			 "Slurm 22.05 to 23.02 does not take sbatch's -c;");
	used = strlen(buf);
	if (used == strlen("cause:"))
		snprintf(buf + used, len - used,
			 " not in the task's environment (a cgroup cpuset, "
			 "taskset or numactl around srun?)");
	else if (buf[used - 1] == ';')
		buf[used - 1] = '\0';
}

#define CPU_FIX \
	"give the task its CPUs: srun -c N (--cpus-per-task=N, or " \
	"SRUN_CPUS_PER_TASK=N), --cpu-bind=none to drop a binding, " \
	"and unset SLURM_CPU_BIND, SLURM_CPU_BIND_LIST, " \
	"SLURM_CPU_BIND_TYPE, SLURM_CPUS_PER_TASK and " \
	"SLURM_TRES_PER_TASK when they come from another job (sbatch " \
	"run inside a step)"

int distenv_cpu_budget_check(const struct distenv_cpu_view *v,
			     const char *const *envp,
			     struct distenv_error *finding)
{
	uint32_t share = v->job_cpus / (v->local_tasks ? v->local_tasks : 1);
	char why[768], where[300], list[64];

	if (!v->task_cpus)
		return 0;
	snprintf(where, sizeof(where), "node %s: CPUs of the task",
		 v->node ? v->node : "?");
	snprintf(list, sizeof(list), "%s", v->task_list ? v->task_list : "?");
	cause(v, envp, why, sizeof(why));
	if (v->task_cpus < v->procs)
		return distenv_error_set(
			       finding, where, CPU_FIX,
			       "the task may run on %u CPU%s (%s) but starts "
			       "%u processes (%s): they share them, slower, "
			       "with no error; %s",
			       v->task_cpus, v->task_cpus == 1 ? "" : "s", list,
			       v->procs, v->procs_from ? v->procs_from : "?",
			       why),
		       1;
	if (share && v->task_cpus * 2 < share)
		return distenv_error_set(
			       finding, where, CPU_FIX,
			       "the task may run on %u CPU%s (%s), under half "
			       "of the %u the job holds here for each of the "
			       "step's %u task%s on the node "
			       "(SLURM_JOB_CPUS_PER_NODE): the rest stay idle; "
			       "%s",
			       v->task_cpus, v->task_cpus == 1 ? "" : "s", list,
			       share, v->local_tasks,
			       v->local_tasks == 1 ? "" : "s", why),
		       1;
	return 0;
}

uint32_t distenv_omp_threads(const struct distenv_cpu_view *v)
{
	uint32_t n;

	if (!v->task_cpus)
		return 0;
	n = v->task_cpus / (v->procs ? v->procs : 1);
	return n ? n : 1;
}

int distenv_submit_inherits_cpus(const char *const *envp,
				 struct distenv_error *finding)
{
	static const char *const names[] = { "SLURM_CPU_BIND",
					     "SLURM_CPUS_PER_TASK",
					     "SLURM_TRES_PER_TASK" };
	const char *job = distenv_env_get(envp, "SLURM_JOB_ID");
	char found[256] = "", shown[64], id[32];
	size_t i, used;

	if (!job)
		return 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *value = distenv_env_get(envp, names[i]);

		if (!value)
			continue;
		used = strlen(found);
		snprintf(found + used, sizeof(found) - used, "%s%s=%s",
			 used ? ", " : "", names[i],
			 distenv_printable(value, shown, sizeof(shown)));
	}
	if (!found[0])
		return 0;
	distenv_printable(job, id, sizeof(id));
	return distenv_error_set(
		       finding, "the submitting environment",
		       "unset them for the new job (env -u SLURM_CPU_BIND -u "
		       "SLURM_CPU_BIND_LIST -u SLURM_CPU_BIND_TYPE -u "
		       "SLURM_CPUS_PER_TASK -u SLURM_TRES_PER_TASK sbatch ...), "
		       "or give its srun -c N and --cpu-bind=none",
		       "this runs inside job %s (SLURM_JOB_ID) and passes its "
		       "%s on to the new job, whose srun reads them: its "
		       "tasks may get job %s's CPU binding and count, and "
		       "run slower without any error",
		       id, found, id),
	       1;
}
