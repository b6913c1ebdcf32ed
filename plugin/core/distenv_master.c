/* distenv_master.c: MASTER_ADDR and the interface that reaches it. */
#include "distenv_master.h"

#include <stdio.h>
#include <string.h>

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

/* The first up, non-loopback interface whose subnet holds ip, or NULL. */
static const struct distenv_iface *iface_subnet(const struct distenv_net *net,
						 const struct distenv_ip *ip)
{
	size_t i;

	for (i = 0; i < net->n_ifaces; i++) {
		const struct distenv_iface *f = &net->ifaces[i];

		if (f->up && !f->loopback && distenv_ip_in_subnet(ip, f))
			return f;
	}
	return NULL;
}

static int route_is_usable(const struct distenv_addr *a, int multi_node)
{
	return a->route_ifname[0] &&
	       !(multi_node && strcmp(a->route_ifname, "lo") == 0);
}

/* Interface for address a; fills out->ifname and its reason. */
static int pick_iface(const struct distenv_net *net,
		      const struct distenv_addr *a, int multi_node,
		      int on_master, struct distenv_master_choice *out)
{
	const struct distenv_iface *f = iface_holding(net, &a->ip);

	if (f && (f->loopback ? !multi_node : f->up)) {
		snprintf(out->ifname, sizeof(out->ifname), "%s", f->name);
		snprintf(out->ifname_reason, sizeof(out->ifname_reason),
			 "%s holds the master address %s%s", f->name,
			 out->addr, on_master ? " (this is the master node)" : "");
		return 0;
	}
	f = iface_subnet(net, &a->ip);
	if (f) {
		snprintf(out->ifname, sizeof(out->ifname), "%s", f->name);
		snprintf(out->ifname_reason, sizeof(out->ifname_reason),
			 "the subnet of %s holds the master address %s",
			 f->name, out->addr);
		return 0;
	}
	if (route_is_usable(a, multi_node)) {
		snprintf(out->ifname, sizeof(out->ifname), "%s",
			 a->route_ifname);
		snprintf(out->ifname_reason, sizeof(out->ifname_reason),
			 "the kernel routes the master address %s through %s",
			 out->addr, a->route_ifname);
		return 0;
	}
	return -1;
}

int distenv_master_choose(const struct distenv_net *net, const char *node_name,
			  int multi_node, int on_master,
			  struct distenv_master_choice *out,
			  struct distenv_error *err)
{
	const char *host = net->resolved_host ? net->resolved_host : "?";
	char where[256], names[256], skipped[DISTENV_IP_TEXT_MAX] = "";
	size_t i;
	int pass;

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
	 * a single-node step, takes loopback ones as well. */
	for (pass = 0; pass < (multi_node ? 1 : 2); pass++) {
		for (i = 0; i < net->n_addrs; i++) {
			const struct distenv_addr *a = &net->addrs[i];
			int loop = distenv_ip_is_loopback(&a->ip);

			if (distenv_ip_is_link_local(&a->ip))
				continue;
			if (loop && pass == 0) {
				if (!skipped[0])
					distenv_ip_format(&a->ip, skipped,
							  sizeof(skipped));
				continue;
			}
			out->ip = a->ip;
			distenv_ip_format(&a->ip, out->addr, sizeof(out->addr));
			if (pick_iface(net, a, multi_node, on_master, out))
				continue;
			snprintf(out->addr_reason, sizeof(out->addr_reason),
				 "%s resolves to %s on this node%s%s%s", host,
				 out->addr, skipped[0] ? " (loopback " : "",
				 skipped, skipped[0] ? " skipped)" : "");
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
	return distenv_error_set(
		err, where,
		"give the interface with --distenv-ifname=NAME, or check the "
		"node's routes (ip route)",
		"no interface of this node reaches %s (interfaces: %s)",
		out->addr[0] ? out->addr : "any of its addresses", names);
}
