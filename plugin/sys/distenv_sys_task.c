/* distenv_sys_task.c: gather a task's facts, then run the core. */
#include "distenv_sys.h"

#include <stdio.h>
#include <string.h>

#include "distenv_derive.h"
#include "distenv_env.h"

/* The node of task 0 into step when the task layout can put it on a
 * node other than node index 0: the caller's kept answer, else asked for
 * now. */
static int place_task0(const struct distenv_site *site,
		       const struct distenv_request *req,
		       const struct distenv_task0 *task0,
		       struct distenv_step *step, struct distenv_error *err)
{
	struct distenv_task0 asked;
	const char *dist = distenv_task0_moves(site, req,
					       step->kind == DISTENV_STEP_BATCH,
					       step->nnodes, step->envp);

	if (!dist)
		return 0;
	step->master_dist = dist;
	if (!task0) {
		distenv_task0_ask(step->job_id, step->step_id, &asked);
		task0 = &asked;
	}
	if (task0->rc) {
		if (err)
			*err = task0->err;
		return -1;
	}
	snprintf(step->master_host, sizeof(step->master_host), "%s",
		 task0->host);
	step->master_node_id = task0->node_id;
	return 0;
}

int distenv_derive_for_task_topo(const struct distenv_site *site,
				 const struct distenv_request *req,
				 const char *const *envp, int batch,
				 const struct distenv_topo *topo,
				 const char *topo_note,
				 const char *step_gpus,
				 const struct distenv_task0 *task0,
				 struct distenv_step *step,
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
	distenv_sys_ephemeral(&step->ephemeral_lo, &step->ephemeral_hi);
	list_var = distenv_step_nodelist_var(step);
	if (distenv_first_host(distenv_env_get(envp, list_var), list_var,
			       step->master_host, sizeof(step->master_host),
			       err))
		return -1;
	if (place_task0(site, req, task0, step, err))
		return -1;
	if (distenv_needs_net(site, req, step)) {
		char host[DISTENV_HOST_MAX];

		if (distenv_master_lookup_name(site, step, host, sizeof(host),
					       err) ||
		    distenv_net_facts_gather(host, &facts, err))
			goto out;
	}
	rc = distenv_derive(site, req, step, &facts.net, vars, err);
out:
	distenv_net_facts_free(&facts);
	return rc;
}
