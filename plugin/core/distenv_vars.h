/*
 * distenv_vars.h: the output of the core, an ordered list of environment
 * variables, each with the action taken and the reason for its value.
 *
 * The order is the order in which the variables should be exported and
 * shown: the derivation adds them in the order a reader checks them
 * (topology of the step first, then addresses, then interfaces).
 */
#ifndef DISTENV_VARS_H
#define DISTENV_VARS_H

#include <stddef.h>

#include "distenv_error.h"

/* Longest value distenv will put into an environment (bytes, without NUL). */
#define DISTENV_VALUE_MAX 4096
#define DISTENV_NAME_MAX 64

enum distenv_action {
	DISTENV_ACTION_SET, /* distenv derived the value; export it */
	DISTENV_ACTION_KEPT, /* the user set the variable; left as it is */
};

struct distenv_var {
	char name[DISTENV_NAME_MAX];
	char *value; /* the value in force (derived, or the user's) */
	char *reason; /* where the value came from, for --distenv-show */
	enum distenv_action action;
};

#define DISTENV_WARNINGS_MAX 4

/* A warning is a finding that does not stop the step: the caller shows
 * it once per node (the job log, --distenv-show) and may turn it into an
 * error (--distenv-check=strict) before deriving. */
struct distenv_vars {
	struct distenv_var *items;
	size_t count;
	size_t cap;
	struct distenv_error warnings[DISTENV_WARNINGS_MAX];
	size_t n_warnings;
};

/*
 * Append a variable. name must be a valid environment name
 * ([A-Za-z_][A-Za-z0-9_]*, shorter than DISTENV_NAME_MAX); value must
 * hold no newline and be at most DISTENV_VALUE_MAX bytes (a value that
 * reaches a shell or a launcher's re-split argument list must stay one
 * line). The reason is a printf format. Errors: invalid name or value,
 * out of memory; the list is unchanged then.
 */
int distenv_vars_add(struct distenv_vars *vars, const char *name,
		     const char *value, enum distenv_action action,
		     struct distenv_error *err, const char *reason_fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* The variable named name, or NULL. */
const struct distenv_var *distenv_vars_find(const struct distenv_vars *vars,
					    const char *name);

/* The value of the variable named name, or NULL. */
const char *distenv_vars_value(const struct distenv_vars *vars,
			       const char *name);

/* Keep a copy of warning w; beyond DISTENV_WARNINGS_MAX the rest are
 * dropped (one derivation raises at most a few). */
void distenv_vars_warn(struct distenv_vars *vars,
		       const struct distenv_error *w);

/* Free every entry and warning; vars may be reused afterwards (it is
 * empty). */
void distenv_vars_free(struct distenv_vars *vars);

/*
 * Check a value before it goes into an environment: no newline, no
 * carriage return, no other control byte but tab (a NUL cannot be in a C
 * string: the value ends there), at most DISTENV_VALUE_MAX bytes. where names the
 * variable or option for the error. Returns 0 or -1.
 */
int distenv_value_check(const char *value, const char *where,
			struct distenv_error *err);

#endif
