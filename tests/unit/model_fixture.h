/*
 * model_fixture.h: model shapes and run settings for the tests of the
 * memory model (plugin/plan) and of the config.json reader
 * (plugin/lf/lf_model.h). Include after cmocka.h.
 *
 * fx_model(dir): the shape lf_model_read gives for
 * tests/lf/<dir>/config.json (the published dimensions of the model
 * cards, tests/lf/README.md), written out so that the plan's tests need
 * no reader; test_lf_model checks that the reader gives exactly these.
 *
 * fx_field_setting: the three settings of the field notes of full DPO of
 * Qwen2-72B (docs/memory.md): 1 ZeRO-3 with LLaMA-Factory's default
 * gradient checkpointing; 2 + Liger + unsloth's checkpointing; 3 + CPU
 * offload + expandable_segments. Batch 1, sdpa, 8 x 80 GiB per node.
 */
#ifndef DISTENV_MODEL_FIXTURE_H
#define DISTENV_MODEL_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "plan_seqfit.h"

#define GIB 1073741824.0

/* The shape of tests/lf/<dir>/config.json; fails the test for another
 * dir. */
static inline const struct plan_model_config *fx_model(const char *dir)
{
	static const struct {
		const char *dir;
		struct plan_model_config cfg;
	} models[] = {
		{"qwen2-72b",
		 {.model_type = "qwen2", .hidden_size = 8192,
		  .num_hidden_layers = 80, .intermediate_size = 29568,
		  .vocab_size = 152064, .num_attention_heads = 64,
		  .num_key_value_heads = 8, .head_dim = 128,
		  .max_position_embeddings = 32768, .qkv_bias = 1}},
		{"llama3-8b",
		 {.model_type = "llama", .hidden_size = 4096,
		  .num_hidden_layers = 32, .intermediate_size = 14336,
		  .vocab_size = 128256, .num_attention_heads = 32,
		  .num_key_value_heads = 8, .head_dim = 128,
		  .max_position_embeddings = 8192}},
		{"llama3-70b",
		 {.model_type = "llama", .hidden_size = 8192,
		  .num_hidden_layers = 80, .intermediate_size = 28672,
		  .vocab_size = 128256, .num_attention_heads = 64,
		  .num_key_value_heads = 8, .head_dim = 128,
		  .max_position_embeddings = 8192}},
		{"qwen2.5-7b",
		 {.model_type = "qwen2", .hidden_size = 3584,
		  .num_hidden_layers = 28, .intermediate_size = 18944,
		  .vocab_size = 152064, .num_attention_heads = 28,
		  .num_key_value_heads = 4, .head_dim = 128,
		  .max_position_embeddings = 131072, .qkv_bias = 1}},
	};
	size_t i;

	for (i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (!strcmp(models[i].dir, dir))
			return &models[i].cfg;
	fail_msg("no model fixture %s", dir);
	return NULL;
}

/* v in [lo, hi], saying the value when not (cmocka 2 deprecates
 * assert_in_range) */
#define within(v, lo, hi) within_at((uint64_t)(v), (uint64_t)(lo), \
				    (uint64_t)(hi), #v, __LINE__)
static inline void within_at(uint64_t v, uint64_t lo, uint64_t hi,
			     const char *what, int line)
{
	if (v < lo || v > hi)
		fprintf(stderr, "line %d: %s = %llu, not in %llu-%llu\n", line,
			what, (unsigned long long)v, (unsigned long long)lo,
			(unsigned long long)hi);
	assert_true(v >= lo && v <= hi);
}

/* Setting which (1-3) of the field notes, full DPO of Qwen2-72B on
 * nnodes nodes, 1024-token answers. */
static inline void fx_field_setting(struct plan_fit_input *in, int which,
				    uint32_t nnodes)
{
	const struct plan_model_config *m = fx_model("qwen2-72b");

	memset(in, 0, sizeof(*in));
	in->act.model = m;
	in->act.batch = 1;
	in->act.pairwise = 1;
	in->act.reference = 1;
	in->act.grad_ckpt = 1;
	in->act.attn = PLAN_ATTN_SDPA;
	in->act.liger = in->act.unsloth_gc = which >= 2;
	in->mem.params = (double)plan_model_params(m);
	in->mem.largest_layer = (double)plan_model_largest_layer(m);
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

#endif
