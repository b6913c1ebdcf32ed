/*
 * distenv_ifuse.h: whether an interface can be named to NCCL and Gloo in
 * a multi-node step. Told by the interface's addresses, never by its
 * name: what matters is the address each library takes from it.
 *
 * - NCCL_SOCKET_IFNAME: NCCL keeps one address per selected interface,
 *   the first getifaddrs(3) lists for it, IPv6 loopback skipped (nccl
 *   src/misc/socket.cc, findInterfaces; NCCL_SOCKET_FAMILY can narrow
 *   the family), and advertises it to the other ranks.
 * - GLOO_SOCKET_IFNAME: Gloo takes the first IPv4 or IPv6 address
 *   getifaddrs lists under the name (gloo gloo/transport/tcp/device.cc,
 *   lookupAddrForIface, with AF_UNSPEC as torch creates the device).
 * - Linux lists an interface's IPv4 addresses before its IPv6 ones, and
 *   lo's 127.0.0.1/8 before any address added to lo later: naming lo
 *   gives both libraries 127.0.0.1 even when lo also holds the node's
 *   routable /32 (as on BGP-unnumbered nodes).
 */
#ifndef DISTENV_IFUSE_H
#define DISTENV_IFUSE_H

#include <stddef.h>

#include "distenv_net.h"

/* The address NCCL takes from the interface called name (above), or NULL
 * when ifaces has none under that name. */
const struct distenv_iface *distenv_iface_first_addr(const struct distenv_iface
							     *ifaces,
						     size_t n,
						     const char *name);

/*
 * Whether the interface called name can carry a multi-node step whose
 * master address is of family (AF_INET, AF_INET6): it is up, the
 * address NCCL takes from it is neither loopback (127.0.0.0/8, ::1) nor
 * IPv6 link-local (fe80::/10, which needs the link's scope and crosses
 * no router), and it holds an address of family that is neither.
 * An interface with no usable IPv4 address (IPv6 link-local only) fails
 * an IPv4 master; lo fails, whatever else it holds.
 */
int distenv_iface_usable(const struct distenv_iface *ifaces, size_t n,
			 const char *name, int family);

/* Whether ip is neither loopback nor link-local: an address another
 * node can be given. */
int distenv_ip_routable(const struct distenv_ip *ip);

#endif
