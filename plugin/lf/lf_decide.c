/* lf_decide.c: decisions and checks for a LLaMA-Factory run; the
 * readers of its files are in lf_decide_read.c, the memory plan in
 * lf_decide_memory.c (lf_decide_steps.h). */
#include "lf_decide.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lf_decide_steps.h"
#include "lf_keys.h"

static int parse_enum(const char *value, const char *where,
		      const char *const *names, int *out, const char *accepted,
		      struct distenv_error *err)
{
	int i;

	for (i = 0; value && names[i]; i++) {
		if (names[i][0] && !strcmp(value, names[i])) {
			*out = i;
			return 0;
		}
	}
	return distenv_error_set(err, where, accepted, "'%s' is not accepted",
				 value ? value : "");
}

int lf_parse_soen(const char *value, const char *where, int *out,
		  struct distenv_error *err)
{
	static const char *const n[] = { "auto", "yes", "no", NULL };

	return parse_enum(value, where, n, out, "use auto, yes or no", err);
}

int lf_parse_offload(const char *value, const char *where, int *out,
		     struct distenv_error *err)
{
	static const char *const n[] = { "", "none", "cpu", "auto", NULL };

	return parse_enum(value, where, n, out, "use none, cpu or auto", err);
}

int lf_parse_check(const char *value, const char *where, int *out,
		   struct distenv_error *err)
{
	static const char *const n[] = { "warn", "strict", "off", NULL };

	return parse_enum(value, where, n, out, "use warn, strict or off", err);
}

void lf_msgs_add(struct lf_msgs *m, enum lf_level level,
		 const struct distenv_error *e)
{
	if (level == LF_ERROR)
		m->errors++;
	if (m->count >= LF_MSG_MAX)
		return;
	m->items[m->count].level = level;
	m->items[m->count].e = *e;
	m->count++;
}

