/*
 * spank_node.c: slurmstepd, user_init: once per step per node, with
 * euid = the user, before the tasks fork (spank(8);
 * docs/contracts.md 5). Loads the node's topology (hwloc, and the
 * NVIDIA driver's GPU list) and the step's GPUs on this node
 * (SLURM_STEP_GPUS before Slurm binds GPUs to tasks) into the plugin's
 * state, which every task inherits through fork: a native hwloc load costs milliseconds to tens
 * of milliseconds on a large node (bench/topo_bench), so it is done here
 * once, never per task.
 *
 * Nothing here fails anything: a job that did not ask for distenv never
 * reaches hwloc, and for one that did, a topology that cannot be loaded
 * only means "no topology" (no NCCL_IB_HCA), said in --distenv-show.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "distenv_topo.h"
#include "distenv_topo_hwloc.h"
#include "spank_state.h"

/* Only srun steps use a topology: the batch script gets the
 * step-independent values, the extern step nothing. */
static int is_task_step(spank_t sp)
{
	uint32_t step_id = 0;

	if (spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS)
		return 0;
	return step_id != SLURM_EXTERN_CONT && step_id != SLURM_BATCH_SCRIPT &&
	       step_id != SLURM_INTERACTIVE_STEP;
}

int distenv_topo_load_into(const char *xml, struct distenv_topo **out,
			   char *note, size_t note_len)
{
	struct distenv_error err;
	char line[3 * DISTENV_ERROR_TEXT];

	distenv_error_clear(&err);
	*out = malloc(sizeof(**out));
	if (!*out) {
		snprintf(note, note_len, "none (out of memory)");
		return -1;
	}
	if (distenv_topo_load(xml, DISTENV_NVIDIA_GPUS_DIR, *out, &err)) {
		free(*out);
		*out = NULL;
		distenv_error_format(&err, line, sizeof(line));
		snprintf(note, note_len, "none, so no NCCL_IB_HCA (%s)", line);
		return -1;
	}
	distenv_topo_summary(*out, note, note_len);
	return 0;
}

char **distenv_job_site(spank_t sp, struct distenv_site *site)
{
	const struct distenv_plugin_state *st = &distenv_state;
	char **envp = NULL;

	if (spank_get_item(sp, S_JOB_ENV, &envp) != ESPANK_SUCCESS)
		envp = NULL;
	distenv_policy_site_for_env(st->have_policy ? &st->policy : NULL,
				    &st->site, (const char *const *) envp,
				    site);
	return envp;
}

int distenv_remote_user_init(spank_t sp)
{
	struct distenv_plugin_state *st = &distenv_state;
	struct distenv_site site; /* plugstack + policy for the partition */

	if (distenv_error_is_set(&st->option_error) ||
	    distenv_error_is_set(&st->site_error) || !is_task_step(sp) ||
	    st->topo)
		return 0;
	/* The partition's section may turn distenv on by default_mode, or
	 * name the cached topology of its node type in topology_xml. */
	distenv_job_site(sp, &site);
	if (distenv_effective_mode(&site, &st->req) == DISTENV_MODE_OFF)
		return 0;
	/* the container's mounts, for the task and for the step's end */
	distenv_pyxis_load(sp);
	/* The step's GPUs on this node, before the task binding rewrites
	 * SLURM_STEP_GPUS for each task (distenv_gpus.h). */
	if (spank_getenv(sp, "SLURM_STEP_GPUS", st->step_gpus,
			 sizeof(st->step_gpus)) != ESPANK_SUCCESS)
		st->step_gpus[0] = '\0';
	/* The admin's cached topology for the node type comes first. */
	if (site.topology_xml[0]) {
		distenv_topo_load_into(site.topology_xml, &st->topo,
				       st->topo_note, sizeof(st->topo_note));
		return 0;
	}
	/* One the job names in HWLOC_XMLFILE (tests replay recorded
	 * machines this way) is a user-named file: no such file is opened
	 * while any uid is root, so task_init reads it. */
	if (spank_getenv(sp, "HWLOC_XMLFILE", st->topo_user_xml,
			 sizeof(st->topo_user_xml)) == ESPANK_SUCCESS &&
	    st->topo_user_xml[0])
		return 0;
	st->topo_user_xml[0] = '\0';
	if (!distenv_topo_driver_gpus(DISTENV_NVIDIA_GPUS_DIR)) {
		snprintf(st->topo_note, sizeof(st->topo_note),
			 "none (no NVIDIA GPU listed in %s), so no NCCL_IB_HCA",
			 DISTENV_NVIDIA_GPUS_DIR);
		return 0;
	}
	distenv_topo_load_into(NULL, &st->topo, st->topo_note,
			       sizeof(st->topo_note));
	return 0;
}
