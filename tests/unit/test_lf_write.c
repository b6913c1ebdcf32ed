/* Unit tests: the resolved YAML keeps every key, value, order and
 * comment of LLaMA-Factory's DPO examples except the decided keys; the
 * resolved DeepSpeed JSON changes only the offload keys. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lf_write.h"

static char *slurp(const char *name, size_t *len)
{
	char path[512];
	char *buf = malloc(65536);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", DISTENV_LF_DIR, name);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(buf);
	*len = fread(buf, 1, 65535, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static int decided(const char *key)
{
	return !strcmp(key, "save_on_each_node") || !strcmp(key, "deepspeed");
}

/* Every key of orig is in out, in the same order, with the same
 * scalar, except the decided keys. */
static void same_keys(struct lf_doc *orig, struct lf_doc *out)
{
	yaml_node_t *r = lf_doc_root(orig), *o = lf_doc_root(out);
	yaml_node_pair_t *p, *q = o->data.mapping.pairs.start;

	for (p = r->data.mapping.pairs.start; p < r->data.mapping.pairs.top;
	     p++, q++) {
		const char *k = lf_scalar(yaml_document_get_node(&orig->ydoc,
								 p->key));
		const char *v = lf_scalar(yaml_document_get_node(&orig->ydoc,
								 p->value));
		const char *k2, *v2;

		assert_true(q < o->data.mapping.pairs.top);
		k2 = lf_scalar(yaml_document_get_node(&out->ydoc, q->key));
		v2 = lf_scalar(yaml_document_get_node(&out->ydoc, q->value));
		assert_string_equal(k, k2);
		if (!decided(k))
			assert_string_equal(v, v2);
	}
}

static void round_trip(const char *fixture, int has_deepspeed)
{
	struct lf_yaml_edit edits[] = {
		{"deepspeed", "\"/tmp/distenv-1-2.3/ds_config.json\""},
		{"save_on_each_node", "true"},
	};
	struct lf_doc orig, out;
	struct distenv_error e;
	size_t len, olen;
	char *text = slurp(fixture, &len), *res = NULL;
	yaml_node_t *v;

	assert_int_equal(lf_doc_load(&orig, fixture, text, len, &e), 0);
	assert_int_equal(lf_write_yaml(&orig, has_deepspeed ? edits : edits + 1,
				       has_deepspeed ? 2 : 1,
				       "Resolved by distenv\nchanged: x",
				       &res, &olen, &e), 0);
	assert_int_equal(strncmp(res, "# Resolved by distenv\n# changed: x\n",
				 35), 0);
	/* the user's text follows the header byte for byte, but for the
	 * edited value(s) */
	assert_non_null(strstr(res, "### model\nmodel_name_or_path: MODEL_DIR\n"));
	if (has_deepspeed)
		assert_non_null(strstr(res, "pref_loss: sigmoid  # sigmoid (dpo)"));
	else
		assert_non_null(strstr(res, "\n# eval_steps: 500\n"));
	if (has_deepspeed)
		assert_non_null(strstr(res, "deepspeed: \"/tmp/distenv-1-2.3/"
					    "ds_config.json\"  # ZeRO-3\n"));
	assert_non_null(strstr(res, "\n### added by distenv\n"
				    "save_on_each_node: true\n"));
	assert_int_equal(lf_doc_load(&out, "resolved", res, olen, &e), 0);
	same_keys(&orig, &out);
	v = lf_map_get(&out, lf_doc_root(&out), "save_on_each_node", NULL);
	assert_string_equal(lf_scalar(v), "true");
	lf_doc_free(&orig);
	lf_doc_free(&out);
	free(text);
	free(res);
}

static void full_dpo_round_trip(void **state)
{
	(void)state;
	round_trip("full_dpo.yaml", 1);
}

static void lora_dpo_round_trip(void **state)
{
	(void)state;
	round_trip("lora_dpo.yaml", 0);
}

