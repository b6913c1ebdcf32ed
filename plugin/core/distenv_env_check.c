/* distenv_env_check.c: the variables of DISTENV_SET against the live
 * environment (distenv_env_check.h). */
#include "distenv_env_check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "distenv_env.h"

/* One "NAME:HASH" entry of len bytes at p into *f; -1 when malformed. */
static int read_entry(const char *p, size_t len, const char *const *envp,
		      struct distenv_env_found *f)
{
	const char *colon = memchr(p, ':', len);
	size_t name_len, i;
	uint32_t hash = 0;

	if (!colon || colon == p || len - (size_t) (colon - p) != 9)
		return -1;
	name_len = (size_t) (colon - p);
	if (name_len >= sizeof(f->name))
		return -1;
	for (i = 1; i <= 8; i++) {
		char c = colon[i];
		unsigned digit;

		if (c >= '0' && c <= '9')
			digit = (unsigned) (c - '0');
		else if (c >= 'a' && c <= 'f')
			digit = (unsigned) (c - 'a' + 10);
		else
			return -1;
		hash = hash * 16 + digit;
	}
	memcpy(f->name, p, name_len);
	f->name[name_len] = '\0';
	f->live = distenv_env_get(envp, f->name);
	f->same = f->live && distenv_value_hash(f->live) == hash;
	return 0;
}

int distenv_env_check(const char *const *envp, struct distenv_env_found *found,
		      size_t *n, struct distenv_error *err)
{
	const char *marker = distenv_env_get(envp, DISTENV_MARKER_VAR);
	const char *p;

	*n = 0;
	if (!marker)
		return distenv_error_set(
			err, DISTENV_MARKER_VAR,
			"run it as the command of a step that asked for distenv "
			"(srun --distenv ...), inside the container",
			"not set: this is no task of a step distenv set up, or "
			"the container runtime dropped the environment");
	for (p = marker; *p;) {
		size_t len = strcspn(p, " ");

		if (len) {
			if (*n == DISTENV_ENV_CHECK_MAX)
				return distenv_error_set(err,
							 DISTENV_MARKER_VAR,
							 NULL,
							 "more than %d entries",
							 DISTENV_ENV_CHECK_MAX);
			if (read_entry(p, len, envp, &found[*n]))
				return distenv_error_set(
					err, DISTENV_MARKER_VAR,
					"leave DISTENV_SET as distenv set it",
					"\"%.*s\" is not NAME:HASH (8 hex digits)",
					(int) (len > 80 ? 80 : len), p);
			(*n)++;
		}
		p += len;
		p += strspn(p, " ");
	}
	return 0;
}

int distenv_env_check_advisory(const char *name)
{
	return strcmp(name, "OMP_NUM_THREADS") == 0;
}
