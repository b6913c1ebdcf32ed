/*
 * plan_model.h: the shape of a decoder-only transformer and its parameter
 * counts, and the two sizes a user types for the memory plan. Pure: no
 * file is read here (plugin/lf/lf_model.h fills the shape from the
 * model's config.json).
 *
 * Counts, for Llama/Qwen2/Mistral-style architectures (transformers'
 * modeling_llama.py / modeling_qwen2.py): embedding, per layer q/k/v/o
 * projections with grouped-query attention, a gated MLP of three
 * matrices, two RMSNorms; a final norm; lm_head unless the embeddings are
 * tied. Qwen2 adds biases on q, k and v. Results in parameters.
 *
 * Also the "largest layer" DeepSpeed's ZeRO-3 estimator needs: the most
 * parameters one module holds directly (deepspeed/runtime/zero/stage3.py,
 * estimate_zero3_model_states_mem_needs_all_live), here the larger of
 * the embedding (vocab x hidden) and one MLP matrix.
 */
#ifndef DISTENV_PLAN_MODEL_H
#define DISTENV_PLAN_MODEL_H

#include <stdint.h>

#include "distenv_error.h"

struct plan_model_config {
	char model_type[64]; /* "llama", "qwen2", ... ("" if absent) */
	uint64_t hidden_size;
	uint64_t num_hidden_layers;
	uint64_t intermediate_size;
	uint64_t vocab_size;
	uint64_t num_attention_heads;
	uint64_t num_key_value_heads; /* = heads when absent (no GQA) */
	uint64_t head_dim; /* = hidden / heads when absent */
	uint64_t max_position_embeddings; /* 0 when absent */
	int tie_word_embeddings; /* transformers' default: false for
					   * Llama/Qwen2 configs */
	int qkv_bias; /* qwen2: 1; attention_bias key */
};

/* Total parameters, and parameters of the largest single module. */
uint64_t plan_model_params(const struct plan_model_config *cfg);
uint64_t plan_model_largest_layer(const struct plan_model_config *cfg);

/*
 * LoRA adapter parameters for rank r on every linear layer of the
 * decoder (LLaMA-Factory's lora_target: all): r x (in + out) per matrix.
 */
uint64_t plan_model_lora_params(const struct plan_model_config *cfg,
				uint64_t rank);

/*
 * A parameter count as a user writes it: "70B", "7.6B", "500M", "1.5e3M"
 * (K, M, B/G, T = 1e3, 1e6, 1e9, 1e12; case-insensitive). The unit is
 * required: a bare "72" was meant as 72B and would plan for 72
 * parameters. where names the option. Errors: empty, malformed, no
 * unit, zero, over 1e15.
 */
int plan_parse_params(const char *value, const char *where, uint64_t *out,
		      struct distenv_error *err);

/*
 * A memory size: "80G", "80GiB", "141GB", "512M". K/M/G/T (with or
 * without B/iB) are binary multiples, as Slurm and nvidia-smi count. The
 * unit is required: a bare "80" meant 80G. Result in bytes, 1 MiB to
 * 1 PiB. Errors: malformed, no unit, out of range.
 */
int plan_parse_mem(const char *value, const char *where, uint64_t *bytes,
		   struct distenv_error *err);

#endif
