/*
 * Unit tests: the site policy in the derivation (struct distenv_site as
 * plugin/site/ fills it): default mode and port range, the interfaces:
 * filter on the master choice, the address family order, the
 * master_name: rule, and the extra variables per partition.
 *
 * The node (net_fixture.h, node 2 of the namespace cluster) has lo, the
 * dead-end eth1 (10.99.2.1/24), eth0 (10.77.0.2/24) and here also ib0
 * (10.88.0.2/24), a second network that reaches the master.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_derive.h"
#include "distenv_env.h"
#include "distenv_master.h"
/* the environment of a task of the site file's cases */
#define DERIVE_WORLD_ENV 16
#include "derive_world.h"
#include "net_fixture.h"


static struct world w;

/* Node 2 (index 1) of a 2-node step 91.0; the master's name resolves to
 * its ib0 address first, then its eth0 address. */
static struct world *world_new(enum distenv_mode mode)
{
	memset(&w, 0, sizeof(w));
	distenv_site_defaults(&w.site);
	w.req.mode = mode;
	fx_worker_step(&w.step, 91, 0, "n2", "n1", w.env);
	w.step.resv_ports = "21001-21002";
	fx_cluster_node(&w.fx, 2, "n1");
	fx_iface(&w.fx, "ib0", "10.88.0.2", 24, 1);
	fx_addr(&w.fx, "10.88.0.1", "ib0");
	fx_addr(&w.fx, "10.77.0.1", "eth0");
	return &w;
}

static int derive(void)
{
	distenv_error_clear(&w.err);
	return distenv_derive(&w.site, &w.req, &w.step, &w.fx.net, &w.vars,
			      &w.err);
}

static const char *val(const char *name)
{
	return distenv_vars_value(&w.vars, name);
}

static const char *why(const char *name)
{
	const struct distenv_var *v = distenv_vars_find(&w.vars, name);

	return v ? v->reason : "";
}

static void no_policy_takes_first_address(void **state)
{
	(void)state;
	world_new(DISTENV_MODE_TORCHRUN);
	assert_int_equal(derive(), 0);
	assert_string_equal(val("MASTER_ADDR"), "10.88.0.1");
	assert_string_equal(val("NCCL_SOCKET_IFNAME"), "=ib0");
	distenv_vars_free(&w.vars);
}

/* The site leaves ib out: the master's ib0 address is skipped, its eth0
 * address is reached through eth0. */
static void interfaces_exclude(void **state)
{
	(void)state;
	world_new(DISTENV_MODE_TORCHRUN);
	strcpy(w.site.ifaces, "^ib");
	assert_int_equal(derive(), 0);
	assert_string_equal(val("MASTER_ADDR"), "10.77.0.1");
	assert_string_equal(val("NCCL_SOCKET_IFNAME"), "=eth0");
	assert_string_equal(val("GLOO_SOCKET_IFNAME"), "eth0");
	assert_string_equal(why("NCCL_SOCKET_IFNAME"),
			    "the subnet of eth0 holds the master address 10.77.0.1");
	distenv_vars_free(&w.vars);

	/* An include list does the same. */
	world_new(DISTENV_MODE_TASKS);
	strcpy(w.site.ifaces, "=eth0,eth1");
	assert_int_equal(derive(), 0);
	assert_string_equal(val("MASTER_ADDR"), "10.77.0.1");
	assert_string_equal(val("GLOO_SOCKET_IFNAME"), "eth0");
	distenv_vars_free(&w.vars);
}

/* The kernel route is filtered too: no subnet holds the address. */
static void interfaces_filter_routes(void **state)
{
	(void)state;
	world_new(DISTENV_MODE_TORCHRUN);
	w.fx.net.n_addrs = 0;
	fx_addr(&w.fx, "10.200.0.1", "ib0");
	fx_addr(&w.fx, "10.201.0.1", "eth0");
	strcpy(w.site.ifaces, "^=ib0");
	assert_int_equal(derive(), 0);
	assert_string_equal(val("MASTER_ADDR"), "10.201.0.1");
	assert_string_equal(val("NCCL_SOCKET_IFNAME"), "=eth0");
	distenv_vars_free(&w.vars);
}

static void interfaces_leave_nothing(void **state)
{
	(void)state;
	world_new(DISTENV_MODE_TORCHRUN);
	strcpy(w.site.ifaces, "=eth1");
	assert_int_equal(derive(), -1);
	assert_string_equal(w.err.where, "node n2: master host n1");
	assert_string_equal(w.err.what,
			    "every interface of this node that reaches 10.77.0.1 "
			    "is left out by the site policy (interfaces: =eth1; "
			    "this node has: lo, eth1, eth0, ib0)");
	assert_non_null(strstr(w.err.fix, "interfaces: in the site policy"));
	assert_int_equal(w.vars.count, 0);
}

/* The user's own choice is not filtered: an exported interface list
 * is kept, and --distenv-ifname is taken as given. */
