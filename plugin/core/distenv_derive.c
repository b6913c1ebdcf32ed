/*
 * distenv_derive.c: from step facts to the ordered variable list. The
 * driver: one struct derivation, the step's checks, then each mode's
 * variables in export order from the parts (distenv_derive_int.h), the
 * site's extra variables and the marker last.
 */
#include "distenv_derive.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_derive_int.h"
#include "distenv_derived.h"
#include "distenv_env.h"
#include "distenv_user_check.h"

int derive_add_var(struct derivation *d, const char *name, const char *value,
		   const char *reason)
{
	const char *user = distenv_env_user_value(d->step->envp, name);

	if (user)
		return distenv_vars_add(d->vars, name, user,
					DISTENV_ACTION_KEPT, d->err,
					"kept (set by user)");
	return distenv_vars_add(d->vars, name, value, DISTENV_ACTION_SET,
				d->err, "%s", reason);
}

int derive_emit(struct derivation *d, const char *name, const char *value,
		const char *reason_fmt, ...)
{
	char reason[768];
	va_list ap;

	if (!distenv_derived_find(name))
		return distenv_error_set(d->err, name,
					 "add it to distenv_derived_vars "
					 "(distenv_derived.c)",
					 "internal: not a derived variable");
	va_start(ap, reason_fmt);
	vsnprintf(reason, sizeof(reason), reason_fmt, ap);
	va_end(ap);
	return derive_add_var(d, name, value, reason);
}

int derive_emit_u32(struct derivation *d, const char *name, uint32_t value,
		    const char *reason)
{
	char text[16];

	snprintf(text, sizeof(text), "%u", value);
	return derive_emit(d, name, text, "%s", reason);
}

int derive_emit_pet(struct derivation *d, const char *name)
{
	char pet[DISTENV_NAME_MAX];

	snprintf(pet, sizeof(pet), "PET_%s", name);
	return derive_emit(
		d, pet, distenv_vars_value(d->vars, name),
		"= %s, for a bare `torchrun script.py` (torchrun reads "
		"PET_<ARG> for each argument not given)",
		name);
}

const struct distenv_gpus *derive_task_gpus(struct derivation *d)
{
	if (!d->have_gpus) {
		distenv_gpus_read(d->step->envp, d->step->step_gpus, &d->gpus);
		d->have_gpus = 1;
	}
	return &d->gpus;
}

#define TORCHRUN_LAYOUT_FIX \
	"use --ntasks-per-node=1 (torchrun starts one process per GPU " \
	"itself), or --distenv=tasks to start one task per rank"

int distenv_check_step_layout(enum distenv_mode mode, uint32_t ntasks,
			      uint32_t nnodes, uint32_t job_id,
			      uint32_t step_id, struct distenv_error *err)
{
	if ((mode != DISTENV_MODE_TORCHRUN && mode != DISTENV_MODE_ELASTIC) ||
	    !nnodes || ntasks <= nnodes)
		return 0;
	return distenv_error_set(err, "-n/--ntasks-per-node",
				 TORCHRUN_LAYOUT_FIX,
				 "step %u.%u has %u tasks on %u node%s in %s "
				 "mode: some node would run several torchruns",
				 job_id, step_id, ntasks, nnodes,
				 nnodes == 1 ? "" : "s",
				 distenv_mode_name(mode));
}

static int check_torchrun_layout(struct derivation *d)
{
	const struct distenv_step *s = d->step;
	char where[DISTENV_HOST_MAX + 32];

	if ((d->mode != DISTENV_MODE_TORCHRUN &&
	     d->mode != DISTENV_MODE_ELASTIC) ||
	    s->kind != DISTENV_STEP_TASKS || s->local_ntasks <= 1)
		return 0;
	snprintf(where, sizeof(where), "node %s", s->node_name);
	return distenv_error_set(
		d->err, where, TORCHRUN_LAYOUT_FIX,
		"%u tasks of step %u.%u run on this node in torchrun mode",
		s->local_ntasks, s->job_id, s->step_id);
}

/* The step's GPUs on this node and the topology's ranking for them,
 * once. A GPU list that cannot be read only means no GPU: the topology
 * never fails a step. */
static int topo_prepare(struct derivation *d)
{
	struct distenv_error ignored;
	struct topo_view *t;

	if (!d->step->topo || d->step->kind == DISTENV_STEP_BATCH)
		return 0;
	t = calloc(1, sizeof(*t));
	if (!t)
		return distenv_error_set(d->err, d->step->node_name, NULL,
					 "out of memory");
	if (distenv_topo_node_gpus(d->step->topo, derive_task_gpus(d), t->gpus,
				   &t->n_gpus, &t->source, t->note,
				   sizeof(t->note), &ignored)) {
		t->n_gpus = 0;
		snprintf(t->note, sizeof(t->note), "%s", ignored.what);
	}
	distenv_topo_rank(d->step->topo, t->gpus, t->n_gpus, &t->plan);
	d->topo = t;
	return 0;
}

/* A CUDA_VISIBLE_DEVICES that names GPUs the task does not have
 * (distenv_gpus_check_visible): a warning, an error under
 * --distenv-check=strict, nothing under off. Tasks only: the batch
 * script's GPUs are not a step's. */
static int check_task_gpus(struct derivation *d)
{
	struct distenv_error finding;

	if (d->step->kind == DISTENV_STEP_BATCH ||
	    d->req->check == DISTENV_CHECK_OFF)
		return 0;
	distenv_error_clear(&finding);
	if (!distenv_gpus_check_visible(d->step->envp, d->step->step_gpus,
					d->step->node_name, &finding))
		return 0;
	if (d->req->check == DISTENV_CHECK_STRICT) {
		*d->err = finding;
		return -1;
	}
	distenv_vars_warn(d->vars, &finding);
	return 0;
}

