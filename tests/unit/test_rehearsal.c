/* Unit tests: the network rehearsal's plan, ports, protocol and
 * messages (plugin/core/distenv_rehearsal.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_ports.h"
#include "distenv_rehearsal.h"

static void step_of(struct distenv_step *s, uint32_t node, uint32_t nnodes)
{
	memset(s, 0, sizeof(*s));
	s->kind = DISTENV_STEP_TASKS;
	s->job_id = 42;
	s->step_id = 3;
	s->nnodes = nnodes;
	s->node_id = node;
	s->ephemeral_lo = 32768;
	s->ephemeral_hi = 60999;
	strcpy(s->node_name, "n1");
	strcpy(s->master_host, "n1");
}

static void wanted(void **state)
{
	struct distenv_step s;

	(void)state;
	step_of(&s, 0, 2);
	assert_true(distenv_rehearsal_wanted(&s, DISTENV_CHECK_WARN, 5000, 0));
	assert_true(distenv_rehearsal_wanted(&s, DISTENV_CHECK_STRICT, 5000, 0));
	assert_false(distenv_rehearsal_wanted(&s, DISTENV_CHECK_OFF, 5000, 0));
	assert_false(distenv_rehearsal_wanted(&s, DISTENV_CHECK_WARN, 0, 0));
	assert_false(distenv_rehearsal_wanted(&s, DISTENV_CHECK_WARN, 5000, 1));
	s.localid = 1;
	assert_false(distenv_rehearsal_wanted(&s, DISTENV_CHECK_WARN, 5000, 0));
	step_of(&s, 0, 1);
	assert_false(distenv_rehearsal_wanted(&s, DISTENV_CHECK_WARN, 5000, 0));
	step_of(&s, 0, 2);
	s.kind = DISTENV_STEP_BATCH;
	assert_false(distenv_rehearsal_wanted(&s, DISTENV_CHECK_WARN, 5000, 0));
}

static void timeout(void **state)
{
	struct distenv_error err;
	int ms = -1;

	(void)state;
	assert_int_equal(distenv_rehearsal_parse_timeout(NULL, &ms, &err), 0);
	assert_int_equal(ms, DISTENV_REHEARSAL_TIMEOUT_MS);
	assert_int_equal(distenv_rehearsal_parse_timeout("", &ms, &err), 0);
	assert_int_equal(ms, 5000);
	assert_int_equal(distenv_rehearsal_parse_timeout("0", &ms, &err), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(distenv_rehearsal_parse_timeout("600", &ms, &err), 0);
	assert_int_equal(ms, 600000);
	assert_int_equal(distenv_rehearsal_parse_timeout("601", &ms, &err), -1);
	assert_string_equal(err.where, "DISTENV_REHEARSAL_TIMEOUT");
	assert_int_equal(distenv_rehearsal_parse_timeout("2.5", &ms, &err), -1);
	assert_int_equal(distenv_rehearsal_parse_timeout("-1", &ms, &err), -1);
	assert_int_equal(distenv_rehearsal_parse_timeout("5s", &ms, &err), -1);
}

static void resv_nth(void **state)
{
	uint16_t p = 0;

	(void)state;
	assert_int_equal(distenv_resv_ports_nth("21000-21001", 0, &p), 0);
	assert_int_equal(p, 21000);
	assert_int_equal(distenv_resv_ports_nth("21000-21001", 1, &p), 0);
	assert_int_equal(p, 21001);
	assert_int_equal(distenv_resv_ports_nth("21000,21005-21006", 1, &p), 0);
	assert_int_equal(p, 21005);
	assert_int_equal(distenv_resv_ports_nth("21000,21005-21006", 2, &p), 0);
	assert_int_equal(p, 21006);
	assert_int_equal(distenv_resv_ports_nth("21000", 1, &p), 1);
	assert_int_equal(distenv_resv_ports_nth("21000-21001", 2, &p), 1);
	assert_int_equal(distenv_resv_ports_nth("", 0, &p), -1);
	assert_int_equal(distenv_resv_ports_nth("x", 0, &p), -1);
	assert_int_equal(distenv_resv_ports_nth("21001-21000", 1, &p), -1);
}

static void check_in_port(void **state)
{
	struct distenv_step s;
	struct distenv_site site;
	struct distenv_error err;
	char why[160];
	uint16_t p = 0, mp = 0;

	(void)state;
	distenv_site_defaults(&site);
	step_of(&s, 0, 2);
	/* two reserved: the second, never MASTER_PORT (the first) */
	s.resv_ports = "21000-21001";
	assert_int_equal(distenv_rehearsal_port(&s, &site, 21000, &p, why,
						sizeof(why), &err),
			 0);
	assert_int_equal(p, 21001);
	assert_non_null(strstr(why, "second port of SLURM_STEP_RESV_PORTS"));
	/* one reserved: derived in port_range, not MASTER_PORT, outside
	 * the ephemeral range */
	s.resv_ports = "21000";
	assert_int_equal(distenv_rehearsal_port(&s, &site, 21000, &p, why,
						sizeof(why), &err),
			 0);
	assert_true(p >= site.port_lo && p <= site.port_hi);
	assert_non_null(strstr(why, "one port only"));
	/* none: half the range away from the derived MASTER_PORT, so not
	 * the MASTER_PORT of the neighbouring step ids either */
	s.resv_ports = NULL;
	assert_int_equal(distenv_derive_port(s.job_id, s.step_id, site.port_lo,
					     site.port_hi, s.ephemeral_lo,
					     s.ephemeral_hi, &mp, &err),
			 0);
	assert_int_equal(distenv_rehearsal_port(&s, &site, mp, &p, why,
						sizeof(why), &err),
			 0);
	assert_int_not_equal(p, mp);
	assert_true(p >= site.port_lo && p <= site.port_hi);
	assert_true(p - mp > 1000 || mp - p > 1000);
	assert_non_null(strstr(why, "no ports"));
	/* a --distenv-port right where the derivation lands: moved on */
	assert_int_equal(distenv_rehearsal_port(&s, &site, p, &mp, why,
						sizeof(why), &err),
			 0);
	assert_int_not_equal(mp, p);
	/* the whole port_range ephemeral: the derivation's error */
	site.port_lo = 40000;
	site.port_hi = 40010;
	assert_int_equal(distenv_rehearsal_port(&s, &site, 0, &p, why,
						sizeof(why), &err),
			 -1);
	assert_string_equal(err.where, "plugstack.conf port_range");
}