static void interfaces_leave_the_user_alone(void **state)
{
	(void)state;
	world_new(DISTENV_MODE_TORCHRUN);
	strcpy(w.site.ifaces, "^ib");
	strcpy(w.req.ifname, "ib0");
	assert_int_equal(derive(), 0);
	assert_string_equal(val("NCCL_SOCKET_IFNAME"), "ib0");
	assert_string_equal(val("MASTER_ADDR"), "10.77.0.1");
	distenv_vars_free(&w.vars);
}

/* Loopback is exempt: a single-node step on a Debian host (name ->
 * 127.0.1.1) still works under "^lo". */
static void loopback_exempt_single_node(void **state)
{
	(void)state;
	world_new(DISTENV_MODE_TORCHRUN);
	w.step.nnodes = 1;
	w.step.node_id = 0;
	w.step.ntasks = 1;
	w.step.procid = 0;
	w.fx.net.n_addrs = 0;
	fx_addr(&w.fx, "127.0.1.1", "lo");
	strcpy(w.site.ifaces, "^lo,docker");
	assert_int_equal(derive(), 0);
	assert_string_equal(val("MASTER_ADDR"), "127.0.1.1");
	assert_string_equal(val("NCCL_SOCKET_IFNAME"), "=lo");
	distenv_vars_free(&w.vars);
}

static void address_family_order(void **state)
{
	(void)state;
	/* The resolver gives IPv6 first. */
	world_new(DISTENV_MODE_TORCHRUN);
	fx_iface(&w.fx, "eth0", "fd77::2", 64, 1);
	w.fx.net.n_addrs = 0;
	fx_addr(&w.fx, "fd77::1", "eth0");
	fx_addr(&w.fx, "10.77.0.1", "eth0");
	assert_int_equal(derive(), 0);
	assert_string_equal(val("MASTER_ADDR"), "fd77::1");
	distenv_vars_free(&w.vars);

	w.site.family = DISTENV_FAMILY_IPV4;
	assert_int_equal(derive(), 0);
	assert_string_equal(val("MASTER_ADDR"), "10.77.0.1");
	assert_non_null(strstr(why("MASTER_ADDR"), "(site policy: IPv4 first)"));
	distenv_vars_free(&w.vars);

	/* IPv6 first, resolver order within the family. */
	w.fx.net.n_addrs = 0;
	fx_addr(&w.fx, "10.77.0.1", "eth0");
	fx_addr(&w.fx, "fd77::1", "eth0");
	fx_addr(&w.fx, "fd77::9", "eth0");
	w.site.family = DISTENV_FAMILY_IPV6;
	assert_int_equal(derive(), 0);
	assert_string_equal(val("MASTER_ADDR"), "fd77::1");
	distenv_vars_free(&w.vars);

	/* A preference, not a filter: only IPv4 known, IPv6 preferred. */
	w.fx.net.n_addrs = 0;
	fx_addr(&w.fx, "10.77.0.1", "eth0");
	assert_int_equal(derive(), 0);
	assert_string_equal(val("MASTER_ADDR"), "10.77.0.1");
	distenv_vars_free(&w.vars);
}

static void master_name_rule(void **state)
{
	char host[DISTENV_HOST_MAX];

	(void)state;
	world_new(DISTENV_MODE_TORCHRUN);
	assert_int_equal(distenv_master_lookup_name(&w.site, &w.step, host,
						    sizeof(host), &w.err),
			 0);
	assert_string_equal(host, "n1");
	strcpy(w.site.master_name, "{host}-ib");
	assert_int_equal(distenv_master_lookup_name(&w.site, &w.step, host,
						    sizeof(host), &w.err),
			 0);
	assert_string_equal(host, "n1-ib");
	strcpy(w.site.master_name, "{host}.ib.example.org");
	assert_int_equal(distenv_master_lookup_name(&w.site, &w.step, host,
						    sizeof(host), &w.err),
			 0);
	assert_string_equal(host, "n1.ib.example.org");
	assert_int_equal(distenv_master_lookup_name(&w.site, &w.step, host, 8,
						    &w.err),
			 -1);
	assert_string_equal(w.err.what,
			    "the name for n1 is longer than 7 bytes");

	/* The reason names the rule. */
	strcpy(w.site.master_name, "{host}-ib");
	w.fx.net.resolved_host = "n1-ib";
	assert_int_equal(derive(), 0);
	assert_string_equal(why("MASTER_ADDR"),
			    "node index 0 of the step is n1; n1-ib resolves to "
			    "10.88.0.1 on this node (site policy master_name: "
			    "{host}-ib)");
	distenv_vars_free(&w.vars);

	/* A MASTER_ADDR the user exported is resolved as it is. */
	w.env[0] = "MASTER_ADDR=10.77.0.1";
	assert_int_equal(distenv_master_lookup_name(&w.site, &w.step, host,
						    sizeof(host), &w.err),
			 0);
	assert_string_equal(host, "10.77.0.1");
}

