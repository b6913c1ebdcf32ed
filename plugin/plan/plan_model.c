/* plan_model.c: parameter counts and the size parsers (rules in
 * plan_model.h). */
#include "plan_model.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

uint64_t plan_model_params(const struct plan_model_config *c)
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

uint64_t plan_model_largest_layer(const struct plan_model_config *c)
{
	uint64_t embed = c->vocab_size * c->hidden_size;
	uint64_t mlp = c->intermediate_size * c->hidden_size;

	return embed > mlp ? embed : mlp;
}

uint64_t plan_model_lora_params(const struct plan_model_config *c, uint64_t r)
{
	uint64_t h = c->hidden_size, q = c->num_attention_heads * c->head_dim;
	uint64_t kv = c->num_key_value_heads * c->head_dim;
	uint64_t i = c->intermediate_size;
	/* q, k, v, o, gate, up, down: r x (in + out) each. */
	uint64_t per_layer =
		r * ((h + q) + 2 * (h + kv) + (q + h) + 2 * (h + i) + (i + h));

	return c->num_hidden_layers * per_layer;
}

/* Parse "NUMBER[suffix]" into a double and the suffix. */
static int split_number(const char *value, double *num, const char **suffix)
{
	char *end;

	if (!value || !value[0] || isspace((unsigned char) value[0]))
		return -1;
	errno = 0;
	*num = strtod(value, &end);
	if (end == value || errno || !isfinite(*num) || *num <= 0)
		return -1;
	*suffix = end;
	return 0;
}

int plan_parse_params(const char *value, const char *where, uint64_t *out,
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
	*out = (uint64_t) llround(n);
	return 0;
bad:
	return distenv_error_set(err, where,
				 "write the count with its unit: "
				 "70B, 7.6B, 500M (K, M, B or G, T)",
				 "'%s' is not a parameter count with a unit",
				 value ? value : "");
}

int plan_parse_mem(const char *value, const char *where, uint64_t *bytes,
		   struct distenv_error *err)
{
	double n, mult;
	const char *s;
	char unit;

	if (split_number(value, &n, &s))
		goto bad;
	unit = (char) toupper((unsigned char) s[0]);
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
	*bytes = (uint64_t) n;
	return 0;
bad:
	return distenv_error_set(err, where,
				 "write the size with its unit: "
				 "80G, 141GB, 512M, 2T (from 1M to 1P)",
				 "'%s' is not a memory size with a unit",
				 value ? value : "");
}
