/* Unit tests: parameter counts from config.json, the ZeRO-3 estimator
 * against DeepSpeed's documented example, the memory plan. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "lf_memplan.h"
#include "lf_model.h"

static void read_model(const char *dir, struct lf_model_config *cfg)
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

/* Published totals (model cards / the Llama 3 and Qwen2 reports):
 * Qwen2-72B 72.71B, Llama-3-8B 8.03B, Llama-3-70B 70.55B,
 * Qwen2.5-7B 7.61B. */
static void within_one_percent(const char *dir, double published)
{
	struct lf_model_config cfg;
	double p;

	read_model(dir, &cfg);
	p = (double)lf_model_params(&cfg);
	if (fabs(p - published) / published > 0.01)
		fail_msg("%s: %.0f parameters, published %.0f", dir, p,
			 published);
}

static void published_sizes(void **state)
{
	(void)state;
	within_one_percent("qwen2-72b", 72.71e9);
	within_one_percent("llama3-8b", 8.03e9);
	within_one_percent("llama3-70b", 70.55e9);
	within_one_percent("qwen2.5-7b", 7.61e9);
}

static void exact_llama3_8b(void **state)
{
	struct lf_model_config cfg;

	(void)state;
	read_model("llama3-8b", &cfg);
	assert_int_equal(cfg.num_key_value_heads, 8);
	assert_int_equal(cfg.head_dim, 128);
	assert_int_equal(cfg.max_position_embeddings, 8192);
	assert_false(cfg.qkv_bias);
	/* 8,030,261,248: the count transformers prints for Llama-3-8B */
	assert_int_equal(lf_model_params(&cfg), 8030261248ULL);
	assert_int_equal(lf_model_largest_layer(&cfg), 128256ULL * 4096);
	/* tied embeddings drop lm_head */
	cfg.tie_word_embeddings = 1;
	assert_int_equal(lf_model_params(&cfg), 8030261248ULL - 128256ULL * 4096);
}

static void qwen2_has_qkv_bias(void **state)
{
	struct lf_model_config cfg;

	(void)state;
	read_model("qwen2.5-7b", &cfg);
	assert_true(cfg.qkv_bias);
	/* 7,615,616,512 for Qwen2.5-7B */
	assert_int_equal(lf_model_params(&cfg), 7615616512ULL);
}