static int derive_batch(struct derivation *d)
{
	if (derive_emit_u32(
		    d, "NNODES", d->step->nnodes,
		    "SLURM_JOB_NUM_NODES: nodes in the allocation (each srun "
		    "step re-derives it for its own nodes)"))
		return -1;
	int torchrun = d->mode == DISTENV_MODE_TORCHRUN ||
		       d->mode == DISTENV_MODE_ELASTIC;

	if (torchrun && derive_emit_nproc(d))
		return -1;
	if (derive_emit_master_addr(d))
		return -1;
	if (torchrun &&
	    derive_emit(d, "FORCE_TORCHRUN", "1",
			"LLaMA-Factory launches through torchrun only when "
			"FORCE_TORCHRUN is set or it sees several GPUs"))
		return -1;
	return 0;
}

static int derive_torchrun(struct derivation *d)
{
	if (derive_emit_torchrun_ranks(d))
		return -1;
	if (derive_emit_nproc(d) || derive_emit_master_addr(d) ||
	    derive_emit_master_port(d))
		return -1;
	if (derive_emit(d, "FORCE_TORCHRUN", "1",
			"LLaMA-Factory launches through torchrun only when "
			"FORCE_TORCHRUN is set or it sees several GPUs"))
		return -1;
	if (d->elastic) {
		if (derive_emit_elastic(d) || derive_emit_ifnames(d))
			return -1;
		return derive_emit_hca(d);
	}
	if (derive_emit_pet(d, "NNODES") || derive_emit_pet(d, "NODE_RANK") ||
	    derive_emit_pet(d, "NPROC_PER_NODE"))
		return -1;
	if (distenv_vars_value(d->vars, "MASTER_ADDR") &&
	    derive_emit_pet(d, "MASTER_ADDR"))
		return -1;
	if (derive_emit_pet(d, "MASTER_PORT"))
		return -1;
	if (derive_emit_ifnames(d))
		return -1;
	return derive_emit_hca(d);
}

static int derive_tasks(struct derivation *d)
{
	if (derive_emit_task_ranks(d))
		return -1;
	if (derive_emit_master_addr(d) || derive_emit_master_port(d))
		return -1;
	if (derive_emit_ifnames(d))
		return -1;
	return derive_emit_hca(d);
}

/* The site's extra variables for this partition (site policy env:, e.g.
 * NCCL_IB_GID_INDEX): exported like the others, the user's own kept. */
static int emit_site_vars(struct derivation *d)
{
	const struct distenv_site *site = d->site;
	char reason[DISTENV_PARTITION_MAX + 32];
	size_t i;

	snprintf(reason, sizeof(reason), "site policy%s%s",
		 site->partition[0] ? ", partition " : "", site->partition);
	for (i = 0; i < site->n_vars; i++)
		if (derive_add_var(d, site->vars[i].name, site->vars[i].value,
				   reason))
			return -1;
	return 0;
}

static int emit_marker(struct derivation *d)
{
	char marker[2048];

	if (distenv_env_marker(d->vars, marker, sizeof(marker), d->err))
		return -1;
	return distenv_vars_add(
		d->vars, DISTENV_MARKER_VAR, marker, DISTENV_ACTION_SET, d->err,
		"the variables distenv set, so that a later step "
		"re-derives them and keeps the user's");
}

int distenv_derive(const struct distenv_site *site,
		   const struct distenv_request *req,
		   const struct distenv_step *step,
		   const struct distenv_net *net, struct distenv_vars *vars,
		   struct distenv_error *err)
{
	char master_name[DISTENV_HOST_MAX];
	struct derivation d;
	int rc;

	memset(&d, 0, sizeof(d));
	d.site = site;
	d.req = req;
	d.step = step;
	d.net = net;
	d.vars = vars;
	d.err = err;
	d.mode = distenv_effective_mode(site, req);
	d.elastic = d.mode == DISTENV_MODE_ELASTIC ||
		    (d.mode == DISTENV_MODE_TORCHRUN &&
		     distenv_env_user_value(step->envp, "RDZV_ID"));
	d.multi_node = step->nnodes > 1;
	if (d.mode == DISTENV_MODE_OFF)
		return 0;
	if (distenv_site_check_request(site, req, err))
		return -1;
	/* The name distenv resolves for the master when MASTER_ADDR is not
	 * exported, for the fix of an exported one; the step's master host
	 * when the site's rule does not fit. */
	if (distenv_master_name_expand(site->master_name, step->master_host,
				       master_name, sizeof(master_name), NULL))
		master_name[0] = '\0';
	if (check_torchrun_layout(&d) ||
	    distenv_user_check(d.mode, step, net, master_name, err) ||
	    derive_choose_master(&d) || topo_prepare(&d) ||
	    check_task_gpus(&d)) {
		free(d.topo);
		return -1;
	}
	if (step->kind == DISTENV_STEP_BATCH)
		rc = derive_batch(&d);
	else if (d.mode == DISTENV_MODE_TORCHRUN ||
		 d.mode == DISTENV_MODE_ELASTIC)
		rc = derive_torchrun(&d);
	else
		rc = derive_tasks(&d);
	if (rc == 0)
		rc = derive_cpu_budget(&d);
	if (rc == 0)
		rc = derive_emit_job_end(&d);
	if (rc == 0)
		rc = emit_site_vars(&d);
	if (rc == 0)
		rc = emit_marker(&d);
	free(d.topo);
	if (rc)
		distenv_vars_free(vars);
	return rc;
}
