/*
 * spank_lf.c: --distenv-lf-config in slurmstepd's task_init (fully the
 * user, docs/contracts.md 5), after the launch variables are
 * derived: read the user's LLaMA-Factory YAML and DeepSpeed JSON, decide,
 * write the resolved copy once per step per node (local task 0; the
 * node's other tasks wait for it at the same path), run the preflights,
 * and export DISTENV_LF_CONFIG (and PYTORCH_CUDA_ALLOC_CONF merged with
 * the user's value when offload is on). Warnings go to the job's stderr
 * once per node; errors (every warning under --distenv-check=strict)
 * fail the step before launch through report() in spank_task.c.
 *
 * Also the submit-side check of the file (srun/sbatch/salloc, as the
 * user): it must be a readable regular file that parses, so that a
 * syntax error fails the command rather than the step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <slurm/spank.h>

#include "distenv_env.h"
#include "distenv_gpus.h"
#include "lf_argv.h"
#include "lf_ckpt.h"
#include "lf_doc.h"
#include "lf_prepare.h"
#include "lf_sys.h"
#include "plan_memory.h"
#include "spank_state.h"

int distenv_lf_config_check(const char *path, struct distenv_error *err)
{
	struct lf_doc doc;
	struct distenv_file f;
	int rc;

	if (distenv_file_read(path, &lf_sys_yaml_rules, &f, err))
		return -1;
	rc = lf_doc_load(&doc, path, f.data, f.len, err);
	lf_doc_free(&doc);
	distenv_file_free(&f);
	return rc;
}

static void print_warnings(const struct lf_decision *dec, const char *node)
{
	char line[3 * DISTENV_ERROR_TEXT];
	size_t i;

	for (i = 0; i < dec->msgs.count; i++) {
		if (dec->msgs.items[i].level != LF_WARN)
			continue;
		distenv_error_format(&dec->msgs.items[i].e, line, sizeof(line));
		fprintf(stderr, "distenv: warning: %s: %s\n", node, line);
	}
	fflush(stderr);
}

/* --distenv-show: the memory plan, each line prefixed like the
 * variables ("distenv: NODE: "). */
static void print_plan(const struct lf_decision *dec, const char *node)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);

	if (!mem)
		return;
	plan_mem_plan_print(mem, &dec->mem_in, &dec->mem);
	fclose(mem);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		fprintf(stderr, "distenv: %s: %s\n", node, line);
	fflush(stderr);
	free(text);
}

/* The site file's storage: list for this job's partition, as lf_prepare
 * takes it ("shared:/gpfs,local:/scratch"); "" without a site file. */
static void storage_policy(const char *const *env, char *buf, size_t len)
{
	const struct distenv_plugin_state *st = &distenv_state;
	struct distenv_policy eff;
	size_t i, used = 0;

	buf[0] = '\0';
	if (!st->have_policy ||
	    distenv_policy_effective(&st->policy,
				     distenv_env_get(env,
						     "SLURM_JOB_PARTITION"),
				     &eff))
		return;
	for (i = 0; i < eff.n_storage; i++) {
		int w = snprintf(buf + used, len - used, "%s%s:%s",
				 used ? "," : "",
				 distenv_storage_kind_name(eff.storage[i].kind),
				 eff.storage[i].path);

		if (w < 0 || (size_t) w >= len - used) {
			buf[used] = '\0';
			return;
		}
		used += (size_t) w;
	}
}

void distenv_lf_site_dir(spank_t sp, char *buf, size_t len)
{
	struct distenv_site site;

	distenv_job_site(sp, &site);
	snprintf(buf, len, "%s", site.lf_dir);
}

static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* A finding of the same on every node: under --distenv-check=strict
 * the step's error (every task fails), else a warning the node's first
 * task prints. */
static int warn_or_fail(const struct distenv_error *e, const char *node,
			int local_id, struct distenv_error *err)
{
	if (distenv_state.lf.check == LF_CHECK_STRICT) {
		*err = *e;
		return -1;
	}
	if (local_id == 0) {
		char line[3 * DISTENV_ERROR_TEXT];

		distenv_error_format(e, line, sizeof(line));
		fprintf(stderr, "distenv: warning: %s: %s\n", node, line);
		fflush(stderr);
	}
	return 0;
}

/* The step's command naming the original YAML (lf_argv.h): a warning,
 * under --distenv-check=strict an error; the same on every node, since
 * every task has the same command. */
