/* Unit tests: a model's config.json into the plan's model shape
 * (lf_model.h): the fixtures of tests/lf/ read as model_fixture.h writes
 * them out, the defaults of absent keys, the errors. The counts are
 * test_plan_model's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lf_model.h"
#include "model_fixture.h"

static void read_model(const char *dir, struct plan_model_config *cfg)
{
	char path[512], buf[8192];
	struct lf_doc d;
	struct distenv_error e;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s/config.json", DISTENV_LF_DIR, dir);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(lf_doc_load(&d, path, buf, n, &e), 0);
	assert_int_equal(lf_model_read(&d, cfg, &e), 0);
	lf_doc_free(&d);
}

static void load_text(struct lf_doc *d, const char *txt,
		      struct plan_model_config *cfg)
{
	struct distenv_error e;

	assert_int_equal(lf_doc_load(d, "config.json", txt, strlen(txt), &e),
			 0);
	assert_int_equal(lf_model_read(d, cfg, &e), 0);
}

/* Every field as model_fixture.h has it, so the plan's tests count
 * what the reader gives for the published config.json files. */
static void reads_the_fixtures(void **state)
{
	static const char *const dirs[] = {"qwen2-72b", "llama3-8b",
					   "llama3-70b", "qwen2.5-7b"};
	struct plan_model_config cfg;
	const struct plan_model_config *want;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		read_model(dirs[i], &cfg);
		want = fx_model(dirs[i]);
		assert_string_equal(cfg.model_type, want->model_type);
		assert_int_equal(cfg.hidden_size, want->hidden_size);
		assert_int_equal(cfg.num_hidden_layers,
				 want->num_hidden_layers);
		assert_int_equal(cfg.intermediate_size,
				 want->intermediate_size);
		assert_int_equal(cfg.vocab_size, want->vocab_size);
		assert_int_equal(cfg.num_attention_heads,
				 want->num_attention_heads);
		assert_int_equal(cfg.num_key_value_heads,
				 want->num_key_value_heads);
		assert_int_equal(cfg.head_dim, want->head_dim);
		assert_int_equal(cfg.max_position_embeddings,
				 want->max_position_embeddings);
		assert_int_equal(cfg.tie_word_embeddings,
				 want->tie_word_embeddings);
		assert_int_equal(cfg.qkv_bias, want->qkv_bias);
	}
}

/* Absent num_key_value_heads: no grouped-query attention; absent
 * head_dim: hidden / heads; absent attention_bias: true for qwen2 only;
 * a decoder nested under text_config is read from there. */
static void defaults_of_absent_keys(void **state)
{
	struct plan_model_config cfg;
	struct lf_doc d;

	(void)state;
	load_text(&d, "{\"model_type\": \"qwen2\", \"hidden_size\": 1024, "
		  "\"num_hidden_layers\": 2, \"intermediate_size\": 4096, "
		  "\"vocab_size\": 1000, \"num_attention_heads\": 16}", &cfg);
	assert_int_equal(cfg.num_key_value_heads, 16);
	assert_int_equal(cfg.head_dim, 64);
	assert_int_equal(cfg.max_position_embeddings, 0);
	assert_true(cfg.qkv_bias);
	assert_false(cfg.tie_word_embeddings);
	lf_doc_free(&d);
	load_text(&d, "{\"model_type\": \"llava\", \"text_config\": "
		  "{\"model_type\": \"llama\", \"hidden_size\": 1024, "
		  "\"num_hidden_layers\": 2, \"intermediate_size\": 4096, "
		  "\"vocab_size\": 1000, \"num_attention_heads\": 16}}", &cfg);
	assert_string_equal(cfg.model_type, "llama");
	assert_int_equal(cfg.hidden_size, 1024);
	assert_false(cfg.qkv_bias);
	lf_doc_free(&d);
}

static void config_errors(void **state)
{
	const char *txt = "{\"hidden_size\": 4096, \"num_hidden_layers\": 32,"
			  " \"vocab_size\": \"many\"}";
	struct plan_model_config cfg;
	struct lf_doc d;
	struct distenv_error e;

	(void)state;
	assert_int_equal(lf_doc_load(&d, "config.json", txt, strlen(txt), &e), 0);
	assert_int_equal(lf_model_read(&d, &cfg, &e), -1);
	assert_string_equal(e.what, "config.json lacks intermediate_size");
	lf_doc_free(&d);
	txt = "{\"hidden_size\": 4096, \"num_hidden_layers\": 32, "
	      "\"intermediate_size\": 1, \"num_attention_heads\": 32, "
	      "\"vocab_size\": \"many\"}";
	assert_int_equal(lf_doc_load(&d, "config.json", txt, strlen(txt), &e), 0);
	assert_int_equal(lf_model_read(&d, &cfg, &e), -1);
	assert_string_equal(e.where, "config.json:1:113");
	assert_string_equal(e.what, "vocab_size: 'many' is not an integer");
	lf_doc_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_the_fixtures),
		cmocka_unit_test(defaults_of_absent_keys),
		cmocka_unit_test(config_errors),
	};

	return cmocka_run_group_tests_name("lf_model", tests, NULL, NULL);
}