static void config_errors(void **state)
{
	const char *txt = "{\"hidden_size\": 4096, \"num_hidden_layers\": 32,"
			  " \"vocab_size\": \"many\"}";
	struct lf_model_config cfg;
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

static void parse_sizes(void **state)
{
	struct distenv_error e;
	uint64_t v;

	(void)state;
	assert_int_equal(lf_parse_params("70B", "--p", &v, &e), 0);
	assert_int_equal(v, 70000000000ULL);
	assert_int_equal(lf_parse_params("7.6b", "--p", &v, &e), 0);
	assert_int_equal(v, 7600000000ULL);
	assert_int_equal(lf_parse_params("500M", "--p", &v, &e), 0);
	assert_int_equal(v, 500000000ULL);
	assert_int_equal(lf_parse_params("1.5e3M", "--p", &v, &e), 0);
	assert_int_equal(v, 1500000000ULL);
	assert_int_equal(lf_parse_params("70X", "--p", &v, &e), -1);
	assert_string_equal(e.what, "'70X' is not a parameter count with a unit");
	/* No unit: "70" meant 70B; planning for 70 parameters is refused. */
	assert_int_equal(lf_parse_params("70", "--p", &v, &e), -1);
	assert_string_equal(e.what, "'70' is not a parameter count with a unit");
	assert_non_null(strstr(e.fix, "70B"));
	assert_int_equal(lf_parse_params("1.5e9", "--p", &v, &e), -1);
	assert_int_equal(lf_parse_params("-5B", "--p", &v, &e), -1);
	assert_int_equal(lf_parse_params("", "--p", &v, &e), -1);
	assert_int_equal(lf_parse_mem("80G", "--m", &v, &e), 0);
	assert_int_equal(v, 80ULL << 30);
	assert_int_equal(lf_parse_mem("141GiB", "--m", &v, &e), 0);
	assert_int_equal(v, 141ULL << 30);
	assert_int_equal(lf_parse_mem("512000M", "--m", &v, &e), 0);
	assert_int_equal(v, 512000ULL << 20);
	/* No unit: "80" meant 80G. */
	assert_int_equal(lf_parse_mem("80", "--m", &v, &e), -1);
	assert_string_equal(e.what, "'80' is not a memory size with a unit");
	assert_non_null(strstr(e.fix, "80G"));
	assert_int_equal(lf_parse_mem("2T", "--m", &v, &e), 0);
	assert_int_equal(v, 2ULL << 40);
	assert_int_equal(lf_parse_mem("80Gx", "--m", &v, &e), -1);
	assert_int_equal(lf_parse_mem("80Q", "--m", &v, &e), -1);
}

static double gib2(double bytes)
{
	return round(bytes / 1073741824.0 * 100) / 100;
}

/* DeepSpeed's documented output of
 * estimate_zero3_model_states_mem_needs_all_live for t5-small (60M total
 * params, 16M largest layer; 1 node, 1 GPU), per CPU | per GPU:
 *   1.52GB | 0.06GB  offload_param=cpu, offload_optimizer=cpu
 *   1.35GB | 0.17GB  offload_param=none, offload_optimizer=cpu
 *   0.09GB | 1.08GB  offload_param=none, offload_optimizer=none, zero_init=1
 * t5-small: 60,506,624 parameters, largest layer the shared embedding
 * 32128 x 512 = 16,449,536. */
static void estimator_matches_deepspeed_docs(void **state)
{
	const double p = 60506624, l = 16449536;
	double gpu, cpu;

	(void)state;
	lf_zero3_estimate(p, l, 1, 1, 1, 1, &gpu, &cpu);
	assert_true(gib2(cpu) == 1.52 && gib2(gpu) == 0.06);
	lf_zero3_estimate(p, l, 1, 1, 1, 0, &gpu, &cpu);
	assert_true(gib2(cpu) == 1.35 && gib2(gpu) == 0.17);
	lf_zero3_estimate(p, l, 1, 1, 0, 0, &gpu, &cpu);
	assert_true(gib2(cpu) == 0.09 && gib2(gpu) == 1.08);
	/* more GPUs and nodes divide the partitioned states */
	lf_zero3_estimate(p, l, 8, 2, 1, 0, &gpu, &cpu);
	assert_true(fabs(gpu - (4 * l + 2 * p / 16)) < 1);
	assert_true(fabs(cpu - 16 * p / 2 * 1.5) < 1);
}

/* Qwen2-72B full DPO, ZeRO-3 with the 16-bit gather, 2 nodes
 * x 8 GPUs, CPU offload, 1 TiB per node: node 0 needs more at save. */
static void c7_qwen2_72b_save_needs_more_host_memory(void **state)
{
	struct lf_model_config cfg;
	struct lf_mem_input in;
	struct lf_mem_plan plan;
	double p;

	(void)state;
	read_model("qwen2-72b", &cfg);
	p = (double)lf_model_params(&cfg);
	memset(&in, 0, sizeof(in));
	in.params = in.trainable = p;
	in.largest_layer = (double)lf_model_largest_layer(&cfg);
	in.nnodes = 2;
	in.gpus_per_node = 8;
	in.offload_optimizer = in.offload_param = 1;
	in.reference_model = 1;
	in.gather_on_save = 1;
	in.gpu_mem = 80.0 * 1073741824.0;
	in.host_mem = 1024.0 * 1073741824.0;
	lf_mem_plan(&in, &plan);
	/* gather: 2 bytes x 72.7B = 145.4 GB (docs/contracts.md 2: ~144 GB) */
	assert_true(fabs(plan.host_gather - 2 * p) < 1);
	assert_true(plan.host_gather > 144e9 && plan.host_gather < 147e9);
	/* steady: 18P/N*1.5 + reference 2P/N*1.5 */
	assert_true(fabs(plan.host_steady - (18 * p / 2 * 1.5 + 2 * p / 2 * 1.5)) < 1);
	assert_true(plan.host_node0_save > in.host_mem);
	assert_true(plan.host_short);
	assert_false(plan.gpu_short);
	/* without offload: GPU too small on 16 GPUs, host fine */
	in.offload_optimizer = in.offload_param = 0;
	lf_mem_plan(&in, &plan);
	assert_true(plan.gpu_short);
	assert_false(plan.host_short);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(published_sizes),
		cmocka_unit_test(exact_llama3_8b),
		cmocka_unit_test(qwen2_has_qkv_bias),
		cmocka_unit_test(config_errors),
		cmocka_unit_test(parse_sizes),
		cmocka_unit_test(estimator_matches_deepspeed_docs),
		cmocka_unit_test(c7_qwen2_72b_save_needs_more_host_memory),
	};

	return cmocka_run_group_tests_name("lf_model", tests, NULL, NULL);
}
