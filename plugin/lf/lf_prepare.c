/* lf_prepare.c: read, decide, write (contract in lf_prepare.h). */
#include "lf_prepare.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "distenv_env.h"
#include "lf_ckpt.h"
#include "lf_prepare_int.h"
#include "lf_sys.h"
#include "lf_write.h"

/* How long the node's other tasks wait for the writer (seconds). */
#define LF_WAIT_S 60

/* Read and parse path; *errnum (may be NULL) is 0 when it was read. */
int lf_prepare_load_doc(const struct distenv_file_rules *rules,
			const char *path, struct lf_doc *doc, int *errnum,
			struct distenv_error *err)
{
	struct distenv_file f;
	int rc;

	memset(doc, 0, sizeof(*doc));
	rc = distenv_file_read(path, rules, &f, err);
	if (errnum)
		*errnum = f.errnum;
	if (rc)
		return -1;
	rc = lf_doc_load(doc, path, f.data, f.len, err);
	distenv_file_free(&f);
	return rc;
}

static int is_dir(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void read_latest(const char *ckpt_dir, char *tag, size_t len)
{
	char path[PATH_MAX];
	struct distenv_file f;

	tag[0] = '\0';
	snprintf(path, sizeof(path), "%s/latest", ckpt_dir);
	if (distenv_file_read(path, &lf_sys_latest_rules, &f, NULL) == 0) {
		snprintf(tag, len, "%.*s", (int) strcspn(f.data, " \t\r\n"),
			 f.data);
		distenv_file_free(&f);
	}
}

/* lf_ckpt_choose's view of each checkpoint's `latest`. */
struct latest_ctx {
	const char *output_dir;
	char tag[128];
};

static const char *latest_of(void *p, const char *name)
{
	struct latest_ctx *c = p;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", c->output_dir, name);
	read_latest(path, c->tag, sizeof(c->tag));
	return c->tag[0] ? c->tag : NULL;
}

static void add_change(struct lf_decision *dec, const char *text)
{
	if (dec->nchanges < LF_CHANGE_MAX)
		snprintf(dec->changes[dec->nchanges++], sizeof(dec->changes[0]),
			 "%s", text);
}

/* The base folder (lf_dir.h), and a note in the copy's header when
 * TMPDIR was passed over. */
static const char *resolved_base(const struct lf_prepare_request *req,
				 const char *tmpdir,
				 struct lf_prepare_result *res)
{
	struct lf_dir_choice c;
	char text[sizeof(res->dec.changes[0])];

	lf_dir_choose(req->dir, req->site_dir, tmpdir, &c);
	lf_dir_prefer_mounted(&c,
			      lf_container_default_dir(req->container, is_dir));
	res->dir_source = (int) c.source;
	if (c.source != LF_DIR_FROM_TMP_BLANK)
		return c.base;
	snprintf(text, sizeof(text),
		 "written under /tmp, not TMPDIR=\"%s\": "
		 "LLaMA-Factory splits torchrun's command line on whitespace",
		 tmpdir);
	add_change(&res->dec, text);
	return c.base;
}

/*
 * --distenv-resume=auto: choose the checkpoint (lf_ckpt.h) with the
 * ZeRO stage of a first decision made without the resume check, then
 * decide again with it (or, when none is complete here, as the YAML
 * says, so that the usual preflight reports what is missing).
 */
static int choose_auto(const char *output_dir, const char *out_c,
		       struct lf_sys_listing *out_ls, struct lf_inputs *in,
		       struct lf_prepare_result *res, char *latest,
		       size_t latest_len, struct distenv_error *err)
{
	struct lf_resume_input ri;
	struct lf_ckpt_choice ch;
	struct latest_ctx lc = { output_dir, "" };

	in->resume_override = "";
	if (lf_decide(in, &res->dec, err))
		return -1;
	lf_resume_input_of(in, res->dec.zero_stage, &ri);
	lf_ckpt_choose(&out_ls->ls, &ri, latest_of, &lc, &ch);
	lf_ckpt_describe(&ch, res->resume_note, sizeof(res->resume_note));
	res->resume_set = 1;
	in->resume_override = NULL;
	if (ch.found) {
		/* the copy's resume_from_checkpoint: a container path */
		snprintf(res->resume_path, sizeof(res->resume_path), "%s/%s",
			 out_c, ch.chosen);
		in->resume_override = res->resume_path;
		in->ckpt_ls = &out_ls->ls;
		latest_of(&lc, ch.chosen);
		snprintf(latest, latest_len, "%s", lc.tag);
		in->latest_tag = latest[0] ? latest : NULL;
	}
	return lf_decide(in, &res->dec, err);
}

static void header(const struct lf_prepare_request *req,
		   const struct lf_prepare_facts *f,
		   const struct lf_prepare_result *res, char *buf, size_t len)
{
	const struct lf_decision *dec = &res->dec;
	const char *ds_path = res->ds_path;
	size_t i, o;

	o = (size_t) snprintf(buf, len,
			      "Resolved by distenv from %s (job %u step %u, "
			      "node %u of %u). The user's file is unchanged.\n"
			      "Written in %s, under the directory of %s.\n",
			      req->config, f->job_id, f->step_id, f->node_id,
			      f->nnodes, res->dir,
			      lf_dir_source_text((enum lf_dir_source)
							 res->dir_source));
	if (!dec->nchanges && o < len)
		o += (size_t) snprintf(buf + o, len - o,
				       "No value changed: every key is the "
				       "user's.\n");
	for (i = 0; i < dec->nchanges && o < len; i++)
		o += (size_t) snprintf(buf + o, len - o, "changed: %s\n",
				       dec->changes[i]);
	if (ds_path[0] && o < len)
		snprintf(
			buf + o, len - o,
			"deepspeed: now %s (a copy of %s with the change above)\n",
			ds_path, dec->deepspeed);
}

static int wait_for(const char *path, struct distenv_error *err)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	int i;

	for (i = 0; i < LF_WAIT_S * 10; i++) {
		if (access(path, R_OK) == 0)
			return 0;
		nanosleep(&ts, NULL);
	}
	return distenv_error_set(err, path,
				 "see the message of the node's "
				 "first task",
				 "the resolved config did not "
				 "appear within %d s",
				 LF_WAIT_S);
}

