/*
 * fuzz_model_config: a model's config.json (plugin/lf/lf_model.c) fed
 * from a memory buffer: parse, read the architecture, count parameters,
 * plan memory; and the same bytes as a --distenv-model-params and a
 * --distenv-gpu-mem value.
 *
 * Checked beyond "no crash, no leak": a failure always says what and
 * where; an accepted config has the required dimensions positive; an
 * accepted size is in the documented range.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_memplan.h"
#include "lf_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lf_doc doc;
	struct lf_model_config cfg;
	struct distenv_error err;
	char text[64];
	uint64_t v;

	distenv_error_clear(&err);
	if (lf_doc_load(&doc, "config.json", (const char *)data, size, &err) == 0) {
		if (lf_model_read(&doc, &cfg, &err) == 0) {
			struct lf_mem_input in;
			struct lf_mem_plan plan;

			if (!cfg.hidden_size || !cfg.num_hidden_layers ||
			    !cfg.vocab_size || !cfg.num_attention_heads ||
			    !cfg.num_key_value_heads)
				abort();
			memset(&in, 0, sizeof(in));
			in.params = (double)lf_model_params(&cfg);
			in.largest_layer = (double)lf_model_largest_layer(&cfg);
			in.trainable = (double)lf_model_lora_params(&cfg, 8);
			in.nnodes = 2;
			in.gpus_per_node = 8;
			in.gather_on_save = 1;
			in.reference_model = 1;
			lf_mem_plan(&in, &plan);
		} else if (!err.what[0] || !err.where[0]) {
			abort();
		}
	} else if (!err.what[0] || !err.where[0]) {
		abort();
	}
	lf_doc_free(&doc);

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (lf_parse_params(text, "--p", &v, &err) == 0 &&
	    (v < 1 || v > 1000000000000000ULL))
		abort();
	if (lf_parse_mem(text, "--m", &v, &err) == 0 &&
	    (v < 1048576ULL || v > 1125899906842624ULL))
		abort();
	return 0;
}
