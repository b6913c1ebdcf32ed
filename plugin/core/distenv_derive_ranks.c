/*
 * distenv_derive_ranks.c: where a process sits in the job: NNODES,
 * NODE_RANK and RANK (torchrun mode, one task per node; LLaMA-Factory
 * launcher.py), RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE (tasks mode,
 * torch.distributed env:// init), and NPROC_PER_NODE, from the step's
 * SLURM_* facts (distenv_step.h) and its GPUs (distenv_gpus.h).
 */
#include <stdio.h>
#include <string.h>

#include "distenv_derive_int.h"

int derive_emit_nproc(struct derivation *d)
{
	const struct distenv_gpus *g = derive_task_gpus(d);
	char reason[512];

	if (d->req->nproc)
		return derive_emit_u32(d, "NPROC_PER_NODE", d->req->nproc,
				       "--distenv-nproc");
	if (!g->node_count)
		return derive_emit_u32(
			d, "NPROC_PER_NODE", 1,
			"no GPU for the step on this node: one process");
	/* The step's count, not what one bound task sees: with
	 * --gpus-per-task or --gpu-bind, CUDA_VISIBLE_DEVICES and
	 * SLURM_STEP_GPUS of the task name its own GPUs only
	 * (distenv_gpus.h). torchrun's workers inherit the task's
	 * CUDA_VISIBLE_DEVICES, so that is said too. */
	snprintf(reason, sizeof(reason), "GPUs of the step on this node (%s)",
		 g->node_count_from);
	if (g->task_known && g->task_count < g->node_count)
		snprintf(
			reason + strlen(reason),
			sizeof(reason) - strlen(reason),
			"; note: this task sees %u of them "
			"(CUDA_VISIBLE_DEVICES=%s), and torchrun's workers "
			"inherit that, so local ranks %u-%u find no device: "
			"leave out --gpus-per-task and --gpu-bind, so that the "
			"node's one task sees all %u",
			g->task_count, g->task_list ? g->task_list : "",
			g->task_count, g->node_count - 1, g->node_count);
	return derive_emit_u32(d, "NPROC_PER_NODE", g->node_count, reason);
}

int derive_emit_torchrun_ranks(struct derivation *d)
{
	const struct distenv_step *s = d->step;
	char node_rank[16];

	if (derive_emit_u32(d, "NNODES", s->nnodes,
			    "SLURM_STEP_NUM_NODES: nodes in the step"))
		return -1;
	snprintf(node_rank, sizeof(node_rank), "%u", s->node_id);
	if (derive_emit(d, "NODE_RANK", node_rank,
			"SLURM_NODEID: this node's index in the step (read by "
			"LLaMA-Factory >= 0.9.1)"))
		return -1;
	if (derive_emit(
		    d, "RANK", distenv_vars_value(d->vars, "NODE_RANK"),
		    "= NODE_RANK, for LLaMA-Factory <= 0.9.0 which reads RANK; "
		    "torchrun gives its workers their own RANK"))
		return -1;
	return 0;
}

/*
 * LOCAL_RANK, and what one GPU per task does to it. Torch scripts
 * commonly call torch.cuda.set_device(LOCAL_RANK), which needs LOCAL_RANK
 * to be a device index among the GPUs CUDA shows the task. With
 * --gpus-per-task=1 each task sees one (CUDA_VISIBLE_DEVICES), so every
 * local rank but 0 fails there with "invalid device ordinal"; a script
 * that uses device 0 (or LOCAL_RANK modulo the visible count) runs. Only
 * possibly wrong, so a note in the reason for --distenv-show, not a
 * failure; the same note on every task of the node, since --distenv-show
 * prints the node's first task.
 */
static int emit_local_rank(struct derivation *d)
{
	const struct distenv_gpus *g = derive_task_gpus(d);
	const struct distenv_step *s = d->step;
	uint32_t want =
		g->node_count > g->task_count ? g->node_count : s->local_ntasks;
	char reason[640];

	snprintf(reason, sizeof(reason),
		 "SLURM_LOCALID: this task's index on the node");
	if (g->task_count && s->local_ntasks > g->task_count)
		snprintf(
			reason + strlen(reason),
			sizeof(reason) - strlen(reason),
			"; note: each task here sees %u GPU%s "
			"(CUDA_VISIBLE_DEVICES=%s in this one), so for LOCAL_RANK "
			"%u-%u torch.cuda.set_device(LOCAL_RANK) fails with "
			"\"invalid device ordinal\": ask for --gpus-per-node=%u "
			"instead of --gpus-per-task, so that every task sees the "
			"node's GPUs, or use device LOCAL_RANK %% %u",
			g->task_count, g->task_count > 1 ? "s" : "",
			g->task_list, g->task_count, s->local_ntasks - 1, want,
			g->task_count);
	return derive_emit_u32(d, "LOCAL_RANK", s->localid, reason);
}

int derive_emit_task_ranks(struct derivation *d)
{
	const struct distenv_step *s = d->step;

	if (derive_emit_u32(d, "RANK", s->procid,
			    "SLURM_PROCID: this task's rank") ||
	    derive_emit_u32(d, "WORLD_SIZE", s->ntasks,
			    "SLURM_STEP_NUM_TASKS: tasks in the step") ||
	    emit_local_rank(d) ||
	    derive_emit_u32(d, "LOCAL_WORLD_SIZE", s->local_ntasks,
			    "tasks of the step on this node") ||
	    derive_emit_u32(d, "NODE_RANK", s->node_id,
			    "SLURM_NODEID: this node's index in the step") ||
	    derive_emit_u32(d, "NNODES", s->nnodes,
			    "SLURM_STEP_NUM_NODES: nodes in the step"))
		return -1;
	return 0;
}
