/* distenv_derive.c: from step facts to the ordered variable list. */
#include "distenv_derive.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_derived.h"
#include "distenv_env.h"
#include "distenv_gpus.h"
#include "distenv_ifspec.h"
#include "distenv_ifuse.h"
#include "distenv_master.h"
#include "distenv_ports.h"
#include "distenv_topo.h"
#include "distenv_user_check.h"

/* The topology's answer for this node (distenv_topo.h), worked out once
 * per derivation when the step has a topology. */
struct topo_view {
	struct distenv_topo_plan plan;
	size_t gpus[DISTENV_TOPO_GPUS_MAX]; /* the step's on this node, into
					     * topo->gpus */
	size_t n_gpus;
	const char *source; /* the variable they came from, or NULL */
	char note[256];     /* GPUs that could not be placed */
};

/* Everything one derivation works with, so helpers take one pointer. */
struct derivation {
	const struct distenv_site *site;
	const struct distenv_request *req;
	const struct distenv_step *step;
	const struct distenv_net *net;
	struct distenv_vars *vars;
	struct distenv_error *err;
	enum distenv_mode mode;
	int elastic; /* c10d rendezvous: elastic mode, or RDZV_ID exported */
	int multi_node;
	int have_master;
	struct distenv_master_choice master;
	struct topo_view *topo; /* NULL: no topology for this step */
	struct distenv_gpus gpus; /* read on first use (task_gpus) */
	int have_gpus;
};

