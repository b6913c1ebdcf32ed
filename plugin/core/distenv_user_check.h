/*
 * distenv_user_check.h: user-exported launch variables that contradict
 * the step.
 *
 * distenv never overwrites a variable the user exported (distenv_env.h).
 * A kept value that agrees with the step is harmless; one that
 * contradicts it makes the launch certain to hang: torchrun's static
 * rendezvous waits for node ranks that never come, and torch's env://
 * init waits for WORLD_SIZE ranks (torch/distributed/rendezvous.py,
 * _env_rendezvous_handler; torch/distributed/run.py). This check fails
 * the step before launch instead, with "you exported X=..., the step
 * says ...; unset it".
 *
 * So that no node starts a rendezvous the others never join, every rule
 * that depends only on the exported value and the step's shape (the same
 * on every node) is decided the same way on every node: an exported
 * NODE_RANK in a multi-node step fails on all nodes, also the one whose
 * index it happens to be. The rules:
 * - NNODES: must equal the step's node count (the batch script: the
 *   allocation's).
 * - NODE_RANK (torchrun and tasks mode; PET_NODE_RANK and, in torchrun
 *   mode, RANK, which LLaMA-Factory <= 0.9.0 reads as the node rank):
 *   one node only, and then 0. Not in elastic mode, where c10d hands out
 *   the node ranks and LLaMA-Factory ignores them.
 * - tasks mode: WORLD_SIZE must equal the step's task count; RANK one
 *   task only, and then 0; LOCAL_RANK one task per node only, and then
 *   0.
 * - MASTER_PORT: a number in 1024-65535, as --distenv-port.
 * - MASTER_ADDR: in a multi-node step not loopback (127.0.0.0/8, ::1,
 *   "localhost"): every node would connect to itself. With net (this
 *   node's facts, the user's MASTER_ADDR resolved) on node index 0,
 *   where the store listens: one of this node's addresses, else the
 *   others connect to a host where nobody listens. With net on any
 *   other node of a multi-node srun step: not one of this node's own
 *   addresses (an address of its interfaces, or loopback once resolved,
 *   as a host name /etc/hosts maps to 127.0.1.1), else this node waits
 *   for a store on itself that nobody starts (hiyouga/LlamaFactory issue
 *   7326: every node was given its own address). The fix names what
 *   distenv would derive: the address of master_name (the master's name
 *   on the data network, the site's master_name: rule applied; NULL or
 *   "": step->master_host).
 * Inputs: mode (the effective one), step, net (may be NULL: the
 * MASTER_ADDR address rules are then skipped), master_name. Errors: the first rule
 * broken, where = "NAME (exported)", fix = what to unset.
 */
#ifndef DISTENV_USER_CHECK_H
#define DISTENV_USER_CHECK_H

#include "distenv_error.h"
#include "distenv_net.h"
#include "distenv_options.h"
#include "distenv_step.h"

int distenv_user_check(enum distenv_mode mode, const struct distenv_step *step,
		       const struct distenv_net *net, const char *master_name,
		       struct distenv_error *err);

#endif