/* lf_inputs.model_missing: a local path (lf_model_path_is_local) that
 * this user cannot read. */
static void model_readable(const char *model_path, struct lf_inputs *in)
{
	if (model_path && lf_model_path_is_local(model_path) &&
	    access(model_path, R_OK) != 0) {
		in->model_missing = 1;
		in->model_problem = strerror(errno);
	}
}

static int first_error(const struct lf_decision *dec, struct distenv_error *err)
{
	size_t i;

	for (i = 0; i < dec->msgs.count; i++) {
		if (dec->msgs.items[i].level != LF_ERROR)
			continue;
		*err = dec->msgs.items[i].e;
		if (dec->msgs.errors > 1) {
			char more[64];

			snprintf(more, sizeof(more), " (and %zu more)",
				 dec->msgs.errors - 1);
			strncat(err->what, more,
				sizeof(err->what) - strlen(err->what) - 1);
		}
		return -1;
	}
	return 0;
}

/* What lf_prepare's phases hand on to each other: the documents read,
 * the listings made and the inputs lf_decide is given. */
struct prep_state {
	struct lf_doc yaml, ds, model_doc;
	struct plan_model_config model;
	struct lf_inputs in;
	struct lf_sys_listing out_ls, ckpt_ls;
	const char *output_dir, *deepspeed, *model_path, *resume, *fs;
	char latest[128];
	char how[640]; /* how output_dir's storage was found */
	/* Under a pyxis step (lf_container.h): output_dir as the YAML
	 * names it, the host paths looked at, and what could not be. */
	const char *out_c;
	char out_host[PATH_MAX], ds_host[PATH_MAX], model_host[PATH_MAX];
	char resume_host[PATH_MAX];
	struct distenv_error unseen[4];
	int mode, have_ds, have_model;
};

