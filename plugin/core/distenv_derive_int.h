/*
 * distenv_derive_int.h: what the parts of the derivation share, private
 * to plugin/core/distenv_derive*.c and distenv_hca.c (distenv_derive.h is
 * the public side).
 *
 * distenv_derive.c drives: it fills one struct derivation, checks the
 * step, and calls the parts below in export order. Each part owns the
 * rules of its variables, with their upstream sources:
 *   distenv_derive_master.c  MASTER_ADDR, MASTER_PORT (distenv_master.h,
 *                            distenv_ports.h)
 *   distenv_derive_ifname.c  NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME, and
 *                            the checks of the user's exported ones
 *   distenv_hca.c            NCCL_IB_HCA
 *   distenv_derive_ranks.c   NNODES, NODE_RANK, RANK, WORLD_SIZE,
 *                            LOCAL_RANK, LOCAL_WORLD_SIZE, NPROC_PER_NODE
 *   distenv_derive_elastic.c the c10d rendezvous (RDZV_ID, PET_RDZV_*)
 *   distenv_derive_job_end.c DISTENV_JOB_END
 *   distenv_derive_cpus.c    OMP_NUM_THREADS, and the CPU budget check
 * Every derive_* function that can fail returns 0 or -1 and fills d->err;
 * none prints.
 */
#ifndef DISTENV_DERIVE_INT_H
#define DISTENV_DERIVE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_derive.h"
#include "distenv_gpus.h"
#include "distenv_master.h"
#include "distenv_topo.h"

/* The topology's answer for this node (distenv_topo.h), worked out once
 * per derivation when the step has a topology. */
struct topo_view {
	struct distenv_topo_plan plan;
	size_t gpus[DISTENV_TOPO_GPUS_MAX]; /* the step's on this node, into
					     * topo->gpus */
	size_t n_gpus;
	const char *source; /* the variable they came from, or NULL */
	char note[256]; /* GPUs that could not be placed */
};

/* Everything one derivation works with, so helpers take one pointer. */
struct derivation {
	const struct distenv_site *site;
	const struct distenv_request *req;
	const struct distenv_step *step;
	const struct distenv_net *net;
	struct distenv_vars *vars;
	struct distenv_error *err;
	enum distenv_mode mode;
	int elastic; /* c10d rendezvous: elastic mode, or RDZV_ID exported */
	int multi_node;
	int have_master;
	struct distenv_master_choice master;
	struct topo_view *topo; /* NULL: no topology for this step */
	struct distenv_gpus gpus; /* read on first use (derive_task_gpus) */
	int have_gpus;
};

/* Add name: the user's value if the user set it, else value. For the
 * site's extra variables; derived ones go through derive_emit. */
int derive_add_var(struct derivation *d, const char *name, const char *value,
		   const char *reason);

/* A derived variable: only names of the table of distenv_derived.h,
 * which the site policy and docs/variables.md follow (an internal error
 * otherwise). The user's value is kept when the user set one. */
int derive_emit(struct derivation *d, const char *name, const char *value,
		const char *reason_fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* derive_emit with value written in decimal. */
int derive_emit_u32(struct derivation *d, const char *name, uint32_t value,
		    const char *reason);

/* PET_<name> mirrors the value in force for <name>, user's or derived:
 * torchrun reads PET_* for any argument not on its command line
 * (torch/distributed/argparse_util.py env action). */
int derive_emit_pet(struct derivation *d, const char *name);

/* The task's and the step's GPUs (distenv_gpus.h), read once. */
const struct distenv_gpus *derive_task_gpus(struct derivation *d);

/* distenv_derive_master.c. The master choice (distenv_master.h): first
 * the checks of the user's exported interface variables, then the
 * address and interface that reach the master, kept in d->master.
 * Without net needed (the user set all three), nothing to choose; in the
 * batch script a master that cannot be resolved is left for the steps. */
int derive_choose_master(struct derivation *d);
int derive_emit_master_addr(struct derivation *d);
/* SLURM_STEP_RESV_PORTS, else --distenv-port, else derived from the
 * job and step in the site's port_range (distenv_ports.h). */
int derive_emit_master_port(struct derivation *d);

/* distenv_derive_ifname.c. The checks of an exported NCCL_SOCKET_IFNAME
 * or GLOO_SOCKET_IFNAME: what neither can read (before any network
 * fact), what matches no interface of the node, what does not reach the
 * master in a multi-node step, and there an interface after the first
 * of an NCCL list that other nodes cannot use (a warning, or an error
 * under --distenv-check=strict). */
int derive_check_user_ifname_syntax(struct derivation *d);
int derive_check_user_ifnames(struct derivation *d);
int derive_check_user_ifnames_reach(struct derivation *d);
int derive_emit_ifnames(struct derivation *d);

/* distenv_hca.c: NCCL_IB_HCA. */
int derive_emit_hca(struct derivation *d);

/* distenv_derive_ranks.c. */
int derive_emit_nproc(struct derivation *d);
/* Torchrun mode: NNODES, NODE_RANK and RANK (= NODE_RANK). */
int derive_emit_torchrun_ranks(struct derivation *d);
/* Tasks mode: RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK
 * NNODES. */
int derive_emit_task_ranks(struct derivation *d);

/* distenv_derive_elastic.c: the c10d rendezvous, for elastic mode and
 * torchrun mode with RDZV_ID exported. */
int derive_emit_elastic(struct derivation *d);

/* distenv_derive_cpus.c: the task's CPU budget (distenv_cpus.h): a
 * warning, or an error under --distenv-check=strict, when the task is
 * short of CPUs; then OMP_NUM_THREADS. srun steps only. */
int derive_cpu_budget(struct derivation *d);

/* DISTENV_JOB_END when the job's end is known and it has a time limit
 * (distenv_job_end, distenv_derive.h); nothing otherwise. */
int derive_emit_job_end(struct derivation *d);

#endif
