/* lf_decide_memory.c: lf_decide's memory plan and longest prompt, and
 * the checks on them (lf_decide_steps.h). The arithmetic is plugin/plan's
 * (plan_memory.h, plan_seqfit.h); here the run's files and options
 * become its inputs. */
#include "lf_decide_steps.h"

void lf_decide_plan_memory(const struct lf_inputs *in,
			   const struct user_keys *u, struct lf_decision *dec,
			   int optim_cpu, int param_cpu)
{
	struct plan_mem_input *m = &dec->mem_in;
	int lora = u->finetuning_type && !strcmp(u->finetuning_type, "lora");
	int pref = u->stage &&
		   (!strcmp(u->stage, "dpo") || !strcmp(u->stage, "kto"));

	memset(m, 0, sizeof(*m));
	if (in->model_params) {
		m->params = (double) in->model_params;
	} else if (in->model) {
		m->params = (double) plan_model_params(in->model);
		m->largest_layer = (double) plan_model_largest_layer(in->model);
	} else {
		return;
	}
	m->trainable = m->params;
	if (lora) {
		uint64_t r = u->lora_rank_found && u->lora_rank > 0 ?
				     (uint64_t) u->lora_rank :
				     8;

		/* LLaMA-Factory's default lora_rank is 8 (finetuning_args). */
		if (in->model)
			m->trainable =
				(double) plan_model_lora_params(in->model, r);
		else
			m->trainable = m->params * 0.005;
	}
	m->nnodes = in->nnodes ? in->nnodes : 1;
	m->gpus_per_node = in->gpus_per_node ? in->gpus_per_node : 1;
	m->offload_optimizer = optim_cpu;
	m->offload_param = param_cpu;
	/* Full DPO/KTO keeps a reference model; LoRA switches the adapters
	 * off instead (LLaMA-Factory train/dpo/workflow.py). */
	m->reference_model = pref && !lora;
	m->gather_on_save = dec->gather16;
	m->gpu_mem = in->gpu_mem;
	m->host_mem = in->host_mem;
	plan_mem_plan(m, &dec->mem);
	dec->have_plan = 1;
}

void lf_decide_check_memory(const struct lf_inputs *in, struct lf_decision *dec)
{
	const struct plan_mem_plan *p = &dec->mem;

	if (!dec->have_plan)
		return;
	if (p->gpu_short)
		msg(dec, in, LF_WARN, "memory plan",
		    "use --distenv-offload=cpu, more nodes, or LoRA",
		    "model states need %.1f GiB per GPU, more than the %.1f "
		    "GiB the GPU has (before activations)",
		    plan_gib(p->gpu_total), plan_gib(in->gpu_mem));
	/* The gather happens on global rank 0's node only; the other nodes
	 * hold the steady share. */
	if (in->node_id != 0 && in->host_mem > 0 &&
	    p->host_steady > in->host_mem) {
		char node[32];

		snprintf(node, sizeof(node), "node %u", in->node_id);
		msg(dec, in, LF_WARN, node,
		    "ask for more memory (--mem) or turn offload off "
		    "(--distenv-offload=none)",
		    "host memory: %.1f GiB needed while training, the job "
		    "has %.1f GiB on the node",
		    plan_gib(p->host_steady), plan_gib(in->host_mem));
	}
	if (in->node_id == 0 && p->host_short)
		msg(dec, in, LF_WARN, "node 0",
		    dec->gather16 ?
			    "ask for more memory (--mem), turn offload off "
			    "(--distenv-offload=none), or set "
			    "stage3_gather_16bit_weights_on_model_save: false "
			    "and convert the shards afterwards with "
			    "DeepSpeed's zero_to_fp32.py" :
			    "ask for more memory (--mem) or turn offload off "
			    "(--distenv-offload=none)",
		    "host memory at checkpoint time: %.1f GiB needed (%.1f "
		    "steady + %.1f for the 16-bit gather), the job has %.1f "
		    "GiB on the node; the save will be killed by the OOM "
		    "killer (exit -9)",
		    plan_gib(p->host_node0_save), plan_gib(p->host_steady),
		    plan_gib(p->host_gather), plan_gib(in->host_mem));
}

/* Whether the training processes run with expandable segments: the
 * value distenv exports or the user's, else LLaMA-Factory 0.9.3 and
 * later set expandable_segments:True unless OPTIM_TORCH is off
 * (cli.py in 0.9.3, launcher.py since; keep_alloc_conf in lf_decide.c).
 * An older or unknown version: off, the safer assumption
 * (plan_stack.h). */
static int expandable_in_effect(const struct lf_inputs *in,
				const struct lf_decision *dec)
{
	const char *conf =
		dec->alloc_conf_set ? dec->alloc_conf : in->alloc_conf;

	if (conf && strstr(conf, "expandable_segments:True"))
		return 1;
	if (dec->optim_torch_off || !plan_stack_lf_sets_expandable(&dec->stack))
		return 0;
	return !in->optim_torch || truthy(in->optim_torch);
}

