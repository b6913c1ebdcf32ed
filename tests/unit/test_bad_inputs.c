/*
 * Unit tests: bad inputs, by category, against every parser of a value a
 * user or admin gives (option values, plugstack arguments, interface
 * lists) and the check of every value put into an environment.
 *
 * Each input must be refused (-1) with an error that names where the
 * value came from, says what is wrong in words of its category, and holds
 * only printable ASCII (no line break or escape byte reaches srun's
 * output, slurmd's log or a shell). tests/README.md reports the counts
 * printed at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_ifspec.h"
#include "distenv_options.h"
#include "distenv_ports.h"
#include "distenv_step.h"
#include "distenv_vars.h"

enum category {
	CAT_SHELL,   /* shell metacharacters and blanks */
	CAT_COMMENT, /* '#' */
	CAT_LONG,    /* longer than any value of the option */
	CAT_NONASCII, /* bytes >= 0x80 (UTF-8, Latin-1) */
	CAT_CONTROL, /* line breaks, escapes, DEL */
	CAT_COUNT,
};

static const char *const category_name[CAT_COUNT] = {
	"shell metacharacters", "comment '#'", "very long",
	"non-ASCII bytes", "control bytes",
};

/* What each category's message says (options and plugstack). */
static const char *const category_words[CAT_COUNT] = {
	"which the shell treats specially",
	"starts a comment",
	"bytes long, more than the",
	"is not printable ASCII",
	"is not printable ASCII",
};

static char long256[257], long4k[4097], long64k[65537];

static const struct bad {
	enum category cat;
	const char *text;
} bad_inputs[] = {
	{CAT_SHELL, "29500;reboot"}, {CAT_SHELL, "$(id)"},
	{CAT_SHELL, "`id`"},         {CAT_SHELL, "tasks|sh"},
	{CAT_SHELL, "a&b"},          {CAT_SHELL, "1>/etc/passwd"},
	{CAT_SHELL, "<x"},           {CAT_SHELL, "(x)"},
	{CAT_SHELL, "tasks off"},    {CAT_SHELL, "'tasks'"},
	{CAT_SHELL, "\"tasks\""},    {CAT_SHELL, "x\\y"},
	{CAT_SHELL, "*"},            {CAT_SHELL, "eth?"},
	{CAT_SHELL, "[ab]"},         {CAT_SHELL, "{a,b}"},
	{CAT_SHELL, "~root"},        {CAT_SHELL, "!1"},
	{CAT_SHELL, "${HOME}"},
	{CAT_COMMENT, "#"},          {CAT_COMMENT, "29500#x"},
	{CAT_COMMENT, "tasks#"},     {CAT_COMMENT, "#tasks"},
	{CAT_LONG, long256},         {CAT_LONG, long4k},
	{CAT_LONG, long64k},
	{CAT_NONASCII, "torchr\xc3\xbcn"}, {CAT_NONASCII, "\xff"},
	{CAT_NONASCII, "2950\xd9\xa0"},   {CAT_NONASCII, "\x80"},
	{CAT_NONASCII, "eth\xe2\x80\x8b" "0"}, /* zero-width space */
	{CAT_CONTROL, "\n"},         {CAT_CONTROL, "29500\n"},
	{CAT_CONTROL, "tasks\r"},    {CAT_CONTROL, "\x1b[31mtasks"},
	{CAT_CONTROL, "\t1"},        {CAT_CONTROL, "1\x7f"},
	{CAT_CONTROL, "a\x01"},
};

#define N_BAD (sizeof(bad_inputs) / sizeof(bad_inputs[0]))

static unsigned tried[CAT_COUNT];

static int group_setup(void **state)
{
	(void)state;
	memset(long256, 'a', sizeof(long256) - 1);
	memset(long4k, '1', sizeof(long4k) - 1);
	memset(long64k, 'x', sizeof(long64k) - 1);
	return 0;
}

static int group_teardown(void **state)
{
	unsigned total = 0;
	int c;

	(void)state;
	for (c = 0; c < CAT_COUNT; c++) {
		printf("# bad inputs tried: %s: %u\n", category_name[c],
		       tried[c]);
		total += tried[c];
	}
	printf("# bad inputs tried: total: %u\n", total);
	return 0;
}

static void assert_printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			fail_msg("error text holds byte 0x%02x",
				 (unsigned char)*s);
}

