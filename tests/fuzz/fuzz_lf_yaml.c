/*
 * fuzz_lf_yaml: the LLaMA-Factory YAML / DeepSpeed JSON reader
 * (plugin/lf/lf_doc.c) fed from a memory buffer, then everything that
 * reads a parsed document: the decisions (as the training YAML and as
 * the DeepSpeed config), the resolved YAML writer and the JSON writer.
 *
 * Checked beyond "no crash, no leak": a failure always says what and
 * where; a resolved YAML or JSON that was written parses again, and the
 * resolved YAML keeps the input's number of top-level keys (plus the
 * appended ones).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lf_decide.h"
#include "lf_write.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t nkeys(struct lf_doc *d)
{
	yaml_node_t *r = lf_doc_root(d);

	return (size_t)(r->data.mapping.pairs.top - r->data.mapping.pairs.start);
}

static void check_written(const char *text, size_t len, size_t keys)
{
	struct lf_doc out;
	struct distenv_error err;

	if (lf_doc_load(&out, "out", text, len, &err))
		abort(); /* distenv wrote something it cannot read back */
	if (keys && nkeys(&out) != keys)
		abort();
	lf_doc_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct lf_yaml_edit edits[] = {
		{"save_on_each_node", "true"},
		{"deepspeed", "\"/tmp/distenv-1-2.3/ds_config.json\""},
	};
	struct lf_doc doc;
	struct lf_inputs in;
	struct lf_decision dec;
	struct distenv_error err;
	char *out = NULL;
	size_t len, keys, add = 0, i;

	distenv_error_clear(&err);
	if (lf_doc_load(&doc, "fuzz.yaml", (const char *)data, size, &err)) {
		if (!err.what[0] || !err.where[0])
			abort();
		lf_doc_free(&doc);
		return 0;
	}
	memset(&in, 0, sizeof(in));
	in.yaml = &doc;
	in.ds = &doc; /* the same buffer read as a DeepSpeed config */
	in.nnodes = 2;
	in.gpus_per_node = 8;
	in.out_storage = (enum lf_storage)(size % 3);
	in.offload = (int)(size % 4);
	in.check = (int)(size % 3);
	in.model_params = 7000000000ULL;
	in.gpu_mem = 80.0 * 1073741824.0;
	in.host_mem = 512.0 * 1073741824.0;
	in.force_torchrun = "0";
	if (lf_decide(&in, &dec, &err) && (!err.what[0] || !err.where[0]))
		abort();
	keys = nkeys(&doc);
	for (i = 0; i < 2; i++)
		add += lf_map_get(&doc, lf_doc_root(&doc), edits[i].key, NULL) ?
			       0 : 1;
	if (lf_write_yaml(&doc, edits, 2, "header\nline", &out, &len, &err) == 0) {
		check_written(out, len, keys + add);
		free(out);
	} else if (!err.what[0]) {
		abort();
	}
	if (lf_write_ds_json(&doc, (int)(size % 3) - 1, &out, &len, &err) == 0) {
		check_written(out, len, 0);
		free(out);
	}
	lf_doc_free(&doc);
	return 0;
}
