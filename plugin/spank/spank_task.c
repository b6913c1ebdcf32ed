/*
 * spank_task.c: slurmstepd, task_init: the forked task, running fully as
 * the user, with the task's environment complete (SLURM_PROCID,
 * SLURM_NODEID, CUDA_VISIBLE_DEVICES; docs/contracts.md 5). Facts
 * are gathered here, per task, so that nothing runs as root.
 *
 * A failure returns -1, which fails the step (not the node), after the
 * message went to the task's stderr, i.e. the job's output.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "distenv_env.h"
#include "distenv_format.h"
#include "distenv_mounts.h"
#include "distenv_sys.h"
#include "spank_state.h"

/*
 * A failed task ends only itself: without srun --kill-on-bad-exit, the
 * other nodes of the step start torchrun, or torch's env:// init, and
 * wait for this node until their rendezvous times out (600 s for
 * torchrun's static rendezvous, 30 min for a process group). So, in a
 * multi-node step, the node that failed cancels the whole step, as
 * `scancel JOB.STEP` would (slurm_kill_job_step(3) in libslurm, which
 * slurmstepd carries; the task runs as the step's owner, who may cancel
 * it). Called after the message was read from the task's stderr.
 */
/* slurm_kill_job_step(3) with SIGKILL, in the form this release's
 * slurm.h declares (configure.ac); flags 0: none. */
static int kill_step(uint32_t job, uint32_t step)
{
#if defined(DISTENV_KILL_STEP_BY_ID)
	slurm_step_id_t id;

	memset(&id, 0, sizeof(id));
	id.job_id = job;
	id.step_id = step;
	id.step_het_comp = NO_VAL;
	return slurm_kill_job_step(&id, SIGKILL, 0);
#elif defined(DISTENV_KILL_STEP_HAS_FLAGS)
	return slurm_kill_job_step(job, step, SIGKILL, 0);
#else
	return slurm_kill_job_step(job, step, SIGKILL);
#endif
}

/* A heterogeneous step is cancelled by its leader's id, which reaches
 * every component (distenv_step_ids_resolve). */
static void end_step(const struct distenv_step_ids *ids)
{
	if (ids->nnodes <= 1 || ids->step_id >= SLURM_MAX_NORMAL_STEP_ID)
		return;
	fprintf(stderr,
		"distenv: ending step %u.%u on all %u nodes%s, so "
		"that none waits for this one\n",
		ids->job_id, ids->step_id, ids->nnodes,
		ids->het ? " of its heterogeneous components" : "");
	fflush(stderr);
	distenv_pipe_wait_drained(STDERR_FILENO, 1000, 100);
	if (kill_step(ids->job_id, ids->step_id) != SLURM_SUCCESS)
		fprintf(stderr, "distenv: could not cancel step %u.%u: %s\n",
			ids->job_id, ids->step_id, slurm_strerror(errno));
}

/* The reason the user sees, in slurmd's log too, with job, step and
 * node, so that an admin can help from the log alone. At info level:
 * slurmstepd forwards a task's error-level lines to the user as well,
 * who has the message already. */
static void log_failure(spank_t sp, const struct distenv_step_ids *ids,
			const char *line)
{
	char node[256] = "?";

	spank_getenv(sp, "SLURMD_NODENAME", node, sizeof(node));
	slurm_info("distenv: job %u step %u node %s: failed the step: %s",
		   ids->job_id, ids->step_id, node, line);
}

/* Print err for the user, once per node (from the node's first task:
 * every task of the node meets the same error), and fail the task. */
static int report_ending(spank_t sp, const struct distenv_error *err, int end);

/* A finding about this step: the message, then the step ends on every
 * node (end_step). */
static int report(spank_t sp, const struct distenv_error *err)
{
	return report_ending(sp, err, 1);
}

/* A broken configuration (plugstack line, site file, option): the
 * message only. Slurm ignores task_init's failure for an "optional"
 * plugin and runs the step without distenv's variables (measured on
 * 22.05, tests/cluster/failures.bats); cancelling it would turn that
 * into a failure. */
static int report_config(spank_t sp, const struct distenv_error *err)
{
	return report_ending(sp, err, 0);
}

