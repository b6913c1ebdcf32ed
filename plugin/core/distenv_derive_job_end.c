/*
 * distenv_derive_job_end.c: DISTENV_JOB_END, the time at which the job's
 * time limit ends it, in epoch seconds, for every task and the batch
 * script. A training that knows it can save before the allocation is
 * gone; one that measures a deadline from its own start (a restart
 * starts later than the job) cannot.
 *
 * Source: Slurm's own projected end. From Slurm 23.02 on, sbatch,
 * salloc and srun give their jobs and tasks SLURM_JOB_END_TIME ("the
 * UNIX timestamp for a job's projected end time", sbatch(1), srun(1),
 * OUTPUT ENVIRONMENT VARIABLES; measured on 24.11 and 26.05) and
 * SLURM_JOB_START_TIME. Slurm 22.05 sets neither: there the sys layer
 * asks slurmctld once, for the batch script only (slurm_load_job(3)),
 * into step->job_end, and the script's steps inherit what it exported.
 * A job without a time limit gets an end a year after its start from
 * slurmctld (the job's end time when its limit is INFINITE); such an end,
 * or none, exports nothing. The value is a snapshot: a later
 * `scontrol update TimeLimit=` is not seen, which the reason says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "distenv_derive_int.h"
#include "distenv_env.h"

/* A year: slurmctld's end for a job whose time limit is INFINITE. */
#define NO_LIMIT_SPAN (365LL * 24 * 60 * 60)

/* A decimal count of seconds, or -1. */
static long long epoch_value(const char *text)
{
	char *end;
	long long v;

	if (!text || *text < '0' || *text > '9')
		return -1;
	v = strtoll(text, &end, 10);
	if (*end || v <= 0)
		return -1;
	return v;
}

int distenv_job_end(const struct distenv_step *step, long long *end,
		    const char **source)
{
	long long e =
		epoch_value(distenv_env_get(step->envp, "SLURM_JOB_END_TIME"));
	long long s = epoch_value(distenv_env_get(step->envp,
						  "SLURM_JOB_START_TIME"));

	*source = "SLURM_JOB_END_TIME";
	if (e < 0 && step->job_end > 0) {
		e = step->job_end;
		*source = "slurmctld's end time of the job "
			  "(Slurm before 23.02 sets no SLURM_JOB_END_TIME)";
	}
	if (e < 0)
		return 0;
	if (s > 0 && e - s >= NO_LIMIT_SPAN)
		return 0;
	*end = e;
	return 1;
}

int derive_emit_job_end(struct derivation *d)
{
	const char *source;
	long long end;
	char value[24], when[32];
	struct tm tm;
	time_t t;

	if (!distenv_job_end(d->step, &end, &source))
		return 0;
	t = (time_t) end;
	if (!gmtime_r(&t, &tm) ||
	    !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(when, sizeof(when), "?");
	snprintf(value, sizeof(value), "%lld", end);
	return derive_emit(d, "DISTENV_JOB_END", value,
			   "%s: the time limit ends the job at %s (epoch "
			   "seconds, for a save before it; a later change of "
			   "the limit is not seen)",
			   source, when);
}