static void master_name_check(void **state)
{
	struct distenv_error e;
	char big[300];

	(void)state;
	assert_int_equal(distenv_master_name_check("{host}-ib", "k", &e), 0);
	assert_int_equal(distenv_master_name_check("ib.{host}", "k", &e), 0);
	assert_int_equal(distenv_master_name_check("", "k", &e), -1);
	assert_string_equal(e.what, "no rule given");
	assert_int_equal(distenv_master_name_check("{HOST}-ib", "k", &e), -1);
	assert_string_equal(e.what, "'{HOST}-ib' does not hold {host}");
	assert_int_equal(distenv_master_name_check("{host}/ib", "k", &e), -1);
	memset(big, 'a', sizeof(big));
	memcpy(big, "{host}", 6);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(distenv_master_name_check(big, "k", &e), -1);
	assert_string_equal(e.what, "the rule is longer than 255 bytes");
}

static void add_site_vars(const char *partition)
{
	strcpy(w.site.partition, partition);
	strcpy(w.site.vars[0].name, "NCCL_IB_GID_INDEX");
	strcpy(w.site.vars[0].value, "3");
	strcpy(w.site.vars[1].name, "NCCL_IB_TC");
	strcpy(w.site.vars[1].value, "106");
	w.site.n_vars = 2;
}

static void extra_variables(void **state)
{
	const struct distenv_var *last;

	(void)state;
	world_new(DISTENV_MODE_TORCHRUN);
	add_site_vars("a100");
	w.env[0] = "NCCL_IB_TC=41"; /* the user's: kept */
	assert_int_equal(derive(), 0);
	assert_string_equal(val("NCCL_IB_GID_INDEX"), "3");
	assert_string_equal(why("NCCL_IB_GID_INDEX"), "site policy, partition a100");
	assert_int_equal(distenv_vars_find(&w.vars, "NCCL_IB_GID_INDEX")->action,
			 DISTENV_ACTION_SET);
	assert_string_equal(val("NCCL_IB_TC"), "41");
	assert_string_equal(why("NCCL_IB_TC"), "kept (set by user)");
	assert_int_equal(distenv_vars_find(&w.vars, "NCCL_IB_TC")->action,
			 DISTENV_ACTION_KEPT);
	/* Last before the marker, and in it (a later step re-derives it). */
	last = &w.vars.items[w.vars.count - 1];
	assert_string_equal(last->name, "DISTENV_SET");
	assert_string_equal(w.vars.items[w.vars.count - 3].name,
			    "NCCL_IB_GID_INDEX");
	assert_non_null(strstr(last->value, "NCCL_IB_GID_INDEX:"));
	assert_null(strstr(last->value, "NCCL_IB_TC:"));
	distenv_vars_free(&w.vars);

	/* No partition known: the reason says so. */
	world_new(DISTENV_MODE_TASKS);
	add_site_vars("");
	assert_int_equal(derive(), 0);
	assert_string_equal(why("NCCL_IB_TC"), "site policy");
	assert_string_equal(val("NCCL_IB_TC"), "106");
	distenv_vars_free(&w.vars);

	/* The batch script gets them too. */
	world_new(DISTENV_MODE_TORCHRUN);
	add_site_vars("a100");
	w.step.kind = DISTENV_STEP_BATCH;
	assert_int_equal(derive(), 0);
	assert_string_equal(val("NCCL_IB_GID_INDEX"), "3");
	distenv_vars_free(&w.vars);

	/* A job that did not ask for distenv gets nothing. */
	world_new(DISTENV_MODE_UNSET);
	add_site_vars("a100");
	assert_int_equal(derive(), 0);
	assert_int_equal(w.vars.count, 0);
}

/* default_mode and port_range from the file land in the same site fields
 * as the plugstack arguments (plugin/site/ decides which wins). */
static void default_mode_and_port_range(void **state)
{
	uint32_t port;

	(void)state;
	world_new(DISTENV_MODE_UNSET);
	w.site.default_mode = DISTENV_MODE_TASKS;
	w.site.port_lo = 29700;
	w.site.port_hi = 29709;
	w.step.resv_ports = NULL;
	assert_int_equal(derive(), 0);
	assert_string_equal(val("WORLD_SIZE"), "2"); /* tasks mode */
	assert_null(val("FORCE_TORCHRUN"));
	assert_int_equal(distenv_parse_u32(val("MASTER_PORT"), 65535, &port), 0);
	/* not assert_in_range: cmocka 2 deprecates it */
	assert_true(port >= 29700 && port <= 29709);
	assert_non_null(strstr(why("MASTER_PORT"), "in port_range 29700-29709"));
	distenv_vars_free(&w.vars);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_policy_takes_first_address),
		cmocka_unit_test(interfaces_exclude),
		cmocka_unit_test(interfaces_filter_routes),
		cmocka_unit_test(interfaces_leave_nothing),
		cmocka_unit_test(interfaces_leave_the_user_alone),
		cmocka_unit_test(loopback_exempt_single_node),
		cmocka_unit_test(address_family_order),
		cmocka_unit_test(master_name_rule),
		cmocka_unit_test(master_name_check),
		cmocka_unit_test(extra_variables),
		cmocka_unit_test(default_mode_and_port_range),
	};

	return cmocka_run_group_tests_name("site_derive", tests, NULL, NULL);
}
