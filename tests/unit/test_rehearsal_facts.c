/* Unit tests: the facts of the rehearsal's check-in, the rules that
 * compare them (plugin/core/distenv_rehearsal_facts.h), and their reader
 * on a fake sysfs tree (plugin/sys/distenv_sys_facts.c). */
#define _XOPEN_SOURCE 700 /* nftw(3) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "distenv_rehearsal.h"
#include "distenv_rehearsal_facts.h"
#include "distenv_sys_rehearsal.h"

/* A healthy node: eth0 at 1500, two IB ports at 4096, the library
 * loads, Linux's default range. */
static void healthy(struct distenv_rehearsal_facts *f)
{
	distenv_rehearsal_facts_init(f);
	f->mtu = 1500;
	strcpy(f->ifname, "eth0");
	f->ib_mtu_lo = f->ib_mtu_hi = 4096;
	f->ib_ports = 2;
	f->verbs = 1;
	f->eph_lo = 32768;
	f->eph_hi = 60999;
}

static void line_round_trip(void **state)
{
	struct distenv_rehearsal_facts f, g;
	char buf[DISTENV_REHEARSAL_LINE_MAX];
	uint32_t node = 0;

	(void)state;
	healthy(&f);
	distenv_rehearsal_facts_line(buf, sizeof(buf), "checkin", 42, 3, 7, &f);
	assert_string_equal(buf, "distenv-checkin 42 3 7 f 1500 eth0 4096 "
				 "4096 2 1 32768 60999\n");
	assert_int_equal(distenv_rehearsal_facts_parse(buf, "checkin", 42, 3,
						       &node, &g),
			 0);
	assert_int_equal(node, 7);
	assert_memory_equal(&f, &g, sizeof(f));
	/* the longest line fits */
	f.mtu = f.ib_mtu_lo = f.ib_mtu_hi = f.ib_ports = UINT32_MAX;
	f.verbs = -1;
	f.eph_lo = f.eph_hi = 65535;
	strcpy(f.ifname, "abcdefghijklmno");
	distenv_rehearsal_facts_line(buf, sizeof(buf), "checkin", UINT32_MAX,
				     UINT32_MAX, UINT32_MAX, &f);
	assert_non_null(strchr(buf, '\n'));
	assert_int_equal(distenv_rehearsal_facts_parse(buf, "checkin",
						       UINT32_MAX, UINT32_MAX,
						       &node, &g),
			 0);
	assert_string_equal(g.ifname, "abcdefghijklmno");
	/* no interface: "-" */
	distenv_rehearsal_facts_init(&f);
	distenv_rehearsal_facts_line(buf, sizeof(buf), "ok", 1, 2, 0, &f);
	assert_non_null(strstr(buf, " f 0 - 0 0 0 -1 1 0\n"));
	assert_int_equal(distenv_rehearsal_facts_parse(buf, "ok", 1, 2, &node,
						       &g),
			 0);
	assert_string_equal(g.ifname, "");
	assert_int_equal(g.verbs, -1);
}

