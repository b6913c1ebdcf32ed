/*
 * spank_submit.c: srun, sbatch and salloc, after option parsing. Option
 * values were checked in their callbacks already; what is left is a
 * broken plugstack line, which only stops commands that ask for distenv.
 */
#include <slurm/spank.h>

#include "spank_state.h"

int distenv_submit_post_opt(spank_t sp)
{
	enum distenv_mode mode =
		distenv_effective_mode(&distenv_state.site, &distenv_state.req);

	(void)sp;
	if (distenv_error_is_set(&distenv_state.option_error))
		return -1; /* already logged by the option callback */
	if (mode != DISTENV_MODE_OFF &&
	    distenv_error_is_set(&distenv_state.site_error)) {
		distenv_log_error(&distenv_state.site_error);
		slurm_error("distenv: the plugin's configuration is broken; ask "
			    "your admin, or run without --distenv");
		return -1;
	}
	return 0;
}
