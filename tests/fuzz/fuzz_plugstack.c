/*
 * fuzz_plugstack: the plugstack.conf arguments of distenv.so
 * (distenv_parse_plugstack).
 *
 * The input is one plugstack.conf line after the plugin path. Slurm cuts
 * it at the first '#' and splits the rest on whitespace, with no quoting
 * (src/common/plugstack.c, _spank_stack_process_line; docs/contracts.md
 * 5), so this target does the same and hands the words over as argv.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_options.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct distenv_site site;
	struct distenv_error err;
	char *line = malloc(size + 1), *hash, *save = NULL, *word;
	char *argv[MAX_ARGS];
	int argc = 0;

	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	for (word = strtok_r(line, " \t\r\n\v\f", &save);
	     word && argc < MAX_ARGS;
	     word = strtok_r(NULL, " \t\r\n\v\f", &save))
		argv[argc++] = word;
	distenv_error_clear(&err);
	if (distenv_parse_plugstack(argc, argv, &site, &err) == 0) {
		/* Whatever is accepted must be a usable range. */
		if (site.port_lo < 1024 || site.port_lo > site.port_hi)
			abort();
	} else if (!distenv_error_is_set(&err)) {
		abort(); /* a failure always says what was wrong */
	}
	free(line);
	return 0;
}