static void line_older_and_foreign(void **state)
{
	struct distenv_rehearsal_facts g;
	uint32_t node = 0;

	(void)state;
	/* an older distenv's line: facts unknown */
	assert_int_equal(distenv_rehearsal_facts_parse("distenv-ok 42 3 0\n",
						       "ok", 42, 3, &node, &g),
			 0);
	assert_int_equal(g.mtu, 0);
	assert_int_equal(g.verbs, -1);
	assert_true(g.eph_lo > g.eph_hi);
	assert_int_equal(distenv_rehearsal_facts_parse("distenv-ok 42 3 0",
						       "ok", 42, 3, &node, &g),
			 0);
	/* the ring line without facts still reads as before */
	assert_int_equal(distenv_rehearsal_line_parse("distenv-ring 42 3 1",
						      "ring", 42, 3, &node),
			 0);
	/* malformed facts, another step, another kind */
	assert_int_equal(distenv_rehearsal_facts_parse(
				 "distenv-ok 42 3 0 f 1500 eth0", "ok", 42, 3,
				 &node, &g),
			 -1);
	assert_int_equal(distenv_rehearsal_facts_parse(
				 "distenv-ok 42 3 0 f 1500 eth0 0 0 0 2 1 0",
				 "ok", 42, 3, &node, &g),
			 -1);
	assert_int_equal(distenv_rehearsal_facts_parse(
				 "distenv-ok 42 3 0 f 1500 eth0 0 0 0 1 1 0 x",
				 "ok", 42, 3, &node, &g),
			 -1);
	assert_int_equal(distenv_rehearsal_facts_parse(
				 "distenv-ok 42 3 0 x 1500 eth0 0 0 0 1 1 0",
				 "ok", 42, 3, &node, &g),
			 -1);
	assert_int_equal(distenv_rehearsal_facts_parse("distenv-ok 42 4 0",
						       "ok", 42, 3, &node, &g),
			 -1);
	assert_int_equal(distenv_rehearsal_facts_parse("distenv-ok 42 3 0",
						       "checkin", 42, 3, &node,
						       &g),
			 -1);
	assert_int_equal(distenv_rehearsal_facts_parse(NULL, "ok", 42, 3,
						       &node, &g),
			 -1);
}

static void differ(void **state)
{
	struct distenv_rehearsal_facts a, b;
	int r;

	(void)state;
	healthy(&a);
	healthy(&b);
	for (r = 0; r < DISTENV_RULES_N; r++)
		assert_false(distenv_rehearsal_facts_differ(r, &a, &b));
	b.mtu = 1400;
	assert_true(distenv_rehearsal_facts_differ(DISTENV_RULE_SOCKET_MTU,
						   &a, &b));
	b.mtu = 0; /* unknown: compared with nothing */
	assert_false(distenv_rehearsal_facts_differ(DISTENV_RULE_SOCKET_MTU,
						    &a, &b));
	b.ib_mtu_lo = 2048;
	assert_true(distenv_rehearsal_facts_differ(DISTENV_RULE_IB_MTU, &a,
						   &b));
	b.ib_mtu_lo = 4096;
	b.ib_mtu_hi = 8192;
	assert_true(distenv_rehearsal_facts_differ(DISTENV_RULE_IB_MTU, &a,
						   &b));
	b.ib_ports = 0; /* no port selected: no IB to compare */
	assert_false(distenv_rehearsal_facts_differ(DISTENV_RULE_IB_MTU, &a,
						    &b));
	b.verbs = 0;
	assert_true(distenv_rehearsal_facts_differ(DISTENV_RULE_VERBS, &a,
						   &b));
	b.verbs = -1;
	assert_false(distenv_rehearsal_facts_differ(DISTENV_RULE_VERBS, &a,
						    &b));
	a.verbs = 0;
	b.verbs = 0; /* neither loads it: both on sockets, alike */
	assert_false(distenv_rehearsal_facts_differ(DISTENV_RULE_VERBS, &a,
						    &b));
	b.eph_lo = 40000;
	assert_true(distenv_rehearsal_facts_differ(DISTENV_RULE_PORT_RANGE, &a,
						   &b));
	b.eph_lo = 1;
	b.eph_hi = 0; /* unknown */
	assert_false(distenv_rehearsal_facts_differ(DISTENV_RULE_PORT_RANGE,
						    &a, &b));
}

