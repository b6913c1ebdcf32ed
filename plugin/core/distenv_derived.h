/*
 * distenv_derived.h: the one table of the variables the derivation sets
 * (distenv_derive.h), besides the site policy's env: extras. Three things
 * read it, so that they cannot drift apart:
 * - the derivation, which refuses to set a name the table lacks;
 * - the site policy parser (plugin/site), which refuses these names in
 *   env:, with the table's word on how a site steers the value instead;
 * - tests/unit/test_derived.c, which checks that docs/variables.md's tables of
 *   variables ("Where each value comes from", "Elastic mode") list
 *   exactly these names.
 */
#ifndef DISTENV_DERIVED_H
#define DISTENV_DERIVED_H

#include <stddef.h>

struct distenv_derived_var {
	const char *name;
	/* Why a site may not set it, and what it may set instead. */
	const char *site_fix;
};

extern const struct distenv_derived_var distenv_derived_vars[];
extern const size_t distenv_derived_count;

/* The entry of name, or NULL when the derivation never sets it. */
const struct distenv_derived_var *distenv_derived_find(const char *name);

#endif
