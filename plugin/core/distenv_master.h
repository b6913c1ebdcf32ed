/*
 * distenv_master.h: choose MASTER_ADDR and the interface that reaches it,
 * from the resolver's answer and the node's interfaces.
 *
 * Rules (docs/contracts.md sections 4 and 6):
 * - The master is the node with node index 0 in the step; its name was
 *   resolved on this node, so the address is the one *this* node reaches
 *   it by.
 * - Loopback addresses are skipped: Debian's installer maps the host name
 *   to 127.0.1.1 in /etc/hosts, and a peer told that address connects to
 *   itself (Gloo: "connect [127.0.1.1]:P: Connection refused"). In a
 *   multi-node step a name that resolves only to loopback is an error;
 *   in a single-node step loopback is fine and the interface is lo.
 * - IPv6 link-local addresses need a scope id torchrun cannot take, and
 *   are skipped too.
 * - Interface: on the master node the one holding the address; elsewhere
 *   the one whose subnet holds it, else the one holding the source
 *   address the kernel's route to it takes (found by the adapter with a
 *   UDP connect(), which sends no packet).
 * - In a multi-node step only interfaces NCCL and Gloo can use count
 *   (distenv_iface_usable: told by the addresses they would take, never
 *   by the name), so lo never, even when it holds the node's routable
 *   /32: both would take its 127.0.0.1. When the only address of this
 *   node that reaches the master is on such an interface, the choice
 *   fails naming the address, the interface and the fix.
 * - Two or more interfaces in the master's subnet (eno1 and enp37s0f0
 *   both in 192.168.0.0/20): Linux sends everything for the subnet by
 *   one route, the first of the equal routes or the lowest metric
 *   (ip-route(8)), whatever address a socket is bound to, and the order
 *   of the routes can differ between nodes. The one the kernel's route
 *   takes is chosen, and the choice carries a warning naming them all
 *   (shared_subnet), for the caller to report or to fail on.
 */
#ifndef DISTENV_MASTER_H
#define DISTENV_MASTER_H

#include <stddef.h>

#include "distenv_error.h"
#include "distenv_ifspec.h"
#include "distenv_net.h"
#include "distenv_options.h"

#define DISTENV_MASTER_PEERS_MAX 8

struct distenv_master_choice {
	struct distenv_ip ip;
	char addr[DISTENV_IP_TEXT_MAX]; /* ip as text: MASTER_ADDR */
	char ifname[DISTENV_IFNAME_MAX]; /* interface that reaches it */
	char addr_reason[256]; /* why this address */
	char ifname_reason[256]; /* why this interface */
	/* Several interfaces in the master's subnet: their names in
	 * getifaddrs order (n_peers > 1; 0 otherwise), the one the kernel's
	 * route takes ("" when none of them), and the warning that says so
	 * (shared_subnet.what "" when there is none). */
	char peers[DISTENV_MASTER_PEERS_MAX][DISTENV_IFNAME_MAX];
	size_t n_peers;
	char route_ifname[DISTENV_IFNAME_MAX];
	struct distenv_error shared_subnet;
	/* Internal to the choice: an address of this node that reaches the
	 * master, on an interface NCCL and Gloo cannot use (lo). */
	struct distenv_ip stuck_ip;
	struct distenv_ip stuck_master; /* the master address it reaches */
	char stuck_if[DISTENV_IFNAME_MAX];
	int stuck_own; /* stuck_ip is the master address itself */
};

/*
 * net: this node's facts; node_name: this node, for messages;
 * multi_node: the step spans more than one node; on_master: this node is
 * node index 0. Errors: resolution failed, only loopback in a multi-node
 * step, no usable address, the address reaching the master only on an
 * interface NCCL and Gloo cannot use (above), no interface reaches the
 * address.
 */
int distenv_master_choose(const struct distenv_net *net, const char *node_name,
			  int multi_node, int on_master,
			  struct distenv_master_choice *out,
			  struct distenv_error *err);

/*
 * The site policy's say in the choice (plugin/site/distenv_policy.h):
 * family orders the resolved addresses (that family's first, each group
 * in resolver order; ANY keeps the resolver's order); ifaces, when not
 * NULL, is the site's interfaces: list (NCCL_SOCKET_IFNAME syntax) and
 * only interfaces it selects may carry MASTER_ADDR. Loopback is exempt
 * from ifaces: it is used only in a single-node step, where no other
 * interface is wanted.
 */
struct distenv_master_prefs {
	enum distenv_family family;
	const struct distenv_ifspec *ifaces;
	const char *ifaces_text; /* the list as written, for messages */
};

/* distenv_master_choose with prefs (NULL: none). An error when prefs
 * filtered out every reaching interface names the site's list. */
int distenv_master_choose_prefs(const struct distenv_net *net,
				const struct distenv_master_prefs *prefs,
				const char *node_name, int multi_node,
				int on_master,
				struct distenv_master_choice *out,
				struct distenv_error *err);

/*
 * Whether address f (one entry of net->ifaces) reaches the master of
 * choice m (a successful distenv_master_choose): f's interface is up,
 * f's address is neither loopback (127.0.0.0/8, ::1: told by the
 * address, whatever the interface is called) nor link-local, and either
 * its subnet holds one of the addresses the master's name resolved to
 * here (a master with a name on two networks is reached on both) or it
 * is of m's family on the interface m names (which holds the address or
 * which the kernel routes it through).
 */
int distenv_master_reaches_addr(const struct distenv_net *net,
				const struct distenv_master_choice *m,
				const struct distenv_iface *f);

/* Whether some address of interface name reaches m (above). */
int distenv_master_reaches(const struct distenv_net *net,
			   const struct distenv_master_choice *m,
			   const char *name);

/* The interfaces of net that reach m, each once, m->ifname first
 * ("eth0, ib0"), but skip (NULL: none), for messages. Returns buf. */
const char *distenv_master_reaching(const struct distenv_net *net,
				    const struct distenv_master_choice *m,
				    const char *skip, char *buf, size_t len);

/*
 * The site's master_name: rule: the name to resolve for the master on the
 * data network, from the Slurm node name, e.g. "{host}-ib" or
 * "{host}.ib.example.org" (hosts with a name per network, as /etc/hosts
 * or DNS give them). The rule holds "{host}" exactly once; the rest is
 * host-name characters [A-Za-z0-9.-] (RFC 1123 2.1).
 * Check: errors name where and say what is wrong.
 */
int distenv_master_name_check(const char *rule, const char *where,
			      struct distenv_error *err);

/*
 * Expand rule (checked, or "" meaning host itself) for host into buf of
 * len bytes. Errors: the result does not fit.
 */
int distenv_master_name_expand(const char *rule, const char *host, char *buf,
			       size_t len, struct distenv_error *err);

#endif
