/*
 * plan_stack.h: the software stack a DPO step runs on (the LLaMA-Factory
 * and transformers versions) and what it changes in the memory plan.
 * Pure: version strings in, flags and bytes out; docs/memory.md derives
 * every figure.
 *
 * What depends on the stack:
 * - The model's own cross-entropy. LLaMA-Factory 0.8.0 to 0.9.3 call
 *   the model with the whole batch, labels included
 *   (src/llamafactory/train/dpo/trainer.py, concatenated_forward; 0.9.4
 *   pops the labels first, 0.7 and older pass input_ids and
 *   attention_mask only). transformers 4.46 to 4.48 then compute the loss
 *   in a separate function (loss/loss_utils.py, ForCausalLMLoss) while
 *   the caller still holds the 16-bit logits: an fp32 copy (4 bytes per
 *   token and vocabulary entry), the shifted contiguous copy (4) and
 *   cross_entropy's log_softmax (4) beside the 16-bit logits (2): 14 at
 *   once, against 12 for LLaMA-Factory's own log-probabilities, so the
 *   forward that holds it peaks 2 bytes higher (22 with a reference
 *   model, 14 without). Before 4.46 the model upcast its own logits and
 *   freed the 16-bit ones (12).
 * - The allocator. LLaMA-Factory 0.9.3 (src/llamafactory/cli.py) and
 *   0.9.4-0.9.5 (launcher.py) set
 *   PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True for torchrun unless
 *   OPTIM_TORCH is off; 0.9.2 and older set nothing.
 * An unknown version is planned with the larger coefficient and without
 * expandable segments: the safer assumption.
 */
#ifndef DISTENV_PLAN_STACK_H
#define DISTENV_PLAN_STACK_H

#include <stdint.h>

#include "distenv_error.h"

/* bytes per token and vocabulary entry the model's own cross-entropy
 * adds to a forward's peak (14 - 12, above) */
#define PLAN_LOGIT_MODEL_CE_EXTRA 2.0

struct plan_version {
	int known; /* 0: not given, not found, or "unknown" */
	uint32_t major, minor, patch;
	char text[40]; /* as given, checked: [0-9A-Za-z.+] only */
};

struct plan_stack {
	struct plan_version lf; /* LLaMA-Factory */
	struct plan_version tf; /* transformers */
	const char *lf_from, *tf_from; /* where each came from, for
					 * messages and --json ("" or NULL:
					 * not said) */
};

/*
 * A version as pip shows it: MAJOR.MINOR[.PATCH] and an optional PEP
 * 440 suffix (rc1, a2, b3, .dev0, .post1, +local), or "unknown". where
 * names the option in the error. Errors: empty, over 39 characters,
 * not of that form, a number over 99999.
 */
int plan_parse_version(const char *value, const char *where,
		       struct plan_version *out, struct distenv_error *err);

/* -1, 0, 1 as a is below, equal to or above major.minor.patch. */
int plan_version_cmp(const struct plan_version *a, uint32_t major,
		     uint32_t minor, uint32_t patch);

/* 1 when the model computes its own cross-entropy in DPO's forwards
 * (LLaMA-Factory 0.8.0-0.9.3 with transformers 4.46-4.48), or when an
 * unknown version leaves it possible; 0 otherwise. */
int plan_stack_model_ce(const struct plan_stack *s);

/* 1 when this LLaMA-Factory's launcher sets expandable segments (0.9.3
 * and later, unless OPTIM_TORCH is off); 0 for older or unknown. */
int plan_stack_lf_sets_expandable(const struct plan_stack *s);

#endif
