/*
 * distenv_requeue.h: does a batch job that will be requeued, or resumes
 * from its checkpoints, get a warning before its time limit that leaves
 * time for a save?
 *
 * At the time limit Slurm sends SIGTERM, then after KillWait SIGKILL
 * (slurm.conf(5), KillWait); nothing requeues the job. A job script
 * requeues itself only when Slurm warns it first: sbatch --signal=
 * [{R|B}:]SIG[@SECONDS] sends SIG SECONDS before the end (default 60;
 * sbatch(1), --signal), to the batch shell only with "B:" and otherwise
 * to the job's steps but not the shell, whose trap (the templates' USR1
 * trap, templates/dpo_job.bash) then never runs. Lightning issue 20542
 * reports the requeue that never came.
 *
 * Where the job's --signal can be seen: nowhere after submission.
 * slurmctld keeps it (job_desc_msg_t warn_signal, warn_time, warn_flags
 * in slurm/slurm.h) but no job record it hands out has it
 * (slurm_job_info_t lacks the fields on 22.05, 24.11 and 26.05), sbatch
 * puts nothing of it in the job's environment, and a SPANK plugin in
 * sbatch's allocator context gets only S_JOB_UID and S_JOB_GID from
 * spank_get_item (_valid_in_allocator_context: src/common/plugstack.c
 * in 22.05, src/common/spank.c in 24.11 and SchedMD/slurm 284c3b95f0).
 * What sbatch itself reads can be read again
 * by the plugin in sbatch's own process: its command line
 * (/proc/self/cmdline), its environment (SBATCH_SIGNAL, SBATCH_REQUEUE,
 * SBATCH_NO_REQUEUE: sbatch(1), INPUT ENVIRONMENT VARIABLES) and the
 * script's #SBATCH lines, with sbatch's precedence: the command line
 * over the environment over the script (src/sbatch/opt.c: the script's
 * options are applied first, then the environment, then the command
 * line again). This file reads them; the caller gathers them. Pure.
 */
#ifndef DISTENV_REQUEUE_H
#define DISTENV_REQUEUE_H

#include "distenv_error.h"

/* sbatch(1), --signal: "If a sig_num is specified without any sig_time,
 * the default time will be 60 seconds." */
#define DISTENV_SIGNAL_LEAD_DEFAULT 60

/* The shortest lead that leaves time for a save. A ZeRO checkpoint of
 * mixed-precision Adam holds about 14 bytes a parameter (16-bit weights,
 * the fp32 copy and Adam's two moments: the ZeRO paper, Rajbhandari et
 * al. 2020, section 3.1): about 100 GB for a 7B model, some 100 s at
 * 1 GB/s. A larger model or a slower file system needs more (the
 * templates ask for 900 s); less than this cannot finish even a small
 * model's save before SIGKILL. */
#define DISTENV_SAVE_LEAD_MIN 120

/* A --signal value and where it came from. */
struct distenv_signal {
	int set; /* a --signal was given (and parsed) */
	int batch; /* "B:": to the batch shell only */
	unsigned lead; /* seconds before the end */
	char text[64]; /* as given, for messages */
	char from[160]; /* "the sbatch command line", "SBATCH_SIGNAL",
			 * "FILE line N" */
};

/* What sbatch will submit, as far as distenv needs it. */
struct distenv_sbatch_job {
	struct distenv_signal signal; /* the one in force */
	int requeue; /* 1 --requeue, 0 --no-requeue, -1 neither (the
		      * cluster's JobRequeue decides) */
	int wrap; /* --wrap: no script */
	int script_arg; /* argv index of the script, 0: none (stdin, or
			 * --wrap, or not found) */
	int unknown; /* the script's #SBATCH lines could not be read: a
		      * signal they may hold is not seen */
};

/*
 * Parse a --signal value, [{R|B}:]SIG[@SECONDS] (SIG a name or number;
 * SECONDS 0-65535; no SECONDS: DISTENV_SIGNAL_LEAD_DEFAULT), into sig
 * (from is left as it is). Returns 0, or -1 for a malformed value (sbatch
 * refuses it itself; sig->set is 0 then).
 */
int distenv_signal_parse(const char *value, struct distenv_signal *sig);

/*
 * sbatch's command line, argv[0..argc) (argv[0] the command), scanned
 * as sbatch's getopt_long does (options stop at the first word that is
 * not one, or at "--"): --signal, --requeue, --no-requeue and --wrap
 * into job (job->signal.from "the sbatch command line"), and the index
 * of the script, the first word after the options. Which options take
 * a value comes from Slurm's option table (src/common/slurm_opt.c,
 * SchedMD/slurm 284c3b95f0) and distenv's; an option this table does
 * not know is taken to have one, so that a misread leaves the script
 * unknown (no check) rather than wrong. Abbreviated long options
 * (getopt's unique prefixes) are not recognised. job is reset first.
 */
void distenv_sbatch_scan_argv(int argc, const char *const *argv,
			      struct distenv_sbatch_job *job);

/*
 * The lower layers, applied below the command line's: first the text of
 * the script (its #SBATCH and #SLURM lines up to the first line that is
 * not a comment; name for messages; text NULL when it could not be read:
 * job->unknown, unless job->wrap or the command line gave --signal),
 * then the environment values (SBATCH_SIGNAL, SBATCH_REQUEUE,
 * SBATCH_NO_REQUEUE; NULL when unset). cmd holds what
 * distenv_sbatch_scan_argv found; job gets the result.
 */
void distenv_sbatch_layers(const struct distenv_sbatch_job *cmd,
			   const char *name, const char *text,
			   const char *env_signal, const char *env_requeue,
			   const char *env_no_requeue,
			   struct distenv_sbatch_job *job);

/*
 * The rule. A job that asked to resume (resume_by: the option as given,
 * e.g. "--distenv-resume=auto"; NULL: not asked) or to be requeued
 * (job->requeue 1) needs a --signal with "B:" and a lead of at least
 * DISTENV_SAVE_LEAD_MIN seconds. Returns 1 with finding filled (where:
 * the --signal and where it was given, or --requeue / the resume
 * option; what; fix), or 0: nothing asked, a lead in order, or the
 * script unknown and no --signal seen elsewhere.
 */
int distenv_requeue_check(const struct distenv_sbatch_job *job,
			  const char *resume_by, struct distenv_error *finding);

#endif
