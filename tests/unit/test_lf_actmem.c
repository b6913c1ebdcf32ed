/* Unit tests: activation memory (lf_actmem.h) against Korthikanti et
 * al.'s formula and hand counts, and the longest prompt (lf_seqfit.h)
 * calibrated on field notes of full DPO of Qwen2-72B (docs/memory.md). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lf_seqfit.h"

#define GIB 1073741824.0

/* Qwen2-72B, config.json (tests/lf/qwen2-72b) */
/* v in [lo, hi], saying the value when not (cmocka 2 deprecates
 * assert_in_range) */
#define within(v, lo, hi) within_at((uint64_t)(v), (uint64_t)(lo), \
				    (uint64_t)(hi), #v, __LINE__)
static void within_at(uint64_t v, uint64_t lo, uint64_t hi, const char *what,
		      int line)
{
	if (v < lo || v > hi)
		fprintf(stderr, "line %d: %s = %llu, not in %llu-%llu\n", line,
			what, (unsigned long long)v, (unsigned long long)lo,
			(unsigned long long)hi);
	assert_true(v >= lo && v <= hi);
}

static const struct lf_model_config qwen2_72b = {
	.model_type = "qwen2", .hidden_size = 8192, .num_hidden_layers = 80,
	.intermediate_size = 29568, .vocab_size = 152064,
	.num_attention_heads = 64, .num_key_value_heads = 8, .head_dim = 128,
	.max_position_embeddings = 32768, .qkv_bias = 1};

/* The three settings of the field notes: 1 ZeRO-3 with LLaMA-Factory's
 * default gradient checkpointing; 2 + Liger + unsloth's checkpointing;
 * 3 + CPU offload + expandable_segments. Full DPO, batch 1, sdpa. */
static void setting(struct lf_fit_input *in, int which, uint32_t nnodes)
{
	memset(in, 0, sizeof(*in));
	in->act.model = &qwen2_72b;
	in->act.batch = 1;
	in->act.pairwise = 1;
	in->act.reference = 1;
	in->act.grad_ckpt = 1;
	in->act.attn = LF_ATTN_SDPA;
	in->act.liger = in->act.unsloth_gc = which >= 2;
	in->mem.params = (double)lf_model_params(&qwen2_72b);
	in->mem.largest_layer = (double)lf_model_largest_layer(&qwen2_72b);
	in->mem.trainable = in->mem.params;
	in->mem.nnodes = nnodes;
	in->mem.gpus_per_node = 8;
	in->mem.reference_model = 1;
	in->mem.gather_on_save = 1;
	in->mem.gpu_mem = 80 * GIB;
	in->mem.offload_optimizer = in->mem.offload_param = which >= 3;
	in->expandable = which >= 3;
	in->answer_tokens = 1024;
}

static uint32_t prompt_with(int which, uint32_t nnodes, uint32_t answer,
			    struct lf_fit *f)
{
	struct lf_fit_input in;

	setting(&in, which, nnodes);
	in.answer_tokens = answer;
	lf_fit_plan(&in, f);
	return f->max_prompt;
}

static uint32_t prompt_at(int which, uint32_t nnodes, struct lf_fit *f)
{
	return prompt_with(which, nnodes, 1024, f);
}

/* Korthikanti et al. 2022, section 4.1, on the paper's GPT-3 175B
 * (Table 3: a = 96, h = 12288, s = 2048), b = 1: sbh(34 + 5as/h) =
 * 2048 * 12288 * 114 bytes, and 34sbh when attention stores no s^2. */
