/*
 * fuzz_mounts: pyxis's --container-mounts lists as a step gives them
 * (distenv_mounts.h), then the host path of fixed container paths and
 * the container path of fixed host paths through them.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_mounts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const paths[] = { "/", "/out", "/out/run/x",
					     "//w//x/", "/tmp/a", "rel/x" };
	static struct distenv_mounts m;
	const struct distenv_mount *by;
	struct distenv_error err;
	char *text = malloc(size + 1);
	char out[64];
	size_t i;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	distenv_error_clear(&err);
	if (distenv_mounts_parse(text, "--container-mounts", &m, &err) == 0) {
		if (m.count > DISTENV_MOUNTS_MAX)
			abort();
		for (i = 0; i < m.count; i++)
			if (!m.m[i].src[0] || !m.m[i].dst[0] || !m.m[i].flags)
				abort();
		for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			if (distenv_mounts_map(&m, paths[i], out, sizeof(out),
					       &by) == DISTENV_MAP_HOST &&
			    (out[0] != '/' || !by))
				abort();
			if (distenv_mounts_unmap(&m, paths[i], out,
						 sizeof(out)) == 0 &&
			    out[0] != '/' && out[0] != '.')
				abort();
		}
	} else if (m.count || !err.what[0]) {
		abort();
	}
	free(text);
	return 0;
}
