/*
 * distenv_error.h: the one error type of distenv.
 *
 * Every failure anywhere in distenv (core, adapters, SPANK glue, command)
 * is reported through a struct distenv_error that says what was wrong,
 * where (an option, a variable, a file:line, a node) and what to do about
 * it. Functions that can fail return 0 on success and -1 on failure, and
 * fill the error they were given; they never print.
 */
#ifndef DISTENV_ERROR_H
#define DISTENV_ERROR_H

#include <stddef.h>

#define DISTENV_ERROR_TEXT 512

struct distenv_error {
	char what[DISTENV_ERROR_TEXT]; /* what was wrong, with the bad value */
	char where
		[DISTENV_ERROR_TEXT]; /* option, variable, file:line or node */
	char fix[DISTENV_ERROR_TEXT]; /* what the user or admin can do */
};

/*
 * Fill err (which may be NULL: then nothing happens). where and fix may be
 * NULL or empty. what is a printf format. Returns -1, so callers can write
 * `return distenv_error_set(...)`. Texts longer than DISTENV_ERROR_TEXT - 1
 * bytes are cut.
 */
int distenv_error_set(struct distenv_error *err, const char *where,
		      const char *fix, const char *what_fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Reset err to "no error" (all fields empty). */
void distenv_error_clear(struct distenv_error *err);

/* True when err holds an error (its what field is not empty). */
int distenv_error_is_set(const struct distenv_error *err);

/*
 * Prefix err->where with `prefix: ` (e.g. a node name), keeping the old
 * where after it. Used when a lower layer's error is passed up.
 */
void distenv_error_prefix_where(struct distenv_error *err, const char *prefix);

/*
 * Render err as one line: "WHERE: WHAT. FIX" (parts that are empty are
 * left out). Returns the length it wanted to write, as snprintf does.
 */
int distenv_error_format(const struct distenv_error *err, char *buf,
			 size_t len);

/*
 * value as it can be shown in a message: printable ASCII bytes kept,
 * every other byte as '?', cut to fit buf (len bytes, len >= 4) with
 * "..." at the end when it was longer. Returns buf.
 */
const char *distenv_printable(const char *value, char *buf, size_t len);

#endif
