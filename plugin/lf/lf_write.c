/* lf_write.c: resolved YAML (span edits) and DeepSpeed JSON (re-emit). */
#include "lf_write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing output buffer. */
struct buf {
	char *p;
	size_t len, cap;
	int failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->failed = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static int finish(struct buf *b, char **out, size_t *len,
		  struct distenv_error *err)
{
	if (b->failed || !b->p) {
		free(b->p);
		return distenv_error_set(err, NULL, NULL, "out of memory");
	}
	*out = b->p;
	*len = b->len;
	return 0;
}

/* libyaml's mark index counts characters; the text is UTF-8 (lf_doc.c
 * drops a leading byte-order mark). */
static size_t char_to_byte(const struct lf_doc *d, size_t idx)
{
	size_t i = 0, chars = 0;

	while (i < d->len && chars < idx) {
		i++;
		while (i < d->len &&
		       ((unsigned char) d->text[i] & 0xC0) == 0x80)
			i++;
		chars++;
	}
	return i;
}

struct span {
	size_t start, end; /* bytes */
	const char *text;
	int pad; /* insert a space before text */
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

void lf_yaml_quote(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	if (len < 3) {
		if (len)
			buf[0] = '\0';
		return;
	}
	buf[o++] = '"';
	for (; *s && o + 3 < len; s++) {
		if (*s == '"' || *s == '\\')
			buf[o++] = '\\';
		buf[o++] = *s;
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

static void put_header(struct buf *b, const char *header)
{
	const char *p = header;

	while (p && *p) {
		size_t n = strcspn(p, "\n");

		puts_(b, "# ");
		put(b, p, n);
		puts_(b, "\n");
		p += n;
		if (*p)
			p++;
	}
}

/* Where the value of one edited key stands in the text, as a span to
 * replace: 1 with *sp filled in, 0 where the key is absent, -1 (err set)
 * for an anchored value. Separate so that lf_write_yaml reads as find,
 * replace, append. */
static int edit_span(struct lf_doc *y, yaml_node_t *root,
		     const struct lf_yaml_edit *e, struct span *sp,
		     struct distenv_error *err)
{
	yaml_node_t *k = NULL, *v;
	size_t kend, colon, vstart, vend;

	v = lf_map_get(y, root, e->key, &k);
	if (!v)
		return 0;
	kend = char_to_byte(y, k->end_mark.index);
	colon = kend;
	while (colon < y->len && y->text[colon] != ':')
		colon++;
	colon = colon < y->len ? colon + 1 : colon;
	vstart = char_to_byte(y, v->start_mark.index);
	vend = char_to_byte(y, v->end_mark.index);
	sp->text = e->value;
	if (vstart < kend) {
		/* An alias (*name): libyaml hands back the anchored
		 * node, elsewhere in the file. Replace the alias. */
		vstart = colon;
		while (vstart < y->len &&
		       (y->text[vstart] == ' ' || y->text[vstart] == '\t'))
			vstart++;
		vend = vstart;
		while (vend < y->len && !strchr(" \t\r\n,[]{}#", y->text[vend]))
			vend++;
	} else if (v->start_mark.line != k->start_mark.line || vstart == vend) {
		/* An empty value, or one that starts on a later line
		 * (a block collection): write the new value right
		 * after the colon. */
		vstart = colon;
		sp->pad = 1;
	}
	/* An anchored value (&name) may be used elsewhere through
	 * *name: changing it would change a value distenv did not
	 * decide. */
	if (y->text[vstart] == '&')
		return distenv_error_set(err, y->name,
					 "remove the "
					 "anchor, or set the value "
					 "yourself",
					 "%s has a YAML anchor (&...); "
					 "distenv does not change "
					 "anchored values",
					 e->key);
	/* Block scalars and collections end after their last line
	 * break: keep the line structure. */
	while (vend > vstart && strchr(" \t\r\n", y->text[vend - 1]))
		vend--;
	if (vend < vstart)
		vend = vstart;
	sp->start = vstart;
	sp->end = vend;
	return 1;
}

/* Append the edited keys the file does not have, under a "### added by
 * distenv" line at the column of the top-level keys. Separate because
 * adding a key has its own refusals (flow style, an explicit end). */
static int append_missing(struct lf_doc *y, yaml_node_t *root,
			  const struct lf_yaml_edit *edits, size_t nedits,
			  size_t indent_cols, struct buf *b,
			  struct distenv_error *err)
{
	size_t i, col;
	int appended = 0;

	for (i = 0; i < nedits; i++) {
		if (lf_map_get(y, root, edits[i].key, NULL))
			continue;
		if (root->data.mapping.style == YAML_FLOW_MAPPING_STYLE ||
		    !y->ydoc.end_implicit)
			return distenv_error_set(err, y->name,
						 "write the file as one "
						 "'key: value' per line",
						 "cannot add %s to a top level "
						 "written in flow style {...} "
						 "or ended with '...'",
						 edits[i].key);
		if (!appended && b->len && b->p && b->p[b->len - 1] != '\n')
			puts_(b, "\n");
		if (!appended) {
			puts_(b, "\n");
			for (col = 0; col < indent_cols; col++)
				puts_(b, " ");
			puts_(b, "### added by distenv\n");
		}
		appended = 1;
		/* at the column of the user's own top-level keys */
		for (col = 0; col < indent_cols; col++)
			puts_(b, " ");
		puts_(b, edits[i].key);
		puts_(b, ": ");
		puts_(b, edits[i].value);
		puts_(b, "\n");
	}
	return 0;
}

/* The top-level keys of a loaded document. */
static size_t top_keys(struct lf_doc *d)
{
	yaml_node_t *r = lf_doc_root(d);

	return (size_t) (r->data.mapping.pairs.top -
			 r->data.mapping.pairs.start);
}

/*
 * The edited text must read back as YAML with y's top-level keys and the
 * appended ones. Edits replace the text of a value in place, so a value
 * that held an anchor (&a) which another key's alias (*a) uses would
 * leave that alias undefined; libyaml also counts a byte-order mark at a
 * line's start as a column, which makes the next key a value of the one
 * before (tests/fuzz/fuzz_lf_yaml found both).
 */
static int check_reloads(struct lf_doc *y, const struct lf_yaml_edit *edits,
			 size_t nedits, const char *text, size_t len,
			 struct distenv_error *err)
{
	struct lf_doc back;
	struct distenv_error e;
	size_t want = top_keys(y), i;
	int bad;

	for (i = 0; i < nedits; i++)
		want += lf_map_get(y, lf_doc_root(y), edits[i].key, NULL) ? 0 :
									    1;
	distenv_error_clear(&e);
	bad = lf_doc_load(&back, "the resolved copy", text, len, &e) ||
	      top_keys(&back) != want;
	lf_doc_free(&back);
	if (!bad)
		return 0;
	return distenv_error_set(
		err, y->name,
		"write the keys distenv sets (save_on_each_node, deepspeed, "
		"resume_from_checkpoint, ...) with plain values, one per line "
		"at the top level, without YAML anchors (&) or aliases (*) "
		"in them",
		"distenv's edits of the file do not read back as the same "
		"YAML (%s): a value it replaces holds what other lines rely "
		"on",
		e.what[0] ? e.what : "another set of top-level keys");
}

int lf_write_yaml(struct lf_doc *y, const struct lf_yaml_edit *edits,
		  size_t nedits, const char *header, char **out, size_t *len,
		  struct distenv_error *err)
{
	yaml_node_t *root = lf_doc_root(y);
	struct span *spans;
	struct buf b = { 0 };
	size_t i, n = 0, pos = 0;
	size_t indent_cols = 0;
	int rc;

	if (!root)
		return distenv_error_set(err, y->name, NULL, "YAML not loaded");
	spans = calloc(nedits ? nedits : 1, sizeof(*spans));
	if (!spans)
		return distenv_error_set(err, NULL, NULL, "out of memory");
	for (i = 0; i < nedits; i++) {
		rc = edit_span(y, root, &edits[i], &spans[n], err);
		if (rc < 0) {
			free(spans);
			free(b.p);
			return rc;
		}
		n += (size_t) rc;
	}
	if (root->data.mapping.pairs.top > root->data.mapping.pairs.start)
		/* The block mapping's own column, where its first key or
		 * `?` indicator stands (an explicit key's text can start
		 * later), as libyaml counts it: it knows every YAML line break
		 * (\r, \n, \r\n), and lf_doc.c drops a byte-order mark it
		 * would count (tests/fuzz/fuzz_lf_yaml found all three). */
		indent_cols = root->start_mark.column;
	qsort(spans, n, sizeof(*spans), cmp_span);
	put_header(&b, header);
	for (i = 0; i < n; i++) {
		if (spans[i].start < pos)
			continue; /* the same key edited twice: first wins */
		put(&b, y->text + pos, spans[i].start - pos);
		if (spans[i].pad)
			puts_(&b, " ");
		puts_(&b, spans[i].text);
		pos = spans[i].end;
	}
	put(&b, y->text + pos, y->len - pos);
	rc = append_missing(y, root, edits, nedits, indent_cols, &b, err);
	free(spans);
	if (rc) {
		free(b.p);
		return rc;
	}
	if (finish(&b, out, len, err))
		return -1;
	if (check_reloads(y, edits, nedits, *out, *len, err)) {
		free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* JSON number, per RFC 8259 section 6. */
static int json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++;
	else if (*s >= '1' && *s <= '9')
		while (*s >= '0' && *s <= '9')
			s++;
	else
		return 0;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (*s < '0' || *s > '9')
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

static void json_string(struct buf *b, const char *s)
{
	char esc[8];

	puts_(b, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char) c;
			put(b, esc, 2);
		} else if (c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			puts_(b, esc);
		} else {
			put(b, s, 1);
		}
	}
	puts_(b, "\"");
}

static void indent(struct buf *b, int depth)
{
	int i;

	for (i = 0; i < depth; i++)
		puts_(b, "  ");
}

static void emit(struct buf *b, struct lf_doc *d, yaml_node_t *n, int depth,
		 int offload, int in_zero, int level);

static void emit_pair_key(struct buf *b, int depth, int *first, const char *key)
{
	puts_(b, *first ? "\n" : ",\n");
	*first = 0;
	indent(b, depth);
	json_string(b, key);
	puts_(b, ": ");
}

static void emit(struct buf *b, struct lf_doc *d, yaml_node_t *n, int depth,
		 int offload, int in_zero, int level)
{
	int first = 1;

	if (level > 64) { /* bounded recursion for hostile inputs */
		puts_(b, "null");
		return;
	}
	if (!n) {
		puts_(b, "null");
	} else if (n->type == YAML_SCALAR_NODE) {
		const char *s = lf_scalar(n);

		if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		    (json_number(s) || !strcmp(s, "true") ||
		     !strcmp(s, "false") || !strcmp(s, "null")))
			puts_(b, s);
		else if (lf_is_null(n))
			puts_(b, "null");
		else
			json_string(b, s);
	} else if (n->type == YAML_SEQUENCE_NODE) {
		yaml_node_item_t *it;

		puts_(b, "[");
		for (it = n->data.sequence.items.start;
		     it < n->data.sequence.items.top; it++) {
			puts_(b, first ? "\n" : ",\n");
			first = 0;
			indent(b, depth + 1);
			emit(b, d, yaml_document_get_node(&d->ydoc, *it),
			     depth + 1, offload, 0, level + 1);
		}
		if (!first) {
			puts_(b, "\n");
			indent(b, depth);
		}
		puts_(b, "]");
	} else {
		yaml_node_pair_t *p;

		puts_(b, "{");
		for (p = n->data.mapping.pairs.start;
		     p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k =
				yaml_document_get_node(&d->ydoc, p->key);
			const char *key = lf_scalar(k) ? lf_scalar(k) : "";
			int is_offload = !strcmp(key, "offload_param") ||
					 !strcmp(key, "offload_optimizer");

			if (in_zero && offload && is_offload)
				continue;
			emit_pair_key(b, depth + 1, &first, key);
			emit(b, d, yaml_document_get_node(&d->ydoc, p->value),
			     depth + 1, offload,
			     level == 0 && !strcmp(key, "zero_optimization"),
			     level + 1);
		}
		if (in_zero && offload > 0) {
			static const char *const keys[] = { "offload_optimizer",
							    "offload_param" };
			int i;

			for (i = 0; i < 2; i++) {
				emit_pair_key(b, depth + 1, &first, keys[i]);
				puts_(b, "{\n");
				indent(b, depth + 2);
				puts_(b, "\"device\": \"cpu\",\n");
				indent(b, depth + 2);
				puts_(b, "\"pin_memory\": true\n");
				indent(b, depth + 1);
				puts_(b, "}");
			}
		}
		if (!first) {
			puts_(b, "\n");
			indent(b, depth);
		}
		puts_(b, "}");
	}
}

int lf_write_ds_json(struct lf_doc *ds, int offload, char **out, size_t *len,
		     struct distenv_error *err)
{
	struct buf b = { 0 };
	yaml_node_t *root = lf_doc_root(ds);

	if (!root)
		return distenv_error_set(err, ds->name, NULL,
					 "DeepSpeed config not loaded");
	emit(&b, ds, root, 0, offload, 0, 0);
	puts_(&b, "\n");
	return finish(&b, out, len, err);
}
