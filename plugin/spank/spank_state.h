/*
 * spank_state.h: what the plugin holds between SPANK callbacks of one
 * process (srun, sbatch, salloc or one slurmstepd): the site settings
 * from the plugstack line, the user's request from the options, and the
 * first error met, kept to be reported where reporting is safe
 * (docs/contracts.md 5: an error returned from remote init or
 * init_post_opt can drain the node; from task_init it fails the step).
 */
#ifndef DISTENV_SPANK_STATE_H
#define DISTENV_SPANK_STATE_H

#include <slurm/spank.h>

#include "distenv_error.h"
#include "distenv_options.h"
#include "distenv_policy.h"
#include "distenv_step.h"
#include "distenv_sys.h"
#include "distenv_vars.h"
#include "lf_prepare.h"

struct distenv_topo;

struct distenv_plugin_state {
	struct distenv_site site;
	struct distenv_request req;
	/* The LLaMA-Factory options (lf_request_set) as lf_prepare takes
	 * them. Slurm's optarg does not outlive the callback, so the
	 * request's strings point into this state: config at
	 * req.lf_config, dir at req.lf_dir, resume_path at
	 * lf_resume_path. check is also
	 * req.check, which the core's derivation reads. */
	struct lf_prepare_request lf;
	char lf_resume_path[DISTENV_LF_PATH_MAX]; /* --distenv-resume=PATH */
	struct distenv_error site_error; /* bad plugstack arguments or
					    * site policy file */
	struct distenv_error option_error; /* bad --distenv* value */
	struct distenv_policy_file policy; /* config=, when it loaded */
	int have_policy;
	/* slurmstepd: the node's topology, loaded in user_init once per
	 * step per node (spank_node.c), NULL when none; and what to say
	 * about it in --distenv-show. */
	struct distenv_topo *topo;
	char topo_note[1024];
	/* HWLOC_XMLFILE named by the job: a user-named file, so it is read
	 * in task_init (fully the user), not in user_init ("" = none). */
	char topo_user_xml[4096];
	/* SLURM_STEP_GPUS of the step's environment, read in user_init
	 * before Slurm binds GPUs to tasks (distenv_gpus.h): the step's
	 * GPUs on this node, which a bound task's own variables no longer
	 * name ("" = none or unknown). */
	char step_gpus[1024];
	/* slurmstepd's root directory, read in slurm_spank_init (zeros:
	 * unknown); a task with another one at task_init was moved into
	 * a container by a plugin listed before distenv (spank_task.c). */
	struct distenv_root_id stepd_root;
	/* slurmstepd: the step's pyxis container, read in user_init
	 * (spank_pyxis.c), and its --container-env names ("" = none). */
	struct lf_container pyxis;
	char pyxis_env[1024];
};

extern struct distenv_plugin_state distenv_state;

/* Register the --distenv* options (every context: sbatch and salloc do
 * not read a spank_options table, docs/contracts.md 5). */
int distenv_options_register(spank_t sp);

/* Log err through Slurm's log (srun/sbatch stderr, or slurmd's log) as
 * "distenv: error: ...". */
void distenv_log_error(const struct distenv_error *err);

/* Submit side (srun, sbatch, salloc) after the options: fail the command
 * on a recorded error when the user asked for distenv. */
int distenv_submit_post_opt(spank_t sp);

/* srun, after the step is created and before its tasks start, as the
 * user: fail srun once on a task layout torchrun mode cannot run
 * (distenv_check_step_layout). */
int distenv_local_user_init(spank_t sp);

/* slurmstepd, once per step per node, as the user, before the tasks
 * fork: load the topology into distenv_state. Never fails. */
int distenv_remote_user_init(spank_t sp);

/* --distenv-lf-config (spank_lf.c): the submit-side check of the file
 * (readable regular file, parses), and the task-side preparation, as the
 * user, after the derivation; -1 with err fails the step. */
int distenv_lf_config_check(const char *path, struct distenv_error *err);
int distenv_remote_lf_prepare(spank_t sp, struct distenv_error *err);
/* The site file's lf_dir: for this job's partition (plugin/lf/lf_dir.h)
 * into buf, "" when none; slurmstepd contexts (distenv_job_site). */
void distenv_lf_site_dir(spank_t sp, char *buf, size_t len);
/* --distenv-mark-storage in task_init (as the user): local task 0 writes
 * the node's storage mark (lf_prepare_mark_storage); nothing else of the
 * run preparation. */
int distenv_remote_mark_storage(spank_t sp, struct distenv_error *err);

/* slurmstepd, when the step ends on this node (root): remove the step's
 * resolved copies, as the user (spank_exit.c). Never fails. */
int distenv_remote_exit(spank_t sp);

/* slurmstepd, user_init (before the tasks fork): read this step's pyxis
 * options into distenv_state.pyxis (spank_pyxis.c). Never fails. */
void distenv_pyxis_load(spank_t sp);
/* srun, sbatch, salloc (init_post_opt): 1 when the command asks pyxis
 * for a container (spank_pyxis.c). */
int distenv_pyxis_submit_step(void);

/* slurmstepd (remote contexts): the step's job, step, node count and
 * node index, a heterogeneous step's as a whole (spank_ids.c). Returns
 * 0, or -1 where Slurm gives no ids. */
int distenv_spank_step_ids(spank_t sp, struct distenv_step_ids *out);

/* slurmstepd, task_init, after the derivation and before the export
 * (step->envp is still the task's): the network rehearsal of a
 * multi-node step (spank_rehearsal.c). 0: passed, warned, or not this
 * task's to run; -1 with err under --distenv-check=strict. */
int distenv_remote_rehearsal(spank_t sp, const struct distenv_site *site,
			     const struct distenv_request *req,
			     const struct distenv_step *step,
			     const struct distenv_vars *vars,
			     struct distenv_error *err);

/* slurmstepd, per task, as the user, after the derivation and before
 * the export: the task's command against the values derived for this
 * node (spank_launch.c). -1 with err fails the step; a warning goes
 * into vars. */
int distenv_remote_launch_check(spank_t sp, const struct distenv_step *step,
				struct distenv_vars *vars,
				struct distenv_error *err);

/* slurmstepd, per task, as the user: derive and export. */
int distenv_remote_task_init(spank_t sp);

/* The site settings for this job: the plugstack arguments and the site
 * policy file's section for the job's partition (SLURM_JOB_PARTITION in
 * the job's environment, S_JOB_ENV) over its top level. Returns the job's
 * environment (NULL if Slurm gives none); it is stale after any
 * spank_setenv. slurmstepd contexts only (user_init, task_init). */
char **distenv_job_site(spank_t sp, struct distenv_site *site);

/* Load a topology (xml NULL: native) into *out, with the summary or the
 * reason there is none in note. Returns 0, or -1 with *out NULL. */
int distenv_topo_load_into(const char *xml, struct distenv_topo **out,
			   char *note, size_t note_len);

#endif