/* The host path of path, which the YAML's key names (lf_container.h):
 * path itself without a container; NULL when it has no host path, with
 * the warning in *unseen for the decision's messages. */
static const char *on_host(const struct lf_prepare_request *req,
			   const char *key, const char *path, char *buf,
			   size_t len, struct distenv_error *unseen)
{
	if (!path || !req->container || !req->container->active)
		return path;
	return lf_container_host(req->container, key, path, buf, len, unseen) ?
		       NULL :
		       buf;
}

/* Load the inputs: the training YAML, the DeepSpeed JSON and the
 * model's config.json it names, and the output directory's storage and
 * listing, each at its host path (on_host). Separate so that reading is
 * one step before any decision. */
static int prepare_load(const struct lf_prepare_request *req,
			struct prep_state *st, struct distenv_error *err)
{
	char path[PATH_MAX];
	const char *ds, *model;
	int found, ds_err = 0;

	if (lf_prepare_load_doc(&lf_sys_yaml_rules, req->config, &st->yaml,
				NULL, err))
		return -1;
	/* Peek at the paths; lf_decide reports wrong types. */
	lf_get_str(&st->yaml, lf_doc_root(&st->yaml), "output_dir",
		   &st->output_dir, &found, NULL);
	lf_get_str(&st->yaml, lf_doc_root(&st->yaml), "deepspeed",
		   &st->deepspeed, &found, NULL);
	lf_get_str(&st->yaml, lf_doc_root(&st->yaml), "model_name_or_path",
		   &st->model_path, &found, NULL);
	lf_get_str(&st->yaml, lf_doc_root(&st->yaml), "resume_from_checkpoint",
		   &st->resume, &found, NULL);
	st->out_c = st->output_dir;
	st->output_dir =
		on_host(req, "output_dir", st->output_dir, st->out_host,
			sizeof(st->out_host), &st->unseen[0]);
	ds = on_host(req, "deepspeed", st->deepspeed, st->ds_host,
		     sizeof(st->ds_host), &st->unseen[1]);
	/* a hub id is no path: only a local one is looked for */
	model = st->model_path && lf_model_path_is_local(st->model_path) ?
			on_host(req, "model_name_or_path", st->model_path,
				st->model_host, sizeof(st->model_host),
				&st->unseen[2]) :
			st->model_path;

	if (ds) {
		struct distenv_error e;

		distenv_error_clear(&e);
		if (lf_prepare_load_doc(&lf_sys_ds_rules, ds, &st->ds, &ds_err,
					&e)) {
			if (!ds_err) { /* read fine, parse failed */
				*err = e;
				return -1;
			}
			st->in.ds_unreadable = 1;
			st->in.ds_problem = strerror(ds_err);
		} else {
			st->have_ds = 1;
		}
	}
	model_readable(model, &st->in);
	if (!req->model_params && is_dir(model)) {
		int e = 0;

		snprintf(path, sizeof(path), "%s/config.json", model);
		if (lf_prepare_load_doc(&lf_sys_model_rules, path,
					&st->model_doc, &e, err)) {
			if (!e)
				return -1;
		} else if (lf_model_read(&st->model_doc, &st->model, err)) {
			return -1;
		} else {
			st->have_model = 1;
		}
	}
	if (st->output_dir) {
		if (lf_sys_storage(st->output_dir, req->storage_policy,
				   &st->in.out_storage, &st->fs, err))
			return -1;
		if (lf_sys_list(st->output_dir, 3, NULL, &st->out_ls, err))
			return -1;
	}
	return 0;
}

