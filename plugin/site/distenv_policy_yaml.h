/*
 * distenv_policy_yaml.h: the reader under the site policy file's parser
 * (distenv_policy_parse.c and the key handlers of distenv_policy_keys.c):
 * libyaml's event API over a memory buffer, one event at a time, with
 * every error placed in the file.
 *
 * Events rather than libyaml's document API, because the document loader
 * expands aliases silently (and an alias inside its own anchor makes a
 * cycle), while here an alias, an anchor or a tag is simply an error: a
 * policy file needs none of them.
 *
 * Every error's where is "FILE:LINE:COL" (1-based, as editors count) of
 * the offending key or value; its what starts with the key; its fix lists
 * what is accepted. Functions that can fail fill the reader's err and
 * return -1 (distenv_error.h). Pure: no system call.
 */
#ifndef DISTENV_POLICY_YAML_H
#define DISTENV_POLICY_YAML_H

#include <stddef.h>

#include <yaml.h>

#include "distenv_error.h"
#include "distenv_options.h"

/* Room for "FILE:LINE:COL" */
#define DISTENV_POLICY_WHERE_MAX (DISTENV_SITE_PATH_MAX + 48)

struct distenv_policy_yaml {
	yaml_parser_t yp;
	yaml_event_t ev; /* the current event, when have_ev */
	int have_ev;
	const char *text; /* the input, to place reader errors */
	size_t len;
	const char *name; /* the file, for FILE in errors */
	struct distenv_error *err;
};

/* Start reading text (len bytes) named name; errors go to err. Returns
 * 0, then end with distenv_policy_yaml_end, or -1 (out of memory) with
 * nothing to end. */
int distenv_policy_yaml_begin(struct distenv_policy_yaml *y, const char *text,
			      size_t len, const char *name,
			      struct distenv_error *err);
void distenv_policy_yaml_end(struct distenv_policy_yaml *y);

/* "FILE:LINE:COL" of m into buf (DISTENV_POLICY_WHERE_MAX bytes). */
void distenv_policy_yaml_where(const struct distenv_policy_yaml *y,
			       yaml_mark_t m, char *buf);

/* Fill err at m with fix and a printf what. Returns -1. */
int distenv_policy_yaml_fail(struct distenv_policy_yaml *y, yaml_mark_t m,
			     const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A core parser filled err; put "KEY: " before its what. Returns -1. */
int distenv_policy_yaml_key_prefix(struct distenv_policy_yaml *y,
				   const char *key);

/* The next event into y->ev; refuses aliases, anchors and tags. */
int distenv_policy_yaml_next(struct distenv_policy_yaml *y);

/* "a mapping", "a list" or "a single value", for messages. */
const char *distenv_policy_yaml_kind(const yaml_event_t *e);

/* A scalar e that is a YAML 1.1/1.2 core schema null, as a plain scalar
 * writes it (or an empty quoted one). */
int distenv_policy_yaml_is_null(const yaml_event_t *e);

/* The current event as the text value of key: a scalar, not null, no
 * NUL byte, shorter than len. accepted is the fix text. */
int distenv_policy_yaml_scalar(struct distenv_policy_yaml *y, const char *key,
			       const char *accepted, char *buf, size_t len);

/* Read the value event of key and take it as a scalar, its
 * "FILE:LINE:COL" in where (DISTENV_POLICY_WHERE_MAX bytes). */
int distenv_policy_yaml_next_scalar(struct distenv_policy_yaml *y,
				    const char *key, const char *accepted,
				    char *buf, size_t len, char *where);

/* The current event must open a mapping or a list (type) for key. */
int distenv_policy_yaml_expect(struct distenv_policy_yaml *y,
			       yaml_event_type_t type, const char *key,
			       const char *accepted);

/* The next key of a mapping whose start was consumed: 1 with the key in
 * key (len bytes) and its mark in *mark, 0 at the mapping's end, -1 on
 * error. what names the mapping in errors. */
int distenv_policy_yaml_next_key(struct distenv_policy_yaml *y,
				 const char *what, char *key, size_t len,
				 yaml_mark_t *mark);

#endif
