/* distenv_gpus.c: the GPUs of a task and of its step on this node. */
#include "distenv_gpus.h"

#include <stdio.h>
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

/* Whether list (comma-separated) holds the entry p[0..len). */
static int list_has(const char *list, const char *p, size_t len)
{
	while (list && *list) {
		size_t n = strcspn(list, ",");

		if (n == len && strncmp(list, p, len) == 0)
			return 1;
		list += n + (list[n] == ',');
	}
	return 0;
}

int distenv_gpus_check_visible(const char *const *envp, const char *step_gpus,
			       const char *node_name, struct distenv_error *err)
{
	const char *cvd = distenv_env_get(envp, "CUDA_VISIBLE_DEVICES");
	const char *task_step = distenv_env_get(envp, "SLURM_STEP_GPUS");
	char where[DISTENV_ERROR_TEXT], local[64], choices[DISTENV_ERROR_TEXT];
	char fix[DISTENV_ERROR_TEXT];
	struct distenv_gpus g;
	const char *p, *bad = NULL, *list;
	size_t bad_len = 0;
	uint32_t i, n;

	distenv_gpus_read(envp, step_gpus, &g);
	list = g.node_list ? g.node_list : task_step;
	if (!g.task_list || !distenv_gpus_list_count(list) ||
	    !g.node_count_from ||
	    strcmp(g.node_count_from, "CUDA_VISIBLE_DEVICES") == 0)
		return 0;
	for (p = cvd; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		size_t len = strcspn(p, ",");
		uint32_t idx;
		char one[16];

		if (len == 0 || len >= sizeof(one) ||
		    strspn(p, "0123456789") != len)
			return 0; /* UUIDs, MIG-...: not judged */
		snprintf(one, sizeof(one), "%.*s", (int) len, p);
		if (distenv_parse_u32(one, 1u << 20, &idx))
			return 0;
		if (!bad && idx >= g.node_count && !list_has(list, p, len) &&
		    !list_has(task_step, p, len)) {
			bad = p;
			bad_len = len;
		}
	}
	if (!bad)
		return 0;
	n = distenv_gpus_list_count(list);
	local[0] = '\0';
	for (i = 0; i < n && strlen(local) + 12 < sizeof(local); i++)
		snprintf(local + strlen(local), sizeof(local) - strlen(local),
			 "%s%u", i ? "," : "", i);
	if (strcmp(local, list) == 0)
		snprintf(choices, sizeof(choices), "%s", local);
	else
		snprintf(choices, sizeof(choices),
			 "%s (CUDA's numbering when Slurm constrains the "
			 "devices, ConstrainDevices=yes) or %s (their global "
			 "indices otherwise)",
			 local, list);
	snprintf(where, sizeof(where),
		 "node %s: CUDA_VISIBLE_DEVICES (exported)", node_name);
	snprintf(fix, sizeof(fix),
		 "unset it (Slurm sets it for each task), or name the task's "
		 "GPUs: %s",
		 choices);
	return distenv_error_set(
		err, where, fix,
		"you exported CUDA_VISIBLE_DEVICES=%s (Slurm never sets such a "
		"value): device %.*s is not one of this task's GPUs, %s (%s); "
		"CUDA shows only the devices listed before the first index it "
		"cannot use, so the task sees fewer GPUs than the list names, "
		"or none",
		cvd, (int) bad_len, bad, list,
		list == g.node_list ? g.node_list_from : "SLURM_STEP_GPUS");
}