/* The storage marks of this start (lf_storage_mark.h), read when the
 * step has several nodes and the caller named this node and the one
 * whose mark it reads: a verdict from them replaces the site policy's
 * and the file system type's. Separate because it is the only input
 * that comes from another node. */
static void prepare_load_marks(const struct lf_prepare_facts *f,
			       struct prep_state *st)
{
	char own[LF_MARK_TEXT_MAX], other[LF_MARK_TEXT_MAX], guess[96];
	int own_ok, other_ok, n;
	enum lf_storage verdict;

	if (!st->output_dir || f->nnodes < 2 || !f->node_name ||
	    !f->node_name[0] || !f->partner_name || !f->partner_name[0])
		return;
	own_ok =
		lf_sys_mark_read(st->output_dir, f->node_name, own,
				 sizeof(own)) &&
		lf_mark_matches(own, f->job_id, f->restart_count, f->node_name);
	other_ok = lf_sys_mark_read(st->output_dir, f->partner_name, other,
				    sizeof(other)) &&
		   lf_mark_matches(other, f->job_id, f->restart_count,
				   f->partner_name);
	verdict = lf_mark_verdict(own_ok, other_ok);
	if (!strcmp(st->fs, "site policy"))
		snprintf(guess, sizeof(guess), "the site policy");
	else
		snprintf(guess, sizeof(guess), "the file system type (%s)",
			 st->fs);
	if (verdict == LF_STORAGE_UNKNOWN) {
		snprintf(st->how, sizeof(st->how),
			 "guessed from %s: no --distenv-mark-storage step of "
			 "this job start marked it",
			 guess);
		st->in.out_how = st->how;
		return;
	}
	n = snprintf(st->how, sizeof(st->how),
		     "probed: %s's mark of this job start is %svisible here",
		     f->partner_name, other_ok ? "" : "not ");
	if (n > 0 && (size_t) n < sizeof(st->how) &&
	    st->in.out_storage != LF_STORAGE_UNKNOWN &&
	    st->in.out_storage != verdict)
		snprintf(st->how + n, sizeof(st->how) - (size_t) n,
			 ", though %s says %s", guess,
			 lf_storage_name(st->in.out_storage));
	st->in.out_storage = verdict;
	st->in.out_how = st->how;
}

/* The storage messages name the host path looked at, when it is not
 * the YAML's (a pyxis mount). */
static void prepare_name_host(struct prep_state *st)
{
	char how[sizeof(st->how)];

	if (!st->output_dir || !st->out_c || !strcmp(st->output_dir, st->out_c))
		return;
	snprintf(how, sizeof(how), "%s; looked at on the host at %s",
		 st->in.out_how ? st->in.out_how : st->fs, st->output_dir);
	memcpy(st->how, how, sizeof(how));
	st->in.out_how = st->how;
}

/* Load the checkpoint to resume from: settle the resume mode and list
 * the checkpoint it names. Separate from prepare_load because it
 * depends on the step's --distenv-resume as well as on the YAML. */
static int prepare_load_resume(const struct lf_prepare_request *req,
			       const struct lf_prepare_facts *f,
			       struct prep_state *st,
			       struct lf_prepare_result *res,
			       struct distenv_error *err)
{
	const char *resume;
	char path[PATH_MAX], last[256];

