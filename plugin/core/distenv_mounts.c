/* distenv_mounts.c: pyxis's mount list and path mapping (distenv_mounts.h). */
#include "distenv_mounts.h"

#include <stdio.h>
#include <string.h>

static int is_path(const char *s)
{
	return strspn(s, "./") > 0;
}

static int has_flag(const char *flags, const char *flag)
{
	size_t n = strlen(flag);

	while (*flags) {
		size_t len = strcspn(flags, "+");

		if (len == n && !strncmp(flags, flag, n))
			return 1;
		flags += len + (flags[len] == '+');
	}
	return 0;
}

/* One ENTRY, split in place (args.c, parse_mount_option). */
static int parse_entry(char *entry, const char *where, struct distenv_mount *m,
		       struct distenv_error *err)
{
	char *rest = entry, *src = strsep(&rest, ":"), *dst = src;
	char shown[128];

	m->flags = "";
	if (rest) {
		dst = strsep(&rest, ":");
		if (rest)
			m->flags = rest;
	}
	if (!src[0] || !dst[0])
		return distenv_error_set(err, where,
					 "write SRC:DST[:FLAGS], or one path "
					 "to mount it at the same place",
					 "'%s' has an empty %s",
					 distenv_printable(entry, shown,
							   sizeof(shown)),
					 src[0] ? "DST" : "SRC");
	if (!strcmp(src, "tmpfs"))
		m->kind = DISTENV_MOUNT_TMPFS;
	else if (!strcmp(src, "umount"))
		m->kind = DISTENV_MOUNT_UMOUNT;
	else if (!is_path(src))
		return distenv_error_set(err, where,
					 "give a path, \"tmpfs\" or \"umount\"",
					 "source '%s' is not a path",
					 distenv_printable(src, shown,
							   sizeof(shown)));
	if (!is_path(dst))
		return distenv_error_set(err, where, "give a path",
					 "target '%s' is not a path",
					 distenv_printable(dst, shown,
							   sizeof(shown)));
	m->src = src;
	m->dst = dst;
	m->relative = dst[0] != '/' ||
		      (m->kind == DISTENV_MOUNT_BIND && src[0] != '/');
	m->readonly = has_flag(m->flags, "ro");
	return 0;
}

int distenv_mounts_parse(const char *list, const char *where,
			 struct distenv_mounts *out, struct distenv_error *err)
{
	char *rest, *entry;

	memset(out, 0, sizeof(*out));
	if (!list || !list[0])
		return 0;
	if (strlen(list) >= sizeof(out->text))
		return distenv_error_set(err, where, "mount fewer paths",
					 "the list is longer than %zu bytes",
					 sizeof(out->text) - 1);
	memcpy(out->text, list, strlen(list) + 1);
	rest = out->text;
	while ((entry = strsep(&rest, ",")) != NULL) {
		if (out->count == DISTENV_MOUNTS_MAX) {
			out->count = 0;
			return distenv_error_set(err, where,
						 "mount fewer paths",
						 "more than %d entries",
						 DISTENV_MOUNTS_MAX);
		}
		if (parse_entry(entry, where, &out->m[out->count], err)) {
			out->count = 0;
			return -1;
		}
		out->count++;
	}
	return 0;
}

static const char *component(const char *p, size_t *len)
{
	while (*p == '/')
		p++;
	*len = strcspn(p, "/");
	return p;
}

/* The rest of path when it is dir or under it (components compared,
 * repeated "/" ignored), else NULL; *score: the length matched. */
static const char *under(const char *dir, const char *path, size_t *score)
{
	size_t dl, pl;

	*score = 0;
	for (;;) {
		dir = component(dir, &dl);
		if (!dl)
			return path;
		path = component(path, &pl);
		if (dl != pl || strncmp(dir, path, dl))
			return NULL;
		*score += dl + 1;
		dir += dl;
		path += pl;
	}
}

/* base, then each component of rest, "/"-joined; 0 or -1 when cut. */
static int join(const char *base, const char *rest, char *out, size_t len)
{
	size_t used = 0, n;
	int w;

	n = strlen(base);
	while (n > 1 && base[n - 1] == '/')
		n--;
	w = snprintf(out, len, "%.*s", (int) n, base);
	if (w < 0 || (size_t) w >= len)
		return -1;
	used = (size_t) w;
	for (rest = component(rest, &n); n; rest = component(rest + n, &n)) {
		w = snprintf(out + used, len - used, "%s%.*s",
			     used && out[used - 1] == '/' ? "" : "/", (int) n,
			     rest);
		if (w < 0 || (size_t) w >= len - used)
			return -1;
		used += (size_t) w;
	}
	return 0;
}

enum distenv_map distenv_mounts_map(const struct distenv_mounts *m,
				    const char *cpath, char *host, size_t len,
				    const struct distenv_mount **by)
{
	const struct distenv_mount *best = NULL;
	const char *best_rest = NULL, *rest;
	size_t i, score, best_score = 0;

	if (by)
		*by = NULL;
	if (len)
		host[0] = '\0';
	if (!cpath || cpath[0] != '/')
		return DISTENV_MAP_NOT_HOST;
	for (i = 0; i < m->count; i++) {
		const struct distenv_mount *e = &m->m[i];

		if (e->dst[0] != '/' || !(rest = under(e->dst, cpath, &score)))
			continue;
		if (!best || score >= best_score) {
			best = e;
			best_rest = rest;
			best_score = score;
		}
	}
	if (by)
		*by = best;
	if (!best)
		return DISTENV_MAP_UNMOUNTED;
	if (best->kind != DISTENV_MOUNT_BIND || best->relative ||
	    join(best->src, best_rest, host, len))
		return DISTENV_MAP_NOT_HOST;
	return DISTENV_MAP_HOST;
}

int distenv_mounts_unmap(const struct distenv_mounts *m, const char *hpath,
			 char *cpath, size_t len)
{
	const struct distenv_mount *best = NULL;
	const char *best_rest = NULL, *rest;
	size_t i, score, best_score = 0;

	if (!hpath || hpath[0] != '/')
		return -1;
	for (i = 0; i < m->count; i++) {
		const struct distenv_mount *e = &m->m[i];

		if (e->kind != DISTENV_MOUNT_BIND || e->relative ||
		    !(rest = under(e->src, hpath, &score)))
			continue;
		if (!best || score >= best_score) {
			best = e;
			best_rest = rest;
			best_score = score;
		}
	}
	return best ? join(best->dst, best_rest, cpath, len) : -1;
}

int distenv_name_list_has(const char *list, const char *name)
{
	size_t n = strlen(name);

	while (list && *list) {
		size_t len = strcspn(list, ",");

		if (len == n && !strncmp(list, name, n))
			return 1;
		list += len + (list[len] == ',');
	}
	return 0;
}