static void ring_ports(void **state)
{
	uint32_t node;
	unsigned t;
	uint16_t a, b;

	(void)state;
	for (node = 0; node < 200; node++)
		for (t = 0; t < DISTENV_REHEARSAL_RING_TRIES; t++) {
			a = distenv_rehearsal_ring_port(42, 3, node, t, 40000,
							40100);
			assert_true(a >= 40000 && a <= 40100);
			/* the same on every node: it depends on the ids */
			assert_int_equal(a, distenv_rehearsal_ring_port(
						    42, 3, node, t, 40000,
						    40100));
		}
	/* the candidates of one node differ */
	a = distenv_rehearsal_ring_port(42, 3, 7, 0, 32768, 60999);
	b = distenv_rehearsal_ring_port(42, 3, 7, 1, 32768, 60999);
	assert_int_not_equal(a, b);
	/* neighbouring nodes and steps land apart */
	assert_int_not_equal(a, distenv_rehearsal_ring_port(42, 3, 8, 0, 32768,
							    60999));
	assert_int_not_equal(a, distenv_rehearsal_ring_port(42, 4, 7, 0, 32768,
							    60999));
	/* unknown range (lo > hi): Linux's default */
	a = distenv_rehearsal_ring_port(1, 2, 3, 0, 1, 0);
	assert_true(a >= 32768 && a <= 60999);
}

static void ring_order(void **state)
{
	(void)state;
	assert_int_equal(distenv_rehearsal_next(0, 2), 1);
	assert_int_equal(distenv_rehearsal_next(1, 2), 0);
	assert_int_equal(distenv_rehearsal_prev(0, 2), 1);
	assert_int_equal(distenv_rehearsal_prev(1, 2), 0);
	assert_int_equal(distenv_rehearsal_next(998, 1000), 999);
	assert_int_equal(distenv_rehearsal_next(999, 1000), 0);
	assert_int_equal(distenv_rehearsal_prev(0, 1000), 999);
	assert_int_equal(distenv_rehearsal_prev(500, 1000), 499);
}