static int check_argv(spank_t sp, const char *node, int local_id,
		      struct distenv_error *err)
{
	const struct lf_prepare_request *r = &distenv_state.lf;
	char word[DISTENV_LF_PATH_MAX];
	char **argv = NULL;
	int argc = 0;
	struct distenv_error e;

	if (r->check == LF_CHECK_OFF ||
	    spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
	    !lf_argv_names_original(argc, argv, r->config, same_file, word,
				    sizeof(word)))
		return 0;
	distenv_error_set(&e, "--distenv-lf-config",
			  "run the copy: llamafactory-cli train "
			  "\"$DISTENV_LF_CONFIG\" (inside bash -c '...', so "
			  "that the task expands it)",
			  "the step's command names %s, the original: the "
			  "resolved copy distenv wrote (save_on_each_node, "
			  "resume, offload) is not used",
			  word);
	return warn_or_fail(&e, node, local_id, err);
}

/* 1 when NAME now holds a value: VALUE, or one that was already there */
static int setenv_unless_set(spank_t sp, const char *name, const char *value)
{
	spank_err_t e = spank_setenv(sp, name, value, 0);

	return e == ESPANK_SUCCESS || e == ESPANK_ENV_EXISTS;
}

/* This node's name (SLURMD_NODENAME, which slurmstepd sets for every
 * task), read once for the messages and the storage marks, into node:
 * a copy, since spank_setenv may move the job's environment. "?" when
 * unset. */
static void read_node_name(spank_t sp, char *node, size_t node_size)
{
	snprintf(node, node_size, "?");
	spank_getenv(sp, "SLURMD_NODENAME", node, (int) node_size);
}

/* The node's and step's facts lf_prepare needs, from Slurm and the
 * job's environment; node is this node's name (read_node_name).
 * Separate because it only reads, and is most of the lines. */
static void lf_node_facts(spank_t sp, const char *const *env,
			  struct lf_prepare_facts *f, int *local_id,
			  const char *node, char *partner, size_t partner_len)
{
	struct distenv_step_ids ids = { 0, 0, 0, 0, 0 };
	uint64_t mem = 0;

	/* a heterogeneous step's ids as a whole: every node plans for all
	 * its nodes, and node index 0 is one node only */
	distenv_spank_step_ids(sp, &ids);
	f->job_id = ids.job_id;
	f->step_id = ids.step_id;
	f->nnodes = ids.nnodes;
	f->node_id = ids.node_id;
	spank_get_item(sp, S_TASK_ID, local_id);
	f->node_name = node;
	/* NPROC_PER_NODE as distenv derived it, else the step's GPUs on
	 * this node (distenv_gpus.h), else 1. */
	f->gpus_per_node = distenv_gpus_per_node(env, distenv_state.step_gpus);
	/* The step's memory on this node, else the job's (MB). */
	if (spank_get_item(sp, S_STEP_ALLOC_MEM, &mem) == ESPANK_SUCCESS && mem)
		f->alloc_mem_mb = mem;
	else if (spank_get_item(sp, S_JOB_ALLOC_MEM, &mem) == ESPANK_SUCCESS)
		f->alloc_mem_mb = mem;
	f->node_ram = lf_sys_node_ram();
	/* the rest as `distenv prepare` takes it */
	lf_prepare_facts_env(env, f, partner, partner_len);
}

/* What the node's first task tells the job log after lf_prepare: the
 * warnings, the checkpoint chosen and the plan. Separate so that one
 * task per node reports, in one place. */
static void lf_report(const struct lf_prepare_result *res, int rc, int show,
		      const char *node)
{
	print_warnings(&res->dec, node);
	/* the job log says which checkpoint and why (lf_ckpt.h) */
	if (res->resume_set) {
		fprintf(stderr, "distenv: %s: %s\n", node, res->resume_note);
		fflush(stderr);
	}
	if (!rc && res->dec.restore_latest) {
		fprintf(stderr,
			"distenv: %s: wrote %s/latest (%s): "
			"DeepSpeed writes it on node 0 only, and "
			"this node's ranks read their own copy\n",
			node, res->dec.restore_dir, res->dec.restore_tag);
		fflush(stderr);
	}
	if (!rc) {
		const char *why = lf_dir_source_text((enum lf_dir_source)
							     res->dir_source);
		char where[2 * DISTENV_LF_PATH_MAX + 32];

		lf_container_name(res->dir_c, res->dir, where, sizeof(where));

		/* slurmd's log at debug, as the derived values */
		slurm_debug("distenv: node %s: resolved copies in %s, under "
			    "the directory of %s",
			    node, where, why);
		if (show) {
			fprintf(stderr,
				"distenv: %s: resolved copies in %s, under the "
				"directory of %s\n",
				node, where, why);
			fflush(stderr);
		}
	}
	if (!rc && show && res->dec.have_plan)
		print_plan(&res->dec, node);
}

