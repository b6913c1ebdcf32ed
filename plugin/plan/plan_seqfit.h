/*
 * plan_seqfit.h: the longest sequence (prompt + answer) one training step
 * fits on the GPU, the per-term breakdown, host memory at save with the
 * activations unsloth's checkpointing moves there, and which switch
 * would buy the most. Pure: the inputs of plan_activation.h and
 * plan_memory.h and ZeRO-3's buffer sizes (elements) in; bytes and
 * tokens out; no errors (the caller sets the model and a GPU size > 0).
 * docs/memory.md derives and calibrates it.
 *
 * GPU per step = model states (plan_memory.h: DeepSpeed's estimator and
 * the frozen reference) + ZeRO-3 live parameters and buckets + the
 * activations (plan_activation.h) + a runtime reserve (CUDA context, NCCL,
 * cuBLAS workspaces: PLAN_GPU_RUNTIME_RESERVE, our assumption). It must
 * fit into the usable part of the GPU, which the caching allocator's
 * fragmentation makes uncertain: a band of fractions, narrow with
 * PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch docs "CUDA
 * semantics", memory management), wide without. The limit is given for
 * the band's ends and its middle.
 *
 * ZeRO-3 (DeepSpeed docs "ZeRO", config keys): up to
 * stage3_max_live_parameters parameters gathered at once (16-bit), a
 * prefetch of stage3_prefetch_bucket_size and a gradient bucket of
 * reduce_bucket_size elements; "auto" is what transformers fills
 * (integrations/deepspeed.py: h*h, 0.9*h*h).
 *
 * The prompt: LLaMA-Factory 0.9.5 data/processor/pairwise.py cuts prompt
 * and the longer answer together to cutoff_len (infer_seqlen), and pads
 * chosen and rejected to the same length, so a row is at most
 * cutoff_len tokens and the longest prompt is the longest row minus the
 * answer length.
 */
#ifndef DISTENV_PLAN_SEQFIT_H
#define DISTENV_PLAN_SEQFIT_H

#include <stdint.h>

#include "plan_activation.h"
#include "plan_memory.h"

#define PLAN_GPU_RUNTIME_RESERVE (1.0 * 1073741824.0)
/* usable fraction of the GPU after fragmentation: [lo, hi] */
#define PLAN_FRAG_LO 0.80
#define PLAN_FRAG_HI 0.95
#define PLAN_FRAG_EXPANDABLE_LO 0.95
#define PLAN_FRAG_EXPANDABLE_HI 0.99
/* answer length assumed when none is given (the field notes' cap) */
#define PLAN_DEFAULT_ANSWER_TOKENS 1024

enum plan_gpu_term {
	PLAN_TERM_MODEL_STATES = 0, /* DeepSpeed's estimator */
	PLAN_TERM_REFERENCE, /* frozen weights */
	PLAN_TERM_ZERO3_LIVE, /* gathered parameters and buckets */
	PLAN_TERM_CKPT_INPUTS,
	PLAN_TERM_LAYERS,
	PLAN_TERM_RECOMPUTE,
	PLAN_TERM_LOGITS,
	PLAN_TERM_HEAD,
	PLAN_TERM_ATTN_MASK,
	PLAN_TERM_RUNTIME,
	PLAN_TERM_COUNT
};

/* Names of the terms, for the table and the JSON keys. */
extern const char *const plan_gpu_term_names[PLAN_TERM_COUNT];

enum plan_switch {
	PLAN_SW_OFFLOAD = 0,
	PLAN_SW_LIGER,
	PLAN_SW_UNSLOTH,
	PLAN_SW_EXPANDABLE,
	PLAN_SW_COUNT
};

extern const char *const plan_switch_names[PLAN_SW_COUNT];

struct plan_fit_input {
	struct plan_act_input act;
	struct plan_mem_input mem; /* gpu_mem must be > 0 */
	double max_live; /* stage3_max_live_parameters, 0: 1e9 */
	double prefetch_bucket; /* 0: auto (0.9 h^2) */
	double reduce_bucket; /* 0: auto (h^2) */
	int expandable; /* expandable_segments:True in effect */
	uint32_t answer_tokens; /* 0: PLAN_DEFAULT_ANSWER_TOKENS */
	uint32_t cutoff_len; /* 0: not set; the breakdown is at the
				   * longest row that fits */
};

struct plan_fit {
	double gpu_terms[PLAN_TERM_COUNT]; /* bytes per GPU at breakdown_seq */
	double gpu_total;
	double breakdown_seq; /* cutoff_len, or max_seq */
	double usable_lo, usable_mid, usable_hi; /* bytes */
	/* longest row in tokens (0: not even one token fits) */
	uint32_t max_seq_lo, max_seq, max_seq_hi;
	uint32_t answer_tokens;
	/* longest prompt: max_seq - answer, 0 when none */
	uint32_t max_prompt_lo, max_prompt, max_prompt_hi;
	/* host per node, bytes: activations moved by unsloth (all GPUs of
	 * the node, at breakdown_seq), and node 0 at save (steady + those
	 * + the 16-bit gather); _cached: the allocator's worst case */
	double host_unsloth, host_unsloth_cached;
	double host_at_save, host_at_save_cached;
	/* max_prompt with each switch turned on (-1: already on) */
	int64_t switch_prompt[PLAN_SW_COUNT];
	int best_switch; /* -1: none helps */
};

/* Plan. in->act.model set, in->mem.gpu_mem > 0, nnodes and
 * gpus_per_node >= 1. */
void plan_fit_plan(const struct plan_fit_input *in, struct plan_fit *out);

/* GPU bytes per GPU of one step with rows of seq tokens (the sum of the
 * terms plan_fit_plan reports). */
double plan_fit_gpu_bytes(const struct plan_fit_input *in, double seq,
			  double terms[PLAN_TERM_COUNT]);

#endif