static int report_ending(spank_t sp, const struct distenv_error *err, int end)
{
	struct distenv_step_ids ids = { 0, 0, 0, 0, 0 };
	char line[3 * DISTENV_ERROR_TEXT];
	int local_id = 0;

	/* srun --kill-on-bad-exit=1 ends the step on the first failed
	 * task's exit, and could drop a message slurmstepd had not yet
	 * forwarded (distenv_sys_drain.c). So, on this failure path only,
	 * the task that prints waits until its stderr pipe is read (at most
	 * 2 s) and 100 ms more for the I/O thread to send it on; the node's
	 * other tasks, which print nothing, wait 300 ms before they fail. */
	if (spank_get_item(sp, S_TASK_ID, &local_id) == ESPANK_SUCCESS &&
	    local_id != 0) {
		struct timespec t = { 0, 300 * 1000000L };

		nanosleep(&t, NULL);
		return -1;
	}
	distenv_error_format(err, line, sizeof(line));
	fprintf(stderr, "distenv: error: %s\n", line);
	fflush(stderr);
	/* zeros (no step to end) where Slurm gives no ids */
	distenv_spank_step_ids(sp, &ids);
	log_failure(sp, &ids, line);
	distenv_pipe_wait_drained(STDERR_FILENO, 2000, 100);
	if (end)
		end_step(&ids);
	return -1;
}

/* 1 for the batch script (or salloc's interactive step), 0 for an srun
 * step, -1 for steps distenv leaves alone (the extern step). */
static int step_kind(spank_t sp)
{
	uint32_t step_id = 0;

	if (spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS)
		return 0;
	if (step_id == SLURM_EXTERN_CONT)
		return -1;
	return step_id == SLURM_BATCH_SCRIPT ||
	       step_id == SLURM_INTERACTIVE_STEP;
}

static int export_vars(spank_t sp, const struct distenv_vars *vars,
		       struct distenv_error *err)
{
	size_t i;

	for (i = 0; i < vars->count; i++) {
		const struct distenv_var *v = &vars->items[i];
		spank_err_t rc;

		if (v->action != DISTENV_ACTION_SET)
			continue;
		rc = spank_setenv(sp, v->name, v->value, 1);
		if (rc != ESPANK_SUCCESS)
			return distenv_error_set(err, v->name, NULL,
						 "cannot export: %s",
						 spank_strerror(rc));
	}
	return 0;
}

/* What each task got, in slurmd's log at SlurmdDebug=debug (Slurm's
 * own levels; nothing at the default info): an admin can follow a
 * user's step without --distenv-show. */
static void log_vars(const struct distenv_step *step,
		     const struct distenv_vars *vars)
{
	size_t i;

	for (i = 0; i < vars->count; i++)
		slurm_debug("distenv: job %u step %u node %s task %u: %s=%s "
			    "[%s] %s",
			    step->job_id, step->step_id, step->node_name,
			    step->procid, vars->items[i].name,
			    vars->items[i].value,
			    vars->items[i].action == DISTENV_ACTION_KEPT ?
				    "kept" :
				    "set",
			    vars->items[i].reason);
}

/* Slurm < 23.02 gives no SLURM_JOB_END_TIME: the batch script asks
 * slurmctld for the job's end (distenv_sys_job_end), once per job; its
 * steps inherit the DISTENV_JOB_END it exports (distenv_job_end). */
static long long batch_job_end(spank_t sp, char **envp, int batch)
{
	uint32_t job = 0;

	if (!batch ||
	    distenv_env_get((const char *const *) envp, "SLURM_JOB_END_TIME") ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
		return 0;
	return distenv_sys_job_end(job);
}

/* --distenv-show prints what distenv exported; a container plugin
 * listed after distenv then copies the image's environment over it in
 * its own task_init (NVIDIA/pyxis v0.24.0, pyxis_slurmstepd.c: the
 * image's variables with overwrite, RANK and LOCAL_RANK for PyTorch
 * images; enroot 4.1's 50-slurm-pytorch.sh hook: MASTER_ADDR,
 * MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK; docs/pyxis-enroot-run.md). distenv cannot see that happen, so the show says where
 * it may and how to check it inside the container. */
/* A pyxis step (spank_pyxis.c): which of the values enroot's PyTorch
 * hook or the image may replace its --container-env leaves unkept. */
static void show_container_env(const struct distenv_step *step)
{
	static const char *const names[] = { "MASTER_ADDR", "MASTER_PORT",
					     "NNODES", "NODE_RANK",
					     "NPROC_PER_NODE" };
	char miss[128] = "";
	size_t i;

	if (!distenv_state.pyxis.active)
		return;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!distenv_name_list_has(distenv_state.pyxis_env, names[i]))
			snprintf(miss + strlen(miss),
				 sizeof(miss) - strlen(miss), "%s%s",
				 miss[0] ? "," : "", names[i]);
	if (miss[0])
		fprintf(stderr,
			"distenv: %s:   note: this pyxis step's "
			"--container-env does not keep %s: add them to it to "
			"keep distenv's values over the image's\n",
			step->node_name, miss);
}

