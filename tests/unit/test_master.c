/* Unit tests: MASTER_ADDR and the interface that reaches it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_ifuse.h"
#include "distenv_master.h"
#include "net_fixture.h"

/* On the master itself its name resolves to 127.0.1.1 first. */
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

/* A worker with a dead-end eth1 listed before eth0. */
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

/* The choice on node for f: ifname, and a warning holding phrase. */
static void expect_shared(const struct net_fixture *f, const char *node,
			  int on_master, const char *ifname, const char *phrase)
{
	struct distenv_master_choice c;
	struct distenv_error err;

	assert_int_equal(distenv_master_choose(&f->net, node, 1, on_master, &c,
					       &err), 0);
	assert_string_equal(c.ifname, ifname);
	assert_non_null(strstr(c.shared_subnet.what, phrase));
}

/* eno1 and enp37s0f0 both in 192.168.0.0/20: the interface the kernel
 * routes the master through is chosen, whatever the getifaddrs order,
 * and the choice carries a warning naming both. */
static void shared_subnet_follows_the_route(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	fx_two_nics(&f, "eno1", "enp37s0f0", "eno1");
	assert_int_equal(distenv_master_choose(&f.net, "gpu02", 1, 0, &c, &err), 0);
	assert_string_equal(c.addr, "192.168.0.10");
	assert_string_equal(c.ifname, "eno1");
	assert_int_equal(c.n_peers, 2);
	assert_string_equal(c.peers[0], "eno1");
	assert_string_equal(c.peers[1], "enp37s0f0");
	assert_string_equal(c.ifname_reason,
			    "eno1, of the 2 interfaces in the subnet of the master "
			    "address 192.168.0.10: the kernel routes it through "
			    "this one");
	assert_string_equal(c.shared_subnet.where,
			    "node gpu02: NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME");
	assert_string_equal(c.shared_subnet.what,
			    "eno1 (192.168.0.21/20) and enp37s0f0 "
			    "(192.168.1.21/20) are both in the subnet of the "
			    "master address 192.168.0.10: the kernel routes it "
			    "through eno1, so distenv exports eno1; Linux sends "
			    "all traffic for that subnet by one of their routes, "
			    "whichever address a socket is bound to, and which "
			    "route comes first can differ from node to node");
	assert_string_equal(c.shared_subnet.fix,
			    "put the interfaces on distinct subnets, give the one "
			    "that should carry the traffic the lower route metric "
			    "(ip route ... metric N), or name it with "
			    "--distenv-ifname=NAME");

	/* The other order: still the kernel's eno1, not the first one. */
	fx_two_nics(&f, "enp37s0f0", "eno1", "eno1");
	expect_shared(&f, "gpu03", 0, "eno1",
		      "enp37s0f0 (192.168.1.21/20) and eno1 (192.168.0.21/20) "
		      "are both");

	/* A node whose route takes the 10 GbE link. */
	fx_two_nics(&f, "eno1", "enp37s0f0", "enp37s0f0");
	expect_shared(&f, "gpu04", 0, "enp37s0f0",
		      "the kernel routes it through enp37s0f0, so distenv "
		      "exports enp37s0f0");

	/* The route unknown: the first, and the warning says why. */
	fx_two_nics(&f, "enp37s0f0", "eno1", "eno1");
	f.addrs[0].route_ifname[0] = '\0';
	memset(&f.addrs[0].route_src, 0, sizeof(f.addrs[0].route_src));
	expect_shared(&f, "gpu05", 0, "enp37s0f0",
		      "the kernel's route to it names none of them, and "
		      "enp37s0f0 comes first");

	/* The master itself holds the address on one of them. */
	fx_two_nics(&f, "eno1", "enp37s0f0", "eno1");
	fx_iface(&f, "enp37s0f0", "192.168.0.10", 20, 1);
	expect_shared(&f, "gpu01", 1, "enp37s0f0",
		      "this node holds it on enp37s0f0");

	/* One interface in the subnet: no warning. */
	fx_cluster_node(&f, 2, "n1");
	fx_addr_src(&f, "10.77.0.1", "eth0", "10.77.0.2");
	assert_int_equal(distenv_master_choose(&f.net, "n2", 1, 0, &c, &err), 0);
	assert_int_equal(c.n_peers, 0);
	assert_false(distenv_error_is_set(&c.shared_subnet));
}

/* BGP-unnumbered worker: the only routable IPv4 address is lo's /32,
 * the links are IPv6 link-local only; NCCL and Gloo would take lo's
 * 127.0.0.1. No interface is exported: the error names the node, the
 * address, lo and the fix. */