static void replace_in_place_and_empty_values(void **state)
{
	const char *src = "a: \"\xc3\xa9\xc3\xa9\"  # two UTF-8 letters\n"
			  "save_on_each_node: false # theirs\n"
			  "deepspeed:\nz: 1\n";
	struct lf_yaml_edit ed[] = {{"save_on_each_node", "true"},
				    {"deepspeed", "\"/x.json\""}};
	struct lf_doc d;
	struct distenv_error e;
	char *out;
	size_t len;

	(void)state;
	assert_int_equal(lf_doc_load(&d, "t", src, strlen(src), &e), 0);
	assert_int_equal(lf_write_yaml(&d, ed, 2, NULL, &out, &len, &e), 0);
	assert_string_equal(out, "a: \"\xc3\xa9\xc3\xa9\"  # two UTF-8 letters\n"
				 "save_on_each_node: true # theirs\n"
				 "deepspeed: \"/x.json\"\nz: 1\n");
	free(out);
	lf_doc_free(&d);
	/* an alias is replaced where it is; an anchored value is refused */
	src = "x: &a v\ndeepspeed: *a\nsave_on_each_node:\n- 1\nz: 2\n";
	assert_int_equal(lf_doc_load(&d, "t", src, strlen(src), &e), 0);
	assert_int_equal(lf_write_yaml(&d, ed, 2, NULL, &out, &len, &e), 0);
	assert_string_equal(out, "x: &a v\ndeepspeed: \"/x.json\"\n"
				 "save_on_each_node: true\nz: 2\n");
	free(out);
	lf_doc_free(&d);
	src = "deepspeed: &a v\nother: *a\n";
	assert_int_equal(lf_doc_load(&d, "t", src, strlen(src), &e), 0);
	assert_int_equal(lf_write_yaml(&d, ed + 1, 1, NULL, &out, &len, &e), -1);
	assert_string_equal(e.what, "deepspeed has a YAML anchor (&...); "
			    "distenv does not change anchored values");
	lf_doc_free(&d);
	/* a flow-style top level cannot take an appended key */
	assert_int_equal(lf_doc_load(&d, "t", "{a: 1}", 6, &e), 0);
	assert_int_equal(lf_write_yaml(&d, ed, 1, NULL, &out, &len, &e), -1);
	assert_non_null(strstr(e.what, "flow style"));
	lf_doc_free(&d);
}

/* A file that starts with a UTF-8 byte-order mark or a carriage return:
 * edits land on the right bytes and added keys at the top level's column
 * (fuzz_lf_yaml). */
static void leading_bom_or_cr(void **state)
{
	const char *src = "\xEF\xBB\xBFstage: dpo\nsave_on_each_node: false\n";
	struct lf_yaml_edit ed[] = {{"save_on_each_node", "true"},
				    {"deepspeed", "\"/x.json\""}};
	struct lf_doc d;
	struct distenv_error e;
	char *out;
	size_t len;

	(void)state;
	assert_int_equal(lf_doc_load(&d, "t", src, strlen(src), &e), 0);
	assert_int_equal(lf_write_yaml(&d, ed, 2, NULL, &out, &len, &e), 0);
	assert_string_equal(out, "stage: dpo\nsave_on_each_node: true\n\n"
				 "### added by distenv\ndeepspeed: \"/x.json\"\n");
	free(out);
	lf_doc_free(&d);
	/* A lone carriage return is a YAML line break too: the key after
	 * it is at column 0 (fuzz_lf_yaml). */
	src = "\rstage: dpo\n";
	assert_int_equal(lf_doc_load(&d, "t", src, strlen(src), &e), 0);
	assert_int_equal(lf_write_yaml(&d, ed + 1, 1, NULL, &out, &len, &e), 0);
	assert_string_equal(out, "\rstage: dpo\n\n### added by distenv\n"
				 "deepspeed: \"/x.json\"\n");
	free(out);
	lf_doc_free(&d);
}

