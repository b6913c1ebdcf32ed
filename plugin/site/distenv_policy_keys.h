/*
 * distenv_policy_keys.h: the keys of one scope of the site policy file
 * (the top level or a partition; distenv_policy.h lists them), as a
 * table: each key's name, its DISTENV_POLICY_* bit and the handler that
 * reads its value. version: and partitions: are the file's own, read by
 * distenv_policy_parse.c.
 *
 * A handler is called with the key just read (y->ev is the key's event),
 * reads the key's value from y, checks it with the core's own parser for
 * that value where there is one (distenv_options.h, distenv_ifspec.h,
 * distenv_master.h, distenv_vars.h), so that the file accepts what the
 * plugstack line and the options accept, and fills its field of pol. It
 * returns 0, or -1 with y->err at the value ("FILE:LINE:COL", what
 * starting with the key, fix with the accepted values;
 * distenv_policy_yaml.h). It does not set pol->set: the caller does,
 * and refuses a key given twice before the handler runs. Pure.
 */
#ifndef DISTENV_POLICY_KEYS_H
#define DISTENV_POLICY_KEYS_H

#include "distenv_policy.h"
#include "distenv_policy_yaml.h"

struct distenv_policy_key {
	const char *name;
	unsigned bit; /* DISTENV_POLICY_* */
	int (*parse)(struct distenv_policy_yaml *y, struct distenv_policy *pol,
		     const char *key);
};

/* The key called name, or NULL when a scope has no such key. */
const struct distenv_policy_key *distenv_policy_key_find(const char *name);

#endif
