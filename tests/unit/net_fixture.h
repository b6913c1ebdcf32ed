/*
 * net_fixture.h: build a node's network facts by hand for unit tests.
 * The default node looks like a node of the namespace cluster
 * (tests/cluster): lo, a dead-end eth1 listed first, and eth0 on the
 * network that joins the nodes.
 */
#ifndef DISTENV_NET_FIXTURE_H
#define DISTENV_NET_FIXTURE_H

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "distenv_net.h"
#include "distenv_step.h"

struct net_fixture {
	struct distenv_iface ifaces[8];
	struct distenv_addr addrs[8];
	struct distenv_net net;
};

static inline void fx_iface(struct net_fixture *f, const char *name,
			    const char *ip, unsigned prefix, int up)
{
	struct distenv_iface *i = &f->ifaces[f->net.n_ifaces++];

	memset(i, 0, sizeof(*i));
	snprintf(i->name, sizeof(i->name), "%s", name);
	distenv_ip_parse(ip, &i->ip);
	i->prefix_len = prefix;
	i->up = up;
	i->loopback = strcmp(name, "lo") == 0;
	f->net.ifaces = f->ifaces;
}

static inline void fx_addr(struct net_fixture *f, const char *ip,
			   const char *route)
{
	struct distenv_addr *a = &f->addrs[f->net.n_addrs++];

	memset(a, 0, sizeof(*a));
	distenv_ip_parse(ip, &a->ip);
	snprintf(a->route_ifname, sizeof(a->route_ifname), "%s",
		 route ? route : "");
	f->net.addrs = f->addrs;
}

/* A resolved master address with the kernel's route to it: src, the
 * source address the kernel picks, and route, the interface holding it
 * (as the adapter finds them, distenv_net.h). */
static inline void fx_addr_src(struct net_fixture *f, const char *ip,
			       const char *route, const char *src)
{
	fx_addr(f, ip, route);
	distenv_ip_parse(src, &f->addrs[f->net.n_addrs - 1].route_src);
}

/*
 * A worker with a 1 GbE eno1 and a 10 GbE enp37s0f0, both in
 * 192.168.0.0/20, the two listed in the order given (first, second:
 * "eno1" or "enp37s0f0"), master host gpu01 at 192.168.0.10; the
 * kernel's route to it takes route's address (eno1's 192.168.0.21,
 * enp37s0f0's 192.168.1.21) as the source. IPv4 addresses come before
 * IPv6 ones, as getifaddrs lists them.
 */
static inline void fx_two_nics(struct net_fixture *f, const char *first,
			       const char *second, const char *route)
{
	const char *names[2] = {first, second};
	int i;

	memset(f, 0, sizeof(*f));
	f->net.resolved_host = "gpu01";
	fx_iface(f, "lo", "127.0.0.1", 8, 1);
	for (i = 0; i < 2; i++)
		fx_iface(f, names[i],
			 strcmp(names[i], "eno1") == 0 ? "192.168.0.21"
						       : "192.168.1.21",
			 20, 1);
	fx_iface(f, "lo", "::1", 128, 1);
	fx_addr_src(f, "192.168.0.10", route,
		    strcmp(route, "eno1") == 0 ? "192.168.0.21"
					       : "192.168.1.21");
}

/*
 * A BGP-unnumbered node: its only routable IPv4 address, own (e.g.
 * "10.9.0.11"), is a /32 on lo after 127.0.0.1/8; the physical links
 * eth0 and eth1 carry IPv6 link-local addresses only (with on_eth0, eth0
 * holds own/32 as well: the fix). The master host rack1-10 is
 * 10.9.0.10, which the kernel routes over eth0 with own as the source;
 * the adapter names lo, the first interface holding it.
 */
static inline void fx_bgp_node(struct net_fixture *f, const char *own,
			       int on_eth0)
{
	memset(f, 0, sizeof(*f));
	f->net.resolved_host = "rack1-10";
	fx_iface(f, "lo", "127.0.0.1", 8, 1);
	fx_iface(f, "lo", own, 32, 1);
	if (on_eth0)
		fx_iface(f, "eth0", own, 32, 1);
	fx_iface(f, "lo", "::1", 128, 1);
	fx_iface(f, "eth0", "fe80::11:1", 64, 1);
	fx_iface(f, "eth1", "fe80::11:2", 64, 1);
	fx_addr_src(f, "10.9.0.10", "lo", own);
}

/* Node i (1-based) of the namespace cluster, resolving host to what
 * /etc/hosts there says: 127.0.1.1 first for its own name, as Debian's
 * installer writes it. */
static inline void fx_cluster_node(struct net_fixture *f, int i,
				   const char *host)
{
	char ip[32];

	memset(f, 0, sizeof(*f));
	f->net.resolved_host = host;
	fx_iface(f, "lo", "127.0.0.1", 8, 1);
	fx_iface(f, "lo", "::1", 128, 1);
	snprintf(ip, sizeof(ip), "10.99.%d.1", i);
	fx_iface(f, "eth1", ip, 24, 1);
	snprintf(ip, sizeof(ip), "10.77.0.%d", i);
	fx_iface(f, "eth0", ip, 24, 1);
}

/* The second node (index 1) of a 2-node srun step JOB.STEP, one task
 * per node (task 1), on Linux's default ephemeral range, with envp as
 * the task's environment. */
static inline void fx_worker_step(struct distenv_step *s, uint32_t job,
				  uint32_t step, const char *node,
				  const char *master, const char **envp)
{
	memset(s, 0, sizeof(*s));
	s->kind = DISTENV_STEP_TASKS;
	s->job_id = job;
	s->step_id = step;
	s->nnodes = 2;
	s->node_id = 1;
	s->ntasks = 2;
	s->local_ntasks = 1;
	s->procid = 1;
	s->localid = 0;
	snprintf(s->node_name, sizeof(s->node_name), "%s", node);
	snprintf(s->master_host, sizeof(s->master_host), "%s", master);
	s->ephemeral_lo = 32768;
	s->ephemeral_hi = 60999;
	s->envp = envp;
}

#endif