/* The longest prompt (plan_seqfit.h), for DPO: the stage whose step the
 * activation model follows (LLaMA-Factory train/dpo/trainer.py). */
void lf_decide_plan_fit(const struct lf_inputs *in, const struct user_keys *u,
			const struct ds_facts *f, struct lf_decision *dec)
{
	struct plan_fit_input *x = &dec->fit_in;
	const char *loss = NULL;
	int found = 0;

	if (in->stack)
		dec->stack = *in->stack;
	else
		memset(&dec->stack, 0, sizeof(dec->stack));
	if (!dec->have_plan || !in->model || in->gpu_mem <= 0 ||
	    dec->zero_stage != 3 || !u->stage || strcmp(u->stage, "dpo"))
		return;
	memset(x, 0, sizeof(*x));
	x->mem = dec->mem_in;
	x->act.model = in->model;
	/* transformers' TrainingArguments default: 8 */
	x->act.batch = u->batch_found && u->batch > 0 ? (uint32_t) u->batch : 8;
	x->act.pairwise = 1;
	/* orpo and simpo need no reference model (use_ref_model) */
	lf_get_str(in->yaml, lf_doc_root(in->yaml), "pref_loss", &loss, &found,
		   NULL);
	x->act.reference =
		dec->mem_in.reference_model &&
		!(loss && (!strcmp(loss, "orpo") || !strcmp(loss, "simpo")));
	x->mem.reference_model = x->act.reference;
	x->act.grad_ckpt = !(u->no_gc_found && u->no_gc);
	x->act.liger = u->liger_found && u->liger;
	x->act.unsloth_gc = u->unsloth_gc_found && u->unsloth_gc;
	x->act.model_ce = plan_stack_model_ce(&dec->stack);
	x->act.attn = !u->flash_attn                     ? PLAN_ATTN_SDPA :
		      !strcmp(u->flash_attn, "disabled") ? PLAN_ATTN_EAGER :
		      !strncmp(u->flash_attn, "fa", 2)   ? PLAN_ATTN_FA2 :
							   PLAN_ATTN_SDPA;
	x->max_live = (double) f->max_live;
	x->prefetch_bucket = (double) f->prefetch;
	x->reduce_bucket = (double) f->reduce;
	x->expandable = expandable_in_effect(in, dec);
	x->answer_tokens = in->answer_tokens;
	x->cutoff_len = u->cutoff_found && u->cutoff_len > 0 ?
				(uint32_t) u->cutoff_len :
				0;
	plan_fit_plan(x, &dec->fit);
	dec->have_fit = 1;
}

/* cutoff_len beyond the longest row that fits; host memory at save
 * with unsloth's pinned blocks. */
void lf_decide_check_fit(const struct lf_inputs *in, const struct user_keys *u,
			 struct lf_decision *dec)
{
	const struct plan_fit *x = &dec->fit;
	char where[LF_DOC_NAME_MAX + 32];

	if (!dec->have_fit)
		return;
	if (x->breakdown_seq > x->max_seq && u->cutoff_found) {
		where_of(in->yaml, lf_doc_root(in->yaml), "cutoff_len", where,
			 sizeof(where));
		msg(dec, in, LF_WARN, where,
		    x->best_switch >= 0 ?
			    "lower cutoff_len, or see distenv plan for the "
			    "switch that buys the most" :
			    "lower cutoff_len, or add nodes",
		    "cutoff_len %lld: a DPO step of that length needs %.1f "
		    "GiB per GPU; the longest row that fits is %u tokens "
		    "(band %u-%u with fragmentation), a prompt of %u with "
		    "%u-token answers",
		    u->cutoff_len, plan_gib(x->gpu_total), x->max_seq,
		    x->max_seq_lo, x->max_seq_hi, x->max_prompt,
		    x->answer_tokens);
	}
	if (in->node_id == 0 && in->host_mem > 0 && x->host_unsloth > 0 &&
	    x->host_at_save_cached > in->host_mem)
		msg(dec, in, LF_WARN, "node 0",
		    "ask for more memory (--mem), cap the answers and prompts "
		    "(cutoff_len), or turn use_unsloth_gc off",
		    "host memory at checkpoint time with use_unsloth_gc: "
		    "%.1f GiB needed (%.1f up to %.1f pinned for the layer "
		    "inputs of %.0f-token rows), the job has %.1f GiB on the "
		    "node",
		    plan_gib(x->host_at_save_cached), plan_gib(x->host_unsloth),
		    plan_gib(x->host_unsloth_cached), x->breakdown_seq,
		    plan_gib(in->host_mem));
}
