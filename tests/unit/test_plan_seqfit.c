/* Unit tests: the longest prompt (plan_seqfit.h) calibrated on field
 * notes of full DPO of Qwen2-72B (docs/memory.md), its sensitivity to the
 * node count, and host memory at save. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "model_fixture.h"
#include "plan_seqfit.h"

static uint32_t prompt_with(int which, uint32_t nnodes, uint32_t answer,
			    struct plan_fit *f)
{
	struct plan_fit_input in;

	fx_field_setting(&in, which, nnodes);
	in.answer_tokens = answer;
	plan_fit_plan(&in, f);
	return f->max_prompt;
}

static uint32_t prompt_at(int which, uint32_t nnodes, struct plan_fit *f)
{
	return prompt_with(which, nnodes, 1024, f);
}

/* Field notes, 8 x 80 GB per node. Setting 3 does not depend on the
 * node count (offload leaves 4L on the GPU): at least 10k (0.8 x the
 * 12.5k that trained); the model extends it to 11.1k (band 10.9k-11.4k
 * with expandable segments). */
static void test_calibration_offload(void **state)
{
	struct plan_fit f;
	uint32_t n;

	(void)state;
	for (n = 2; n <= 32; n *= 2) {
		assert_true(prompt_at(3, n, &f) >= 10000);
		within(f.max_prompt, 11000, 11300);
		within(f.max_prompt_lo, 10800, f.max_prompt);
		within(f.max_prompt_hi, f.max_prompt, 11500);
		assert_int_equal(f.best_switch, -1);
	}
}

/* Settings 1 and 2 at the assumed 8 nodes: the model gives 4.0k and
 * 6.1k, about half the notes' 8k and 10k, and no node count brings
 * setting 1 within 20% of 8k (5.9k at 32 nodes): at 8k + 1k tokens the
 * DPO logits (56 GB) and the checkpointed inputs (24 GB) alone nearly
 * fill 80 GiB. docs/memory.md discusses the gap; these values pin the
 * model so that a change to it is seen. Offload buys the most. */
static void test_calibration_gap(void **state)
{
	struct plan_fit f;

	(void)state;
	within(prompt_at(1, 8, &f), 3900, 4100);
	within(f.max_prompt_lo, 3100, 3300);
	within(f.max_prompt_hi, 4600, 4800);
	assert_int_equal(f.best_switch, PLAN_SW_OFFLOAD);
	assert_true(prompt_at(1, 32, &f) < 0.8 * 8192);
	within(prompt_at(2, 8, &f), 6000, 6300);
	assert_int_equal(f.best_switch, PLAN_SW_OFFLOAD);
	/* Liger alone buys little: DPO keeps its logits */
	prompt_at(1, 8, &f);
	within(f.switch_prompt[PLAN_SW_LIGER], f.max_prompt,
			f.max_prompt + 100);
	assert_true(f.switch_prompt[PLAN_SW_UNSLOTH] > f.max_prompt + 1500);
}

/* The notes leave the node count and the longest prompts' answer
 * length open. With 32 nodes and 256-token answers the three points
 * hold: setting 1 within 20% of 8k (8,192), settings 2 and 3 at least
 * 0.8 x 10k and 0.8 x 12.5k. With 512-token answers setting 1 falls
 * short; with 1k answers no node count reaches it (docs/memory.md). */
static void test_calibration_assumed(void **state)
{
	struct plan_fit f;

	(void)state;
	within(prompt_with(1, 32, 256, &f), 0.8 * 8192, 1.2 * 8192);
	within(f.max_prompt, 6600, 6700);
	assert_true(prompt_with(2, 32, 256, &f) >= 0.8 * 10000);
	within(f.max_prompt, 9600, 9700);
	assert_true(prompt_with(3, 32, 256, &f) >= 0.8 * 12500);
	within(f.max_prompt, 11850, 11950);
	assert_true(prompt_with(1, 32, 512, &f) < 0.8 * 8192);
	assert_true(prompt_with(1, 1024, 1024, &f) < 0.8 * 8192);
}

/* The plan for one stack: model_ce (plan_stack.h: 22 bytes of logits,
 * not 20) and expandable segments on or off, 1k answers. */
static struct plan_fit plan_stack_at(int which, uint32_t nnodes, int model_ce,
				     int expandable)
{
	struct plan_fit_input in;
	struct plan_fit f;

	fx_field_setting(&in, which, nnodes);
	in.answer_tokens = 1024;
	in.act.model_ce = model_ce;
	in.expandable = which == 3 ? 1 : expandable;
	plan_fit_plan(&in, &f);
	return f;
}

