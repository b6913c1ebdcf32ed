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
