/* distenv_ifuse.c: which interfaces NCCL and Gloo can use across nodes. */
#include "distenv_ifuse.h"

#include <string.h>

#include "distenv_ifspec.h"

int distenv_ip_routable(const struct distenv_ip *ip)
{
	return !distenv_ip_is_loopback(ip) && !distenv_ip_is_link_local(ip);
}

const struct distenv_iface *distenv_iface_first_addr(const struct distenv_iface
							     *ifaces,
						     size_t n, const char *name)
{
	struct distenv_ifspec one;

	/* The exact-name list NCCL would be given: "=name". */
	memset(&one, 0, sizeof(one));
	one.exact = 1;
	one.count = 1;
	if (strlen(name) >= sizeof(one.names[0]))
		return NULL;
	strcpy(one.names[0], name);
	return distenv_ifspec_nccl_takes(&one, ifaces, n);
}

int distenv_iface_usable(const struct distenv_iface *ifaces, size_t n,
			 const char *name, int family)
{
	const struct distenv_iface *first =
		distenv_iface_first_addr(ifaces, n, name);
	size_t i;

	if (!first || !first->up || !distenv_ip_routable(&first->ip))
		return 0;
	for (i = 0; i < n; i++)
		if (strcmp(ifaces[i].name, name) == 0 &&
		    ifaces[i].ip.family == family &&
		    distenv_ip_routable(&ifaces[i].ip))
			return 1;
	return 0;
}
