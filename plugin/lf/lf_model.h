/*
 * lf_model.h: a Hugging Face config.json (a parsed lf_doc) into the
 * model shape the memory plan counts with (plugin/plan/plan_model.h),
 * and which model_name_or_path values name a local directory.
 *
 * Keys read as transformers' configuration classes name them
 * (configuration_llama.py / configuration_qwen2.py); absent
 * num_key_value_heads means no grouped-query attention, absent head_dim
 * is hidden_size / num_attention_heads, absent attention_bias is true for
 * qwen2 (modeling_qwen2.py: q_proj, k_proj, v_proj have bias=True).
 */
#ifndef DISTENV_LF_MODEL_H
#define DISTENV_LF_MODEL_H

#include "distenv_error.h"
#include "lf_doc.h"
#include "plan_model.h"

/*
 * Read config.json (a parsed doc) into cfg. Required: hidden_size,
 * num_hidden_layers, intermediate_size, vocab_size, num_attention_heads
 * (positive integers, at most 2^40). Errors name the key and its
 * file:line:col. Multimodal configs that nest the language model under
 * "text_config" are read from there.
 */
int lf_model_read(struct lf_doc *doc, struct plan_model_config *cfg,
		  struct distenv_error *err);

/*
 * Whether model_name_or_path names a local directory rather than a
 * Hugging Face Hub id: absolute, or starting with ./, ../ or ~, or with
 * more than one '/' (a Hub id is "name" or "namespace/name":
 * huggingface_hub, utils/_validators.py, validate_repo_id). A Hub id
 * that also exists as a local directory is read locally by transformers;
 * this rule only says which names cannot be a Hub id.
 */
int lf_model_path_is_local(const char *path);

#endif
