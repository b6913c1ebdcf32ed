/*
 * distenv_rehearsal_facts.h: the facts each node of the network
 * rehearsal (distenv_rehearsal.h) reports, and the rules that compare
 * them across nodes. Pure: facts in, findings out; the sys layer reads
 * them (plugin/sys/distenv_sys_facts.c) and the sockets carry them.
 *
 * Design (no extra round trip, never all-to-all): a node's check-in line
 * carries its facts to the master; the master's answer carries the
 * master's facts back. So the master compares every node that checked
 * in with its own, and each node compares itself with the master: a
 * difference between any two nodes is a difference of one of them from
 * the master, and both ends of it name it, so under strict each fails
 * on its own node before launch.
 *
 * The rules (each fails under --distenv-check=strict, warns under warn):
 * - socket MTU: the MTU of the interface distenv derived
 *   (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME) differs. TCP between the
 *   nodes then rests on path MTU discovery (RFC 1191, ip-sysctl.rst
 *   ip_no_pmtu_disc): where the ICMP "fragmentation needed" answers are
 *   filtered, the larger node's full-size segments are lost and NCCL's
 *   socket transport and Gloo stall, while small messages (the
 *   rendezvous, the rehearsal's own lines) pass.
 * - IB active MTU: the active MTU (sysfs ports/N/active_mtu) of the
 *   InfiniBand/RoCE ports NCCL_IB_HCA selects differs. Since NCCL
 *   2.20.3 the receiving side no longer lowers the queue pair's MTU to
 *   the peer's (nccl commit b6475625, net_ib.cc), so two nodes of other
 *   MTUs fail with IBV_WC_LOC_LEN_ERR ("local access violation work
 *   queue error") or hang (NVIDIA/nccl issue 1524; the fix proposed in
 *   NVIDIA/nccl pull request 2135 takes the smaller of the two).
 * - RDMA library: a node whose NCCL_IB_HCA selects HCA ports but whose
 *   task cannot load libibverbs.so.1 (in its own file system: a
 *   container image without rdma-core), while the other end can. NCCL
 *   then finds no IB device and falls back to its socket transport
 *   without an error (nccl src/transport/net_ib.cc ncclIbInit; the
 *   dstackai/dstack issue 2712 measured it several times slower).
 * - ephemeral range: net.ipv4.ip_local_port_range differs. NCCL's and
 *   Gloo's listeners take their ports from it, so one firewall rule for
 *   "the ephemeral range" misses part of a node whose range is other;
 *   and the rehearsal's ring ports are computed from each node's own
 *   range (distenv_rehearsal_ring_port).
 * A fact a node could not read (0, or verbs -1) is compared with nothing.
 */
#ifndef DISTENV_REHEARSAL_FACTS_H
#define DISTENV_REHEARSAL_FACTS_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"

#define DISTENV_FACTS_IFNAME_MAX 16 /* IFNAMSIZ, NUL included */

struct distenv_rehearsal_facts {
	uint32_t mtu; /* bytes, of ifname; 0 unknown */
	char ifname[DISTENV_FACTS_IFNAME_MAX]; /* "" unknown */
	uint32_t ib_mtu_lo, ib_mtu_hi; /* bytes, smallest and largest
					* active MTU of the selected
					* active ports; 0 none */
	uint32_t ib_ports; /* selected active ports */
	int verbs; /* libibverbs.so.1 loads: 1, cannot: 0, unknown or no
		    * port selected: -1 */
	uint16_t eph_lo, eph_hi; /* ip_local_port_range; lo > hi unknown */
};

/* All unknown. */
void distenv_rehearsal_facts_init(struct distenv_rehearsal_facts *f);

/*
 * The check-in and its answer with facts, one line, ASCII:
 *   "distenv-KIND JOB STEP NODE f MTU IF IBLO IBHI IBPORTS VERBS LO HI\n"
 * (IF "-" when unknown). distenv_rehearsal_facts_line writes one into buf
 * (>= DISTENV_REHEARSAL_LINE_MAX bytes). distenv_rehearsal_facts_parse
 * reads one of kind for job.step and returns 0 with its node and facts,
 * or -1 as distenv_rehearsal_line_parse; a line without facts (a node of
 * an older distenv) is read with all facts unknown.
 */
void distenv_rehearsal_facts_line(char *buf, size_t len, const char *kind,
				  uint32_t job_id, uint32_t step_id,
				  uint32_t node_id,
				  const struct distenv_rehearsal_facts *f);
int distenv_rehearsal_facts_parse(const char *line, const char *kind,
				  uint32_t job_id, uint32_t step_id,
				  uint32_t *node_id,
				  struct distenv_rehearsal_facts *f);

enum distenv_rehearsal_rule {
	DISTENV_RULE_SOCKET_MTU = 0,
	DISTENV_RULE_IB_MTU,
	DISTENV_RULE_VERBS,
	DISTENV_RULE_PORT_RANGE,
	DISTENV_RULES_N,
};

/* Whether rule finds a difference between a and b (both known). */
int distenv_rehearsal_facts_differ(enum distenv_rehearsal_rule rule,
				   const struct distenv_rehearsal_facts *a,
				   const struct distenv_rehearsal_facts *b);

/*
 * The finding of rule between node (facts f) and the master
 * (master_node, facts m), told on the node where (node itself or the
 * master): what names both nodes and both values, fix what to change
 * and the source of the rule. others: how many more nodes differ from
 * the master the same way (the master names the first only). Returns -1.
 */
int distenv_rehearsal_facts_error(enum distenv_rehearsal_rule rule,
				  const char *where, const char *node,
				  const struct distenv_rehearsal_facts *f,
				  const char *master_node,
				  const struct distenv_rehearsal_facts *m,
				  uint32_t others, struct distenv_error *err);

/*
 * The master's view: of nnodes nodes (facts[i] as node i checked in,
 * seen[i] 1 when it did), the first, in index order, that rule finds
 * different from the master's (facts[master]); its index, or UINT32_MAX
 * when none, and in *count how many differ.
 */
uint32_t distenv_rehearsal_facts_first(enum distenv_rehearsal_rule rule,
				       const struct distenv_rehearsal_facts
					       *facts,
				       const unsigned char *seen,
				       uint32_t nnodes, uint32_t master,
				       uint32_t *count);

#endif
