/*
 * distenv_policy_yaml.c: libyaml's events for the site policy file's
 * parser, each error placed at "FILE:LINE:COL" (distenv_policy_yaml.h).
 */
#include "distenv_policy_yaml.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int distenv_policy_yaml_begin(struct distenv_policy_yaml *y, const char *text,
			      size_t len, const char *name,
			      struct distenv_error *err)
{
	memset(y, 0, sizeof(*y));
	y->text = text;
	y->len = len;
	y->name = name;
	y->err = err;
	if (!yaml_parser_initialize(&y->yp))
		return distenv_error_set(err, name, NULL, "out of memory");
	yaml_parser_set_input_string(&y->yp, (const unsigned char *) text, len);
	return 0;
}

void distenv_policy_yaml_end(struct distenv_policy_yaml *y)
{
	if (y->have_ev)
		yaml_event_delete(&y->ev);
	y->have_ev = 0;
	yaml_parser_delete(&y->yp);
}

void distenv_policy_yaml_where(const struct distenv_policy_yaml *y,
			       yaml_mark_t m, char *buf)
{
	snprintf(buf, DISTENV_POLICY_WHERE_MAX, "%s:%zu:%zu", y->name,
		 m.line + 1, m.column + 1);
}

int distenv_policy_yaml_fail(struct distenv_policy_yaml *y, yaml_mark_t m,
			     const char *fix, const char *fmt, ...)
{
	char where[DISTENV_POLICY_WHERE_MAX], what[DISTENV_ERROR_TEXT];
	va_list ap;

	distenv_policy_yaml_where(y, m, where);
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return distenv_error_set(y->err, where, fix, "%s", what);
}

int distenv_policy_yaml_key_prefix(struct distenv_policy_yaml *y,
				   const char *key)
{
	char what[DISTENV_ERROR_TEXT];

	snprintf(what, sizeof(what), "%s: %s", key, y->err->what);
	snprintf(y->err->what, sizeof(y->err->what), "%s", what);
	return -1;
}

/* The mark of a byte offset into the text: libyaml's reader reports an
 * offset, not a mark. */
static yaml_mark_t mark_at(const struct distenv_policy_yaml *y, size_t offset)
{
	yaml_mark_t m;
	size_t i;

	memset(&m, 0, sizeof(m));
	for (i = 0; i < offset && i < y->len; i++) {
		if (y->text[i] == '\n') {
			m.line++;
			m.column = 0;
		} else {
			m.column++;
		}
	}
	return m;
}

/* libyaml's own error (syntax, encoding), placed at its mark. */
static int syntax_error(struct distenv_policy_yaml *y)
{
	const yaml_parser_t *yp = &y->yp;
	const char *fix =
		"fix the YAML syntax (a mapping of keys, two-space "
		"indents, no tabs); see distenv(8), SITE FILE, or the "
		"example /etc/slurm/distenv.yaml";
	const char *problem = yp->problem;

	if (yp->error == YAML_MEMORY_ERROR)
		return distenv_error_set(y->err, y->name, NULL,
					 "out of memory");
	if (yp->error == YAML_READER_ERROR)
		return distenv_policy_yaml_fail(y,
						mark_at(y, yp->problem_offset),
						"save the file as UTF-8 text",
						"%s",
						problem ? problem :
							  "cannot read");
	if (yp->context)
		return distenv_policy_yaml_fail(y, yp->problem_mark, fix,
						"YAML: %s %s", yp->context,
						problem ? problem : "");
	return distenv_policy_yaml_fail(y, yp->problem_mark, fix, "YAML: %s",
					problem ? problem : "syntax error");
}

