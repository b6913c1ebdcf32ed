/*
 * spank_pyxis.c: what this step asked pyxis for, read by distenv in
 * slurmstepd (user_init, before the tasks fork), whatever the order of
 * the two plugins in plugstack.conf.
 *
 * How another plugin's options can be read (SchedMD/slurm
 * src/common/plugstack.c, spank_stack_post_opt and spank_option_getopt):
 * slurmstepd processes every plugin's options (from srun's launch
 * request, or from _SLURM_SPANK_OPTION_<plugin>_<option> variables that
 * sbatch put in the job's environment) before any plugin's post_opt,
 * marks each as found in the stack's option cache, and then removes
 * those variables from the job's environment, so a task never sees
 * them. spank_option_getopt looks an option up in that cache by its
 * name alone, so distenv asks for "container-image" and gets pyxis's
 * value. pyxis also takes defaults from PYXIS_CONTAINER_IMAGE,
 * PYXIS_CONTAINER_MOUNTS, ... in the job's environment when the option
 * is not given (NVIDIA/pyxis v0.24.0 args.c,
 * pyxis_args_check_environment_variables); so does distenv.
 *
 * The step is a pyxis step when an image or a container name is given
 * and a container plugin is loaded after distenv (distenv_sys.h): its
 * task_init then starts the container after distenv's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "distenv_sys.h"
#include "spank_state.h"

/* The option's value, else the PYXIS_* default in the job's
 * environment, into buf: 2 from the option, 1 from the environment, 0
 * when neither is set (or it is empty). */
static int pyxis_value(spank_t sp, const char *name, const char *env, char *buf,
		       size_t len)
{
	struct spank_option opt = { (char *) name, "", "", 1, 0, NULL };
	char *arg = NULL;

	buf[0] = '\0';
	if (spank_option_getopt(sp, &opt, &arg) == ESPANK_SUCCESS && arg &&
	    arg[0]) {
		snprintf(buf, len, "%s", arg);
		return 2;
	}
	if (spank_getenv(sp, env, buf, (int) len) != ESPANK_SUCCESS)
		buf[0] = '\0';
	return buf[0] != '\0';
}

void distenv_pyxis_load(spank_t sp)
{
	struct distenv_plugin_state *st = &distenv_state;
	struct lf_container *c = &st->pyxis;
	static char mounts[DISTENV_MOUNTS_TEXT];
	char image[4096], plugin[1024];

	memset(c, 0, sizeof(*c));
	st->pyxis_env[0] = '\0';
	if (!pyxis_value(sp, "container-image", "PYXIS_CONTAINER_IMAGE", image,
			 sizeof(image)) &&
	    !pyxis_value(sp, "container-name", "PYXIS_CONTAINER_NAME", image,
			 sizeof(image)))
		return;
	if (!distenv_container_plugin_after((const void *) distenv_pyxis_load,
					    plugin, sizeof(plugin)))
		return;
	c->active = 1;
	pyxis_value(sp, "container-env", "PYXIS_CONTAINER_ENV", st->pyxis_env,
		    sizeof(st->pyxis_env));
	c->mounts_where =
		pyxis_value(sp, "container-mounts", "PYXIS_CONTAINER_MOUNTS",
			    mounts, sizeof(mounts)) == 1 ?
			"PYXIS_CONTAINER_MOUNTS" :
			"--container-mounts";
	/* A list pyxis refuses fails the step in pyxis itself; distenv
	 * then maps nothing. */
	if (distenv_mounts_parse(mounts, c->mounts_where, &c->mounts, NULL))
		memset(&c->mounts, 0, sizeof(c->mounts));
}

/* On the submit side, spank_init_post_opt (plugstack.c) puts every
 * option given into the command's own environment as
 * _SLURM_SPANK_OPTION_<plugin>_<option>, non-alphanumerics as "_",
 * before it calls the plugins' init_post_opt (_opt_env_name,
 * spank_stack_set_remote_options_env); pyxis's plugin name is "pyxis"
 * (pyxis_dispatch.c, SPANK_PLUGIN(pyxis, 1)). */
int distenv_pyxis_submit_step(void)
{
	static const char *const names[] = {
		"_SLURM_SPANK_OPTION_pyxis_container_image",
		"_SLURM_SPANK_OPTION_pyxis_container_name",
		"PYXIS_CONTAINER_IMAGE",
		"PYXIS_CONTAINER_NAME",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = getenv(names[i]);

		if (v && v[0])
			return 1;
	}
	return 0;
}