static void plan(void **state)
{
	struct distenv_step s;
	struct distenv_site site;
	struct distenv_rehearsal_plan p, q;
	struct distenv_error err;
	unsigned t;

	(void)state;
	distenv_site_defaults(&site);
	step_of(&s, 2, 4);
	s.resv_ports = "21000-21001";
	assert_int_equal(distenv_rehearsal_plan(&s, &site, 21000, 5000, &p, &err),
			 0);
	assert_false(p.on_master);
	assert_int_equal(p.next_node_id, 3);
	assert_int_equal(p.prev_node_id, 1);
	assert_int_equal(p.master_port, 21001);
	assert_int_equal(p.timeout_ms, 5000);
	/* node 3's own candidates are the ones node 2 tries */
	step_of(&s, 3, 4);
	s.resv_ports = "21000-21001";
	assert_int_equal(distenv_rehearsal_plan(&s, &site, 21000, 5000, &q, &err),
			 0);
	for (t = 0; t < DISTENV_REHEARSAL_RING_TRIES; t++)
		assert_int_equal(p.next_ports[t], q.ring_ports[t]);
	assert_int_equal(q.next_node_id, 0);
	/* task 0 moved by the layout: the master is its node */
	step_of(&s, 1, 4);
	s.master_node_id = 1;
	assert_int_equal(distenv_rehearsal_plan(&s, &site, 21000, 5000, &p, &err),
			 0);
	assert_true(p.on_master);
}

static void lines(void **state)
{
	char buf[DISTENV_REHEARSAL_LINE_MAX];
	uint32_t node = 0;

	(void)state;
	distenv_rehearsal_line(buf, sizeof(buf), "checkin", 42, 3, 7);
	assert_string_equal(buf, "distenv-checkin 42 3 7\n");
	assert_int_equal(distenv_rehearsal_line_parse(buf, "checkin", 42, 3,
						      &node),
			 0);
	assert_int_equal(node, 7);
	assert_int_equal(distenv_rehearsal_line_parse("distenv-ring 42 3 9",
						      "ring", 42, 3, &node),
			 0);
	assert_int_equal(node, 9);
	/* another kind, another step, a foreign program */
	assert_int_equal(distenv_rehearsal_line_parse(buf, "ring", 42, 3,
						      &node),
			 -1);
	assert_int_equal(distenv_rehearsal_line_parse(buf, "checkin", 42, 4,
						      &node),
			 -1);
	assert_int_equal(distenv_rehearsal_line_parse(buf, "checkin", 43, 3,
						      &node),
			 -1);
	assert_int_equal(distenv_rehearsal_line_parse("SSH-2.0-OpenSSH_9.2",
						      "checkin", 42, 3, &node),
			 -1);
	assert_int_equal(distenv_rehearsal_line_parse("distenv-checkin 42 3 7 x",
						      "checkin", 42, 3, &node),
			 -1);
	assert_int_equal(distenv_rehearsal_line_parse("", "ok", 42, 3, &node),
			 -1);
	assert_int_equal(distenv_rehearsal_line_parse(NULL, "ok", 42, 3, &node),
			 -1);
}

static void causes(void **state)
{
	(void)state;
	assert_int_equal(distenv_rehearsal_cause_of(0), DISTENV_REHEARSAL_OK);
	assert_int_equal(distenv_rehearsal_cause_of(ECONNREFUSED),
			 DISTENV_REHEARSAL_REFUSED);
	assert_int_equal(distenv_rehearsal_cause_of(EINPROGRESS),
			 DISTENV_REHEARSAL_TIMED_OUT);
	assert_int_equal(distenv_rehearsal_cause_of(ETIMEDOUT),
			 DISTENV_REHEARSAL_TIMED_OUT);
	assert_int_equal(distenv_rehearsal_cause_of(EHOSTUNREACH),
			 DISTENV_REHEARSAL_NO_ROUTE);
	assert_int_equal(distenv_rehearsal_cause_of(ENETUNREACH),
			 DISTENV_REHEARSAL_NO_ROUTE);
	assert_int_equal(distenv_rehearsal_cause_of(EPERM),
			 DISTENV_REHEARSAL_OTHER);
}