/* The error of a refused input: set, printable, naming where. */
static void assert_refused(int rc, const struct distenv_error *err,
			   const char *where, const char *words,
			   const struct bad *b)
{
	if (rc != -1)
		fail_msg("accepted a %s input", category_name[b->cat]);
	assert_true(distenv_error_is_set(err));
	assert_printable(err->what);
	assert_printable(err->where);
	assert_printable(err->fix);
	assert_non_null(strstr(err->where, where));
	if (words && !strstr(err->what, words))
		fail_msg("%s: '%s' does not say '%s'", category_name[b->cat],
			 err->what, words);
	tried[b->cat]++;
}

static void option_values(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N_BAD; i++) {
		const struct bad *b = &bad_inputs[i];
		const char *words = category_words[b->cat];
		struct distenv_error err;
		enum distenv_mode mode;
		uint16_t port, lo, hi;
		uint32_t nproc;

		distenv_error_clear(&err);
		assert_refused(distenv_parse_mode(b->text, "--distenv", &mode,
						  &err),
			       &err, "--distenv", words, b);
		distenv_error_clear(&err);
		assert_refused(distenv_parse_port(b->text, "--distenv-port",
						  &port, &err),
			       &err, "--distenv-port", words, b);
		distenv_error_clear(&err);
		assert_refused(distenv_parse_nproc(b->text, "--distenv-nproc",
						   &nproc, &err),
			       &err, "--distenv-nproc", words, b);
		distenv_error_clear(&err);
		assert_refused(distenv_parse_port_range(b->text, "port_range",
							&lo, &hi, &err),
			       &err, "port_range", words, b);
	}
}

static void plugstack_arguments(void **state)
{
	static const char *const keys[] = {"default=", "port_range=", ""};
	size_t i, k;

	(void)state;
	for (i = 0; i < N_BAD; i++) {
		const struct bad *b = &bad_inputs[i];

		for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t len = strlen(keys[k]) + strlen(b->text) + 1;
			char *arg = malloc(len);
			char *argv[2] = {NULL, NULL};
			struct distenv_site site;
			struct distenv_error err;

			assert_non_null(arg);
			snprintf(arg, len, "%s%s", keys[k], b->text);
			argv[0] = arg;
			distenv_error_clear(&err);
			assert_refused(distenv_parse_plugstack(1, argv, &site,
							       &err),
				       &err, "plugstack.conf argument",
				       category_words[b->cat], b);
			/* Usable defaults even after the error. */
			assert_int_equal(site.port_lo, DISTENV_PORT_LO_DEFAULT);
			assert_int_equal(site.default_mode, DISTENV_MODE_OFF);
			free(arg);
		}
	}
}

static void interface_lists(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N_BAD; i++) {
		const struct bad *b = &bad_inputs[i];
		const char *words = b->cat == CAT_LONG
					    ? "bytes long, more than the"
					    : "which no interface name holds";
		struct distenv_ifspec spec;
		struct distenv_error err;
		char text[80];

		distenv_error_clear(&err);
		assert_refused(distenv_ifspec_parse(b->text, "--distenv-ifname",
						    &spec, &err),
			       &err, "--distenv-ifname", words, b);
		/* The same after a valid prefix and the NCCL markers. */
		if (b->cat == CAT_LONG)
			continue;
		snprintf(text, sizeof(text), "^=eth0,%s", b->text);
		distenv_error_clear(&err);
		assert_refused(distenv_ifspec_parse(text, "NCCL_SOCKET_IFNAME",
						    &spec, &err),
			       &err, "NCCL_SOCKET_IFNAME", words, b);
	}
}

/* A list of 32 names of 8 bytes each is valid NCCL syntax but longer
 * than the request keeps: refused, not cut. */
static void interface_list_cut_is_refused(void **state)
{
	char text[512] = "";
	struct distenv_ifspec spec;
	struct distenv_error err;
	int i;

	(void)state;
	for (i = 0; i < 32; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
			 "%senp0s%03d", i ? "," : "", i);
	assert_true(strlen(text) >= DISTENV_IFSPEC_TEXT_MAX);
	assert_int_equal(distenv_ifspec_parse(text, "--distenv-ifname", &spec,
					      &err),
			 -1);
	assert_non_null(strstr(err.what, "more than the 255 allowed"));
	text[251] = '\0'; /* 28 names */
	assert_int_equal(distenv_ifspec_parse(text, "--distenv-ifname", &spec,
					      &err),
			 0);
	assert_int_equal(spec.count, 28);
}

