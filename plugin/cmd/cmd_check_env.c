/*
 * cmd_check_env.c: `distenv check-env [-- COMMAND [ARG...]]`, the first
 * command inside a container: fail, naming each variable, when what
 * distenv set for the step did not reach this environment as it set it
 * (plugin/core/distenv_env_check.h says why that happens), and when the
 * resolved LLaMA-Factory YAML it exported cannot be read here; else run
 * COMMAND in its place (execvp), so the check costs one exec:
 *
 *   srun --distenv ch-run IMG -- distenv check-env -- llamafactory-cli \
 *       train "$DISTENV_LF_CONFIG"
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "distenv_env.h"
#include "distenv_env_check.h"

extern char **environ;

/* The fix for a variable the container replaced or dropped. */
#define FIX_REPLACED \
	"remove it from the image's environment (its ENV, ch-run " \
	"--set-env, Apptainer's %%environment or APPTAINERENV_*), or pass " \
	"the step's value in (pyxis: --container-env=%s)"
#define FIX_DROPPED \
	"let the host's environment into the container (no Apptainer " \
	"--cleanenv/--containall), or pass it (pyxis: " \
	"--container-env=%s)"

/* Print one problem as the command's errors read; returns 1. */
static int problem(const char *where, const char *fix, const char *what)
{
	struct distenv_error err;

	distenv_error_set(&err, where, fix, "%s", what);
	return distenv_cmd_fail(&err);
}

/* The variables of DISTENV_SET: how many differ, each printed. */
static int check_vars(const struct distenv_env_found *found, size_t n)
{
	char what[DISTENV_ERROR_TEXT], fix[DISTENV_ERROR_TEXT];
	char shown[256];
	size_t i;
	int bad = 0;

	for (i = 0; i < n; i++) {
		const struct distenv_env_found *f = &found[i];

		if (f->same)
			continue;
		if (f->live) {
			snprintf(what, sizeof(what),
				 "is \"%s\" here, not the value distenv set "
				 "for this step: replaced after distenv set "
				 "it, by the container runtime or the image",
				 distenv_printable(f->live, shown,
						   sizeof(shown)));
			snprintf(fix, sizeof(fix), FIX_REPLACED, f->name);
		} else {
			snprintf(what, sizeof(what),
				 "not set here, though distenv set it for this "
				 "step: the container runtime dropped it");
			snprintf(fix, sizeof(fix), FIX_DROPPED, f->name);
		}
		if (distenv_env_check_advisory(f->name)) {
			struct distenv_error w;
			char line[3 * DISTENV_ERROR_TEXT];

			distenv_error_set(&w, f->name, fix,
					  "%s (a slower run, not a hang)",
					  what);
			distenv_error_format(&w, line, sizeof(line));
			fprintf(stderr, "distenv: warning: %s\n", line);
			continue;
		}
		bad += problem(f->name, fix, what);
	}
	return bad;
}

/* DISTENV_LF_CONFIG, when exported, must be readable here. */
static int check_lf_config(void)
{
	const char *path = getenv("DISTENV_LF_CONFIG");
	char what[DISTENV_ERROR_TEXT], shown[256];

	if (!path || access(path, R_OK) == 0)
		return 0;
	snprintf(what, sizeof(what),
		 "%s: %s here: distenv wrote it where this container does "
		 "not see it",
		 distenv_printable(path, shown, sizeof(shown)),
		 strerror(errno));
	return problem("DISTENV_LF_CONFIG",
		       "mount the directory at the same path inside the "
		       "container (ch-run -b, apptainer --bind, pyxis "
		       "--container-mounts), or have distenv write it in a "
		       "directory mounted so (--distenv-lf-dir, the site "
		       "file's lf_dir:, or TMPDIR)",
		       what);
}

int distenv_cmd_check_env(const struct distenv_command *cmd, int argc,
			  char **argv)
{
	struct distenv_env_found found[DISTENV_ENV_CHECK_MAX];
	struct distenv_cmd_options o;
	struct distenv_error err;
	const char *value;
	char shown[256];
	size_t n;
	int id, rc, bad;

	distenv_error_clear(&err);
	distenv_cmd_options_begin(&o, cmd);
	while ((id = distenv_cmd_option(&o, argc, argv, &value, &err)) >= 0)
		; /* only --help: the table gives check-env no other */
	rc = distenv_cmd_options_end(&o, id, argc, argv, 0, INT_MAX, &err);
	if (rc >= 0)
		return rc;
	if (distenv_env_check((const char *const *) environ, found, &n, &err))
		return distenv_cmd_fail(&err);
	bad = check_vars(found, n) + check_lf_config();
	if (bad)
		return 1;
	if (optind >= argc)
		return 0;
	execvp(argv[optind], argv + optind);
	fprintf(stderr, "distenv: error: %s: cannot run it: %s\n",
		distenv_printable(argv[optind], shown, sizeof(shown)),
		strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