static void link_messages(void **state)
{
	struct distenv_step s;
	struct distenv_site site;
	struct distenv_rehearsal_plan p;
	struct distenv_rehearsal_link l;
	struct distenv_error err;

	(void)state;
	distenv_site_defaults(&site);
	step_of(&s, 0, 2);
	s.resv_ports = "21000-21001";
	assert_int_equal(distenv_rehearsal_plan(&s, &site, 21000, 5000, &p, &err),
			 0);
	memset(&l, 0, sizeof(l));
	l.ring = 1;
	l.from_node = "n1";
	l.to_node = "n2";
	l.to_addr = "10.0.0.2";
	l.port = 45000;
	l.src_addr = "10.0.0.1";
	l.ifname = "eth0";
	l.cause = DISTENV_REHEARSAL_TIMED_OUT;
	l.detail = "";
	l.waited_ms = 5001;
	assert_int_equal(distenv_rehearsal_link_error(&p, &l, &err), -1);
	assert_string_equal(err.where, "n1");
	assert_non_null(strstr(err.what, "n1 cannot reach its ring neighbour n2 "
					 "at 10.0.0.2 port 45000"));
	assert_non_null(strstr(err.what, "from 10.0.0.1 over eth0"));
	assert_non_null(strstr(err.what, "timed out"));
	assert_non_null(strstr(err.fix, "on n2, let TCP"));
	assert_non_null(strstr(err.fix, "32768-60999"));
	/* the check-in: the port and MASTER_PORT */
	l.ring = 0;
	l.port = 21001;
	l.cause = DISTENV_REHEARSAL_REFUSED;
	l.detail = "Connection refused";
	assert_int_equal(distenv_rehearsal_link_error(&p, &l, &err), -1);
	assert_non_null(strstr(err.what, "the master n2"));
	assert_non_null(strstr(err.what, "refused"));
	assert_non_null(strstr(err.what, ": Connection refused"));
	assert_non_null(strstr(err.fix, "port 21001"));
	assert_non_null(strstr(err.fix, "DISTENV_REHEARSAL_TIMEOUT"));
	/* no route: the interface, not a firewall */
	l.cause = DISTENV_REHEARSAL_NO_ROUTE;
	assert_int_equal(distenv_rehearsal_link_error(&p, &l, &err), -1);
	assert_non_null(strstr(err.fix, "--distenv-ifname"));
	assert_null(strstr(err.fix, "nftables"));
}

static void missing(void **state)
{
	struct distenv_step s;
	struct distenv_site site;
	struct distenv_rehearsal_plan p;
	struct distenv_error err;
	unsigned char seen[20];
	const char *names[DISTENV_REHEARSAL_NAMES_MAX] = {"n3", "n5"};
	const char *many[DISTENV_REHEARSAL_NAMES_MAX] = {
		"a", "b", "c", "d", "e", "f", "g", "h"};

	(void)state;
	distenv_site_defaults(&site);
	step_of(&s, 0, 5);
	s.resv_ports = "21000-21001";
	assert_int_equal(distenv_rehearsal_plan(&s, &site, 21000, 5000, &p, &err),
			 0);
	memset(seen, 1, sizeof(seen));
	distenv_error_clear(&err);
	assert_int_equal(distenv_rehearsal_missing(&p, seen, names, "n1",
						   "10.0.0.1", &err),
			 0);
	assert_false(distenv_error_is_set(&err));
	/* the master's own byte does not count */
	seen[0] = 0;
	assert_int_equal(distenv_rehearsal_missing(&p, seen, names, "n1",
						   "10.0.0.1", &err),
			 0);
	seen[2] = seen[4] = 0;
	assert_int_equal(distenv_rehearsal_missing(&p, seen, names, "n1",
						   "10.0.0.1", &err),
			 2);
	assert_string_equal(err.where, "n1");
	assert_non_null(strstr(err.what, "2 of 5 nodes never checked in"));
	assert_non_null(strstr(err.what, "n3 (node index 2), n5 (node index 4)"));
	assert_non_null(strstr(err.what, "10.0.0.1 port 21001 within 5000 ms"));
	/* more than can be named: the first ones, then "..." */
	step_of(&s, 0, 20);
	s.resv_ports = "21000-21001";
	assert_int_equal(distenv_rehearsal_plan(&s, &site, 21000, 5000, &p, &err),
			 0);
	memset(seen, 0, sizeof(seen));
	assert_int_equal(distenv_rehearsal_missing(&p, seen, many, "n1",
						   "10.0.0.1", &err),
			 19);
	assert_non_null(strstr(err.what, "h (node index 8), ..."));
	assert_null(strstr(err.what, "node index 9)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wanted),	 cmocka_unit_test(timeout),
		cmocka_unit_test(resv_nth),	 cmocka_unit_test(check_in_port),
		cmocka_unit_test(ring_ports),	 cmocka_unit_test(ring_order),
		cmocka_unit_test(plan),		 cmocka_unit_test(lines),
		cmocka_unit_test(causes),	 cmocka_unit_test(link_messages),
		cmocka_unit_test(missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
