/*
 * distenv_derive_elastic.c: the c10d (elastic) rendezvous variables,
 * RDZV_ID, MIN_NNODES, MAX_NNODES, MAX_RESTARTS and torchrun's PET_RDZV_*
 * forms (LLaMA-Factory launcher.py, torch/distributed/run.py; the rule
 * and its sources are at derive_emit_elastic).
 */
#include <stdio.h>
#include <string.h>

#include "distenv_derive_int.h"
#include "distenv_env.h"

/* This node's address on the interface that reaches the master, of the
 * master address's family (in the master's subnet when there is one),
 * into buf; 0 when found. */
static int local_addr(const struct derivation *d, char *buf, size_t len)
{
	const struct distenv_iface *best = NULL;
	size_t i;

	if (!d->have_master)
		return -1;
	for (i = 0; i < d->net->n_ifaces; i++) {
		const struct distenv_iface *f = &d->net->ifaces[i];

		if (strcmp(f->name, d->master.ifname) ||
		    f->ip.family != d->master.ip.family ||
		    (d->multi_node && distenv_ip_is_loopback(&f->ip)) ||
		    distenv_ip_is_link_local(&f->ip))
			continue;
		if (!best || distenv_ip_in_subnet(&d->master.ip, f))
			best = f;
		if (distenv_ip_in_subnet(&d->master.ip, f))
			break;
	}
	if (!best)
		return -1;
	distenv_ip_format(&best->ip, buf, len);
	return 0;
}

static int check_elastic_nodes(struct derivation *d, uint32_t lo, uint32_t hi)
{
	const struct distenv_step *s = d->step;
	char where[DISTENV_HOST_MAX + 32];

	if (s->nnodes >= lo && s->nnodes <= hi)
		return 0;
	snprintf(where, sizeof(where), "--distenv-nodes=%u:%u", lo, hi);
	return distenv_error_set(
		d->err, where,
		"ask for a node count in that range (srun -N), or widen "
		"--distenv-nodes",
		"the step has %u nodes: the rendezvous would wait for %s",
		s->nnodes,
		s->nnodes < lo ? "nodes that never come" :
				 "fewer nodes than it has");
}

/* MASTER_ADDR:MASTER_PORT as they are in force, an IPv6 address in
 * brackets. */
static int emit_rdzv_endpoint(struct derivation *d)
{
	const char *addr = distenv_vars_value(d->vars, "MASTER_ADDR");
	const char *port = distenv_vars_value(d->vars, "MASTER_PORT");
	char endpoint[DISTENV_IP_TEXT_MAX + 16];

	snprintf(endpoint, sizeof(endpoint),
		 strchr(addr ? addr : "", ':') ? "[%s]:%s" : "%s:%s",
		 addr ? addr : "", port ? port : "");
	return derive_emit(
		d, "PET_RDZV_ENDPOINT", endpoint,
		"MASTER_ADDR:MASTER_PORT, where node index 0 hosts the "
		"rendezvous store");
}

/* Workers restart after a failure (MAX_RESTARTS) or when nodes come and
 * go (MIN < MAX). Since torch 2.5 (pytorch/pytorch PR 128096) torchrun
 * shares its rendezvous TCPStore with the workers, with keys that do not
 * change per attempt, so restarted workers read the failed attempt's
 * addresses and the restart hangs (pytorch/pytorch issue 135712;
 * measured with torch 2.13 in tests/cluster/llamafactory.bats). Not
 * sharing it gives each attempt a store of its own on rank 0. */
static int emit_store_sharing(struct derivation *d, uint32_t lo, uint32_t hi)
{
	uint32_t restarts = d->req->max_restarts;

	if (!restarts && lo >= hi)
		return 0;
	return derive_emit(
		d, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1",
		"workers may restart (MAX_RESTARTS=%u, nodes %u:%u): with "
		"the rendezvous store shared (torch >= 2.5), restarted "
		"workers read the failed attempt's keys and hang (pytorch "
		"issue 135712)",
		restarts, lo, hi);
}

/* A node range (MIN < MAX) lets a restart come back with another node
 * count, and so another data-parallel world size. DeepSpeed's ZeRO
 * checkpoints hold one file of optimizer state per data-parallel rank
 * and refuse to load under another size (deepspeed/runtime/engine.py,
 * _get_all_zero_checkpoint_state_dicts: "The checkpoint being loaded
 * used a DP world size of A but the current world size is B";
 * deepspeedai/DeepSpeed issues 6441 and 7628). The derivation cannot
 * tell whether the job trains with ZeRO, so every range warns, under
 * --distenv-check=warn and strict alike (a range is a legitimate choice
 * for a training that keeps no per-rank state); off says nothing. */
static void warn_elastic_range(struct derivation *d, uint32_t lo, uint32_t hi)
{
	struct distenv_error w;
	char where[64];

	if (lo >= hi || d->req->check == DISTENV_CHECK_OFF)
		return;
	snprintf(where, sizeof(where), "--distenv-nodes=%u:%u", lo, hi);
	distenv_error_set(
		&w, where,
		"for a ZeRO run give one node count (MIN_NNODES = "
		"MAX_NNODES, --distenv-nodes=N:N), or convert the "
		"checkpoint before a resume at another size (DeepSpeed's "
		"ds_to_universal.py and load_universal, or zero_to_fp32.py "
		"for the weights alone)",
		"a restart with another node count changes the "
		"data-parallel world size, and DeepSpeed ZeRO refuses a "
		"checkpoint saved at another size (\"The checkpoint being "
		"loaded used a DP world size of ...\")");
	distenv_vars_warn(d->vars, &w);
}

