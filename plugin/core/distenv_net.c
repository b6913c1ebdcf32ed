/* distenv_net.c: address helpers over struct distenv_ip. */
#include "distenv_net.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static size_t ip_len(const struct distenv_ip *ip)
{
	return ip->family == AF_INET ? 4 : 16;
}

static int is_v4_mapped(const struct distenv_ip *ip)
{
	static const unsigned char prefix[12] = { 0, 0, 0, 0, 0,    0,
						  0, 0, 0, 0, 0xff, 0xff };

	return ip->family == AF_INET6 && memcmp(ip->bytes, prefix, 12) == 0;
}

int distenv_ip_is_loopback(const struct distenv_ip *ip)
{
	static const unsigned char v6_loopback[16] = { 0, 0, 0, 0, 0, 0, 0, 0,
						       0, 0, 0, 0, 0, 0, 0, 1 };

	if (ip->family == AF_INET)
		return ip->bytes[0] == 127;
	if (is_v4_mapped(ip))
		return ip->bytes[12] == 127;
	return memcmp(ip->bytes, v6_loopback, 16) == 0;
}

int distenv_ip_is_link_local(const struct distenv_ip *ip)
{
	return ip->family == AF_INET6 && ip->bytes[0] == 0xfe &&
	       (ip->bytes[1] & 0xc0) == 0x80;
}

int distenv_ip_equal(const struct distenv_ip *a, const struct distenv_ip *b)
{
	return a->family == b->family &&
	       memcmp(a->bytes, b->bytes, ip_len(a)) == 0;
}

int distenv_ip_in_subnet(const struct distenv_ip *ip,
			 const struct distenv_iface *iface)
{
	unsigned bits = iface->prefix_len, i;

	if (ip->family != iface->ip.family || bits > ip_len(ip) * 8)
		return 0;
	for (i = 0; i < bits / 8; i++)
		if (ip->bytes[i] != iface->ip.bytes[i])
			return 0;
	if (bits % 8) {
		unsigned char mask = (unsigned char) (0xff << (8 - bits % 8));

		if ((ip->bytes[i] & mask) != (iface->ip.bytes[i] & mask))
			return 0;
	}
	return 1;
}

const char *distenv_ip_format(const struct distenv_ip *ip, char *buf,
			      size_t len)
{
	if (!inet_ntop(ip->family, ip->bytes, buf, (socklen_t) len))
		snprintf(buf, len, "?");
	return buf;
}

int distenv_ip_parse(const char *text, struct distenv_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (inet_pton(AF_INET, text, ip->bytes) == 1) {
		ip->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, ip->bytes) == 1) {
		ip->family = AF_INET6;
		return 0;
	}
	return -1;
}

const char *distenv_iface_names(const struct distenv_iface *ifaces, size_t n,
				char *buf, size_t len)
{
	size_t used = 0, i, j;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < n; i++) {
		int seen = 0;
		int w;

		for (j = 0; j < i; j++)
			if (strcmp(ifaces[j].name, ifaces[i].name) == 0)
				seen = 1;
		if (seen)
			continue;
		w = snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
			     ifaces[i].name);
		if (w < 0 || (size_t) w >= len - used)
			break;
		used += (size_t) w;
	}
	if (used == 0)
		snprintf(buf, len, "none");
	return buf;
}