/* The field notes give no unit. Read as characters of Chinese text at
 * 1.5-1.8 characters per token (Qwen's tokenizer on LLaMA-Factory's
 * Chinese demo data gives 1.67-1.80; Alibaba Cloud documents 1.5-1.8),
 * they fit the plan at 8 nodes and 1k answers. LLaMA-Factory 0.9.5's
 * stack (20 bytes, expandable segments set by its launcher): 4.9k /
 * 7.5k / 11.1k tokens, so setting 1 within 20% of 8,192 characters and
 * settings 2 and 3 at least 0.8 x 10k and 0.8 x 12.5k characters at
 * every ratio of the range. The field team's likely stack, 0.9.1 with
 * transformers 4.46.1 (22 bytes; expandable segments off in settings 1
 * and 2, as the notes say): settings 2 and 3 still hold; setting 1's
 * middle (3.6k tokens) meets 0.8 x 8,192 characters only at 1.8, its
 * band's upper end (4.3k) from 1.67 (the measured Qwen range) on, not
 * at 1.5. docs/memory.md. */
static void test_notes_as_characters(void **state)
{
	static const double cpt[] = { 1.5, 1.67, 1.8 };
	struct plan_fit f;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cpt) / sizeof(cpt[0]); i++) {
		f = plan_stack_at(1, 8, 0, 1);
		within(f.max_prompt * cpt[i], 0.8 * 8192, 1.2 * 8192);
		f = plan_stack_at(2, 8, 0, 1);
		assert_true(f.max_prompt * cpt[i] >= 0.8 * 10000);
		f = plan_stack_at(3, 8, 0, 1);
		assert_true(f.max_prompt * cpt[i] >= 0.8 * 12500);
		/* 0.9.1 + 4.46.1 */
		f = plan_stack_at(1, 8, 1, 0);
		if (cpt[i] >= 1.67)
			within(f.max_prompt_hi * cpt[i], 0.8 * 8192,
			       1.2 * 8192);
		else
			assert_true(f.max_prompt_hi * cpt[i] < 0.8 * 8192);
		f = plan_stack_at(2, 8, 1, 0);
		assert_true(f.max_prompt * cpt[i] >= 0.8 * 10000);
		f = plan_stack_at(3, 8, 1, 1);
		assert_true(f.max_prompt * cpt[i] >= 0.8 * 12500);
	}
	within(plan_stack_at(1, 8, 0, 1).max_prompt, 4800, 4950);
	within(plan_stack_at(2, 8, 0, 1).max_prompt, 7400, 7500);
	within(plan_stack_at(3, 8, 0, 1).max_prompt, 11000, 11200);
	f = plan_stack_at(1, 8, 1, 0);
	within(f.max_prompt, 3600, 3700);
	assert_true(f.max_prompt * 1.8 >= 0.8 * 8192);
	assert_true(f.max_prompt * 1.5 < 0.8 * 8192);
}

/* Read as tokens, setting 1's 8k (8,192 tokens) lies above the plan's
 * band at every node count up to 32, for both stacks, with and without
 * expandable segments: that reading contradicts the plan. */
static void test_notes_as_tokens(void **state)
{
	uint32_t n;
	int ce, ex;

	(void)state;
	for (n = 1; n <= 32; n++)
		for (ce = 0; ce <= 1; ce++)
			for (ex = 0; ex <= 1; ex++)
				assert_true(plan_stack_at(1, n, ce, ex)
						    .max_prompt_hi < 8192);
}

/* Sensitivity to the node count: the model states shrink with N. */
static void test_node_sensitivity(void **state)
{
	struct plan_fit f;

	(void)state;
	assert_int_equal(prompt_at(1, 2, &f), 0); /* states alone: too big */
	within(prompt_at(1, 4, &f), 1300, 1500);
	within(prompt_at(1, 16, &f), 5150, 5350);
	within(prompt_at(2, 16, &f), 7900, 8100);
}

/* Host memory at save, node 0 of 8, setting 3: the offloaded states
 * (2181 GB / N), the 16-bit gather (145 GB) and unsloth's pinned
 * blocks of the node's 8 GPUs. 2k answers instead of 1k at a 12.5k
 * prompt keep the 2^29-byte class (2 x 14.8k tokens); a 14.5k prompt
 * with 2k answers crosses into 2^30 and doubles them. */
static void test_host_at_save(void **state)
{
	struct plan_fit_input in;
	struct plan_fit f1, f2;

	(void)state;
	fx_field_setting(&in, 3, 8);
	in.cutoff_len = 12800 + 1024;
	plan_fit_plan(&in, &f1);
	assert_true(f1.host_unsloth == 8 * 80.0 * 536870912);
	assert_true(f1.host_unsloth_cached == 2 * f1.host_unsloth);
	within((uint64_t)(f1.host_at_save / GIB), 700, 720);
	in.cutoff_len = 12800 + 2048;
	plan_fit_plan(&in, &f2);
	assert_true(f2.host_at_save == f1.host_at_save);
	in.cutoff_len = 14500 + 2048;
	plan_fit_plan(&in, &f2);
	assert_true(f2.host_unsloth == 2 * f1.host_unsloth);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calibration_offload),
		cmocka_unit_test(test_calibration_gap),
		cmocka_unit_test(test_calibration_assumed),
		cmocka_unit_test(test_node_sensitivity),
		cmocka_unit_test(test_notes_as_characters),
		cmocka_unit_test(test_notes_as_tokens),
		cmocka_unit_test(test_host_at_save),
	};

	return cmocka_run_group_tests_name("plan_seqfit", tests, NULL, NULL);
}