static void test_korthikanti_gpt3(void **state)
{
	(void)state;
	assert_true(lf_korthikanti_layer_bytes(2048, 1, 12288, 96, 0) ==
		    2048.0 * 12288 * 114);
	assert_true(lf_korthikanti_layer_bytes(2048, 1, 12288, 96, 1) ==
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
	struct lf_fit_input in;

	(void)state;
	setting(&in, 1, 8);
	assert_true(lf_act_layer_saved_bytes(&in.act, 4096) == 449792.0);
	assert_true(lf_act_layer_transient_bytes(&in.act, 4096, 1) ==
		    4.0 * 8192 + 4.0 * 29568);
	assert_true(lf_act_layer_transient_bytes(&in.act, 4096, 0) ==
		    8.0 * 8192 + 6.0 * 29568);
	in.act.liger = 1;
	assert_true(lf_act_layer_saved_bytes(&in.act, 4096) ==
		    449792.0 - 2 * 29568 - 8 * 8192);
	in.act.liger = 0;
	in.act.attn = LF_ATTN_FA2;
	assert_true(lf_act_layer_saved_bytes(&in.act, 4096) ==
		    449792.0 - 4 * 7168);
	in.act.attn = LF_ATTN_EAGER;
	assert_true(lf_act_layer_saved_bytes(&in.act, 4096) ==
		    449792.0 - 4 * 64 + 6.0 * 64 * 4096);
	assert_true(lf_act_layer_transient_bytes(&in.act, 4096, 1) ==
		    4.0 * 8192 + 4.0 * 29568 + 4.0 * 64 * 4096);
}

/* DPO logits: 20 bytes per token and vocabulary entry with a reference
 * model, 12 without; at 8k + 1k tokens and two rows, 56 GB, more than
 * the checkpointed inputs (2 h L bytes per token, 24 GB). */
static void test_dpo_logits(void **state)
{
	struct lf_fit_input in;
	struct lf_act_terms t;

	(void)state;
	setting(&in, 1, 8);
	lf_act_terms(&in.act, 9216, &t);
	assert_true(t.tokens == 18432);
	assert_true(t.logits == 20.0 * 18432 * 152064);
	assert_true(t.ckpt_inputs == 2.0 * 8192 * 80 * 18432);
	assert_int_equal(t.phase, LF_PHASE_LOGITS);
	assert_true(t.recompute == 0);
	in.act.reference = 0;
	lf_act_terms(&in.act, 9216, &t);
	assert_true(t.logits == 12.0 * 18432 * 152064);
	/* unsloth: the inputs leave the GPU for 80 pinned blocks of
	 * 2^29 bytes (301,989,888 rounded up) */
	in.act.unsloth_gc = 1;
	lf_act_terms(&in.act, 9216, &t);
	assert_true(t.ckpt_inputs == 0);
	assert_true(t.host_unsloth == 80.0 * 536870912);
	/* eager attention at 8k: a layer's scores, not the logits, are
	 * the peak; with a reference model, in its forward */
	in.act.attn = LF_ATTN_EAGER;
	lf_act_terms(&in.act, 9216, &t);
	assert_int_equal(t.phase, LF_PHASE_BACKWARD);
	assert_true(t.logits == 0 && t.head == 0);
	in.act.reference = 1;
	lf_act_terms(&in.act, 9216, &t);
	assert_int_equal(t.phase, LF_PHASE_REF_LAYER);
	assert_true(t.logits == 8.0 * 18432 * 152064);
}

/* bench/dpo_step_memory.py's measurements of LLaMA-Factory 0.9.5's DPO
 * step (its get_batch_loss_metrics and backward, torch 2.13 on the CPU,
 * one padded pair; docs/memory.md), bytes above what was alive before
 * the step. The model may lie at most 1% below a measurement (what the
 * profiler sees of the allocator) and 5% above it. */
static const struct lf_model_config bench_layers = {
	.model_type = "qwen2", .hidden_size = 1024, .num_hidden_layers = 8,
	.intermediate_size = 2816, .vocab_size = 512,
	.num_attention_heads = 16, .num_key_value_heads = 4, .head_dim = 64,
	.max_position_embeddings = 8192, .qkv_bias = 1};
static const struct lf_model_config bench_logits = {
	.model_type = "qwen2", .hidden_size = 256, .num_hidden_layers = 2,
	.intermediate_size = 704, .vocab_size = 152064,
	.num_attention_heads = 4, .num_key_value_heads = 2, .head_dim = 64,
	.max_position_embeddings = 8192, .qkv_bias = 1};

static void measured(const struct lf_model_config *m, int grad_ckpt,
		     double seq, double bytes, enum lf_act_phase phase)
{
	struct lf_act_input in = {.model = m, .batch = 1, .pairwise = 1,
				  .reference = 1, .grad_ckpt = grad_ckpt,
				  .attn = LF_ATTN_SDPA};
	struct lf_act_terms t;

	lf_act_terms(&in, seq, &t);
	within(t.peak, 0.99 * bytes, 1.05 * bytes);
	assert_int_equal(t.phase, phase);
}

static void test_against_measured_step(void **state)
{
	(void)state;
	/* 2970.2 MiB, of which 20.00 bytes per token and vocabulary
	 * entry at the forward's peak */
	measured(&bench_logits, 1, 512, 2970.2 * 1048576, LF_PHASE_LOGITS);
	/* 160.5 MiB: 8 checkpointed inputs and the last layer's
	 * recompute and backward */
	measured(&bench_layers, 1, 1024, 160.5 * 1048576, LF_PHASE_BACKWARD);
	/* 844.7 MiB: 8 layers' stored activations (49,224 bytes per token
	 * and layer measured, 49,216 counted) and the reference's layer */
	measured(&bench_layers, 0, 1024, 844.7 * 1048576,
		 LF_PHASE_REF_LAYER);
}

/* Field notes, 8 x 80 GB per node. Setting 3 does not depend on the
 * node count (offload leaves 4L on the GPU): at least 10k (0.8 x the
 * 12.5k that trained); the model extends it to 11.1k (band 10.9k-11.4k
 * with expandable segments). */
static void test_calibration_offload(void **state)
{
	struct lf_fit f;
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
	struct lf_fit f;

	(void)state;
	within(prompt_at(1, 8, &f), 3900, 4100);
	within(f.max_prompt_lo, 3100, 3300);
	within(f.max_prompt_hi, 4600, 4800);
	assert_int_equal(f.best_switch, LF_SW_OFFLOAD);
	assert_true(prompt_at(1, 32, &f) < 0.8 * 8192);
	within(prompt_at(2, 8, &f), 6000, 6300);
	assert_int_equal(f.best_switch, LF_SW_OFFLOAD);
	/* Liger alone buys little: DPO keeps its logits */
	prompt_at(1, 8, &f);
	within(f.switch_prompt[LF_SW_LIGER], f.max_prompt,
			f.max_prompt + 100);
	assert_true(f.switch_prompt[LF_SW_UNSLOTH] > f.max_prompt + 1500);
}

/* The notes leave the node count and the longest prompts' answer
 * length open. With 32 nodes and 256-token answers the three points
 * hold: setting 1 within 20% of 8k (8,192), settings 2 and 3 at least
 * 0.8 x 10k and 0.8 x 12.5k. With 512-token answers setting 1 falls
 * short; with 1k answers no node count reaches it (docs/memory.md). */
static void test_calibration_assumed(void **state)
{
	struct lf_fit f;

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

/* Sensitivity to the node count: the model states shrink with N. */
static void test_node_sensitivity(void **state)
{
	struct lf_fit f;

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
	struct lf_fit_input in;
	struct lf_fit f1, f2;

	(void)state;
	setting(&in, 3, 8);
	in.cutoff_len = 12800 + 1024;
	lf_fit_plan(&in, &f1);
	assert_true(f1.host_unsloth == 8 * 80.0 * 536870912);
	assert_true(f1.host_unsloth_cached == 2 * f1.host_unsloth);
	within((uint64_t)(f1.host_at_save / GIB), 700, 720);
	in.cutoff_len = 12800 + 2048;
	lf_fit_plan(&in, &f2);
	assert_true(f2.host_at_save == f1.host_at_save);
	in.cutoff_len = 14500 + 2048;
	lf_fit_plan(&in, &f2);
	assert_true(f2.host_unsloth == 2 * f1.host_unsloth);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_korthikanti_gpt3),
		cmocka_unit_test(test_qwen2_layer),
		cmocka_unit_test(test_dpo_logits),
		cmocka_unit_test(test_against_measured_step),
		cmocka_unit_test(test_calibration_offload),
		cmocka_unit_test(test_calibration_gap),
		cmocka_unit_test(test_calibration_assumed),
		cmocka_unit_test(test_node_sensitivity),
		cmocka_unit_test(test_host_at_save),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
