/*
 * lf_doc.h: one parsed YAML or JSON file (a LLaMA-Factory training YAML,
 * a DeepSpeed JSON, a model's config.json) as libyaml's document model,
 * which keeps key order and the line/column of every node, plus the
 * source text, so that a resolved copy can be written by editing only
 * the spans of the values distenv decided (lf_write.h).
 *
 * JSON is read with the same parser: JSON is YAML 1.2 flow syntax, and
 * libyaml (YAML 1.1) reads the JSON that DeepSpeed and Transformers
 * write (https://yaml.org/spec/1.2/spec.html#id2759572).
 *
 * Pure: the caller reads the file (lf_sys.h) and passes its bytes.
 */
#ifndef DISTENV_LF_DOC_H
#define DISTENV_LF_DOC_H

#include <stddef.h>
#include <yaml.h>

#include "distenv_error.h"

#define LF_DOC_NAME_MAX 512
/* Bounded inputs: a training YAML or a DeepSpeed config is a few KiB, a
 * config.json a few tens of KiB. Larger files are refused, not parsed. */
#define LF_DOC_MAX_BYTES (4u << 20)

struct lf_doc {
	yaml_document_t ydoc;
	int loaded;
	char name[LF_DOC_NAME_MAX]; /* the file, for messages */
	char *text; /* a copy of the source, NUL-ended */
	size_t len;
};

/*
 * Parse len bytes of buf (a YAML or JSON file named name) into doc. The
 * top level must be a mapping (LLaMA-Factory, DeepSpeed and Transformers
 * all read a dict). Errors: syntax errors with name:line:col (1-based),
 * more than one document, a top level that is not a mapping, a file
 * over LF_DOC_MAX_BYTES. doc is usable with lf_doc_free() in every case.
 */
int lf_doc_load(struct lf_doc *doc, const char *name, const char *buf,
		size_t len, struct distenv_error *err);

void lf_doc_free(struct lf_doc *doc);

/* The top-level mapping (never NULL after a successful load). */
yaml_node_t *lf_doc_root(struct lf_doc *doc);

/* The node of the value of key in mapping map, or NULL; *key_node (may
 * be NULL) gets the key's node. With a key given twice, the last wins,
 * as in PyYAML and Python's json. */
yaml_node_t *lf_map_get(struct lf_doc *doc, yaml_node_t *map, const char *key,
			yaml_node_t **key_node);

/* "name:line:col" of node (1-based, as editors count). */
void lf_node_where(const struct lf_doc *doc, const yaml_node_t *node, char *buf,
		   size_t len);

/* The scalar text of node, or NULL when node is not a scalar. */
const char *lf_scalar(const yaml_node_t *node);

/* True for a null value: an empty plain scalar, null, Null, NULL or ~
 * (YAML 1.1 null, as PyYAML's safe_load reads it). */
int lf_is_null(const yaml_node_t *node);

/*
 * Typed reads of the value of key in map, for the keys distenv uses.
 * *found is 0 when the key is absent or null (then *val is untouched).
 * A value of the wrong type is an error naming the key, its file:line:col
 * and the type wanted.
 * - bool: YAML 1.1 booleans as PyYAML reads them (true/false, yes/no,
 *   on/off, any case of the first letter or all caps), unquoted only.
 * - int: a plain decimal integer (also "1e9"-style floats with an integer
 *   value, which DeepSpeed's shipped configs use).
 * - str: any scalar (a quoted number stays a string).
 */
int lf_get_bool(struct lf_doc *doc, yaml_node_t *map, const char *key, int *val,
		int *found, struct distenv_error *err);
int lf_get_int(struct lf_doc *doc, yaml_node_t *map, const char *key,
	       long long *val, int *found, struct distenv_error *err);
int lf_get_str(struct lf_doc *doc, yaml_node_t *map, const char *key,
	       const char **val, int *found, struct distenv_error *err);

/* Parse a YAML 1.1 boolean scalar; 0 ok, -1 not a boolean. */
int lf_parse_bool(const char *s, int *val);

#endif
