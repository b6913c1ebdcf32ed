/* distenv_master.c: MASTER_ADDR and the interface that reaches it. */
#include "distenv_master.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "distenv_ifuse.h"

/* The interface entry holding ip exactly, or NULL. */
static const struct distenv_iface *iface_holding(const struct distenv_net *net,
						 const struct distenv_ip *ip)
{
	size_t i;

	for (i = 0; i < net->n_ifaces; i++)
		if (distenv_ip_equal(&net->ifaces[i].ip, ip))
			return &net->ifaces[i];
	return NULL;
}

/* Whether the site's interfaces: list lets name carry MASTER_ADDR;
 * *filtered counts the refusals, for the error message. exempt: the
 * master address is loopback (a single-node step), where no other
 * interface is wanted. */
static int site_allows(const struct distenv_master_prefs *prefs,
		       const char *name, int exempt, int *filtered)
{
	if (!prefs || !prefs->ifaces || exempt)
		return 1;
	if (distenv_ifspec_selects(prefs->ifaces, name))
		return 1;
	(*filtered)++;
	return 0;
}

/* Whether interface name can carry traffic to the master at ip: in a
 * multi-node step by the addresses NCCL and Gloo would take from it
 * (distenv_iface_usable), in a single-node step any interface that is up
 * (nothing leaves the node). */
static int can_carry(const struct distenv_net *net, const char *name,
		     const struct distenv_ip *ip, int multi_node)
{
	size_t i;

	if (multi_node)
		return distenv_iface_usable(net->ifaces, net->n_ifaces, name,
					    ip->family);
	for (i = 0; i < net->n_ifaces; i++)
		if (strcmp(net->ifaces[i].name, name) == 0 && net->ifaces[i].up)
			return 1;
	return 0;
}

/* The interfaces, each once in getifaddrs order, with an up,
 * non-loopback address whose subnet holds ip, that can carry it and that
 * the site allows; returns how many (at most max) went into names. */
static size_t subnet_ifaces(const struct distenv_net *net,
			    const struct distenv_ip *ip, int multi_node,
			    const struct distenv_master_prefs *prefs,
			    int *filtered, const char **names, size_t max)
{
	size_t i, k, n = 0;

	for (i = 0; i < net->n_ifaces && n < max; i++) {
		const struct distenv_iface *f = &net->ifaces[i];
		int seen = 0;

		for (k = 0; k < n; k++)
			seen |= strcmp(names[k], f->name) == 0;
		if (seen || !f->up || distenv_ip_is_loopback(&f->ip) ||
		    !distenv_ip_in_subnet(ip, f) ||
		    !can_carry(net, f->name, ip, multi_node) ||
		    !site_allows(prefs, f->name, 0, filtered))
			continue;
		names[n++] = f->name;
	}
	return n;
}

/* The interface the kernel's route to a leaves from: the first holder of
 * the route's source address that can carry it (the source can be on an
 * interface other than the one the packets leave through, e.g. lo's
 * /32), else, with the source unknown, the route's interface as the
 * adapter named it. NULL: none. */
static const char *route_iface(const struct distenv_net *net,
			       const struct distenv_addr *a, int multi_node,
			       const struct distenv_master_prefs *prefs,
			       int *filtered)
{
	int exempt = distenv_ip_is_loopback(&a->ip);
	size_t i;

	if (!a->route_src.family)
		return a->route_ifname[0] &&
				       can_carry(net, a->route_ifname, &a->ip,
						 multi_node) &&
				       site_allows(prefs, a->route_ifname,
						   exempt, filtered) ?
			       a->route_ifname :
			       NULL;
	for (i = 0; i < net->n_ifaces; i++) {
		const struct distenv_iface *f = &net->ifaces[i];

		if (distenv_ip_equal(&f->ip, &a->route_src) &&
		    can_carry(net, f->name, &a->ip, multi_node) &&
		    site_allows(prefs, f->name, exempt, filtered))
			return f->name;
	}
	return NULL;
}