/* Add name: the user's value if the user set it, else value. */
static int add_var(struct derivation *d, const char *name, const char *value,
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

/* A derived variable: only names of the table of distenv_derived.h,
 * which the site policy and README.md follow. */
static int emit(struct derivation *d, const char *name, const char *value,
		const char *reason_fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int emit(struct derivation *d, const char *name, const char *value,
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
	return add_var(d, name, value, reason);
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

/* The task's and the step's GPUs (distenv_gpus.h), read once. */
static const struct distenv_gpus *task_gpus(struct derivation *d)
{
	if (!d->have_gpus) {
		distenv_gpus_read(d->step->envp, d->step->step_gpus, &d->gpus);
		d->have_gpus = 1;
	}
	return &d->gpus;
}

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

#define TORCHRUN_LAYOUT_FIX                                              \
	"use --ntasks-per-node=1 (torchrun starts one process per GPU "   \
	"itself), or --distenv=tasks to start one task per rank"

int distenv_check_step_layout(enum distenv_mode mode, uint32_t ntasks,
			      uint32_t nnodes, uint32_t job_id,
			      uint32_t step_id, struct distenv_error *err)
{
	if ((mode != DISTENV_MODE_TORCHRUN && mode != DISTENV_MODE_ELASTIC) ||
	    !nnodes || ntasks <= nnodes)
		return 0;
	return distenv_error_set(err, "-n/--ntasks-per-node", TORCHRUN_LAYOUT_FIX,
				 "step %u.%u has %u tasks on %u node%s in %s "
				 "mode: some node would run several torchruns",
				 job_id, step_id, ntasks, nnodes,
				 nnodes == 1 ? "" : "s", distenv_mode_name(mode));
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

/* "node N: NAME (exported)", where an exported variable is reported. */
static const char *exported_where(const struct derivation *d, const char *name,
				  char *buf, size_t len)
{
	snprintf(buf, len, "node %s: %s (exported)", d->step->node_name, name);
	return buf;
}

/*
 * An IP address in an exported NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME
 * (distenv_ifname_is_address): NCCL matches interface names and finds
 * none, Gloo fails at init with "Unable to find address for: ADDR". The
 * fix names the interface holding the address here when net says, with
 * exact ("=" for NCCL's exact-name form, "" for Gloo) before it.
 */
static int check_no_address(struct derivation *d, const char *name,
			    const char *value, const char *exact,
			    const char *consequence)
{
	const char *p = value;
	char where[DISTENV_HOST_MAX + 64], fix[256];

	p += *p == '^';
	p += *p == '=';
	while (*p) {
		size_t len = strcspn(p, ",");
		char addr[DISTENV_IP_TEXT_MAX + 8];
		struct distenv_ip ip;
		size_t i;

		if (!distenv_ifname_is_address(p, len)) {
			p += len + (p[len] == ',');
			continue;
		}
		snprintf(addr, sizeof(addr), "%.*s",
			 (int)strcspn(p, ",%/"), p);
		snprintf(fix, sizeof(fix),
			 "name the interface that holds the address "
			 "(`ip -br addr` lists them), or unset %s and let "
			 "distenv derive it", name);
		for (i = 0; d->net && distenv_ip_parse(addr, &ip) == 0 &&
			    i < d->net->n_ifaces; i++)
			if (distenv_ip_equal(&ip, &d->net->ifaces[i].ip))
				snprintf(fix, sizeof(fix),
					 "export %s=%s%s (the interface holding "
					 "%s here), or unset it and let distenv "
					 "derive it", name, exact,
					 d->net->ifaces[i].name, addr);
		return distenv_error_set(
			d->err, exported_where(d, name, where, sizeof(where)),
			fix,
			"you exported %s=%s: '%.*s' is an IP address, not an "
			"interface name (%s)", name, value, (int)len, p,
			consequence);
	}
	return 0;
}

/*
 * What NCCL and Gloo cannot read at all, before any network fact:
 * GLOO_SOCKET_IFNAME takes plain interface names, comma-separated, each
 * looked up as it is written (pytorch torch/csrc/distributed/c10d/
 * init.cpp splits it on ','; gloo transport/tcp/device.cc,
 * lookupAddrForIface, compares each with strcmp and throws "Unable to
 * find address for: NAME"): '^' and '=' are NCCL's list syntax; an IP
 * address is no name to either.
 */
static int check_user_ifname_syntax(struct derivation *d)
{
	const char *const *envp = d->step->envp;
	const char *nccl = distenv_env_user_value(envp, "NCCL_SOCKET_IFNAME");
	const char *gloo = distenv_env_user_value(envp, "GLOO_SOCKET_IFNAME");
	char where[DISTENV_HOST_MAX + 64];

	if (nccl && check_no_address(d, "NCCL_SOCKET_IFNAME", nccl, "=",
				     "NCCL matches interface names, and would "
				     "find no socket interface"))
		return -1;
	if (!gloo)
		return 0;
	if (gloo[0] == '^' || gloo[0] == '=')
		return distenv_error_set(
			d->err,
			exported_where(d, "GLOO_SOCKET_IFNAME", where,
				       sizeof(where)),
			"write plain interface names, comma-separated "
			"(GLOO_SOCKET_IFNAME=eth0), or unset it and let distenv "
			"derive it",
			"you exported GLOO_SOCKET_IFNAME=%s: Gloo takes plain "
			"interface names, and '%c' is NCCL's list syntax (Gloo "
			"looks for an interface named '%.*s' and fails at init "
			"with \"Unable to find address for: %.*s\")",
			gloo, gloo[0], (int)strcspn(gloo, ","), gloo,
			(int)strcspn(gloo, ","), gloo);
	return check_no_address(d, "GLOO_SOCKET_IFNAME", gloo, "",
				"Gloo fails at init with \"Unable to find "
				"address for: ...\"");
}

/* A user-exported NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME is kept, but
 * one that matches nothing stops NCCL at init ("no socket interface
 * found"; docs/contracts.md 4); say so before launch. */
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

/*
 * In a multi-node srun step, an interface given for NCCL or Gloo must
 * reach the master (distenv_master_reaches): NCCL's bootstrap advertises
 * the address of the one interface it takes (distenv_ifspec_nccl_takes),
 * and Gloo connects every peer on each listed interface (pytorch
 * ProcessGroupGloo.cpp: one context per device, connectFullMesh). One in
 * no subnet of the master's is a network the other nodes are not on.
 * Fails naming what was given (var=value; exported or the option), the
 * interface taken from it, and those that do reach.
 */
static int fail_unreaching(struct derivation *d, const char *var,
			   int exported, const char *value, const char *name,
			   const struct distenv_iface *nccl, const char *fix)
{
	char where[DISTENV_HOST_MAX + 64], reaching[256], via[160] = "";
	char ip[DISTENV_IP_TEXT_MAX];
	/* NCCL took an address of an interface whose other address does
	 * reach: say which address. */
	int by_addr = nccl && distenv_master_reaches(d->net, &d->master, name);

	distenv_master_reaching(d->net, &d->master, by_addr ? name : NULL,
				reaching, sizeof(reaching));
	if (by_addr)
		snprintf(via, sizeof(via), "NCCL takes %s's address %s from it "
			 "(the first address it selects), and that",
			 name, distenv_ip_format(&nccl->ip, ip, sizeof(ip)));
	else if (nccl && strcmp(value + (value[0] == '='), name) != 0)
		snprintf(via, sizeof(via), "NCCL takes %s from it (the first "
			 "interface it selects), and %s", name, name);
	else
		snprintf(via, sizeof(via), "%s", name);
	snprintf(where, sizeof(where), "node %s: %s%s", d->step->node_name, var,
		 exported ? " (exported)" : "");
	return distenv_error_set(
		d->err, where, fix,
		"you %s %s=%s, but %s does not reach the master %s (%s %s)",
		exported ? "exported" : "gave", var, value, via, d->master.addr,
		reaching, strchr(reaching, ',') ? "do" : "does");
}

static int check_user_ifnames_reach(struct derivation *d)
{
	const char *const *envp = d->step->envp;
	const char *nccl = distenv_env_user_value(envp, "NCCL_SOCKET_IFNAME");
	const char *gloo = distenv_env_user_value(envp, "GLOO_SOCKET_IFNAME");
	const char *fix = "unset it, or name an interface in the master's "
			  "subnet";
	char taken[DISTENV_IFNAME_MAX];
	const struct distenv_iface *f;
	struct distenv_ifspec spec;
	const char *p;
	size_t len;

	if (!d->multi_node || d->step->kind == DISTENV_STEP_BATCH)
		return 0;
	if (nccl &&
	    distenv_ifspec_parse(nccl, "NCCL_SOCKET_IFNAME (exported)", &spec,
				 d->err) == 0 &&
	    (f = distenv_ifspec_nccl_takes(&spec, d->net->ifaces,
					   d->net->n_ifaces)) &&
	    !distenv_master_reaches_addr(d->net, &d->master, f))
		return fail_unreaching(d, "NCCL_SOCKET_IFNAME", 1, nccl,
				       f->name, f, fix);
	for (p = gloo; p && *p; p += len + (p[len] == ',')) {
		len = strcspn(p, ",");
		snprintf(taken, sizeof(taken), "%.*s", (int)len, p);
		if (!distenv_master_reaches(d->net, &d->master, taken))
			return fail_unreaching(d, "GLOO_SOCKET_IFNAME", 1, gloo,
					       taken, NULL, fix);
	}
	return 0;
}

static int choose_master(struct derivation *d)
{
	struct distenv_master_prefs prefs;
	struct distenv_ifspec allowed;

	if (check_user_ifname_syntax(d))
		return -1;
	if (!distenv_needs_net(d->site, d->req, d->step))
		return 0;
	if (!d->net)
		return distenv_error_set(d->err, d->step->node_name, NULL,
					 "no network facts were gathered");
	if (check_user_ifnames(d))
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
					d->step->node_id == d->step->master_node_id,
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
	return check_user_ifnames_reach(d);
}

static int emit_master_addr(struct derivation *d)
{
	if (!d->have_master) {
		const char *user =
			distenv_env_user_value(d->step->envp, "MASTER_ADDR");

		return user ? emit(d, "MASTER_ADDR", user, "-") : 0;
	}
	if (d->step->master_dist)
		return emit(d, "MASTER_ADDR", d->master.addr,
			    "task 0 (rank 0, which hosts the store) runs on "
			    "%s, node index %u of the step (Slurm's step "
			    "layout, SLURM_DISTRIBUTION=%s); %s%s%s%s",
			    d->step->master_host, d->step->master_node_id,
			    d->step->master_dist, d->master.addr_reason,
			    d->site->master_name[0] ?
				    " (site policy master_name: " : "",
			    d->site->master_name,
			    d->site->master_name[0] ? ")" : "");
	return emit(d, "MASTER_ADDR", d->master.addr,
		    "node index 0 of the step is %s; %s%s%s%s",
		    d->step->master_host, d->master.addr_reason,
		    d->site->master_name[0] ? " (site policy master_name: " : "",
		    d->site->master_name, d->site->master_name[0] ? ")" : "");
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

/*
 * Among the interfaces that reach the master's address (the chosen one,
 * and the others up in its subnet that the site's interfaces: list
 * allows), the one closest to the task's GPUs (distenv_topo_prefer); the
 * chosen one wins ties, and names the topology does not list count as
 * virtual. Rewrites nccl when another is closer. Returns NCCL's reason.
 */
static const char *prefer_close_ifname(struct derivation *d, char *nccl,
				       size_t len, const char *why,
				       char *out, size_t out_len)
{
	const char *names[DISTENV_TOPO_NICS_MAX];
	const struct distenv_topo_pick *pick;
	struct distenv_ifspec allowed;
	int have_allowed = 0, best;
	size_t n = 0, i, k;

	names[n++] = d->master.ifname;
	if (d->site->ifaces[0] &&
	    distenv_ifspec_parse(d->site->ifaces, "site policy interfaces",
				 &allowed, NULL) == 0)
		have_allowed = 1;
	for (i = 0; i < d->net->n_ifaces && n < DISTENV_TOPO_NICS_MAX; i++) {
		const struct distenv_iface *f = &d->net->ifaces[i];
		int dup = 0;

		if (!f->up || distenv_ip_is_loopback(&f->ip) ||
		    !distenv_iface_usable(d->net->ifaces, d->net->n_ifaces,
					  f->name, d->master.ip.family) ||
		    !distenv_ip_in_subnet(&d->master.ip, f) ||
		    (have_allowed && !distenv_ifspec_selects(&allowed, f->name)))
			continue;
		for (k = 0; k < n; k++)
			dup |= strcmp(names[k], f->name) == 0;
		if (!dup)
			names[n++] = f->name;
	}
	best = distenv_topo_prefer(d->step->topo, &d->topo->plan, names, n,
				   &pick);
	if (best > 0) {
		snprintf(nccl, len, "=%s", names[best]);
		snprintf(out, out_len,
			 "%s; in the subnet of %s, as %s is (%s is closer to "
			 "the GPUs)", pick->reason, d->master.addr,
			 d->master.ifname, names[best]);
		return out;
	}
	if (best == 0 && pick) {
		snprintf(out, out_len, "%s; %s", why, pick->reason);
		return out;
	}
	return why;
}

/*
 * Several interfaces in the master's subnet (distenv_master.h): distenv
 * took the kernel's, and says so, as a warning (--distenv-check=warn,
 * the default), an error (strict) or not at all (off). Not when the
 * user chose: --distenv-ifname, or both variables exported.
 */
static int check_shared_subnet(struct derivation *d)
{
	const char *const *envp = d->step->envp;

	if (!distenv_error_is_set(&d->master.shared_subnet) ||
	    d->req->ifname[0] ||
	    (distenv_env_user_value(envp, "NCCL_SOCKET_IFNAME") &&
	     distenv_env_user_value(envp, "GLOO_SOCKET_IFNAME")) ||
	    d->req->check == DISTENV_CHECK_OFF)
		return 0;
	if (d->req->check == DISTENV_CHECK_STRICT) {
		*d->err = d->master.shared_subnet;
		return -1;
	}
	distenv_vars_warn(d->vars, &d->master.shared_subnet);
	return 0;
}

static int emit_ifnames(struct derivation *d)
{
	char nccl[DISTENV_IFSPEC_TEXT_MAX + 2];
	char gloo[DISTENV_IFNAME_MAX];
	const char *nccl_reason, *gloo_reason;
	const struct distenv_iface *taken;
	char why[512], topo_why[768], fix[256];

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
	if (check_shared_subnet(d))
		return -1;
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
		taken = distenv_ifspec_nccl_takes(&spec, d->net->ifaces,
						  d->net->n_ifaces);
		if (d->multi_node && taken &&
		    !distenv_master_reaches_addr(d->net, &d->master, taken)) {
			snprintf(fix, sizeof(fix),
				 "leave --distenv-ifname out (distenv then picks "
				 "%s), or name an interface in the master's "
				 "subnet", d->master.ifname);
			return fail_unreaching(d, "--distenv-ifname", 0,
					       d->req->ifname, taken->name,
					       taken, fix);
		}
		snprintf(nccl, sizeof(nccl), "%s", d->req->ifname);
		nccl_reason = "--distenv-ifname (NCCL's list syntax, as given)";
		/* Gloo wants plain names: the reaching interface when the
		 * user's list allows it, else the one NCCL takes (it reaches,
		 * in a multi-node step), else the list's first match. */
		if (distenv_ifspec_selects(&spec, d->master.ifname)) {
			snprintf(gloo, sizeof(gloo), "%s", d->master.ifname);
		} else if (d->multi_node && taken) {
			snprintf(gloo, sizeof(gloo), "%s", taken->name);
			snprintf(why, sizeof(why),
				 "%s, the interface NCCL takes from "
				 "--distenv-ifname=%s, reaches the master %s",
				 taken->name, d->req->ifname, d->master.addr);
		} else {
			snprintf(why, sizeof(why),
				 "first interface matching --distenv-ifname=%s "
				 "(%s would reach the master)",
				 d->req->ifname, d->master.ifname);
		}
	} else if (d->topo && d->topo->n_gpus) {
		/* NCCL's sockets carry GPU data when there is no IB; Gloo's
		 * carry CPU tensors and keep the reaching interface. */
		nccl_reason = prefer_close_ifname(d, nccl, sizeof(nccl), why,
						  topo_why, sizeof(topo_why));
	}
	/* "=" makes NCCL match the exact name: without it eth1 also
	 * matches eth10 (NCCL env docs, NCCL_SOCKET_IFNAME). */
	if (emit(d, "NCCL_SOCKET_IFNAME", nccl, "%s", nccl_reason))
		return -1;
	return emit(d, "GLOO_SOCKET_IFNAME", gloo, "%s", gloo_reason);
}

/*
 * With the node's topology, a list the user or the site gave for
 * NCCL_IB_HCA must select an active port of this node's HCAs
 * (distenv_topo_hca_selects): otherwise NCCL finds no IB device and
 * falls back to TCP sockets without a word (nccl
 * src/transport/net_ib.cc, ncclIbInit). Without a topology nothing is
 * known to compare with, and nothing is checked.
 */
static int check_hca_list(struct derivation *d, const char *what,
			  const char *value, const char *fix)
{
	char where[DISTENV_HOST_MAX + 64], ports[512];
	int rc;

	if (!d->step->topo)
		return 0;
	snprintf(where, sizeof(where), "node %s: %s", d->step->node_name,
		 what);
	rc = distenv_topo_hca_selects(d->step->topo, value, where, d->err);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	distenv_topo_hca_ports(d->step->topo, ports, sizeof(ports));
	return distenv_error_set(
		d->err, where, fix,
		"'%s' selects no active port of this node's HCAs (%s): NCCL "
		"would find no InfiniBand device and fall back to TCP sockets "
		"without a word", value, ports);
}

/*
 * NCCL_IB_HCA, one value for the whole node: the user's (kept), the
 * site's fixed list (site policy hca:), or with a topology the HCAs
 * closest to the step's GPUs on this node, active ports only, ordered by
 * GPU (distenv_topo_node_gpus, distenv_topo_rank,
 * distenv_topo_hca_value); nothing for hca: off, without a topology, or
 * when no HCA is near. Never the HCA of one task's GPU: NCCL pairs each
 * GPU with its closest NIC itself, and a value that differs between the
 * ranks of a node makes its topology search fail (docs/contracts.md 4).
 */
static int emit_hca(struct derivation *d)
{
	char value[DISTENV_IFSPEC_TEXT_MAX], reasons[768], gpus[128];
	const struct topo_view *t = d->topo;
	const char *user = distenv_env_user_value(d->step->envp, "NCCL_IB_HCA");
	size_t i, used = 0;

	if (user &&
	    check_hca_list(d, "NCCL_IB_HCA (exported)", user,
			   "name an HCA port this node has (e.g. =mlx5_0:1), or "
			   "unset NCCL_IB_HCA and let distenv derive it"))
		return -1;
	if (d->site->hca_mode == DISTENV_HCA_OFF)
		return 0;
	if (d->site->hca_mode == DISTENV_HCA_FIXED) {
		if (!user &&
		    check_hca_list(d, "site policy hca:", d->site->hca,
				   "ask the admin to correct hca: in the site "
				   "policy file for this node type, or export "
				   "NCCL_IB_HCA=<an HCA port of this node>"))
			return -1;
		return emit(d, "NCCL_IB_HCA", d->site->hca,
			    "site policy hca: (a fixed list)%s%s",
			    d->site->partition[0] ? ", partition " : "",
			    d->site->partition);
	}
	if (!t || !t->plan.n_hcas)
		return 0;
	distenv_topo_hca_value(d->step->topo, &t->plan, value, sizeof(value));
	if (!value[0])
		return 0;
	gpus[0] = '\0';
	for (i = 0; i < t->n_gpus && used < sizeof(gpus); i++) {
		const struct distenv_topo_gpu *g =
			&d->step->topo->gpus[t->gpus[i]];
		int w = snprintf(gpus + used, sizeof(gpus) - used, "%s%d",
				 i ? "," : "",
				 g->minor >= 0 ? g->minor : (int)t->gpus[i]);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	distenv_topo_reasons(t->plan.hcas, t->plan.n_hcas, reasons,
			     sizeof(reasons));
	/* NCCL env docs, NCCL_IB_HCA: "=" for exact names, name:port. */
	return emit(d, "NCCL_IB_HCA", value,
		    "HCAs closest to GPUs %s (%s): %s%s%s; the same for every "
		    "task of the node", gpus, t->source ? t->source : "-",
		    reasons, t->note[0] ? "; not placed: " : "", t->note);
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
	if (distenv_topo_node_gpus(d->step->topo, task_gpus(d), t->gpus,
				   &t->n_gpus, &t->source, t->note,
				   sizeof(t->note), &ignored)) {
		t->n_gpus = 0;
		snprintf(t->note, sizeof(t->note), "%s", ignored.what);
	}
	distenv_topo_rank(d->step->topo, t->gpus, t->n_gpus, &t->plan);
	d->topo = t;
	return 0;
}

static int emit_nproc(struct derivation *d)
{
	const struct distenv_gpus *g = task_gpus(d);
	char reason[512];

	if (d->req->nproc)
		return emit_u32(d, "NPROC_PER_NODE", d->req->nproc,
				"--distenv-nproc");
	if (!g->node_count)
		return emit_u32(d, "NPROC_PER_NODE", 1,
				"no GPU for the step on this node: one process");
	/* The step's count, not what one bound task sees: with
	 * --gpus-per-task or --gpu-bind, CUDA_VISIBLE_DEVICES and
	 * SLURM_STEP_GPUS of the task name its own GPUs only
	 * (distenv_gpus.h). torchrun's workers inherit the task's
	 * CUDA_VISIBLE_DEVICES, so that is said too. */
	snprintf(reason, sizeof(reason), "GPUs of the step on this node (%s)",
		 g->node_count_from);
	if (g->task_known && g->task_count < g->node_count)
		snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason),
			 "; note: this task sees %u of them "
			 "(CUDA_VISIBLE_DEVICES=%s), and torchrun's workers "
			 "inherit that, so local ranks %u-%u find no device: "
			 "leave out --gpus-per-task and --gpu-bind, so that the "
			 "node's one task sees all %u",
			 g->task_count, g->task_list ? g->task_list : "",
			 g->task_count, g->node_count - 1, g->node_count);
	return emit_u32(d, "NPROC_PER_NODE", g->node_count, reason);
}

static int derive_batch(struct derivation *d)
{
	if (emit_u32(d, "NNODES", d->step->nnodes,
		     "SLURM_JOB_NUM_NODES: nodes in the allocation (each srun "
		     "step re-derives it for its own nodes)"))
		return -1;
	int torchrun = d->mode == DISTENV_MODE_TORCHRUN ||
		       d->mode == DISTENV_MODE_ELASTIC;

	if (torchrun && emit_nproc(d))
		return -1;
	if (emit_master_addr(d))
		return -1;
	if (torchrun &&
	    emit(d, "FORCE_TORCHRUN", "1",
		 "LLaMA-Factory launches through torchrun only when "
		 "FORCE_TORCHRUN is set or it sees several GPUs"))
		return -1;
	return 0;
}

static int emit_elastic(struct derivation *d);

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
	if (d->elastic) {
		if (emit_elastic(d) || emit_ifnames(d))
			return -1;
		return emit_hca(d);
	}
	if (emit_pet(d, "NNODES") || emit_pet(d, "NODE_RANK") ||
	    emit_pet(d, "NPROC_PER_NODE"))
		return -1;
	if (distenv_vars_value(d->vars, "MASTER_ADDR") &&
	    emit_pet(d, "MASTER_ADDR"))
		return -1;
	if (emit_pet(d, "MASTER_PORT"))
		return -1;
	if (emit_ifnames(d))
		return -1;
	return emit_hca(d);
}

/* This node's address on the interface that reaches the master, of the
 * master address's family (in the master's subnet when there is one),
 * into buf; 0 when found. */
static int local_addr(const struct derivation *d, char *buf, size_t len)
{
	const struct distenv_iface *best = NULL;
	size_t i;

	if (!d->have_master)
		return -1;
	for (i = 0; i < d->net->n_ifaces; i++) {
		const struct distenv_iface *f = &d->net->ifaces[i];

		if (strcmp(f->name, d->master.ifname) ||
		    f->ip.family != d->master.ip.family ||
		    (d->multi_node && distenv_ip_is_loopback(&f->ip)) ||
		    distenv_ip_is_link_local(&f->ip))
			continue;
		if (!best || distenv_ip_in_subnet(&d->master.ip, f))
			best = f;
		if (distenv_ip_in_subnet(&d->master.ip, f))
			break;
	}
	if (!best)
		return -1;
	distenv_ip_format(&best->ip, buf, len);
	return 0;
}

static int check_elastic_nodes(struct derivation *d, uint32_t lo,
			       uint32_t hi)
{
	const struct distenv_step *s = d->step;
	char where[DISTENV_HOST_MAX + 32];

	if (s->nnodes >= lo && s->nnodes <= hi)
		return 0;
	snprintf(where, sizeof(where), "--distenv-nodes=%u:%u", lo, hi);
	return distenv_error_set(
		d->err, where,
		"ask for a node count in that range (srun -N), or widen "
		"--distenv-nodes",
		"the step has %u nodes: the rendezvous would wait for %s",
		s->nnodes,
		s->nnodes < lo ? "nodes that never come" :
				 "fewer nodes than it has");
}

/* MASTER_ADDR:MASTER_PORT as they are in force, an IPv6 address in
 * brackets. */
static int emit_rdzv_endpoint(struct derivation *d)
{
	const char *addr = distenv_vars_value(d->vars, "MASTER_ADDR");
	const char *port = distenv_vars_value(d->vars, "MASTER_PORT");
	char endpoint[DISTENV_IP_TEXT_MAX + 16];

	snprintf(endpoint, sizeof(endpoint), strchr(addr ? addr : "", ':') ?
		 "[%s]:%s" : "%s:%s", addr ? addr : "", port ? port : "");
	return emit(d, "PET_RDZV_ENDPOINT", endpoint,
		    "MASTER_ADDR:MASTER_PORT, where node index 0 hosts the "
		    "rendezvous store");
}

/* Workers restart after a failure (MAX_RESTARTS) or when nodes come and
 * go (MIN < MAX). Since torch 2.5 (pytorch/pytorch PR 128096) torchrun
 * shares its rendezvous TCPStore with the workers, with keys that do not
 * change per attempt, so restarted workers read the failed attempt's
 * addresses and the restart hangs (pytorch/pytorch issue 135712;
 * measured with torch 2.13 in tests/cluster/llamafactory.bats). Not
 * sharing it gives each attempt a store of its own on rank 0. */
static int emit_store_sharing(struct derivation *d, uint32_t lo, uint32_t hi)
{
	uint32_t restarts = d->req->max_restarts;

	if (!restarts && lo >= hi)
		return 0;
	return emit(d, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1",
		    "workers may restart (MAX_RESTARTS=%u, nodes %u:%u): with "
		    "the rendezvous store shared (torch >= 2.5), restarted "
		    "workers read the failed attempt's keys and hang (pytorch "
		    "issue 135712)", restarts, lo, hi);
}

/*
 * The c10d (elastic) rendezvous, for --distenv=elastic and for torchrun
 * mode when the user exported RDZV_ID.
 * - LLaMA-Factory 0.9.3-0.9.5, src/llamafactory/launcher.py: with RDZV_ID
 *   set it runs `torchrun --nnodes MIN_NNODES:MAX_NNODES (else NNODES)
 *   --nproc-per-node NPROC_PER_NODE --rdzv-id RDZV_ID --rdzv-backend c10d
 *   --rdzv-endpoint MASTER_ADDR:MASTER_PORT --max-restarts MAX_RESTARTS`,
 *   without --node_rank: c10d hands out the node ranks.
 * - torchrun (torch/distributed/run.py, argparse_util.py) reads
 *   PET_<ARG> for an argument not on its command line: the PET_ forms
 *   serve a bare `torchrun script.py`, and the two below serve both.
 * - Which node hosts the store: elastic/rendezvous/
 *   c10d_rendezvous_backend.py takes the rendezvous config's is_host,
 *   else guesses by matching the endpoint's host against this machine's
 *   names and addresses, which fails when the host name resolves to
 *   loopback (then no agent hosts it and all fail to connect):
 *   PET_RDZV_CONF=is_host=1 on node index 0, whose address MASTER_ADDR
 *   is, is_host=0 elsewhere.
 * - The workers' MASTER_ADDR: the rank 0 agent's --local-addr, else its
 *   host name (elastic/rendezvous/api.py RendezvousStoreInfo.build),
 *   loopback again: PET_LOCAL_ADDR is this node's address on the
 *   interface that reaches the master.
 * RDZV_ID is the job, the step and the requeue count
 * (SLURM_RESTART_COUNT): the same on every node of the step, new for a
 * new step or a requeued start, so that no agent joins an old round.
 */
static int emit_elastic(struct derivation *d)
{
	const struct distenv_step *s = d->step;
	const struct distenv_request *r = d->req;
	uint32_t lo = r->min_nodes ? r->min_nodes : s->nnodes;
	uint32_t hi = r->max_nodes ? r->max_nodes : s->nnodes;
	uint32_t restarts = 0;
	const char *rc = distenv_env_get(s->envp, "SLURM_RESTART_COUNT");
	char id[64], nodes[32], laddr[DISTENV_IP_TEXT_MAX];

	if (check_elastic_nodes(d, lo, hi))
		return -1;
	if (rc && distenv_parse_u32(rc, 1000000, &restarts))
		restarts = 0;
	snprintf(id, sizeof(id), "%u.%u.%u", s->job_id, s->step_id, restarts);
	if (emit(d, "RDZV_ID", id,
		 "job %u, step %u, start %u (SLURM_RESTART_COUNT): the same on "
		 "every node, new for each step and requeue",
		 s->job_id, s->step_id, restarts))
		return -1;
	if (emit_u32(d, "MIN_NNODES", lo,
		     r->min_nodes ? "--distenv-nodes" : "the step's node count") ||
	    emit_u32(d, "MAX_NNODES", hi,
		     r->max_nodes ? "--distenv-nodes" : "the step's node count") ||
	    emit_u32(d, "MAX_RESTARTS", r->max_restarts,
		     r->max_restarts_given ? "--distenv-max-restarts" :
					     "no worker restarts unless "
					     "--distenv-max-restarts"))
		return -1;
	snprintf(nodes, sizeof(nodes), "%s:%s",
		 distenv_vars_value(d->vars, "MIN_NNODES"),
		 distenv_vars_value(d->vars, "MAX_NNODES"));
	if (emit(d, "PET_NNODES", nodes,
		 "MIN_NNODES:MAX_NNODES, torchrun's --nnodes of an elastic "
		 "launch") ||
	    emit_pet(d, "NPROC_PER_NODE") ||
	    emit(d, "PET_RDZV_BACKEND", "c10d",
		 "RDZV_ID is set: LLaMA-Factory >= 0.9.3 launches with c10d "
		 "rendezvous, which hands out the node ranks (NODE_RANK is not "
		 "used)"))
		return -1;
	if (emit_rdzv_endpoint(d) || emit_pet(d, "RDZV_ID") ||
	    emit_pet(d, "MAX_RESTARTS") ||
	    emit(d, "PET_RDZV_CONF", s->node_id == 0 ? "is_host=1" : "is_host=0",
		 "%s", s->node_id == 0 ?
		 "this node hosts the store: torchrun's guess from the host "
		 "name fails when it resolves to loopback" :
		 "the store is on node index 0"))
		return -1;
	if (local_addr(d, laddr, sizeof(laddr)) == 0 &&
	    emit(d, "PET_LOCAL_ADDR", laddr,
		 "this node's address on %s: rank 0's agent hands its own to "
		 "the workers as MASTER_ADDR, else its host name's (loopback "
		 "on Debian's /etc/hosts)", d->master.ifname))
		return -1;
	return emit_store_sharing(d, lo, hi);
}

/*
 * LOCAL_RANK, and what one GPU per task does to it. Torch scripts
 * commonly call torch.cuda.set_device(LOCAL_RANK), which needs LOCAL_RANK
 * to be a device index among the GPUs CUDA shows the task. With
 * --gpus-per-task=1 each task sees one (CUDA_VISIBLE_DEVICES), so every
 * local rank but 0 fails there with "invalid device ordinal"; a script
 * that uses device 0 (or LOCAL_RANK modulo the visible count) runs. Only
 * possibly wrong, so a note in the reason for --distenv-show, not a
 * failure; the same note on every task of the node, since --distenv-show
 * prints the node's first task.
 */
static int emit_local_rank(struct derivation *d)
{
	const struct distenv_gpus *g = task_gpus(d);
	const struct distenv_step *s = d->step;
	uint32_t want = g->node_count > g->task_count ? g->node_count
						      : s->local_ntasks;
	char reason[640];

	snprintf(reason, sizeof(reason),
		 "SLURM_LOCALID: this task's index on the node");
	if (g->task_count && s->local_ntasks > g->task_count)
		snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason),
			 "; note: each task here sees %u GPU%s "
			 "(CUDA_VISIBLE_DEVICES=%s in this one), so for LOCAL_RANK "
			 "%u-%u torch.cuda.set_device(LOCAL_RANK) fails with "
			 "\"invalid device ordinal\": ask for --gpus-per-node=%u "
			 "instead of --gpus-per-task, so that every task sees the "
			 "node's GPUs, or use device LOCAL_RANK %% %u",
			 g->task_count, g->task_count > 1 ? "s" : "",
			 g->task_list, g->task_count, s->local_ntasks - 1, want,
			 g->task_count);
	return emit_u32(d, "LOCAL_RANK", s->localid, reason);
}