static void messages(void **state)
{
	struct distenv_rehearsal_facts n, m;
	struct distenv_error err;

	(void)state;
	healthy(&n);
	healthy(&m);
	n.mtu = 1400;
	assert_int_equal(distenv_rehearsal_facts_error(DISTENV_RULE_SOCKET_MTU,
						       "n1", "n2", &n, "n1",
						       &m, 0, &err),
			 -1);
	assert_string_equal(err.where, "n1");
	assert_non_null(strstr(err.what, "n2's socket interface eth0 has MTU "
					 "1400, the master n1's eth0 has MTU "
					 "1500"));
	assert_null(strstr(err.what, "more node"));
	assert_non_null(strstr(err.fix, "ip link set dev IF mtu"));
	assert_int_equal(distenv_rehearsal_facts_error(DISTENV_RULE_SOCKET_MTU,
						       "n1", "n2", &n, "n1",
						       &m, 3, &err),
			 -1);
	assert_non_null(strstr(err.what, "(and 3 more nodes)"));
	n.ib_mtu_lo = 2048;
	assert_int_equal(distenv_rehearsal_facts_error(DISTENV_RULE_IB_MTU,
						       "n2", "n2", &n, "n1",
						       &m, 0, &err),
			 -1);
	assert_non_null(strstr(err.what, "n2's InfiniBand ports (NCCL_IB_HCA) "
					 "have active MTU 2048-4096, the master "
					 "n1's 4096"));
	assert_non_null(strstr(err.fix, "IBV_WC_LOC_LEN_ERR"));
	assert_non_null(strstr(err.fix, "NVIDIA/nccl issue 1524"));
	/* the library: the node that cannot load it is named first,
	 * whichever end tells it */
	n.verbs = 0;
	assert_int_equal(distenv_rehearsal_facts_error(DISTENV_RULE_VERBS,
						       "n1", "n2", &n, "n1",
						       &m, 0, &err),
			 -1);
	assert_non_null(strstr(err.what, "n2 has InfiniBand ports selected"));
	assert_non_null(strstr(err.what, "while n1's can"));
	assert_non_null(strstr(err.what, "fall back to its socket transport"));
	assert_non_null(strstr(err.fix, "libibverbs1"));
	assert_non_null(strstr(err.fix, "dstackai/dstack issue 2712"));
	n.verbs = 1;
	m.verbs = 0;
	assert_int_equal(distenv_rehearsal_facts_error(DISTENV_RULE_VERBS,
						       "n2", "n2", &n, "n1",
						       &m, 0, &err),
			 -1);
	assert_non_null(strstr(err.what, "n1 has InfiniBand ports selected"));
	assert_non_null(strstr(err.what, "while n2's can"));
	n.eph_lo = 40000;
	n.eph_hi = 50000;
	assert_int_equal(distenv_rehearsal_facts_error(DISTENV_RULE_PORT_RANGE,
						       "n1", "n2", &n, "n1",
						       &m, 1, &err),
			 -1);
	assert_non_null(strstr(err.what, "n2's ephemeral port range "
					 "(ip_local_port_range) is 40000-50000, "
					 "the master n1's 32768-60999 (and 1 "
					 "more node)"));
	assert_non_null(strstr(err.fix, "net.ipv4.ip_local_port_range"));
}

static void master_view(void **state)
{
	struct distenv_rehearsal_facts f[5];
	unsigned char seen[5] = { 0, 1, 1, 0, 1 };
	uint32_t count = 99, i;

	(void)state;
	for (i = 0; i < 5; i++)
		healthy(&f[i]);
	assert_int_equal(distenv_rehearsal_facts_first(DISTENV_RULE_SOCKET_MTU,
						       f, seen, 5, 0, &count),
			 UINT32_MAX);
	assert_int_equal(count, 0);
	/* node 3 never checked in: its facts are not compared */
	f[3].mtu = 9000;
	f[2].mtu = 1400;
	f[4].mtu = 1400;
	assert_int_equal(distenv_rehearsal_facts_first(DISTENV_RULE_SOCKET_MTU,
						       f, seen, 5, 0, &count),
			 2);
	assert_int_equal(count, 2);
	/* the master elsewhere than node 0: its own byte is not counted */
	assert_int_equal(distenv_rehearsal_facts_first(DISTENV_RULE_SOCKET_MTU,
						       f, seen, 5, 2, &count),
			 1);
	assert_int_equal(count, 1); /* node 0 not seen, node 4 alike */
	assert_int_equal(distenv_rehearsal_facts_first(DISTENV_RULE_SOCKET_MTU,
						       f, seen, 5, 7, &count),
			 UINT32_MAX);
}

