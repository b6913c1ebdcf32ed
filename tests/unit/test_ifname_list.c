/* Unit tests: every interface an NCCL list selects, not only the first,
 * must be usable across nodes (NVIDIA/nccl issue 1515: the later ones
 * had IPv6 link-local addresses only); a warning by default, an error
 * under --distenv-check=strict, nothing under off. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_derive.h"
#include "derive_world.h"
#include "net_fixture.h"

/* Node n2 (index 1) of a 2-node step of the namespace cluster, torchrun
 * mode, check level check, the task's environment holding kv (NULL:
 * nothing); eth2 holds an IPv6 link-local address only, ib0 a second
 * network's, eth3 is down, dummy0 holds a loopback address, all listed
 * after eth0. */
static struct world *world_new(int check, const char *kv)
{
	static struct world w;

	memset(&w, 0, sizeof(w));
	distenv_site_defaults(&w.site);
	w.req.mode = DISTENV_MODE_TORCHRUN;
	w.req.check = check;
	w.env[0] = kv;
	fx_worker_step(&w.step, 77, 3, "n2", "n1", w.env);
	fx_cluster_node(&w.fx, 2, "n1");
	fx_iface(&w.fx, "eth2", "fe80::2", 64, 1);
	fx_iface(&w.fx, "ib0", "192.168.5.2", 24, 1);
	fx_iface(&w.fx, "eth3", "10.5.0.2", 24, 0);
	fx_iface(&w.fx, "dummy0", "127.0.0.5", 8, 1);
	fx_addr(&w.fx, "10.77.0.1", "eth0");
	return &w;
}

static int derive(struct world *w)
{
	return distenv_derive(&w->site, &w->req, &w->step, &w->fx.net, &w->vars,
			      &w->err);
}

#define LINK_LOCAL_WHAT                                                      \
	"you exported NCCL_SOCKET_IFNAME==eth0,eth2, which also selects "    \
	"eth2, and NCCL takes eth2's address fe80::2, which is IPv6 "        \
	"link-local (it needs the link's scope and crosses no router): "     \
	"NCCL's socket transport uses every interface the list selects, "    \
	"not only the first, and other nodes cannot connect to that one"
#define LINK_LOCAL_FIX                                                   \
	"export NCCL_SOCKET_IFNAME==eth0 (the interfaces of the list that " \
	"other nodes can reach), or unset it and let distenv derive it"

/* The default: a warning naming the interface, the value kept. */
static void later_link_local_warns(void **state)
{
	struct world *w = world_new(DISTENV_CHECK_WARN,
				    "NCCL_SOCKET_IFNAME==eth0,eth2");

	(void)state;
	assert_int_equal(derive(w), 0);
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_SOCKET_IFNAME"),
			    "=eth0,eth2");
	assert_int_equal(w->vars.n_warnings, 1);
	assert_string_equal(w->vars.warnings[0].where,
			    "node n2: NCCL_SOCKET_IFNAME (exported)");
	assert_string_equal(w->vars.warnings[0].what, LINK_LOCAL_WHAT);
	assert_string_equal(w->vars.warnings[0].fix, LINK_LOCAL_FIX);
	distenv_vars_free(&w->vars);
}

/* strict fails the step with the same finding; off says nothing. */
static void later_link_local_modes(void **state)
{
	struct world *w = world_new(DISTENV_CHECK_STRICT,
				    "NCCL_SOCKET_IFNAME==eth0,eth2");

	(void)state;
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where,
			    "node n2: NCCL_SOCKET_IFNAME (exported)");
	assert_string_equal(w->err.what, LINK_LOCAL_WHAT);
	assert_string_equal(w->err.fix, LINK_LOCAL_FIX);
	w = world_new(DISTENV_CHECK_OFF, "NCCL_SOCKET_IFNAME==eth0,eth2");
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.n_warnings, 0);
	distenv_vars_free(&w->vars);
}

/* A second network that joins the nodes is what such lists are for:
 * ib0 need not reach the master's subnet. */
static void later_usable_passes(void **state)
{
	struct world *w = world_new(DISTENV_CHECK_STRICT,
				    "NCCL_SOCKET_IFNAME==eth0,ib0");

	(void)state;
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.n_warnings, 0);
	distenv_vars_free(&w->vars);
}

/* A loopback address (told by the address, not the name: lo itself is
 * listed first, where the bootstrap's check names it) and a down
 * interface, each named with its reason; the fix keeps the usable ones
 * of the list, in getifaddrs order. */
static void later_loopback_and_down(void **state)
{
	struct world *w = world_new(DISTENV_CHECK_STRICT,
				    "NCCL_SOCKET_IFNAME==eth0,ib0,dummy0");

	(void)state;
	assert_int_equal(derive(w), -1);
	assert_non_null(strstr(w->err.what,
			       "which also selects dummy0, and NCCL takes "
			       "dummy0's address 127.0.0.5, which is "
			       "loopback"));
	assert_non_null(strstr(w->err.fix,
			       "export NCCL_SOCKET_IFNAME==eth0,ib0 (the"));
	w = world_new(DISTENV_CHECK_STRICT, "NCCL_SOCKET_IFNAME=^lo,eth1");
	assert_int_equal(derive(w), -1);
	assert_non_null(strstr(w->err.what, "which also selects eth2, and "));
	w = world_new(DISTENV_CHECK_STRICT,
		      "NCCL_SOCKET_IFNAME==eth0,eth3,ib0");
	assert_int_equal(derive(w), -1);
	assert_non_null(strstr(w->err.what, "which also selects eth3, and eth3 "
					    "is down:"));
	assert_non_null(strstr(w->err.fix, "==eth0,ib0 (the"));
}

/* --distenv-ifname is held to the same rule. */
static void option_list(void **state)
{
	struct world *w = world_new(DISTENV_CHECK_WARN, NULL);

	(void)state;
	strcpy(w->req.ifname, "=eth0,eth2");
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.n_warnings, 1);
	assert_string_equal(w->vars.warnings[0].where,
			    "node n2: --distenv-ifname");
	assert_non_null(strstr(w->vars.warnings[0].what,
			       "you gave --distenv-ifname==eth0,eth2, which "
			       "also selects eth2"));
	assert_string_equal(w->vars.warnings[0].fix,
			    "give --distenv-ifname==eth0 (the interfaces of the "
			    "list that other nodes can reach), or leave it out "
			    "and let distenv derive it");
	distenv_vars_free(&w->vars);
}

/* One node: nothing crosses nodes, nothing is checked. */
static void single_node_unchecked(void **state)
{
	struct world *w = world_new(DISTENV_CHECK_STRICT,
				    "NCCL_SOCKET_IFNAME==eth0,eth2");

	(void)state;
	w->step.nnodes = 1;
	w->step.node_id = 0;
	w->step.ntasks = 1;
	w->step.procid = 0;
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.n_warnings, 0);
	distenv_vars_free(&w->vars);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(later_link_local_warns),
		cmocka_unit_test(later_link_local_modes),
		cmocka_unit_test(later_usable_passes),
		cmocka_unit_test(later_loopback_and_down),
		cmocka_unit_test(option_list),
		cmocka_unit_test(single_node_unchecked),
	};

	return cmocka_run_group_tests_name("ifname_list", tests, NULL, NULL);
}
