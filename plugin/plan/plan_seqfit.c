/* plan_seqfit.c: the longest row that fits (rules in plan_seqfit.h). */
#include "plan_seqfit.h"

#include <string.h>

const char *const plan_gpu_term_names[PLAN_TERM_COUNT] = {
	"model_states", "reference", "zero3_live", "ckpt_inputs", "layers",
	"recompute",    "logits",    "head",       "attn_mask",   "runtime"
};

const char *const plan_switch_names[PLAN_SW_COUNT] = { "offload", "liger",
						       "unsloth_gc",
						       "expandable_segments" };

/* The row length limit: the scan stops here (1M tokens). */
#define PLAN_SEQ_SCAN_MAX 1048576.0

double plan_fit_gpu_bytes(const struct plan_fit_input *in, double seq,
			  double terms[PLAN_TERM_COUNT])
{
	struct plan_mem_plan mp;
	struct plan_act_terms at;
	double h = (double) in->act.model->hidden_size;
	double live = in->max_live > 0 ? in->max_live : 1e9;
	double pre =
		in->prefetch_bucket > 0 ? in->prefetch_bucket : 0.9 * h * h;
	double red = in->reduce_bucket > 0 ? in->reduce_bucket : h * h;
	double sum = 0;
	int i;

	plan_mem_plan(&in->mem, &mp);
	plan_act_terms(&in->act, seq, &at);
	memset(terms, 0, sizeof(double) * PLAN_TERM_COUNT);
	terms[PLAN_TERM_MODEL_STATES] = mp.gpu_model_states;
	terms[PLAN_TERM_REFERENCE] = mp.gpu_frozen;
	/* Gathered 16-bit parameters up to max_live (never more than the
	 * model), the prefetch and a 16-bit gradient bucket; with
	 * parameter offload they pass through the same buffers. */
	if (live > in->mem.params)
		live = in->mem.params;
	terms[PLAN_TERM_ZERO3_LIVE] = 2 * live + 2 * pre + 2 * red;
	terms[PLAN_TERM_CKPT_INPUTS] = at.ckpt_inputs;
	terms[PLAN_TERM_LAYERS] = at.layers;
	terms[PLAN_TERM_RECOMPUTE] = at.recompute;
	terms[PLAN_TERM_LOGITS] = at.logits;
	terms[PLAN_TERM_HEAD] = at.head;
	terms[PLAN_TERM_ATTN_MASK] = at.attn_mask;
	terms[PLAN_TERM_RUNTIME] = PLAN_GPU_RUNTIME_RESERVE;
	for (i = 0; i < PLAN_TERM_COUNT; i++)
		sum += terms[i];
	return sum;
}

/* The longest row whose step fits in usable bytes: the memory grows with
 * the row, so a doubling scan then a bisection. */
static uint32_t longest_row(const struct plan_fit_input *in, double usable)
{
	double t[PLAN_TERM_COUNT], lo = 0, hi = 1;

	if (plan_fit_gpu_bytes(in, 1, t) > usable)
		return 0;
	while (hi < PLAN_SEQ_SCAN_MAX &&
	       plan_fit_gpu_bytes(in, hi, t) <= usable)
		hi *= 2;
	if (hi >= PLAN_SEQ_SCAN_MAX)
		return (uint32_t) PLAN_SEQ_SCAN_MAX;
	lo = hi / 2;
	while (hi - lo > 1) {
		double mid = (double) (uint32_t) ((lo + hi) / 2);

		if (plan_fit_gpu_bytes(in, mid, t) <= usable)
			lo = mid;
		else
			hi = mid;
	}
	return (uint32_t) lo;
}

static uint32_t prompt_of(uint32_t seq, uint32_t answer)
{
	return seq > answer ? seq - answer : 0;
}

static void usable(const struct plan_fit_input *in, double *lo, double *mid,
		   double *hi)
{
	double room = in->mem.gpu_mem;
	double flo = in->expandable ? PLAN_FRAG_EXPANDABLE_LO : PLAN_FRAG_LO;
	double fhi = in->expandable ? PLAN_FRAG_EXPANDABLE_HI : PLAN_FRAG_HI;

	*lo = room * flo;
	*hi = room * fhi;
	*mid = room * (flo + fhi) / 2;
}

static uint32_t mid_prompt(const struct plan_fit_input *in, uint32_t answer)
{
	double lo, mid, hi;

	usable(in, &lo, &mid, &hi);
	return prompt_of(longest_row(in, mid), answer);
}

/* max_prompt with each switch on; the best is the largest gain. */
static void switches(const struct plan_fit_input *in, struct plan_fit *out)
{
	int64_t best = out->max_prompt;
	int i;

	out->best_switch = -1;
	for (i = 0; i < PLAN_SW_COUNT; i++) {
		struct plan_fit_input v = *in;
		int on = 0;

		switch (i) {
		case PLAN_SW_OFFLOAD:
			on = in->mem.offload_optimizer && in->mem.offload_param;
			v.mem.offload_optimizer = v.mem.offload_param = 1;
			break;
		case PLAN_SW_LIGER:
			on = in->act.liger;
			v.act.liger = 1;
			break;
		case PLAN_SW_UNSLOTH:
			on = in->act.unsloth_gc || !in->act.grad_ckpt;
			v.act.unsloth_gc = 1;
			break;
		default:
			on = in->expandable;
			v.expandable = 1;
			break;
		}
		if (on) {
			out->switch_prompt[i] = -1;
			continue;
		}
		out->switch_prompt[i] = mid_prompt(&v, out->answer_tokens);
		if (out->switch_prompt[i] > best) {
			best = out->switch_prompt[i];
			out->best_switch = i;
		}
	}
}

void plan_fit_plan(const struct plan_fit_input *in, struct plan_fit *out)
{
	struct plan_mem_plan mp;
	struct plan_act_terms at;
	double g = in->mem.gpus_per_node ? in->mem.gpus_per_node : 1;

	memset(out, 0, sizeof(*out));
	out->answer_tokens = in->answer_tokens ? in->answer_tokens :
						 PLAN_DEFAULT_ANSWER_TOKENS;
	usable(in, &out->usable_lo, &out->usable_mid, &out->usable_hi);
	out->max_seq_lo = longest_row(in, out->usable_lo);
	out->max_seq = longest_row(in, out->usable_mid);
	out->max_seq_hi = longest_row(in, out->usable_hi);
	out->max_prompt_lo = prompt_of(out->max_seq_lo, out->answer_tokens);
	out->max_prompt = prompt_of(out->max_seq, out->answer_tokens);
	out->max_prompt_hi = prompt_of(out->max_seq_hi, out->answer_tokens);
	out->breakdown_seq = in->cutoff_len ? in->cutoff_len :
					      (out->max_seq ? out->max_seq : 1);
	out->gpu_total =
		plan_fit_gpu_bytes(in, out->breakdown_seq, out->gpu_terms);
	plan_act_terms(&in->act, out->breakdown_seq, &at);
	plan_mem_plan(&in->mem, &mp);
	/* every GPU of the node moves its own rows' layer inputs */
	out->host_unsloth = g * at.host_unsloth;
	out->host_unsloth_cached = g * at.host_unsloth_cached;
	out->host_at_save = mp.host_node0_save + out->host_unsloth;
	out->host_at_save_cached =
		mp.host_node0_save + out->host_unsloth_cached;
	switches(in, out);
}
