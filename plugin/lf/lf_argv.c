/* lf_argv.c: the step's command against the resolved copy. */
#include "lf_argv.h"

#include <stdio.h>
#include <string.h>

#define SEPARATORS " \t\n'\"=;()"

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* One argument: each word, against config. */
static int arg_names(const char *arg, const char *config,
		     int (*same_file)(const char *, const char *), char *word,
		     size_t len)
{
	const char *want = base_name(config);
	const char *p = arg;

	while (*p) {
		size_t n;

		p += strspn(p, SEPARATORS);
		n = strcspn(p, SEPARATORS);
		if (n && n < len) {
			memcpy(word, p, n);
			word[n] = '\0';
			if (strcmp(base_name(word), want) == 0 &&
			    (!same_file || strcmp(word, config) == 0 ||
			     same_file(word, config)))
				return 1;
		}
		p += n;
	}
	return 0;
}

int lf_argv_names_original(int argc, char *const *argv, const char *config,
			   int (*same_file)(const char *a, const char *b),
			   char *word, size_t len)
{
	int i;

	if (!argv || !config || !config[0] || !len)
		return 0;
	for (i = 0; i < argc && argv[i]; i++)
		if (strstr(argv[i], "DISTENV_LF_CONFIG"))
			return 0;
	for (i = 1; i < argc && argv[i]; i++)
		if (arg_names(argv[i], config, same_file, word, len))
			return 1;
	return 0;
}
