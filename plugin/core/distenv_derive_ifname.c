/*
 * distenv_derive_ifname.c: NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME,
 * the interfaces NCCL's and Gloo's sockets use (NCCL env docs,
 * NCCL_SOCKET_IFNAME; pytorch ProcessGroupGloo.cpp), and the checks of
 * the user's own: the syntax each reads, a match on this node, and in a
 * multi-node step a way to the master (docs/contracts.md 4).
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "distenv_derive_int.h"
#include "distenv_env.h"
#include "distenv_ifspec.h"
#include "distenv_ifuse.h"

static int fail_no_iface(struct derivation *d, const char *what,
			 const char *value)
{
	char where[DISTENV_HOST_MAX + 64], names[512];

	snprintf(where, sizeof(where), "node %s: %s", d->step->node_name, what);
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
		snprintf(addr, sizeof(addr), "%.*s", (int) strcspn(p, ",%/"),
			 p);
		snprintf(fix, sizeof(fix),
			 "name the interface that holds the address "
			 "(`ip -br addr` lists them), or unset %s and let "
			 "distenv derive it",
			 name);
		for (i = 0; d->net && distenv_ip_parse(addr, &ip) == 0 &&
			    i < d->net->n_ifaces;
		     i++)
			if (distenv_ip_equal(&ip, &d->net->ifaces[i].ip))
				snprintf(
					fix, sizeof(fix),
					"export %s=%s%s (the interface holding "
					"%s here), or unset it and let distenv "
					"derive it",
					name, exact, d->net->ifaces[i].name,
					addr);
		return distenv_error_set(
			d->err, exported_where(d, name, where, sizeof(where)),
			fix,
			"you exported %s=%s: '%.*s' is an IP address, not an "
			"interface name (%s)",
			name, value, (int) len, p, consequence);
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
int derive_check_user_ifname_syntax(struct derivation *d)
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
			gloo, gloo[0], (int) strcspn(gloo, ","), gloo,
			(int) strcspn(gloo, ","), gloo);
	return check_no_address(d, "GLOO_SOCKET_IFNAME", gloo, "",
				"Gloo fails at init with \"Unable to find "
				"address for: ...\"");
}

/* A user-exported NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME is kept, but
 * one that matches nothing stops NCCL at init ("no socket interface
 * found"; docs/contracts.md 4); say so before launch. */
