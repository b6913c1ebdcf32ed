/* distenv_options.c: parsers of option values and plugstack arguments. */
#include "distenv_options.h"

#include <stdio.h>
#include <string.h>

#include "distenv_env.h"
#include "distenv_ifspec.h"

void distenv_site_defaults(struct distenv_site *site)
{
	memset(site, 0, sizeof(*site));
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
	case DISTENV_MODE_ELASTIC:
		return "elastic";
	default:
		return "unset";
	}
}

int distenv_parse_mode(const char *value, const char *where,
		       enum distenv_mode *out, struct distenv_error *err)
{
	if (distenv_option_text_check(value, where, err))
		return -1;
	if (!value || !value[0] || strcmp(value, "torchrun") == 0)
		*out = DISTENV_MODE_TORCHRUN;
	else if (strcmp(value, "tasks") == 0)
		*out = DISTENV_MODE_TASKS;
	else if (strcmp(value, "elastic") == 0)
		*out = DISTENV_MODE_ELASTIC;
	else if (strcmp(value, "off") == 0)
		*out = DISTENV_MODE_OFF;
	else
		return distenv_error_set(
			err, where,
			"use torchrun (one task per node that runs torchrun or "
			"llamafactory-cli), elastic (the same with torchrun's "
			"c10d rendezvous), tasks (one task per rank) or off",
			"unknown mode '%.64s'", value);
	return 0;
}

static int parse_bounded(const char *value, const char *where, uint32_t lo,
			 uint32_t hi, const char *what, uint32_t *out,
			 struct distenv_error *err)
{
	char fix[128];

	snprintf(fix, sizeof(fix), "give %s from %u to %u", what, lo, hi);
	if (distenv_option_text_check(value, where, err))
		return -1;
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
	*out = (uint16_t) v;
	return 0;
}

int distenv_parse_nproc(const char *value, const char *where, uint32_t *out,
			struct distenv_error *err)
{
	return parse_bounded(value, where, 1, 1024, "a process count", out,
			     err);
}

int distenv_parse_nodes_range(const char *value, const char *where,
			      uint32_t *min, uint32_t *max,
			      struct distenv_error *err)
{
	const char *colon = value ? strchr(value, ':') : NULL;
	char first[16];
	size_t flen;

	if (distenv_option_text_check(value, where, err))
		return -1;
	if (!colon) {
		if (parse_bounded(value, where, 1, 100000, "a node count", min,
				  err))
			return -1;
		*max = *min;
		return 0;
	}
	flen = (size_t) (colon - value);
	if (flen == 0 || flen >= sizeof(first))
		return distenv_error_set(
			err, where, "write MIN:MAX, e.g. 2:4, or one count",
			"'%.64s' is not MIN:MAX", value);
	memcpy(first, value, flen);
	first[flen] = '\0';
	if (parse_bounded(first, where, 1, 100000, "a node count", min, err) ||
	    parse_bounded(colon + 1, where, 1, 100000, "a node count", max,
			  err))
		return -1;
	if (*min > *max)
		return distenv_error_set(err, where,
					 "write the smaller count first",
					 "MIN %u is larger than MAX %u", *min,
					 *max);
	return 0;
}

int distenv_parse_max_restarts(const char *value, const char *where,
			       uint32_t *out, struct distenv_error *err)
{
	return parse_bounded(value, where, 0, 1000, "a restart count", out,
			     err);
}

int distenv_parse_port_range(const char *value, const char *where, uint16_t *lo,
			     uint16_t *hi, struct distenv_error *err)
{
	const char *fix = "write LO-HI with 1024 <= LO <= HI <= 65535, "
			  "e.g. 29600-32767";
	char first[16];
	const char *dash = value ? strchr(value, '-') : NULL;
	uint32_t a, b;
	size_t flen;

	if (distenv_option_text_check(value, where, err))
		return -1;
	if (!dash)
		return distenv_error_set(err, where, fix,
					 "'%.64s' is not a range LO-HI",
					 value ? value : "");
	flen = (size_t) (dash - value);
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
	*lo = (uint16_t) a;
	*hi = (uint16_t) b;
	return 0;
}

/* One plugstack argument into site. */
static int parse_plugstack_arg(const char *arg, struct distenv_site *site,
			       struct distenv_error *err)
{
	char where[128], shown[72];

