/*
 * distenv_env_check.h: did the variables distenv set for a step reach the
 * program as it set them? The check `distenv check-env` runs as the first
 * command inside a container (pure: an environment array in, a list out).
 *
 * Why: a container runtime starts after distenv's task_init and may
 * replace what distenv set, silently. ch-run --set-env values "replace
 * any already in the environment" (Charliecloud ch-run(1)); Apptainer
 * gives the image's environment precedence over the host's and drops the
 * host's under --cleanenv / --containall (Apptainer user guide,
 * "Environment and metadata"); pyxis copies the image's environment over
 * the task's and sets RANK and LOCAL_RANK for PyTorch images (NVIDIA/pyxis
 * v0.24.0, pyxis_slurmstepd.c). A torchrun that gets another NNODES or
 * MASTER_PORT than its peers waits in the rendezvous until it times out.
 *
 * Input: the environment as seen where the check runs. distenv's
 * DISTENV_SET (distenv_env.h) names each variable it set with the 32-bit
 * FNV-1a hash of the value it set, so a value that no longer has its hash
 * was replaced after distenv set it; one that is gone was dropped.
 */
#ifndef DISTENV_ENV_CHECK_H
#define DISTENV_ENV_CHECK_H

#include <stddef.h>

#include "distenv_error.h"
#include "distenv_vars.h"

/* At most this many entries in DISTENV_SET (distenv sets fewer). */
#define DISTENV_ENV_CHECK_MAX 64

/* One variable of DISTENV_SET as found in the environment. */
struct distenv_env_found {
	char name[DISTENV_NAME_MAX];
	/* its value in the environment now, or NULL: not set */
	const char *live;
	/* 1: the value distenv set (its hash matches); 0: replaced/dropped */
	int same;
};

/*
 * Read envp's DISTENV_SET and look up each variable it names, in its
 * order, into found[0 .. *n - 1] (found has DISTENV_ENV_CHECK_MAX
 * entries). Returns 0, or -1 with err: DISTENV_SET not set (this is no
 * task of a step distenv set up), or an entry that is not NAME:HASH (8
 * hex digits), or more than DISTENV_ENV_CHECK_MAX entries. The live
 * values point into envp.
 */
int distenv_env_check(const char *const *envp, struct distenv_env_found *found,
		      size_t *n, struct distenv_error *err);

/*
 * Whether a replaced or dropped name only slows the run instead of
 * splitting or hanging it: OMP_NUM_THREADS (distenv_cpus.h), which an
 * image or enroot's PyTorch hook may set to 1 (conf/hooks/extra/
 * 50-slurm-pytorch.sh, for several tasks per node when the image sets
 * none). check-env warns about such a name instead of failing. 1 or 0.
 */
int distenv_env_check_advisory(const char *name);

#endif
