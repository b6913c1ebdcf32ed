/*
 * lf_keys.h: the top-level keys a LLaMA-Factory training YAML may hold,
 * for the "unknown key" warning (LLaMA-Factory itself stops with
 * HfArgumentParser's "Some keys are not used" only after the job has
 * started on every node).
 *
 * Source of the list: the dataclass fields of LLaMA-Factory's
 * src/llamafactory/hparams/ (model_args.py, data_args.py,
 * finetuning_args.py, generating_args.py, training_args.py; v0.9.x)
 * and of transformers' TrainingArguments / Seq2SeqTrainingArguments
 * (src/transformers/training_args.py, 4.4x to 5.6), which
 * LLaMA-Factory's parser merges; checked against the pinned stack
 * (contrib/lfstack/requirements.lock: llamafactory 0.9.5, transformers
 * 5.6.0) by tests/cluster/llamafactory.bats. An unknown key fails the
 * step by default, as LLaMA-Factory would once every node had started;
 * --distenv-check=off is the way out for a version with keys this list
 * lacks.
 */
#ifndef DISTENV_LF_KEYS_H
#define DISTENV_LF_KEYS_H

#include <stddef.h>

/* 1 when key is a known LLaMA-Factory / TrainingArguments key. */
int lf_key_known(const char *key);

/* The known key closest to key by edit distance (Levenshtein), or NULL
 * when none is within max(2, strlen(key) / 3) edits. */
const char *lf_key_nearest(const char *key);

/* Edit distance between a and b (insert, delete, substitute: 1 each);
 * strings longer than 127 bytes count as 128 away. */
size_t lf_edit_distance(const char *a, const char *b);

#endif
