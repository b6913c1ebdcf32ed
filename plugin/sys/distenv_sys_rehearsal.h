/*
 * distenv_sys_rehearsal.h: the sockets of the network rehearsal
 * (plugin/core/distenv_rehearsal.h has the plan and the design): one
 * poll(2) loop that listens (the master's check-in port, this node's
 * ring port), checks in with the master, connects to the ring
 * neighbour, and returns at the plan's timeout at the latest.
 */
#ifndef DISTENV_SYS_REHEARSAL_H
#define DISTENV_SYS_REHEARSAL_H

#include <stdint.h>

#include "distenv_net.h"
#include "distenv_rehearsal.h"
#include "distenv_rehearsal_facts.h"

/* Where to connect: the addresses this node derived; and what this
 * node says of itself in its check-in (or, on the master, its answer). */
struct distenv_rehearsal_peers {
	struct distenv_rehearsal_facts facts;
	struct distenv_ip master; /* MASTER_ADDR (unused on the master) */
	struct distenv_ip next; /* the ring neighbour */
	struct distenv_ip src; /* this node's address on the derived
				* interface; family 0: let the kernel pick */
};

/* What happened; errno values, 0 for none. */
struct distenv_rehearsal_result {
	int listen_errno; /* could not listen (master or ring port) */
	int listen_ring; /* 1: it was the ring port */
	uint16_t listen_port;
	int master_ok, master_errno, master_foreign;
	int next_ok, next_errno, next_foreign;
	uint16_t next_port; /* the neighbour's port tried last */
	int prev_ok;
	unsigned char *seen; /* the caller's, plan->nnodes bytes: the
			      * master marks the nodes that checked in */
	struct distenv_rehearsal_facts *facts; /* the caller's, plan->nnodes:
						* the master's fills each
						* node's from its check-in,
						* another node's fills the
						* master's from its answer */
	int waited_ms;
};

/* Run the plan. Never fails as such: every failure is in res. */
void distenv_sys_rehearse(const struct distenv_rehearsal_plan *plan,
			  const struct distenv_rehearsal_peers *peers,
			  struct distenv_rehearsal_result *res);

/*
 * This node's facts for the check-in (distenv_rehearsal_facts.h), read
 * from the system, or from a tree laid out as / (root; unit tests).
 */
struct distenv_facts_source {
	const char *root; /* NULL: the system, the socket interface's MTU
			   * by SIOCGIFMTU in this network namespace; else
			   * root/sys/class/net/IF/mtu */
	const char *ifname; /* the socket interface (GLOO_SOCKET_IFNAME; a
			     * list: its first name) */
	const char *hca; /* NCCL_IB_HCA in force; NULL: every HCA, as NCCL
			  * without it. Ports from
			  * root/sys/class/infiniband/DEV/ports/N/, the
			  * ACTIVE ones (state) with their active_mtu */
	int ib_disabled; /* NCCL_IB_DISABLE=1: no IB facts */
	const char *verbs_lib; /* dlopen(3)ed where a port is selected;
				* NULL: libibverbs.so.1 */
	uint16_t eph_lo, eph_hi; /* ip_local_port_range (the step's) */
};

void distenv_sys_rehearsal_facts(const struct distenv_facts_source *src,
				 struct distenv_rehearsal_facts *f);

#endif
