/*
 * distenv_launch_line.h: a launch line that contradicts the step.
 *
 * A command written once for every node of a step carries the values
 * the shell gave it where it was expanded: `srun bash -c "torchrun
 * --node_rank $SLURM_NODEID ..."` in a batch script is expanded by the
 * batch shell, on one node, and every node gets --node_rank 0
 * (huggingface/accelerate issue 2816: "every instance got launched
 * thinking it was the master process"). Such a line hangs the
 * rendezvous until its timeout (600 s static, 900 s c10d join), with
 * every GPU of the job held. SPANK gives each task its command (spank.h,
 * S_JOB_ARGV), so each node checks the line against its own values
 * before launch.
 *
 * The words: every argument of the command; an argument that is the
 * script of a shell's -c (`bash -c '...'`, `sh -lc "..."`) is split
 * as the shell would split it (quotes, backslashes, `;` `&&` `|` and
 * newlines ending a command), one level inside another such script
 * too. A word with an expansion the task's shell performs ($VAR,
 * $(...), `...`) is not literal and is not judged: `--node_rank
 * $NODE_RANK` inside single quotes is each node's own value. Only a
 * master of $(hostname), $HOSTNAME or $SLURMD_NODENAME is read, as this
 * node's own name (below).
 *
 * The launchers: torchrun, python -m torch.distributed.run and
 * torch.distributed.launch (torch/distributed/run.py: --node-rank,
 * --nnodes, --nproc-per-node, --master-addr, --rdzv-endpoint,
 * --rdzv-backend, --standalone, each also with underscores);
 * `accelerate launch` (src/accelerate/commands/launch.py:
 * --machine_rank, --num_machines, --main_process_ip, --rdzv_backend,
 * hyphens accepted too); deepspeed (deepspeed/launcher/runner.py:
 * --node_rank, --num_nodes, --master_addr; -1 is its "not given").
 * `--opt V` and `--opt=V`. Options end at the script (the first word
 * that is not an option or an option's value) or at the end of the
 * shell command. llamafactory-cli takes none of these: it reads
 * NNODES, NODE_RANK, ... from the environment.
 *
 * Errors (a sure hang or a wrong world; the same decision on every node
 * that sees the same value):
 * - --standalone in a multi-node step: every node gets a rendezvous store
 *   of its own (run.py: c10d on localhost:0, a random id), so the nodes
 *   never meet;
 * - a node rank that is not this node's index, under the static
 *   rendezvous (torchrun's default, accelerate's default, DeepSpeed's
 *   --no_ssh mode): two nodes claim one rank, and the store waits for a
 *   rank nobody has;
 * - a node count (N, or MIN:MAX) that does not hold the step's;
 * - a master address or rendezvous endpoint that cannot be the master,
 *   on a node other than the master: this node's own name, `$(hostname)`
 *   or $HOSTNAME (each node its own, NVIDIA/nvidia-resiliency-ext issue
 *   142), or loopback. A value equal to the MASTER_ADDR in force or to
 *   the master's host name agrees; any other name or address would need
 *   resolution and is not judged.
 * Warnings (err untouched, warn set):
 * - --node_rank with a c10d rendezvous: run.py passes the node rank to
 *   the static rendezvous only; c10d hands out ranks by join order, so
 *   the value is ignored;
 * - a processes-per-node count other than the NPROC_PER_NODE in force
 *   (workers on GPUs that are not there, or GPUs left idle; not a hang).
 *   auto, gpu, cpu and xpu are not judged.
 * Only the first finding is reported. Nothing in a single-node step.
 * Returns 0 (warn may be set) or -1 with err.
 */
#ifndef DISTENV_LAUNCH_LINE_H
#define DISTENV_LAUNCH_LINE_H

#include <stdint.h>

#include "distenv_error.h"
#include "distenv_step.h"
#include "distenv_vars.h"

struct distenv_launch_facts {
	uint32_t nnodes; /* nodes in the step */
	uint32_t node_id; /* this node's index in the step */
	uint32_t master_node_id; /* the index of the master's node */
	const char *node_name; /* this node's name */
	const char *master_host; /* the master's node name, or NULL */
	const char *master_addr; /* MASTER_ADDR in force, or NULL */
	const char *nproc; /* NPROC_PER_NODE in force, or NULL */
	const char *rdzv_backend; /* PET_RDZV_BACKEND in force, or NULL */
};

int distenv_launch_line_check(int argc, char *const *argv,
			      const struct distenv_launch_facts *f,
			      struct distenv_error *err,
			      struct distenv_error *warn);

/*
 * The check for one task of a derived step, as the plugin and `distenv
 * env -- CMD...` run it: the facts from step and vars (the values in
 * force: MASTER_ADDR, NPROC_PER_NODE, PET_RDZV_BACKEND, derived or the
 * user's), the level from check (enum distenv_check): off checks
 * nothing; an error fails under warn and strict; a warning fails under
 * strict, else goes into vars (distenv_vars_warn). Nothing for the batch
 * script. Returns 0 or -1 with err.
 */
int distenv_launch_check_task(int check, const struct distenv_step *step,
			      struct distenv_vars *vars, int argc,
			      char *const *argv, struct distenv_error *err);

#endif
