/*
 * distenv_policy_parse.c: the strict parser of the site policy file
 * (keys in distenv_policy.h), from a memory buffer: the file's shape (one
 * document, a mapping, version:, partitions: and their names) and the
 * limits across scopes. The keys of a scope are read by
 * distenv_policy_keys.c, the events by distenv_policy_yaml.c, which
 * refuses anchors, aliases and tags.
 *
 * Every error's where is "FILE:LINE:COL" (1-based, as editors count) of
 * the offending key or value; its what starts with the key; its fix
 * lists what is accepted. Parsing stops at the first error.
 */
#include "distenv_policy.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_policy_keys.h"
#include "distenv_policy_yaml.h"

static const char top_keys[] =
	"accepted keys: version, default_mode, port_range, interfaces, "
	"address_family, master_name, hca, topology_xml, env, storage, "
	"enabled, lf_features, locked, partitions";
static const char partition_keys[] =
	"accepted keys in a partition: default_mode, port_range, interfaces, "
	"address_family, master_name, hca, topology_xml, env, storage, "
	"enabled, lf_features, locked";

static int parse_partitions(struct distenv_policy_yaml *y,
			    struct distenv_policy_file *f);

/* version: 1, its key just read. */
static int parse_version(struct distenv_policy_yaml *y, const char *key)
{
	char v[8], where[DISTENV_POLICY_WHERE_MAX];

	if (distenv_policy_yaml_next_scalar(y, key, "write version: 1", v,
					    sizeof(v), where))
		return -1;
	if (strcmp(v, "1") != 0)
		return distenv_policy_yaml_fail(y, y->ev.start_mark,
						"this distenv reads version 1",
						"version: unknown version '%s'",
						v);
	return 0;
}

/* A key that is none of a scope's: version: or partitions: given twice
 * or in a partition, or unknown. */
static int not_a_key(struct distenv_policy_yaml *y, const char *key,
		     yaml_mark_t km, int top)
{
	if (strcmp(key, "version") == 0 || strcmp(key, "partitions") == 0)
		return distenv_policy_yaml_fail(
			y, km,
			top ? "give each key once" :
			      "version and partitions are top-level keys only",
			top ? "%s is given twice" :
			      "%s is not accepted in a partition",
			key);
	return distenv_policy_yaml_fail(y, km, top ? top_keys : partition_keys,
					"unknown key '%.64s'", key);
}

/* The keys of one scope, its mapping start consumed. top: the file's
 * top level f->global (version: and partitions: allowed there only). */
static int parse_scope(struct distenv_policy_yaml *y,
		       struct distenv_policy_file *f,
		       struct distenv_policy *pol, int top)
{
	int seen_version = 0, seen_partitions = 0;

	for (;;) {
		const struct distenv_policy_key *k;
		char key[64];
		yaml_mark_t km;
		int rc = distenv_policy_yaml_next_key(y,
						      top ? "top level" :
							    "partition",
						      key, sizeof(key), &km);

		if (rc <= 0)
			return rc;
		k = distenv_policy_key_find(key);
		if (k) {
			if (pol->set & k->bit)
				return distenv_policy_yaml_fail(
					y, km, "give each key once",
					"%s is given twice", key);
			if (k->parse(y, pol, key))
				return -1;
			pol->set |= k->bit;
		} else if (top && strcmp(key, "version") == 0 &&
			   !seen_version) {
			if (parse_version(y, key))
				return -1;
			seen_version = 1;
		} else if (top && strcmp(key, "partitions") == 0 &&
			   !seen_partitions) {
			if (parse_partitions(y, f))
				return -1;
			seen_partitions = 1;
		} else {
			return not_a_key(y, key, km, top);
		}
	}
}

/* Slurm partition names: no blanks or commas (a comma separates
 * partitions in -p a,b); keep to the characters sites use. */
