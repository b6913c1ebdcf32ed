/* distenv_derive.c: from step facts to the ordered variable list. */
#include "distenv_derive.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "distenv_env.h"
#include "distenv_ifspec.h"
#include "distenv_master.h"
#include "distenv_ports.h"

/* Everything one derivation works with, so helpers take one pointer. */
struct derivation {
	const struct distenv_site *site;
	const struct distenv_request *req;
	const struct distenv_step *step;
	const struct distenv_net *net;
	struct distenv_vars *vars;
	struct distenv_error *err;
	enum distenv_mode mode;
	int multi_node;
	int have_master;
	struct distenv_master_choice master;
};

/* Add name: the user's value if the user set it, else value. */
static int emit(struct derivation *d, const char *name, const char *value,
		const char *reason_fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int emit(struct derivation *d, const char *name, const char *value,
		const char *reason_fmt, ...)
{
	const char *user = distenv_env_user_value(d->step->envp, name);
	char reason[768];
	va_list ap;

	if (user)
		return distenv_vars_add(d->vars, name, user,
					DISTENV_ACTION_KEPT, d->err,
					"kept (set by user)");
	va_start(ap, reason_fmt);
	vsnprintf(reason, sizeof(reason), reason_fmt, ap);
	va_end(ap);
	return distenv_vars_add(d->vars, name, value, DISTENV_ACTION_SET,
				d->err, "%s", reason);
}

static int emit_u32(struct derivation *d, const char *name, uint32_t value,
		    const char *reason)
{
	char text[16];

	snprintf(text, sizeof(text), "%u", value);
	return emit(d, name, text, "%s", reason);
}

/* PET_<name> mirrors the value in force for <name>, user's or derived:
 * torchrun reads PET_* for any argument not on its command line
 * (torch/distributed/argparse_util.py env action). */
static int emit_pet(struct derivation *d, const char *name)
{
	char pet[DISTENV_NAME_MAX];

	snprintf(pet, sizeof(pet), "PET_%s", name);
	return emit(d, pet, distenv_vars_value(d->vars, name),
		    "= %s, for a bare `torchrun script.py` (torchrun reads "
		    "PET_<ARG> for each argument not given)",
		    name);
}

uint32_t distenv_count_gpus(const char *const *envp, const char **source)
{
	const char *cvd = distenv_env_get(envp, "CUDA_VISIBLE_DEVICES");
	const char *on_node = distenv_env_get(envp, "SLURM_GPUS_ON_NODE");
	uint32_t n = 0;

	*source = NULL;
	if (cvd && cvd[0] && strcmp(cvd, "NoDevFiles") != 0) {
		const char *p;

		n = 1;
		for (p = cvd; *p; p++)
			n += (*p == ',');
		*source = "CUDA_VISIBLE_DEVICES";
		return n;
	}
	if (on_node && distenv_parse_u32(on_node, 1u << 20, &n) == 0 && n) {
		*source = "SLURM_GPUS_ON_NODE";
		return n;
	}
	return 0;
}

const char *distenv_master_host(const struct distenv_step *step)
{
	const char *user = distenv_env_user_value(step->envp, "MASTER_ADDR");

	return user ? user : step->master_host;
}

int distenv_needs_net(const struct distenv_site *site,
		      const struct distenv_request *req,
		      const struct distenv_step *step)
{
	if (distenv_effective_mode(site, req) == DISTENV_MODE_OFF)
		return 0;
	return !(distenv_env_user_value(step->envp, "MASTER_ADDR") &&
		 distenv_env_user_value(step->envp, "NCCL_SOCKET_IFNAME") &&
		 distenv_env_user_value(step->envp, "GLOO_SOCKET_IFNAME"));
}

static int check_torchrun_layout(struct derivation *d)
{
	const struct distenv_step *s = d->step;
	char where[DISTENV_HOST_MAX + 32];

	if (d->mode != DISTENV_MODE_TORCHRUN || s->kind != DISTENV_STEP_TASKS ||
	    s->local_ntasks <= 1)
		return 0;
	snprintf(where, sizeof(where), "node %s", s->node_name);
	return distenv_error_set(
		d->err, where,
		"use --ntasks-per-node=1 (torchrun starts one process per "
		"GPU itself), or --distenv=tasks to start one task per rank",
		"%u tasks of step %u.%u run on this node in torchrun mode",
		s->local_ntasks, s->job_id, s->step_id);
}

static int fail_no_iface(struct derivation *d, const char *what,
			 const char *value)
{
	char where[DISTENV_HOST_MAX + 64], names[512];

	snprintf(where, sizeof(where), "node %s: %s", d->step->node_name,
		 what);
	distenv_iface_names(d->net->ifaces, d->net->n_ifaces, names,
			    sizeof(names));
	return distenv_error_set(
		d->err, where,
		"name an interface this node has, or leave it out and let "
		"distenv derive it",
		"'%s' matches no interface of this node (it has: %s)", value,
		names);
}

/* A user-exported NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME is kept, but
 * one that matches nothing stops NCCL at init ("no socket interface
 * found", ../shared/cases C4); say so before launch. */
static int check_user_ifnames(struct derivation *d)
{
	const char *const *envp = d->step->envp;
	const char *nccl = distenv_env_user_value(envp, "NCCL_SOCKET_IFNAME");
	const char *gloo = distenv_env_user_value(envp, "GLOO_SOCKET_IFNAME");
	struct distenv_ifspec spec;

	if (nccl) {
		if (distenv_ifspec_parse(nccl, "NCCL_SOCKET_IFNAME (exported)",
					 &spec, d->err))
			return -1;
		if (!distenv_ifspec_any(&spec, d->net->ifaces,
					d->net->n_ifaces, d->multi_node, NULL))
			return fail_no_iface(d, "NCCL_SOCKET_IFNAME (exported)",
					     nccl);
	}
	if (gloo) {
		/* Gloo takes exact names, comma-separated
		 * (ProcessGroupGloo.cpp). */
		char exact[DISTENV_IFSPEC_TEXT_MAX + 2];
		size_t i;

		snprintf(exact, sizeof(exact), "=%s", gloo);
		if (distenv_ifspec_parse(exact, "GLOO_SOCKET_IFNAME (exported)",
					 &spec, d->err))
			return -1;
		for (i = 0; i < spec.count; i++) {
			struct distenv_ifspec one = spec;

			one.count = 1;
			memcpy(one.names[0], spec.names[i],
			       sizeof(one.names[0]));
			if (!distenv_ifspec_any(&one, d->net->ifaces,
						d->net->n_ifaces, d->multi_node,
						NULL))
				return fail_no_iface(
					d, "GLOO_SOCKET_IFNAME (exported)",
					spec.names[i]);
		}
	}
	return 0;
}

static int choose_master(struct derivation *d)
{
	if (!distenv_needs_net(d->site, d->req, d->step))
		return 0;
	if (!d->net)
		return distenv_error_set(d->err, d->step->node_name, NULL,
					 "no network facts were gathered");
	if (check_user_ifnames(d))
		return -1;
	if (distenv_master_choose(d->net, d->step->node_name, d->multi_node,
				  d->step->node_id == 0, &d->master, d->err)) {
		/* The batch script only gets the step-independent values
		 * for convenience; a resolution problem shows in the first
		 * step instead of failing the whole job here. */
		if (d->step->kind == DISTENV_STEP_BATCH) {
			distenv_error_clear(d->err);
			return 0;
		}
		return -1;
	}
	d->have_master = 1;
	return 0;
}

static int emit_master_addr(struct derivation *d)
{
	if (!d->have_master) {
		const char *user =
			distenv_env_user_value(d->step->envp, "MASTER_ADDR");

		return user ? emit(d, "MASTER_ADDR", user, "-") : 0;
	}
	return emit(d, "MASTER_ADDR", d->master.addr,
		    "node index 0 of the step is %s; %s",
		    d->step->master_host, d->master.addr_reason);
}

static int emit_master_port(struct derivation *d)
{
	const struct distenv_step *s = d->step;
	char text[8];
	uint16_t port;

	if (s->resv_ports && s->resv_ports[0]) {
		if (distenv_resv_ports_first(s->resv_ports, &port, d->err))
			return -1;
		snprintf(text, sizeof(text), "%u", port);
		return emit(d, "MASTER_PORT", text,
			    "first port of SLURM_STEP_RESV_PORTS=%s, reserved "
			    "by Slurm for this step%s",
			    s->resv_ports,
			    d->req->port ? " (--distenv-port not used)" : "");
	}
	if (d->req->port) {
		snprintf(text, sizeof(text), "%u", d->req->port);
		return emit(d, "MASTER_PORT", text, "--distenv-port");
	}
	if (distenv_derive_port(s->job_id, s->step_id, d->site->port_lo,
				d->site->port_hi, s->ephemeral_lo,
				s->ephemeral_hi, &port, d->err))
		return -1;
	snprintf(text, sizeof(text), "%u", port);
	return emit(d, "MASTER_PORT", text,
		    "derived from job %u step %u in port_range %u-%u, outside "
		    "the ephemeral range %u-%u (no ports reserved by Slurm)",
		    s->job_id, s->step_id, d->site->port_lo, d->site->port_hi,
		    s->ephemeral_lo, s->ephemeral_hi);
}

static int emit_ifnames(struct derivation *d)
{
	char nccl[DISTENV_IFSPEC_TEXT_MAX + 2];
	char gloo[DISTENV_IFNAME_MAX];
	const char *nccl_reason, *gloo_reason;
	char why[512];

	if (!d->have_master) {
		/* Only reached when the user set all three. */
		const char *const *envp = d->step->envp;

		if (emit(d, "NCCL_SOCKET_IFNAME",
			 distenv_env_user_value(envp, "NCCL_SOCKET_IFNAME"), "-"))
			return -1;
		return emit(d, "GLOO_SOCKET_IFNAME",
			    distenv_env_user_value(envp, "GLOO_SOCKET_IFNAME"),
			    "-");
	}
	snprintf(why, sizeof(why), "%s", d->master.ifname_reason);
	snprintf(nccl, sizeof(nccl), "=%s", d->master.ifname);
	snprintf(gloo, sizeof(gloo), "%s", d->master.ifname);
	nccl_reason = why;
	gloo_reason = why;
	if (d->req->ifname[0]) {
		struct distenv_ifspec spec;

		if (distenv_ifspec_parse(d->req->ifname, "--distenv-ifname",
					 &spec, d->err))
			return -1;
		if (!distenv_ifspec_any(&spec, d->net->ifaces,
					d->net->n_ifaces, d->multi_node, gloo))
			return fail_no_iface(d, "--distenv-ifname",
					     d->req->ifname);
		snprintf(nccl, sizeof(nccl), "%s", d->req->ifname);
		nccl_reason = "--distenv-ifname (NCCL's list syntax, as given)";
		/* Gloo wants one exact name: the reaching interface when the
		 * user's list allows it, else the list's first match. */
		if (distenv_ifspec_selects(&spec, d->master.ifname)) {
			snprintf(gloo, sizeof(gloo), "%s", d->master.ifname);
		} else {
			snprintf(why, sizeof(why),
				 "first interface matching --distenv-ifname=%s "
				 "(%s would reach the master)",
				 d->req->ifname, d->master.ifname);
		}
	}
	/* "=" makes NCCL match the exact name: without it eth1 also
	 * matches eth10 (NCCL env docs, NCCL_SOCKET_IFNAME). */
	if (emit(d, "NCCL_SOCKET_IFNAME", nccl, "%s", nccl_reason))
		return -1;
	return emit(d, "GLOO_SOCKET_IFNAME", gloo, "%s", gloo_reason);
}

static int emit_nproc(struct derivation *d)
{
	const char *source;
	uint32_t gpus;

	if (d->req->nproc)
		return emit_u32(d, "NPROC_PER_NODE", d->req->nproc,
				"--distenv-nproc");
	gpus = distenv_count_gpus(d->step->envp, &source);
	if (gpus) {
		char reason[128];

		snprintf(reason, sizeof(reason), "GPUs visible to the task (%s)",
			 source);
		return emit_u32(d, "NPROC_PER_NODE", gpus, reason);
	}
	return emit_u32(d, "NPROC_PER_NODE", 1,
			"no GPU visible to the task: one process");
}

static int derive_batch(struct derivation *d)
{
	if (emit_u32(d, "NNODES", d->step->nnodes,
		     "SLURM_JOB_NUM_NODES: nodes in the allocation (each srun "
		     "step re-derives it for its own nodes)"))
		return -1;
	if (d->mode == DISTENV_MODE_TORCHRUN && emit_nproc(d))
		return -1;
	if (emit_master_addr(d))
		return -1;
	if (d->mode == DISTENV_MODE_TORCHRUN &&
	    emit(d, "FORCE_TORCHRUN", "1",
		 "LLaMA-Factory launches through torchrun only when "
		 "FORCE_TORCHRUN is set or it sees several GPUs"))
		return -1;
	return 0;
}

static int derive_torchrun(struct derivation *d)
{
	const struct distenv_step *s = d->step;
	char node_rank[16];

	if (emit_u32(d, "NNODES", s->nnodes,
		     "SLURM_STEP_NUM_NODES: nodes in the step"))
		return -1;
	snprintf(node_rank, sizeof(node_rank), "%u", s->node_id);
	if (emit(d, "NODE_RANK", node_rank,
		 "SLURM_NODEID: this node's index in the step (read by "
		 "LLaMA-Factory >= 0.9.1)"))
		return -1;
	if (emit(d, "RANK", distenv_vars_value(d->vars, "NODE_RANK"),
		 "= NODE_RANK, for LLaMA-Factory <= 0.9.0 which reads RANK; "
		 "torchrun gives its workers their own RANK"))
		return -1;
	if (emit_nproc(d) || emit_master_addr(d) || emit_master_port(d))
		return -1;
	if (emit(d, "FORCE_TORCHRUN", "1",
		 "LLaMA-Factory launches through torchrun only when "
		 "FORCE_TORCHRUN is set or it sees several GPUs"))
		return -1;
	if (emit_pet(d, "NNODES") || emit_pet(d, "NODE_RANK") ||
	    emit_pet(d, "NPROC_PER_NODE"))
		return -1;
	if (distenv_vars_value(d->vars, "MASTER_ADDR") &&
	    emit_pet(d, "MASTER_ADDR"))
		return -1;
	if (emit_pet(d, "MASTER_PORT"))
		return -1;
	return emit_ifnames(d);
}

static int derive_tasks(struct derivation *d)
{
	const struct distenv_step *s = d->step;

	if (emit_u32(d, "RANK", s->procid, "SLURM_PROCID: this task's rank") ||
	    emit_u32(d, "WORLD_SIZE", s->ntasks,
		     "SLURM_STEP_NUM_TASKS: tasks in the step") ||
	    emit_u32(d, "LOCAL_RANK", s->localid,
		     "SLURM_LOCALID: this task's index on the node") ||
	    emit_u32(d, "LOCAL_WORLD_SIZE", s->local_ntasks,
		     "tasks of the step on this node") ||
	    emit_u32(d, "NODE_RANK", s->node_id,
		     "SLURM_NODEID: this node's index in the step") ||
	    emit_u32(d, "NNODES", s->nnodes,
		     "SLURM_STEP_NUM_NODES: nodes in the step"))
		return -1;
	if (emit_master_addr(d) || emit_master_port(d))
		return -1;
	return emit_ifnames(d);
}

static int emit_marker(struct derivation *d)
{
	char marker[2048];

	if (distenv_env_marker(d->vars, marker, sizeof(marker), d->err))
		return -1;
	return distenv_vars_add(d->vars, DISTENV_MARKER_VAR, marker,
				DISTENV_ACTION_SET, d->err,
				"the variables distenv set, so that a later step "
				"re-derives them and keeps the user's");
}

int distenv_derive(const struct distenv_site *site,
		   const struct distenv_request *req,
		   const struct distenv_step *step,
		   const struct distenv_net *net, struct distenv_vars *vars,
		   struct distenv_error *err)
{
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
	d.multi_node = step->nnodes > 1;
	if (d.mode == DISTENV_MODE_OFF)
		return 0;
	if (check_torchrun_layout(&d) || choose_master(&d))
		return -1;
	if (step->kind == DISTENV_STEP_BATCH)
		rc = derive_batch(&d);
	else if (d.mode == DISTENV_MODE_TORCHRUN)
		rc = derive_torchrun(&d);
	else
		rc = derive_tasks(&d);
	if (rc == 0)
		rc = emit_marker(&d);
	if (rc)
		distenv_vars_free(vars);
	return rc;
}
