/*
 * distenv_policy_keys.c: one handler per key of a site policy scope, and
 * their table (distenv_policy_keys.h).
 */
#include "distenv_policy_keys.h"

#include <string.h>

#include "distenv_derived.h"
#include "distenv_ifspec.h"
#include "distenv_master.h"
#include "distenv_vars.h"

static int h_default_mode(struct distenv_policy_yaml *y,
			  struct distenv_policy *pol, const char *key)
{
	const char *acc = "accepted values: off, torchrun, tasks";
	char v[32], where[DISTENV_POLICY_WHERE_MAX];

	if (distenv_policy_yaml_next_scalar(y, key, acc, v, sizeof(v), where))
		return -1;
	if (distenv_parse_mode(v, where, &pol->default_mode, y->err))
		return distenv_policy_yaml_key_prefix(y, key);
	return 0;
}

static int h_port_range(struct distenv_policy_yaml *y,
			struct distenv_policy *pol, const char *key)
{
	const char *acc = "write LO-HI with 1024 <= LO <= HI <= 65535, e.g. "
			  "29600-32767";
	char v[32], where[DISTENV_POLICY_WHERE_MAX];

	if (distenv_policy_yaml_next_scalar(y, key, acc, v, sizeof(v), where))
		return -1;
	if (distenv_parse_port_range(v, where, &pol->port_lo, &pol->port_hi,
				     y->err))
		return distenv_policy_yaml_key_prefix(y, key);
	return 0;
}

/* A key whose value is text that the core's check for that kind of
 * value accepts, into buf (len bytes). */
static int checked_text(struct distenv_policy_yaml *y, const char *key,
			const char *acc, char *buf, size_t len,
			int (*check)(const char *text, const char *where,
				     struct distenv_error *err))
{
	char where[DISTENV_POLICY_WHERE_MAX];

	if (distenv_policy_yaml_next_scalar(y, key, acc, buf, len, where))
		return -1;
	if (check(buf, where, y->err))
		return distenv_policy_yaml_key_prefix(y, key);
	return 0;
}

static int h_interfaces(struct distenv_policy_yaml *y,
			struct distenv_policy *pol, const char *key)
{
	const char *acc = "write a list in NCCL_SOCKET_IFNAME syntax: eth,ib "
			  "(prefixes), =eth0 (exact), ^docker,lo (all but)";

	return checked_text(y, key, acc, pol->interfaces,
			    sizeof(pol->interfaces), distenv_ifspec_validate);
}

static int h_address_family(struct distenv_policy_yaml *y,
			    struct distenv_policy *pol, const char *key)
{
	const char *acc = "accepted values: ipv4, ipv6, any";
	char v[16], where[DISTENV_POLICY_WHERE_MAX];

	if (distenv_policy_yaml_next_scalar(y, key, acc, v, sizeof(v), where))
		return -1;
	if (strcmp(v, "ipv4") == 0)
		pol->family = DISTENV_FAMILY_IPV4;
	else if (strcmp(v, "ipv6") == 0)
		pol->family = DISTENV_FAMILY_IPV6;
	else if (strcmp(v, "any") == 0)
		pol->family = DISTENV_FAMILY_ANY;
	else
		return distenv_policy_yaml_fail(y, y->ev.start_mark, acc,
						"%s: unknown value '%.64s'",
						key, v);
	return 0;
}

static int h_master_name(struct distenv_policy_yaml *y,
			 struct distenv_policy *pol, const char *key)
{
	const char *acc = "write the name with {host} for the Slurm node name, "
			  "e.g. {host}-ib";

	return checked_text(y, key, acc, pol->master_name,
			    sizeof(pol->master_name),
			    distenv_master_name_check);
}

/* hca: as a YAML list, its start consumed: the list in pol->hca as
 * "=a,b". A YAML list names HCAs exactly (NCCL env docs: without '=',
 * mlx5_1 also matches mlx5_10). */