/* When the address that reaches the master (ip, held by this node) sits
 * on an interface NCCL and Gloo cannot use, e.g. lo: keep the first such
 * finding for the error. */
static void note_stuck(const struct distenv_net *net,
		       const struct distenv_ip *ip, int own,
		       struct distenv_master_choice *out)
{
	const struct distenv_iface *f = iface_holding(net, ip);

	if (out->stuck_if[0] || !f)
		return;
	snprintf(out->stuck_if, sizeof(out->stuck_if), "%s", f->name);
	out->stuck_ip = *ip;
	out->stuck_master = out->ip;
	out->stuck_own = own;
}

/* Interface for address a; fills out->ifname and its reason, and
 * out->peers when several interfaces are in its subnet. */
static int pick_iface(const struct distenv_net *net,
		      const struct distenv_addr *a, int multi_node,
		      int on_master, const struct distenv_master_prefs *prefs,
		      int *filtered, struct distenv_master_choice *out)
{
	const struct distenv_iface *f = iface_holding(net, &a->ip);
	const char *names[DISTENV_MASTER_PEERS_MAX];
	const char *route = route_iface(net, a, multi_node, prefs, filtered);
	const char *pick = NULL;
	size_t n = subnet_ifaces(net, &a->ip, multi_node, prefs, filtered,
				 names, DISTENV_MASTER_PEERS_MAX),
	       k;

	out->n_peers = 0;
	if (f && can_carry(net, f->name, &a->ip, multi_node) &&
	    site_allows(prefs, f->name, distenv_ip_is_loopback(&a->ip),
			filtered)) {
		pick = f->name;
		snprintf(out->ifname_reason, sizeof(out->ifname_reason),
			 "%s holds the master address %s%s", f->name, out->addr,
			 on_master ? " (this is the master node)" : "");
	} else if (n) {
		/* Several interfaces in the subnet: the kernel sends to it
		 * through one route only, so take the one it takes. */
		pick = names[0];
		for (k = 0; route && k < n; k++)
			if (strcmp(names[k], route) == 0)
				pick = names[k];
		if (n == 1)
			snprintf(out->ifname_reason, sizeof(out->ifname_reason),
				 "the subnet of %s holds the master address %s",
				 pick, out->addr);
		else
			snprintf(
				out->ifname_reason, sizeof(out->ifname_reason),
				"%s, of the %zu interfaces in the subnet of the "
				"master address %s: %s",
				pick, n, out->addr,
				route && strcmp(route, pick) == 0 ?
					"the kernel routes it through this one" :
					"the first in getifaddrs order");
	} else if (route) {
		pick = route;
		snprintf(out->ifname_reason, sizeof(out->ifname_reason),
			 "the kernel routes the master address %s through %s",
			 out->addr, route);
	} else {
		/* Stuck only when the holder cannot carry the traffic by its
		 * addresses (lo, link-local only); one a site or user list
		 * left out gets that list's own error. */
		const struct distenv_iface *src =
			a->route_src.family ?
				iface_holding(net, &a->route_src) :
				NULL;

		if (f && multi_node)
			if (!can_carry(net, f->name, &a->ip, multi_node))
				note_stuck(net, &a->ip, 1, out);
		if (!f && src && multi_node &&
		    !can_carry(net, src->name, &a->ip, multi_node))
			note_stuck(net, &a->route_src, 0, out);
		return -1;
	}
	snprintf(out->ifname, sizeof(out->ifname), "%s", pick);
	if (n > 1) {
		out->n_peers = n;
		for (k = 0; k < n; k++)
			snprintf(out->peers[k], sizeof(out->peers[k]), "%s",
				 names[k]);
		snprintf(out->route_ifname, sizeof(out->route_ifname), "%s",
			 route ? route : "");
	}
	return 0;
}

/* Address a goes in family pass fpass: with a preference, pass 0 takes
 * that family, pass 1 the rest; without one, pass 0 takes everything. */
