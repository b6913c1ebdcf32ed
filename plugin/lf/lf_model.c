/* lf_model.c: config.json to parameter counts (rules in lf_model.h). */
#include "lf_model.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
	*out = (uint64_t)v;
	return 0;
}

int lf_model_read(struct lf_doc *doc, struct lf_model_config *cfg,
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
	    read_u64(doc, map, "num_hidden_layers", 1,
		     &cfg->num_hidden_layers, err) ||
	    read_u64(doc, map, "intermediate_size", 1,
		     &cfg->intermediate_size, err) ||
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

uint64_t lf_model_params(const struct lf_model_config *c)
{
	uint64_t h = c->hidden_size, q = c->num_attention_heads * c->head_dim;
	uint64_t kv = c->num_key_value_heads * c->head_dim;
	uint64_t attn = h * q + 2 * h * kv + q * h;
	uint64_t mlp = 3 * h * c->intermediate_size;
	uint64_t layer = attn + mlp + 2 * h;
	uint64_t embed = c->vocab_size * h;

	if (c->qkv_bias)
		layer += q + 2 * kv;
	return embed + c->num_hidden_layers * layer + h +
	       (c->tie_word_embeddings ? 0 : embed);
}

uint64_t lf_model_largest_layer(const struct lf_model_config *c)
{
	uint64_t embed = c->vocab_size * c->hidden_size;
	uint64_t mlp = c->intermediate_size * c->hidden_size;

	return embed > mlp ? embed : mlp;
}

uint64_t lf_model_lora_params(const struct lf_model_config *c, uint64_t r)
{
	uint64_t h = c->hidden_size, q = c->num_attention_heads * c->head_dim;
	uint64_t kv = c->num_key_value_heads * c->head_dim;
	uint64_t i = c->intermediate_size;
	/* q, k, v, o, gate, up, down: r x (in + out) each. */
	uint64_t per_layer = r * ((h + q) + 2 * (h + kv) + (q + h) +
				  2 * (h + i) + (i + h));

	return c->num_hidden_layers * per_layer;
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

/* Parse "NUMBER[suffix]" into a double and the suffix. */
static int split_number(const char *value, double *num, const char **suffix)
{
	char *end;

	if (!value || !value[0] || isspace((unsigned char)value[0]))
		return -1;
	errno = 0;
	*num = strtod(value, &end);
	if (end == value || errno || !isfinite(*num) || *num <= 0)
		return -1;
	*suffix = end;
	return 0;
}

int lf_parse_params(const char *value, const char *where, uint64_t *out,
		    struct distenv_error *err)
{
	double n, mult = 1;
	const char *s;

	if (split_number(value, &n, &s))
		goto bad;
	if (!strcasecmp(s, "k"))
		mult = 1e3;
	else if (!strcasecmp(s, "m"))
		mult = 1e6;
	else if (!strcasecmp(s, "b") || !strcasecmp(s, "g"))
		mult = 1e9;
	else if (!strcasecmp(s, "t"))
		mult = 1e12;
	else
		goto bad; /* no unit: "70" meant 70B, and would plan for 70 */
	n *= mult;
	if (n < 1 || n > 1e15)
		goto bad;
	*out = (uint64_t)llround(n);
	return 0;
bad:
	return distenv_error_set(err, where, "write the count with its unit: "
				 "70B, 7.6B, 500M (K, M, B or G, T)",
				 "'%s' is not a parameter count with a unit",
				 value ? value : "");
}

int lf_parse_mem(const char *value, const char *where, uint64_t *bytes,
		 struct distenv_error *err)
{
	double n, mult;
	const char *s;
	char unit;

	if (split_number(value, &n, &s))
		goto bad;
	unit = (char)toupper((unsigned char)s[0]);
	switch (unit) {
	case 'M':
		mult = 1048576.0;
		break;
	case 'K':
		mult = 1024.0;
		break;
	case 'G':
		mult = 1073741824.0;
		break;
	case 'T':
		mult = 1099511627776.0;
		break;
	default:
		goto bad;
	}
	if (s[0] && s[1] && strcasecmp(s + 1, "B") && strcasecmp(s + 1, "iB"))
		goto bad;
	n *= mult;
	if (n < 1048576.0 || n > 1125899906842624.0) /* 1 MiB - 1 PiB */
		goto bad;
	*bytes = (uint64_t)n;
	return 0;
bad:
	return distenv_error_set(err, where, "write the size with its unit: "
				 "80G, 141GB, 512M, 2T (from 1M to 1P)",
				 "'%s' is not a memory size with a unit",
				 value ? value : "");
}
