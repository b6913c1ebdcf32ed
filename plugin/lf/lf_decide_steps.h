/*
 * lf_decide_steps.h: private to lf_decide.c and the files its steps live
 * in (lf_decide_read.c: the facts read from the training YAML and the
 * DeepSpeed config; lf_decide_memory.c: the memory plan, the longest
 * prompt and their checks). Not for other callers: lf_decide.h is the
 * interface. The steps take lf_decide's inputs and fill its decision;
 * findings go to dec->msgs through msg() (as lf_decide.h says:
 * --distenv-check=off keeps none, strict makes every one an error).
 */
#ifndef DISTENV_LF_DECIDE_STEPS_H
#define DISTENV_LF_DECIDE_STEPS_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lf_decide.h"

/* The training YAML's keys distenv uses (absent: NULL, *_found 0). */
struct user_keys {
	const char *stage, *finetuning_type, *output_dir, *deepspeed;
	const char *resume, *model_path;
	int soen, soen_found, overwrite, overwrite_found, do_train,
		do_train_found;
	long long cutoff_len, lora_rank, batch;
	int cutoff_found, lora_rank_found, batch_found;
	/* activation switches (LLaMA-Factory hparams/model_args.py) */
	int no_gc, no_gc_found, liger, liger_found, unsloth_gc,
		unsloth_gc_found;
	const char *flash_attn;
};

/* The DeepSpeed facts distenv uses; type errors are errors. */
struct ds_facts {
	long long stage;
	int stage_found, gather16, param_cpu, optim_cpu, param_found,
		optim_found;
	/* ZeRO-3 buffer sizes in elements, 0 when absent or "auto" */
	long long max_live, prefetch, reduce;
};

/* Read them (lf_decide_read.c); -1 with err set on a key of the wrong
 * type, naming its file:line:col. */
int lf_decide_read_user_keys(struct lf_doc *doc, struct user_keys *u,
			     struct distenv_error *err);
int lf_decide_read_ds(struct lf_doc *ds, struct ds_facts *f,
		      struct distenv_error *err);

/* The memory plan, the longest prompt and their checks
 * (lf_decide_memory.c; the model is plugin/plan's). plan_memory fills
 * dec->mem_in and dec->mem (have_plan) for the given offload; plan_fit
 * fills dec->fit_in and dec->fit (have_fit) for a DPO run on ZeRO-3. */
void lf_decide_plan_memory(const struct lf_inputs *in,
			   const struct user_keys *u, struct lf_decision *dec,
			   int optim_cpu, int param_cpu);
void lf_decide_check_memory(const struct lf_inputs *in,
			    struct lf_decision *dec);
void lf_decide_plan_fit(const struct lf_inputs *in, const struct user_keys *u,
			const struct ds_facts *f, struct lf_decision *dec);
void lf_decide_check_fit(const struct lf_inputs *in, const struct user_keys *u,
			 struct lf_decision *dec);

/* A finding, as lf_decide's: dropped under check=off, an error under
 * check=strict. */
inline static void msg(struct lf_decision *dec, const struct lf_inputs *in,
		       enum lf_level level, const char *where, const char *fix,
		       const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

inline static void msg(struct lf_decision *dec, const struct lf_inputs *in,
		       enum lf_level level, const char *where, const char *fix,
		       const char *fmt, ...)
{
	struct distenv_error e;
	va_list ap;

	if (in->check == LF_CHECK_OFF)
		return;
	if (in->check == LF_CHECK_STRICT)
		level = LF_ERROR;
	distenv_error_clear(&e);
	va_start(ap, fmt);
	vsnprintf(e.what, sizeof(e.what), fmt, ap);
	va_end(ap);
	snprintf(e.where, sizeof(e.where), "%s", where ? where : "");
	snprintf(e.fix, sizeof(e.fix), "%s", fix ? fix : "");
	lf_msgs_add(&dec->msgs, level, &e);
}

/* FILE:LINE:COL of key in map, for messages. */
inline static void where_of(struct lf_doc *doc, yaml_node_t *map,
			    const char *key, char *buf, size_t len)
{
	yaml_node_t *k = NULL;

	lf_map_get(doc, map, key, &k);
	lf_node_where(doc, k, buf, len);
}

/* An environment switch LLaMA-Factory reads as on. */
inline static int truthy(const char *v)
{
	/* LLaMA-Factory cli.py/launcher.py: FORCE_TORCHRUN in true, y, 1
	 * (lower-cased; v0.9.2+; before: true, 1). */
	return v && (!strcasecmp(v, "true") || !strcasecmp(v, "y") ||
		     !strcmp(v, "1"));
}

#endif
