/*
 * distenv_derive_master.c: MASTER_ADDR and MASTER_PORT, the rendezvous
 * point every rank connects to (docs/contracts.md 1). The master's node
 * and its name come from the step (Slurm's step layout, the site's
 * master_name: rule); its address and the interface that reaches it from
 * distenv_master.h; the port from distenv_ports.h.
 */
#include "distenv_derive.h"

#include <stdio.h>
#include <string.h>

#include "distenv_derive_int.h"
#include "distenv_env.h"
#include "distenv_ifspec.h"
#include "distenv_ports.h"

const char *distenv_master_host(const struct distenv_step *step)
{
	const char *user = distenv_env_user_value(step->envp, "MASTER_ADDR");

	return user ? user : step->master_host;
}

int distenv_master_lookup_name(const struct distenv_site *site,
			       const struct distenv_step *step, char *buf,
			       size_t len, struct distenv_error *err)
{
	const char *user = distenv_env_user_value(step->envp, "MASTER_ADDR");

	if (user) {
		snprintf(buf, len, "%s", user);
		return 0;
	}
	return distenv_master_name_expand(site->master_name, step->master_host,
					  buf, len, err);
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

int distenv_needs_own_addrs(const struct distenv_site *site,
			    const struct distenv_request *req,
			    const struct distenv_step *step)
{
	return distenv_effective_mode(site, req) != DISTENV_MODE_OFF &&
	       step->kind != DISTENV_STEP_BATCH && step->nnodes > 1 &&
	       step->node_id != step->master_node_id &&
	       distenv_env_user_value(step->envp, "MASTER_ADDR");
}

int derive_choose_master(struct derivation *d)
{
	struct distenv_master_prefs prefs;
	struct distenv_ifspec allowed;

	if (derive_check_user_ifname_syntax(d))
		return -1;
	if (!distenv_needs_net(d->site, d->req, d->step))
		return 0;
	if (!d->net)
		return distenv_error_set(d->err, d->step->node_name, NULL,
					 "no network facts were gathered");
	if (derive_check_user_ifnames(d))
		return -1;
	memset(&prefs, 0, sizeof(prefs));
	prefs.family = d->site->family;
	if (d->site->ifaces[0]) {
		if (distenv_ifspec_parse(d->site->ifaces,
					 "site policy interfaces", &allowed,
					 d->err))
			return -1;
		prefs.ifaces = &allowed;
		prefs.ifaces_text = d->site->ifaces;
	}
	if (distenv_master_choose_prefs(d->net, &prefs, d->step->node_name,
					d->multi_node,
					d->step->node_id ==
						d->step->master_node_id,
					&d->master, d->err)) {
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
	return derive_check_user_ifnames_reach(d);
}

int derive_emit_master_addr(struct derivation *d)
{
	if (!d->have_master) {
		const char *user =
			distenv_env_user_value(d->step->envp, "MASTER_ADDR");

		return user ? derive_emit(d, "MASTER_ADDR", user, "-") : 0;
	}
	if (d->step->master_dist)
		return derive_emit(
			d, "MASTER_ADDR", d->master.addr,
			"task 0 (rank 0, which hosts the store) runs on "
			"%s, node index %u of the step (Slurm's step "
			"layout, SLURM_DISTRIBUTION=%s); %s%s%s%s",
			d->step->master_host, d->step->master_node_id,
			d->step->master_dist, d->master.addr_reason,
			d->site->master_name[0] ?
				" (site policy master_name: " :
				"",
			d->site->master_name,
			d->site->master_name[0] ? ")" : "");
	return derive_emit(d, "MASTER_ADDR", d->master.addr,
			   "node index 0 of the step is %s; %s%s%s%s",
			   d->step->master_host, d->master.addr_reason,
			   d->site->master_name[0] ?
				   " (site policy master_name: " :
				   "",
			   d->site->master_name,
			   d->site->master_name[0] ? ")" : "");
}

int derive_emit_master_port(struct derivation *d)
{
	const struct distenv_step *s = d->step;
	char text[8];
	uint16_t port;

	if (s->resv_ports && s->resv_ports[0]) {
		if (distenv_resv_ports_first(s->resv_ports, &port, d->err))
			return -1;
		snprintf(text, sizeof(text), "%u", port);
		return derive_emit(
			d, "MASTER_PORT", text,
			"first port of SLURM_STEP_RESV_PORTS=%s, reserved "
			"by Slurm for this step%s",
			s->resv_ports,
			d->req->port ? " (--distenv-port not used)" : "");
	}
	if (d->req->port) {
		snprintf(text, sizeof(text), "%u", d->req->port);
		return derive_emit(d, "MASTER_PORT", text, "--distenv-port");
	}
	if (distenv_derive_port(s->job_id, s->step_id, d->site->port_lo,
				d->site->port_hi, s->ephemeral_lo,
				s->ephemeral_hi, &port, d->err))
		return -1;
	snprintf(text, sizeof(text), "%u", port);
	return derive_emit(
		d, "MASTER_PORT", text,
		"derived from job %u step %u in port_range %u-%u, outside "
		"the ephemeral range %u-%u (no ports reserved by Slurm)",
		s->job_id, s->step_id, d->site->port_lo, d->site->port_hi,
		s->ephemeral_lo, s->ephemeral_hi);
}
