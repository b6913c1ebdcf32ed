/* distenv_env.c: environment look-ups and the DISTENV_SET marker. */
#include "distenv_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *distenv_env_get(const char *const *envp, const char *name)
{
	size_t len = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}

uint32_t distenv_value_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++) {
		h ^= (unsigned char) *s;
		h *= 16777619u;
	}
	return h;
}

const char *distenv_env_user_value(const char *const *envp, const char *name)
{
	const char *value = distenv_env_get(envp, name);
	const char *marker = distenv_env_get(envp, DISTENV_MARKER_VAR);
	char entry[DISTENV_NAME_MAX + 16];
	size_t elen;
	const char *p;

	if (!value || !marker)
		return value;
	elen = (size_t) snprintf(entry, sizeof(entry), "%s:%08x", name,
				 distenv_value_hash(value));
	for (p = marker; (p = strstr(p, entry)); p += elen) {
		int starts = (p == marker || p[-1] == ' ');
		int ends = (p[elen] == '\0' || p[elen] == ' ');

		if (starts && ends)
			return NULL; /* distenv's own, from an earlier step */
	}
	return value;
}

int distenv_env_marker(const struct distenv_vars *vars, char *buf, size_t len,
		       struct distenv_error *err)
{
	size_t used = 0, i;

	if (len == 0)
		return distenv_error_set(err, DISTENV_MARKER_VAR, NULL,
					 "no room for the marker");
	buf[0] = '\0';
	for (i = 0; i < vars->count; i++) {
		const struct distenv_var *v = &vars->items[i];
		int n;

		if (v->action != DISTENV_ACTION_SET)
			continue;
		n = snprintf(buf + used, len - used, "%s%s:%08x",
			     used ? " " : "", v->name,
			     distenv_value_hash(v->value));
		if (n < 0 || (size_t) n >= len - used)
			return distenv_error_set(
				err, DISTENV_MARKER_VAR, NULL,
				"too many variables for the marker");
		used += (size_t) n;
	}
	return 0;
}

int distenv_parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	unsigned long long v = 0;
	const char *p;

	if (!s || !*s)
		return -1;
	for (p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned) (*p - '0');
		if (v > max)
			return -1;
	}
	*out = (uint32_t) v;
	return 0;
}

int distenv_env_u32(const char *const *envp, const char *name, int required,
		    uint32_t *out, struct distenv_error *err)
{
	const char *value = distenv_env_get(envp, name);

	if (!value) {
		if (!required)
			return 0;
		return distenv_error_set(
			err, name,
			"run inside a Slurm step (srun), or set the variable",
			"not set");
	}
	if (distenv_parse_u32(value, UINT32_MAX, out))
		return distenv_error_set(err, name, NULL,
					 "'%s' is not a whole number", value);
	return 1;
}
