/*
 * distenv_master.h: choose MASTER_ADDR and the interface that reaches it,
 * from the resolver's answer and the node's interfaces.
 *
 * Rules (issue "Core"; ../shared/CONTRACTS.md sections 4 and 6):
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
 *   the one whose subnet holds it, else the one the kernel routes it
 *   through (found by the adapter with a UDP connect(), which sends no
 *   packet).
 */
#ifndef DISTENV_MASTER_H
#define DISTENV_MASTER_H

#include "distenv_error.h"
#include "distenv_net.h"

struct distenv_master_choice {
	struct distenv_ip ip;
	char addr[DISTENV_IP_TEXT_MAX];   /* ip as text: MASTER_ADDR */
	char ifname[DISTENV_IFNAME_MAX];  /* interface that reaches it */
	char addr_reason[256];            /* why this address */
	char ifname_reason[256];          /* why this interface */
};

/*
 * net: this node's facts; node_name: this node, for messages;
 * multi_node: the step spans more than one node; on_master: this node is
 * node index 0. Errors: resolution failed, only loopback in a multi-node
 * step, no usable address, no interface reaches the address.
 */
int distenv_master_choose(const struct distenv_net *net, const char *node_name,
			  int multi_node, int on_master,
			  struct distenv_master_choice *out,
			  struct distenv_error *err);

#endif
