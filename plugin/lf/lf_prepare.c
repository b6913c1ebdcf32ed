/* lf_prepare.c: read, decide, write (contract in lf_prepare.h). */
#include "lf_prepare.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lf_sys.h"
#include "lf_write.h"

/* How long the node's other tasks wait for the writer (seconds). */
#define LF_WAIT_S 60

static int load(const char *path, struct lf_doc *doc, int *errnum,
		struct distenv_error *err)
{
	char *buf;
	size_t len;
	int rc;

	memset(doc, 0, sizeof(*doc));
	if (lf_sys_read_file(path, LF_DOC_MAX_BYTES, &buf, &len, errnum, err))
		return -1;
	rc = lf_doc_load(doc, path, buf, len, err);
	free(buf);
	return rc;
}

static int is_dir(const char *path)
{
	struct stat st;

	return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void read_latest(const char *ckpt_dir, char *tag, size_t len)
{
	char path[PATH_MAX], *buf = NULL;
	size_t n;

	tag[0] = '\0';
	snprintf(path, sizeof(path), "%s/latest", ckpt_dir);
	if (lf_sys_read_file(path, 4096, &buf, &n, NULL, NULL) == 0) {
		snprintf(tag, len, "%.*s", (int)strcspn(buf, " \t\r\n"), buf);
		free(buf);
	}
}

static void header(const struct lf_prepare_request *req,
		   const struct lf_prepare_facts *f,
		   const struct lf_decision *dec, const char *ds_path,
		   char *buf, size_t len)
{
	size_t i, o;

	o = (size_t)snprintf(buf, len,
			     "Resolved by distenv from %s (job %u step %u, "
			     "node %u of %u). The user's file is unchanged.\n",
			     req->config, f->job_id, f->step_id, f->node_id,
			     f->nnodes);
	if (!dec->nchanges && o < len)
		o += (size_t)snprintf(buf + o, len - o,
				      "No value changed: every key is the "
				      "user's.\n");
	for (i = 0; i < dec->nchanges && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "changed: %s\n",
				      dec->changes[i]);
	if (ds_path[0] && o < len)
		snprintf(buf + o, len - o,
			 "deepspeed: now %s (a copy of %s with the change above)\n",
			 ds_path, dec->deepspeed);
}

static int wait_for(const char *path, struct distenv_error *err)
{
	struct timespec ts = {0, 100 * 1000 * 1000};
	int i;

	for (i = 0; i < LF_WAIT_S * 10; i++) {
		if (access(path, R_OK) == 0)
			return 0;
		nanosleep(&ts, NULL);
	}
	return distenv_error_set(err, path, "see the message of the node's "
				 "first task", "the resolved config did not "
				 "appear within %d s", LF_WAIT_S);
}

static int first_error(const struct lf_decision *dec,
		       struct distenv_error *err)
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

int lf_prepare(const struct lf_prepare_request *req,
	       const struct lf_prepare_facts *f, struct lf_prepare_result *res,
	       struct distenv_error *err)
{
	struct lf_doc yaml, ds, model_doc;
	struct lf_model_config model;
	struct lf_inputs in;
	struct lf_sys_listing out_ls = {0}, ckpt_ls = {0};
	const char *output_dir = NULL, *deepspeed = NULL, *model_path = NULL;
	const char *resume = NULL, *fs = "unknown";
	char path[PATH_MAX], latest[128] = "", last[256];
	char head[4096];
	struct lf_yaml_edit edits[2];
	char quoted[PATH_MAX + 8];
	size_t nedits = 0, len;
	int found, ds_err = 0, have_ds = 0, have_model = 0, rc = -1;

	memset(res, 0, sizeof(*res));
	memset(&ds, 0, sizeof(ds));
	memset(&model_doc, 0, sizeof(model_doc));
	memset(&in, 0, sizeof(in));
	if (!req->config || !req->config[0])
		return distenv_error_set(err, "--distenv-lf-config",
					 "name the training YAML",
					 "no file given");
	if (load(req->config, &yaml, NULL, err))
		goto out;
	/* Peek at the paths; lf_decide reports wrong types. */
	lf_get_str(&yaml, lf_doc_root(&yaml), "output_dir", &output_dir,
		   &found, NULL);
	lf_get_str(&yaml, lf_doc_root(&yaml), "deepspeed", &deepspeed, &found,
		   NULL);
	lf_get_str(&yaml, lf_doc_root(&yaml), "model_name_or_path",
		   &model_path, &found, NULL);
	lf_get_str(&yaml, lf_doc_root(&yaml), "resume_from_checkpoint",
		   &resume, &found, NULL);

	if (deepspeed) {
		struct distenv_error e;

		distenv_error_clear(&e);
		if (load(deepspeed, &ds, &ds_err, &e)) {
			if (!ds_err) { /* read fine, parse failed */
				*err = e;
				goto out;
			}
			in.ds_unreadable = 1;
			in.ds_problem = strerror(ds_err);
		} else {
			have_ds = 1;
		}
	}
	if (!req->model_params && is_dir(model_path)) {
		int e = 0;

		snprintf(path, sizeof(path), "%s/config.json", model_path);
		if (load(path, &model_doc, &e, err)) {
			if (!e)
				goto out;
		} else if (lf_model_read(&model_doc, &model, err)) {
			goto out;
		} else {
			have_model = 1;
		}
	}
	if (output_dir) {
		if (lf_sys_storage(output_dir, req->storage_policy,
				   &in.out_storage, &fs, err))
			goto out;
		if (lf_sys_list(output_dir, 3, NULL, &out_ls, err))
			goto out;
	}
	if (resume && strcmp(resume, "true") && strcmp(resume, "True") &&
	    is_dir(resume)) {
		const char *base = strrchr(resume, '/');

		base = base && base[1] ? base + 1 : resume;
		if (lf_sys_list(resume, 2, base, &ckpt_ls, err))
			goto out;
		in.ckpt_ls = &ckpt_ls.ls;
		read_latest(resume, latest, sizeof(latest));
	} else if (resume && strcmp(resume, "true") &&
		   strcmp(resume, "True")) {
		/* A resume path that does not exist: nothing to list, so
		 * every file shows as missing. */
		in.ckpt_ls = &ckpt_ls.ls;
	} else if (output_dir &&
		   lf_last_checkpoint(&out_ls.ls, last, sizeof(last))) {
		snprintf(path, sizeof(path), "%s/%s", output_dir, last);
		read_latest(path, latest, sizeof(latest));
	}

	in.yaml = &yaml;
	in.ds = have_ds ? &ds : NULL;
	in.model = have_model ? &model : NULL;
	in.model_params = req->model_params;
	in.soen = req->soen;
	in.offload = req->offload;
	in.check = req->check;
	in.nnodes = f->nnodes ? f->nnodes : 1;
	in.node_id = f->node_id;
	in.gpus_per_node = f->gpus_per_node ? f->gpus_per_node : 1;
	in.force_torchrun = f->force_torchrun;
	in.alloc_conf = f->alloc_conf;
	in.out_fs = fs;
	in.gpu_mem = (double)req->gpu_mem;
	in.host_mem = req->host_mem ? (double)req->host_mem :
		      f->alloc_mem_mb ? (double)f->alloc_mem_mb * 1048576.0 :
					(double)f->node_ram;
	in.out_ls = output_dir ? &out_ls.ls : NULL;
	in.latest_tag = latest[0] ? latest : NULL;
	if (lf_decide(&in, &res->dec, err))
		goto out;

	/* The node index too: a TMPDIR shared by the nodes must not make
	 * them share (or race for) one copy. */
	snprintf(res->dir, sizeof(res->dir), "%s/distenv-%u-%u.%u-%u",
		 f->tmpdir && f->tmpdir[0] ? f->tmpdir : "/tmp",
		 (unsigned)geteuid(), f->job_id, f->step_id, f->node_id);
	snprintf(res->config_path, sizeof(res->config_path),
		 "%s/lf_config.yaml", res->dir);
	if (res->dec.ds_changed && have_ds) {
		snprintf(res->ds_path, sizeof(res->ds_path), "%s/ds_config.json",
			 res->dir);
		if (lf_write_ds_json(&ds, res->dec.ds_offload_write,
				     &res->ds_text, &len, err))
			goto out;
		lf_yaml_quote(res->ds_path, quoted, sizeof(quoted));
		edits[nedits].key = "deepspeed";
		edits[nedits++].value = quoted;
	}
	if (res->dec.soen_set) {
		edits[nedits].key = "save_on_each_node";
		edits[nedits++].value = res->dec.soen ? "true" : "false";
	}
	header(req, f, &res->dec, res->ds_path, head, sizeof(head));
	if (lf_write_yaml(&yaml, edits, nedits, head, &res->yaml_text, &len,
			  err))
		goto out;
	if (res->dec.alloc_conf_set) {
		snprintf(res->alloc_conf, sizeof(res->alloc_conf), "%s",
			 res->dec.alloc_conf);
		res->alloc_conf_set = 1;
	}
	if (first_error(&res->dec, err))
		goto out;
	if (f->write == LF_WRITE_FILES) {
		if (lf_sys_private_dir(res->dir, err))
			goto out;
		if (res->ds_text &&
		    lf_sys_write_new(res->dir, "ds_config.json", res->ds_text,
				     strlen(res->ds_text), err))
			goto out;
		if (lf_sys_write_new(res->dir, "lf_config.yaml",
				     res->yaml_text, strlen(res->yaml_text),
				     err))
			goto out;
	} else if (f->write == LF_WRITE_WAIT &&
		   wait_for(res->config_path, err)) {
		goto out;
	}
	rc = 0;
out:
	lf_sys_listing_free(&out_ls);
	lf_sys_listing_free(&ckpt_ls);
	lf_doc_free(&yaml);
	lf_doc_free(&ds);
	lf_doc_free(&model_doc);
	return rc;
}

void lf_prepare_result_free(struct lf_prepare_result *res)
{
	free(res->yaml_text);
	free(res->ds_text);
	res->yaml_text = res->ds_text = NULL;
}
