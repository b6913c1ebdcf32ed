/*
 * fuzz_model_config: a model's config.json (plugin/lf/lf_model.c) fed
 * from a memory buffer: parse, read the architecture, count parameters
 * and plan memory (plugin/plan/plan_model.c, plan_memory.c); and the same
 * bytes as a --distenv-model-params and a --distenv-gpu-mem value
 * (plan_model.c's parsers).
 *
 * Checked beyond "no crash, no leak": a failure always says what and
 * where; an accepted config has the required dimensions positive; an
 * accepted size is in the documented range.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_model.h"
#include "plan_memory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lf_doc doc;
	struct plan_model_config cfg;
	struct distenv_error err;
	char text[64];
	uint64_t v;

	distenv_error_clear(&err);
	if (lf_doc_load(&doc, "config.json", (const char *)data, size, &err) == 0) {
		if (lf_model_read(&doc, &cfg, &err) == 0) {
			struct plan_mem_input in;
			struct plan_mem_plan plan;

			if (!cfg.hidden_size || !cfg.num_hidden_layers ||
			    !cfg.vocab_size || !cfg.num_attention_heads ||
			    !cfg.num_key_value_heads)
				abort();
			memset(&in, 0, sizeof(in));
			in.params = (double)plan_model_params(&cfg);
			in.largest_layer = (double)plan_model_largest_layer(&cfg);
			in.trainable = (double)plan_model_lora_params(&cfg, 8);
			in.nnodes = 2;
			in.gpus_per_node = 8;
			in.gather_on_save = 1;
			in.reference_model = 1;
			plan_mem_plan(&in, &plan);
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
	if (plan_parse_params(text, "--p", &v, &err) == 0 &&
	    (v < 1 || v > 1000000000000000ULL))
		abort();
	if (plan_parse_mem(text, "--m", &v, &err) == 0 &&
	    (v < 1048576ULL || v > 1125899906842624ULL))
		abort();
	return 0;
}
