/*
 * plugin_options: print the options the plugin registers with Slurm, one
 * a line as srun --help names them ("--distenv-port=PORT"), from the
 * option table (plugin/core/distenv_option_table.h) with the rule
 * spank_options.c registers them by: every row with a plugin name.
 * tests/cmd/options.bats checks distenv(8) and docs/user-guide.md against it.
 */
#include <stdio.h>

#include "distenv_option_table.h"

int main(void)
{
	size_t i;

	for (i = 0; i < DISTENV_OPT_COUNT; i++) {
		const struct distenv_option_row *row = &distenv_option_table[i];

		if (row->plugin_name)
			printf("--%s%s%s\n", row->plugin_name,
			       row->arg ? "=" : "", row->arg ? row->arg : "");
	}
	return 0;
}