static int partition_name_ok(const char *name)
{
	size_t i;

	for (i = 0; name[i]; i++)
		if (!isalnum((unsigned char) name[i]) &&
		    !strchr("_.-", name[i]))
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

/* A new section for the partition name, read at nm. */
static struct distenv_policy_partition *add_partition(struct distenv_policy_yaml
							      *y,
						      struct distenv_policy_file
							      *f,
						      const char *name,
						      yaml_mark_t nm)
{
	struct distenv_policy_partition *part;

	if (!partition_name_ok(name)) {
		distenv_policy_yaml_fail(
			y, nm,
			"a partition name is letters, digits, '_', '.' and '-'",
			"partitions: '%.64s' is not a partition name", name);
		return NULL;
	}
	if (distenv_policy_find_partition(f, name)) {
		distenv_policy_yaml_fail(y, nm, "give each partition once",
					 "partitions: %s is given twice", name);
		return NULL;
	}
	if (f->n_partitions == DISTENV_POLICY_PARTITIONS_MAX) {
		distenv_policy_yaml_fail(y, nm, "list fewer partitions",
					 "partitions: more than %d",
					 DISTENV_POLICY_PARTITIONS_MAX);
		return NULL;
	}
	if (grow_partitions(f)) {
		distenv_error_set(y->err, y->name, NULL, "out of memory");
		return NULL;
	}
	part = &f->partitions[f->n_partitions++];
	memset(part, 0, sizeof(*part));
	snprintf(part->name, sizeof(part->name), "%s", name);
	part->line = (unsigned) nm.line + 1;
	return part;
}

static int parse_partitions(struct distenv_policy_yaml *y,
			    struct distenv_policy_file *f)
{
	const char *acc = "write partitions: {NAME: {key: value, ...}}, NAME "
			  "as in slurm.conf's PartitionName";

	if (distenv_policy_yaml_next(y) ||
	    distenv_policy_yaml_expect(y, YAML_MAPPING_START_EVENT,
				       "partitions", acc))
		return -1;
	for (;;) {
		struct distenv_policy_partition *part;
		char name[DISTENV_PARTITION_MAX];
		yaml_mark_t nm;
		int rc = distenv_policy_yaml_next_key(y, "partitions", name,
						      sizeof(name), &nm);

		if (rc <= 0)
			return rc;
		part = add_partition(y, f, name, nm);
		if (!part || distenv_policy_yaml_next(y) ||
		    distenv_policy_yaml_expect(y, YAML_MAPPING_START_EVENT,
					       name, partition_keys) ||
		    parse_scope(y, f, &part->policy, 0))
			return -1;
	}
}

/* A partition's env: merged with the top level's must fit in a site's
 * DISTENV_SITE_VARS_MAX. */
static int check_merged_env(struct distenv_policy_yaml *y,
			    const struct distenv_policy_file *f)
{
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
			return distenv_policy_yaml_fail(
				y, m, "set fewer variables",
				"partition %s: %zu variables with the "
				"top-level env:, more than %d",
				f->partitions[i].name, n,
				DISTENV_SITE_VARS_MAX);
		}
	}
	return 0;
}

static int parse_stream(struct distenv_policy_yaml *y,
			struct distenv_policy_file *f)
{
	if (distenv_policy_yaml_next(y)) /* STREAM-START */
		return -1;
	if (distenv_policy_yaml_next(y))
		return -1;
	if (y->ev.type == YAML_STREAM_END_EVENT)
		return 0; /* an empty file (or only comments): no policy */
	if (distenv_policy_yaml_next(y)) /* after DOCUMENT-START: the root */
		return -1;
	if (y->ev.type == YAML_MAPPING_START_EVENT) {
		if (parse_scope(y, f, &f->global, 1))
			return -1;
	} else if (!(y->ev.type == YAML_SCALAR_EVENT &&
		     distenv_policy_yaml_is_null(&y->ev))) {
		return distenv_policy_yaml_fail(
			y, y->ev.start_mark, top_keys,
			"the file must be a mapping of keys, found %s",
			distenv_policy_yaml_kind(&y->ev));
	}
	if (distenv_policy_yaml_next(y)) /* DOCUMENT-END */
		return -1;
	if (distenv_policy_yaml_next(y))
		return -1;
	if (y->ev.type != YAML_STREAM_END_EVENT)
		return distenv_policy_yaml_fail(
			y, y->ev.start_mark,
			"keep the whole policy in one document",
			"a second YAML document");
	return check_merged_env(y, f);
}

int distenv_policy_parse(const char *text, size_t len, const char *name,
			 struct distenv_policy_file *out,
			 struct distenv_error *err)
{
	struct distenv_policy_yaml y;
	int rc;

	distenv_policy_file_free(out);
	snprintf(out->path, sizeof(out->path), "%s", name ? name : "");
	if (distenv_policy_yaml_begin(&y, text, len, out->path, err))
		return -1;
	rc = parse_stream(&y, out);
	distenv_policy_yaml_end(&y);
	if (rc) {
		char path[DISTENV_SITE_PATH_MAX];

		memcpy(path, out->path, sizeof(path));
		distenv_policy_file_free(out);
		memcpy(out->path, path, sizeof(path));
	}
	return rc;
}
