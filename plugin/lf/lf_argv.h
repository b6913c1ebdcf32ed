/*
 * lf_argv.h: does the step's command run the user's original training
 * YAML instead of the resolved copy?
 *
 * With --distenv-lf-config=dpo.yaml, distenv writes a resolved copy per
 * node (save_on_each_node for the node's storage, the resume checkpoint,
 * the offload) and exports its path as DISTENV_LF_CONFIG. A command that
 * still names dpo.yaml (`srun llamafactory-cli train dpo.yaml`) runs the
 * original and none of that applies, silently: on node-local disks the
 * next resume then fails. SPANK gives the task's argv (spank.h,
 * S_JOB_ARGV), which this looks through.
 *
 * Rule: a command that mentions DISTENV_LF_CONFIG anywhere uses the copy.
 * Else every word of every argument (split on blanks and quotes, so that
 * `bash -c 'exec llamafactory-cli train dpo.yaml'` counts) whose last path
 * component equals the config's is a candidate; same_file (the caller's
 * stat(2) comparison; NULL: by name only) confirms that it is the same
 * file. Inputs: argc/argv as SPANK gives them, config as the option gave
 * it. Returns 1 and copies the word into word (len bytes) when one
 * matches, else 0. No errors.
 */
#ifndef LF_ARGV_H
#define LF_ARGV_H

#include <stddef.h>

int lf_argv_names_original(int argc, char *const *argv, const char *config,
			   int (*same_file)(const char *a, const char *b),
			   char *word, size_t len);

#endif