static void routable_address_only_on_lo(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;

	(void)state;
	fx_bgp_node(&f, "10.9.0.11", 0);
	assert_int_equal(distenv_master_choose(&f.net, "rack1-11", 1, 0, &c, &err), -1);
	assert_string_equal(err.where, "node rack1-11: master host rack1-10");
	assert_string_equal(err.what,
			    "the only address of this node that reaches the master "
			    "10.9.0.10 is 10.9.0.11 (the kernel's source address "
			    "for it), and lo holds it: NCCL and Gloo take lo's "
			    "first address, 127.0.0.1, which other nodes cannot "
			    "reach, and eth0, eth1 hold no usable IPv4 address");
	assert_string_equal(err.fix,
			    "NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME cannot work "
			    "on this node as it is: give the interface the route to "
			    "10.9.0.10 leaves through (ip route get 10.9.0.10 names "
			    "it) the address 10.9.0.11 as well (ip addr add "
			    "10.9.0.11/32 dev IFACE); distenv then exports that "
			    "interface");

	/* The master node of the same fabric: its own address is on lo. */
	fx_bgp_node(&f, "10.9.0.10", 0);
	assert_int_equal(distenv_master_choose(&f.net, "rack1-10", 1, 1, &c, &err), -1);
	assert_string_equal(err.what,
			    "the only address of this node that reaches the master "
			    "10.9.0.10 is 10.9.0.10 itself (this node is the "
			    "master), and lo holds it: NCCL and Gloo take lo's "
			    "first address, 127.0.0.1, which other nodes cannot "
			    "reach, and eth0, eth1 hold no usable IPv4 address");

	/* The fix applied: the /32 on eth0 as well, eth0 is exported. */
	fx_bgp_node(&f, "10.9.0.11", 1);
	assert_int_equal(distenv_master_choose(&f.net, "rack1-11", 1, 0, &c, &err), 0);
	assert_string_equal(c.ifname, "eth0");
	assert_string_equal(c.ifname_reason,
			    "the kernel routes the master address 10.9.0.10 "
			    "through eth0");

	/* One node: nothing leaves it, lo is fine. */
	fx_bgp_node(&f, "10.9.0.10", 0);
	assert_int_equal(distenv_master_choose(&f.net, "rack1-10", 0, 1, &c, &err), 0);
	assert_string_equal(c.ifname, "lo");
}

/* A site list that leaves out the one reaching interface gets the
 * list's own error, not the loopback one: the interface itself could
 * carry the traffic. */
static void site_list_excluding_the_route_is_its_own_error(void **state)
{
	struct net_fixture f;
	struct distenv_master_choice c;
	struct distenv_error err;
	struct distenv_ifspec only_eth1;
	struct distenv_master_prefs prefs = {.ifaces = &only_eth1,
					     .ifaces_text = "=eth1"};

	(void)state;
	assert_int_equal(distenv_ifspec_parse("=eth1", "site policy interfaces",
					      &only_eth1, &err), 0);
	fx_cluster_node(&f, 2, "n1");
	fx_addr_src(&f, "10.77.0.1", "eth0", "10.77.0.2");
	assert_int_equal(distenv_master_choose_prefs(&f.net, &prefs, "n2", 1, 0,
						     &c, &err), -1);
	assert_non_null(strstr(err.what, "is left out by the site policy (interfaces: =eth1"));
	assert_null(strstr(err.what, "holds no usable IPv4 address"));
}

/* What NCCL and Gloo can use across nodes, told by the addresses. */
static void usable_interfaces(void **state)
{
	struct net_fixture f;

	(void)state;
	fx_bgp_node(&f, "10.9.0.11", 0);
	fx_iface(&f, "eth9", "127.0.0.9", 8, 1);   /* loopback by address */
	fx_iface(&f, "eth9", "10.9.9.9", 24, 1);
	fx_iface(&f, "ib0", "10.8.0.11", 24, 0);   /* down */
	fx_iface(&f, "ib1", "fd00:8::11", 64, 1);
	assert_false(distenv_iface_usable(f.ifaces, f.net.n_ifaces, "lo", AF_INET));
	assert_false(distenv_iface_usable(f.ifaces, f.net.n_ifaces, "eth0", AF_INET));
	assert_false(distenv_iface_usable(f.ifaces, f.net.n_ifaces, "eth0", AF_INET6));
	assert_false(distenv_iface_usable(f.ifaces, f.net.n_ifaces, "eth9", AF_INET));
	assert_false(distenv_iface_usable(f.ifaces, f.net.n_ifaces, "ib0", AF_INET));
	assert_false(distenv_iface_usable(f.ifaces, f.net.n_ifaces, "ib1", AF_INET));
	assert_true(distenv_iface_usable(f.ifaces, f.net.n_ifaces, "ib1", AF_INET6));
	assert_false(distenv_iface_usable(f.ifaces, f.net.n_ifaces, "ens5", AF_INET));
	assert_string_equal(distenv_ip_format(&distenv_iface_first_addr(
				    f.ifaces, f.net.n_ifaces, "lo")->ip,
				    (char[DISTENV_IP_TEXT_MAX]){0},
				    DISTENV_IP_TEXT_MAX),
			    "127.0.0.1");
	fx_two_nics(&f, "eno1", "enp37s0f0", "eno1");
	assert_true(distenv_iface_usable(f.ifaces, f.net.n_ifaces, "eno1", AF_INET));
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
		cmocka_unit_test(shared_subnet_follows_the_route),
		cmocka_unit_test(routable_address_only_on_lo),
		cmocka_unit_test(site_list_excluding_the_route_is_its_own_error),
		cmocka_unit_test(usable_interfaces),
	};

	return cmocka_run_group_tests_name("master", tests, NULL, NULL);
}
