/* distenv_launch_host.c: the host a launch line's master address names,
 * compared by text only (distenv_launch_int.h). */
#include "distenv_launch_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void distenv_launch_host_part(const char *value, char *buf, size_t len)
{
	const char *colon = strchr(value, ':');
	const char *close;

	if (value[0] == '[' && (close = strchr(value, ']'))) {
		snprintf(buf, len, "%.*s", (int) (close - value - 1),
			 value + 1);
		return;
	}
	/* one colon: host:port; more: an IPv6 address without a port */
	if (colon && !strchr(colon + 1, ':'))
		snprintf(buf, len, "%.*s", (int) (colon - value), value);
	else
		snprintf(buf, len, "%s", value);
}

/* A name, not an address: it holds a letter and no colon. */
static int is_name(const char *h)
{
	const char *p;

	if (strchr(h, ':'))
		return 0;
	for (p = h; *p; p++)
		if (isalpha((unsigned char) *p))
			return 1;
	return 0;
}

int distenv_launch_same_host(const char *a, const char *b)
{
	size_t na, nb;

	if (!a || !b || !a[0] || !b[0])
		return 0;
	if (strcasecmp(a, b) == 0)
		return 1;
	if (!is_name(a) || !is_name(b))
		return 0;
	na = strcspn(a, ".");
	nb = strcspn(b, ".");
	return na == nb && strncasecmp(a, b, na) == 0;
}

int distenv_launch_loopback(const char *host)
{
	return strcasecmp(host, "localhost") == 0 ||
	       strncasecmp(host, "localhost.", 10) == 0 ||
	       strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
	       strcmp(host, "0:0:0:0:0:0:0:1") == 0;
}

int distenv_launch_self_expansion(const char *host)
{
	static const char *const vars[] = { "$HOSTNAME", "${HOSTNAME}",
					    "$SLURMD_NODENAME",
					    "${SLURMD_NODENAME}", NULL };
	size_t n = strlen(host);
	int i;

	for (i = 0; vars[i]; i++)
		if (strcmp(host, vars[i]) == 0)
			return 1;
	if (n > 3 && strncmp(host, "$(", 2) == 0 && host[n - 1] == ')')
		return strncmp(host + 2, "hostname", 8) == 0 &&
		       (host[10] == ')' || host[10] == ' ');
	if (n > 2 && host[0] == '`' && host[n - 1] == '`')
		return strncmp(host + 1, "hostname", 8) == 0 &&
		       (host[9] == '`' || host[9] == ' ');
	return 0;
}