	st->mode = req->resume;
	if (st->mode == LF_RESUME_DEFAULT)
		st->mode = f->restart_count ? LF_RESUME_AUTO : LF_RESUME_OFF;
	if (st->mode == LF_RESUME_AUTO && !st->output_dir)
		st->mode = LF_RESUME_OFF;
	if (st->mode == LF_RESUME_PATH && req->resume_path &&
	    req->resume_path[0]) {
		/* listed and checked below like a resume_from_checkpoint
		 * path in the YAML */
		st->resume = req->resume_path;
		res->resume_set = 1;
		snprintf(res->resume_path, sizeof(res->resume_path), "%s",
			 st->resume);
		snprintf(res->resume_note, sizeof(res->resume_note),
			 "resume from %s (--distenv-resume: the step's "
			 "choice)",
			 st->resume);
	}
	resume = st->resume;
	if (resume && strcmp(resume, "true") && strcmp(resume, "True") &&
	    st->mode != LF_RESUME_AUTO) {
		/* no host path: not checked, rather than all missing */
		resume = on_host(req, "resume_from_checkpoint", resume,
				 st->resume_host, sizeof(st->resume_host),
				 &st->unseen[3]);
		if (!resume)
			return 0;
	}
	if (st->mode == LF_RESUME_AUTO) {
		/* chosen after the first decision (choose_auto) */
	} else if (resume && strcmp(resume, "true") && strcmp(resume, "True") &&
		   is_dir(resume)) {
		const char *base = strrchr(resume, '/');

		base = base && base[1] ? base + 1 : resume;
		if (lf_sys_list(resume, 2, base, &st->ckpt_ls, err))
			return -1;
		st->in.ckpt_ls = &st->ckpt_ls.ls;
		read_latest(resume, st->latest, sizeof(st->latest));
	} else if (resume && strcmp(resume, "true") && strcmp(resume, "True")) {
		/* A resume path that does not exist: nothing to list, so
		 * every file shows as missing. */
		st->in.ckpt_ls = &st->ckpt_ls.ls;
	} else if (st->output_dir &&
		   lf_last_checkpoint(&st->out_ls.ls, last, sizeof(last))) {
		snprintf(path, sizeof(path), "%s/%s", st->output_dir, last);
		read_latest(path, st->latest, sizeof(st->latest));
	}
	return 0;
}

/* Decide: fill lf_decide's inputs from what was loaded and the node's
 * facts, and decide (choosing the checkpoint first in auto mode).
 * Separate so that the decision sees only lf_inputs. */
static int prepare_decide(const struct lf_prepare_request *req,
			  const struct lf_prepare_facts *f,
			  struct prep_state *st, struct lf_prepare_result *res,
			  struct distenv_error *err)
{
	struct lf_inputs *in = &st->in;

	in->yaml = &st->yaml;
	in->ds = st->have_ds ? &st->ds : NULL;
	in->model = st->have_model ? &st->model : NULL;
	in->model_params = req->model_params;
	in->soen = req->soen;
	in->offload = req->offload;
	in->check = req->check;
	in->nnodes = f->nnodes ? f->nnodes : 1;
	in->node_id = f->node_id;
	in->gpus_per_node = f->gpus_per_node ? f->gpus_per_node : 1;
	in->force_torchrun = f->force_torchrun;
	in->alloc_conf = f->alloc_conf;
	in->optim_torch = f->optim_torch;
	in->out_fs = st->fs;
	in->gpu_mem = (double) req->gpu_mem;
	in->answer_tokens = req->answer_tokens;
	in->stack = &req->stack;
	in->host_mem = req->host_mem   ? (double) req->host_mem :
		       f->alloc_mem_mb ? (double) f->alloc_mem_mb * 1048576.0 :
					 (double) f->node_ram;
	in->out_ls = st->output_dir ? &st->out_ls.ls : NULL;
	in->latest_tag = st->latest[0] ? st->latest : NULL;
	if (st->mode == LF_RESUME_PATH && res->resume_set)
		in->resume_override = res->resume_path;
	if (st->mode == LF_RESUME_AUTO)
		return choose_auto(st->output_dir, st->out_c, &st->out_ls, in,
				   res, st->latest, sizeof(st->latest), err);
	return lf_decide(in, &res->dec, err);
}

/* Render: name the step's private directory and make the texts of the
 * edited YAML and DeepSpeed JSON in memory. Separate so that nothing
 * is written until every text is made and no decision failed. */