static int in_family_pass(const struct distenv_master_prefs *prefs,
			  const struct distenv_ip *ip, int fpass)
{
	int want;

	if (!prefs || prefs->family == DISTENV_FAMILY_ANY)
		return fpass == 0;
	want = prefs->family == DISTENV_FAMILY_IPV4 ? AF_INET : AF_INET6;
	return (ip->family == want) == (fpass == 0);
}

/* "eno1 (192.168.0.21/20) and enp37s0f0 (192.168.1.21/20)": each peer
 * of m with its address in the subnet of m's address. */
static void peer_list(const struct distenv_net *net,
		      const struct distenv_master_choice *m, char *buf,
		      size_t len)
{
	size_t used = 0, k, i;

	buf[0] = '\0';
	for (k = 0; k < m->n_peers; k++) {
		char ip[DISTENV_IP_TEXT_MAX] = "?";
		unsigned prefix = 0;
		int w;

		for (i = 0; i < net->n_ifaces; i++)
			if (strcmp(net->ifaces[i].name, m->peers[k]) == 0 &&
			    distenv_ip_in_subnet(&m->ip, &net->ifaces[i])) {
				distenv_ip_format(&net->ifaces[i].ip, ip,
						  sizeof(ip));
				prefix = net->ifaces[i].prefix_len;
				break;
			}
		w = snprintf(buf + used, len - used, "%s%s (%s/%u)",
			     k == 0 ? "" :
				      (k + 1 == m->n_peers ? " and " : ", "),
			     m->peers[k], ip, prefix);
		if (w < 0 || (size_t) w >= len - used)
			return;
		used += (size_t) w;
	}
}

/* The warning for several interfaces in the master's subnet (see the
 * header): which ones, which the kernel takes, what distenv exports. */
static void shared_subnet_warning(const struct distenv_net *net,
				  const char *node_name,
				  struct distenv_master_choice *m)
{
	const struct distenv_iface *held = iface_holding(net, &m->ip);
	char where[128], peers[DISTENV_MASTER_PEERS_MAX * 64], how[160];

	peer_list(net, m, peers, sizeof(peers));
	if (held && strcmp(held->name, m->ifname) == 0)
		snprintf(how, sizeof(how), "this node holds it on %s",
			 m->ifname);
	else if (strcmp(m->route_ifname, m->ifname) == 0)
		snprintf(how, sizeof(how), "the kernel routes it through %s",
			 m->ifname);
	else
		snprintf(how, sizeof(how),
			 "the kernel's route to it names "
			 "none of them, and %s comes first",
			 m->ifname);
	snprintf(where, sizeof(where),
		 "node %s: NCCL_SOCKET_IFNAME, "
		 "GLOO_SOCKET_IFNAME",
		 node_name);
	distenv_error_set(
		&m->shared_subnet, where,
		"put the interfaces on distinct subnets, give the one that "
		"should carry the traffic the lower route metric (ip route "
		"... metric N), or name it with --distenv-ifname=NAME",
		"%s are %s in the subnet of the master address %s: %s, so "
		"distenv exports %s; Linux sends all traffic for that subnet "
		"by one of their routes, whichever address a socket is bound "
		"to, and which route comes first can differ from node to node",
		peers, m->n_peers == 2 ? "both" : "all", m->addr, how,
		m->ifname);
}

/* The names of the interfaces of net that hold no address of family
 * another node can reach ("eth0, eth1"), skip left out. Returns buf. */
static const char *unroutable_ifaces(const struct distenv_net *net, int family,
				     const char *skip, char *buf, size_t len)
{
	size_t used = 0, i, j;

	buf[0] = '\0';
	for (i = 0; i < net->n_ifaces; i++) {
		const char *name = net->ifaces[i].name;
		int seen = strcmp(name, skip) == 0, w;

		for (j = 0; j < i && !seen; j++)
			seen = strcmp(net->ifaces[j].name, name) == 0;
		for (j = 0; j < net->n_ifaces && !seen; j++)
			seen = strcmp(net->ifaces[j].name, name) == 0 &&
			       net->ifaces[j].ip.family == family &&
			       distenv_ip_routable(&net->ifaces[j].ip);
		if (seen)
			continue;
		w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
			     name);
		if (w < 0 || (size_t) w >= len - used)
			break;
		used += (size_t) w;
	}
	return buf;
}

