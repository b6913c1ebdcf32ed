/* distenv_sys_net.c: interfaces, resolution and routes from the system. */
#include "distenv_sys.h"

#include "distenv_ports.h"
#include "distenv_sys_file.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static unsigned prefix_len(const struct sockaddr *mask)
{
	const unsigned char *b;
	unsigned bits = 0;
	size_t n, i;

	if (!mask)
		return 0;
	if (mask->sa_family == AF_INET) {
		b = (const unsigned char *) &((const struct sockaddr_in *) mask)
			    ->sin_addr;
		n = 4;
	} else {
		b = ((const struct sockaddr_in6 *) mask)->sin6_addr.s6_addr;
		n = 16;
	}
	for (i = 0; i < n; i++)
		bits += (unsigned) __builtin_popcount(b[i]);
	return bits;
}

static int ip_from_sockaddr(const struct sockaddr *sa, struct distenv_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (sa->sa_family == AF_INET) {
		ip->family = AF_INET;
		memcpy(ip->bytes, &((const struct sockaddr_in *) sa)->sin_addr,
		       4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		ip->family = AF_INET6;
		memcpy(ip->bytes,
		       ((const struct sockaddr_in6 *) sa)->sin6_addr.s6_addr,
		       16);
		return 0;
	}
	return -1;
}

static int gather_ifaces(struct distenv_net_facts *f, struct distenv_error *err)
{
	struct ifaddrs *all, *it;
	size_t n = 0;

	if (getifaddrs(&all))
		return distenv_error_set(err, "getifaddrs", NULL,
					 "cannot list network interfaces: %s",
					 strerror(errno));
	for (it = all; it; it = it->ifa_next)
		n++;
	f->ifaces = calloc(n ? n : 1, sizeof(*f->ifaces));
	if (!f->ifaces) {
		freeifaddrs(all);
		return distenv_error_set(err, "getifaddrs", NULL,
					 "out of memory");
	}
	for (it = all; it; it = it->ifa_next) {
		struct distenv_iface *d = &f->ifaces[f->net.n_ifaces];

		if (!it->ifa_addr || ip_from_sockaddr(it->ifa_addr, &d->ip))
			continue;
		snprintf(d->name, sizeof(d->name), "%s", it->ifa_name);
		d->prefix_len = prefix_len(it->ifa_netmask);
		d->up = (it->ifa_flags & IFF_UP) &&
			(it->ifa_flags & IFF_RUNNING);
		d->loopback = (it->ifa_flags & IFF_LOOPBACK) != 0;
		f->net.n_ifaces++;
	}
	freeifaddrs(all);
	f->net.ifaces = f->ifaces;
	return 0;
}

/* The kernel's source address for sending to sa, and the first
 * interface holding it, into a: connect() on a UDP socket only picks the
 * route and the source (udp(7), ip(7)); no packet leaves. */
static void route_choice(const struct distenv_net_facts *f,
			 const struct sockaddr *sa, socklen_t salen,
			 struct distenv_addr *a)
{
	struct sockaddr_storage local;
	socklen_t llen = sizeof(local);
	struct sockaddr_storage dst;
	size_t i;
	int fd;

	a->route_ifname[0] = '\0';
	memset(&a->route_src, 0, sizeof(a->route_src));
	memcpy(&dst, sa, salen);
	/* A port is needed for connect(); 9 (discard) is never contacted. */
	if (dst.ss_family == AF_INET)
		((struct sockaddr_in *) &dst)->sin_port = htons(9);
	else
		((struct sockaddr_in6 *) &dst)->sin6_port = htons(9);
	fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (connect(fd, (struct sockaddr *) &dst, salen) == 0 &&
	    getsockname(fd, (struct sockaddr *) &local, &llen) == 0 &&
	    ip_from_sockaddr((struct sockaddr *) &local, &a->route_src) == 0) {
		for (i = 0; i < f->net.n_ifaces; i++)
			if (distenv_ip_equal(&f->ifaces[i].ip, &a->route_src)) {
				snprintf(a->route_ifname, DISTENV_IFNAME_MAX,
					 "%s", f->ifaces[i].name);
				break;
			}
	}
	close(fd);
}

static int resolve(struct distenv_net_facts *f, struct distenv_error *err)
{
	struct addrinfo hints, *res, *it;
	size_t n = 0;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM; /* one entry per address */
	rc = getaddrinfo(f->host, NULL, &hints, &res);
	if (rc) {
		snprintf(f->resolve_error, sizeof(f->resolve_error), "%s",
			 rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		f->net.resolve_error = f->resolve_error;
		return 0;
	}
	for (it = res; it; it = it->ai_next)
		n++;
	f->addrs = calloc(n ? n : 1, sizeof(*f->addrs));
	if (!f->addrs) {
		freeaddrinfo(res);
		return distenv_error_set(err, "getaddrinfo", NULL,
					 "out of memory");
	}
	for (it = res; it; it = it->ai_next) {
		struct distenv_addr *a = &f->addrs[f->net.n_addrs];
		size_t j;
		int dup = 0;

		if (ip_from_sockaddr(it->ai_addr, &a->ip))
			continue;
		for (j = 0; j < f->net.n_addrs; j++)
			dup |= distenv_ip_equal(&f->addrs[j].ip, &a->ip);
		if (dup)
			continue;
		route_choice(f, it->ai_addr, it->ai_addrlen, a);
		f->net.n_addrs++;
	}
	freeaddrinfo(res);
	f->net.addrs = f->addrs;
	return 0;
}

int distenv_net_facts_gather(const char *host, struct distenv_net_facts *facts,
			     struct distenv_error *err)
{
	memset(facts, 0, sizeof(*facts));
	snprintf(facts->host, sizeof(facts->host), "%s", host ? host : "");
	facts->net.resolved_host = facts->host;
	if (gather_ifaces(facts, err))
		return -1;
	if (!facts->host[0]) {
		snprintf(facts->resolve_error, sizeof(facts->resolve_error),
			 "no master host name known");
		facts->net.resolve_error = facts->resolve_error;
		return 0;
	}
	return resolve(facts, err);
}

void distenv_net_facts_free(struct distenv_net_facts *facts)
{
	free(facts->ifaces);
	free(facts->addrs);
	memset(facts, 0, sizeof(*facts));
}

/* Two integers, "32768\t60999\n" (ip(7), ip_local_port_range). */
static const struct distenv_file_rules ephemeral_rules = {
	.name = "the kernel's ephemeral port range",
	.max = 64,
};

void distenv_sys_ephemeral(uint16_t *lo, uint16_t *hi)
{
	struct distenv_file text;

	*lo = 1;
	*hi = 0;
	if (distenv_file_read(DISTENV_EPHEMERAL_FILE, &ephemeral_rules, &text,
			      NULL))
		return;
	if (distenv_parse_ephemeral(text.data, lo, hi, NULL)) {
		*lo = 1;
		*hi = 0;
	}
	distenv_file_free(&text);
}
