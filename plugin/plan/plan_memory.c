/* plan_memory.c: the memory plan (formulas and sources in plan_memory.h). */
#include "plan_memory.h"

void plan_zero3_estimate(double p, double l, uint32_t g, uint32_t n,
			 int offload_optimizer, int offload_param, double *gpu,
			 double *cpu)
{
	double gn = (double) g * (double) n;

	if (offload_optimizer && offload_param) {
		*gpu = 4 * l;
		*cpu = 18 * p / n * PLAN_ZERO3_BUFFER_FACTOR;
	} else if (offload_optimizer) {
		*gpu = 4 * l + 2 * p / gn;
		*cpu = 16 * p / n * PLAN_ZERO3_BUFFER_FACTOR;
	} else {
		/* Parameter offload without optimizer offload is not one of
		 * DeepSpeed's rows; it is counted as no offload. zero_init=1
		 * (Transformers builds ZeRO-3 models under zero.Init). */
		*gpu = 4 * l + 18 * p / gn;
		*cpu = 4 * l * g * PLAN_ZERO3_BUFFER_FACTOR;
	}
}

void plan_mem_plan(const struct plan_mem_input *in, struct plan_mem_plan *out)
{
	double g = in->gpus_per_node ? in->gpus_per_node : 1;
	double n = in->nnodes ? in->nnodes : 1;
	double l = in->largest_layer > 0 ? in->largest_layer : in->params / 50;
	double frozen = in->params - in->trainable;
	int param_off = in->offload_optimizer && in->offload_param;

	if (frozen < 0)
		frozen = 0;
	if (in->reference_model)
		frozen += in->params;
	/* LoRA: the trainable adapters are tiny; their largest layer is at
	 * most all of them. */
	plan_zero3_estimate(in->trainable,
			    l < in->trainable ? l : in->trainable, (uint32_t) g,
			    (uint32_t) n, in->offload_optimizer,
			    in->offload_param, &out->gpu_model_states,
			    &out->host_model_states);
	if (param_off) {
		out->gpu_frozen = 0;
		out->host_frozen = 2 * frozen / n * PLAN_ZERO3_BUFFER_FACTOR;
	} else {
		out->gpu_frozen = 2 * frozen / (g * n);
		out->host_frozen = 0;
	}
	/* The frozen base still needs its largest layer gathered. */
	if (frozen > 0 && in->trainable < in->params)
		out->gpu_frozen += 2 * l;
	out->gpu_total = out->gpu_model_states + out->gpu_frozen;
	out->host_steady = out->host_model_states + out->host_frozen;
	out->host_gather = in->gather_on_save ? 2 * in->params : 0;
	out->host_node0_save = out->host_steady + out->host_gather;
	out->gpu_short = in->gpu_mem > 0 && out->gpu_total > in->gpu_mem;
	out->host_short =
		in->host_mem > 0 && out->host_node0_save > in->host_mem;
}

void plan_mem_plan_print(FILE *out, const struct plan_mem_input *in,
			 const struct plan_mem_plan *p)
{
	fprintf(out, "memory plan (ZeRO-3, DeepSpeed's estimator; GiB = 2^30 "
		     "bytes; activations not included)\n");
	fprintf(out,
		"  model: %.2fB parameters, %.2fB trainable, largest "
		"layer %.0fM; %u node(s) x %u GPU(s)\n",
		in->params / 1e9, in->trainable / 1e9,
		(in->largest_layer > 0 ? in->largest_layer : in->params / 50) /
			1e6,
		in->nnodes, in->gpus_per_node);
	fprintf(out,
		"  offload: optimizer %s, parameters %s; reference "
		"model: %s; 16-bit gather at save: %s\n",
		in->offload_optimizer ? "cpu" : "none",
		in->offload_param ? "cpu" : "none",
		in->reference_model ? "yes" : "no",
		in->gather_on_save ? "yes" : "no");
	fprintf(out,
		"  per GPU:        %8.1f GiB (model states %.1f + frozen "
		"%.1f)",
		plan_gib(p->gpu_total), plan_gib(p->gpu_model_states),
		plan_gib(p->gpu_frozen));
	if (in->gpu_mem > 0)
		fprintf(out, " of %.1f GiB%s", plan_gib(in->gpu_mem),
			p->gpu_short ? "  TOO SMALL" : "");
	fprintf(out,
		"\n  host per node:  %8.1f GiB (model states %.1f + "
		"frozen %.1f)\n",
		plan_gib(p->host_steady), plan_gib(p->host_model_states),
		plan_gib(p->host_frozen));
	fprintf(out, "  node 0 at save: %8.1f GiB (+ %.1f GiB 16-bit gather)",
		plan_gib(p->host_node0_save), plan_gib(p->host_gather));
	if (in->host_mem > 0)
		fprintf(out, " of %.1f GiB%s", plan_gib(in->host_mem),
			p->host_short ? "  TOO SMALL" : "");
	fprintf(out, "\n");
}
