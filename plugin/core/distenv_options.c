/* distenv_options.c: parsers of option values and plugstack arguments. */
#include "distenv_options.h"

#include <stdio.h>
#include <string.h>

#include "distenv_env.h"
#include "distenv_ifspec.h"

void distenv_site_defaults(struct distenv_site *site)
{
	site->default_mode = DISTENV_MODE_OFF;
	site->port_lo = DISTENV_PORT_LO_DEFAULT;
	site->port_hi = DISTENV_PORT_HI_DEFAULT;
}

const char *distenv_mode_name(enum distenv_mode mode)
{
	switch (mode) {
	case DISTENV_MODE_OFF:
		return "off";
	case DISTENV_MODE_TORCHRUN:
		return "torchrun";
	case DISTENV_MODE_TASKS:
		return "tasks";
	default:
		return "unset";
	}
}

int distenv_parse_mode(const char *value, const char *where,
		       enum distenv_mode *out, struct distenv_error *err)
{
	if (!value || !value[0] || strcmp(value, "torchrun") == 0)
		*out = DISTENV_MODE_TORCHRUN;
	else if (strcmp(value, "tasks") == 0)
		*out = DISTENV_MODE_TASKS;
	else if (strcmp(value, "off") == 0)
		*out = DISTENV_MODE_OFF;
	else
		return distenv_error_set(
			err, where,
			"use torchrun (one task per node that runs torchrun or "
			"llamafactory-cli), tasks (one task per rank) or off",
			"unknown mode '%.64s'", value);
	return 0;
}

static int parse_bounded(const char *value, const char *where, uint32_t lo,
			 uint32_t hi, const char *what, uint32_t *out,
			 struct distenv_error *err)
{
	char fix[128];

	snprintf(fix, sizeof(fix), "give %s from %u to %u", what, lo, hi);
	if (!value || !value[0])
		return distenv_error_set(err, where, fix, "no value given");
	if (distenv_parse_u32(value, hi, out) || *out < lo)
		return distenv_error_set(err, where, fix,
					 "'%.64s' is not %s from %u to %u",
					 value, what, lo, hi);
	return 0;
}

int distenv_parse_port(const char *value, const char *where, uint16_t *out,
		       struct distenv_error *err)
{
	uint32_t v;

	if (parse_bounded(value, where, 1024, 65535, "a port number", &v, err))
		return -1;
	*out = (uint16_t)v;
	return 0;
}

int distenv_parse_nproc(const char *value, const char *where, uint32_t *out,
			struct distenv_error *err)
{
	return parse_bounded(value, where, 1, 1024, "a process count", out,
			     err);
}

int distenv_parse_port_range(const char *value, const char *where,
			     uint16_t *lo, uint16_t *hi,
			     struct distenv_error *err)
{
	const char *fix = "write LO-HI with 1024 <= LO <= HI <= 65535, "
			  "e.g. 29600-32767";
	char first[16];
	const char *dash = value ? strchr(value, '-') : NULL;
	uint32_t a, b;
	size_t flen;

	if (!dash)
		return distenv_error_set(err, where, fix,
					 "'%.64s' is not a range LO-HI",
					 value ? value : "");
	flen = (size_t)(dash - value);
	if (flen == 0 || flen >= sizeof(first))
		return distenv_error_set(err, where, fix,
					 "'%.64s' is not a range LO-HI", value);
	memcpy(first, value, flen);
	first[flen] = '\0';
	if (distenv_parse_u32(first, 65535, &a) ||
	    distenv_parse_u32(dash + 1, 65535, &b) || a < 1024 || b < a)
		return distenv_error_set(err, where, fix,
					 "'%.64s' is not a valid port range",
					 value);
	*lo = (uint16_t)a;
	*hi = (uint16_t)b;
	return 0;
}

int distenv_parse_plugstack(int argc, char **argv, struct distenv_site *site,
			    struct distenv_error *err)
{
	int i;

	distenv_site_defaults(site);
	for (i = 0; i < argc; i++) {
		const char *arg = argv[i];
		char where[128];

		snprintf(where, sizeof(where), "plugstack.conf argument '%.64s'",
			 arg);
		if (strncmp(arg, "default=", 8) == 0) {
			if (!arg[8])
				return distenv_error_set(
					err, where, "write default=off|torchrun|tasks",
					"no mode given");
			if (distenv_parse_mode(arg + 8, where,
					       &site->default_mode, err))
				return -1;
		} else if (strncmp(arg, "port_range=", 11) == 0) {
			if (distenv_parse_port_range(arg + 11, where,
						     &site->port_lo,
						     &site->port_hi, err))
				return -1;
		} else {
			return distenv_error_set(
				err, where,
				"known arguments are default=off|torchrun|tasks "
				"and port_range=LO-HI",
				"unknown argument");
		}
	}
	return 0;
}

enum distenv_mode distenv_effective_mode(const struct distenv_site *site,
					 const struct distenv_request *req)
{
	if (req->mode != DISTENV_MODE_UNSET)
		return req->mode;
	return site->default_mode == DISTENV_MODE_UNSET ? DISTENV_MODE_OFF
							: site->default_mode;
}
