/* distenv_sys_ns.c: the root directory this process sees, and the
 * container plugins loaded after distenv (distenv_sys.h). */
#define _GNU_SOURCE /* dladdr */
#include "distenv_sys.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

void distenv_root_id(struct distenv_root_id *id)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (stat("/", &st))
		return;
	id->dev = (unsigned long long) st.st_dev;
	id->ino = (unsigned long long) st.st_ino;
}

int distenv_is_container_plugin(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL;

	return path && strcmp(base ? base + 1 : path, "spank_pyxis.so") == 0;
}

long distenv_container_after(const char *const *names, size_t n,
			     const char *self)
{
	size_t i;
	int seen = 0;

	for (i = 0; i < n; i++) {
		if (!names[i])
			continue;
		if (self && strcmp(names[i], self) == 0)
			seen = 1;
		else if (seen && distenv_is_container_plugin(names[i]))
			return (long) i;
	}
	return -1;
}

#define LOADED_MAX 512

struct loaded {
	const char *names[LOADED_MAX];
	size_t n;
};

static int note_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
	struct loaded *l = data;

	(void) size;
	if (l->n < LOADED_MAX)
		l->names[l->n++] = info->dlpi_name;
	return 0;
}

int distenv_container_plugin_after(const void *self, char *name, size_t len)
{
	struct loaded l;
	Dl_info me;
	long i;

	if (!dladdr(self, &me) || !me.dli_fname)
		return 0;
	l.n = 0;
	dl_iterate_phdr(note_loaded, &l);
	i = distenv_container_after(l.names, l.n, me.dli_fname);
	if (i < 0)
		return 0;
	snprintf(name, len, "%s", l.names[i]);
	return 1;
}
