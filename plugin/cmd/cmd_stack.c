/*
 * cmd_stack.c: the LLaMA-Factory and transformers versions of the Python
 * the job runs, for distenv plan and prepare when --lf-version or
 * --transformers-version is not given. That Python is the templates'
 * (DPO_PYTHON, else python3 on PATH); its package metadata
 * (importlib.metadata, no import of the packages) gives both. What it
 * cannot say stays unknown, which the plan reads as the safer case
 * (plugin/plan/plan_stack.h). The plugin does not do this: task_init
 * would start the job's Python on every task before launch.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "distenv_env.h"
#include "plan_stack.h"

extern char **environ;

static const char probe[] = "import importlib.metadata as m\n"
			    "for p in ('llamafactory', 'transformers'):\n"
			    "    try:\n"
			    "        print(m.version(p))\n"
			    "    except Exception:\n"
			    "        print('unknown')\n";

/* The probe's two lines into lf and tf; 0 when it ran. */
static int run_probe(const char *python, char *lf, char *tf, size_t len)
{
	char *argv[] = { (char *) python, "-c", (char *) probe, NULL };
	posix_spawn_file_actions_t fa;
	int fds[2], status = 0, ok, spawned;
	pid_t pid = -1;
	FILE *out;

	if (pipe(fds))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null",
					 O_WRONLY, 0);
	spawned = !posix_spawnp(&pid, python, &fa, NULL, argv, environ);
	ok = spawned;
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	out = fdopen(fds[0], "r");
	if (!out) {
		close(fds[0]);
		ok = 0;
	} else {
		ok = ok && fgets(lf, (int) len, out) &&
		     fgets(tf, (int) len, out);
		fclose(out);
	}
	if (spawned)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	if (!ok || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	lf[strcspn(lf, "\n")] = '\0';
	tf[strcspn(tf, "\n")] = '\0';
	return 0;
}

/* One version from the probe: known, or unknown with why in from. */
static void take(struct plan_version *v, const char **from, const char *text,
		 const char *pkg, const char *python, char *buf, size_t len)
{
	struct distenv_error err;

	if (!plan_parse_version(text, "", v, &err) && v->known) {
		snprintf(buf, len, "%s", python);
	} else {
		memset(v, 0, sizeof(*v));
		snprintf(buf, len, "%s has no %s: unknown", python, pkg);
	}
	*from = buf;
}

void distenv_cmd_stack_detect(struct plan_stack *s)
{
	static char lf_from[300], tf_from[300];
	char lf[64] = "", tf[64] = "";
	const char *python =
		distenv_env_get((const char *const *) environ, "DPO_PYTHON");
	int need_lf = !s->lf_from, need_tf = !s->tf_from;

	if (!need_lf && !need_tf)
		return;
	if (!python || !python[0])
		python = "python3";
	if (run_probe(python, lf, tf, sizeof(lf))) {
		snprintf(lf_from, sizeof(lf_from), "%s did not run: unknown",
			 python);
		if (need_lf)
			s->lf_from = lf_from;
		if (need_tf)
			s->tf_from = lf_from;
		return;
	}
	if (need_lf)
		take(&s->lf, &s->lf_from, lf, "llamafactory", python, lf_from,
		     sizeof(lf_from));
	if (need_tf)
		take(&s->tf, &s->tf_from, tf, "transformers", python, tf_from,
		     sizeof(tf_from));
}
