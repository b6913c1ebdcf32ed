/* Unit tests: NCCL interface list syntax. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "distenv_ifspec.h"

static void parse_forms(void **state)
{
	struct distenv_ifspec s;
	struct distenv_error err;

	(void)state;
	assert_int_equal(distenv_ifspec_parse("eth0", "o", &s, &err), 0);
	assert_false(s.exclude);
	assert_false(s.exact);
	assert_int_equal(s.count, 1);
	assert_string_equal(s.names[0], "eth0");
	assert_int_equal(distenv_ifspec_parse("^=docker0,lo", "o", &s, &err), 0);
	assert_true(s.exclude);
	assert_true(s.exact);
	assert_int_equal(s.count, 2);
	assert_string_equal(s.names[1], "lo");
	assert_int_equal(distenv_ifspec_parse("=ib0", "o", &s, &err), 0);
	assert_true(s.exact);
	assert_false(s.exclude);
}

static void parse_errors(void **state)
{
	struct distenv_ifspec s;
	struct distenv_error err;

	(void)state;
	assert_int_equal(distenv_ifspec_parse("", "--distenv-ifname", &s, &err), -1);
	assert_string_equal(err.what, "'' names no interface");
	assert_string_equal(err.where, "--distenv-ifname");
	assert_int_equal(distenv_ifspec_parse("^", "o", &s, &err), -1);
	assert_int_equal(distenv_ifspec_parse("^=", "o", &s, &err), -1);
	assert_int_equal(distenv_ifspec_parse("eth0,,eth1", "o", &s, &err), -1);
	assert_string_equal(err.what, "'eth0,,eth1' has an empty name");
	assert_int_equal(distenv_ifspec_parse("eth0,", "o", &s, &err), -1);
	assert_int_equal(distenv_ifspec_parse("eth0;rm -rf", "o", &s, &err), -1);
	assert_string_equal(err.what, "'eth0;rm -rf' has the character ';' (0x3b), "
				      "which no interface name holds");
	assert_int_equal(distenv_ifspec_parse("eth\xc3\xa9", "o", &s, &err), -1);
	assert_non_null(strstr(err.what, "0xc3"));
	assert_int_equal(distenv_ifspec_parse("averyveryverylongname", "o", &s, &err), -1);
	assert_non_null(strstr(err.what, "longer than an interface name"));
	assert_int_equal(distenv_ifspec_parse("a#b", "o", &s, &err), -1);
}

static void matching(void **state)
{
	struct distenv_ifspec s;
	struct distenv_error err;

	(void)state;
	/* Without '=', a name is a prefix: eth1 also selects eth10. */
	distenv_ifspec_parse("eth1", "o", &s, &err);
	assert_true(distenv_ifspec_selects(&s, "eth1"));
	assert_true(distenv_ifspec_selects(&s, "eth10"));
	assert_false(distenv_ifspec_selects(&s, "eth0"));
	distenv_ifspec_parse("=eth1", "o", &s, &err);
	assert_true(distenv_ifspec_selects(&s, "eth1"));
	assert_false(distenv_ifspec_selects(&s, "eth10"));
	distenv_ifspec_parse("^docker,lo", "o", &s, &err);
	assert_false(distenv_ifspec_selects(&s, "docker0"));
	assert_false(distenv_ifspec_selects(&s, "lo"));
	assert_true(distenv_ifspec_selects(&s, "eth0"));
	distenv_ifspec_parse("^=eth0", "o", &s, &err);
	assert_false(distenv_ifspec_selects(&s, "eth0"));
	assert_true(distenv_ifspec_selects(&s, "eth01"));
}

