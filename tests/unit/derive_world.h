/*
 * derive_world.h: what one distenv_derive() call of a unit test needs and
 * gives: the site, the request, the step, the node's network
 * (net_fixture.h), the variables, the error, and the task's environment:
 * DERIVE_WORLD_ENV slots (default 8: 7 entries and the NULL that ends
 * them); a test that sets more defines it before the include.
 */
#ifndef DISTENV_DERIVE_WORLD_H
#define DISTENV_DERIVE_WORLD_H

#include "distenv_derive.h"
#include "net_fixture.h"

#ifndef DERIVE_WORLD_ENV
#define DERIVE_WORLD_ENV 8
#endif

struct world {
	struct distenv_site site;
	struct distenv_request req;
	struct distenv_step step;
	struct net_fixture fx;
	struct distenv_vars vars;
	struct distenv_error err;
	const char *env[DERIVE_WORLD_ENV];
};

#endif
