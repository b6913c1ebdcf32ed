/* distenv_rehearsal_facts.c: the facts of the rehearsal's check-in, and
 * the rules that compare them (distenv_rehearsal_facts.h). */
#include "distenv_rehearsal_facts.h"

#include <stdio.h>
#include <string.h>

#include "distenv_rehearsal.h"

void distenv_rehearsal_facts_init(struct distenv_rehearsal_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->verbs = -1;
	f->eph_lo = 1;
	f->eph_hi = 0;
}

void distenv_rehearsal_facts_line(char *buf, size_t len, const char *kind,
				  uint32_t job_id, uint32_t step_id,
				  uint32_t node_id,
				  const struct distenv_rehearsal_facts *f)
{
	snprintf(buf, len, "distenv-%s %u %u %u f %u %s %u %u %u %d %u %u\n",
		 kind, job_id, step_id, node_id, f->mtu,
		 f->ifname[0] ? f->ifname : "-", f->ib_mtu_lo, f->ib_mtu_hi,
		 f->ib_ports, f->verbs, f->eph_lo, f->eph_hi);
}

/* The facts after the node of a line: " f MTU IF IBLO IBHI N V LO HI". */
static int parse_facts(const char *text, struct distenv_rehearsal_facts *f)
{
	unsigned mtu, lo, hi, ports, elo, ehi;
	char ifname[DISTENV_FACTS_IFNAME_MAX], extra;
	int verbs;

	if (sscanf(text, " f %u %15s %u %u %u %d %u %u %c", &mtu, ifname, &lo,
		   &hi, &ports, &verbs, &elo, &ehi, &extra) != 8 ||
	    verbs < -1 || verbs > 1 || elo > 65535 || ehi > 65535 || lo > hi)
		return -1;
	f->mtu = mtu;
	snprintf(f->ifname, sizeof(f->ifname), "%s",
		 strcmp(ifname, "-") == 0 ? "" : ifname);
	f->ib_mtu_lo = lo;
	f->ib_mtu_hi = hi;
	f->ib_ports = ports;
	f->verbs = verbs;
	f->eph_lo = (uint16_t) elo;
	f->eph_hi = (uint16_t) ehi;
	return 0;
}

int distenv_rehearsal_facts_parse(const char *line, const char *kind,
				  uint32_t job_id, uint32_t step_id,
				  uint32_t *node_id,
				  struct distenv_rehearsal_facts *f)
{
	char want[32], word[32];
	unsigned long j, s, n;
	int end = 0;

	distenv_rehearsal_facts_init(f);
	if (!line)
		return -1;
	snprintf(want, sizeof(want), "distenv-%s", kind);
	if (sscanf(line, "%31s %lu %lu %lu%n", word, &j, &s, &n, &end) != 4 ||
	    strcmp(word, want) != 0 || j != job_id || s != step_id ||
	    n > UINT32_MAX)
		return -1;
	/* an older distenv's line ends after the node */
	if (line[end + strspn(line + end, " \r\n")] != '\0' &&
	    parse_facts(line + end, f))
		return -1;
	*node_id = (uint32_t) n;
	return 0;
}

static int range_known(const struct distenv_rehearsal_facts *f)
{
	return f->eph_lo && f->eph_lo <= f->eph_hi;
}

int distenv_rehearsal_facts_differ(enum distenv_rehearsal_rule rule,
				   const struct distenv_rehearsal_facts *a,
				   const struct distenv_rehearsal_facts *b)
{
	switch (rule) {
	case DISTENV_RULE_SOCKET_MTU:
		return a->mtu && b->mtu && a->mtu != b->mtu;
	case DISTENV_RULE_IB_MTU:
		return a->ib_ports && b->ib_ports && a->ib_mtu_lo &&
		       b->ib_mtu_lo &&
		       (a->ib_mtu_lo != b->ib_mtu_lo ||
			a->ib_mtu_hi != b->ib_mtu_hi);
	case DISTENV_RULE_VERBS:
		return a->verbs >= 0 && b->verbs >= 0 && a->verbs != b->verbs;
	case DISTENV_RULE_PORT_RANGE:
		return range_known(a) && range_known(b) &&
		       (a->eph_lo != b->eph_lo || a->eph_hi != b->eph_hi);
	default:
		return 0;
	}
}

/* "4096", or "2048-4096" for ports of other MTUs on one node. */
static const char *ib_mtu_text(const struct distenv_rehearsal_facts *f,
			       char *buf, size_t len)
{
	if (f->ib_mtu_lo == f->ib_mtu_hi)
		snprintf(buf, len, "%u", f->ib_mtu_lo);
	else
		snprintf(buf, len, "%u-%u", f->ib_mtu_lo, f->ib_mtu_hi);
	return buf;
}