int derive_check_user_ifnames(struct derivation *d)
{
	const char *const *envp = d->step->envp;
	const char *nccl = distenv_env_user_value(envp, "NCCL_SOCKET_IFNAME");
	const char *gloo = distenv_env_user_value(envp, "GLOO_SOCKET_IFNAME");
	struct distenv_ifspec spec;

	if (nccl) {
		if (distenv_ifspec_parse(nccl, "NCCL_SOCKET_IFNAME (exported)",
					 &spec, d->err))
			return -1;
		if (!distenv_ifspec_any(&spec, d->net->ifaces, d->net->n_ifaces,
					d->multi_node, NULL))
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
static int fail_unreaching(struct derivation *d, const char *var, int exported,
			   const char *value, const char *name,
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
		snprintf(via, sizeof(via),
			 "NCCL takes %s's address %s from it "
			 "(the first address it selects), and that",
			 name, distenv_ip_format(&nccl->ip, ip, sizeof(ip)));
	else if (nccl && strcmp(value + (value[0] == '='), name) != 0)
		snprintf(via, sizeof(via),
			 "NCCL takes %s from it (the first "
			 "interface it selects), and %s",
			 name, name);
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

/* Why interface name cannot be used (distenv_iface_usable), for
 * messages: down, the address NCCL takes from it, or no address of the
 * master's family. */
static void unusable_why(const struct derivation *d, const char *name,
			 char *buf, size_t len)
{
	const struct distenv_iface *f =
		distenv_iface_first_addr(d->net->ifaces, d->net->n_ifaces,
					 name);
	char ip[DISTENV_IP_TEXT_MAX];

	if (f && !f->up) {
		snprintf(buf, len, "%s is down", name);
		return;
	}
	if (f && !distenv_ip_routable(&f->ip)) {
		snprintf(buf, len, "NCCL takes %s's address %s, which is %s",
			 name, distenv_ip_format(&f->ip, ip, sizeof(ip)),
			 distenv_ip_is_loopback(&f->ip) ?
				 "loopback" :
				 "IPv6 link-local (it needs the link's scope "
				 "and crosses no router)");
		return;
	}
	snprintf(buf, len,
		 "%s holds no usable %s address, the master %s's "
		 "family",
		 name, d->master.ip.family == AF_INET6 ? "IPv6" : "IPv4",
		 d->master.addr);
}

/*
 * Every interface of an NCCL list, not only the first: NCCL's socket
 * transport opens a device on each interface the list selects (nccl
 * src/transport/net_socket.cc, ncclNetSocketInit, findInterfaces with
 * up to MAX_IFS), each advertising its first address, while its
 * bootstrap takes the first only (checked to reach the master,
 * derive_check_user_ifnames_reach). A later interface with IPv6
 * link-local addresses only (NVIDIA/nccl issue 1515), down, or on lo,
 * gives the other nodes an address they cannot connect to. Each one
 * after the first must be usable as distenv requires of the interfaces
 * it names itself (distenv_iface_usable, the master's family); not that
 * it reach the master's subnet: a second network that joins the nodes
 * is what such lists are for. A finding warns (--distenv-check=warn),
 * fails the step (strict), or is off: with InfiniBand NCCL does not use
 * the socket devices for data. var: the variable or option, for where;
 * exported: the user's export rather than the option.
 */
static int check_nccl_rest(struct derivation *d, const char *var, int exported,
			   const char *value, const struct distenv_ifspec *spec,
			   const struct distenv_iface *taken)
{
	const struct distenv_iface *ifs = d->net->ifaces;
	size_t n = d->net->n_ifaces, i, k;
	char why[256], good[DISTENV_IFSPEC_TEXT_MAX], fix[512];
	char where[DISTENV_HOST_MAX + 64];
	const char *bad = NULL;
	struct distenv_error finding;

	if (d->req->check == DISTENV_CHECK_OFF || !taken)
		return 0;
	snprintf(good, sizeof(good), "=%s", taken->name);
	for (i = 0; i < n; i++) {
		int seen = strcmp(ifs[i].name, taken->name) == 0;

		for (k = 0; k < i && !seen; k++)
			seen = strcmp(ifs[k].name, ifs[i].name) == 0;
		if (seen || !distenv_ifspec_selects(spec, ifs[i].name) ||
		    !distenv_iface_first_addr(ifs, n, ifs[i].name))
			continue;
		if (distenv_iface_usable(ifs, n, ifs[i].name,
					 d->master.ip.family)) {
			if (strlen(good) + strlen(ifs[i].name) + 2 <
			    sizeof(good))
				strcat(strcat(good, ","), ifs[i].name);
		} else if (!bad) {
			bad = ifs[i].name;
			unusable_why(d, bad, why, sizeof(why));
		}
	}
	if (!bad)
		return 0;
	snprintf(where, sizeof(where), "node %s: %s%s", d->step->node_name, var,
		 exported ? " (exported)" : "");
	snprintf(fix, sizeof(fix),
		 "%s %s=%s (the interfaces of the list that other nodes can "
		 "reach), or %s and let distenv derive it",
		 exported ? "export" : "give", var, good,
		 exported ? "unset it" : "leave it out");
	distenv_error_clear(&finding);
	distenv_error_set(&finding, where, fix,
			  "you %s %s=%s, which also selects %s, and %s: NCCL's "
			  "socket transport uses every interface the list "
			  "selects, not only the first, and other nodes "
			  "cannot connect to that one",
			  exported ? "exported" : "gave", var, value, bad, why);
	if (d->req->check == DISTENV_CHECK_STRICT) {
		*d->err = finding;
		return -1;
	}
	distenv_vars_warn(d->vars, &finding);
	return 0;
}

int derive_check_user_ifnames_reach(struct derivation *d)
{
	const char *const *envp = d->step->envp;
	const char *nccl = distenv_env_user_value(envp, "NCCL_SOCKET_IFNAME");
	const char *gloo = distenv_env_user_value(envp, "GLOO_SOCKET_IFNAME");
	const char *fix = "unset it, or name an interface in the master's "
			  "subnet";
	char taken[DISTENV_IFNAME_MAX];
	const struct distenv_iface *f = NULL;
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
	if (nccl && f &&
	    check_nccl_rest(d, "NCCL_SOCKET_IFNAME", 1, nccl, &spec, f))
		return -1;
	for (p = gloo; p && *p; p += len + (p[len] == ',')) {
		len = strcspn(p, ",");
		snprintf(taken, sizeof(taken), "%.*s", (int) len, p);
		if (!distenv_master_reaches(d->net, &d->master, taken))
			return fail_unreaching(d, "GLOO_SOCKET_IFNAME", 1, gloo,
					       taken, NULL, fix);
	}
	return 0;
}

/*
 * Among the interfaces that reach the master's address (the chosen one,
 * and the others up in its subnet that the site's interfaces: list
 * allows), the one closest to the task's GPUs (distenv_topo_prefer); the
 * chosen one wins ties, and names the topology does not list count as
 * virtual. Rewrites nccl when another is closer. Returns NCCL's reason.
 */
static const char *prefer_close_ifname(struct derivation *d, char *nccl,
				       size_t len, const char *why, char *out,
				       size_t out_len)
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
		    (have_allowed &&
		     !distenv_ifspec_selects(&allowed, f->name)))
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
			 "the GPUs)",
			 pick->reason, d->master.addr, d->master.ifname,
			 names[best]);
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

/* --distenv-ifname: NCCL takes the user's list as given; Gloo wants
 * plain names. In a multi-node step the interface NCCL takes must reach
 * the master. NCCL (NCCL_SIZE bytes), GLOO (DISTENV_IFNAME_MAX bytes) and
 * WHY (WHY_SIZE bytes) hold the reaching interface on entry. */
static int ifnames_from_option(struct derivation *d, char *nccl,
			       size_t nccl_size, char *gloo, char *why,
			       size_t why_size, const char **nccl_reason)
{
	const struct distenv_iface *taken;
	char fix[256];
	struct distenv_ifspec spec;

	if (distenv_ifspec_parse(d->req->ifname, "--distenv-ifname", &spec,
				 d->err))
		return -1;
	if (!distenv_ifspec_any(&spec, d->net->ifaces, d->net->n_ifaces,
				d->multi_node, gloo))
		return fail_no_iface(d, "--distenv-ifname", d->req->ifname);
	taken = distenv_ifspec_nccl_takes(&spec, d->net->ifaces,
					  d->net->n_ifaces);
	if (d->multi_node && taken &&
	    !distenv_master_reaches_addr(d->net, &d->master, taken)) {
		snprintf(fix, sizeof(fix),
			 "leave --distenv-ifname out (distenv then picks "
			 "%s), or name an interface in the master's "
			 "subnet",
			 d->master.ifname);
		return fail_unreaching(d, "--distenv-ifname", 0, d->req->ifname,
				       taken->name, taken, fix);
	}
	if (d->multi_node && taken &&
	    check_nccl_rest(d, "--distenv-ifname", 0, d->req->ifname, &spec,
			    taken))
		return -1;
	snprintf(nccl, nccl_size, "%s", d->req->ifname);
	*nccl_reason = "--distenv-ifname (NCCL's list syntax, as given)";
	/* Gloo wants plain names: the reaching interface when the
	 * user's list allows it, else the one NCCL takes (it reaches,
	 * in a multi-node step), else the list's first match. */
	if (distenv_ifspec_selects(&spec, d->master.ifname)) {
		snprintf(gloo, DISTENV_IFNAME_MAX, "%s", d->master.ifname);
	} else if (d->multi_node && taken) {
		snprintf(gloo, DISTENV_IFNAME_MAX, "%s", taken->name);
		snprintf(why, why_size,
			 "%s, the interface NCCL takes from "
			 "--distenv-ifname=%s, reaches the master %s",
			 taken->name, d->req->ifname, d->master.addr);
	} else {
		snprintf(why, why_size,
			 "first interface matching --distenv-ifname=%s "
			 "(%s would reach the master)",
			 d->req->ifname, d->master.ifname);
	}
	return 0;
}

int derive_emit_ifnames(struct derivation *d)
{
	char nccl[DISTENV_IFSPEC_TEXT_MAX + 2];
	char gloo[DISTENV_IFNAME_MAX];
	const char *nccl_reason, *gloo_reason;
	char why[512], topo_why[768];

	if (!d->have_master) {
		/* Only reached when the user set all three. */
		const char *const *envp = d->step->envp;

		if (derive_emit(d, "NCCL_SOCKET_IFNAME",
				distenv_env_user_value(envp,
						       "NCCL_SOCKET_IFNAME"),
				"-"))
			return -1;
		return derive_emit(d, "GLOO_SOCKET_IFNAME",
				   distenv_env_user_value(envp,
							  "GLOO_SOCKET_IFNAME"),
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
		if (ifnames_from_option(d, nccl, sizeof(nccl), gloo, why,
					sizeof(why), &nccl_reason))
			return -1;
	} else if (d->topo && d->topo->n_gpus) {
		/* NCCL's sockets carry GPU data when there is no IB; Gloo's
		 * carry CPU tensors and keep the reaching interface. */
		nccl_reason = prefer_close_ifname(d, nccl, sizeof(nccl), why,
						  topo_why, sizeof(topo_why));
	}
	/* "=" makes NCCL match the exact name: without it eth1 also
	 * matches eth10 (NCCL env docs, NCCL_SOCKET_IFNAME). */
	if (derive_emit(d, "NCCL_SOCKET_IFNAME", nccl, "%s", nccl_reason))
		return -1;
	return derive_emit(d, "GLOO_SOCKET_IFNAME", gloo, "%s", gloo_reason);
}