/* A value distenv replaces holds an anchor another key's alias uses:
 * the edit would leave the alias undefined, so the writer refuses it,
 * saying what to write instead (fuzz_lf_yaml found it through a
 * byte-order mark mid-file, which libyaml counts as a column). */
static void replaced_value_with_anchor_refused(void **state)
{
	const char *srcs[] = {
		"save_on_each_node:\n  deed: &a v\nother: *a\n",
		"a: 1\nsave_on_each_node:\n\xEF\xBB\xBF" "deed: &a v\nb: *a\n",
	};
	struct lf_yaml_edit ed[] = { { "save_on_each_node", "true" } };
	struct lf_doc d;
	struct distenv_error e;
	char *out = (char *) "unset";
	size_t len, i;

	(void) state;
	for (i = 0; i < 2; i++) {
		assert_int_equal(
			lf_doc_load(&d, "t.yaml", srcs[i], strlen(srcs[i]), &e),
			0);
		assert_int_equal(lf_write_yaml(&d, ed, 1, NULL, &out, &len, &e),
				 -1);
		assert_null(out);
		assert_string_equal(e.where, "t.yaml");
		assert_non_null(strstr(e.what, "found undefined alias"));
		assert_non_null(strstr(e.fix, "without YAML anchors"));
		lf_doc_free(&d);
		out = (char *) "unset";
	}
}

static void ds_offload_added_and_removed(void **state)
{
	struct lf_doc d, o;
	struct distenv_error e;
	size_t len, olen;
	char *text = slurp("ds_z3_config.json", &len), *out;
	yaml_node_t *z, *op;
	int found = 0;
	const char *dev = NULL;

	(void)state;
	assert_int_equal(lf_doc_load(&d, "ds", text, len, &e), 0);
	assert_int_equal(lf_write_ds_json(&d, 1, &out, &olen, &e), 0);
	/* numbers as written, strings re-quoted */
	assert_non_null(strstr(out, "\"sub_group_size\": 1e9,"));
	assert_non_null(strstr(out, "\"train_batch_size\": \"auto\","));
	assert_int_equal(lf_doc_load(&o, "out", out, olen, &e), 0);
	z = lf_map_get(&o, lf_doc_root(&o), "zero_optimization", NULL);
	op = lf_map_get(&o, z, "offload_param", NULL);
	assert_int_equal(lf_get_str(&o, op, "device", &dev, &found, &e), 0);
	assert_string_equal(dev, "cpu");
	assert_non_null(lf_map_get(&o, z, "offload_optimizer", NULL));
	assert_string_equal(lf_scalar(lf_map_get(&o, z, "stage", NULL)), "3");
	lf_doc_free(&o);
	free(out);
	/* unchanged (0): the same keys as the input */
	assert_int_equal(lf_write_ds_json(&d, 0, &out, &olen, &e), 0);
	assert_null(strstr(out, "offload"));
	free(out);
	lf_doc_free(&d);
	free(text);

	text = slurp("ds_z3_offload_config.json", &len);
	assert_int_equal(lf_doc_load(&d, "ds", text, len, &e), 0);
	assert_int_equal(lf_write_ds_json(&d, -1, &out, &olen, &e), 0);
	assert_null(strstr(out, "offload"));
	assert_non_null(strstr(out, "\"overlap_comm\": false,"));
	free(out);
	lf_doc_free(&d);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_dpo_round_trip),
		cmocka_unit_test(lora_dpo_round_trip),
		cmocka_unit_test(replace_in_place_and_empty_values),
		cmocka_unit_test(ds_offload_added_and_removed),
		cmocka_unit_test(leading_bom_or_cr),
		cmocka_unit_test(replaced_value_with_anchor_refused),
	};

	return cmocka_run_group_tests_name("lf_write", tests, NULL, NULL);
}
