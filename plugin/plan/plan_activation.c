/* plan_activation.c: activation memory of a training step (rules and
 * sources in plan_activation.h; every term derived in docs/memory.md). */
#include "plan_activation.h"

#include "plan_stack.h"

double plan_korthikanti_layer_bytes(double s, double b, double h, double a,
				    int flash)
{
	/* attention 11sbh + 5as^2b, MLP 19sbh, two LayerNorms 4sbh */
	return s * b * h * (34 + (flash ? 0 : 5 * a * s / h));
}

double plan_act_layer_saved_bytes(const struct plan_act_input *in, double seq)
{
	const struct plan_model_config *m = in->model;
	double h = (double) m->hidden_size, i = (double) m->intermediate_size;
	double a = (double) m->num_attention_heads;
	double hq = a * (double) m->head_dim;
	double hkv = (double) m->num_key_value_heads * (double) m->head_dim;
	double attn, mlp, norms;

	/* Attention: the normed input of q/k/v (2h), q after RoPE, k and v,
	 * the attention output and o_proj's contiguous input (2 bytes
	 * each), and FlashAttention's/SDPA's fp32 log-sum-exp (4a). */
	switch (in->attn) {
	case PLAN_ATTN_FA2:
		/* grouped-query heads passed as they are */
		attn = 2 * h + 2 * hq + 4 * hkv + 4 * hq + 4 * a;
		break;
	case PLAN_ATTN_EAGER:
		/* repeat_kv copies k and v to every head; per row the
		 * softmax keeps its fp32 output and matmul its 16-bit copy
		 * (6as per token) */
		attn = 2 * h + 2 * hq + 4 * hq + 4 * hq + 6 * a * seq;
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
	 * 16-bit copy the weight multiplies (2h); Liger's keeps the input
	 * and a per-row rstd. */
	norms = 2 * (in->liger ? 2 * h : 6 * h);
	return attn + mlp + norms;
}

double plan_act_layer_transient_bytes(const struct plan_act_input *in,
				      double seq, int backward)
{
	const struct plan_model_config *m = in->model;
	double h = (double) m->hidden_size, i = (double) m->intermediate_size;
	double a = (double) m->num_attention_heads;
	double scores = in->attn == PLAN_ATTN_EAGER ? a * seq : 0;

	/* Backward: the hidden state's gradient into and out of the layer
	 * and the gradients of gate and up (4h + 4i; measured 13.5 kB per
	 * token where this counts 15.4 kB), and eager's two 16-bit
	 * gradients of the scores (4as). Forward without gradients: the
	 * input in fp32, its normed copies and the residual (8h), and the
	 * MLP's SiLU(gate), up and their product alive at once (6i; the
	 * reference's layer measured within 1.2%); eager's scores, masked
	 * scores, fp32 softmax and its 16-bit copy (10as). */
	if (backward)
		return 4 * h + 4 * i + 4 * scores;
	return 8 * h + 6 * i + 10 * scores;
}

double plan_act_logit_bytes(const struct plan_act_input *in)
{
	/* Policy forward: fp32 logits (4; the 16-bit output is freed after
	 * the cast), log_softmax's contiguous copy of logits[:, :-1] (4)
	 * and its output (4): 12. Afterwards the policy holds 8 (the fp32
	 * logits in the returned dict, the output saved for backward). The
	 * reference forward under no_grad then peaks at 12 on top: 20.
	 * The backward of log_softmax also peaks at 12 (output, its
	 * gradient, the input's gradient). Measured on CPU with torch
	 * 2.13 and get_batch_logps: 11.95 and 19.95 (docs/memory.md). */
	return (in->reference ? 20 : 12) +
	       (in->model_ce ? PLAN_LOGIT_MODEL_CE_EXTRA : 0);
}

double plan_pow2_ceil(double x)
{
	double p = 1;

	while (p < x)
		p *= 2;
	return p;
}

void plan_act_terms(const struct plan_act_input *in, double seq,
		    struct plan_act_terms *out)
{
	const struct plan_model_config *m = in->model;
	double h = (double) m->hidden_size, v = (double) m->vocab_size;
	double layers = (double) m->num_hidden_layers;
	double rows = (double) in->batch * (in->pairwise ? 2 : 1);
	double t = rows * seq, saved = plan_act_layer_saved_bytes(in, seq);
	double block = 2 * h * t; /* one layer's input, 16-bit */
	double logits = plan_act_logit_bytes(in) * t * v;
	/* what the policy holds through the reference's forward: its fp32
	 * logits and the saved log_softmax output (plan_act_logit_bytes) */
	double held = 8 * t * v;
	double head, logit_phase, ref_phase = 0, bwd_phase;

	out->tokens = t;
	out->ckpt_inputs =
		in->grad_ckpt && !in->unsloth_gc ? layers * block : 0;
	out->layers = in->grad_ckpt ? 0 : layers * saved * t;
	/* final norm (as a layer's) and lm_head's 16-bit input */
	head = (in->liger ? 2 * h : 6 * h) * t + 2 * h * t;
	/* transformers masking_utils: sdpa gets a boolean (rows, 1, s, s)
	 * mask when rows are padded, eager an additive 16-bit one;
	 * FlashAttention takes none. Shared by all layers. */
	out->attn_mask = in->attn == PLAN_ATTN_FA2 ?
				 0 :
				 (in->attn == PLAN_ATTN_EAGER ? 2 : 1) * rows *
					 seq * seq;
	/* The three candidates for the peak, on top of the layers' stored
	 * activations or checkpointed inputs:
	 * - the logits of a forward;
	 * - a layer of the reference model's forward, while the policy
	 *   holds its head and 8 bytes of logits per entry (which wins
	 *   for a small vocabulary);
	 * - a layer's backward: under checkpointing its recomputed
	 *   activations (and with unsloth its input, back from the host),
	 *   and the hidden state's gradient (2h) that travels through the
	 *   layers. */
	logit_phase = logits + head;
	if (in->reference)
		ref_phase = held + head +
			    plan_act_layer_transient_bytes(in, seq, 0) * t;
	bwd_phase = (plan_act_layer_transient_bytes(in, seq, 1) + 2 * h) * t;
	if (in->grad_ckpt)
		bwd_phase += saved * t + (in->unsloth_gc ? block : 0);
	out->logits = out->head = out->recompute = 0;
	if (logit_phase >= ref_phase && logit_phase >= bwd_phase) {
		out->phase = PLAN_PHASE_LOGITS;
		out->logits = logits;
		out->head = head;
	} else if (ref_phase >= bwd_phase) {
		out->phase = PLAN_PHASE_REF_LAYER;
		out->logits = held;
		out->head = head;
		out->recompute = ref_phase - held - head;
	} else {
		out->phase = PLAN_PHASE_BACKWARD;
		out->recompute = bwd_phase;
	}
	out->peak = out->ckpt_inputs + out->layers + out->attn_mask +
		    out->recompute + out->logits + out->head;
	/* One pinned block per layer and step; the caching host allocator
	 * keeps a freed block for its power-of-two class only, so at worst
	 * every smaller class also stays cached (a geometric sum < 2x). */
	out->host_unsloth = in->grad_ckpt && in->unsloth_gc ?
				    layers * plan_pow2_ceil(block) :
				    0;
	out->host_unsloth_cached = 2 * out->host_unsloth;
}