/* The fake tree: root/a/b/c made with every folder before it. */
static char root[64];

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int tree_setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/distenv-facts-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	put("sys/class/net/eth0/mtu", "1400\n");
	put("sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n");
	put("sys/class/infiniband/mlx5_0/ports/1/active_mtu", "4096 (5)\n");
	put("sys/class/infiniband/mlx5_1/ports/1/state", "4: ACTIVE\n");
	put("sys/class/infiniband/mlx5_1/ports/1/active_mtu", "2048 (4)\n");
	put("sys/class/infiniband/mlx5_1/ports/2/state", "1: DOWN\n");
	put("sys/class/infiniband/mlx5_1/ports/2/active_mtu", "1024 (3)\n");
	return 0;
}

static int tree_teardown(void **state)
{
	(void)state;
	return nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void read_tree(void **state)
{
	struct distenv_facts_source src;
	struct distenv_rehearsal_facts f;

	(void)state;
	memset(&src, 0, sizeof(src));
	src.root = root;
	src.ifname = "eth0,eth1";
	src.hca = "=mlx5_0:1";
	src.verbs_lib = "libc.so.6"; /* there on every machine */
	src.eph_lo = 32768;
	src.eph_hi = 60999;
	distenv_sys_rehearsal_facts(&src, &f);
	assert_string_equal(f.ifname, "eth0");
	assert_int_equal(f.mtu, 1400);
	assert_int_equal(f.ib_ports, 1);
	assert_int_equal(f.ib_mtu_lo, 4096);
	assert_int_equal(f.ib_mtu_hi, 4096);
	assert_int_equal(f.verbs, 1);
	assert_int_equal(f.eph_lo, 32768);
	/* every HCA (no NCCL_IB_HCA): the DOWN port is not counted */
	src.hca = NULL;
	src.verbs_lib = "libdistenv-no-such-library.so.1";
	distenv_sys_rehearsal_facts(&src, &f);
	assert_int_equal(f.ib_ports, 2);
	assert_int_equal(f.ib_mtu_lo, 2048);
	assert_int_equal(f.ib_mtu_hi, 4096);
	assert_int_equal(f.verbs, 0);
	/* a prefix, an exclusion */
	src.hca = "mlx5_1";
	distenv_sys_rehearsal_facts(&src, &f);
	assert_int_equal(f.ib_ports, 1);
	assert_int_equal(f.ib_mtu_lo, 2048);
	src.hca = "^mlx5_1";
	distenv_sys_rehearsal_facts(&src, &f);
	assert_int_equal(f.ib_ports, 1);
	assert_int_equal(f.ib_mtu_lo, 4096);
	/* a list that selects no port: no IB, the library not tried */
	src.hca = "=mlx5_9";
	distenv_sys_rehearsal_facts(&src, &f);
	assert_int_equal(f.ib_ports, 0);
	assert_int_equal(f.verbs, -1);
	/* NCCL_IB_DISABLE=1 */
	src.hca = NULL;
	src.ib_disabled = 1;
	distenv_sys_rehearsal_facts(&src, &f);
	assert_int_equal(f.ib_ports, 0);
	assert_int_equal(f.verbs, -1);
	/* an interface not in the tree, an exclusion list: unknown */
	src.ifname = "eth9";
	distenv_sys_rehearsal_facts(&src, &f);
	assert_int_equal(f.mtu, 0);
	src.ifname = "^docker";
	distenv_sys_rehearsal_facts(&src, &f);
	assert_int_equal(f.mtu, 0);
	assert_string_equal(f.ifname, "");
}

/* The real system: the loopback interface's MTU through SIOCGIFMTU. */
static void read_system(void **state)
{
	struct distenv_facts_source src;
	struct distenv_rehearsal_facts f;

	(void)state;
	memset(&src, 0, sizeof(src));
	src.ifname = "lo";
	src.ib_disabled = 1;
	distenv_sys_rehearsal_facts(&src, &f);
	assert_true(f.mtu >= 1280);
	src.ifname = "distenv-none0";
	distenv_sys_rehearsal_facts(&src, &f);
	assert_int_equal(f.mtu, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(line_round_trip),
		cmocka_unit_test(line_older_and_foreign),
		cmocka_unit_test(differ),
		cmocka_unit_test(messages),
		cmocka_unit_test(master_view),
		cmocka_unit_test_setup_teardown(read_tree, tree_setup,
						tree_teardown),
		cmocka_unit_test(read_system),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
