/*
 * distenv_ifspec.h: NCCL's interface list syntax, as NCCL_SOCKET_IFNAME
 * and NCCL_IB_HCA take it (NCCL environment variable docs;
 * NVIDIA/nccl src/misc/utils.cc parseStringList/matchIfList):
 *   a comma-separated list of prefixes; a leading '^' excludes them
 *   instead; a '=' (after the '^', if any) makes them exact names.
 *   Without '=', "eth1" also matches "eth10".
 */
#ifndef DISTENV_IFSPEC_H
#define DISTENV_IFSPEC_H

#include <stddef.h>

#include "distenv_error.h"
#include "distenv_net.h"

#define DISTENV_IFSPEC_MAX_NAMES 32
/* Longest list text, NUL included: what a request, a site rule and the
 * parser all keep (--distenv-ifname, interfaces:, hca:). */
#define DISTENV_IFSPEC_TEXT_MAX 256

struct distenv_ifspec {
	int exclude; /* leading '^' */
	int exact; /* '=' */
	size_t count;
	char names[DISTENV_IFSPEC_MAX_NAMES][DISTENV_IFNAME_MAX];
};

/*
 * Parse text. Names are 1-15 bytes of [A-Za-z0-9_.:@-] (what Linux
 * allows and shells need no quoting for). Errors name where (the option or
 * variable) and the bad part: empty list, empty name, an IP address where
 * a name belongs (distenv_ifname_is_address), name too long, bad
 * character, more than DISTENV_IFSPEC_MAX_NAMES names.
 */
int distenv_ifspec_parse(const char *text, const char *where,
			 struct distenv_ifspec *spec,
			 struct distenv_error *err);

/*
 * Whether one entry of a list (no '^' or '=' before it) is an IP address
 * rather than an interface name: an IPv4 or IPv6 literal (a "%scope" or
 * "/prefix" after it allowed), or digits and dots with a dot, as in the
 * "192.168.1." people write for a subnet. Neither NCCL nor Gloo takes
 * addresses: NCCL matches names (NCCL env docs, NCCL_SOCKET_IFNAME), Gloo
 * looks the name up among the interfaces (gloo
 * transport/tcp/device.cc, lookupAddrForIface: "Unable to find address
 * for: ..."). len is the entry's length in name.
 */
int distenv_ifname_is_address(const char *name, size_t len);

/* Check text only (distenv_ifspec_parse without keeping the result). */
int distenv_ifspec_validate(const char *text, const char *where,
			    struct distenv_error *err);

/* True when an interface named ifname is selected by spec. */
int distenv_ifspec_selects(const struct distenv_ifspec *spec,
			   const char *ifname);

/*
 * Whether spec selects at least one interface of ifaces that can carry
 * traffic to other nodes: up and, when multi_node, an address that is not
 * loopback (127.0.0.0/8, ::1: told by the address, not the name). Fills
 * first (DISTENV_IFNAME_MAX bytes, may be NULL) with the first selected
 * name in getifaddrs order.
 */
int distenv_ifspec_any(const struct distenv_ifspec *spec,
		       const struct distenv_iface *ifaces, size_t n,
		       int multi_node, char *first);

/*
 * The address NCCL's bootstrap takes for spec: the first of ifaces, in
 * getifaddrs order, whose interface spec selects, IPv6 loopback skipped,
 * up or not (nccl src/misc/socket.cc findInterfaces; src/bootstrap.cc,
 * bootstrapNetInit, asks it for one interface). Every rank advertises
 * that address to the others. NULL when spec selects nothing.
 */
const struct distenv_iface *distenv_ifspec_nccl_takes(
	const struct distenv_ifspec *spec, const struct distenv_iface *ifaces,
	size_t n);

#endif
