/* Unit tests: activation memory (plan_activation.h) against Korthikanti
 * et al.'s formula, hand counts of the Qwen2 layer and the measurements
 * of bench/dpo_step_memory.py (docs/memory.md). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "model_fixture.h"
#include "plan_activation.h"

/* Korthikanti et al. 2022, section 4.1, on the paper's GPT-3 175B
 * (Table 3: a = 96, h = 12288, s = 2048), b = 1: sbh(34 + 5as/h) =
 * 2048 * 12288 * 114 bytes, and 34sbh when attention stores no s^2. */
static void test_korthikanti_gpt3(void **state)
{
	(void)state;
	assert_true(plan_korthikanti_layer_bytes(2048, 1, 12288, 96, 0) ==
		    2048.0 * 12288 * 114);
	assert_true(plan_korthikanti_layer_bytes(2048, 1, 12288, 96, 1) ==
		    2048.0 * 12288 * 34);
}

/* The Qwen2 layer counted by hand (docs/memory.md), h = 8192, i = 29568,
 * 64 heads: sdpa without Liger stores 26h + 8i + 4a = 449,792 bytes per
 * token; Liger saves 2i in the MLP and 8h in the norms; fa2 keeps k and
 * v at 8 KV heads (4 * 1024 instead of 4 * 8192); eager stores 6 bytes
 * per head and key position instead of the log-sum-exp. Transients:
 * 4h + 4i in a layer's backward, 8h + 6i in a forward without
 * gradients. */
static void test_qwen2_layer(void **state)
{
	struct plan_fit_input in;

	(void)state;
	fx_field_setting(&in, 1, 8);
	assert_true(plan_act_layer_saved_bytes(&in.act, 4096) == 449792.0);
	assert_true(plan_act_layer_transient_bytes(&in.act, 4096, 1) ==
		    4.0 * 8192 + 4.0 * 29568);
	assert_true(plan_act_layer_transient_bytes(&in.act, 4096, 0) ==
		    8.0 * 8192 + 6.0 * 29568);
	in.act.liger = 1;
	assert_true(plan_act_layer_saved_bytes(&in.act, 4096) ==
		    449792.0 - 2 * 29568 - 8 * 8192);
	in.act.liger = 0;
	in.act.attn = PLAN_ATTN_FA2;
	assert_true(plan_act_layer_saved_bytes(&in.act, 4096) ==
		    449792.0 - 4 * 7168);
	in.act.attn = PLAN_ATTN_EAGER;
	assert_true(plan_act_layer_saved_bytes(&in.act, 4096) ==
		    449792.0 - 4 * 64 + 6.0 * 64 * 4096);
	assert_true(plan_act_layer_transient_bytes(&in.act, 4096, 1) ==
		    4.0 * 8192 + 4.0 * 29568 + 4.0 * 64 * 4096);
}

/* DPO logits: 20 bytes per token and vocabulary entry with a reference
 * model, 12 without; at 8k + 1k tokens and two rows, 56 GB, more than
 * the checkpointed inputs (2 h L bytes per token, 24 GB). */
static void test_dpo_logits(void **state)
{
	struct plan_fit_input in;
	struct plan_act_terms t;

	(void)state;
	fx_field_setting(&in, 1, 8);
	plan_act_terms(&in.act, 9216, &t);
	assert_true(t.tokens == 18432);
	assert_true(t.logits == 20.0 * 18432 * 152064);
	assert_true(t.ckpt_inputs == 2.0 * 8192 * 80 * 18432);
	assert_int_equal(t.phase, PLAN_PHASE_LOGITS);
	assert_true(t.recompute == 0);
	in.act.reference = 0;
	plan_act_terms(&in.act, 9216, &t);
	assert_true(t.logits == 12.0 * 18432 * 152064);
	/* unsloth: the inputs leave the GPU for 80 pinned blocks of
	 * 2^29 bytes (301,989,888 rounded up) */
	in.act.unsloth_gc = 1;
	plan_act_terms(&in.act, 9216, &t);
	assert_true(t.ckpt_inputs == 0);
	assert_true(t.host_unsloth == 80.0 * 536870912);
	/* eager attention at 8k: a layer's scores, not the logits, are
	 * the peak; with a reference model, in its forward */
	in.act.attn = PLAN_ATTN_EAGER;
	plan_act_terms(&in.act, 9216, &t);
	assert_int_equal(t.phase, PLAN_PHASE_BACKWARD);
	assert_true(t.logits == 0 && t.head == 0);
	in.act.reference = 1;
	plan_act_terms(&in.act, 9216, &t);
	assert_int_equal(t.phase, PLAN_PHASE_REF_LAYER);
	assert_true(t.logits == 8.0 * 18432 * 152064);
}

/* bench/dpo_step_memory.py's measurements of LLaMA-Factory 0.9.5's DPO
 * step (its get_batch_loss_metrics and backward, torch 2.13 on the CPU,
 * one padded pair; docs/memory.md), bytes above what was alive before
 * the step. The model may lie at most 1% below a measurement (what the
 * profiler sees of the allocator) and 5% above it. */
static const struct plan_model_config bench_layers = {
	.model_type = "qwen2", .hidden_size = 1024, .num_hidden_layers = 8,
	.intermediate_size = 2816, .vocab_size = 512,
	.num_attention_heads = 16, .num_key_value_heads = 4, .head_dim = 64,
	.max_position_embeddings = 8192, .qkv_bias = 1};
static const struct plan_model_config bench_logits = {
	.model_type = "qwen2", .hidden_size = 256, .num_hidden_layers = 2,
	.intermediate_size = 704, .vocab_size = 152064,
	.num_attention_heads = 4, .num_key_value_heads = 2, .head_dim = 64,
	.max_position_embeddings = 8192, .qkv_bias = 1};

static void measured(const struct plan_model_config *m, int grad_ckpt,
		     double seq, double bytes, enum plan_act_phase phase)
{
	struct plan_act_input in = {.model = m, .batch = 1, .pairwise = 1,
				  .reference = 1, .grad_ckpt = grad_ckpt,
				  .attn = PLAN_ATTN_SDPA};
	struct plan_act_terms t;

	plan_act_terms(&in, seq, &t);
	within(t.peak, 0.99 * bytes, 1.05 * bytes);
	assert_int_equal(t.phase, phase);
}

static void test_against_measured_step(void **state)
{
	(void)state;
	/* 2970.2 MiB, of which 20.00 bytes per token and vocabulary
	 * entry at the forward's peak */
	measured(&bench_logits, 1, 512, 2970.2 * 1048576, PLAN_PHASE_LOGITS);
	/* 160.5 MiB: 8 checkpointed inputs and the last layer's
	 * recompute and backward */
	measured(&bench_layers, 1, 1024, 160.5 * 1048576, PLAN_PHASE_BACKWARD);
	/* 844.7 MiB: 8 layers' stored activations (49,224 bytes per token
	 * and layer measured, 49,216 counted) and the reference's layer */
	measured(&bench_layers, 0, 1024, 844.7 * 1048576,
		 PLAN_PHASE_REF_LAYER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_korthikanti_gpt3),
		cmocka_unit_test(test_qwen2_layer),
		cmocka_unit_test(test_dpo_logits),
		cmocka_unit_test(test_against_measured_step),
	};

	return cmocka_run_group_tests_name("plan_activation", tests, NULL,
					   NULL);
}