	snprintf(where, sizeof(where), "plugstack.conf argument '%s'",
		 distenv_printable(arg, shown, sizeof(shown)));
	if (distenv_option_text_check(arg, where, err))
		return -1;
	if (strncmp(arg, "default=", 8) == 0) {
		if (!arg[8])
			return distenv_error_set(
				err, where, "write default=off|torchrun|tasks",
				"no mode given");
		if (distenv_parse_mode(arg + 8, where, &site->default_mode,
				       err))
			return -1;
		site->given |= DISTENV_SITE_GIVEN_MODE;
	} else if (strncmp(arg, "port_range=", 11) == 0) {
		if (distenv_parse_port_range(arg + 11, where, &site->port_lo,
					     &site->port_hi, err))
			return -1;
		site->given |= DISTENV_SITE_GIVEN_PORTS;
	} else if (strncmp(arg, "config=", 7) == 0) {
		/* plugstack.conf has no quoting (spank(8)), so the path
		 * holds no blank; it must be absolute because slurmd,
		 * slurmstepd and srun run in different directories. */
		if (arg[7] != '/' || strlen(arg + 7) >= sizeof(site->config))
			return distenv_error_set(
				err, where,
				"write config=/etc/slurm/distenv.yaml (an "
				"absolute path, at most 255 bytes)",
				"not an absolute path");
		snprintf(site->config, sizeof(site->config), "%s", arg + 7);
	} else {
		return distenv_error_set(
			err, where,
			"known arguments are default=off|torchrun|tasks, "
			"port_range=LO-HI and config=PATH",
			"unknown argument");
	}
	return 0;
}

int distenv_parse_plugstack(int argc, char **argv, struct distenv_site *site,
			    struct distenv_error *err)
{
	char others[256] = "", shown[72];
	size_t used = 0;
	int i, bad = 0;

	distenv_site_defaults(site);
	/* Every argument is read, so that the admin sees all bad ones at
	 * once: the first in full, the others named after it. */
	for (i = 0; i < argc; i++) {
		struct distenv_error e;

		distenv_error_clear(&e);
		if (!parse_plugstack_arg(argv[i], site, &e))
			continue;
		if (bad++ == 0) {
			if (err)
				*err = e;
		} else if (used < sizeof(others)) {
			int w = snprintf(others + used, sizeof(others) - used,
					 "%s'%s'", used ? ", " : "",
					 distenv_printable(argv[i], shown,
							   sizeof(shown)));

			if (w > 0)
				used += (size_t) w;
		}
	}
	if (bad > 1 && err) {
		size_t len = strlen(err->what);

		snprintf(err->what + len, sizeof(err->what) - len,
			 " (and %d more bad argument%s: %s)", bad - 1,
			 bad == 2 ? "" : "s", others);
	}
	return bad ? -1 : 0;
}

enum distenv_mode distenv_effective_mode(const struct distenv_site *site,
					 const struct distenv_request *req)
{
	if (req->mode != DISTENV_MODE_UNSET)
		return req->mode;
	return site->default_mode == DISTENV_MODE_UNSET ? DISTENV_MODE_OFF :
							  site->default_mode;
}

int distenv_option_text_check(const char *value, const char *where,
			      struct distenv_error *err)
{
	const char *fix = "give the value in plain ASCII, without blanks, "
			  "quotes, '#' or shell metacharacters";
	char shown[72];
	size_t len, i;

	if (!value)
		return 0;
	len = strlen(value);
	if (len > DISTENV_OPTION_TEXT_MAX)
		return distenv_error_set(
			err, where, fix,
			"value is %zu bytes long, more than the %d allowed",
			len, DISTENV_OPTION_TEXT_MAX);
	distenv_printable(value, shown, sizeof(shown));
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char) value[i];

		if (c < 0x20 || c >= 0x7f)
			return distenv_error_set(
				err, where, fix,
				"'%s' has the byte 0x%02x at offset %zu, which "
				"is not printable ASCII",
				shown, c, i);
		if (c == '#')
			return distenv_error_set(
				err, where, fix,
				"'%s' has the character '#' (0x23), which "
				"starts a comment in plugstack.conf and in "
				"shells",
				shown);
		if (c == ' ' || strchr("|&;<>()$`\\\"'*?[]{}~!", c))
			return distenv_error_set(
				err, where, fix,
				"'%s' has the character '%c' (0x%02x), which "
				"the shell treats specially and no value of "
				"this option holds",
				shown, c, c);
	}
	return 0;
}