/* The address reaching the master is only on an interface NCCL and Gloo
 * cannot use (out->stuck_*, e.g. lo's /32 on a BGP-unnumbered node). */
static int fail_stuck(const struct distenv_net *net, const char *where,
		      const struct distenv_master_choice *out,
		      struct distenv_error *err)
{
	const struct distenv_iface *first =
		distenv_iface_first_addr(net->ifaces, net->n_ifaces,
					 out->stuck_if);
	int family = out->stuck_master.family;
	const char *fam = family == AF_INET ? "IPv4" : "IPv6";
	char master[DISTENV_IP_TEXT_MAX], ip[DISTENV_IP_TEXT_MAX];
	char taken[DISTENV_IP_TEXT_MAX], others[256], clause[320] = "";
	char fix[DISTENV_ERROR_TEXT];

	distenv_ip_format(&out->stuck_master, master, sizeof(master));
	distenv_ip_format(&out->stuck_ip, ip, sizeof(ip));
	if (first)
		distenv_ip_format(&first->ip, taken, sizeof(taken));
	else
		snprintf(taken, sizeof(taken), "none");
	if (unroutable_ifaces(net, family, out->stuck_if, others,
			      sizeof(others))[0])
		snprintf(clause, sizeof(clause),
			 ", and %s hold%s no usable "
			 "%s address",
			 others, strchr(others, ',') ? "" : "s", fam);
	snprintf(fix, sizeof(fix),
		 "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME cannot work on "
		 "this node as it is: give the interface the route to %s "
		 "leaves through (ip route get %s names it) the address %s as "
		 "well (ip addr add %s/%u dev IFACE); distenv then exports "
		 "that interface",
		 master, master, ip, ip, family == AF_INET ? 32 : 128);
	return distenv_error_set(
		err, where, fix,
		"the only address of this node that reaches the master %s is "
		"%s%s, and %s holds it: NCCL and Gloo take %s's first address, "
		"%s, which other nodes cannot reach%s",
		master, ip,
		out->stuck_own ? " itself (this node is the master)" :
				 " (the kernel's source address for it)",
		out->stuck_if, out->stuck_if, taken, clause);
}

int distenv_master_choose(const struct distenv_net *net, const char *node_name,
			  int multi_node, int on_master,
			  struct distenv_master_choice *out,
			  struct distenv_error *err)
{
	return distenv_master_choose_prefs(net, NULL, node_name, multi_node,
					   on_master, out, err);
}

/* The reason of the address taken: the name, what it resolves to here,
 * the loopback address passed over, and the site's family order. */
static void set_addr_reason(const char *host, const char *skipped,
			    const struct distenv_master_prefs *prefs,
			    struct distenv_master_choice *out)
{
	snprintf(out->addr_reason, sizeof(out->addr_reason),
		 "%s resolves to %s on this node%s%s%s%s", host, out->addr,
		 skipped[0] ? " (loopback " : "", skipped,
		 skipped[0] ? " skipped)" : "",
		 prefs && prefs->family != DISTENV_FAMILY_ANY ?
			 (prefs->family == DISTENV_FAMILY_IPV4 ?
				  " (site policy: IPv4 first)" :
				  " (site policy: IPv6 first)") :
			 "");
}

/* Why no address of the master is usable here, each case with its fix:
 * the name resolves only to loopback (multi-node step), to nothing, only
 * through an interface NCCL cannot use, only through interfaces the site
 * leaves out, or through none at all. */
static int fail_no_master(const struct distenv_net *net,
			  const struct distenv_master_prefs *prefs,
			  const char *where, const char *skipped,
			  int multi_node, int filtered,
			  const struct distenv_master_choice *out,
			  struct distenv_error *err)
{
	char names[256];
	size_t i;

