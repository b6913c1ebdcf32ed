/*
 * distenv_derive.h: the core. Turns the request, the site settings, the
 * step facts and the node's network facts into the ordered list of
 * variables a task needs, each with the reason for its value. Pure: no
 * Slurm call, no system call, no output.
 *
 * Variables, torchrun mode (one task per node; LLaMA-Factory cli.py /
 * launcher.py builds `torchrun --nnodes NNODES --node_rank NODE_RANK
 * --nproc_per_node NPROC_PER_NODE --master_addr MASTER_ADDR --master_port
 * MASTER_PORT` when FORCE_TORCHRUN is set, docs/contracts.md 1):
 *   NNODES NODE_RANK RANK NPROC_PER_NODE MASTER_ADDR MASTER_PORT
 *   FORCE_TORCHRUN PET_NNODES PET_NODE_RANK PET_NPROC_PER_NODE
 *   PET_MASTER_ADDR PET_MASTER_PORT NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME
 *   [NCCL_IB_HCA]
 * tasks mode (one task per rank, torch.distributed env:// init):
 *   RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK NNODES
 *   MASTER_ADDR MASTER_PORT NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME
 *   [NCCL_IB_HCA]
 * NCCL_IB_HCA comes from the user, the site's fixed list, or from
 * step->topo (the node's topology, distenv_topo.h): the HCAs closest to
 * the step's GPUs on this node (distenv_topo_node_gpus), one value for
 * every task of the node, whatever GPU each task sees (NCCL env docs,
 * NCCL_IB_HCA; docs/contracts.md 4). With step->topo and GPUs, the node's
 * NCCL_SOCKET_IFNAME also prefers, among the interfaces that reach the
 * master, the one closest to those GPUs (the reaching one keeps ties;
 * virtual interfaces only when no physical one reaches). step->topo
 * NULL: neither (no topology).
 * NPROC_PER_NODE: --distenv-nproc, else the step's GPUs on this node
 * (distenv_gpus.h: SLURM_GPUS_ON_NODE, never one bound task's
 * CUDA_VISIBLE_DEVICES), else 1.
 * the batch script (step-independent values only):
 *   NNODES [NPROC_PER_NODE] MASTER_ADDR [FORCE_TORCHRUN]
 * every mode, when the job has a time limit: DISTENV_JOB_END
 * (distenv_job_end, below);
 * and last DISTENV_SET (distenv_env.h), which lets a later step tell
 * these values from the user's.
 */
#ifndef DISTENV_DERIVE_H
#define DISTENV_DERIVE_H

#include <stddef.h>
#include <stdint.h>

#include "distenv_error.h"
#include "distenv_net.h"
#include "distenv_options.h"
#include "distenv_step.h"
#include "distenv_vars.h"

/*
 * The host name to resolve for MASTER_ADDR: the user's MASTER_ADDR when
 * the user exported one (it is kept, so the interface must reach it),
 * else step->master_host.
 */
const char *distenv_master_host(const struct distenv_step *step);

/*
 * The name this node resolves for the master: the user's MASTER_ADDR
 * when the user exported one (kept as given), else step->master_host
 * through the site's master_name: rule (site->master_name, e.g.
 * "{host}-ib": the master's name on the data network;
 * distenv_master_name_expand). Errors: the name does not fit in len.
 */
int distenv_master_lookup_name(const struct distenv_site *site,
			       const struct distenv_step *step, char *buf,
			       size_t len, struct distenv_error *err);

/*
 * Whether distenv_derive will need net (resolution and interfaces): false
 * only when the user set MASTER_ADDR, NCCL_SOCKET_IFNAME and
 * GLOO_SOCKET_IFNAME all three, or for mode off.
 */
int distenv_needs_net(const struct distenv_site *site,
		      const struct distenv_request *req,
		      const struct distenv_step *step);

/*
 * Whether distenv_derive has a rule for this node's own addresses, which
 * needs net even when distenv_needs_net() is false: MASTER_ADDR exported
 * in a multi-node srun step, on a node other than the master's
 * (distenv_user_check.h).
 */
int distenv_needs_own_addrs(const struct distenv_site *site,
			    const struct distenv_request *req,
			    const struct distenv_step *step);

/*
 * The step's task layout as srun knows it before launch (spank(8):
 * slurm_spank_local_user_init, with S_JOB_TOTAL_TASK_COUNT and
 * S_JOB_NNODES): in torchrun and elastic mode torchrun starts the
 * processes, so a step of more tasks than nodes puts several torchruns on
 * some node, which every node would refuse (distenv_derive). Caught
 * here, srun fails once with the fix instead of once per node. Errors
 * for that case only; every other mode, or ntasks <= nnodes, passes.
 */
int distenv_check_step_layout(enum distenv_mode mode, uint32_t ntasks,
			      uint32_t nnodes, uint32_t job_id,
			      uint32_t step_id, struct distenv_error *err);

/*
 * Derive. vars must be empty; on success it holds the variables in export
 * order (nothing at all for mode off), the site's extra variables
 * (site->vars, reason "site policy, partition P") just before
 * DISTENV_SET. First the site's controls (distenv_site_check_request:
 * enabled:, lf_features:, locked:). The site's interfaces: list and address_family: steer the
 * master choice (distenv_master_choose_prefs); the user's own
 * --distenv-ifname or exported interface variables are not filtered.
 * Errors (vars is freed): more than one task on a node in torchrun mode;
 * master address unusable (distenv_master.h); interface named by the
 * user, or exported by the user, matching no interface of the node; an
 * exported GLOO_SOCKET_IFNAME in NCCL's '^'/'=' syntax, or an IP address
 * in it or in an exported NCCL_SOCKET_IFNAME (checked even without net);
 * in a multi-node srun step, an interface given for NCCL (the one NCCL
 * takes from the list: distenv_ifspec_nccl_takes) or for Gloo (each one)
 * that does not reach the master (distenv_master_reaches); under
 * --distenv-check=strict, any other interface such an NCCL list selects
 * that distenv_iface_usable refuses (a warning in vars otherwise); with
 * step->topo, a site hca: list or an exported NCCL_IB_HCA that selects no
 * active HCA port of the node (distenv_hca.h); port range
 * exhausted; a malformed SLURM_STEP_RESV_PORTS. Possible problems are
 * notes in the reasons instead: LOCAL_RANK beyond the GPUs a task sees
 * (tasks mode), a task that sees fewer GPUs than NPROC_PER_NODE (torchrun
 * mode). net may be NULL only when distenv_needs_net() is false.
 */
/*
 * The job's end (epoch seconds) by its time limit, as exported in
 * DISTENV_JOB_END: SLURM_JOB_END_TIME of step->envp (Slurm >= 23.02),
 * else step->job_end (slurmctld's, asked by the sys layer on older
 * releases). Returns 1 with *end and *source (what the value came
 * from) set; 0 when unknown, malformed, or a year or more after
 * SLURM_JOB_START_TIME (slurmctld's end for a job without a time limit).
 */
int distenv_job_end(const struct distenv_step *step, long long *end,
		    const char **source);

int distenv_derive(const struct distenv_site *site,
		   const struct distenv_request *req,
		   const struct distenv_step *step,
		   const struct distenv_net *net, struct distenv_vars *vars,
		   struct distenv_error *err);

#endif
