/* Unit tests: the table of derived variables (distenv_derived.h) and
 * the tables of variables of docs/variables.md and docs/user-guide.md
 * name the same set. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_derived.h"

#define NAMES_MAX 64

/* The guides, and their sections whose table lists variables in its
 * first column. */
static const char *const files[] = {
	DISTENV_DOCS "/variables.md",
	DISTENV_DOCS "/user-guide.md",
};

static const char *const sections[] = {
	"## Where each value comes from",
	"### Elastic mode (c10d rendezvous)",
};

static int is_name(const char *p, size_t len)
{
	size_t i;

	if (!len || (p[0] != '_' && (p[0] < 'A' || p[0] > 'Z')))
		return 0;
	for (i = 1; i < len; i++)
		if (p[i] != '_' && (p[i] < 'A' || p[i] > 'Z') &&
		    (p[i] < '0' || p[i] > '9'))
			return 0;
	return 1;
}

static int in_section(const char *title)
{
	size_t i;

	for (i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (strcmp(title, sections[i]) == 0)
			return 1;
	return 0;
}

/* The `NAME`s of the first cell of each table row of those sections,
 * once each. */
static size_t readme_names(char names[][64])
{
	char line[4096];
	size_t n = 0, k, file;

	for (file = 0; file < sizeof(files) / sizeof(files[0]); file++) {
	int inside = 0;
	FILE *f = fopen(files[file], "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *p, *end;

		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#') {
			inside = in_section(line);
			continue;
		}
		if (!inside || strncmp(line, "| ", 2) != 0)
			continue;
		end = strstr(line + 2, " |");
		if (end)
			*end = '\0';
		for (p = strchr(line, '`'); p; p = strchr(p + 1, '`')) {
			char *close = strchr(p + 1, '`');
			size_t len;

			if (!close)
				break;
			len = (size_t)(close - p - 1);
			if (is_name(p + 1, len) && len < 64) {
				for (k = 0; k < n; k++)
					if (strncmp(names[k], p + 1, len) == 0 &&
					    names[k][len] == '\0')
						break;
				if (k == n && n < NAMES_MAX)
					snprintf(names[n++], 64, "%.*s",
						 (int)len, p + 1);
			}
			p = close;
		}
	}
	fclose(f);
	}
	return n;
}

static void readme_lists_the_table(void **state)
{
	static char names[NAMES_MAX][64];
	size_t n = readme_names(names), i, k;

	(void)state;
	for (i = 0; i < n; i++)
		if (!distenv_derived_find(names[i]))
			fail_msg("the guides list %s, which distenv_derived_vars "
				 "lacks", names[i]);
	for (k = 0; k < distenv_derived_count; k++) {
		for (i = 0; i < n; i++)
			if (strcmp(names[i], distenv_derived_vars[k].name) == 0)
				break;
		if (i == n)
			fail_msg("the guides' tables lack %s",
				 distenv_derived_vars[k].name);
	}
	assert_int_equal(n, distenv_derived_count);
}

static void table_lookups(void **state)
{
	size_t i, k;

	(void)state;
	assert_string_equal(distenv_derived_find("NCCL_IB_HCA")->site_fix,
			    "distenv derives it from the topology (use hca:)");
	assert_non_null(distenv_derived_find("DISTENV_SET"));
	assert_null(distenv_derived_find("NCCL_IB_GID_INDEX"));
	assert_null(distenv_derived_find("nnodes"));
	/* each name once */
	for (i = 0; i < distenv_derived_count; i++)
		for (k = i + 1; k < distenv_derived_count; k++)
			assert_string_not_equal(distenv_derived_vars[i].name,
						distenv_derived_vars[k].name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(readme_lists_the_table),
		cmocka_unit_test(table_lookups),
	};

	return cmocka_run_group_tests_name("derived", tests, NULL, NULL);
}