	distenv_iface_names(net->ifaces, net->n_ifaces, names, sizeof(names));
	if (skipped[0] && multi_node) {
		int only_loop = 1;

		for (i = 0; i < net->n_addrs; i++)
			if (!distenv_ip_is_loopback(&net->addrs[i].ip))
				only_loop = 0;
		if (only_loop)
			return distenv_error_set(
				err, where,
				"map the name to the node's cluster address in "
				"/etc/hosts or DNS (Debian's installer writes "
				"'127.0.1.1 <hostname>'), or export "
				"MASTER_ADDR=<cluster address>",
				"the name resolves only to the loopback address "
				"%s, which other nodes cannot reach",
				skipped);
	}
	if (net->n_addrs == 0)
		return distenv_error_set(
			err, where, "check /etc/hosts and DNS on this node",
			"the name resolves to no address");
	if (out->stuck_if[0])
		return fail_stuck(net, where, out, err);
	if (filtered)
		return distenv_error_set(
			err, where,
			"ask the admin to check interfaces: in the site policy "
			"file, or export MASTER_ADDR=<address on an allowed "
			"network>",
			"every interface of this node that reaches %s is left "
			"out by the site policy (interfaces: %s; this node has: "
			"%s)",
			out->addr[0] ? out->addr : "the master",
			prefs && prefs->ifaces_text ? prefs->ifaces_text : "?",
			names);
	return distenv_error_set(
		err, where,
		"give the interface with --distenv-ifname=NAME, or check the "
		"node's routes (ip route)",
		"no interface of this node reaches %s (interfaces: %s)",
		out->addr[0] ? out->addr : "any of its addresses", names);
}

int distenv_master_choose_prefs(const struct distenv_net *net,
				const struct distenv_master_prefs *prefs,
				const char *node_name, int multi_node,
				int on_master,
				struct distenv_master_choice *out,
				struct distenv_error *err)
{
	const char *host = net->resolved_host ? net->resolved_host : "?";
	char where[256], skipped[DISTENV_IP_TEXT_MAX] = "";
	int pass, filtered = 0;

	memset(out, 0, sizeof(*out));
	snprintf(where, sizeof(where), "node %s: master host %s", node_name,
		 host);
	if (net->resolve_error)
		return distenv_error_set(
			err, where,
			"add the master's cluster address to /etc/hosts or "
			"DNS on this node, or export MASTER_ADDR=<address>",
			"cannot resolve the name: %s", net->resolve_error);

	/* Pass 0 takes only non-loopback addresses; pass 1, allowed only in
	 * a single-node step, takes loopback ones as well. Within a pass,
	 * the addresses are walked twice (k / n is the family pass). */
	for (pass = 0; pass < (multi_node ? 1 : 2); pass++) {
		size_t k, n = net->n_addrs;

		for (k = 0; k < 2 * n; k++) {
			const struct distenv_addr *a = &net->addrs[k % n];
			int loop = distenv_ip_is_loopback(&a->ip);

			if (!in_family_pass(prefs, &a->ip, (int) (k / n)) ||
			    distenv_ip_is_link_local(&a->ip))
				continue;
			if (loop && pass == 0) {
				if (!skipped[0])
					distenv_ip_format(&a->ip, skipped,
							  sizeof(skipped));
				continue;
			}
			out->ip = a->ip;
			distenv_ip_format(&a->ip, out->addr, sizeof(out->addr));
			if (pick_iface(net, a, multi_node, on_master, prefs,
				       &filtered, out))
				continue;
			set_addr_reason(host, skipped, prefs, out);
			if (multi_node && out->n_peers > 1)
				shared_subnet_warning(net, node_name, out);
			return 0;
		}
	}
	return fail_no_master(net, prefs, where, skipped, multi_node, filtered,
			      out, err);
}