/* A pyxis step (spank_pyxis.c): the copies are in the container only
 * under one of its --container-mounts entries (the default directory is
 * one, lf_container_default_dir); else DISTENV_LF_CONFIG names no file
 * there. A warning, an error under --distenv-check=strict. */
static int check_container_seen(const struct lf_prepare_result *res,
				const char *node, int local_id,
				struct distenv_error *err)
{
	struct distenv_error e;

	if (res->dir_seen)
		return 0;
	distenv_error_set(&e, "--distenv-lf-dir",
			  "give --distenv-lf-dir=DIR a directory the step "
			  "mounts (--container-mounts=DIR, or SRC:DST and DIR "
			  "under SRC), or mount one writable directory and "
			  "let distenv choose it",
			  "the resolved copy is %s/lf_config.yaml on the host "
			  "(the directory of %s), under no entry of %s, so the "
			  "pyxis container does not see it there",
			  res->dir,
			  lf_dir_source_text((enum lf_dir_source)
						     res->dir_source),
			  distenv_state.pyxis.mounts_where);
	return warn_or_fail(&e, node, local_id, err);
}

/* A container plugin listed after distenv (pyxis) moves the task into
 * its container after this task_init; enroot gives the container a
 * fresh tmpfs at /tmp (enroot 4.1.2, conf/mounts/10-system.fstab), so
 * copies written under the host's /tmp are not there. distenv cannot
 * tell whether this step asked pyxis for a container (its options are
 * pyxis's), so it says so: a warning, an error under
 * --distenv-check=strict. A directory the user or the site chose
 * (--distenv-lf-dir, lf_dir:) is taken as mounted: that is what it is
 * for; only the defaults (TMPDIR, /tmp) are checked. */
static int check_container_tmp(const struct lf_prepare_result *res,
			       const char *node, int local_id,
			       struct distenv_error *err)
{
	const struct lf_prepare_request *r = &distenv_state.lf;
	char plugin[1024];
	struct distenv_error e;

	if (r->check != LF_CHECK_OFF && distenv_state.pyxis.active)
		return check_container_seen(res, node, local_id, err);
	if (r->check == LF_CHECK_OFF || !lf_dir_under_tmp(res->dir) ||
	    res->dir_source == LF_DIR_FROM_OPTION ||
	    res->dir_source == LF_DIR_FROM_SITE ||
	    !distenv_container_plugin_after((const void *) check_container_tmp,
					    plugin, sizeof(plugin)))
		return 0;
	distenv_error_set(
		&e, "--distenv-lf-dir",
		"give --distenv-lf-dir=DIR a directory the container mounts "
		"at the same path (pyxis: --container-mounts=DIR:DIR; e.g. "
		"beside output_dir), or ask the admins for the site file's "
		"lf_dir:",
		"the resolved copy is %s/lf_config.yaml (the directory of %s), "
		"and %s is loaded after distenv: if this step runs in a "
		"pyxis container, enroot gives it a fresh /tmp and "
		"DISTENV_LF_CONFIG names no file there",
		res->dir,
		lf_dir_source_text((enum lf_dir_source) res->dir_source),
		plugin);
	return warn_or_fail(&e, node, local_id, err);
}

/* Export what lf_prepare decided to the task's environment. Separate
 * because it is the step's only change to the environment. */
static int lf_export(spank_t sp, const struct lf_prepare_result *res,
		     struct distenv_error *err)
{
	int rc = 0;

	if (spank_setenv(sp, "DISTENV_LF_CONFIG", res->config_path, 1) !=
	    ESPANK_SUCCESS)
		return distenv_error_set(err, "DISTENV_LF_CONFIG", NULL,
					 "cannot export");
	if (res->resume_set &&
	    spank_setenv(sp, "DISTENV_LF_RESUME",
			 res->resume_path[0] ? res->resume_path : "none",
			 1) != ESPANK_SUCCESS)
		return distenv_error_set(err, "DISTENV_LF_RESUME", NULL,
					 "cannot export");
	if (res->alloc_conf_set &&
	    spank_setenv(sp, "PYTORCH_CUDA_ALLOC_CONF", res->alloc_conf, 1) !=
		    ESPANK_SUCCESS)
		rc = distenv_error_set(err, "PYTORCH_CUDA_ALLOC_CONF", NULL,
				       "cannot export");
	/* lf_decide.c, keep_alloc_conf; a value the user set is kept */
	if (!rc && res->dec.optim_torch_off &&
	    (!setenv_unless_set(sp, "OPTIM_TORCH", "0") ||
	     !setenv_unless_set(sp, "TORCH_NCCL_AVOID_RECORD_STREAMS", "1")))
		rc = distenv_error_set(err, "OPTIM_TORCH", NULL,
				       "cannot export");
	return rc;
}