static int derive_tasks(struct derivation *d)
{
	const struct distenv_step *s = d->step;

	if (emit_u32(d, "RANK", s->procid, "SLURM_PROCID: this task's rank") ||
	    emit_u32(d, "WORLD_SIZE", s->ntasks,
		     "SLURM_STEP_NUM_TASKS: tasks in the step") ||
	    emit_local_rank(d) ||
	    emit_u32(d, "LOCAL_WORLD_SIZE", s->local_ntasks,
		     "tasks of the step on this node") ||
	    emit_u32(d, "NODE_RANK", s->node_id,
		     "SLURM_NODEID: this node's index in the step") ||
	    emit_u32(d, "NNODES", s->nnodes,
		     "SLURM_STEP_NUM_NODES: nodes in the step"))
		return -1;
	if (emit_master_addr(d) || emit_master_port(d))
		return -1;
	if (emit_ifnames(d))
		return -1;
	return emit_hca(d);
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
		if (add_var(d, site->vars[i].name, site->vars[i].value, reason))
			return -1;
	return 0;
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
	d.elastic = d.mode == DISTENV_MODE_ELASTIC ||
		    (d.mode == DISTENV_MODE_TORCHRUN &&
		     distenv_env_user_value(step->envp, "RDZV_ID"));
	d.multi_node = step->nnodes > 1;
	if (d.mode == DISTENV_MODE_OFF)
		return 0;
	if (distenv_site_check_request(site, req, err))
		return -1;
	if (check_torchrun_layout(&d) ||
	    distenv_user_check(d.mode, step, net, err) || choose_master(&d) ||
	    topo_prepare(&d))
		return -1;
	if (step->kind == DISTENV_STEP_BATCH)
		rc = derive_batch(&d);
	else if (d.mode == DISTENV_MODE_TORCHRUN ||
		 d.mode == DISTENV_MODE_ELASTIC)
		rc = derive_torchrun(&d);
	else
		rc = derive_tasks(&d);
	if (rc == 0)
		rc = emit_site_vars(&d);
	if (rc == 0)
		rc = emit_marker(&d);
	free(d.topo);
	if (rc)
		distenv_vars_free(vars);
	return rc;
}
