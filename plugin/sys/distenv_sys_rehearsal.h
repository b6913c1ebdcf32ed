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

/* Where to connect: the addresses this node derived. */
struct distenv_rehearsal_peers {
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
	int waited_ms;
};

/* Run the plan. Never fails as such: every failure is in res. */
void distenv_sys_rehearse(const struct distenv_rehearsal_plan *plan,
			  const struct distenv_rehearsal_peers *peers,
			  struct distenv_rehearsal_result *res);

#endif
