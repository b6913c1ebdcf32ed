/*
 * plan_memory.h: memory a ZeRO-3 (LLaMA-Factory + DeepSpeed) run needs,
 * per GPU and per node's host memory, steady and at checkpoint time on
 * node 0. Pure: parameter counts (plan_model.h) and memory sizes in
 * bytes in, bytes out; no errors (a node or GPU count of 0 is read as
 * 1).
 *
 * Model states follow DeepSpeed's published estimator,
 * estimate_zero3_model_states_mem_needs (DeepSpeed docs "Memory
 * Requirements", deepspeed/runtime/zero/stage3.py;
 * docs/contracts.md 2), with P trainable parameters, L parameters
 * of the largest layer, G GPUs per node, N nodes, buffer factor 1.5:
 *   no offload:                GPU = 4L + 18P/(G*N); CPU = 4L*G*1.5
 *   optimizer offload:         GPU = 4L + 2P/(G*N);  CPU = 16P/N*1.5
 *   optimizer + param offload: GPU = 4L;             CPU = 18P/N*1.5
 * (CPU is per node; DeepSpeed prints GB as 2^30 bytes.)
 *
 * Added by distenv, documented here as its own estimate:
 * - frozen weights (the LoRA base, the full-DPO reference model), in
 *   16 bits and partitioned by ZeRO-3: 2F/(G*N) per GPU, or 2F/N*1.5 per
 *   node with parameter offload (LLaMA-Factory prepares the reference
 *   model with DeepSpeed's ZeRO-3 inference config, trainer_utils.py).
 *   LoRA DPO has no separate reference model (adapters off);
 * - the 16-bit gather at save time with
 *   stage3_gather_16bit_weights_on_model_save: 2 bytes x all parameters
 *   of the policy on node 0's host (docs/contracts.md 2).
 * Activations are not estimated here: plan_activation.h counts them and
 * plan_seqfit.h adds them to this plan (docs/memory.md).
 */
#ifndef DISTENV_PLAN_MEMORY_H
#define DISTENV_PLAN_MEMORY_H

#include <stdint.h>
#include <stdio.h>

#define PLAN_ZERO3_BUFFER_FACTOR 1.5

struct plan_mem_input {
	double params; /* all parameters of the model */
	double largest_layer; /* L; 0: estimated as params / 50 */
	double trainable; /* P: = params for full, adapters for LoRA */
	uint32_t nnodes; /* N >= 1 */
	uint32_t gpus_per_node; /* G >= 1 */
	int offload_optimizer; /* offload_optimizer.device == cpu */
	int offload_param; /* offload_param.device == cpu */
	int reference_model; /* full DPO/KTO: a second, frozen copy */
	int gather_on_save; /* stage3_gather_16bit_weights_on_model_save */
	double gpu_mem; /* bytes per GPU, 0 unknown */
	double host_mem; /* bytes the job may use per node, 0 unknown */
};

struct plan_mem_plan {
	double gpu_model_states; /* per GPU: estimator, trainable part */
	double gpu_frozen; /* per GPU: LoRA base / reference model */
	double gpu_total;
	double host_model_states; /* per node: estimator */
	double host_frozen; /* per node: offloaded frozen weights */
	double host_steady; /* per node while training */
	double host_gather; /* node 0 at each save */
	double host_node0_save; /* node 0: steady + gather */
	int gpu_short; /* gpu_total > gpu_mem (when known) */
	int host_short; /* host_node0_save > host_mem (when known) */
};

/* DeepSpeed's estimator alone (formulas above), in bytes: per GPU and
 * per node's CPU memory. */
void plan_zero3_estimate(double params, double largest_layer,
			 uint32_t gpus_per_node, uint32_t nnodes,
			 int offload_optimizer, int offload_param, double *gpu,
			 double *cpu);

/* The whole plan; in->nnodes and in->gpus_per_node must be >= 1. */
void plan_mem_plan(const struct plan_mem_input *in, struct plan_mem_plan *out);

/* Print the plan as a table (GiB), for distenv plan and --distenv-show. */
void plan_mem_plan_print(FILE *out, const struct plan_mem_input *in,
			 const struct plan_mem_plan *plan);

/* Bytes to GiB, for messages. */
inline static double plan_gib(double bytes)
{
	return bytes / 1073741824.0;
}

#endif
