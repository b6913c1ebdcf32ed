/* lf_actmem.c: activation memory of a training step (rules and sources in
 * lf_actmem.h; every term derived in docs/memory.md). */
#include "lf_actmem.h"

double lf_korthikanti_layer_bytes(double s, double b, double h, double a,
				  int flash)
{
	/* attention 11sbh + 5as^2b, MLP 19sbh, two LayerNorms 4sbh */
	return s * b * h * (34 + (flash ? 0 : 5 * a * s / h));
}

double lf_act_layer_bytes(const struct lf_act_input *in, double seq)
{
	const struct lf_model_config *m = in->model;
	double h = (double)m->hidden_size, i = (double)m->intermediate_size;
	double a = (double)m->num_attention_heads;
	double hq = a * (double)m->head_dim;
	double hkv = (double)m->num_key_value_heads * (double)m->head_dim;
	double attn, mlp, norms;

	/* Attention: the normed input of q/k/v (2h), q after RoPE, k and v,
	 * the attention output and o_proj's contiguous input (2 bytes
	 * each), and FlashAttention's/SDPA's fp32 log-sum-exp (4a). */
	switch (in->attn) {
	case LF_ATTN_FA2:
		/* grouped-query heads passed as they are */
		attn = 2 * h + 2 * hq + 4 * hkv + 4 * hq + 4 * a;
		break;
	case LF_ATTN_EAGER:
		/* repeat_kv copies k and v to every head; per row the
		 * softmax keeps its fp32 output and a 16-bit copy (6as per
		 * token), and the scores pass through two 16-bit
		 * transients (4as) */
		attn = 2 * h + 2 * hq + 4 * hq + 4 * hq + 10 * a * seq;
		break;
	default:
		/* transformers integrations/sdpa_attention.py: with an
		 * attention mask (DPO pads chosen and rejected) k and v are
		 * repeated to every head (use_gqa_in_sdpa) */
		attn = 2 * h + 2 * hq + 4 * hq + 4 * hq + 4 * a;
		break;
	}
	/* Gated MLP: its normed input, gate and up outputs, SiLU(gate), the
	 * product down_proj reads. Liger's SwiGLU recomputes SiLU in the
	 * backward instead of keeping it. */
	mlp = 2 * h + (in->liger ? 6 : 8) * i;
	/* Two RMSNorms: transformers' keeps the fp32 input (4h) and the
	 * normed 16-bit copy (2h); Liger's keeps the input and a per-row
	 * rstd. */
	norms = 2 * (in->liger ? 2 * h : 6 * h);
	/* + the residual and the layer's output (4h), + the backward's
	 * transients: gradients of the hidden state in and out and of the
	 * MLP's two widest tensors (6h + 4i). */
	return attn + mlp + norms + 4 * h + 6 * h + 4 * i;
}

double lf_act_logit_bytes(const struct lf_act_input *in)
{
	/* Policy forward: fp32 logits (4; the 16-bit output is freed after
	 * the cast), log_softmax's contiguous copy of logits[:, :-1] (4)
	 * and its output (4): 12. Afterwards the policy holds 8 (the fp32
	 * logits in the returned dict, the output saved for backward). The
	 * reference forward under no_grad then peaks at 12 on top: 20.
	 * The backward of log_softmax also peaks at 12 (output, its
	 * gradient, the input's gradient). Measured on CPU with torch
	 * 2.13 and get_batch_logps: 11.95 and 19.95 (docs/memory.md). */
	return in->reference ? 20 : 12;
}

double lf_pow2_ceil(double x)
{
	double p = 1;

	while (p < x)
		p *= 2;
	return p;
}

void lf_act_terms(const struct lf_act_input *in, double seq,
		  struct lf_act_terms *out)
{
	const struct lf_model_config *m = in->model;
	double h = (double)m->hidden_size, v = (double)m->vocab_size;
	double layers = (double)m->num_hidden_layers;
	double rows = (double)in->batch * (in->pairwise ? 2 : 1);
	double t = rows * seq, layer = lf_act_layer_bytes(in, seq);
	double block = 2 * h * t; /* one layer's input, 16-bit */
	double logit_phase, layer_phase;

	out->tokens = t;
	out->ckpt_inputs = in->grad_ckpt && !in->unsloth_gc ? layers * block : 0;
	out->layers = in->grad_ckpt ? 0 : layers * layer * t;
	out->recompute = in->grad_ckpt ? layer * t : 0;
	out->logits = lf_act_logit_bytes(in) * t * v;
	/* final norm (as a layer's) and lm_head's 16-bit input */
	out->head = (in->liger ? 2 * h : 6 * h) * t + 2 * h * t;
	/* transformers masking_utils: sdpa gets a boolean (rows, 1, s, s)
	 * mask when rows are padded, eager an additive 16-bit one;
	 * FlashAttention takes none. Shared by all layers. */
	out->attn_mask = in->attn == LF_ATTN_FA2 ? 0 :
			 (in->attn == LF_ATTN_EAGER ? 2 : 1) * rows * seq * seq;
	logit_phase = out->logits + out->head;
	/* the hidden state's gradient (2h) travels through the layers */
	layer_phase = out->recompute + 2 * h * t;
	out->logits_phase = logit_phase >= layer_phase;
	out->peak = out->ckpt_inputs + out->layers + out->attn_mask +
		    (out->logits_phase ? logit_phase : layer_phase);
	/* One pinned block per layer and step; the caching host allocator
	 * keeps a freed block for its power-of-two class only, so at worst
	 * every smaller class also stays cached (a geometric sum < 2x). */
	out->host_unsloth = in->grad_ckpt && in->unsloth_gc ?
				    layers * lf_pow2_ceil(block) : 0;
	out->host_unsloth_cached = 2 * out->host_unsloth;
}
