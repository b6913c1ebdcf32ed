/*
 * distenv_rehearsal.h: the network rehearsal of a multi-node step, the
 * pure half: who connects where, on which port, and what a failure
 * says. The sockets are plugin/sys/distenv_sys_rehearsal.c's; the SPANK
 * glue (plugin/spank/spank_rehearsal.c) runs it in task_init, once per
 * node (local task 0), before torchrun or the user's program starts.
 *
 * Why: NCCL and Gloo connect every rank to the store on MASTER_PORT and
 * then to their peers on ports from the kernel's ephemeral range
 * (ip_local_port_range, ip-sysctl.rst), which cannot be confined to a
 * range (NVIDIA/nccl issue 1956, huggingface/trl issue 4737). A host
 * firewall that admits MASTER_PORT and drops the rest passes every check
 * that sends no packet, and the step then hangs until a rendezvous or
 * watchdog timeout, with no word of which node (pytorch/pytorch issue
 * 73656).
 *
 * Design (never all-to-all; each node opens at most two connections):
 * - the master node (the node of MASTER_ADDR, node index 0 unless the
 *   task layout moved task 0) listens on the rehearsal port (below) and
 *   every other node checks in there, from an address of the interface
 *   distenv derived (GLOO_SOCKET_IFNAME) to MASTER_ADDR;
 * - every node listens on a port of its ephemeral range, derived from
 *   job, step and node index (distenv_rehearsal_ring_port; the next
 *   candidate when one is taken), and connects to its neighbour in the
 *   ring (node index + 1, the last to the first), trying the neighbour's
 *   candidates; both ends say job, step and node, so a foreign
 *   listener on a candidate port is told apart;
 * - every node waits at most the timeout from its own start (5 s,
 *   DISTENV_REHEARSAL_TIMEOUT), however many nodes are missing; the
 *   master then names the nodes that never checked in, and each node
 *   names the connection it could not make, with address, port,
 *   interface, cause and fix;
 * - the check-in and its answer carry each node's facts (MTUs, the RDMA
 *   library, the ephemeral range), compared with the master's by both
 *   ends (distenv_rehearsal_facts.h).
 */
#ifndef DISTENV_REHEARSAL_H
#define DISTENV_REHEARSAL_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"
#include "distenv_options.h"
#include "distenv_step.h"

#define DISTENV_REHEARSAL_RING_TRIES 4 /* ring port candidates per node */
#define DISTENV_REHEARSAL_TIMEOUT_MS 5000 /* default wait */
#define DISTENV_REHEARSAL_TIMEOUT_VAR "DISTENV_REHEARSAL_TIMEOUT"
#define DISTENV_REHEARSAL_LINE_MAX 160 /* one protocol line, NUL included */
#define DISTENV_REHEARSAL_NAMES_MAX 8 /* missing nodes named in full */

/* Whether this task rehearses: an srun step (not the batch script) of
 * more than one node, local task 0, check level not off, a timeout
 * other than 0 (timeout_ms from distenv_rehearsal_parse_timeout), and
 * not a step over several components of a heterogeneous job (het). */
int distenv_rehearsal_wanted(const struct distenv_step *step, int check,
			     int timeout_ms, int het);

/*
 * DISTENV_REHEARSAL_TIMEOUT from the task's environment: NULL or "" is
 * the default (DISTENV_REHEARSAL_TIMEOUT_MS); else whole seconds 0-600,
 * 0 meaning no rehearsal. Errors name the variable.
 */
int distenv_rehearsal_parse_timeout(const char *text, int *ms,
				    struct distenv_error *err);

/*
 * The port the master node listens on for the check-in. Not MASTER_PORT
 * (torchrun binds it right after, and a closed listener's connections
 * linger in TIME_WAIT): the second reserved port when Slurm reserved two
 * or more (SLURM_STEP_RESV_PORTS: reserved for this step on every node);
 * else a port of the site's port_range outside the ephemeral range,
 * derived from job and step as MASTER_PORT is but half the range away
 * from it, so that it is no other step's MASTER_PORT either (step ids
 * close together take neighbouring ports), and never master_port. why
 * (why_len bytes) says which, for messages. Errors: as distenv_derive_port.
 */
int distenv_rehearsal_port(const struct distenv_step *step,
			   const struct distenv_site *site,
			   uint16_t master_port, uint16_t *port, char *why,
			   size_t why_len, struct distenv_error *err);

/*
 * Candidate try (0 to DISTENV_REHEARSAL_RING_TRIES - 1) of the ring
 * port of node node_id in step job.step: a port of [eph_lo, eph_hi]
 * (the kernel's ephemeral range, where NCCL's and Gloo's listeners get
 * their ports), spread by a hash of the four numbers. Every node
 * computes its neighbour's candidates from its own range, so the nodes'
 * ranges must agree (Linux's default 32768-60999 on all). eph_lo >
 * eph_hi (unknown): Linux's default range.
 */