/* The rule's place, for messages: "partition P" or "the site". */
static const char *rule_scope(const struct distenv_site *site, char *buf,
			      size_t len)
{
	if (site->partition[0])
		snprintf(buf, len, "partition %s", site->partition);
	else
		snprintf(buf, len, "this site");
	return buf;
}

int distenv_site_check_request(const struct distenv_site *site,
			       const struct distenv_request *req,
			       struct distenv_error *err)
{
	const char *file = site->config[0] ? site->config : "the site file";
	char scope[DISTENV_PARTITION_MAX + 16];

	rule_scope(site, scope, sizeof(scope));
	if (site->disabled)
		return distenv_error_set(
			err, "--distenv",
			"run without --distenv here, or on a "
			"partition where distenv is on; ask your admins why",
			"distenv is turned off for %s (%s: enabled: false)",
			scope, file);
	if (site->lf_disabled && req->lf_config[0])
		return distenv_error_set(
			err, "--distenv-lf-config",
			"leave it out and pass the "
			"YAML to llamafactory-cli yourself, or ask your admins",
			"the LLaMA-Factory run preparation is turned off for "
			"%s (%s: lf_features: false)",
			scope, file);
	if ((site->locked & DISTENV_SITE_LOCK_PORTS) && req->port)
		return distenv_error_set(
			err, "--distenv-port",
			"leave --distenv-port out: "
			"distenv picks the port from the site's range",
			"the site locks the port range for %s (%s: locked: "
			"[port_range]), so --distenv-port=%u is not taken",
			scope, file, req->port);
	if ((site->locked & DISTENV_SITE_LOCK_IFACES) && req->ifname[0])
		return distenv_error_set(
			err, "--distenv-ifname",
			"leave --distenv-ifname out: "
			"distenv picks the interface by the site's rules",
			"the site locks the interface rules for %s (%s: locked: "
			"[interfaces]), so --distenv-ifname=%s is not taken",
			scope, file, req->ifname);
	if ((site->locked & DISTENV_SITE_LOCK_LF_DIR) && req->lf_dir[0])
		return distenv_error_set(
			err, "--distenv-lf-dir",
			"leave --distenv-lf-dir out: the resolved copies go "
			"under the site's lf_dir",
			"the site locks the directory of the resolved copies "
			"for %s (%s: locked: [lf_dir]), so --distenv-lf-dir=%s "
			"is not taken",
			scope, file, req->lf_dir);
	return 0;
}

int distenv_request_set(struct distenv_request *req, enum distenv_opt_id id,
			const char *value, const char *where,
			struct distenv_error *err)
{
	switch (id) {
	case DISTENV_OPT_MODE:
	case DISTENV_OPT_CMD_MODE:
		return distenv_parse_mode(value, where, &req->mode, err);
	case DISTENV_OPT_NODE_RANGE:
		return distenv_parse_nodes_range(value, where, &req->min_nodes,
						 &req->max_nodes, err);
	case DISTENV_OPT_MAX_RESTARTS:
		if (distenv_parse_max_restarts(value, where, &req->max_restarts,
					       err))
			return -1;
		req->max_restarts_given = 1;
		return 0;
	case DISTENV_OPT_PORT:
		return distenv_parse_port(value, where, &req->port, err);
	case DISTENV_OPT_IFNAME:
		if (distenv_ifspec_validate(value, where, err))
			return -1;
		snprintf(req->ifname, sizeof(req->ifname), "%s", value);
		return 0;
	case DISTENV_OPT_NPROC:
		return distenv_parse_nproc(value, where, &req->nproc, err);
	case DISTENV_OPT_SHOW:
		req->show = 1;
		return 0;
	case DISTENV_OPT_MARK_STORAGE:
		req->mark_storage = 1;
		return 0;
	default:
		return distenv_error_set(err, where, NULL,
					 "not an option of the request");
	}
}

int distenv_parse_lf_dir(const char *value, const char *where,
			 struct distenv_error *err)
{
	if (!value || !value[0])
		return distenv_error_set(err, where,
					 "name the directory, e.g. "
					 "/scratch/$USER/distenv",
					 "no directory given");
	if (distenv_option_text_check(value, where, err))
		return -1;
	if (value[0] != '/')
		return distenv_error_set(
			err, where,
			"give an absolute directory that exists on every node "
			"and that the job's container, if any, mounts at the "
			"same path (e.g. beside output_dir)",
			"'%s' is not an absolute path", value);
	return 0;
}