/*
 * The c10d (elastic) rendezvous, for --distenv=elastic and for torchrun
 * mode when the user exported RDZV_ID.
 * - LLaMA-Factory 0.9.3-0.9.5, src/llamafactory/launcher.py: with RDZV_ID
 *   set it runs `torchrun --nnodes MIN_NNODES:MAX_NNODES (else NNODES)
 *   --nproc-per-node NPROC_PER_NODE --rdzv-id RDZV_ID --rdzv-backend c10d
 *   --rdzv-endpoint MASTER_ADDR:MASTER_PORT --max-restarts MAX_RESTARTS`,
 *   without --node_rank: c10d hands out the node ranks.
 * - torchrun (torch/distributed/run.py, argparse_util.py) reads
 *   PET_<ARG> for an argument not on its command line: the PET_ forms
 *   serve a bare `torchrun script.py`, and the two below serve both.
 * - Which node hosts the store: elastic/rendezvous/
 *   c10d_rendezvous_backend.py takes the rendezvous config's is_host,
 *   else guesses by matching the endpoint's host against this machine's
 *   names and addresses, which fails when the host name resolves to
 *   loopback (then no agent hosts it and all fail to connect):
 *   PET_RDZV_CONF=is_host=1 on node index 0, whose address MASTER_ADDR
 *   is, is_host=0 elsewhere.
 * - The workers' MASTER_ADDR: the rank 0 agent's --local-addr, else its
 *   host name (elastic/rendezvous/api.py RendezvousStoreInfo.build),
 *   loopback again: PET_LOCAL_ADDR is this node's address on the
 *   interface that reaches the master.
 * RDZV_ID is the job, the step and the requeue count
 * (SLURM_RESTART_COUNT): the same on every node of the step, new for a
 * new step or a requeued start, so that no agent joins an old round.
 */
int derive_emit_elastic(struct derivation *d)
{
	const struct distenv_step *s = d->step;
	const struct distenv_request *r = d->req;
	uint32_t lo = r->min_nodes ? r->min_nodes : s->nnodes;
	uint32_t hi = r->max_nodes ? r->max_nodes : s->nnodes;
	uint32_t restarts = 0;
	const char *rc = distenv_env_get(s->envp, "SLURM_RESTART_COUNT");
	char id[64], nodes[32], laddr[DISTENV_IP_TEXT_MAX];

	if (check_elastic_nodes(d, lo, hi))
		return -1;
	if (rc && distenv_parse_u32(rc, 1000000, &restarts))
		restarts = 0;
	snprintf(id, sizeof(id), "%u.%u.%u", s->job_id, s->step_id, restarts);
	if (derive_emit(
		    d, "RDZV_ID", id,
		    "job %u, step %u, start %u (SLURM_RESTART_COUNT): the same on "
		    "every node, new for each step and requeue",
		    s->job_id, s->step_id, restarts))
		return -1;
	if (derive_emit_u32(d, "MIN_NNODES", lo,
			    r->min_nodes ? "--distenv-nodes" :
					   "the step's node count") ||
	    derive_emit_u32(d, "MAX_NNODES", hi,
			    r->max_nodes ? "--distenv-nodes" :
					   "the step's node count") ||
	    derive_emit_u32(d, "MAX_RESTARTS", r->max_restarts,
			    r->max_restarts_given ? "--distenv-max-restarts" :
						    "no worker restarts unless "
						    "--distenv-max-restarts"))
		return -1;
	snprintf(nodes, sizeof(nodes), "%s:%s",
		 distenv_vars_value(d->vars, "MIN_NNODES"),
		 distenv_vars_value(d->vars, "MAX_NNODES"));
	if (derive_emit(
		    d, "PET_NNODES", nodes,
		    "MIN_NNODES:MAX_NNODES, torchrun's --nnodes of an elastic "
		    "launch") ||
	    derive_emit_pet(d, "NPROC_PER_NODE") ||
	    derive_emit(
		    d, "PET_RDZV_BACKEND", "c10d",
		    "RDZV_ID is set: LLaMA-Factory >= 0.9.3 launches with c10d "
		    "rendezvous, which hands out the node ranks (NODE_RANK is not "
		    "used)"))
		return -1;
	if (emit_rdzv_endpoint(d) || derive_emit_pet(d, "RDZV_ID") ||
	    derive_emit_pet(d, "MAX_RESTARTS") ||
	    derive_emit(
		    d, "PET_RDZV_CONF",
		    s->node_id == 0 ? "is_host=1" : "is_host=0", "%s",
		    s->node_id == 0 ?
			    "this node hosts the store: torchrun's guess from the host "
			    "name fails when it resolves to loopback" :
			    "the store is on node index 0"))
		return -1;
	if (local_addr(d, laddr, sizeof(laddr)) == 0 &&
	    derive_emit(
		    d, "PET_LOCAL_ADDR", laddr,
		    "this node's address on %s: rank 0's agent hands its own to "
		    "the workers as MASTER_ADDR, else its host name's (loopback "
		    "on Debian's /etc/hosts)",
		    d->master.ifname))
		return -1;
	warn_elastic_range(d, lo, hi);
	return emit_store_sharing(d, lo, hi);
}
