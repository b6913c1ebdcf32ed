/* Unit tests: MASTER_ADDR and the interface that reaches it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_master.h"
#include "net_fixture.h"

/* Case C2: on the master itself its name resolves to 127.0.1.1 first. */
static void master_node_skips_debian_loopback(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	fx_cluster_node(&f, 1, "n1");
	fx_addr(&f, "127.0.1.1", "lo");
	fx_addr(&f, "10.77.0.1", "lo"); /* the kernel routes own addresses via lo */
	assert_int_equal(distenv_master_choose(&f.net, "n1", 1, 1, &c, &err), 0);
	assert_string_equal(c.addr, "10.77.0.1");
	assert_string_equal(c.ifname, "eth0");
	assert_string_equal(c.ifname_reason,
			    "eth0 holds the master address 10.77.0.1 (this is the master node)");
	assert_string_equal(c.addr_reason,
			    "n1 resolves to 10.77.0.1 on this node (loopback 127.0.1.1 skipped)");
}

/* Case C1: a worker with a dead-end eth1 listed before eth0. */
static void worker_uses_subnet_interface(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	fx_cluster_node(&f, 2, "n1");
	fx_addr(&f, "10.77.0.1", "eth0");
	assert_int_equal(distenv_master_choose(&f.net, "n2", 1, 0, &c, &err), 0);
	assert_string_equal(c.addr, "10.77.0.1");
	assert_string_equal(c.ifname, "eth0");
	assert_string_equal(c.ifname_reason,
			    "the subnet of eth0 holds the master address 10.77.0.1");
}

static void worker_falls_back_to_route(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	fx_cluster_node(&f, 2, "master.example");
	fx_addr(&f, "10.200.3.4", "eth0"); /* routed, not on a local subnet */
	assert_int_equal(distenv_master_choose(&f.net, "n2", 1, 0, &c, &err), 0);
	assert_string_equal(c.ifname, "eth0");
	assert_string_equal(c.ifname_reason,
			    "the kernel routes the master address 10.200.3.4 through eth0");
}

static void loopback_only_is_an_error(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	fx_cluster_node(&f, 1, "n1");
	fx_addr(&f, "127.0.1.1", "lo");
	assert_int_equal(distenv_master_choose(&f.net, "n1", 1, 1, &c, &err), -1);
	assert_string_equal(err.where, "node n1: master host n1");
	assert_string_equal(err.what, "the name resolves only to the loopback "
				      "address 127.0.1.1, which other nodes cannot reach");
	assert_non_null(strstr(err.fix, "/etc/hosts"));
	assert_non_null(strstr(err.fix, "MASTER_ADDR"));
}

static void single_node_accepts_loopback(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	fx_cluster_node(&f, 1, "n1");
	fx_addr(&f, "127.0.1.1", "lo");
	assert_int_equal(distenv_master_choose(&f.net, "n1", 0, 1, &c, &err), 0);
	assert_string_equal(c.addr, "127.0.1.1");
	assert_string_equal(c.ifname, "lo");
}

static void ipv6_master(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.net.resolved_host = "gpu-001";
	fx_iface(&f, "lo", "::1", 128, 1);
	fx_iface(&f, "ib0", "fd00:77::2", 64, 1);
	fx_iface(&f, "ib0", "fe80::2", 64, 1);
	fx_addr(&f, "fe80::1", "ib0"); /* link-local: needs a scope id */
	fx_addr(&f, "fd00:77::1", "ib0");
	assert_int_equal(distenv_master_choose(&f.net, "gpu-002", 1, 0, &c, &err), 0);
	assert_string_equal(c.addr, "fd00:77::1");
	assert_string_equal(c.ifname, "ib0");
}

static void resolver_failure(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	fx_cluster_node(&f, 2, "nosuchhost");
	f.net.resolve_error = "Name or service not known";
	assert_int_equal(distenv_master_choose(&f.net, "n2", 1, 0, &c, &err), -1);
	assert_string_equal(err.where, "node n2: master host nosuchhost");
	assert_string_equal(err.what, "cannot resolve the name: Name or service not known");
}