static void show_container_note(const struct distenv_step *step)
{
	char plugin[1024];

	if (!distenv_container_plugin_after((const void *) show_container_note,
					    plugin, sizeof(plugin)))
		return;
	fprintf(stderr,
		"distenv: %s:   note: %s is loaded after distenv: in its "
		"container the image's environment replaces any of these "
		"values it sets (pyxis: RANK and LOCAL_RANK for PyTorch "
		"images; enroot's PyTorch hook: MASTER_ADDR, MASTER_PORT, "
		"WORLD_SIZE, RANK, LOCAL_RANK). "
		"Run `distenv check-env --` first in the container to stop "
		"on a replaced value, or keep them with "
		"--container-env=NAME,...\n",
		step->node_name, plugin);
	show_container_env(step);
	fflush(stderr);
}

static int derive_and_export(spank_t sp, const struct distenv_site *site,
			     char **envp, int batch, enum distenv_mode mode,
			     struct distenv_error *err)
{
	const struct distenv_plugin_state *st = &distenv_state;
	struct distenv_topo *topo = st->topo;
	char topo_note[sizeof(st->topo_note)];
	struct distenv_step step;
	struct distenv_vars vars = { 0 };
	int rc;

	if (!envp)
		return distenv_error_set(err, "slurmstepd", NULL,
					 "cannot read the task environment");
	snprintf(topo_note, sizeof(topo_note), "%s", st->topo_note);
	/* The job's own HWLOC_XMLFILE: read here, fully as the user. */
	if (!topo && st->topo_user_xml[0] && !batch)
		distenv_topo_load_into(st->topo_user_xml, &topo, topo_note,
				       sizeof(topo_note));
	rc = distenv_derive_for_task_topo(site, &st->req,
					  (const char *const *) envp, batch,
					  topo, topo_note, st->step_gpus,
					  batch_job_end(sp, envp, batch), &step,
					  &vars, err);
	if (topo != st->topo)
		free(topo);
	/* the command's own launch arguments, before anything is exported */
	if (rc == 0 && !batch)
		rc = distenv_remote_launch_check(sp, &step, &vars, err);
	/* Only for a step that asked for distenv: a site default never
	 * fails a job (leave_alone). */
	if (rc == 0 &&
	    (st->req.mode != DISTENV_MODE_UNSET || st->req.lf_config[0]))
		rc = distenv_remote_rehearsal(sp, site, &st->req, &step, &vars,
					      err);
	if (rc == 0)
		rc = export_vars(sp, &vars, err);
	if (rc == 0)
		log_vars(&step, &vars);
	if (rc == 0 && (batch || step.localid == 0))
		distenv_format_warnings(stderr, &vars);
	if (rc == 0 && st->req.show && (batch || step.localid == 0)) {
		distenv_format_show(stderr, &step, mode, &vars);
		if (!batch)
			show_container_note(&step);
	}
	distenv_vars_free(&vars);
	return rc;
}

/* --distenv-show without distenv: say so once per node rather than
 * print nothing, so a user who forgot --distenv sees why. */
static void show_off(spank_t sp)
{
	char node[256] = "?";
	int local_id = 0;

	if (spank_get_item(sp, S_TASK_ID, &local_id) == ESPANK_SUCCESS &&
	    local_id != 0)
		return;
	spank_getenv(sp, "SLURMD_NODENAME", node, sizeof(node));
	fprintf(stderr,
		"distenv: %s: off for this step (no --distenv, and "
		"the plugstack default is off)\n",
		node);
	fflush(stderr);
}

/* Whether the user asked for distenv (--distenv, or the run preparation
 * of --distenv-lf-config) rather than getting it from a site default. */
static int asked(const struct distenv_plugin_state *st)
{
	return st->req.mode != DISTENV_MODE_UNSET || st->req.lf_config[0];
}