static int prepare_render(const struct lf_prepare_request *req,
			  const struct lf_prepare_facts *f,
			  struct prep_state *st, struct lf_prepare_result *res,
			  struct distenv_error *err)
{
	char head[4096];
	struct lf_yaml_edit edits[4];
	char quoted[PATH_MAX + 8], rquoted[PATH_MAX + 8];
	size_t nedits = 0, len;

	/* The node index too: a TMPDIR shared by the nodes must not make
	 * them share (or race for) one copy. */
	/* and the restart: a requeued job keeps its ID and counts its
	 * steps from 0 again, and a node-local TMPDIR keeps the first
	 * run's copy, which must not be taken for this run's. */
	lf_resolved_dir(resolved_base(req, f->tmpdir, res),
			(unsigned) geteuid(), f->job_id, f->step_id, f->node_id,
			f->restart_count, res->dir, sizeof(res->dir));
	/* what the training reads: their paths in the container */
	res->dir_seen = !lf_container_path(req->container, res->dir, res->dir_c,
					   sizeof(res->dir_c));
	snprintf(res->config_path, sizeof(res->config_path),
		 "%s/lf_config.yaml", res->dir_c);
	if (res->dec.ds_changed && st->have_ds) {
		snprintf(res->ds_path, sizeof(res->ds_path),
			 "%s/ds_config.json", res->dir_c);
		if (lf_write_ds_json(&st->ds, res->dec.ds_offload_write,
				     &res->ds_text, &len, err))
			return -1;
		lf_yaml_quote(res->ds_path, quoted, sizeof(quoted));
		edits[nedits].key = "deepspeed";
		edits[nedits++].value = quoted;
	}
	if (res->dec.soen_set) {
		edits[nedits].key = "save_on_each_node";
		edits[nedits++].value = res->dec.soen ? "true" : "false";
	}
	if (res->resume_set && res->resume_path[0]) {
		/* Transformers reads resume_from_checkpoint as the directory
		 * to load; overwrite_output_dir: true would make
		 * LLaMA-Factory skip its own resume logic and is never what
		 * a resumed run wants (it is false in the copy only). */
		lf_yaml_quote(res->resume_path, rquoted, sizeof(rquoted));
		edits[nedits].key = "resume_from_checkpoint";
		edits[nedits++].value = rquoted;
		edits[nedits].key = "overwrite_output_dir";
		edits[nedits++].value = "false";
		snprintf(head, sizeof(head),
			 "resume_from_checkpoint: %s "
			 "(--distenv-resume; overwrite_output_dir: false so "
			 "that it is kept)",
			 res->resume_path);
		add_change(&res->dec, head);
	}
	header(req, f, res, head, sizeof(head));
	if (lf_write_yaml(&st->yaml, edits, nedits, head, &res->yaml_text, &len,
			  err))
		return -1;
	if (res->dec.alloc_conf_set) {
		snprintf(res->alloc_conf, sizeof(res->alloc_conf), "%s",
			 res->dec.alloc_conf);
		res->alloc_conf_set = 1;
	}
	return first_error(&res->dec, err);
}

/* Publish: write the rendered files into the private directory, or wait
 * for the node's writing task to have done so. Separate because it is
 * the only phase with side effects others see. */
static int prepare_publish(const struct lf_prepare_request *req,
			   const struct lf_prepare_facts *f,
			   struct lf_prepare_result *res,
			   struct distenv_error *err)
{
	char restore[PATH_MAX], own[PATH_MAX];

