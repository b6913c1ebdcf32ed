/*
 * fuzz_sbatch_job: what sbatch's plugin reads to find a job's --signal
 * and --requeue (distenv_requeue.h): a command line, a script and an
 * SBATCH_SIGNAL value. The input is three parts split at the first two
 * 0x01 bytes: the command line (words split at NUL, as
 * /proc/self/cmdline holds them), the script text, SBATCH_SIGNAL. Then
 * the rule, whose finding must be whole.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_requeue.h"

#define WORDS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_job(const struct distenv_sbatch_job *job, int argc)
{
	if (job->script_arg < 0 || job->script_arg >= (argc > 0 ? argc : 1) ||
	    job->requeue < -1 || job->requeue > 1)
		abort();
	if (job->signal.set && (job->signal.lead > 65535 ||
				!job->signal.text[0] || !job->signal.from[0]))
		abort();
	if (job->wrap && job->script_arg)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *script, *env, *p;
	const char *words[WORDS];
	struct distenv_sbatch_job cmd, job;
	struct distenv_error finding;
	size_t cmd_len;
	int argc = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	script = memchr(buf, 1, size);
	if (script)
		*script++ = '\0';
	env = script ? strchr(script, 1) : NULL;
	if (env)
		*env++ = '\0';
	cmd_len = script ? (size_t) (script - 1 - buf) : size;
	for (p = buf; p < buf + cmd_len && argc < WORDS; p += strlen(p) + 1)
		words[argc++] = p;
	distenv_sbatch_scan_argv(argc, words, &cmd);
	check_job(&cmd, argc);
	distenv_sbatch_layers(&cmd, "job.sh", script, env, NULL, NULL, &job);
	check_job(&job, argc);
	distenv_error_clear(&finding);
	if (distenv_requeue_check(&job,
				  size & 1 ? "--distenv-resume=auto" : NULL,
				  &finding) &&
	    (!finding.what[0] || !finding.where[0] || !finding.fix[0]))
		abort();
	free(buf);
	return 0;
}
