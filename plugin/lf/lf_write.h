/*
 * lf_write.h: the resolved copies of the user's files, as text (pure;
 * lf_sys.h writes them).
 *
 * YAML: the user's bytes, with only the values of the decided keys
 * replaced in place and absent decided keys appended at the end, after
 * a header comment saying what was changed and why. Key order, comments,
 * quoting and spacing of everything else survive byte for byte (libyaml
 * drops comments when it re-emits, so distenv edits the text at the
 * spans libyaml reports instead of re-emitting).
 *
 * DeepSpeed JSON: re-emitted from the document model in the user's key
 * order, numbers and literals as written (1e9 stays 1e9), strings
 * re-quoted; only zero_optimization.offload_* differ. JSON has no
 * comments (DeepSpeed and Transformers read it with json.load), so the
 * reason for the change is in the YAML's header.
 */
#ifndef DISTENV_LF_WRITE_H
#define DISTENV_LF_WRITE_H

#include <stddef.h>

#include "distenv_error.h"
#include "lf_doc.h"

struct lf_yaml_edit {
	const char *key; /* a top-level key */
	const char *value; /* YAML text of the new value (a plain scalar or a
			    * double-quoted string) */
};

/*
 * Write the resolved YAML of y into a malloc'd NUL-ended *out (*len
 * bytes). header: lines to put first, each prefixed with "# "
 * (newline-separated, may be NULL). Errors: a top level in flow style
 * ({...}) when a key must be appended; edits that would not read back as
 * the same top-level keys (a replaced value held an anchor that other
 * lines use); out of memory.
 */
int lf_write_yaml(struct lf_doc *y, const struct lf_yaml_edit *edits,
		  size_t nedits, const char *header, char **out, size_t *len,
		  struct distenv_error *err);

/*
 * Write the DeepSpeed config ds as JSON into a malloc'd *out. offload:
 * 1 set zero_optimization.offload_param and offload_optimizer to
 * {"device": "cpu", "pin_memory": true}; -1 remove both; 0 keep.
 */
int lf_write_ds_json(struct lf_doc *ds, int offload, char **out, size_t *len,
		     struct distenv_error *err);

/* A YAML double-quoted scalar for s (for paths in edits), into buf. */
void lf_yaml_quote(const char *s, char *buf, size_t len);

#endif
