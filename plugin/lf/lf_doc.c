/* lf_doc.c: libyaml's document model over one file, with typed reads. */
#include "lf_doc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_name(struct lf_doc *doc, const char *name)
{
	snprintf(doc->name, sizeof(doc->name), "%s", name ? name : "(input)");
}

/* "FILE:LINE:COL" of a libyaml mark (0-based) as editors count (1-based). */
static void mark_where(const struct lf_doc *doc, const yaml_mark_t *m,
		       char *buf, size_t len)
{
	snprintf(buf, len, "%s:%zu:%zu", doc->name, m->line + 1, m->column + 1);
}

/* The text libyaml parses: doc's own copy, at most LF_DOC_MAX_BYTES. */
static int copy_text(struct lf_doc *doc, const char *buf, size_t len,
		     struct distenv_error *err)
{
	if (len > LF_DOC_MAX_BYTES)
		return distenv_error_set(err, doc->name, "give a smaller file",
					 "file is %zu bytes, more than the %u "
					 "distenv reads",
					 len, LF_DOC_MAX_BYTES);
	doc->text = malloc(len + 1);
	if (!doc->text)
		return distenv_error_set(err, doc->name, NULL, "out of memory");
	/* A UTF-8 byte-order mark is dropped: with the encoding set below,
	 * libyaml reads it as a character of the first line, which shifts
	 * that line's indentation (tests/fuzz/fuzz_lf_yaml found it). */
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) {
		buf += 3;
		len -= 3;
	}
	memcpy(doc->text, buf, len);
	doc->text[len] = '\0';
	doc->len = len;
	return 0;
}

static int fail_syntax(const struct lf_doc *doc, const yaml_parser_t *parser,
		       struct distenv_error *err)
{
	/* libyaml notices an unclosed bracket or quote where the text ends
	 * or the next key starts, a line or more after the mistake; its
	 * context mark is where the construct began, which is where the
	 * user looks. */
	char where[LF_DOC_NAME_MAX + 32];

	mark_where(doc,
		   parser->context ? &parser->context_mark :
				     &parser->problem_mark,
		   where, sizeof(where));
	if (parser->context)
		return distenv_error_set(
			err, where, "fix the syntax at that place",
			"YAML/JSON syntax error: %s %s that starts here "
			"(noticed at %zu:%zu)",
			parser->problem ? parser->problem : "unknown",
			parser->context, parser->problem_mark.line + 1,
			parser->problem_mark.column + 1);
	return distenv_error_set(err, where, "fix the syntax at that place",
				 "YAML/JSON syntax error: %s",
				 parser->problem ? parser->problem : "unknown");
}

/* The loaded document holds one mapping, as LLaMA-Factory's YAML does. */
static int check_root(struct lf_doc *doc, struct distenv_error *err)
{
	yaml_node_t *root = yaml_document_get_root_node(&doc->ydoc);
	char where[LF_DOC_NAME_MAX + 32];

	if (!root)
		return distenv_error_set(err, doc->name,
					 "the file must hold a "
					 "mapping of keys to values",
					 "file is empty");
	if (root->type != YAML_MAPPING_NODE) {
		lf_node_where(doc, root, where, sizeof(where));
		return distenv_error_set(err, where,
					 "the file must hold a "
					 "mapping of keys to values",
					 "top level is not a mapping");
	}
	return 0;
}

/* A second document: PyYAML's safe_load refuses it too. */
static int check_one_document(const struct lf_doc *doc, yaml_parser_t *parser,
			      struct distenv_error *err)
{
	yaml_document_t extra;
	yaml_node_t *second;
	char where[LF_DOC_NAME_MAX + 32];

	if (!yaml_parser_load(parser, &extra)) {
		mark_where(doc, &parser->problem_mark, where, sizeof(where));
		return distenv_error_set(err, where,
					 "fix the syntax at that place",
					 "YAML/JSON syntax error: %s",
					 parser->problem ? parser->problem :
							   "unknown");
	}
	second = yaml_document_get_root_node(&extra);
	if (second)
		mark_where(doc, &second->start_mark, where, sizeof(where));
	yaml_document_delete(&extra);
	if (second)
		return distenv_error_set(err, where,
					 "keep one document per "
					 "file (remove the second '---')",
					 "more than one YAML document");
	return 0;
}

int lf_doc_load(struct lf_doc *doc, const char *name, const char *buf,
		size_t len, struct distenv_error *err)
{
	yaml_parser_t parser;
	int rc = -1;

	memset(doc, 0, sizeof(*doc));
	set_name(doc, name);
	if (copy_text(doc, buf, len, err))
		return -1;
	if (!yaml_parser_initialize(&parser))
		return distenv_error_set(err, doc->name, NULL,
					 "cannot initialize libyaml");
	/* LLaMA-Factory opens the file as UTF-8 text (Path.read_text());
	 * other encodings are refused rather than guessed. */
	yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
	yaml_parser_set_input_string(&parser, (const unsigned char *) doc->text,
				     doc->len);
	if (!yaml_parser_load(&parser, &doc->ydoc)) {
		fail_syntax(doc, &parser, err);
		goto out;
	}
	doc->loaded = 1;
	if (check_root(doc, err) || check_one_document(doc, &parser, err))
		goto out;
	rc = 0;
out:
	yaml_parser_delete(&parser);
	return rc;
}