static void any_interface(void **state)
{
	struct distenv_iface ifs[3];
	struct distenv_ifspec s;
	struct distenv_error err;
	char first[DISTENV_IFNAME_MAX];

	(void)state;
	memset(ifs, 0, sizeof(ifs));
	strcpy(ifs[0].name, "lo");
	ifs[0].up = 1;
	ifs[0].loopback = 1;
	ifs[0].ip.family = AF_INET; /* 127.0.0.1: loopback by its address */
	ifs[0].ip.bytes[0] = 127;
	ifs[0].ip.bytes[3] = 1;
	strcpy(ifs[1].name, "ens5");
	ifs[1].up = 0; /* down: not usable */
	strcpy(ifs[2].name, "ens6");
	ifs[2].up = 1;
	distenv_ifspec_parse("eth0", "o", &s, &err);
	assert_false(distenv_ifspec_any(&s, ifs, 3, 1, first));
	distenv_ifspec_parse("ens", "o", &s, &err);
	assert_true(distenv_ifspec_any(&s, ifs, 3, 1, first));
	assert_string_equal(first, "ens6");
	distenv_ifspec_parse("lo", "o", &s, &err);
	assert_false(distenv_ifspec_any(&s, ifs, 3, 1, first)); /* multi-node */
	assert_true(distenv_ifspec_any(&s, ifs, 3, 0, first));  /* single */
	assert_string_equal(first, "lo");
}

/* Addresses are no interface names, for NCCL nor for Gloo. */
static void addresses_are_not_names(void **state)
{
	struct distenv_ifspec s;
	struct distenv_error err;

	(void)state;
	assert_true(distenv_ifname_is_address("10.1.2.3", 8));
	assert_true(distenv_ifname_is_address("192.168.1.", 10));
	assert_true(distenv_ifname_is_address("fe80::1%eth0", 12));
	assert_true(distenv_ifname_is_address("::1", 3));
	assert_true(distenv_ifname_is_address("10.0.0.0/8,eth0", 10));
	assert_false(distenv_ifname_is_address("eth0.100", 8));
	assert_false(distenv_ifname_is_address("eth0:1", 6));
	assert_false(distenv_ifname_is_address("mlx5_0:1", 8));
	assert_false(distenv_ifname_is_address("100", 3));
	assert_int_equal(distenv_ifspec_parse("=eth0,10.1.2.3", "o", &s, &err),
			 -1);
	assert_string_equal(err.what,
			    "'10.1.2.3' is an IP address, not an interface name");
	assert_non_null(strstr(err.fix, "ip -br addr"));
	assert_int_equal(distenv_ifspec_parse("^fe80::1", "o", &s, &err), -1);
	assert_int_equal(distenv_ifspec_parse("eth0.100,eth0:1", "o", &s,
					      &err), 0);
}

/* The address NCCL's bootstrap takes: the first selected, in
 * getifaddrs order, IPv6 loopback skipped, up or not. */
static void nccl_takes_the_first(void **state)
{
	struct distenv_iface ifs[4];
	struct distenv_ifspec s;
	struct distenv_error err;

	(void)state;
	memset(ifs, 0, sizeof(ifs));
	strcpy(ifs[0].name, "lo");
	distenv_ip_parse("::1", &ifs[0].ip);
	strcpy(ifs[1].name, "lo");
	distenv_ip_parse("127.0.0.1", &ifs[1].ip);
	strcpy(ifs[2].name, "eth1");
	distenv_ip_parse("10.99.2.1", &ifs[2].ip);
	strcpy(ifs[3].name, "eth0");
	distenv_ip_parse("10.77.0.2", &ifs[3].ip);
	ifs[3].up = 1;
	distenv_ifspec_parse("^docker", "o", &s, &err);
	assert_ptr_equal(distenv_ifspec_nccl_takes(&s, ifs, 4), &ifs[1]);
	distenv_ifspec_parse("eth", "o", &s, &err);
	assert_ptr_equal(distenv_ifspec_nccl_takes(&s, ifs, 4), &ifs[2]);
	distenv_ifspec_parse("^lo,eth1", "o", &s, &err);
	assert_ptr_equal(distenv_ifspec_nccl_takes(&s, ifs, 4), &ifs[3]);
	distenv_ifspec_parse("=ib0", "o", &s, &err);
	assert_null(distenv_ifspec_nccl_takes(&s, ifs, 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_forms),
		cmocka_unit_test(parse_errors),
		cmocka_unit_test(matching),
		cmocka_unit_test(any_interface),
		cmocka_unit_test(addresses_are_not_names),
		cmocka_unit_test(nccl_takes_the_first),
	};

	return cmocka_run_group_tests_name("ifspec", tests, NULL, NULL);
}