	snprintf(own, sizeof(own), "%s/lf_config.yaml", res->dir);
	if (f->write == LF_WRITE_FILES) {
		/* before the copy, which the node's other tasks wait for;
		 * the checkpoint is the YAML's, a container path */
		if (res->dec.restore_latest &&
		    lf_container_host(req->container, "output_dir",
				      res->dec.restore_dir, restore,
				      sizeof(restore), err))
			return -1;
		if (res->dec.restore_latest &&
		    lf_sys_write_new(restore, "latest", res->dec.restore_tag,
				     strlen(res->dec.restore_tag), err))
			return -1;
		if (lf_sys_private_dir(res->dir, err))
			return -1;
		if (res->ds_text &&
		    lf_sys_write_private(res->dir, "ds_config.json",
					 res->ds_text, strlen(res->ds_text),
					 err))
			return -1;
		if (lf_sys_write_private(res->dir, "lf_config.yaml",
					 res->yaml_text, strlen(res->yaml_text),
					 err))
			return -1;
	} else if (f->write == LF_WRITE_WAIT && wait_for(own, err)) {
		return -1;
	}
	return 0;
}

/* A pyxis step's paths not looked at on the host (lf_container.h):
 * warnings, errors under --distenv-check=strict. Returns 0. */
static int prepare_unseen(const struct lf_prepare_request *req,
			  const struct prep_state *st,
			  struct lf_prepare_result *res)
{
	size_t i;

	for (i = 0; i < sizeof(st->unseen) / sizeof(st->unseen[0]); i++)
		if (distenv_error_is_set(&st->unseen[i]))
			lf_msgs_add(&res->dec.msgs,
				    req->check == LF_CHECK_STRICT ? LF_ERROR :
								    LF_WARN,
				    &st->unseen[i]);
	return 0;
}

int lf_prepare(const struct lf_prepare_request *req,
	       const struct lf_prepare_facts *f, struct lf_prepare_result *res,
	       struct distenv_error *err)
{
	struct prep_state st;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	memset(&st, 0, sizeof(st));
	st.fs = "unknown";
	if (!req->config || !req->config[0])
		return distenv_error_set(err, "--distenv-lf-config",
					 "name the training YAML",
					 "no file given");
	if (prepare_load(req, &st, err))
		goto out;
	prepare_load_marks(f, &st);
	prepare_name_host(&st);
	if (prepare_load_resume(req, f, &st, res, err) ||
	    prepare_decide(req, f, &st, res, err) ||
	    prepare_unseen(req, &st, res) ||
	    prepare_render(req, f, &st, res, err) ||
	    prepare_publish(req, f, res, err))
		goto out;
	rc = 0;
out:
	lf_sys_listing_free(&st.out_ls);
	lf_sys_listing_free(&st.ckpt_ls);
	lf_doc_free(&st.yaml);
	lf_doc_free(&st.ds);
	lf_doc_free(&st.model_doc);
	return rc;
}

void lf_prepare_result_free(struct lf_prepare_result *res)
{
	free(res->yaml_text);
	free(res->ds_text);
	res->yaml_text = res->ds_text = NULL;
}

int lf_prepare_submit_check(const char *config, int check, int container,
			    struct distenv_error *err)
{
	struct lf_inputs in;
	struct lf_decision *dec;
	struct lf_doc yaml;
	const char *model_path = NULL;
	int found = 0, rc;

	if (check == LF_CHECK_OFF)
		return 0;
	memset(&in, 0, sizeof(in));
	memset(&yaml, 0, sizeof(yaml));
	if (lf_prepare_load_doc(&lf_sys_yaml_rules, config, &yaml, NULL, err))
		return -1;
	dec = calloc(1, sizeof(*dec));
	if (!dec) {
		lf_doc_free(&yaml);
		return distenv_error_set(err, config, NULL, "out of memory");
	}
	in.yaml = &yaml;
	in.check = check;
	lf_get_str(&yaml, lf_doc_root(&yaml), "model_name_or_path", &model_path,
		   &found, NULL);
	/* in a container the path is the container's (lf_container.h):
	 * the task looks at it through the mounts */
	if (!container)
		model_readable(model_path, &in);
	lf_decide_submit(&in, model_path, dec);
	rc = first_error(dec, err);
	free(dec);
	lf_doc_free(&yaml);
	return rc;
}
