/* distenv_gpus.c: the GPUs of a task and of its step on this node. */
#include "distenv_gpus.h"

#include <string.h>

#include "distenv_env.h"

uint32_t distenv_gpus_list_count(const char *list)
{
	uint32_t n = 1;

	if (!list || !list[0] || strcmp(list, "NoDevFiles") == 0)
		return 0;
	for (; *list; list++)
		n += *list == ',';
	return n;
}

void distenv_gpus_read(const char *const *envp, const char *step_gpus,
		       struct distenv_gpus *out)
{
	const char *cvd = distenv_env_get(envp, "CUDA_VISIBLE_DEVICES");
	const char *task_step = distenv_env_get(envp, "SLURM_STEP_GPUS");
	const char *on_node = distenv_env_get(envp, "SLURM_GPUS_ON_NODE");
	uint32_t count = 0;

	memset(out, 0, sizeof(*out));
	if (cvd) {
		out->task_known = 1;
		out->task_count = distenv_gpus_list_count(cvd);
		out->task_list = out->task_count ? cvd : NULL;
	}
	if (!on_node || distenv_parse_u32(on_node, 1u << 20, &count))
		count = 0;
	if (distenv_gpus_list_count(step_gpus)) {
		out->node_list = step_gpus;
		out->node_list_from = "SLURM_STEP_GPUS of the step";
	} else if (distenv_gpus_list_count(task_step)) {
		out->task_step_gpus = 1;
		/* A bound task's SLURM_STEP_GPUS names its own GPUs only,
		 * while SLURM_GPUS_ON_NODE keeps the step's count. */
		if (!count || count == distenv_gpus_list_count(task_step)) {
			out->node_list = task_step;
			out->node_list_from = "SLURM_STEP_GPUS";
		}
	}
	if (count) {
		out->node_count = count;
		out->node_count_from = "SLURM_GPUS_ON_NODE";
	} else if (out->node_list) {
		out->node_count = distenv_gpus_list_count(out->node_list);
		out->node_count_from = out->node_list_from;
	} else if (out->task_count) {
		out->node_count = out->task_count;
		out->node_count_from = "CUDA_VISIBLE_DEVICES";
	}
}

uint32_t distenv_gpus_per_node(const char *const *envp, const char *step_gpus)
{
	struct distenv_gpus g;
	uint32_t n = 0;

	if (distenv_env_u32(envp, "NPROC_PER_NODE", 0, &n, NULL) == 1 && n)
		return n;
	distenv_gpus_read(envp, step_gpus, &g);
	return g.node_count ? g.node_count : 1;
}
