/*
 * spank_submit.c: srun, sbatch and salloc, after option parsing. Option
 * values were checked in their callbacks already; what is left is a
 * broken plugstack line, which only stops commands that ask for distenv,
 * and options that do nothing without --distenv.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "distenv_cpus.h"
#include "distenv_derive.h"
#include "distenv_format.h"
#include "distenv_requeue.h"
#include "distenv_sys_file.h"
#include "lf_ckpt.h"
#include "lf_prepare.h"
#include "spank_state.h"

/* sbatch's words as the kernel keeps them (proc(5), /proc/pid/cmdline:
 * NUL-separated); bounded by the kernel's argument limit. */
#define CMDLINE_MAX (4 << 20)
/* sbatch refuses larger scripts by default (slurm.conf(5),
 * SchedulerParameters max_script_size, 4 MB). */
#define SCRIPT_MAX (4 << 20)
#define WORDS_MAX 4096

int distenv_local_user_init(spank_t sp)
{
	uint32_t ntasks = 0, nnodes = 0, job = 0, step = 0;
	struct distenv_error err;

	/* Only a step that asked for distenv: a site default never fails a
	 * job (spank_task.c, leave_alone). */
	if (distenv_state.req.mode == DISTENV_MODE_UNSET ||
	    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) !=
		    ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS)
		return 0;
	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	if (!distenv_check_step_layout(distenv_state.req.mode, ntasks, nnodes,
				       job, step, &err))
		return 0;
	distenv_log_error(&err);
	return -1;
}

/* The resume option as given, for messages, or NULL. */
static const char *resume_asked(char *buf, size_t len)
{
	const struct lf_prepare_request *lf = &distenv_state.lf;

	if (lf->resume == LF_RESUME_AUTO)
		return "--distenv-resume=auto";
	if (lf->resume != LF_RESUME_PATH)
		return NULL;
	snprintf(buf, len, "--distenv-resume=%s", distenv_state.lf_resume_path);
	return buf;
}

/* sbatch's --signal, --requeue and script, read as sbatch reads them
 * (distenv_requeue.h); 0, or -1 when this is not sbatch or its command
 * line cannot be read. */
static int read_sbatch_job(struct distenv_sbatch_job *job)
{
	const struct distenv_file_rules cmd_rules = { "sbatch's command line",
						      NULL, CMDLINE_MAX, 0 };
	const struct distenv_file_rules script_rules = { "the batch script",
							 NULL, SCRIPT_MAX, 0 };
	struct distenv_file cmd = { 0 }, script = { 0 };
	const char *all[WORDS_MAX], **words = all, *base;
	struct distenv_sbatch_job argv_job;
	int n = 0, rc = -1;
	size_t i;

	if (distenv_file_read("/proc/self/cmdline", &cmd_rules, &cmd, NULL))
		return -1;
	for (i = 0; i < cmd.len && n < WORDS_MAX; i += strlen(cmd.data + i) + 1)
		all[n++] = cmd.data + i;
	/* sbatch's own words start at the first one named sbatch: the
	 * dynamic loader run as a program (ld.so --preload LIB sbatch ...)
	 * keeps its words in front of them in /proc/self/cmdline. */
	for (; n > 0; words++, n--) {
		base = strrchr(words[0], '/');
		if (!strcmp(base ? base + 1 : words[0], "sbatch"))
			break;
	}
	if (n > 0) {
		distenv_sbatch_scan_argv(n, words, &argv_job);
		if (argv_job.script_arg &&
		    distenv_file_read(words[argv_job.script_arg], &script_rules,
				      &script, NULL))
			distenv_file_free(&script);
		distenv_sbatch_layers(&argv_job,
				      argv_job.script_arg ?
					      words[argv_job.script_arg] :
					      "",
				      script.data, getenv("SBATCH_SIGNAL"),
				      getenv("SBATCH_REQUEUE"),
				      getenv("SBATCH_NO_REQUEUE"), job);
		rc = 0;
	}
	distenv_file_free(&script);
	distenv_file_free(&cmd);
	return rc;
}

