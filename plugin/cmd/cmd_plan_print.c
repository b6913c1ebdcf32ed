/*
 * cmd_plan_print.c: distenv plan's longest-prompt section
 * (plugin/plan/plan_seqfit.h), as text for people and as one JSON object
 * for scripts (--json). The model stays pure; printing lives here.
 */
#include <stdio.h>

#include "commands.h"
#include "lf_decide.h"
#include "plan_seqfit.h"

static const char *const attn_names[] = { "sdpa", "eager", "fa2" };

static const char *on_off(int v)
{
	return v ? "on" : "off";
}

static const char *ver_text(const struct plan_version *v)
{
	return v->known ? v->text : "unknown";
}

static const char *from_text(const char *from)
{
	return from && from[0] ? from : "not given";
}

/* The stack planned for and what it changes (plan_stack.h). */
static void print_stack(FILE *out, const struct lf_decision *dec)
{
	const struct plan_stack *s = &dec->stack;

	fprintf(out,
		"  stack: LLaMA-Factory %s (%s), transformers %s (%s): "
		"logits %.0f bytes per token and vocabulary entry%s\n",
		ver_text(&s->lf), from_text(s->lf_from), ver_text(&s->tf),
		from_text(s->tf_from), plan_act_logit_bytes(&dec->fit_in.act),
		dec->fit_in.act.model_ce ?
			" (the model's own cross-entropy in each forward: "
			"LLaMA-Factory 0.8.0-0.9.3 with transformers "
			"4.46-4.48, or a version unknown)" :
			"");
}

/* The same as JSON members; the texts are checked version strings and
 * the option names or the Python's name (escaped). */
static void json_string(FILE *out, const char *v)
{
	fputc('"', out);
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			fputc('\\', out);
		if ((unsigned char) *v >= 0x20)
			fputc(*v, out);
	}
	fputc('"', out);
}

/* "KEY": "1.2.3" or null, "KEY_from": "where" */
static void json_version(FILE *out, const char *key,
			 const struct plan_version *v, const char *from)
{
	fprintf(out, "\"%s\": ", key);
	if (v->known)
		json_string(out, v->text);
	else
		fprintf(out, "null");
	fprintf(out, ", \"%s_from\": ", key);
	json_string(out, from_text(from));
}

static void json_stack(FILE *out, const struct lf_decision *dec)
{
	const struct plan_stack *s = &dec->stack;

	fprintf(out, ", \"stack\": {");
	json_version(out, "llamafactory", &s->lf, s->lf_from);
	fprintf(out, ", ");
	json_version(out, "transformers", &s->tf, s->tf_from);
	fprintf(out,
		", \"model_cross_entropy\": %s}, "
		"\"logit_bytes_per_token_vocab\": %.0f",
		dec->fit_in.act.model_ce ? "true" : "false",
		plan_act_logit_bytes(&dec->fit_in.act));
}

void distenv_plan_print_fit(FILE *out, const struct lf_decision *dec)
{
	const struct plan_fit *f = &dec->fit;
	const struct plan_fit_input *x = &dec->fit_in;
	int i;

	if (!dec->have_fit) {
		fprintf(out, "longest prompt: not planned (needs stage: dpo, "
			     "ZeRO-3, the model's config.json and "
			     "--gpu-mem)\n");
		return;
	}
	fprintf(out, "longest prompt (DPO step; GiB = 2^30 bytes; "
		     "docs/memory.md)\n");
	fprintf(out,
		"  prompt up to %u tokens with %u-token answers (band "
		"%u-%u: fragmentation, expandable_segments %s); row "
		"(cutoff_len) up to %u\n",
		f->max_prompt, f->answer_tokens, f->max_prompt_lo,
		f->max_prompt_hi, on_off(x->expandable), f->max_seq);
	fprintf(out,
		"  step: %u example(s) x %d rows, reference model %s, "
		"gradient checkpointing %s, liger %s, unsloth_gc %s, "
		"attention %s\n",
		x->act.batch, x->act.pairwise ? 2 : 1,
		x->act.reference ? "yes" : "no", on_off(x->act.grad_ckpt),
		on_off(x->act.liger), on_off(x->act.unsloth_gc),
		attn_names[x->act.attn]);
	print_stack(out, dec);
	fprintf(out,
		"  per GPU at %.0f tokens per row: %.1f GiB, usable "
		"%.1f GiB (%.1f-%.1f)\n",
		f->breakdown_seq, plan_gib(f->gpu_total),
		plan_gib(f->usable_mid), plan_gib(f->usable_lo),
		plan_gib(f->usable_hi));
	for (i = 0; i < PLAN_TERM_COUNT; i++)
		if (f->gpu_terms[i] > 0)
			fprintf(out, "    %-13s %8.1f GiB\n",
				plan_gpu_term_names[i],
				plan_gib(f->gpu_terms[i]));
	fprintf(out,
		"  node 0 at save: %.1f GiB (unsloth_gc pinned %.1f, "
		"up to %.1f cached: %.1f GiB)\n",
		plan_gib(f->host_at_save), plan_gib(f->host_unsloth),
		plan_gib(f->host_unsloth_cached),
		plan_gib(f->host_at_save_cached));
	fprintf(out, "  switches (prompt with it on):");
	for (i = 0; i < PLAN_SW_COUNT; i++) {
		if (f->switch_prompt[i] < 0)
			fprintf(out, " %s already on;", plan_switch_names[i]);
		else
			fprintf(out, " %s %lld;", plan_switch_names[i],
				(long long) f->switch_prompt[i]);
	}
	fprintf(out, " buys the most: %s\n",
		f->best_switch >= 0 ? plan_switch_names[f->best_switch] :
				      "none");
}

