/* distenv_ifspec.c: parse and match NCCL-style interface lists. */
#include "distenv_ifspec.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static int name_char_ok(char c)
{
	return isalnum((unsigned char) c) || strchr("_.:@-", c) != NULL;
}

int distenv_ifname_is_address(const char *name, size_t len)
{
	char text[DISTENV_IP_TEXT_MAX + 8];
	struct distenv_ip ip;
	size_t i, cut = len;
	int dots = 0, numeric = 1;

	for (i = 0; i < len; i++) {
		if (name[i] == '.')
			dots++;
		else if (!isdigit((unsigned char) name[i]))
			numeric = 0;
		if ((name[i] == '%' || name[i] == '/') && cut == len)
			cut = i;
	}
	if (numeric && dots)
		return 1;
	if (cut >= sizeof(text))
		return 0;
	memcpy(text, name, cut);
	text[cut] = '\0';
	return distenv_ip_parse(text, &ip) == 0;
}

int distenv_ifspec_parse(const char *text, const char *where,
			 struct distenv_ifspec *spec, struct distenv_error *err)
{
	const char *fix = "write interface names or prefixes separated by "
			  "commas, e.g. eth0 or =eth0,ib0 or ^docker,lo";
	const char *p = text;
	char shown[72];

	memset(spec, 0, sizeof(*spec));
	if (!p)
		return distenv_error_set(err, where, fix, "no value given");
	/* The request keeps the text in DISTENV_IFSPEC_TEXT_MAX bytes: a
	 * longer list would be cut, not refused. */
	if (strlen(p) >= DISTENV_IFSPEC_TEXT_MAX)
		return distenv_error_set(
			err, where, fix,
			"value is %zu bytes long, more than the %d allowed",
			strlen(p), DISTENV_IFSPEC_TEXT_MAX - 1);
	/* Messages show the text with every byte that is not printable
	 * ASCII as '?', so no line break or escape reaches a log. */
	distenv_printable(text, shown, sizeof(shown));
	if (*p == '^') {
		spec->exclude = 1;
		p++;
	}
	if (*p == '=') {
		spec->exact = 1;
		p++;
	}
	if (!*p)
		return distenv_error_set(err, where, fix,
					 "'%s' names no interface", shown);
	for (;;) {
		size_t len = 0;

		while (p[len] && p[len] != ',')
			len++;
		if (len && distenv_ifname_is_address(p, len))
			return distenv_error_set(
				err, where,
				"name the interface that holds the address "
				"(`ip -br addr` lists them), e.g. eth0",
				"'%.*s' is an IP address, not an interface name",
				(int) (len > 64 ? 64 : len), p);
		len = 0;
		while (p[len] && p[len] != ',') {
			if (!name_char_ok(p[len]))
				return distenv_error_set(
					err, where, fix,
					"'%s' has the character '%c' (0x%02x), "
					"which no interface name holds",
					shown,
					isprint((unsigned char) p[len]) ?
						p[len] :
						'?',
					(unsigned char) p[len]);
			len++;
		}
		if (len == 0)
			return distenv_error_set(err, where, fix,
						 "'%s' has an empty name",
						 shown);
		if (len >= DISTENV_IFNAME_MAX)
			return distenv_error_set(
				err, where, fix,
				"'%.*s' is longer than an interface name "
				"(15 characters)",
				(int) (len > 64 ? 64 : len), p);
		if (spec->count == DISTENV_IFSPEC_MAX_NAMES)
			return distenv_error_set(err, where, fix,
						 "more than %d names",
						 DISTENV_IFSPEC_MAX_NAMES);
		memcpy(spec->names[spec->count], p, len);
		spec->names[spec->count][len] = '\0';
		spec->count++;
		p += len;
		if (!*p)
			break;
		p++; /* the comma */
	}
	return 0;
}

int distenv_ifspec_validate(const char *text, const char *where,
			    struct distenv_error *err)
{
	struct distenv_ifspec spec;

	return distenv_ifspec_parse(text, where, &spec, err);
}

int distenv_ifspec_selects(const struct distenv_ifspec *spec,
			   const char *ifname)
{
	size_t i;
	int hit = 0;

	for (i = 0; i < spec->count && !hit; i++) {
		if (spec->exact)
			hit = strcmp(ifname, spec->names[i]) == 0;
		else
			hit = strncmp(ifname, spec->names[i],
				      strlen(spec->names[i])) == 0;
	}
	return spec->exclude ? !hit : hit;
}

int distenv_ifspec_any(const struct distenv_ifspec *spec,
		       const struct distenv_iface *ifaces, size_t n,
		       int multi_node, char *first)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!ifaces[i].up ||
		    (multi_node && distenv_ip_is_loopback(&ifaces[i].ip)))
			continue;
		if (!distenv_ifspec_selects(spec, ifaces[i].name))
			continue;
		if (first)
			snprintf(first, DISTENV_IFNAME_MAX, "%s",
				 ifaces[i].name);
		return 1;
	}
	return 0;
}

const struct distenv_iface *distenv_ifspec_nccl_takes(
	const struct distenv_ifspec *spec, const struct distenv_iface *ifaces,
	size_t n)
{
	static const struct distenv_ip v6_loopback = {
		.family = AF_INET6,
		.bytes = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }
	};
	size_t i;

	for (i = 0; i < n; i++) {
		if (distenv_ip_equal(&ifaces[i].ip, &v6_loopback) ||
		    !distenv_ifspec_selects(spec, ifaces[i].name))
			continue;
		return &ifaces[i];
	}
	return NULL;
}