static int verbs_error(const char *where, const char *node,
		       const struct distenv_rehearsal_facts *f,
		       const char *master_node, const char *more,
		       struct distenv_error *err)
{
	/* the node that cannot load it, and the one that can */
	const char *bad = f->verbs == 0 ? node : master_node;
	const char *good = f->verbs == 0 ? master_node : node;

	return distenv_error_set(
		err, where,
		"make libibverbs.so.1 (rdma-core; Debian: libibverbs1) loadable "
		"in the task's file system on every node (the container image, "
		"or the runtime's mounts), or set NCCL_IB_DISABLE=1 to use "
		"sockets on purpose (nccl src/transport/net_ib.cc ncclIbInit; "
		"dstackai/dstack issue 2712)",
		"network rehearsal: %s has InfiniBand ports selected "
		"(NCCL_IB_HCA) but its task cannot load libibverbs.so.1, while "
		"%s's can%s: NCCL on %s would find no IB device and fall back "
		"to its socket transport without an error, several times "
		"slower",
		bad, good, more, bad);
}

int distenv_rehearsal_facts_error(enum distenv_rehearsal_rule rule,
				  const char *where, const char *node,
				  const struct distenv_rehearsal_facts *f,
				  const char *master_node,
				  const struct distenv_rehearsal_facts *m,
				  uint32_t others, struct distenv_error *err)
{
	char more[64] = "", a[32], b[32];

	if (others)
		snprintf(more, sizeof(more), " (and %u more node%s)", others,
			 others == 1 ? "" : "s");
	switch (rule) {
	case DISTENV_RULE_SOCKET_MTU:
		return distenv_error_set(
			err, where,
			"give the interface the same MTU on every node of the "
			"step (ip link set dev IF mtu N, or the nodes' network "
			"configuration): between other MTUs TCP rests on path "
			"MTU discovery, and where its ICMP answers are filtered "
			"NCCL's and Gloo's sockets stall (RFC 1191)",
			"network rehearsal: %s's socket interface %s has MTU "
			"%u, the master %s's %s has MTU %u%s",
			node, f->ifname[0] ? f->ifname : "?", f->mtu,
			master_node, m->ifname[0] ? m->ifname : "?", m->mtu,
			more);
	case DISTENV_RULE_IB_MTU:
		return distenv_error_set(
			err, where,
			"give the ports the same MTU on every node (InfiniBand: "
			"the subnet manager's partition MTU; RoCE: the "
			"interface's MTU, 4200 for an active MTU of 4096): NCCL "
			"2.20.3 and later fail with IBV_WC_LOC_LEN_ERR or hang "
			"between ports of other MTUs (NVIDIA/nccl issue 1524)",
			"network rehearsal: %s's InfiniBand ports (NCCL_IB_HCA) "
			"have active MTU %s, the master %s's %s%s",
			node, ib_mtu_text(f, a, sizeof(a)), master_node,
			ib_mtu_text(m, b, sizeof(b)), more);
	case DISTENV_RULE_VERBS:
		return verbs_error(where, node, f, master_node, more, err);
	default:
		return distenv_error_set(
			err, where,
			"set net.ipv4.ip_local_port_range the same on every "
			"node (sysctl, /etc/sysctl.d): NCCL and Gloo listen on "
			"ports from it, so a firewall rule written for one "
			"node's range misses the other's (ip-sysctl.rst)",
			"network rehearsal: %s's ephemeral port range "
			"(ip_local_port_range) is %u-%u, the master %s's "
			"%u-%u%s",
			node, f->eph_lo, f->eph_hi, master_node, m->eph_lo,
			m->eph_hi, more);
	}
}

uint32_t distenv_rehearsal_facts_first(enum distenv_rehearsal_rule rule,
				       const struct distenv_rehearsal_facts
					       *facts,
				       const unsigned char *seen,
				       uint32_t nnodes, uint32_t master,
				       uint32_t *count)
{
	uint32_t i, first = UINT32_MAX;

	*count = 0;
	if (master >= nnodes)
		return first;
	for (i = 0; i < nnodes; i++) {
		if (i == master || !seen[i] ||
		    !distenv_rehearsal_facts_differ(rule, &facts[i],
						    &facts[master]))
			continue;
		if (first == UINT32_MAX)
			first = i;
		(*count)++;
	}
	return first;
}
