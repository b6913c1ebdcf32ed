/*
 * derive_world.h: what one distenv_derive() call of a unit test needs and
 * gives: the site, the request, the step, the node's network
 * (net_fixture.h), the variables, the error, and the task's environment
 * (at most 7 entries and the NULL that ends them).
 */
#ifndef DISTENV_DERIVE_WORLD_H
#define DISTENV_DERIVE_WORLD_H

#include "distenv_derive.h"
#include "net_fixture.h"

struct world {
	struct distenv_site site;
	struct distenv_request req;
	struct distenv_step step;
	struct net_fixture fx;
	struct distenv_vars vars;
	struct distenv_error err;
	const char *env[8];
};

#endif