static void no_interface_reaches(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	fx_cluster_node(&f, 2, "far");
	fx_addr(&f, "192.0.2.10", ""); /* no route */
	assert_int_equal(distenv_master_choose(&f.net, "n2", 1, 0, &c, &err), -1);
	assert_string_equal(err.what, "no interface of this node reaches 192.0.2.10 "
				      "(interfaces: lo, eth1, eth0)");
}

static void no_address_at_all(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	fx_cluster_node(&f, 2, "n1");
	assert_int_equal(distenv_master_choose(&f.net, "n2", 1, 0, &c, &err), -1);
	assert_string_equal(err.what, "the name resolves to no address");
}

static void down_interface_is_not_used(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	memset(&f, 0, sizeof(f));
	f.net.resolved_host = "n1";
	fx_iface(&f, "lo", "127.0.0.1", 8, 1);
	fx_iface(&f, "eth0", "10.77.0.2", 24, 0); /* down */
	fx_iface(&f, "eth2", "10.78.0.2", 16, 1);
	fx_addr(&f, "10.77.0.1", "eth2");
	assert_int_equal(distenv_master_choose(&f.net, "n2", 1, 0, &c, &err), 0);
	assert_string_equal(c.ifname, "eth2");
}

/* Which interfaces reach the master: the chosen one, and those whose
 * subnet holds any address the master's name resolved to; never an
 * address that is loopback, whatever the interface is called. */
static void interfaces_that_reach(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;
	char names[128];

	(void)state;
	fx_cluster_node(&f, 2, "n1");
	fx_iface(&f, "ib0", "10.88.0.2", 24, 1);
	fx_iface(&f, "eth7", "127.0.0.7", 8, 1);
	fx_iface(&f, "eth8", "10.77.0.8", 24, 0); /* down */
	fx_addr(&f, "10.77.0.1", "eth0");
	fx_addr(&f, "10.88.0.1", "ib0"); /* the master's name on both */
	assert_int_equal(distenv_master_choose(&f.net, "n2", 1, 0, &c, &err), 0);
	assert_true(distenv_master_reaches(&f.net, &c, "eth0"));
	assert_true(distenv_master_reaches(&f.net, &c, "ib0"));
	assert_false(distenv_master_reaches(&f.net, &c, "eth1"));
	assert_false(distenv_master_reaches(&f.net, &c, "lo"));
	assert_false(distenv_master_reaches(&f.net, &c, "eth7"));
	assert_false(distenv_master_reaches(&f.net, &c, "eth8"));
	assert_false(distenv_master_reaches(&f.net, &c, "ens5"));
	assert_string_equal(distenv_master_reaching(&f.net, &c, NULL, names,
						    sizeof(names)),
			    "eth0, ib0");
	assert_string_equal(distenv_master_reaching(&f.net, &c, "ib0", names,
						    sizeof(names)),
			    "eth0");

	/* Routed, not on a local subnet: the route's interface. */
	fx_cluster_node(&f, 2, "master.example");
	fx_addr(&f, "10.200.3.4", "eth0");
	assert_int_equal(distenv_master_choose(&f.net, "n2", 1, 0, &c, &err), 0);
	assert_true(distenv_master_reaches(&f.net, &c, "eth0"));
	assert_false(distenv_master_reaches(&f.net, &c, "eth1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(master_node_skips_debian_loopback),
		cmocka_unit_test(worker_uses_subnet_interface),
		cmocka_unit_test(worker_falls_back_to_route),
		cmocka_unit_test(loopback_only_is_an_error),
		cmocka_unit_test(single_node_accepts_loopback),
		cmocka_unit_test(ipv6_master),
		cmocka_unit_test(resolver_failure),
		cmocka_unit_test(no_interface_reaches),
		cmocka_unit_test(no_address_at_all),
		cmocka_unit_test(down_interface_is_not_used),
		cmocka_unit_test(interfaces_that_reach),
	};

	return cmocka_run_group_tests_name("master", tests, NULL, NULL);
}
