/* distenv_step.c: step facts from a task's environment. */
#include "distenv_step.h"

#include <stdio.h>
#include <string.h>

#include "distenv_env.h"
#include "distenv_options.h"

int distenv_tasks_on_node(const char *value, uint32_t node_id, uint32_t *count,
			  struct distenv_error *err)
{
	const char *p = value;
	uint64_t seen = 0;
	char shown[72];
	int found = 0;

	if (!p || !*p)
		goto bad;
	for (;;) {
		char num[16];
		uint32_t tasks, reps = 1;
		size_t n = 0;

		while (p[n] >= '0' && p[n] <= '9' && n < sizeof(num) - 1) {
			num[n] = p[n];
			n++;
		}
		num[n] = '\0';
		if (distenv_parse_u32(num, UINT32_MAX, &tasks))
			goto bad;
		p += n;
		if (strncmp(p, "(x", 2) == 0) {
			p += 2;
			n = 0;
			while (p[n] >= '0' && p[n] <= '9' &&
			       n < sizeof(num) - 1) {
				num[n] = p[n];
				n++;
			}
			num[n] = '\0';
			if (distenv_parse_u32(num, UINT32_MAX, &reps) ||
			    reps == 0 || p[n] != ')')
				goto bad;
			p += n + 1;
		}
		/* The whole value is read even after node_id's entry, so
		 * that "4;reboot" is refused for node 0 as for node 1. */
		if (!found && node_id < seen + reps) {
			*count = tasks;
			found = 1;
		}
		seen += reps;
		if (*p == '\0')
			break;
		if (*p != ',')
			goto bad;
		p++;
	}
	if (found)
		return 0;
	return distenv_error_set(err, "SLURM_STEP_TASKS_PER_NODE", NULL,
				 "'%s' lists %llu nodes, not node %u",
				 distenv_printable(value, shown, sizeof(shown)),
				 (unsigned long long) seen, node_id);
bad:
	return distenv_error_set(err, "SLURM_STEP_TASKS_PER_NODE", NULL,
				 "'%s' is not a list like 2(x3),1",
				 distenv_printable(value, shown,
						   sizeof(shown)));
}

/* Slurm's ids of steps that are not srun steps start at
 * SLURM_MAX_NORMAL_STEP_ID (0xfffffff0, slurm.h): salloc's interactive
 * step is SLURM_INTERACTIVE_STEP, 0xfffffffa. Its shell's SLURM_STEP_ID
 * reads 4294967290 on 22.05 and 24.11 and -6 on 26.05 (measured:
 * tests/cluster/het_interactive.bats). Either form means: a shell of
 * the job, not a task of a step. */
static int special_step_env(const char *const *envp)
{
	const char *v = distenv_env_get(envp, "SLURM_STEP_ID");
	uint32_t id;

	if (!v)
		return 0;
	if (v[0] == '-')
		return v[1] >= '1' && v[1] <= '9' &&
		       distenv_parse_u32(v + 1, 16, &id) == 0;
	return distenv_parse_u32(v, UINT32_MAX, &id) == 0 && id >= 0xfffffff0u;
}

int distenv_step_from_env(const char *const *envp, int batch,
			  struct distenv_step *step, struct distenv_error *err)
{
	const char *name;
	const char *tpn;
	int in_step;

	memset(step, 0, sizeof(*step));
	step->envp = envp;
	step->ephemeral_lo = 1; /* no range known: lo > hi */
	step->ephemeral_hi = 0;
	if (distenv_env_u32(envp, "SLURM_JOB_ID", 1, &step->job_id, err) < 0)
		return -1;
	in_step = batch == 1 || (batch < 0 && special_step_env(envp)) ?
			  0 :
			  distenv_env_u32(envp, "SLURM_STEP_ID", batch == 0,
					  &step->step_id, err);
	if (in_step < 0)
		return -1;
	name = distenv_env_get(envp, "SLURMD_NODENAME");
	snprintf(step->node_name, sizeof(step->node_name), "%s",
		 name ? name : "submit host");
	if (!in_step) {
		step->kind = DISTENV_STEP_BATCH;
		/* slurmstepd sets SLURMD_NODENAME for the batch script;
		 * salloc's own shell runs outside Slurm's daemons. */
		step->alloc_shell = !name;
		if (distenv_env_u32(envp, "SLURM_JOB_NUM_NODES", 1,
				    &step->nnodes, err) < 0)
			return -1;
		step->ntasks = 1;
		step->local_ntasks = 1;
		return 0;
	}
	step->kind = DISTENV_STEP_TASKS;
	if (distenv_env_u32(envp, "SLURM_STEP_NUM_NODES", 1, &step->nnodes,
			    err) < 0 ||
	    distenv_env_u32(envp, "SLURM_NODEID", 1, &step->node_id, err) < 0 ||
	    distenv_env_u32(envp, "SLURM_STEP_NUM_TASKS", 1, &step->ntasks,
			    err) < 0 ||
	    distenv_env_u32(envp, "SLURM_PROCID", 1, &step->procid, err) < 0 ||
	    distenv_env_u32(envp, "SLURM_LOCALID", 1, &step->localid, err) < 0)
		return -1;
	tpn = distenv_env_get(envp, "SLURM_STEP_TASKS_PER_NODE");
	if (!tpn)
		return distenv_error_set(err, "SLURM_STEP_TASKS_PER_NODE",
					 "run inside a Slurm step (srun)",
					 "not set");
	if (distenv_tasks_on_node(tpn, step->node_id, &step->local_ntasks, err))
		return -1;
	step->resv_ports = distenv_env_get(envp, "SLURM_STEP_RESV_PORTS");
	return 0;
}

const char *distenv_step_nodelist_var(const struct distenv_step *step)
{
	return step->kind == DISTENV_STEP_BATCH ? "SLURM_JOB_NODELIST" :
						  "SLURM_STEP_NODELIST";
}

void distenv_step_ids_resolve(const struct distenv_step_ids *items,
			      const char *const *envp,
			      struct distenv_step_ids *out)
{
	struct distenv_error err;
	uint32_t job = 0, nnodes = 0, node = 0;

	*out = *items;
	out->het = 0;
	if (!distenv_env_get(envp, "SLURM_HET_SIZE") ||
	    distenv_env_u32(envp, "SLURM_STEP_NUM_NODES", 1, &nnodes, &err) !=
		    1 ||
	    nnodes <= items->nnodes ||
	    distenv_env_u32(envp, "SLURM_JOB_ID", 1, &job, &err) != 1 ||
	    distenv_env_u32(envp, "SLURM_NODEID", 1, &node, &err) != 1 ||
	    node >= nnodes)
		return;
	out->job_id = job;
	out->nnodes = nnodes;
	out->node_id = node;
	out->het = 1;
}