int distenv_remote_lf_prepare(spank_t sp, struct distenv_error *err)
{
	char storage[4096];
	const struct distenv_request *r = &distenv_state.req;
	const char *const *env = NULL;
	char **envp = NULL;
	/* The options' request, with this step's additions on a copy: the
	 * site's storage list and DISTENV_RESUME point into this
	 * function's buffers. */
	struct lf_prepare_request req = distenv_state.lf;
	struct lf_prepare_facts f;
	struct lf_prepare_result res;
	char node[256], partner[256], site_dir[DISTENV_SITE_PATH_MAX];
	int local_id = 0, rc;
	char env_path[DISTENV_LF_PATH_MAX];

	/* Fetched here, not passed in: the caller's spank_setenv calls (the
	 * launch variables) may have reallocated the job's environment
	 * array, and reading an old pointer crashed the task now and then
	 * (seen in tests/cluster/templates.bats). */
	if (spank_get_item(sp, S_JOB_ENV, &envp) == ESPANK_SUCCESS)
		env = (const char *const *) envp;
	memset(&f, 0, sizeof(f));
	storage_policy(env, storage, sizeof(storage));
	req.storage_policy = storage[0] ? storage : NULL;
	distenv_lf_site_dir(sp, site_dir, sizeof(site_dir));
	req.site_dir = site_dir[0] ? site_dir : NULL;
	req.container =
		distenv_state.pyxis.active ? &distenv_state.pyxis : NULL;
	read_node_name(sp, node, sizeof(node));
	lf_node_facts(sp, env, &f, &local_id, node, partner, sizeof(partner));
	/* No --distenv-resume: DISTENV_RESUME in the step's environment */
	if (lf_prepare_resume_env(env, &req, env_path, sizeof(env_path), err)) {
		rc = -1;
		goto early;
	}
	f.write = local_id == 0 ? LF_WRITE_FILES : LF_WRITE_WAIT;
	rc = lf_prepare(&req, &f, &res, err);
	if (local_id == 0)
		lf_report(&res, rc, r->show, node);
	if (!rc)
		rc = check_argv(sp, node, local_id, err);
	if (!rc)
		rc = check_container_tmp(&res, node, local_id, err);
	if (!rc)
		rc = lf_export(sp, &res, err);
	lf_prepare_result_free(&res);
early:
	if (rc)
		distenv_error_prefix_where(err, node);
	return rc;
}

/* The mark needs only this node's name, the job and its start
 * (lf_storage_mark.h), and only the node's local task 0 writes it: none
 * of lf_node_facts' memory, GPU and partner facts. */
int distenv_remote_mark_storage(spank_t sp, struct distenv_error *err)
{
	const struct distenv_request *r = &distenv_state.req;
	struct distenv_step_ids ids = { 0, 0, 0, 0, 0 };
	char **envp = NULL;
	uint32_t restart;
	char node[256], dir[DISTENV_LF_PATH_MAX];
	int local_id = 0, rc;

	spank_get_item(sp, S_TASK_ID, &local_id);
	if (local_id != 0)
		return 0;
	/* the job id lf_node_facts gives the preparation that reads it */
	distenv_spank_step_ids(sp, &ids);
	if (spank_get_item(sp, S_JOB_ENV, &envp) != ESPANK_SUCCESS)
		envp = NULL;
	restart = lf_restart_count((const char *const *) envp);
	read_node_name(sp, node, sizeof(node));
	rc = lf_prepare_mark_storage(r->lf_config,
				     distenv_state.pyxis.active ?
					     &distenv_state.pyxis :
					     NULL,
				     ids.job_id, restart, node, dir,
				     sizeof(dir), err);
	if (rc) {
		distenv_error_prefix_where(err, node);
		return rc;
	}
	if (r->show) {
		fprintf(stderr,
			"distenv: %s: storage mark of job %u start %u "
			"written in %s/" LF_MARK_SUBDIR "; the job's later "
			"steps read it to tell shared from node-local "
			"output_dir\n",
			node, (unsigned) ids.job_id, (unsigned) restart, dir);
		fflush(stderr);
	}
	return 0;
}