int distenv_policy_yaml_next(struct distenv_policy_yaml *y)
{
	const char *fix = "write every value out in full: anchors (&), "
			  "aliases (*) and tags (!) are not accepted";
	const yaml_char_t *anchor = NULL, *tag = NULL;

	if (y->have_ev) {
		yaml_event_delete(&y->ev);
		y->have_ev = 0;
	}
	if (!yaml_parser_parse(&y->yp, &y->ev))
		return syntax_error(y);
	y->have_ev = 1;
	switch (y->ev.type) {
	case YAML_ALIAS_EVENT:
		return distenv_policy_yaml_fail(
			y, y->ev.start_mark, fix,
			"an alias (*%.64s) is not accepted",
			(const char *) y->ev.data.alias.anchor);
	case YAML_SCALAR_EVENT:
		anchor = y->ev.data.scalar.anchor;
		tag = y->ev.data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = y->ev.data.sequence_start.anchor;
		tag = y->ev.data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = y->ev.data.mapping_start.anchor;
		tag = y->ev.data.mapping_start.tag;
		break;
	default:
		break;
	}
	if (anchor)
		return distenv_policy_yaml_fail(
			y, y->ev.start_mark, fix,
			"an anchor (&%.64s) is not accepted",
			(const char *) anchor);
	if (tag)
		return distenv_policy_yaml_fail(y, y->ev.start_mark, fix,
						"a tag (%.64s) is not accepted",
						(const char *) tag);
	return 0;
}

const char *distenv_policy_yaml_kind(const yaml_event_t *e)
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

int distenv_policy_yaml_is_null(const yaml_event_t *e)
{
	const char *v = (const char *) e->data.scalar.value;

	if (e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return e->data.scalar.length == 0;
	return !v[0] || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
	       strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

int distenv_policy_yaml_scalar(struct distenv_policy_yaml *y, const char *key,
			       const char *accepted, char *buf, size_t len)
{
	const yaml_event_t *e = &y->ev;

	if (e->type != YAML_SCALAR_EVENT)
		return distenv_policy_yaml_fail(
			y, e->start_mark, accepted,
			"%s: expected a single value, found %s", key,
			distenv_policy_yaml_kind(e));
	if (distenv_policy_yaml_is_null(e))
		return distenv_policy_yaml_fail(y, e->start_mark, accepted,
						"%s: no value given", key);
	if (strlen((const char *) e->data.scalar.value) !=
	    e->data.scalar.length)
		return distenv_policy_yaml_fail(
			y, e->start_mark, accepted,
			"%s: the value holds a NUL character", key);
	if (e->data.scalar.length >= len)
		return distenv_policy_yaml_fail(
			y, e->start_mark, accepted,
			"%s: the value is longer than %zu bytes", key, len - 1);
	memcpy(buf, e->data.scalar.value, e->data.scalar.length + 1);
	return 0;
}

int distenv_policy_yaml_next_scalar(struct distenv_policy_yaml *y,
				    const char *key, const char *accepted,
				    char *buf, size_t len, char *where)
{
	if (distenv_policy_yaml_next(y))
		return -1;
	distenv_policy_yaml_where(y, y->ev.start_mark, where);
	return distenv_policy_yaml_scalar(y, key, accepted, buf, len);
}

int distenv_policy_yaml_expect(struct distenv_policy_yaml *y,
			       yaml_event_type_t type, const char *key,
			       const char *accepted)
{
	const yaml_event_t *e = &y->ev;

	if (e->type == type)
		return 0;
	return distenv_policy_yaml_fail(
		y, e->start_mark, accepted, "%s: expected %s, found %s", key,
		type == YAML_MAPPING_START_EVENT ? "a mapping" : "a list",
		e->type == YAML_SCALAR_EVENT && distenv_policy_yaml_is_null(e) ?
			"no value" :
			distenv_policy_yaml_kind(e));
}

int distenv_policy_yaml_next_key(struct distenv_policy_yaml *y,
				 const char *what, char *key, size_t len,
				 yaml_mark_t *mark)
{
	const char *fix = "write each key as a plain name";

	if (distenv_policy_yaml_next(y))
		return -1;
	if (y->ev.type == YAML_MAPPING_END_EVENT)
		return 0;
	*mark = y->ev.start_mark;
	if (y->ev.type != YAML_SCALAR_EVENT)
		return distenv_policy_yaml_fail(
			y, y->ev.start_mark, fix,
			"%s: a key must be a name, found %s", what,
			distenv_policy_yaml_kind(&y->ev));
	if (distenv_policy_yaml_is_null(&y->ev))
		return distenv_policy_yaml_fail(y, y->ev.start_mark, fix,
						"%s: a key without a name",
						what);
	if (distenv_policy_yaml_scalar(y, what, "use a shorter key", key, len))
		return -1;
	return 1;
}
