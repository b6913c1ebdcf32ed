/*
 * distenv_plugin.c: the SPANK entry points. This file only dispatches on
 * the context; each context's work lives in its own file.
 *
 * Who does what, as which user (spank(8); docs/contracts.md 5):
 *
 *  callback              context            runs as        distenv does
 *  --------------------  -----------------  -------------  ---------------------------
 *  slurm_spank_init      srun, sbatch,      the user       parse plugstack arguments,
 *                        salloc                            load the site policy file,
 *                                                          register options
 *  slurm_spank_init      slurmd (start)     root           parse plugstack arguments and
 *                                                          the site policy file, log
 *                                                          errors; never fails
 *  option callbacks      srun, sbatch,      the user       validate the value; a bad
 *                        salloc                            one fails the command
 *  slurm_spank_init_post_opt  srun, sbatch, the user       fail the command on a
 *                        salloc                            recorded error if distenv
 *                                                          was asked for
 *  slurm_spank_local_user_init  srun (step    the user       fail srun on more tasks than
 *                        made, no task yet)                nodes in torchrun mode
 *  slurm_spank_init      slurmstepd         root           parse plugstack arguments,
 *                                                          load the site policy file,
 *                                                          register options; never
 *                                                          fails (that could drain)
 *  option callbacks      slurmstepd         root           record the value or the
 *                                                          error; never fail
 *  slurm_spank_user_init slurmstepd, once   the user       load the node's topology
 *                        per step per node  (euid)         (hwloc) for the tasks,
 *                        (before the fork)                 srun steps asking for
 *                                                          distenv only; never fails
 *  slurm_spank_task_init slurmstepd, per    the user,      gather facts (interfaces,
 *                        task (forked       fully          resolver), derive, export;
 *                        child)                            report recorded errors;
 *                                                          -1 fails the step only
 *  slurm_spank_exit      slurmstepd, once   root, the      remove the step's resolved
 *                        per step per node  removal as     copies (--distenv-lf-config);
 *                                           the user       never fails
 *  everything else       -                  -              nothing
 *
 * No file named by a user is opened in any callback run as root. The one
 * a job may name, a topology XML in HWLOC_XMLFILE, is read in task_init,
 * in the forked task, fully as the user and with O_NOFOLLOW
 * (spank_task.c); user_init, where only the effective uid is the user's,
 * just notes its name (spank_node.c). The site policy file (config=) is
 * named by the admin and refused unless only root can write it
 * (plugin/site/distenv_policy.h).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <slurm/spank.h>

#include "distenv_sys.h"
#include "spank_state.h"

SPANK_PLUGIN(distenv, 1);

struct distenv_plugin_state distenv_state;

/* The site policy file (config=), read in every context, so that a broken
 * file shows in slurmd's log at its start and at every srun and sbatch.
 * On the submit side only the top level applies (the partition is known
 * in the task, where spank_task.c applies its section). */
static void load_policy(void)
{
	struct distenv_plugin_state *st = &distenv_state;

	if (!st->site.config[0])
		return;
	if (distenv_policy_load(st->site.config, DISTENV_POLICY_LOAD_STRICT,
				&st->policy, &st->site_error)) {
		/* As for a bad plugstack line: jobs that did not ask for
		 * distenv go on (mode off); those that did fail with this. */
		if (spank_context() == S_CTX_SLURMD)
			distenv_log_error(&st->site_error);
		st->site.default_mode = DISTENV_MODE_OFF;
		return;
	}
	st->have_policy = 1;
	distenv_policy_apply(&st->policy.global, NULL, &st->site);
}

/* One line in slurmd's log at its start: what is loaded, for which
 * Slurm, with which plugstack arguments and site file, so that an admin
 * sees it without reading plugstack.conf. */
static void log_loaded(int ac, char **av)
{
	char args[1024] = "", shown[256];
	size_t used = 0;
	int i;

	for (i = 0; i < ac && used < sizeof(args); i++) {
		int w = snprintf(args + used, sizeof(args) - used, "%s%s",
				 i ? " " : "",
				 distenv_printable(av[i], shown,
						   sizeof(shown)));

		if (w < 0)
			break;
		used += (size_t) w;
	}
	slurm_info("distenv: %s loaded (built for Slurm %s); plugstack "
		   "arguments: %s; site file: %s%s",
		   PACKAGE_VERSION, DISTENV_SLURM_VERSION, ac ? args : "(none)",
		   distenv_state.site.config[0] ? distenv_state.site.config :
						  "(none)",
		   distenv_error_is_set(&distenv_state.site_error) ?
			   " (broken: see the error above; jobs that ask for "
			   "distenv fail)" :
			   "");
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR &&
	    ctx != S_CTX_REMOTE && ctx != S_CTX_SLURMD)
		return 0;
	distenv_policy_file_free(&distenv_state.policy);
	memset(&distenv_state, 0, sizeof(distenv_state));
	if (distenv_parse_plugstack(ac, av, &distenv_state.site,
				    &distenv_state.site_error)) {
		/* Jobs that did not ask for distenv must go on: run with
		 * the defaults (mode off) and tell the admin, in slurmd's
		 * log at its start. Users who ask for distenv get the error
		 * once, from srun/sbatch (spank_submit.c) or the task; the
		 * others see nothing (srun and slurmstepd would show it in
		 * every job's output). */
		if (ctx == S_CTX_SLURMD)
			distenv_log_error(&distenv_state.site_error);
		distenv_site_defaults(&distenv_state.site);
	} else {
		load_policy();
	}
	if (ctx == S_CTX_SLURMD) {
		log_loaded(ac, av);
		return 0; /* slurmd only reports; it runs no job */
	}
	if (ctx == S_CTX_REMOTE)
		distenv_root_id(&distenv_state.stepd_root);
	if (distenv_options_register(sp) && ctx != S_CTX_REMOTE)
		return -1;
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	(void) ac;
	(void) av;
	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
		return distenv_submit_post_opt(sp);
	return 0;
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	(void) ac;
	(void) av;
	if (spank_context() != S_CTX_LOCAL)
		return 0;
	return distenv_local_user_init(sp);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void) ac;
	(void) av;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return distenv_remote_user_init(sp);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void) ac;
	(void) av;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return distenv_remote_task_init(sp);
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void) ac;
	(void) av;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	return distenv_remote_exit(sp);
}
