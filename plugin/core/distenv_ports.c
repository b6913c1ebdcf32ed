/* distenv_ports.c: reserved-port strings and the derived MASTER_PORT. */
#include "distenv_ports.h"

#include <stdio.h>
#include <string.h>

#include "distenv_env.h"
#include "distenv_options.h"

#define RESV_VAR "SLURM_STEP_RESV_PORTS"

/* Parse digits at *p into a port (1-65535), advancing *p. */
static int take_port(const char **p, uint32_t *out)
{
	char digits[8];
	size_t n = 0;

	while ((*p)[n] >= '0' && (*p)[n] <= '9') {
		if (n + 1 >= sizeof(digits))
			return -1;
		digits[n] = (*p)[n];
		n++;
	}
	digits[n] = '\0';
	if (n == 0 || distenv_parse_u32(digits, 65535, out) || *out == 0)
		return -1;
	*p += n;
	return 0;
}

int distenv_resv_ports_first(const char *value, uint16_t *port,
			     struct distenv_error *err)
{
	const char *p = value;
	uint32_t first = 0;
	int items = 0;
	char shown[72];

	if (!value || !*value)
		return distenv_error_set(err, RESV_VAR, NULL, "empty value");
	for (;;) {
		uint32_t lo, hi;

		if (take_port(&p, &lo))
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			if (take_port(&p, &hi) || hi < lo)
				goto bad;
		}
		if (items++ == 0)
			first = lo;
		if (*p == '\0')
			break;
		if (*p != ',')
			goto bad;
		p++;
	}
	*port = (uint16_t) first;
	return 0;
bad:
	return distenv_error_set(
		err, RESV_VAR,
		"this value comes from Slurm; report it to your admin, or pass "
		"--distenv-port with srun --resv-ports=0",
		"'%s' is not a port list like 20000-20002 or 20000,20005",
		distenv_printable(value, shown, sizeof(shown)));
}

int distenv_resv_ports_nth(const char *value, uint32_t idx, uint16_t *port)
{
	const char *p = value;
	uint32_t seen = 0;

	if (!value || !*value)
		return -1;
	for (;;) {
		uint32_t lo, hi;

		if (take_port(&p, &lo))
			return -1;
		hi = lo;
		if (*p == '-') {
			p++;
			if (take_port(&p, &hi) || hi < lo)
				return -1;
		}
		if (idx - seen <= hi - lo) {
			*port = (uint16_t) (lo + (idx - seen));
			return 0;
		}
		seen += hi - lo + 1;
		if (*p == '\0')
			return 1;
		if (*p != ',')
			return -1;
		p++;
	}
}

int distenv_parse_ephemeral(const char *text, uint16_t *lo, uint16_t *hi,
			    struct distenv_error *err)
{
	unsigned a, b;
	char extra, shown[72];

	if (!text || sscanf(text, "%u %u %c", &a, &b, &extra) != 2 ||
	    a > 65535 || b > 65535 || a > b)
		return distenv_error_set(
			err, "/proc/sys/net/ipv4/ip_local_port_range", NULL,
			"'%s' is not two port numbers LO HI",
			distenv_printable(text, shown, sizeof(shown)));
	*lo = (uint16_t) a;
	*hi = (uint16_t) b;
	return 0;
}

int distenv_derive_port(uint32_t job_id, uint32_t step_id, uint16_t lo,
			uint16_t hi, uint16_t eph_lo, uint16_t eph_hi,
			uint16_t *port, struct distenv_error *err)
{
	uint32_t below = 0, above = 0, n, idx;
	uint32_t cut_lo = eph_lo, cut_hi = eph_hi;

	/* The usable ports are [lo, hi] less [eph_lo, eph_hi]: at most one
	 * piece below the ephemeral range and one above it. */
	if (eph_lo > eph_hi || eph_hi < lo || eph_lo > hi) {
		below = (uint32_t) hi - lo + 1;
	} else {
		if (cut_lo > lo)
			below = cut_lo - lo;
		if (cut_hi < hi)
			above = hi - cut_hi;
	}
	n = below + above;
	if (n == 0)
		return distenv_error_set(
			err, "plugstack.conf port_range",
			"set port_range= outside the ephemeral range, or pass "
			"--distenv-port",
			"every port of %u-%u lies in the kernel's ephemeral "
			"range %u-%u",
			lo, hi, eph_lo, eph_hi);
	/* 7919 (a prime) spreads consecutive job ids over the range, while
	 * consecutive step ids of one job take consecutive ports. */
	idx = (uint32_t) (((uint64_t) job_id * 7919u + step_id) % n);
	if (idx < below)
		*port = (uint16_t) (lo + idx);
	else
		*port = (uint16_t) (cut_hi + 1 + (idx - below));
	return 0;
}