uint16_t distenv_rehearsal_ring_port(uint32_t job_id, uint32_t step_id,
				     uint32_t node_id, unsigned try_no,
				     uint16_t eph_lo, uint16_t eph_hi);

/* Node indices of the ring: the next (connected to) and the previous
 * (accepted from) of node_id among nnodes (>= 2). */
uint32_t distenv_rehearsal_next(uint32_t node_id, uint32_t nnodes);
uint32_t distenv_rehearsal_prev(uint32_t node_id, uint32_t nnodes);

/* What one node does, worked out before any socket. */
struct distenv_rehearsal_plan {
	uint32_t job_id, step_id, nnodes, node_id;
	uint32_t master_node_id, next_node_id, prev_node_id;
	int on_master;
	uint16_t master_port; /* the rehearsal's port on the master */
	char master_port_why[160];
	uint16_t ring_ports[DISTENV_REHEARSAL_RING_TRIES]; /* this node's */
	uint16_t next_ports[DISTENV_REHEARSAL_RING_TRIES]; /* the next's */
	uint16_t eph_lo, eph_hi;
	int timeout_ms;
};

/* The plan for step (its master_node_id, ephemeral range, ids), with
 * MASTER_PORT in force and the timeout. Errors: no rehearsal port. */
int distenv_rehearsal_plan(const struct distenv_step *step,
			   const struct distenv_site *site,
			   uint16_t master_port, int timeout_ms,
			   struct distenv_rehearsal_plan *plan,
			   struct distenv_error *err);

/*
 * The protocol, one line each way, ASCII:
 *   "distenv-checkin JOB STEP NODE\n"  a node to the master
 *   "distenv-ok JOB STEP NODE\n"       the master's answer (its node)
 *   (both sent with the node's facts after NODE, and read, by
 *   distenv_rehearsal_facts_line and _parse: distenv_rehearsal_facts.h)
 *   "distenv-ring JOB STEP NODE\n"     both ends of a ring connection:
 *                                      the connecting node first, the
 *                                      listener answers its previous
 *                                      node only
 * distenv_rehearsal_line writes one into buf (>= LINE_MAX bytes);
 * distenv_rehearsal_line_parse reads one (the newline optional) of the
 * given kind for job.step and returns 0 with its node, or -1: another
 * kind, another step, malformed (a foreign program on the port).
 */
void distenv_rehearsal_line(char *buf, size_t len, const char *kind,
			    uint32_t job_id, uint32_t step_id,
			    uint32_t node_id);
int distenv_rehearsal_line_parse(const char *line, const char *kind,
				 uint32_t job_id, uint32_t step_id,
				 uint32_t *node_id);

/* How a connection ended (the sys layer maps errno with
 * distenv_rehearsal_cause_of). */
enum distenv_rehearsal_cause {
	DISTENV_REHEARSAL_OK = 0,
	DISTENV_REHEARSAL_REFUSED, /* RST: nothing listens, or REJECT */
	DISTENV_REHEARSAL_TIMED_OUT, /* no answer: a rule that drops */
	DISTENV_REHEARSAL_NO_ROUTE, /* EHOSTUNREACH, ENETUNREACH */
	DISTENV_REHEARSAL_FOREIGN, /* something else answered the port */
	DISTENV_REHEARSAL_LISTEN, /* could not listen on the port */
	DISTENV_REHEARSAL_OTHER,
};

enum distenv_rehearsal_cause distenv_rehearsal_cause_of(int errnum);

/* One connection that failed, as the sys layer saw it. */
struct distenv_rehearsal_link {
	int ring; /* 1: to the ring neighbour (ephemeral port); 0: check-in */
	const char *from_node; /* this node */
	const char *to_node; /* the node not reached */
	const char *to_addr; /* its address as text */
	uint16_t port; /* the last port tried */
	const char *src_addr; /* this node's address, "" when not bound */
	const char *ifname; /* the interface distenv derived */
	enum distenv_rehearsal_cause cause;
	const char *detail; /* strerror text, "" when none */
	int waited_ms;
};

/* The error for link: where is from_node, what names both nodes, the
 * address, port and cause, fix says what to allow where. Returns -1. */
int distenv_rehearsal_link_error(const struct distenv_rehearsal_plan *plan,
				 const struct distenv_rehearsal_link *link,
				 struct distenv_error *err);

/*
 * The master's finding: the nodes that never checked in. seen holds
 * plan->nnodes bytes (1: checked in; the master's own is ignored);
 * names[i] is the name of the i-th missing node in index order, for at
 * most DISTENV_REHEARSAL_NAMES_MAX of them (NULL: unknown). Returns
 * the number of missing nodes, and fills err when there is one.
 */
uint32_t distenv_rehearsal_missing(const struct distenv_rehearsal_plan *plan,
				   const unsigned char *seen,
				   const char *const *names,
				   const char *master_node,
				   const char *master_addr,
				   struct distenv_error *err);

#endif
