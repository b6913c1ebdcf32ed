/* Unit tests: the LLaMA-Factory and transformers versions
 * (plan_stack.h): their parser, and the logits coefficient and
 * allocator default of each stack (docs/memory.md). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "model_fixture.h"
#include "plan_stack.h"

static struct plan_version ver(const char *text)
{
	struct plan_version v;
	struct distenv_error err;

	distenv_error_clear(&err);
	assert_int_equal(plan_parse_version(text, "--lf-version", &v, &err),
			 0);
	return v;
}

static void test_parse_good(void **state)
{
	static const struct {
		const char *text;
		uint32_t major, minor, patch;
	} good[] = {
		{ "0.9.5", 0, 9, 5 },	     { "4.46.1", 4, 46, 1 },
		{ "0.9.1.dev0", 0, 9, 1 },   { "4.46.0rc1", 4, 46, 0 },
		{ "4.57.0+cu121", 4, 57, 0 }, { "5.6", 5, 6, 0 },
		{ "0.9.3.post1", 0, 9, 3 },  { "1.0.0a2", 1, 0, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct plan_version v = ver(good[i].text);

		assert_true(v.known);
		assert_int_equal(v.major, good[i].major);
		assert_int_equal(v.minor, good[i].minor);
		assert_int_equal(v.patch, good[i].patch);
		assert_string_equal(v.text, good[i].text);
	}
	assert_false(ver("unknown").known);
	assert_int_equal(plan_version_cmp(&(struct plan_version){ 1, 0, 9, 3,
								  "" },
					  0, 9, 4),
			 -1);
	assert_int_equal(plan_version_cmp(&(struct plan_version){ 1, 4, 46,
								  1, "" },
					  4, 46, 1),
			 0);
}

/* Bad strings: refused, the error names the option and says the form. */
static void test_parse_bad(void **state)
{
	static const char *const bad[] = {
		"",	  "abc",    "0.9.x",	"0..9",	      "0.9.",
		"v0.9.5", "0",	    "123456.1", "4.46.1 ",    "4.46.1rc",
		"0.9.5+", "0.9.5-", "0.9.5/..", "0.9.5.dev0;x",
		"1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16.17.18.19.20",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct plan_version v;
		struct distenv_error err;

		distenv_error_clear(&err);
		assert_int_equal(plan_parse_version(bad[i],
						    "--transformers-version",
						    &v, &err),
				 -1);
		assert_false(v.known);
		assert_string_equal(err.where, "--transformers-version");
		assert_non_null(strstr(err.what, "is not a version"));
		assert_non_null(strstr(err.what, "MAJOR.MINOR[.PATCH]"));
	}
	{
		struct plan_version v;
		struct distenv_error err;

		assert_int_equal(plan_parse_version(NULL, "--lf-version", &v,
						    &err),
				 -1);
		assert_string_equal(err.where, "--lf-version");
	}
}

static double coefficient(const char *lf, const char *tf, int reference)
{
	struct plan_stack s;
	struct plan_act_input in;

	memset(&s, 0, sizeof(s));
	memset(&in, 0, sizeof(in));
	s.lf = ver(lf);
	s.tf = ver(tf);
	in.model = fx_model("qwen2-72b");
	in.batch = 1;
	in.pairwise = 1;
	in.reference = reference;
	in.model_ce = plan_stack_model_ce(&s);
	return plan_act_logit_bytes(&in);
}

/* Bytes per token and vocabulary entry at the peak of a DPO forward:
 * 22 where LLaMA-Factory passes the labels (0.8.0-0.9.3) and
 * transformers' ForCausalLMLoss keeps the 16-bit logits alive beside
 * its fp32 copy, shifted copy and log_softmax (4.46-4.48); 20 for
 * every other known stack; 22 when a version is unknown and the other
 * leaves it possible. Without a reference model: 14 and 12. */
static void test_coefficient_per_stack(void **state)
{
	(void)state;
	assert_true(coefficient("0.9.1", "4.46.1", 1) == 22);
	assert_true(coefficient("0.9.3", "4.46.1", 1) == 22);
	assert_true(coefficient("0.8.0", "4.48.3", 1) == 22);
	assert_true(coefficient("0.9.1", "4.45.2", 1) == 20);
	assert_true(coefficient("0.9.3", "4.49.0", 1) == 20);
	assert_true(coefficient("0.9.4", "4.46.1", 1) == 20);
	assert_true(coefficient("0.9.5", "5.6.0", 1) == 20);
	assert_true(coefficient("0.7.1", "4.46.1", 1) == 20);
	assert_true(coefficient("0.9.3.dev0", "4.46.0rc1", 1) == 22);
	/* unknown: the larger, unless the known one rules it out */
	assert_true(coefficient("unknown", "unknown", 1) == 22);
	assert_true(coefficient("0.9.3", "unknown", 1) == 22);
	assert_true(coefficient("unknown", "4.47.0", 1) == 22);
	assert_true(coefficient("unknown", "5.6.0", 1) == 20);
	assert_true(coefficient("0.9.5", "unknown", 1) == 20);
	/* orpo, simpo: the policy alone */
	assert_true(coefficient("0.9.1", "4.46.1", 0) == 14);
	assert_true(coefficient("0.9.5", "5.6.0", 0) == 12);
}

/* LLaMA-Factory sets expandable segments from 0.9.3 (cli.py) on;
 * older or unknown: off, the smaller usable band. */
static void test_allocator_default(void **state)
{
	struct plan_stack s;

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_false(plan_stack_lf_sets_expandable(&s));
	s.lf = ver("0.9.2");
	assert_false(plan_stack_lf_sets_expandable(&s));
	s.lf = ver("0.9.3");
	assert_true(plan_stack_lf_sets_expandable(&s));
	s.lf = ver("0.9.5");
	assert_true(plan_stack_lf_sets_expandable(&s));
	s.lf = ver("1.0.0");
	assert_true(plan_stack_lf_sets_expandable(&s));
}

/* The stack moves the longest prompt of setting 1 (8 nodes, 1k
 * answers, expandable segments off): 22 bytes give a shorter row than
 * 20, by the logits' share of the step. */
static void test_stack_moves_the_limit(void **state)
{
	struct plan_fit_input in;
	struct plan_fit f20, f22;

	(void)state;
	fx_field_setting(&in, 1, 8);
	plan_fit_plan(&in, &f20);
	in.act.model_ce = 1;
	plan_fit_plan(&in, &f22);
	assert_true(f22.max_seq < f20.max_seq);
	within(f22.max_seq, 0.88 * f20.max_seq, 0.95 * f20.max_seq);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_coefficient_per_stack),
		cmocka_unit_test(test_allocator_default),
		cmocka_unit_test(test_stack_moves_the_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