void distenv_plan_print_json(FILE *out, const struct lf_decision *dec)
{
	const struct plan_fit *f = &dec->fit;
	const struct plan_fit_input *x = &dec->fit_in;
	const struct plan_mem_plan *m = &dec->mem;
	int i;

	/* Only numbers and fixed names: nothing from the user's files
	 * needs escaping. */
	fprintf(out, "{\"nodes\": %u, \"gpus_per_node\": %u",
		dec->mem_in.nnodes, dec->mem_in.gpus_per_node);
	if (!dec->have_fit) {
		fprintf(out,
			", \"max_prompt_tokens\": null, "
			"\"gpu_bytes_per_term\": null, "
			"\"host_bytes_at_save\": %.0f, \"note\": "
			"\"longest prompt not planned: needs stage dpo, "
			"ZeRO-3, config.json and --gpu-mem\"}\n",
			dec->have_plan ? m->host_node0_save : 0);
		return;
	}
	fprintf(out,
		", \"gpu_mem_bytes\": %.0f, \"answer_tokens\": %u, "
		"\"max_prompt_tokens\": %u, "
		"\"max_prompt_tokens_band\": [%u, %u], "
		"\"max_seq_tokens\": %u, \"max_seq_tokens_band\": "
		"[%u, %u], \"breakdown_seq_tokens\": %.0f",
		x->mem.gpu_mem, f->answer_tokens, f->max_prompt,
		f->max_prompt_lo, f->max_prompt_hi, f->max_seq, f->max_seq_lo,
		f->max_seq_hi, f->breakdown_seq);
	json_stack(out, dec);
	fprintf(out, ", \"gpu_bytes_per_term\": {");
	for (i = 0; i < PLAN_TERM_COUNT; i++)
		fprintf(out, "%s\"%s\": %.0f", i ? ", " : "",
			plan_gpu_term_names[i], f->gpu_terms[i]);
	fprintf(out,
		"}, \"gpu_bytes_total\": %.0f, \"usable_gpu_bytes\": "
		"[%.0f, %.0f, %.0f]",
		f->gpu_total, f->usable_lo, f->usable_mid, f->usable_hi);
	fprintf(out,
		", \"host_bytes_at_save\": %.0f, "
		"\"host_bytes_at_save_cached\": %.0f, "
		"\"host_bytes_steady\": %.0f, \"host_bytes_gather\": %.0f, "
		"\"host_bytes_unsloth\": %.0f",
		f->host_at_save, f->host_at_save_cached, m->host_steady,
		m->host_gather, f->host_unsloth);
	fprintf(out, ", \"switch_max_prompt_tokens\": {");
	for (i = 0; i < PLAN_SW_COUNT; i++) {
		fprintf(out, "%s\"%s\": ", i ? ", " : "", plan_switch_names[i]);
		if (f->switch_prompt[i] < 0)
			fprintf(out, "null");
		else
			fprintf(out, "%lld", (long long) f->switch_prompt[i]);
	}
	fprintf(out, "}, \"best_switch\": ");
	if (f->best_switch >= 0)
		fprintf(out, "\"%s\"", plan_switch_names[f->best_switch]);
	else
		fprintf(out, "null");
	fprintf(out,
		", \"settings\": {\"batch\": %u, \"reference\": %s, "
		"\"gradient_checkpointing\": %s, \"liger\": %s, "
		"\"unsloth_gc\": %s, \"attention\": \"%s\", "
		"\"offload\": %s, \"expandable_segments\": %s}}\n",
		x->act.batch, x->act.reference ? "true" : "false",
		x->act.grad_ckpt ? "true" : "false",
		x->act.liger ? "true" : "false",
		x->act.unsloth_gc ? "true" : "false", attn_names[x->act.attn],
		x->mem.offload_optimizer && x->mem.offload_param ? "true" :
								   "false",
		x->expandable ? "true" : "false");
}