static int hca_list(struct distenv_policy_yaml *y, struct distenv_policy *pol,
		    const char *key, const char *acc)
{
	size_t used = 1;

	strcpy(pol->hca, "=");
	for (;;) {
		char name[DISTENV_IFSPEC_TEXT_MAX];
		size_t n;

		if (distenv_policy_yaml_next(y))
			return -1;
		if (y->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (distenv_policy_yaml_scalar(y, key, acc, name, sizeof(name)))
			return -1;
		n = strlen(name);
		if (used + n + 1 >= sizeof(pol->hca))
			return distenv_policy_yaml_fail(
				y, y->ev.start_mark, acc,
				"%s: the list is longer than %zu bytes", key,
				sizeof(pol->hca) - 1);
		if (used > 1)
			pol->hca[used++] = ',';
		memcpy(pol->hca + used, name, n + 1);
		used += n;
	}
}

static int h_hca(struct distenv_policy_yaml *y, struct distenv_policy *pol,
		 const char *key)
{
	const char *acc = "accepted values: auto, off, a list in NCCL_IB_HCA "
			  "syntax (=mlx5_0,mlx5_1) or a YAML list of HCA names";
	char where[DISTENV_POLICY_WHERE_MAX];

	if (distenv_policy_yaml_next(y))
		return -1;
	distenv_policy_yaml_where(y, y->ev.start_mark, where);
	if (y->ev.type == YAML_SEQUENCE_START_EVENT) {
		if (hca_list(y, pol, key, acc))
			return -1;
	} else {
		if (distenv_policy_yaml_scalar(y, key, acc, pol->hca,
					       sizeof(pol->hca)))
			return -1;
		if (strcmp(pol->hca, "auto") == 0 ||
		    strcmp(pol->hca, "off") == 0) {
			pol->hca_mode = pol->hca[0] == 'a' ? DISTENV_HCA_AUTO :
							     DISTENV_HCA_OFF;
			pol->hca[0] = '\0';
			return 0;
		}
	}
	pol->hca_mode = DISTENV_HCA_FIXED;
	if (distenv_ifspec_validate(pol->hca, where, y->err))
		return distenv_policy_yaml_key_prefix(y, key);
	return 0;
}

/* An absolute path, on one line, as the value just read. */
static int absolute_path(struct distenv_policy_yaml *y, const char *key,
			 const char *acc, const char *path)
{
	if (path[0] != '/' || strpbrk(path, "\n\r"))
		return distenv_policy_yaml_fail(
			y, y->ev.start_mark, acc,
			"%s: '%.64s' is not an absolute path", key, path);
	return 0;
}

static int h_topology_xml(struct distenv_policy_yaml *y,
			  struct distenv_policy *pol, const char *key)
{
	const char *acc =
		"give the absolute path of an hwloc XML file, e.g. "
		"/etc/slurm/topo/a100.xml (made with lstopo FILE.xml)";
	char where[DISTENV_POLICY_WHERE_MAX];

	if (distenv_policy_yaml_next_scalar(y, key, acc, pol->topology_xml,
					    sizeof(pol->topology_xml), where))
		return -1;
	return absolute_path(y, key, acc, pol->topology_xml);
}

static int h_lf_dir(struct distenv_policy_yaml *y, struct distenv_policy *pol,
		    const char *key)
{
	const char *acc = "give the absolute path of a directory that every "
			  "node has and that the jobs' containers mount at "
			  "the same path, e.g. /scratch/distenv";

	return checked_text(y, key, acc, pol->lf_dir, sizeof(pol->lf_dir),
			    distenv_parse_lf_dir);
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

/* The name of one env: variable, read at nm: one pol can still take. */
static int env_name_ok(struct distenv_policy_yaml *y,
		       const struct distenv_policy *pol, const char *key,
		       const char *name, yaml_mark_t nm)
{
	struct distenv_vars scratch = { 0 };
	const char *why;
	size_t i;

	if (distenv_vars_add(&scratch, name, "", DISTENV_ACTION_SET, NULL,
			     "check")) {
		/* The rule of distenv_vars.h. */
		return distenv_policy_yaml_fail(
			y, nm,
			"a name is a letter or _, then letters, digits or _, "
			"at most 63 bytes",
			"%s: '%.64s' is not a valid environment variable name",
			key, name);
	}
	distenv_vars_free(&scratch);
	why = reserved_reason(name);
	if (why)
		return distenv_policy_yaml_fail(
			y, nm, why, "%s: %s cannot be set by the site policy",
			key, name);
	for (i = 0; i < pol->n_env; i++)
		if (strcmp(pol->env[i].name, name) == 0)
			return distenv_policy_yaml_fail(
				y, nm, "give each variable once",
				"%s: %s is given twice", key, name);
	if (pol->n_env == DISTENV_SITE_VARS_MAX)
		return distenv_policy_yaml_fail(y, nm, "set fewer variables",
						"%s: more than %d variables",
						key, DISTENV_SITE_VARS_MAX);
	return 0;
}

static int h_env(struct distenv_policy_yaml *y, struct distenv_policy *pol,
		 const char *key)
{
	const char *acc = "write NAME: VALUE pairs, e.g. NCCL_IB_GID_INDEX: 3";

	if (distenv_policy_yaml_next(y) ||
	    distenv_policy_yaml_expect(y, YAML_MAPPING_START_EVENT, key, acc))
		return -1;
	for (;;) {
		struct distenv_site_var v;
		char where[DISTENV_POLICY_WHERE_MAX];
		yaml_mark_t nm;
		int rc = distenv_policy_yaml_next_key(y, key, v.name,
						      sizeof(v.name), &nm);

		if (rc <= 0)
			return rc;
		if (env_name_ok(y, pol, key, v.name, nm))
			return -1;
		if (distenv_policy_yaml_next_scalar(y, v.name, acc, v.value,
						    sizeof(v.value), where))
			return distenv_policy_yaml_key_prefix(y, key);
		if (distenv_value_check(v.value, where, y->err))
			return distenv_policy_yaml_key_prefix(y, key);
		pol->env[pol->n_env++] = v;
	}
}

/* type: of one mount */
static int mount_type(struct distenv_policy_yaml *y,
		      struct distenv_policy_mount *m)
{
	const char *acc = "accepted values: shared (same files on every node), "
			  "local (each node its own)";
	char v[16], where[DISTENV_POLICY_WHERE_MAX];

	if (distenv_policy_yaml_next_scalar(y, "storage type", acc, v,
					    sizeof(v), where))
		return -1;
	if (strcmp(v, "shared") == 0)
		m->kind = DISTENV_STORAGE_SHARED;
	else if (strcmp(v, "local") == 0)
		m->kind = DISTENV_STORAGE_LOCAL;
	else
		return distenv_policy_yaml_fail(
			y, y->ev.start_mark, acc,
			"storage type: unknown value '%.64s'", v);
	return 0;
}

/* One mount of storage:, its mapping start consumed at start. */
static int storage_mount(struct distenv_policy_yaml *y, const char *key,
			 const char *acc, yaml_mark_t start,
			 struct distenv_policy_mount *m)
{
	int have_path = 0, have_type = 0;

	for (;;) {
		char k[32], where[DISTENV_POLICY_WHERE_MAX];
		yaml_mark_t km;
		int rc =
			distenv_policy_yaml_next_key(y, key, k, sizeof(k), &km);

		if (rc < 0)
			return -1;
		if (rc == 0)
			break;
		if (strcmp(k, "path") == 0 && !have_path) {
			if (distenv_policy_yaml_next_scalar(y, "storage path",
							    acc, m->path,
							    sizeof(m->path),
							    where) ||
			    absolute_path(y, "storage path", acc, m->path))
				return -1;
			have_path = 1;
		} else if (strcmp(k, "type") == 0 && !have_type) {
			if (mount_type(y, m))
				return -1;
			have_type = 1;
		} else {
			return distenv_policy_yaml_fail(
				y, km,
				"accepted keys of a mount: path, type "
				"(each once)",
				"%s: unknown or repeated key '%.64s'", key, k);
		}
	}
	if (!have_path || !have_type)
		return distenv_policy_yaml_fail(y, start, acc,
						"%s: a mount without %s", key,
						have_path ? "type" : "path");
	return 0;
}

static int h_storage(struct distenv_policy_yaml *y, struct distenv_policy *pol,
		     const char *key)
{
	const char *acc = "write a list of {path: /ABSOLUTE/PATH, type: "
			  "shared|local}";

	if (distenv_policy_yaml_next(y) ||
	    distenv_policy_yaml_expect(y, YAML_SEQUENCE_START_EVENT, key, acc))
		return -1;
	for (;;) {
		struct distenv_policy_mount m;
		yaml_mark_t start;
		size_t i;

		memset(&m, 0, sizeof(m));
		if (distenv_policy_yaml_next(y))
			return -1;
		if (y->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		start = y->ev.start_mark;
		if (distenv_policy_yaml_expect(y, YAML_MAPPING_START_EVENT, key,
					       acc) ||
		    storage_mount(y, key, acc, start, &m))
			return -1;
		for (i = 0; i < pol->n_storage; i++)
			if (strcmp(pol->storage[i].path, m.path) == 0)
				return distenv_policy_yaml_fail(
					y, start, "give each path once",
					"%s: %.64s is given twice", key,
					m.path);
		if (pol->n_storage == DISTENV_POLICY_MOUNTS_MAX)
			return distenv_policy_yaml_fail(
				y, start, "declare fewer mounts",
				"%s: more than %d mounts", key,
				DISTENV_POLICY_MOUNTS_MAX);
		pol->storage[pol->n_storage++] = m;
	}
}

/* true or false, as YAML 1.2's core schema writes them. */
static int scalar_bool(struct distenv_policy_yaml *y, const char *key, int *out)
{
	const char *acc = "accepted values: true, false";
	char v[16], where[DISTENV_POLICY_WHERE_MAX];

	if (distenv_policy_yaml_next_scalar(y, key, acc, v, sizeof(v), where))
		return -1;
	if (strcmp(v, "true") && strcmp(v, "false"))
		return distenv_policy_yaml_fail(y, y->ev.start_mark, acc,
						"%s: '%s' is not true or false",
						key, v);
	*out = v[0] == 't';
	return 0;
}

static int h_enabled(struct distenv_policy_yaml *y, struct distenv_policy *pol,
		     const char *key)
{
	return scalar_bool(y, key, &pol->enabled);
}

static int h_lf_features(struct distenv_policy_yaml *y,
			 struct distenv_policy *pol, const char *key)
{
	return scalar_bool(y, key, &pol->lf_features);
}

/* A YAML list of the rules users may not override. */
static int h_locked(struct distenv_policy_yaml *y, struct distenv_policy *pol,
		    const char *key)
{
	const char *acc = "write a YAML list of port_range, interfaces, "
			  "lf_dir";
	char name[32];

	if (distenv_policy_yaml_next(y) ||
	    distenv_policy_yaml_expect(y, YAML_SEQUENCE_START_EVENT, key, acc))
		return -1;
	pol->locked = 0;
	for (;;) {
		if (distenv_policy_yaml_next(y))
			return -1;
		if (y->ev.type == YAML_SEQUENCE_END_EVENT)
			return 0;
		if (distenv_policy_yaml_scalar(y, key, acc, name, sizeof(name)))
			return -1;
		if (strcmp(name, "port_range") == 0)
			pol->locked |= DISTENV_SITE_LOCK_PORTS;
		else if (strcmp(name, "interfaces") == 0)
			pol->locked |= DISTENV_SITE_LOCK_IFACES;
		else if (strcmp(name, "lf_dir") == 0)
			pol->locked |= DISTENV_SITE_LOCK_LF_DIR;
		else
			return distenv_policy_yaml_fail(
				y, y->ev.start_mark, acc,
				"%s: '%s' cannot be locked", key, name);
	}
}

static const struct distenv_policy_key policy_keys[] = {
	{ "default_mode", DISTENV_POLICY_DEFAULT_MODE, h_default_mode },
	{ "port_range", DISTENV_POLICY_PORT_RANGE, h_port_range },
	{ "interfaces", DISTENV_POLICY_INTERFACES, h_interfaces },
	{ "address_family", DISTENV_POLICY_ADDRESS_FAMILY, h_address_family },
	{ "master_name", DISTENV_POLICY_MASTER_NAME, h_master_name },
	{ "hca", DISTENV_POLICY_HCA, h_hca },
	{ "topology_xml", DISTENV_POLICY_TOPOLOGY_XML, h_topology_xml },
	{ "env", DISTENV_POLICY_ENV, h_env },
	{ "storage", DISTENV_POLICY_STORAGE, h_storage },
	{ "lf_dir", DISTENV_POLICY_LF_DIR, h_lf_dir },
	{ "enabled", DISTENV_POLICY_ENABLED, h_enabled },
	{ "lf_features", DISTENV_POLICY_LF_FEATURES, h_lf_features },
	{ "locked", DISTENV_POLICY_LOCKED, h_locked },
	{ NULL, 0, NULL },
};

const struct distenv_policy_key *distenv_policy_key_find(const char *name)
{
	const struct distenv_policy_key *k;

	for (k = policy_keys; k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}
