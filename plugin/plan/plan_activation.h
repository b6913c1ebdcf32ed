/*
 * plan_activation.h: GPU memory of the activations of one LLaMA-Factory
 * training step of a Llama/Qwen2-style decoder, and the host memory
 * unsloth's gradient checkpointing moves them to. Pure: a model shape
 * (plan_model.h), the batch, the switches and a row length in tokens in;
 * bytes out, per GPU unless a field says otherwise. No errors: the
 * caller passes a model and batch >= 1. docs/memory.md derives every
 * term.
 *
 * Sources of the rules:
 * - per-layer activations: Korthikanti et al. 2022, "Reducing Activation
 *   Recomputation in Large Transformer Models" (arXiv 2205.05198),
 *   section 4.1: sbh(34 + 5as/h) bytes per layer for 16-bit activations
 *   of a GPT layer (plan_korthikanti_layer_bytes).
 *   plan_act_layer_saved_bytes counts the same way for the layer
 *   transformers builds (models/qwen2/modeling_qwen2.py, 5.6.0): RMSNorm
 *   instead of LayerNorm, a gated MLP of width intermediate_size,
 *   grouped-query attention, no dropout;
 * - DPO's logits: LLaMA-Factory 0.9.5 train/dpo/trainer.py
 *   (concatenated_forward casts the logits to fp32; get_batch_loss_metrics
 *   runs the reference forward while the policy's logits are held) and
 *   train/trainer_utils.py get_batch_logps (log_softmax over the whole
 *   vocabulary for every token, prompt included);
 * - Liger: LLaMA-Factory model/model_utils/liger_kernel.py turns the
 *   fused linear cross-entropy off for every stage but pt and sft
 *   (require_logits), so for DPO Liger changes RMSNorm and SwiGLU only;
 * - gradient checkpointing: on unless disable_gradient_checkpointing
 *   (LLaMA-Factory model/model_utils/checkpointing.py), which keeps each
 *   layer's input; use_unsloth_gc moves that input to host memory with
 *   a non-blocking copy, which PyTorch allocates pinned
 *   (aten/src/ATen/native/TensorConversions.cpp, _to_copy) from its
 *   caching host allocator, which rounds every block up to a power of
 *   two and keeps freed blocks (aten/src/ATen/core/CachingHostAllocator.h).
 */
#ifndef DISTENV_PLAN_ACTIVATION_H
#define DISTENV_PLAN_ACTIVATION_H

#include <stdint.h>

#include "plan_model.h"

/* LLaMA-Factory's flash_attn: auto and sdpa select PyTorch's SDPA,
 * disabled selects eager, fa2/fa3 FlashAttention. */
enum plan_attn {
	PLAN_ATTN_SDPA = 0,
	PLAN_ATTN_EAGER,
	PLAN_ATTN_FA2
};

struct plan_act_input {
	const struct plan_model_config *model; /* shape (plan_model.h) */
	uint32_t batch; /* per_device_train_batch_size, examples >= 1 */
	int pairwise; /* DPO, ORPO, SimPO: chosen + rejected rows */
	int reference; /* a reference model's forward in the step */
	int grad_ckpt; /* gradient checkpointing on */
	int liger; /* enable_liger_kernel */
	int unsloth_gc; /* use_unsloth_gc (with grad_ckpt) */
	int model_ce; /* the model computes its own cross-entropy in each
		       * forward (plan_stack_model_ce, plan_stack.h) */
	enum plan_attn attn;
};

/* The phase of the step whose memory is the peak (docs/memory.md). */
enum plan_act_phase {
	PLAN_PHASE_LOGITS = 0, /* a forward's logits and log_softmax */
	PLAN_PHASE_REF_LAYER, /* a layer of the reference model's forward,
			      * while the policy holds its logits */
	PLAN_PHASE_BACKWARD /* a layer's backward (recomputed first
			      * under gradient checkpointing) */
};

/* Bytes per GPU at the step's peak for rows of seq tokens each. */
struct plan_act_terms {
	double tokens; /* rows x seq */
	double ckpt_inputs; /* checkpointed layer inputs kept on the GPU */
	double layers; /* without checkpointing: every layer's
			     * stored activations */
	double recompute; /* the layer at work at the peak: the
			     * reference's forward, or a layer's backward
			     * (its recomputed activations, gradients) */
	double logits; /* logits held at the peak */
	double head; /* final norm and lm_head input held at the
			     * peak */
	double attn_mask; /* the 4D mask of sdpa/eager (padding) */
	double peak; /* the largest phase, all of the above in it */
	enum plan_act_phase phase; /* which phase that is */
	double host_unsloth; /* per GPU: pinned blocks in use */
	double host_unsloth_cached; /* per GPU: the allocator's cache at
				     * worst (every smaller power-of-two
				     * class also kept) */
};

/* Korthikanti et al. 2022, section 4.1, no parallelism: activations of
 * one GPT layer in bytes, s tokens, b sequences, h hidden, a heads;
 * flash: the attention's s^2 terms not stored (34sbh). */
double plan_korthikanti_layer_bytes(double s, double b, double h, double a,
				    int flash);

/* One decoder layer's activations stored for its backward, in bytes per
 * token, for rows of seq tokens (eager attention stores per-token terms
 * that grow with seq). Measured with bench/dpo_step_memory.py: the
 * slope per layer matches to 0.02%. */
double plan_act_layer_saved_bytes(const struct plan_act_input *in, double seq);

/* Bytes per token alive only while one layer runs: its backward's
 * gradients (backward != 0), or its forward without gradients (the
 * reference model's), beside what the layer stores or held input. */
double plan_act_layer_transient_bytes(const struct plan_act_input *in,
				      double seq, int backward);

/* Bytes of logits per token x vocabulary entry at the peak: 12 for the
 * policy alone (fp32 copy, log_softmax's contiguous input and output),
 * 20 when the reference forward runs while the policy holds 8 (its fp32
 * logits and the saved log_softmax output); 2 more each when the model
 * computes its own cross-entropy (model_ce: 14 and 22). docs/memory.md. */
double plan_act_logit_bytes(const struct plan_act_input *in);

/* All terms for rows of seq tokens. in->model must be set, batch >= 1. */
void plan_act_terms(const struct plan_act_input *in, double seq,
		    struct plan_act_terms *out);

/* The smallest power of two >= x (x >= 1), as the host allocator. */
double plan_pow2_ceil(double x);

#endif
