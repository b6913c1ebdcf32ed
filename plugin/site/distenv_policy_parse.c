/*
 * distenv_policy_parse.c: the strict parser of the site policy file
 * (keys in distenv_policy.h), from a memory buffer, with libyaml's event
 * API. Events rather than libyaml's document API, because the document
 * loader expands aliases silently (and an alias inside its own anchor
 * makes a cycle), while here an alias, an anchor or a tag is simply an
 * error: a policy file needs none of them.
 *
 * Every error's where is "FILE:LINE:COL" (1-based, as editors count) of
 * the offending key or value; its what starts with the key; its fix
 * lists what is accepted. Parsing stops at the first error.
 */
#include "distenv_policy.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "distenv_derived.h"
#include "distenv_ifspec.h"
#include "distenv_master.h"
#include "distenv_vars.h"

#define WHERE_MAX (DISTENV_SITE_PATH_MAX + 48)

struct parser {
	yaml_parser_t yp;
	yaml_event_t ev;
	int have_ev;
	const char *text; /* the input, to place reader errors */
	size_t len;
	const char *name;
	struct distenv_policy_file *file;
	struct distenv_error *err;
};

static const char top_keys[] =
	"accepted keys: version, default_mode, port_range, interfaces, "
	"address_family, master_name, hca, topology_xml, env, storage, "
	"enabled, lf_features, locked, partitions";
static const char partition_keys[] =
	"accepted keys in a partition: default_mode, port_range, interfaces, "
	"address_family, master_name, hca, topology_xml, env, storage, "
	"enabled, lf_features, locked";

static void where_at(const struct parser *p, yaml_mark_t m, char *buf)
{
	snprintf(buf, WHERE_MAX, "%s:%zu:%zu", p->name, m.line + 1,
		 m.column + 1);
}