int distenv_master_reaches_addr(const struct distenv_net *net,
				const struct distenv_master_choice *m,
				const struct distenv_iface *f)
{
	size_t k;

	if (!f->up || distenv_ip_is_loopback(&f->ip) ||
	    distenv_ip_is_link_local(&f->ip))
		return 0;
	if (strcmp(f->name, m->ifname) == 0 && f->ip.family == m->ip.family)
		return 1;
	if (distenv_ip_in_subnet(&m->ip, f))
		return 1;
	for (k = 0; k < net->n_addrs; k++) {
		const struct distenv_ip *a = &net->addrs[k].ip;

		if (!distenv_ip_is_loopback(a) &&
		    !distenv_ip_is_link_local(a) && distenv_ip_in_subnet(a, f))
			return 1;
	}
	return 0;
}

int distenv_master_reaches(const struct distenv_net *net,
			   const struct distenv_master_choice *m,
			   const char *name)
{
	size_t i;

	for (i = 0; i < net->n_ifaces; i++)
		if (strcmp(net->ifaces[i].name, name) == 0 &&
		    distenv_master_reaches_addr(net, m, &net->ifaces[i]))
			return 1;
	return 0;
}

const char *distenv_master_reaching(const struct distenv_net *net,
				    const struct distenv_master_choice *m,
				    const char *skip, char *buf, size_t len)
{
	size_t used, i, j;

	snprintf(buf, len, "%s", m->ifname);
	used = strlen(buf);
	for (i = 0; i < net->n_ifaces; i++) {
		const char *name = net->ifaces[i].name;
		int seen = strcmp(name, m->ifname) == 0 ||
			   (skip && strcmp(name, skip) == 0);
		int w;

		for (j = 0; j < i && !seen; j++)
			seen = strcmp(net->ifaces[j].name, name) == 0;
		if (seen || !distenv_master_reaches(net, m, name))
			continue;
		w = snprintf(buf + used, len - used, ", %s", name);
		if (w < 0 || (size_t) w >= len - used)
			break;
		used += (size_t) w;
	}
	return buf;
}

static int name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '-';
}

int distenv_master_name_check(const char *rule, const char *where,
			      struct distenv_error *err)
{
	const char *fix = "write the name with {host} for the Slurm node "
			  "name, e.g. {host}-ib or {host}.ib.example.org";
	const char *at = rule ? strstr(rule, "{host}") : NULL;
	size_t i;

	if (!rule || !rule[0])
		return distenv_error_set(err, where, fix, "no rule given");
	if (strlen(rule) >= DISTENV_SITE_NAME_MAX)
		return distenv_error_set(err, where, fix,
					 "the rule is longer than %d bytes",
					 DISTENV_SITE_NAME_MAX - 1);
	if (!at)
		return distenv_error_set(err, where, fix,
					 "'%.64s' does not hold {host}", rule);
	if (strstr(at + 6, "{host}"))
		return distenv_error_set(err, where, fix,
					 "'%.64s' holds {host} twice", rule);
	for (i = 0; rule[i]; i++) {
		if (rule + i == at) {
			i += 5;
			continue;
		}
		if (!name_char_ok(rule[i]))
			return distenv_error_set(
				err, where, fix,
				"'%.64s' has the character '%c' (0x%02x), which "
				"no host name holds",
				rule,
				rule[i] > 0x20 && rule[i] < 0x7f ? rule[i] :
								   '?',
				(unsigned char) rule[i]);
	}
	return 0;
}

int distenv_master_name_expand(const char *rule, const char *host, char *buf,
			       size_t len, struct distenv_error *err)
{
	const char *at = rule ? strstr(rule, "{host}") : NULL;
	int n;

	if (!at)
		n = snprintf(buf, len, "%s", host);
	else
		n = snprintf(buf, len, "%.*s%s%s", (int) (at - rule), rule,
			     host, at + 6);
	if (n < 0 || (size_t) n >= len)
		return distenv_error_set(
			err, "site policy master_name", "use a shorter rule",
			"the name for %.64s is longer than %zu bytes", host,
			len - 1);
	return 0;
}
