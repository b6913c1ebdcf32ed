/* distenv_vars.c: the ordered list of derived variables. */
#include "distenv_vars.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_is_valid(const char *name)
{
	size_t i;

	if (!name || !name[0] || strlen(name) >= DISTENV_NAME_MAX)
		return 0;
	if (!isalpha((unsigned char) name[0]) && name[0] != '_')
		return 0;
	for (i = 1; name[i]; i++)
		if (!isalnum((unsigned char) name[i]) && name[i] != '_')
			return 0;
	return 1;
}

int distenv_value_check(const char *value, const char *where,
			struct distenv_error *err)
{
	size_t i;

	if (!value)
		return distenv_error_set(err, where, NULL, "no value");
	if (strlen(value) > DISTENV_VALUE_MAX)
		return distenv_error_set(
			err, where, "use a shorter value",
			"value is %zu bytes long, more than the %d allowed",
			strlen(value), DISTENV_VALUE_MAX);
	if (strpbrk(value, "\n\r"))
		return distenv_error_set(err, where,
					 "remove the line break from the value",
					 "value holds a line break");
	/* Other control bytes (ESC, BEL, DEL...) reach --distenv-show and
	 * `distenv env` output as they are; no derived or launcher value
	 * holds one. A tab is left alone: it is blank, not a control. */
	for (i = 0; value[i]; i++) {
		unsigned char c = (unsigned char) value[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return distenv_error_set(
				err, where,
				"remove the control byte from the value",
				"value holds the control byte 0x%02x at offset %zu",
				c, i);
	}
	return 0;
}

int distenv_vars_add(struct distenv_vars *vars, const char *name,
		     const char *value, enum distenv_action action,
		     struct distenv_error *err, const char *reason_fmt, ...)
{
	struct distenv_var *var;
	char reason[1024];
	va_list ap;

	if (!name_is_valid(name))
		return distenv_error_set(
			err, name, NULL,
			"not a valid environment variable name");
	if (distenv_value_check(value, name, err))
		return -1;
	if (vars->count == vars->cap) {
		size_t cap = vars->cap ? vars->cap * 2 : 16;
		struct distenv_var *items =
			realloc(vars->items, cap * sizeof(*items));

		if (!items)
			return distenv_error_set(err, name, NULL,
						 "out of memory");
		vars->items = items;
		vars->cap = cap;
	}
	va_start(ap, reason_fmt);
	vsnprintf(reason, sizeof(reason), reason_fmt, ap);
	va_end(ap);

	var = &vars->items[vars->count];
	memset(var, 0, sizeof(*var));
	snprintf(var->name, sizeof(var->name), "%s", name);
	var->value = strdup(value);
	var->reason = strdup(reason);
	var->action = action;
	if (!var->value || !var->reason) {
		free(var->value);
		free(var->reason);
		return distenv_error_set(err, name, NULL, "out of memory");
	}
	vars->count++;
	return 0;
}

const struct distenv_var *distenv_vars_find(const struct distenv_vars *vars,
					    const char *name)
{
	size_t i;

	for (i = 0; i < vars->count; i++)
		if (strcmp(vars->items[i].name, name) == 0)
			return &vars->items[i];
	return NULL;
}

const char *distenv_vars_value(const struct distenv_vars *vars,
			       const char *name)
{
	const struct distenv_var *var = distenv_vars_find(vars, name);

	return var ? var->value : NULL;
}

void distenv_vars_warn(struct distenv_vars *vars, const struct distenv_error *w)
{
	if (vars->n_warnings < DISTENV_WARNINGS_MAX)
		vars->warnings[vars->n_warnings++] = *w;
}

void distenv_vars_free(struct distenv_vars *vars)
{
	size_t i;

	for (i = 0; i < vars->count; i++) {
		free(vars->items[i].value);
		free(vars->items[i].reason);
	}
	free(vars->items);
	memset(vars, 0, sizeof(*vars));
}
