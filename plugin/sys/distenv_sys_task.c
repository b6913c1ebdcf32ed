/* distenv_sys_task.c: gather a task's facts, then run the core. */
#include "distenv_sys.h"

#include <string.h>

#include "distenv_derive.h"
#include "distenv_env.h"

/*
 * Whether rank 0 may be on a node other than node index 0: tasks mode
 * (RANK = SLURM_PROCID, and rank 0 hosts torch's store), a multi-node
 * srun step, and a distribution that places tasks in a user-given order.
 * Slurm's block, cyclic and plane distributions start task 0 on the
 * step's first node (srun(1), --distribution); arbitrary follows
 * SLURM_HOSTFILE or the -w list, whose first name may be any node. srun
 * exports the distribution it used as SLURM_DISTRIBUTION (srun(1),
 * OUTPUT ENVIRONMENT VARIABLES); sets step->master_dist.
 */
static int task0_elsewhere(const struct distenv_site *site,
			   const struct distenv_request *req,
			   struct distenv_step *step)
{
	const char *dist = distenv_env_get(step->envp, "SLURM_DISTRIBUTION");

	if (step->kind == DISTENV_STEP_BATCH || step->nnodes < 2 ||
	    distenv_effective_mode(site, req) != DISTENV_MODE_TASKS || !dist ||
	    strncmp(dist, "arbitrary", 9) != 0)
		return 0;
	step->master_dist = dist;
	return 1;
}

int distenv_derive_for_task_topo(const struct distenv_site *site,
				 const struct distenv_request *req,
				 const char *const *envp, int batch,
				 const struct distenv_topo *topo,
				 const char *topo_note, const char *step_gpus,
				 long long job_end, struct distenv_step *step,
				 struct distenv_vars *vars,
				 struct distenv_error *err)
{
	struct distenv_net_facts facts;
	const char *list_var;
	int rc = -1;

	memset(&facts, 0, sizeof(facts));
	if (distenv_step_from_env(envp, batch, step, err))
		return -1;
	step->topo = topo;
	step->topo_note = topo_note;
	step->step_gpus = step_gpus;
	step->job_end = job_end;
	step->task_cpus = distenv_sys_affinity(step->task_cpu_list,
					       sizeof(step->task_cpu_list));
	distenv_sys_ephemeral(&step->ephemeral_lo, &step->ephemeral_hi);
	list_var = distenv_step_nodelist_var(step);
	if (distenv_first_host(distenv_env_get(envp, list_var), list_var,
			       step->master_host, sizeof(step->master_host),
			       err))
		return -1;
	if (task0_elsewhere(site, req, step) &&
	    distenv_task0_host(step->job_id, step->step_id, step->master_host,
			       sizeof(step->master_host), &step->master_node_id,
			       err))
		return -1;
	if (distenv_needs_net(site, req, step)) {
		char host[DISTENV_HOST_MAX];

		if (distenv_master_lookup_name(site, step, host, sizeof(host),
					       err) ||
		    distenv_net_facts_gather(host, &facts, err))
			goto out;
	} else if (distenv_needs_own_addrs(site, req, step)) {
		/* Only for the check of an exported MASTER_ADDR against
		 * this node's addresses: facts that cannot be gathered
		 * leave it unchecked, as before the check existed. */
		char host[DISTENV_HOST_MAX];

		if (distenv_master_lookup_name(site, step, host, sizeof(host),
					       err) ||
		    distenv_net_facts_gather(host, &facts, err)) {
			distenv_net_facts_free(&facts);
			distenv_error_clear(err);
		}
	}
	rc = distenv_derive(site, req, step, &facts.net, vars, err);
out:
	distenv_net_facts_free(&facts);
	return rc;
}
