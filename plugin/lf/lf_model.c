/* lf_model.c: a model's config.json into the plan's model shape (rules
 * in lf_model.h; the counts are plugin/plan/plan_model.c's). */
#include "lf_model.h"

#include <stdio.h>
#include <string.h>

static int read_u64(struct lf_doc *doc, yaml_node_t *map, const char *key,
		    int required, uint64_t *out, struct distenv_error *err)
{
	long long v = 0;
	int found = 0;
	char where[LF_DOC_NAME_MAX + 32];

	if (lf_get_int(doc, map, key, &v, &found, err))
		return -1;
	if (!found) {
		if (required)
			return distenv_error_set(err, doc->name,
						 "use the model's own "
						 "config.json, or "
						 "--distenv-model-params",
						 "config.json lacks %s", key);
		return 0;
	}
	if (v <= 0 || v > (1LL << 40)) {
		lf_node_where(doc, lf_map_get(doc, map, key, NULL), where,
			      sizeof(where));
		return distenv_error_set(err, where, NULL,
					 "%s: %lld is out of range", key, v);
	}
	*out = (uint64_t) v;
	return 0;
}

int lf_model_read(struct lf_doc *doc, struct plan_model_config *cfg,
		  struct distenv_error *err)
{
	yaml_node_t *map = lf_doc_root(doc), *text;
	const char *type = NULL;
	int found = 0, tied = 0, bias = 0;

	memset(cfg, 0, sizeof(*cfg));
	if (!map)
		return distenv_error_set(err, doc->name, NULL,
					 "config.json not loaded");
	/* Llava-, Qwen2-VL-style wrappers keep the decoder in text_config. */
	text = lf_map_get(doc, map, "text_config", NULL);
	if (text && text->type == YAML_MAPPING_NODE &&
	    !lf_map_get(doc, map, "hidden_size", NULL))
		map = text;
	if (lf_get_str(doc, map, "model_type", &type, &found, err))
		return -1;
	if (found)
		snprintf(cfg->model_type, sizeof(cfg->model_type), "%s", type);
	if (read_u64(doc, map, "hidden_size", 1, &cfg->hidden_size, err) ||
	    read_u64(doc, map, "num_hidden_layers", 1, &cfg->num_hidden_layers,
		     err) ||
	    read_u64(doc, map, "intermediate_size", 1, &cfg->intermediate_size,
		     err) ||
	    read_u64(doc, map, "vocab_size", 1, &cfg->vocab_size, err) ||
	    read_u64(doc, map, "num_attention_heads", 1,
		     &cfg->num_attention_heads, err) ||
	    read_u64(doc, map, "num_key_value_heads", 0,
		     &cfg->num_key_value_heads, err) ||
	    read_u64(doc, map, "head_dim", 0, &cfg->head_dim, err) ||
	    read_u64(doc, map, "max_position_embeddings", 0,
		     &cfg->max_position_embeddings, err))
		return -1;
	if (!cfg->num_key_value_heads)
		cfg->num_key_value_heads = cfg->num_attention_heads;
	if (!cfg->head_dim)
		cfg->head_dim = cfg->hidden_size / cfg->num_attention_heads;
	if (lf_get_bool(doc, map, "tie_word_embeddings", &tied, &found, err))
		return -1;
	cfg->tie_word_embeddings = found ? tied : 0;
	if (lf_get_bool(doc, map, "attention_bias", &bias, &found, err))
		return -1;
	/* modeling_qwen2.py: q_proj, k_proj, v_proj have bias=True. */
	cfg->qkv_bias = found ? bias : !strncmp(cfg->model_type, "qwen2", 5);
	return 0;
}

int lf_model_path_is_local(const char *path)
{
	const char *slash;

	if (!path || !path[0])
		return 0;
	if (path[0] == '/' || path[0] == '~' || strncmp(path, "./", 2) == 0 ||
	    strncmp(path, "../", 3) == 0)
		return 1;
	slash = strchr(path, '/');
	return slash && strchr(slash + 1, '/') != NULL;
}
