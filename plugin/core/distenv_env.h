/*
 * distenv_env.h: reading a task's environment, and telling a variable the
 * user set from one distenv set for an earlier step.
 *
 * Rule: never overwrite a variable the user exported, but
 * re-derive the values distenv itself set for an earlier step of the same
 * job (the batch script's values are inherited by every srun in it). To
 * tell them apart, distenv exports DISTENV_SET, a space-separated list of
 * NAME:HASH pairs, HASH being the 32-bit FNV-1a of the value it set, in
 * 8 hex digits. A variable counts as distenv's only while its value still
 * has that hash, so a user who changes it in the batch script keeps it.
 */
#ifndef DISTENV_ENV_H
#define DISTENV_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"
#include "distenv_vars.h"

#define DISTENV_MARKER_VAR "DISTENV_SET"

/* The value of name in envp (a NULL-terminated "NAME=value" array), or
 * NULL when it is not there. envp may be NULL. */
const char *distenv_env_get(const char *const *envp, const char *name);

/* 32-bit FNV-1a of s (http://www.isthe.com/chongo/tech/comp/fnv/). */
uint32_t distenv_value_hash(const char *s);

/*
 * The value the user set for name: the value in envp unless it is absent
 * or DISTENV_SET records it as set by distenv with this very value.
 * Returns NULL when the user did not set it.
 */
const char *distenv_env_user_value(const char *const *envp, const char *name);

/*
 * Build the DISTENV_SET value for the variables of vars whose action is
 * DISTENV_ACTION_SET, into buf of len bytes. Errors: buf too small.
 */
int distenv_env_marker(const struct distenv_vars *vars, char *buf, size_t len,
		       struct distenv_error *err);

/*
 * Parse a decimal unsigned number of at most max. Leading/trailing blanks,
 * signs, and other characters are errors. Returns 0 or -1 (no error text:
 * callers know what the number was for).
 */
int distenv_parse_u32(const char *s, uint32_t max, uint32_t *out);

/*
 * Read a decimal variable of envp into *out. Errors: absent (when
 * required), not a number. where_fmt names the variable for the error.
 * Returns 1 when found, 0 when absent and not required, -1 on error.
 */
int distenv_env_u32(const char *const *envp, const char *name, int required,
		    uint32_t *out, struct distenv_error *err);

#endif
