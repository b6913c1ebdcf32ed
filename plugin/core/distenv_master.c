/* distenv_master.c: MASTER_ADDR and the interface that reaches it. */
#include "distenv_master.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

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
 * *filtered counts the refusals, for the error message. */
static int site_allows(const struct distenv_master_prefs *prefs,
		       const char *name, int loopback, int *filtered)
{
	if (!prefs || !prefs->ifaces || loopback)
		return 1;
	if (distenv_ifspec_selects(prefs->ifaces, name))
		return 1;
	(*filtered)++;
	return 0;
}

/* The first up, non-loopback interface whose subnet holds ip and that the
 * site allows, or NULL. */
static const struct distenv_iface *iface_subnet(const struct distenv_net *net,
						 const struct distenv_ip *ip,
						 const struct distenv_master_prefs *prefs,
						 int *filtered)
{
	size_t i;

	for (i = 0; i < net->n_ifaces; i++) {
		const struct distenv_iface *f = &net->ifaces[i];

		if (f->up && !f->loopback && distenv_ip_in_subnet(ip, f) &&
		    site_allows(prefs, f->name, 0, filtered))
			return f;
	}
	return NULL;
}

static int route_is_usable(const struct distenv_addr *a, int multi_node,
			   const struct distenv_master_prefs *prefs,
			   int *filtered)
{
	int lo = strcmp(a->route_ifname, "lo") == 0;

	return a->route_ifname[0] && !(multi_node && lo) &&
	       site_allows(prefs, a->route_ifname, lo, filtered);
}

/* Interface for address a; fills out->ifname and its reason. */
static int pick_iface(const struct distenv_net *net,
		      const struct distenv_addr *a, int multi_node,
		      int on_master, const struct distenv_master_prefs *prefs,
		      int *filtered, struct distenv_master_choice *out)
{
	const struct distenv_iface *f = iface_holding(net, &a->ip);

	if (f && (f->loopback ? !multi_node : f->up) &&
	    site_allows(prefs, f->name, f->loopback, filtered)) {
		snprintf(out->ifname, sizeof(out->ifname), "%s", f->name);
		snprintf(out->ifname_reason, sizeof(out->ifname_reason),
			 "%s holds the master address %s%s", f->name,
			 out->addr, on_master ? " (this is the master node)" : "");
		return 0;
	}
	f = iface_subnet(net, &a->ip, prefs, filtered);
	if (f) {
		snprintf(out->ifname, sizeof(out->ifname), "%s", f->name);
		snprintf(out->ifname_reason, sizeof(out->ifname_reason),
			 "the subnet of %s holds the master address %s",
			 f->name, out->addr);
		return 0;
	}
	if (route_is_usable(a, multi_node, prefs, filtered)) {
		snprintf(out->ifname, sizeof(out->ifname), "%s",
			 a->route_ifname);
		snprintf(out->ifname_reason, sizeof(out->ifname_reason),
			 "the kernel routes the master address %s through %s",
			 out->addr, a->route_ifname);
		return 0;
	}
	return -1;
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

int distenv_master_choose(const struct distenv_net *net, const char *node_name,
			  int multi_node, int on_master,
			  struct distenv_master_choice *out,
			  struct distenv_error *err)
{
	return distenv_master_choose_prefs(net, NULL, node_name, multi_node,
					   on_master, out, err);
}

int distenv_master_choose_prefs(const struct distenv_net *net,
				const struct distenv_master_prefs *prefs,
				const char *node_name, int multi_node,
				int on_master,
				struct distenv_master_choice *out,
				struct distenv_error *err)
{
	const char *host = net->resolved_host ? net->resolved_host : "?";
	char where[256], names[256], skipped[DISTENV_IP_TEXT_MAX] = "";
	size_t i;
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

			if (!in_family_pass(prefs, &a->ip, (int)(k / n)) ||
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
			snprintf(out->addr_reason, sizeof(out->addr_reason),
				 "%s resolves to %s on this node%s%s%s%s", host,
				 out->addr, skipped[0] ? " (loopback " : "",
				 skipped, skipped[0] ? " skipped)" : "",
				 prefs && prefs->family != DISTENV_FAMILY_ANY
					 ? (prefs->family == DISTENV_FAMILY_IPV4
						    ? " (site policy: IPv4 first)"
						    : " (site policy: IPv6 first)")
					 : "");
			return 0;
		}
	}

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
		return distenv_error_set(err, where,
					 "check /etc/hosts and DNS on this node",
					 "the name resolves to no address");
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

		if (!distenv_ip_is_loopback(a) && !distenv_ip_is_link_local(a) &&
		    distenv_ip_in_subnet(a, f))
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
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
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
				rule, rule[i] > 0x20 && rule[i] < 0x7f ? rule[i] : '?',
				(unsigned char)rule[i]);
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
		n = snprintf(buf, len, "%.*s%s%s", (int)(at - rule), rule, host,
			     at + 6);
	if (n < 0 || (size_t)n >= len)
		return distenv_error_set(
			err, "site policy master_name", "use a shorter rule",
			"the name for %.64s is longer than %zu bytes", host,
			len - 1);
	return 0;
}