/*
 * A site default (plugstack default=, a partition's default_mode) must
 * never fail a job that did not ask for distenv: `srun -n2 hostname`
 * under default=torchrun, an MPI job with several tasks per node. Such
 * a step is left untouched (nothing exported: derive_and_export exports
 * only after the whole derivation succeeded) and the reason goes to
 * slurmd's log only, so that the job's output stays its own.
 */
static int leave_alone(spank_t sp, enum distenv_mode mode,
		       const struct distenv_error *err)
{
	char line[3 * DISTENV_ERROR_TEXT];
	uint32_t job = 0, step = 0;
	int local_id = 0;

	if (spank_get_item(sp, S_TASK_ID, &local_id) == ESPANK_SUCCESS &&
	    local_id != 0)
		return 0;
	spank_get_item(sp, S_JOB_ID, &job);
	spank_get_item(sp, S_JOB_STEPID, &step);
	distenv_error_format(err, line, sizeof(line));
	slurm_info("distenv: step %u.%u left untouched: the site default "
		   "mode %s does not fit it, and the job did not ask for "
		   "distenv (%s)",
		   job, step, distenv_mode_name(mode), line);
	return 0;
}

/*
 * Whether a plugin listed before distenv has moved this task into a
 * container: its root directory is no longer slurmstepd's
 * (distenv_root_id). pyxis does so in its task_init (NVIDIA/pyxis
 * v0.24.0, pyxis_slurmstepd.c: setns into the container's namespaces),
 * and Slurm calls the plugins' task_init in plugstack order
 * (src/common/plugstack.c). distenv would then read the image's
 * environment (pyxis's RANK and LOCAL_RANK, which it would take for the
 * user's) and write the resolved YAML into the container's /tmp, which
 * its step-end cleanup on the host never sees: the step fails at once,
 * naming the order and its fix.
 */
static int after_container_plugin(struct distenv_error *err)
{
	const struct distenv_root_id *stepd = &distenv_state.stepd_root;
	struct distenv_root_id now;

	distenv_root_id(&now);
	if (!stepd->ino || !now.ino ||
	    (now.dev == stepd->dev && now.ino == stepd->ino))
		return 0;
	return distenv_error_set(
		err, "plugstack.conf",
		"ask the admin to load distenv before the container plugin: "
		"its plugstack line first (in a plugstack.conf.d directory, a "
		"file name that sorts first, e.g. 00-distenv.conf); `distenv "
		"check-config` shows the order",
		"distenv's task_init runs inside a container: a plugin listed "
		"before distenv in the plugstack (pyxis, for one) moved the "
		"task into its mount namespace, so distenv would read the "
		"image's environment and write where the host does not see");
}

int distenv_remote_task_init(spank_t sp)
{
	const struct distenv_plugin_state *st = &distenv_state;
	struct distenv_site site; /* plugstack + policy for the partition */
	enum distenv_mode mode;
	struct distenv_error err;
	int batch = step_kind(sp);
	char **envp;

	distenv_error_clear(&err);
	if (batch < 0)
		return 0;
	/* The site policy's section for this job's partition may set
	 * another default mode. */
	envp = distenv_job_site(sp, &site);
	mode = distenv_effective_mode(&site, &st->req);
	if (distenv_error_is_set(&st->option_error))
		return report_config(sp, &st->option_error);
	if (mode == DISTENV_MODE_OFF) {
		if (st->req.show)
			show_off(sp);
		return 0;
	}
	if (distenv_error_is_set(&st->site_error))
		return asked(st) ? report_config(sp, &st->site_error) :
				   leave_alone(sp, mode, &st->site_error);
	if (after_container_plugin(&err))
		return asked(st) ? report_config(sp, &err) :
				   leave_alone(sp, mode, &err);
	/* envp is stale after this: spank_setenv may move the array. */
	if (derive_and_export(sp, &site, envp, batch, mode, &err))
		return asked(st) ? report(sp, &err) :
				   leave_alone(sp, mode, &err);
	/* LLaMA-Factory preparation: srun steps only (the batch script
	 * launches them). A marking step marks and prepares nothing. */
	if (st->req.mark_storage && !batch)
		return distenv_remote_mark_storage(sp, &err) ?
			       report(sp, &err) :
			       0;
	if (st->req.lf_config[0] && !batch &&
	    distenv_remote_lf_prepare(sp, &err))
		return report(sp, &err);
	return 0;
}