/* A job that resumes or is requeued needs a warning before its time
 * limit that leaves time for a save (distenv_requeue.h): a warning on
 * sbatch's terminal, an error under --distenv-check=strict. Only for
 * sbatch jobs that asked for distenv; salloc and srun jobs are not
 * requeued by a script. */
static int check_requeue_lead(void)
{
	struct distenv_vars shown = { 0 };
	struct distenv_sbatch_job job;
	struct distenv_error finding;
	char buf[DISTENV_LF_PATH_MAX + 32];
	const char *resume = resume_asked(buf, sizeof(buf));

	if (spank_context() != S_CTX_ALLOCATOR ||
	    distenv_state.req.check == DISTENV_CHECK_OFF ||
	    (distenv_state.req.mode == DISTENV_MODE_UNSET &&
	     !distenv_state.req.lf_config[0] && !resume) ||
	    read_sbatch_job(&job))
		return 0;
	distenv_error_clear(&finding);
	if (!distenv_requeue_check(&job, resume, &finding))
		return 0;
	if (distenv_state.req.check == DISTENV_CHECK_STRICT) {
		distenv_log_error(&finding);
		return -1;
	}
	distenv_vars_warn(&shown, &finding);
	distenv_format_warnings(stderr, &shown);
	distenv_vars_free(&shown);
	return 0;
}

extern char **environ;

/* sbatch or salloc inside another job passes that job's CPU variables
 * on (distenv_submit_inherits_cpus): a warning, never a failure, and
 * only for a job that asks for distenv. */
static void warn_inherited_cpus(void)
{
	struct distenv_error finding;
	char line[3 * DISTENV_ERROR_TEXT];

	if (spank_context() != S_CTX_ALLOCATOR ||
	    distenv_state.req.mode == DISTENV_MODE_UNSET ||
	    distenv_state.req.mode == DISTENV_MODE_OFF ||
	    !distenv_submit_inherits_cpus((const char *const *) environ,
					  &finding))
		return;
	distenv_error_format(&finding, line, sizeof(line));
	fprintf(stderr, "distenv: warning: %s\n", line);
}

int distenv_submit_post_opt(spank_t sp)
{
	enum distenv_mode mode =
		distenv_effective_mode(&distenv_state.site, &distenv_state.req);

	(void) sp;
	if (distenv_error_is_set(&distenv_state.option_error))
		return -1; /* already logged by the option callback */
	if (mode != DISTENV_MODE_OFF &&
	    distenv_error_is_set(&distenv_state.site_error)) {
		distenv_log_error(&distenv_state.site_error);
		slurm_error(
			"distenv: the plugin's configuration is broken; ask "
			"your admin, or run without --distenv");
		return -1;
	}
	/* Findings that fail every node anyway fail the command instead,
	 * before the job waits in the queue (lf_prepare.h). Here, not in
	 * the option's callback: --distenv-check may come after it. */
	if (mode != DISTENV_MODE_OFF && distenv_state.req.lf_config[0] &&
	    lf_prepare_submit_check(distenv_state.req.lf_config,
				    distenv_state.lf.check,
				    distenv_pyxis_submit_step(),
				    &distenv_state.option_error)) {
		distenv_error_prefix_where(&distenv_state.option_error,
					   "--distenv-lf-config");
		distenv_log_error(&distenv_state.option_error);
		return -1;
	}
	warn_inherited_cpus();
	if (mode != DISTENV_MODE_OFF && check_requeue_lead())
		return -1;
	/* The run preparation rides on the derivation: without distenv the
	 * option would be dropped without a word. */
	if (mode == DISTENV_MODE_OFF && distenv_state.req.lf_config[0])
		fprintf(stderr, "distenv: warning: --distenv-lf-config does "
				"nothing without --distenv (unless the site "
				"file turns distenv on for the partition)\n");
	return 0;
}