static int fail_at(struct parser *p, yaml_mark_t m, const char *fix,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail_at(struct parser *p, yaml_mark_t m, const char *fix,
		   const char *fmt, ...)
{
	char where[WHERE_MAX], what[DISTENV_ERROR_TEXT];
	va_list ap;

	where_at(p, m, where);
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return distenv_error_set(p->err, where, fix, "%s", what);
}

/* A core parser filled err; put "KEY: " before its what. */
static int key_prefix(struct parser *p, const char *key)
{
	char what[DISTENV_ERROR_TEXT];

	snprintf(what, sizeof(what), "%s: %s", key, p->err->what);
	snprintf(p->err->what, sizeof(p->err->what), "%s", what);
	return -1;
}

/* libyaml's own error (syntax, encoding), placed at its mark. */
static int syntax_error(struct parser *p)
{
	const yaml_parser_t *y = &p->yp;
	const char *fix = "fix the YAML syntax (a mapping of keys, two-space "
			  "indents, no tabs); see distenv(8), SITE FILE, or the "
			  "example /etc/slurm/distenv.yaml";
	yaml_mark_t m = y->problem_mark;

	if (y->error == YAML_MEMORY_ERROR)
		return distenv_error_set(p->err, p->name, NULL, "out of memory");
	if (y->error == YAML_READER_ERROR) {
		/* The reader reports a byte offset, not a mark. */
		size_t i;

		memset(&m, 0, sizeof(m));
		for (i = 0; i < y->problem_offset && i < p->len; i++) {
			if (p->text[i] == '\n') {
				m.line++;
				m.column = 0;
			} else {
				m.column++;
			}
		}
		return fail_at(p, m, "save the file as UTF-8 text", "%s",
			       y->problem ? y->problem : "cannot read");
	}
	if (y->context)
		return fail_at(p, m, fix, "YAML: %s %s", y->context,
			       y->problem ? y->problem : "");
	return fail_at(p, m, fix, "YAML: %s",
		       y->problem ? y->problem : "syntax error");
}

/* Next event into p->ev; refuses aliases, anchors and tags. */
static int next(struct parser *p)
{
	const char *fix = "write every value out in full: anchors (&), "
			  "aliases (*) and tags (!) are not accepted";
	const yaml_char_t *anchor = NULL, *tag = NULL;

	if (p->have_ev) {
		yaml_event_delete(&p->ev);
		p->have_ev = 0;
	}
	if (!yaml_parser_parse(&p->yp, &p->ev))
		return syntax_error(p);
	p->have_ev = 1;
	switch (p->ev.type) {
	case YAML_ALIAS_EVENT:
		return fail_at(p, p->ev.start_mark, fix,
			       "an alias (*%.64s) is not accepted",
			       (const char *)p->ev.data.alias.anchor);
	case YAML_SCALAR_EVENT:
		anchor = p->ev.data.scalar.anchor;
		tag = p->ev.data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = p->ev.data.sequence_start.anchor;
		tag = p->ev.data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = p->ev.data.mapping_start.anchor;
		tag = p->ev.data.mapping_start.tag;
		break;
	default:
		break;
	}
	if (anchor)
		return fail_at(p, p->ev.start_mark, fix,
			       "an anchor (&%.64s) is not accepted",
			       (const char *)anchor);
	if (tag)
		return fail_at(p, p->ev.start_mark, fix,
			       "a tag (%.64s) is not accepted",
			       (const char *)tag);
	return 0;
}

static const char *event_kind(const yaml_event_t *e)
{
	switch (e->type) {
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_SEQUENCE_START_EVENT:
		return "a list";
	default:
		return "a single value";
	}
}

/* YAML 1.1/1.2 core schema nulls, as a plain scalar writes them. */
static int is_null(const yaml_event_t *e)
{
	const char *v = (const char *)e->data.scalar.value;

	if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return e->data.scalar.length == 0;
	return !v[0] || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
	       strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

/*
 * The current event as the text value of key: a scalar, not null, no NUL
 * byte, shorter than len. accepted is the fix text.
 */
static int scalar_value(struct parser *p, const char *key,
			const char *accepted, char *buf, size_t len)
{
	const yaml_event_t *e = &p->ev;

	if (e->type != YAML_SCALAR_EVENT)
		return fail_at(p, e->start_mark, accepted,
			       "%s: expected a single value, found %s", key,
			       event_kind(e));
	if (is_null(e))
		return fail_at(p, e->start_mark, accepted,
			       "%s: no value given", key);
	if (strlen((const char *)e->data.scalar.value) != e->data.scalar.length)
		return fail_at(p, e->start_mark, accepted,
			       "%s: the value holds a NUL character", key);
	if (e->data.scalar.length >= len)
		return fail_at(p, e->start_mark, accepted,
			       "%s: the value is longer than %zu bytes", key,
			       len - 1);
	memcpy(buf, e->data.scalar.value, e->data.scalar.length + 1);
	return 0;
}

/* Read the value event of key and take it as a scalar. */
static int next_scalar(struct parser *p, const char *key, const char *accepted,
		       char *buf, size_t len, char *where)
{
	if (next(p))
		return -1;
	where_at(p, p->ev.start_mark, where);
	return scalar_value(p, key, accepted, buf, len);
}

/* Expect the current event to open a mapping (or a list). */
static int expect(struct parser *p, yaml_event_type_t type, const char *key,
		  const char *accepted)
{
	if (p->ev.type == type)
		return 0;
	return fail_at(p, p->ev.start_mark, accepted, "%s: expected %s, found %s",
		       key,
		       type == YAML_MAPPING_START_EVENT ? "a mapping" : "a list",
		       p->ev.type == YAML_SCALAR_EVENT && is_null(&p->ev)
			       ? "no value"
			       : event_kind(&p->ev));
}

/*
 * Next key of a mapping whose start was consumed: 1 with the key in key
 * (and its mark in *mark), 0 at the mapping's end, -1 on error.
 */
static int next_key(struct parser *p, const char *what, char *key, size_t len,
		    yaml_mark_t *mark)
{
	if (next(p))
		return -1;
	if (p->ev.type == YAML_MAPPING_END_EVENT)
		return 0;
	*mark = p->ev.start_mark;
	if (p->ev.type != YAML_SCALAR_EVENT)
		return fail_at(p, p->ev.start_mark, "write each key as a plain name",
			       "%s: a key must be a name, found %s", what,
			       event_kind(&p->ev));
	if (is_null(&p->ev))
		return fail_at(p, p->ev.start_mark, "write each key as a plain name",
			       "%s: a key without a name", what);
	if (scalar_value(p, what, "use a shorter key", key, len))
		return -1;
	return 1;
}

/* --- one handler per key; each reads the key's value ------------------ */

static int h_default_mode(struct parser *p, struct distenv_policy *pol,
			  const char *key)
{
	const char *acc = "accepted values: off, torchrun, tasks";
	char v[32], where[WHERE_MAX];

	if (next_scalar(p, key, acc, v, sizeof(v), where))
		return -1;
	if (distenv_parse_mode(v, where, &pol->default_mode, p->err))
		return key_prefix(p, key);
	return 0;
}

static int h_port_range(struct parser *p, struct distenv_policy *pol,
			const char *key)
{
	const char *acc = "write LO-HI with 1024 <= LO <= HI <= 65535, e.g. "
			  "29600-32767";
	char v[32], where[WHERE_MAX];

	if (next_scalar(p, key, acc, v, sizeof(v), where))
		return -1;
	if (distenv_parse_port_range(v, where, &pol->port_lo, &pol->port_hi,
				     p->err))
		return key_prefix(p, key);
	return 0;
}

static int h_interfaces(struct parser *p, struct distenv_policy *pol,
			const char *key)
{
	const char *acc = "write a list in NCCL_SOCKET_IFNAME syntax: eth,ib "
			  "(prefixes), =eth0 (exact), ^docker,lo (all but)";
	char where[WHERE_MAX];

	if (next_scalar(p, key, acc, pol->interfaces, sizeof(pol->interfaces),
			where))
		return -1;
	if (distenv_ifspec_validate(pol->interfaces, where, p->err))
		return key_prefix(p, key);
	return 0;
}

static int h_address_family(struct parser *p, struct distenv_policy *pol,
			    const char *key)
{
	const char *acc = "accepted values: ipv4, ipv6, any";
	char v[16], where[WHERE_MAX];

	if (next_scalar(p, key, acc, v, sizeof(v), where))
		return -1;
	if (strcmp(v, "ipv4") == 0)
		pol->family = DISTENV_FAMILY_IPV4;
	else if (strcmp(v, "ipv6") == 0)
		pol->family = DISTENV_FAMILY_IPV6;
	else if (strcmp(v, "any") == 0)
		pol->family = DISTENV_FAMILY_ANY;
	else
		return fail_at(p, p->ev.start_mark, acc,
			       "%s: unknown value '%.64s'", key, v);
	return 0;
}

static int h_master_name(struct parser *p, struct distenv_policy *pol,
			 const char *key)
{
	const char *acc = "write the name with {host} for the Slurm node name, "
			  "e.g. {host}-ib";
	char where[WHERE_MAX];

	if (next_scalar(p, key, acc, pol->master_name,
			sizeof(pol->master_name), where))
		return -1;
	if (distenv_master_name_check(pol->master_name, where, p->err))
		return key_prefix(p, key);
	return 0;
}

static int h_hca(struct parser *p, struct distenv_policy *pol, const char *key)
{
	const char *acc = "accepted values: auto, off, a list in NCCL_IB_HCA "
			  "syntax (=mlx5_0,mlx5_1) or a YAML list of HCA names";
	char where[WHERE_MAX];
	yaml_mark_t start;
	size_t used;

	if (next(p))
		return -1;
	start = p->ev.start_mark;
	where_at(p, start, where);
	if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
		if (scalar_value(p, key, acc, pol->hca, sizeof(pol->hca)))
			return -1;
		if (strcmp(pol->hca, "auto") == 0 || strcmp(pol->hca, "off") == 0) {
			pol->hca_mode = pol->hca[0] == 'a' ? DISTENV_HCA_AUTO
							   : DISTENV_HCA_OFF;
			pol->hca[0] = '\0';
			return 0;
		}
	} else {
		/* A YAML list names HCAs exactly: "=a,b" (NCCL env docs:
		 * without '=', mlx5_1 also matches mlx5_10). */
		strcpy(pol->hca, "=");
		used = 1;
		for (;;) {
			char name[DISTENV_IFSPEC_TEXT_MAX];
			size_t n;

			if (next(p))
				return -1;
			if (p->ev.type == YAML_SEQUENCE_END_EVENT)
				break;
			if (scalar_value(p, key, acc, name, sizeof(name)))
				return -1;
			n = strlen(name);
			if (used + n + 1 >= sizeof(pol->hca))
				return fail_at(p, p->ev.start_mark, acc,
					       "%s: the list is longer than %zu "
					       "bytes",
					       key, sizeof(pol->hca) - 1);
			if (used > 1)
				pol->hca[used++] = ',';
			memcpy(pol->hca + used, name, n + 1);
			used += n;
		}
	}
	pol->hca_mode = DISTENV_HCA_FIXED;
	if (distenv_ifspec_validate(pol->hca, where, p->err))
		return key_prefix(p, key);
	return 0;
}

static int h_topology_xml(struct parser *p, struct distenv_policy *pol,
			  const char *key)
{
	const char *acc = "give the absolute path of an hwloc XML file, e.g. "
			  "/etc/slurm/topo/a100.xml (made with lstopo FILE.xml)";
	char where[WHERE_MAX];

	if (next_scalar(p, key, acc, pol->topology_xml,
			sizeof(pol->topology_xml), where))
		return -1;
	if (pol->topology_xml[0] != '/' ||
	    strpbrk(pol->topology_xml, "\n\r"))
		return fail_at(p, p->ev.start_mark, acc,
			       "%s: '%.64s' is not an absolute path", key,
			       pol->topology_xml);
	return 0;
}

/* Variables the site may not set: distenv derives them per step (the
 * table of distenv_derived.h, with how a site steers each), torchrun owns
 * TORCHELASTIC_* (docs/contracts.md 3), Slurm owns SLURM_*, and PET_* and
 * DISTENV_* are distenv's names. */
static const char *reserved_reason(const char *name)
{
	const struct distenv_derived_var *derived = distenv_derived_find(name);

	if (derived)
		return derived->site_fix;
	if (strncmp(name, "PET_", 4) == 0 || strncmp(name, "DISTENV_", 8) == 0)
		return "distenv sets it";
	if (strncmp(name, "TORCHELASTIC_", 13) == 0)
		return "torchrun sets it for its workers";
	if (strncmp(name, "SLURM_", 6) == 0)
		return "Slurm sets it";
	return NULL;
}

static int h_env(struct parser *p, struct distenv_policy *pol, const char *key)
{
	const char *acc = "write NAME: VALUE pairs, e.g. NCCL_IB_GID_INDEX: 3";

	if (next(p) || expect(p, YAML_MAPPING_START_EVENT, key, acc))
		return -1;
	for (;;) {
		struct distenv_site_var v;
		struct distenv_vars scratch = {0};
		char where[WHERE_MAX];
		yaml_mark_t nm;
		const char *why;
		size_t i;
		int rc = next_key(p, key, v.name, sizeof(v.name), &nm);

		if (rc <= 0)
			return rc;
		if (distenv_vars_add(&scratch, v.name, "", DISTENV_ACTION_SET,
				     NULL, "check")) {
			/* The rule of distenv_vars.h. */
			return fail_at(p, nm,
				       "a name is a letter or _, then letters, "
				       "digits or _, at most 63 bytes",
				       "%s: '%.64s' is not a valid environment "
				       "variable name",
				       key, v.name);
		}
		distenv_vars_free(&scratch);
		why = reserved_reason(v.name);
		if (why)
			return fail_at(p, nm, why,
				       "%s: %s cannot be set by the site policy",
				       key, v.name);
		for (i = 0; i < pol->n_env; i++)
			if (strcmp(pol->env[i].name, v.name) == 0)
				return fail_at(p, nm, "give each variable once",
					       "%s: %s is given twice", key,
					       v.name);
		if (pol->n_env == DISTENV_SITE_VARS_MAX)
			return fail_at(p, nm, "set fewer variables",
				       "%s: more than %d variables", key,
				       DISTENV_SITE_VARS_MAX);
		if (next_scalar(p, v.name, acc, v.value, sizeof(v.value), where))
			return key_prefix(p, key);
		if (distenv_value_check(v.value, where, p->err))
			return key_prefix(p, key);
		pol->env[pol->n_env++] = v;
	}
}

static int h_storage(struct parser *p, struct distenv_policy *pol,
		     const char *key)
{
	const char *acc = "write a list of {path: /ABSOLUTE/PATH, type: "
			  "shared|local}";

	if (next(p) || expect(p, YAML_SEQUENCE_START_EVENT, key, acc))
		return -1;
	for (;;) {
		struct distenv_policy_mount m;
		yaml_mark_t start;
		int have_path = 0, have_type = 0;
		size_t i;

		memset(&m, 0, sizeof(m));
		if (next(p))
			return -1;
		if (p->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		start = p->ev.start_mark;
		if (expect(p, YAML_MAPPING_START_EVENT, key, acc))
			return -1;
		for (;;) {
			char k[32], v[16], where[WHERE_MAX];
			yaml_mark_t km;
			int rc = next_key(p, key, k, sizeof(k), &km);

			if (rc < 0)
				return -1;
			if (rc == 0)
				break;
			if (strcmp(k, "path") == 0 && !have_path) {
				if (next_scalar(p, "storage path", acc, m.path,
						sizeof(m.path), where))
					return -1;
				if (m.path[0] != '/' || strpbrk(m.path, "\n\r"))
					return fail_at(p, p->ev.start_mark, acc,
						       "storage path: '%.64s' is not "
						       "an absolute path",
						       m.path);
				have_path = 1;
			} else if (strcmp(k, "type") == 0 && !have_type) {
				const char *tacc = "accepted values: shared "
						   "(same files on every node), "
						   "local (each node its own)";

				if (next_scalar(p, "storage type", tacc, v,
						sizeof(v), where))
					return -1;
				if (strcmp(v, "shared") == 0)
					m.kind = DISTENV_STORAGE_SHARED;
				else if (strcmp(v, "local") == 0)
					m.kind = DISTENV_STORAGE_LOCAL;
				else
					return fail_at(p, p->ev.start_mark, tacc,
						       "storage type: unknown value "
						       "'%.64s'",
						       v);
				have_type = 1;
			} else {
				return fail_at(p, km,
					       "accepted keys of a mount: path, "
					       "type (each once)",
					       "%s: unknown or repeated key "
					       "'%.64s'",
					       key, k);
			}
		}
		if (!have_path || !have_type)
			return fail_at(p, start, acc, "%s: a mount without %s",
				       key, have_path ? "type" : "path");
		for (i = 0; i < pol->n_storage; i++)
			if (strcmp(pol->storage[i].path, m.path) == 0)
				return fail_at(p, start, "give each path once",
					       "%s: %.64s is given twice", key,
					       m.path);
		if (pol->n_storage == DISTENV_POLICY_MOUNTS_MAX)
			return fail_at(p, start, "declare fewer mounts",
				       "%s: more than %d mounts", key,
				       DISTENV_POLICY_MOUNTS_MAX);
		pol->storage[pol->n_storage++] = m;
	}
}

/* true or false, as YAML 1.2's core schema writes them. */
static int scalar_bool(struct parser *p, const char *key, int *out)
{
	const char *acc = "accepted values: true, false";
	char v[16], where[WHERE_MAX];

	if (next_scalar(p, key, acc, v, sizeof(v), where))
		return -1;
	if (strcmp(v, "true") && strcmp(v, "false"))
		return fail_at(p, p->ev.start_mark, acc,
			       "%s: '%s' is not true or false", key, v);
	*out = v[0] == 't';
	return 0;
}

static int h_enabled(struct parser *p, struct distenv_policy *pol,
		     const char *key)
{
	return scalar_bool(p, key, &pol->enabled);
}

static int h_lf_features(struct parser *p, struct distenv_policy *pol,
			 const char *key)
{
	return scalar_bool(p, key, &pol->lf_features);
}

/* A YAML list of the rules users may not override. */
static int h_locked(struct parser *p, struct distenv_policy *pol,
		    const char *key)
{
	const char *acc = "write a YAML list of port_range, interfaces";
	char name[32];

	if (next(p) || expect(p, YAML_SEQUENCE_START_EVENT, key, acc))
		return -1;
	pol->locked = 0;
	for (;;) {
		if (next(p))
			return -1;
		if (p->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (scalar_value(p, key, acc, name, sizeof(name)))
			return -1;
		if (strcmp(name, "port_range") == 0)
			pol->locked |= DISTENV_SITE_LOCK_PORTS;
		else if (strcmp(name, "interfaces") == 0)
			pol->locked |= DISTENV_SITE_LOCK_IFACES;
		else
			return fail_at(p, p->ev.start_mark, acc,
				       "%s: '%s' cannot be locked", key, name);
	}
}

static const struct policy_key {
	const char *name;
	unsigned bit;
	int (*parse)(struct parser *p, struct distenv_policy *pol,
		     const char *key);
} policy_keys[] = {
	{"default_mode", DISTENV_POLICY_DEFAULT_MODE, h_default_mode},
	{"port_range", DISTENV_POLICY_PORT_RANGE, h_port_range},
	{"interfaces", DISTENV_POLICY_INTERFACES, h_interfaces},
	{"address_family", DISTENV_POLICY_ADDRESS_FAMILY, h_address_family},
	{"master_name", DISTENV_POLICY_MASTER_NAME, h_master_name},
	{"hca", DISTENV_POLICY_HCA, h_hca},
	{"topology_xml", DISTENV_POLICY_TOPOLOGY_XML, h_topology_xml},
	{"env", DISTENV_POLICY_ENV, h_env},
	{"storage", DISTENV_POLICY_STORAGE, h_storage},
	{"enabled", DISTENV_POLICY_ENABLED, h_enabled},
	{"lf_features", DISTENV_POLICY_LF_FEATURES, h_lf_features},
	{"locked", DISTENV_POLICY_LOCKED, h_locked},
	{NULL, 0, NULL},
};

static int parse_partitions(struct parser *p);

/* The keys of one scope, its mapping start consumed. top: the file's
 * top level (version: and partitions: allowed there only). */
static int parse_scope(struct parser *p, struct distenv_policy *pol, int top)
{
	const char *accepted = top ? top_keys : partition_keys;
	int seen_version = 0, seen_partitions = 0;

	for (;;) {
		const struct policy_key *k;
		char key[64];
		yaml_mark_t km;
		int rc = next_key(p, top ? "top level" : "partition", key,
				  sizeof(key), &km);

		if (rc <= 0)
			return rc;
		for (k = policy_keys; k->name; k++)
			if (strcmp(k->name, key) == 0)
				break;
		if (k->name) {
			if (pol->set & k->bit)
				return fail_at(p, km, "give each key once",
					       "%s is given twice", key);
			if (k->parse(p, pol, key))
				return -1;
			pol->set |= k->bit;
		} else if (top && strcmp(key, "version") == 0 && !seen_version) {
			char v[8], where[WHERE_MAX];

			if (next_scalar(p, key, "write version: 1", v, sizeof(v),
					where))
				return -1;
			if (strcmp(v, "1") != 0)
				return fail_at(p, p->ev.start_mark,
					       "this distenv reads version 1",
					       "version: unknown version '%s'", v);
			seen_version = 1;
		} else if (top && strcmp(key, "partitions") == 0 &&
			   !seen_partitions) {
			if (parse_partitions(p))
				return -1;
			seen_partitions = 1;
		} else if (strcmp(key, "version") == 0 ||
			   strcmp(key, "partitions") == 0) {
			return fail_at(p, km,
				       top ? "give each key once"
					   : "version and partitions are top-level "
					     "keys only",
				       top ? "%s is given twice"
					   : "%s is not accepted in a partition",
				       key);
		} else {
			return fail_at(p, km, accepted, "unknown key '%.64s'",
				       key);
		}
	}
}

/* Slurm partition names: no blanks or commas (a comma separates
 * partitions in -p a,b); keep to the characters sites use. */
static int partition_name_ok(const char *name)
{
	size_t i;

	for (i = 0; name[i]; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_.-", name[i]))
			return 0;
	return i > 0;
}

/* Room for one more partition; the array doubles from 4, so n entries
 * cost O(n) copying. */
static int grow_partitions(struct distenv_policy_file *f)
{
	size_t n = f->n_partitions;
	struct distenv_policy_partition *more;

	if (n != 0 && (n < 4 || (n & (n - 1)) != 0))
		return 0;
	more = realloc(f->partitions, (n ? 2 * n : 4) * sizeof(*more));
	if (!more)
		return -1;
	f->partitions = more;
	return 0;
}

static int parse_partitions(struct parser *p)
{
	const char *acc = "write partitions: {NAME: {key: value, ...}}, NAME "
			  "as in slurm.conf's PartitionName";
	struct distenv_policy_file *f = p->file;

	if (next(p) || expect(p, YAML_MAPPING_START_EVENT, "partitions", acc))
		return -1;
	for (;;) {
		struct distenv_policy_partition *part;
		char name[DISTENV_PARTITION_MAX];
		yaml_mark_t nm;
		int rc = next_key(p, "partitions", name, sizeof(name), &nm);

		if (rc <= 0)
			return rc;
		if (!partition_name_ok(name))
			return fail_at(p, nm,
				       "a partition name is letters, digits, "
				       "'_', '.' and '-'",
				       "partitions: '%.64s' is not a partition "
				       "name",
				       name);
		if (distenv_policy_find_partition(f, name))
			return fail_at(p, nm, "give each partition once",
				       "partitions: %s is given twice", name);
		if (f->n_partitions == DISTENV_POLICY_PARTITIONS_MAX)
			return fail_at(p, nm, "list fewer partitions",
				       "partitions: more than %d",
				       DISTENV_POLICY_PARTITIONS_MAX);
		if (grow_partitions(f))
			return distenv_error_set(p->err, p->name, NULL,
						 "out of memory");
		part = &f->partitions[f->n_partitions++];
		memset(part, 0, sizeof(*part));
		snprintf(part->name, sizeof(part->name), "%s", name);
		part->line = (unsigned)nm.line + 1;
		if (next(p) ||
		    expect(p, YAML_MAPPING_START_EVENT, name, partition_keys) ||
		    parse_scope(p, &part->policy, 0))
			return -1;
	}
}

/* A partition's env: merged with the top level's must fit in a site's
 * DISTENV_SITE_VARS_MAX. */
static int check_merged_env(struct parser *p)
{
	const struct distenv_policy_file *f = p->file;
	size_t i, j, k;

	for (i = 0; i < f->n_partitions; i++) {
		const struct distenv_policy *o = &f->partitions[i].policy;
		size_t n = f->global.n_env;

		for (j = 0; j < o->n_env; j++) {
			int dup = 0;

			for (k = 0; k < f->global.n_env; k++)
				dup |= strcmp(o->env[j].name,
					      f->global.env[k].name) == 0;
			n += !dup;
		}
		if (n > DISTENV_SITE_VARS_MAX) {
			yaml_mark_t m;

			memset(&m, 0, sizeof(m));
			m.line = f->partitions[i].line - 1;
			return fail_at(p, m, "set fewer variables",
				       "partition %s: %zu variables with the "
				       "top-level env:, more than %d",
				       f->partitions[i].name, n,
				       DISTENV_SITE_VARS_MAX);
		}
	}
	return 0;
}

static int parse_stream(struct parser *p)
{
	if (next(p)) /* STREAM-START */
		return -1;
	if (next(p))
		return -1;
	if (p->ev.type == YAML_STREAM_END_EVENT)
		return 0; /* an empty file (or only comments): no policy */
	if (next(p)) /* after DOCUMENT-START: the root */
		return -1;
	if (p->ev.type == YAML_MAPPING_START_EVENT) {
		if (parse_scope(p, &p->file->global, 1))
			return -1;
	} else if (!(p->ev.type == YAML_SCALAR_EVENT && is_null(&p->ev))) {
		return fail_at(p, p->ev.start_mark, top_keys,
			       "the file must be a mapping of keys, found %s",
			       event_kind(&p->ev));
	}
	if (next(p)) /* DOCUMENT-END */
		return -1;
	if (next(p))
		return -1;
	if (p->ev.type != YAML_STREAM_END_EVENT)
		return fail_at(p, p->ev.start_mark,
			       "keep the whole policy in one document",
			       "a second YAML document");
	return check_merged_env(p);
}

int distenv_policy_parse(const char *text, size_t len, const char *name,
			 struct distenv_policy_file *out,
			 struct distenv_error *err)
{
	struct parser p;
	int rc;

	distenv_policy_file_free(out);
	snprintf(out->path, sizeof(out->path), "%s", name ? name : "");
	memset(&p, 0, sizeof(p));
	p.text = text;
	p.len = len;
	p.name = out->path;
	p.file = out;
	p.err = err;
	if (!yaml_parser_initialize(&p.yp))
		return distenv_error_set(err, p.name, NULL, "out of memory");
	yaml_parser_set_input_string(&p.yp, (const unsigned char *)text, len);
	rc = parse_stream(&p);
	if (p.have_ev)
		yaml_event_delete(&p.ev);
	yaml_parser_delete(&p.yp);
	if (rc) {
		char path[DISTENV_SITE_PATH_MAX];

		memcpy(path, out->path, sizeof(path));
		distenv_policy_file_free(out);
		memcpy(out->path, path, sizeof(path));
	}
	return rc;
}