static void change(struct lf_decision *dec, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void change(struct lf_decision *dec, const char *fmt, ...)
{
	va_list ap;

	if (dec->nchanges >= LF_CHANGE_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(dec->changes[dec->nchanges++], sizeof(dec->changes[0]), fmt,
		  ap);
	va_end(ap);
}

/* Unknown top-level keys: an error naming the nearest known key
 * (lf_keys.h: LLaMA-Factory's parser stops on them too). */
#define LF_UNKNOWN_KEYS_NAMED 8

static void check_keys(const struct lf_inputs *in, struct lf_decision *dec)
{
	struct lf_doc *doc = in->yaml;
	yaml_node_t *root = lf_doc_root(doc);
	yaml_node_pair_t *p;
	char where[LF_DOC_NAME_MAX + 32], fix[DISTENV_ERROR_TEXT];
	size_t unknown = 0;

	for (p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&doc->ydoc, p->key);
		const char *key = lf_scalar(k), *near;

		if (!key || lf_key_known(key))
			continue;
		/* Bounded work for any input: the first few by name, then
		 * a count. */
		if (++unknown > LF_UNKNOWN_KEYS_NAMED)
			continue;
		near = lf_key_nearest(key);
		lf_node_where(doc, k, where, sizeof(where));
		snprintf(fix, sizeof(fix),
			 "%s%s%s%s the key against "
			 "LLaMA-Factory's hparams/ for your version "
			 "(--distenv-check=off skips this check)",
			 near ? "did you mean '" : "", near ? near : "",
			 near ? "'? " : "", near ? "Check" : "check");
		msg(dec, in, LF_ERROR, where, fix,
		    "unknown LLaMA-Factory key '%s' (HfArgumentParser stops "
		    "with \"Some keys are not used\")",
		    key);
	}
	if (unknown > LF_UNKNOWN_KEYS_NAMED)
		msg(dec, in, LF_ERROR, doc->name,
		    "check the keys against "
		    "LLaMA-Factory's hparams/ for your version",
		    "%zu more unknown LLaMA-Factory keys",
		    unknown - LF_UNKNOWN_KEYS_NAMED);
}

static void merge_alloc_conf(const struct lf_inputs *in,
			     struct lf_decision *dec)
{
	const char *u = in->alloc_conf;

	/* PyTorch's CUDA caching allocator reads a comma list of key:value
	 * (docs "CUDA semantics", Memory management); a key the user gave
	 * is theirs. */
	if (u && strstr(u, "expandable_segments"))
		return;
	if (u && u[0])
		snprintf(dec->alloc_conf, sizeof(dec->alloc_conf),
			 "%s,expandable_segments:True", u);
	else
		snprintf(dec->alloc_conf, sizeof(dec->alloc_conf),
			 "expandable_segments:True");
	dec->alloc_conf_set = 1;
}

/*
 * LLaMA-Factory 0.9.3 (src/llamafactory/cli.py) to 0.9.5 (launcher.py): unless
 * OPTIM_TORCH is disabled (default "1"; enabled means true, y or 1), the
 * environment of torchrun, so of every training process, gets
 * PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, replacing whatever
 * value was there, and TORCH_NCCL_AVOID_RECORD_STREAMS=1. A value with
 * more in it (the user's, or the one merged for offload) would be lost in
 * the processes that use it: keep it by turning OPTIM_TORCH off and
 * setting the other variable it stood for (spank_lf.c exports both).
 */
static void keep_alloc_conf(const struct lf_inputs *in, struct lf_decision *dec)
{
	const char *conf =
		dec->alloc_conf_set ? dec->alloc_conf : in->alloc_conf;

	if (!conf || !conf[0] || !strcmp(conf, "expandable_segments:True"))
		return;
	if (!in->optim_torch) {
		dec->optim_torch_off = 1;
		change(dec,
		       "OPTIM_TORCH=0, TORCH_NCCL_AVOID_RECORD_STREAMS=1 "
		       "(LLaMA-Factory 0.9.3+ would replace "
		       "PYTORCH_CUDA_ALLOC_CONF=%s by expandable_segments:True "
		       "in the training processes)",
		       conf);
	} else if (truthy(in->optim_torch)) {
		msg(dec, in, LF_WARN, "OPTIM_TORCH",
		    "unset OPTIM_TORCH (distenv then sets it to 0 and "
		    "TORCH_NCCL_AVOID_RECORD_STREAMS=1) or set it to 0",
		    "OPTIM_TORCH=%s: LLaMA-Factory 0.9.3 and later replace "
		    "PYTORCH_CUDA_ALLOC_CONF=%s by expandable_segments:True in "
		    "the training processes",
		    in->optim_torch, conf);
	}
}

static void decide_soen(const struct lf_inputs *in, const struct user_keys *u,
			struct lf_decision *dec, const char *soen_where)
{
	int want = -1;
	char why[320];
	const char *how = in->out_how ? in->out_how : in->out_fs;

	dec->soen = u->soen_found ? u->soen : 0;
	if (in->soen == LF_SOEN_YES) {
		want = 1;
		snprintf(why, sizeof(why), "--distenv-save-on-each-node=yes");
	} else if (in->soen == LF_SOEN_NO) {
		want = 0;
		snprintf(why, sizeof(why), "--distenv-save-on-each-node=no");
	} else if (!u->soen_found && in->nnodes > 1) {
		if (in->out_storage == LF_STORAGE_LOCAL) {
			want = 1;
			snprintf(why, sizeof(why),
				 "output_dir is on node-local storage (%s); "
				 "each node must save trainer_state.json and "
				 "`latest` to resume",
				 how ? how : "local");
		} else if (in->out_storage == LF_STORAGE_SHARED) {
			want = 0;
			snprintf(why, sizeof(why),
				 "output_dir is on shared storage (%s); one "
				 "saving node avoids overwrites and rotation "
				 "races (docs/contracts.md 2)",
				 how ? how : "shared");
		} else {
			msg(dec, in, LF_WARN, "output_dir",
			    "run a --distenv-mark-storage step first (the "
			    "templates do), set --distenv-save-on-each-node="
			    "yes (node-local disks) or =no (shared), or ask "
			    "the admin to list the mount in the storage policy",
			    "cannot tell whether output_dir (%s) is node-local "
			    "or shared storage; save_on_each_node left as "
			    "LLaMA-Factory's default (false)",
			    in->out_fs ? in->out_fs : "unknown");
		}
	}
	if (want >= 0 && (!u->soen_found || want != u->soen)) {
		dec->soen = want;
		dec->soen_set = 1;
		change(dec, "save_on_each_node: %s (%s)",
		       want ? "true" : "false", why);
	}
	if (in->nnodes < 2)
		return;
	if (dec->soen && in->out_storage == LF_STORAGE_SHARED)
		msg(dec, in, LF_WARN, soen_where,
		    "set save_on_each_node: false (or "
		    "--distenv-save-on-each-node=auto) on shared storage",
		    "save_on_each_node: true with output_dir on shared "
		    "storage (%s): every node writes and rotates the same "
		    "checkpoint files (transformers #20988)",
		    in->out_fs ? in->out_fs : "shared");
	if (!dec->soen && in->out_storage == LF_STORAGE_LOCAL)
		msg(dec, in, LF_WARN, soen_where,
		    "set save_on_each_node: true (or "
		    "--distenv-save-on-each-node=auto), or put output_dir "
		    "on shared storage",
		    "save_on_each_node: false with output_dir on node-local "
		    "storage (%s): nodes other than 0 will lack "
		    "trainer_state.json and `latest`, and a resume fails "
		    "there",
		    in->out_fs ? in->out_fs : "local");
}

void lf_resume_input_of(const struct lf_inputs *in, int zero_stage,
			struct lf_resume_input *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->node_id = in->node_id;
	ri->gpus_per_node = in->gpus_per_node ? in->gpus_per_node : 1;
	ri->world_size = (in->nnodes ? in->nnodes : 1) * ri->gpus_per_node;
	ri->zero_stage = zero_stage;
	ri->restore_latest = in->out_storage == LF_STORAGE_LOCAL;
	ri->shared = in->out_storage == LF_STORAGE_SHARED;
}

/* The checkpoint the resume takes, in the listing LS that holds it: the
 * files this node's ranks open (lf_resume.h), and DeepSpeed's `latest`
 * to restore where only node 0 writes it. RESUME: the YAML's (or the
 * override's) resume_from_checkpoint, when it names the checkpoint. */
static void check_resume_files(const struct lf_inputs *in,
			       struct lf_decision *dec,
			       const struct lf_listing *ls, const char *resume)
{
	struct lf_resume_input ri;
	struct lf_resume_result rr;
	struct distenv_error e;

	lf_resume_input_of(in, dec->zero_stage, &ri);
	ri.checkpoint = dec->resume_ckpt;
	ri.latest_tag = in->latest_tag;
	distenv_error_clear(&e);
	if (lf_resume_check(ls, &ri, &rr, &e)) {
		msg(dec, in, LF_ERROR, e.where, e.fix, "%s", e.what);
		return;
	}
	if (rr.latest_restorable) {
		/* the checkpoint's directory as the trainer will open it */
		if (ls == in->out_ls)
			snprintf(dec->restore_dir, sizeof(dec->restore_dir),
				 "%s/%s", dec->output_dir, dec->resume_ckpt);
		else
			snprintf(dec->restore_dir, sizeof(dec->restore_dir),
				 "%s", resume);
		snprintf(dec->restore_tag, sizeof(dec->restore_tag), "%s",
			 rr.tag);
		dec->restore_latest = 1;
		change(dec,
		       "%s/latest = %s restored on this node (DeepSpeed "
		       "writes it on node 0 only)",
		       dec->resume_ckpt, rr.tag);
	}
}

static void check_resume(const struct lf_inputs *in, const struct user_keys *u,
			 struct lf_decision *dec)
{
	const struct lf_listing *ls = NULL;
	char last[256];
	int have_ckpt = in->out_ls &&
			lf_last_checkpoint(in->out_ls, last, sizeof(last));

	const char *resume =
		in->resume_override ? in->resume_override : u->resume;

	if (resume && !resume[0])
		return; /* the resume is decided later (lf_ckpt.h) */
	if (resume && strcmp(resume, "true")) {
		const char *base = strrchr(resume, '/');

		/* the listing of its parent holds it under its base name */
		base = base && base[1] ? base + 1 : resume;
		snprintf(dec->resume_ckpt, sizeof(dec->resume_ckpt), "%s",
			 base);
		ls = in->ckpt_ls;
		/* with an override the resolved copy sets
		 * overwrite_output_dir: false */
		if (!in->resume_override && u->overwrite_found && u->overwrite)
			msg(dec, in, LF_WARN, "overwrite_output_dir",
			    "remove overwrite_output_dir: true when resuming",
			    "overwrite_output_dir: true together with "
			    "resume_from_checkpoint: %s",
			    u->resume);
	} else if (have_ckpt &&
		   (u->resume || (!(u->overwrite_found && u->overwrite) &&
				  u->do_train_found && u->do_train))) {
		/* LLaMA-Factory hparams/parser.py: no resume_from_checkpoint,
		 * do_train, output_dir exists, overwrite_output_dir false:
		 * resume from get_last_checkpoint(output_dir). */
		snprintf(dec->resume_ckpt, sizeof(dec->resume_ckpt), "%s",
			 last);
		ls = in->out_ls;
	} else if (have_ckpt && u->overwrite_found && u->overwrite) {
		msg(dec, in, LF_WARN, "overwrite_output_dir",
		    "set resume_from_checkpoint to resume, or "
		    "overwrite_output_dir: false for auto-resume, or use a new "
		    "output_dir",
		    "output_dir holds %s but overwrite_output_dir: true "
		    "starts from scratch and overwrites it",
		    last);
	}
	if (!dec->resume_ckpt[0])
		return;
	dec->resume = 1;
	if (ls)
		check_resume_files(in, dec, ls, resume);
}

/* A local model path that cannot be read (lf_inputs.model_missing). */
static void check_model_path(const struct lf_inputs *in,
			     struct lf_decision *dec, const char *model_path)
{
	char where[LF_DOC_NAME_MAX + 32];

	if (!model_path || !in->model_missing)
		return;
	where_of(in->yaml, lf_doc_root(in->yaml), "model_name_or_path", where,
		 sizeof(where));
	msg(dec, in, LF_ERROR, where,
	    "fix the path, or put the model at that path on every node (a "
	    "Hugging Face Hub id is written namespace/name)",
	    "model_name_or_path: %s is a local path and cannot be read on "
	    "this node: %s",
	    model_path, in->model_problem ? in->model_problem : "missing");
}

void lf_decide_submit(const struct lf_inputs *in, const char *model_path,
		      struct lf_decision *dec)
{
	check_keys(in, dec);
	check_model_path(in, dec, model_path);
}

/* The DeepSpeed offload to write (ds_offload_write: 1 on cpu, -1
 * removed, 0 as it is) for --distenv-offload. Separate so that
 * lf_decide reads as one step per concern. */
static void decide_offload(const struct lf_inputs *in,
			   const struct user_keys *u, const struct ds_facts *f,
			   struct lf_decision *dec)
{
	if (in->offload == LF_OFFLOAD_AUTO && in->ds && dec->zero_stage == 3 &&
	    in->gpu_mem > 0) {
		lf_decide_plan_memory(in, u, dec, 0, 0);
		if (dec->have_plan && dec->mem.gpu_short) {
			dec->ds_offload_write = 1;
			change(dec,
			       "DeepSpeed offload_param and "
			       "offload_optimizer on cpu (--distenv-offload="
			       "auto: %.1f GiB per GPU needed without "
			       "offload, %.1f GiB available)",
			       plan_gib(dec->mem.gpu_total),
			       plan_gib(in->gpu_mem));
		}
	} else if (in->offload == LF_OFFLOAD_CPU) {
		if (!in->ds) {
			msg(dec, in, LF_ERROR, "--distenv-offload=cpu",
			    "name a ZeRO-3 DeepSpeed config in deepspeed: "
			    "(LLaMA-Factory's examples/deepspeed/ds_z3_config.json)",
			    "offload needs a DeepSpeed config, and the YAML "
			    "has none");
		} else if (dec->zero_stage != 3) {
			msg(dec, in, LF_ERROR, "--distenv-offload=cpu",
			    "use a ZeRO-3 config (stage: 3)",
			    "parameter offload needs ZeRO stage 3, the config "
			    "has stage %d",
			    dec->zero_stage);
		} else if (!(f->optim_cpu && f->param_cpu)) {
			dec->ds_offload_write = 1;
			change(dec, "DeepSpeed offload_param and "
				    "offload_optimizer on cpu, pinned "
				    "(--distenv-offload=cpu)");
		}
	} else if (in->offload == LF_OFFLOAD_NONE && in->ds &&
		   (f->optim_found || f->param_found)) {
		dec->ds_offload_write = -1;
		change(dec, "DeepSpeed offload_param and offload_optimizer "
			    "removed (--distenv-offload=none)");
	}
}

/* Settings that fight: an offload_param without ZeRO-3, a
 * FORCE_TORCHRUN that stops a multi-node DeepSpeed run, a cutoff_len
 * beyond the model's context. Separate because these only report. */
static void check_fights(const struct lf_inputs *in, const struct user_keys *u,
			 const struct ds_facts *f, struct lf_decision *dec)
{
	struct lf_doc *y = in->yaml;
	yaml_node_t *root = lf_doc_root(y);
	char where[LF_DOC_NAME_MAX + 32];

	if (in->ds && f->param_found && f->param_cpu && dec->zero_stage != 3 &&
	    dec->ds_offload_write >= 0)
		msg(dec, in, LF_ERROR, in->ds->name,
		    "use stage 3 or remove offload_param",
		    "offload_param is only valid with ZeRO stage 3, the config "
		    "has stage %d",
		    dec->zero_stage);
	if (u->deepspeed && in->nnodes > 1 && in->force_torchrun &&
	    !truthy(in->force_torchrun))
		msg(dec, in, LF_WARN, "FORCE_TORCHRUN",
		    "unset FORCE_TORCHRUN (distenv sets it to 1) or set it to "
		    "1",
		    "FORCE_TORCHRUN=%s with DeepSpeed on %u nodes: "
		    "llamafactory-cli will not start torchrun and the run "
		    "stops (docs/contracts.md 1)",
		    in->force_torchrun, in->nnodes);
	if (u->cutoff_found && in->model &&
	    in->model->max_position_embeddings &&
	    (unsigned long long) u->cutoff_len >
		    in->model->max_position_embeddings) {
		where_of(y, root, "cutoff_len", where, sizeof(where));
		msg(dec, in, LF_WARN, where,
		    "lower cutoff_len, or extend the context with "
		    "rope_scaling",
		    "cutoff_len %lld is larger than the model's "
		    "max_position_embeddings %llu",
		    u->cutoff_len,
		    (unsigned long long) in->model->max_position_embeddings);
	}
}

int lf_decide(const struct lf_inputs *in, struct lf_decision *dec,
	      struct distenv_error *err)
{
	struct lf_doc *y = in->yaml;
	yaml_node_t *root = lf_doc_root(y);
	struct user_keys u;
	struct ds_facts f;
	char where[LF_DOC_NAME_MAX + 32];
	int optim_cpu, param_cpu;

	memset(dec, 0, sizeof(*dec));
	if (!root)
		return distenv_error_set(err, y->name, NULL,
					 "training YAML not loaded");
	if (lf_decide_read_user_keys(y, &u, err))
		return -1;
	memset(&f, 0, sizeof(f));
	if (in->ds && lf_decide_read_ds(in->ds, &f, err))
		return -1;
	snprintf(dec->output_dir, sizeof(dec->output_dir), "%s",
		 u.output_dir ? u.output_dir : "");
	snprintf(dec->deepspeed, sizeof(dec->deepspeed), "%s",
		 u.deepspeed ? u.deepspeed : "");
	dec->zero_stage = in->ds ? (f.stage_found ? (int) f.stage : 0) : 0;
	dec->gather16 = dec->zero_stage == 3 && f.gather16;
	check_keys(in, dec);

	where_of(y, root, "save_on_each_node", where, sizeof(where));
	decide_soen(in, &u, dec, u.soen_found ? where : "save_on_each_node");

	if (u.deepspeed && in->ds_unreadable) {
		where_of(y, root, "deepspeed", where, sizeof(where));
		msg(dec, in, LF_ERROR, where,
		    "fix the path (it is relative to the directory the job "
		    "starts in)",
		    "deepspeed: %s cannot be read: %s", u.deepspeed,
		    in->ds_problem ? in->ds_problem : "missing");
	}

	check_model_path(in, dec, u.model_path);

	/* Offload profile. */
	optim_cpu = f.optim_cpu;
	param_cpu = f.param_cpu;
	decide_offload(in, &u, &f, dec);
	if (dec->ds_offload_write > 0)
		optim_cpu = param_cpu = 1;
	else if (dec->ds_offload_write < 0)
		optim_cpu = param_cpu = 0;
	dec->ds_changed = dec->ds_offload_write != 0;
	dec->offload_cpu = optim_cpu && param_cpu;
	if (optim_cpu || param_cpu) {
		merge_alloc_conf(in, dec);
		if (dec->alloc_conf_set)
			change(dec,
			       "PYTORCH_CUDA_ALLOC_CONF=%s (offload: "
			       "expandable segments cut fragmentation)",
			       dec->alloc_conf);
	}

	keep_alloc_conf(in, dec);

	/* Settings that fight. */
	check_fights(in, &u, &f, dec);

	check_resume(in, &u, dec);
	lf_decide_plan_memory(in, &u, dec, optim_cpu, param_cpu);
	lf_decide_plan_fit(in, &u, &f, dec);
	if (dec->zero_stage == 3)
		lf_decide_check_memory(in, dec);
	lf_decide_check_fit(in, &u, dec);
	return 0;
}