/* Values Slurm hands over: refused with printable messages. */
static void slurm_values(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N_BAD; i++) {
		const struct bad *b = &bad_inputs[i];
		struct distenv_error err;
		uint16_t port, lo, hi;
		uint32_t count;

		distenv_error_clear(&err);
		assert_refused(distenv_resv_ports_first(b->text, &port, &err),
			       &err, "SLURM_STEP_RESV_PORTS", NULL, b);
		distenv_error_clear(&err);
		assert_refused(distenv_tasks_on_node(b->text, 0, &count, &err),
			       &err, "SLURM_STEP_TASKS_PER_NODE", NULL, b);
		distenv_error_clear(&err);
		assert_refused(distenv_parse_ephemeral(b->text, &lo, &hi, &err),
			       &err, "ip_local_port_range", NULL, b);
	}
}

/* The last check before a value goes into an environment. */
static void environment_values(void **state)
{
	static const char *const bad[] = {
		"10.0.0.1\n", "eth0\r", "\x1b]0;owned\x07", "29500\x7f",
		"a\x01" "b",
	};
	static const char *const good[] = {"10.77.0.1", "=eth0", "a\tb",
					   "caf\xc3\xa9"};
	struct distenv_error err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		distenv_error_clear(&err);
		assert_int_equal(distenv_value_check(bad[i], "MASTER_ADDR", &err),
				 -1);
		assert_string_equal(err.where, "MASTER_ADDR");
		assert_printable(err.what);
		tried[CAT_CONTROL]++;
	}
	assert_int_equal(distenv_value_check(long4k, "X", &err), 0);
	assert_int_equal(distenv_value_check(long64k, "X", &err), -1);
	assert_string_equal(err.what,
			    "value is 65536 bytes long, more than the 4096 allowed");
	tried[CAT_LONG]++;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(distenv_value_check(good[i], "X", &err), 0);
}

/* Exact messages, one per category, as srun prints them. */
static void messages(void **state)
{
	struct distenv_error err;
	enum distenv_mode mode;
	uint16_t port;
	char *argv[1];

	(void)state;
	assert_int_equal(distenv_parse_port("29500;reboot", "--distenv-port",
					    &port, &err),
			 -1);
	assert_string_equal(err.what, "'29500;reboot' has the character ';' "
				      "(0x3b), which the shell treats specially "
				      "and no value of this option holds");
	assert_string_equal(err.fix, "give the value in plain ASCII, without "
				     "blanks, quotes, '#' or shell metacharacters");
	argv[0] = (char *)"default=tasks#x";
	assert_int_equal(distenv_parse_plugstack(1, argv, &(struct distenv_site){0},
						 &err),
			 -1);
	assert_string_equal(err.where, "plugstack.conf argument 'default=tasks#x'");
	assert_string_equal(err.what, "'default=tasks#x' has the character '#' "
				      "(0x23), which starts a comment in "
				      "plugstack.conf and in shells");
	assert_int_equal(distenv_parse_mode(long4k, "--distenv", &mode, &err), -1);
	assert_string_equal(err.what,
			    "value is 4096 bytes long, more than the 255 allowed");
	assert_int_equal(distenv_parse_mode("torchr\xc3\xbcn", "--distenv", &mode,
					    &err),
			 -1);
	assert_string_equal(err.what, "'torchr??n' has the byte 0xc3 at offset 6, "
				      "which is not printable ASCII");
	argv[0] = long256;
	assert_int_equal(distenv_parse_plugstack(1, argv, &(struct distenv_site){0},
						 &err),
			 -1);
	/* where shows the start of the argument, cut with "...". */
	assert_non_null(strstr(err.where, "aaaa...'"));
	assert_true(strlen(err.where) < 100);
}

/* Values that are fine stay fine. */
static void good_values_pass(void **state)
{
	struct distenv_error err;
	struct distenv_site site;
	char *argv[3] = {(char *)"default=tasks",
			 (char *)"port_range=29600-32767",
			 (char *)"config=/etc/slurm/distenv.yaml"};
	uint16_t lo, hi;

	(void)state;
	assert_int_equal(distenv_option_text_check("^=eth0,ib", "o", &err), 0);
	assert_int_equal(distenv_parse_port_range("1024-65535", "o", &lo, &hi,
						  &err),
			 0);
	assert_int_equal(distenv_parse_plugstack(2, argv, &site, &err), 0);
	assert_int_equal(site.default_mode, DISTENV_MODE_TASKS);
	assert_int_equal(distenv_option_text_check(argv[2], "o", &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(option_values),
		cmocka_unit_test(plugstack_arguments),
		cmocka_unit_test(interface_lists),
		cmocka_unit_test(interface_list_cut_is_refused),
		cmocka_unit_test(slurm_values),
		cmocka_unit_test(environment_values),
		cmocka_unit_test(messages),
		cmocka_unit_test(good_values_pass),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