void lf_doc_free(struct lf_doc *doc)
{
	if (doc->loaded)
		yaml_document_delete(&doc->ydoc);
	free(doc->text);
	memset(doc, 0, sizeof(*doc));
}

yaml_node_t *lf_doc_root(struct lf_doc *doc)
{
	return doc->loaded ? yaml_document_get_root_node(&doc->ydoc) : NULL;
}

yaml_node_t *lf_map_get(struct lf_doc *doc, yaml_node_t *map, const char *key,
			yaml_node_t **key_node)
{
	yaml_node_pair_t *p;
	yaml_node_t *found = NULL;

	if (key_node)
		*key_node = NULL;
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(&doc->ydoc, p->key);

		if (k && k->type == YAML_SCALAR_NODE &&
		    strcmp((const char *) k->data.scalar.value, key) == 0) {
			found = yaml_document_get_node(&doc->ydoc, p->value);
			if (key_node)
				*key_node = k;
		}
	}
	return found;
}

void lf_node_where(const struct lf_doc *doc, const yaml_node_t *node, char *buf,
		   size_t len)
{
	if (!node)
		snprintf(buf, len, "%s", doc->name);
	else
		mark_where(doc, &node->start_mark, buf, len);
}

const char *lf_scalar(const yaml_node_t *node)
{
	if (!node || node->type != YAML_SCALAR_NODE)
		return NULL;
	return (const char *) node->data.scalar.value;
}

int lf_is_null(const yaml_node_t *node)
{
	const char *s = lf_scalar(node);

	if (!s || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	return !s[0] || !strcmp(s, "~") || !strcmp(s, "null") ||
	       !strcmp(s, "Null") || !strcmp(s, "NULL");
}

int lf_parse_bool(const char *s, int *val)
{
	/* YAML 1.1 bool (https://yaml.org/type/bool.html), the forms PyYAML's
	 * resolver accepts. */
	static const char *const yes[] = { "true", "True", "TRUE", "yes",
					   "Yes",  "YES",  "on",   "On",
					   "ON",   "y",    "Y" };
	static const char *const no[] = { "false", "False", "FALSE", "no",
					  "No",    "NO",    "off",   "Off",
					  "OFF",   "n",     "N" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(s, yes[i])) {
			*val = 1;
			return 0;
		}
		if (!strcmp(s, no[i])) {
			*val = 0;
			return 0;
		}
	}
	return -1;
}

static yaml_node_t *get_value(struct lf_doc *doc, yaml_node_t *map,
			      const char *key, int *found)
{
	yaml_node_t *v = lf_map_get(doc, map, key, NULL);

	*found = v && !lf_is_null(v);
	return *found ? v : NULL;
}

static int type_error(struct lf_doc *doc, yaml_node_t *v, const char *key,
		      const char *want, struct distenv_error *err)
{
	char where[LF_DOC_NAME_MAX + 32];
	const char *s = lf_scalar(v);

	lf_node_where(doc, v, where, sizeof(where));
	if (s)
		return distenv_error_set(err, where,
					 "see LLaMA-Factory's "
					 "examples/ for the form",
					 "%s: '%s' is not %s", key, s, want);
	return distenv_error_set(err, where,
				 "see LLaMA-Factory's examples/ "
				 "for the form",
				 "%s: a %s is not %s", key,
				 v->type == YAML_MAPPING_NODE ? "mapping" :
								"list",
				 want);
}

int lf_get_bool(struct lf_doc *doc, yaml_node_t *map, const char *key, int *val,
		int *found, struct distenv_error *err)
{
	yaml_node_t *v = get_value(doc, map, key, found);
	const char *s;

	if (!v)
		return 0;
	s = lf_scalar(v);
	if (!s || v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
	    lf_parse_bool(s, val))
		return type_error(doc, v, key, "true or false", err);
	return 0;
}

int lf_get_int(struct lf_doc *doc, yaml_node_t *map, const char *key,
	       long long *val, int *found, struct distenv_error *err)
{
	yaml_node_t *v = get_value(doc, map, key, found);
	const char *s;
	char *end;
	double d;

	if (!v)
		return 0;
	s = lf_scalar(v);
	if (!s || v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !s[0])
		return type_error(doc, v, key, "an integer", err);
	errno = 0;
	d = strtod(s, &end);
	if (*end || errno || d != floor(d) || d < -9e18 || d > 9e18)
		return type_error(doc, v, key, "an integer", err);
	*val = (long long) d;
	return 0;
}

int lf_get_str(struct lf_doc *doc, yaml_node_t *map, const char *key,
	       const char **val, int *found, struct distenv_error *err)
{
	yaml_node_t *v = get_value(doc, map, key, found);

	if (!v)
		return 0;
	if (!lf_scalar(v))
		return type_error(doc, v, key, "a string", err);
	*val = lf_scalar(v);
	return 0;
}
