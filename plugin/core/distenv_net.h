/*
 * distenv_net.h: plain descriptions of a node's network, as the core takes
 * them. The adapters in plugin/sys/ fill them with getifaddrs(3) and
 * getaddrinfo(3); tests write them by hand.
 */
#ifndef DISTENV_NET_H
#define DISTENV_NET_H

#include <stddef.h>

#define DISTENV_IFNAME_MAX 16 /* IFNAMSIZ on Linux, NUL included */
#define DISTENV_IP_TEXT_MAX 46 /* INET6_ADDRSTRLEN */

/* An IPv4 or IPv6 address, in network byte order. */
struct distenv_ip {
	int family; /* AF_INET or AF_INET6 */
	unsigned char bytes[16];
};

/* One address of one interface (an interface with two addresses appears
 * twice), in getifaddrs order, which is also NCCL's scan order. */
struct distenv_iface {
	char name[DISTENV_IFNAME_MAX];
	struct distenv_ip ip;
	unsigned prefix_len; /* from the netmask: 24 for 255.255.255.0 */
	int up; /* IFF_UP and IFF_RUNNING */
	int loopback; /* IFF_LOOPBACK: informative only; every rule
			      * tells loopback by the address */
};

/*
 * One address the master's name resolved to, in resolver order, with the
 * kernel's choice for sending to it (Linux: the route lookup of
 * ip-route(8) `ip route get ADDR`, its "src"): route_src is the source
 * address the kernel picks (family 0 when unknown), route_ifname the
 * first interface holding route_src ("" when unknown). That interface is
 * not always the one the packets leave through: a /32 on lo, the only
 * IPv4 address of a BGP-unnumbered node, is the source of routes over
 * interfaces that hold no IPv4 address at all.
 */
struct distenv_addr {
	struct distenv_ip ip;
	struct distenv_ip route_src;
	char route_ifname[DISTENV_IFNAME_MAX];
};

/* A node's network facts, for one step. */
struct distenv_net {
	const struct distenv_iface *ifaces;
	size_t n_ifaces;
	const char *resolved_host; /* the name that was resolved */
	const struct distenv_addr *addrs; /* what it resolved to */
	size_t n_addrs;
	const char *resolve_error; /* resolver's message when it failed */
};

/* 127.0.0.0/8, ::1, and IPv4-mapped 127/8 (RFC 1122 3.2.1.3, RFC 4291). */
int distenv_ip_is_loopback(const struct distenv_ip *ip);

/* IPv6 link-local fe80::/10 (RFC 4291): needs a scope id, so not usable
 * as MASTER_ADDR by torchrun. */
int distenv_ip_is_link_local(const struct distenv_ip *ip);

int distenv_ip_equal(const struct distenv_ip *a, const struct distenv_ip *b);

/* True when ip lies in the subnet of iface (its address and prefix). */
int distenv_ip_in_subnet(const struct distenv_ip *ip,
			 const struct distenv_iface *iface);

/* Text form of ip (inet_ntop). Returns buf. */
const char *distenv_ip_format(const struct distenv_ip *ip, char *buf,
			      size_t len);

/* Parse a literal IPv4 or IPv6 address (inet_pton). Returns 0 or -1. */
int distenv_ip_parse(const char *text, struct distenv_ip *ip);

/*
 * The names of the interfaces in ifaces, each once, comma-separated, for
 * messages ("lo, eth1, eth0"). Returns buf.
 */
const char *distenv_iface_names(const struct distenv_iface *ifaces, size_t n,
				char *buf, size_t len);

#endif
