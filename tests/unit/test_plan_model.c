/* Unit tests: parameter counts of the model shapes against their
 * published totals, the size parsers, the ZeRO-3 estimator against
 * DeepSpeed's documented example, the memory plan (plan_model.h,
 * plan_memory.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "model_fixture.h"
#include "plan_memory.h"
#include "plan_model.h"

/* Published totals (model cards / the Llama 3 and Qwen2 reports):
 * Qwen2-72B 72.71B, Llama-3-8B 8.03B, Llama-3-70B 70.55B,
 * Qwen2.5-7B 7.61B. */
static void within_one_percent(const char *dir, double published)
{
	double p = (double)plan_model_params(fx_model(dir));

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
	struct plan_model_config cfg = *fx_model("llama3-8b");

	(void)state;
	/* 8,030,261,248: the count transformers prints for Llama-3-8B */
	assert_int_equal(plan_model_params(&cfg), 8030261248ULL);
	assert_int_equal(plan_model_largest_layer(&cfg), 128256ULL * 4096);
	/* tied embeddings drop lm_head */
	cfg.tie_word_embeddings = 1;
	assert_int_equal(plan_model_params(&cfg),
			 8030261248ULL - 128256ULL * 4096);
}

static void qwen2_has_qkv_bias(void **state)
{
	struct plan_model_config cfg = *fx_model("qwen2.5-7b");

	(void)state;
	/* 7,615,616,512 for Qwen2.5-7B */
	assert_int_equal(plan_model_params(&cfg), 7615616512ULL);
	/* q, k and v biases: 28 layers x (3584 + 2 x 512) */
	cfg.qkv_bias = 0;
	assert_int_equal(plan_model_params(&cfg),
			 7615616512ULL - 28ULL * (3584 + 2 * 512));
}

static void parse_sizes(void **state)
{
	struct distenv_error e;
	uint64_t v;

	(void)state;
	assert_int_equal(plan_parse_params("70B", "--p", &v, &e), 0);
	assert_int_equal(v, 70000000000ULL);
	assert_int_equal(plan_parse_params("7.6b", "--p", &v, &e), 0);
	assert_int_equal(v, 7600000000ULL);
	assert_int_equal(plan_parse_params("500M", "--p", &v, &e), 0);
	assert_int_equal(v, 500000000ULL);
	assert_int_equal(plan_parse_params("1.5e3M", "--p", &v, &e), 0);
	assert_int_equal(v, 1500000000ULL);
	assert_int_equal(plan_parse_params("70X", "--p", &v, &e), -1);
	assert_string_equal(e.what, "'70X' is not a parameter count with a unit");
	/* No unit: "70" meant 70B; planning for 70 parameters is refused. */
	assert_int_equal(plan_parse_params("70", "--p", &v, &e), -1);
	assert_string_equal(e.what, "'70' is not a parameter count with a unit");
	assert_non_null(strstr(e.fix, "70B"));
	assert_int_equal(plan_parse_params("1.5e9", "--p", &v, &e), -1);
	assert_int_equal(plan_parse_params("-5B", "--p", &v, &e), -1);
	assert_int_equal(plan_parse_params("", "--p", &v, &e), -1);
	assert_int_equal(plan_parse_mem("80G", "--m", &v, &e), 0);
	assert_int_equal(v, 80ULL << 30);
	assert_int_equal(plan_parse_mem("141GiB", "--m", &v, &e), 0);
	assert_int_equal(v, 141ULL << 30);
	assert_int_equal(plan_parse_mem("512000M", "--m", &v, &e), 0);
	assert_int_equal(v, 512000ULL << 20);
	/* No unit: "80" meant 80G. */
	assert_int_equal(plan_parse_mem("80", "--m", &v, &e), -1);
	assert_string_equal(e.what, "'80' is not a memory size with a unit");
	assert_non_null(strstr(e.fix, "80G"));
	assert_int_equal(plan_parse_mem("2T", "--m", &v, &e), 0);
	assert_int_equal(v, 2ULL << 40);
	assert_int_equal(plan_parse_mem("80Gx", "--m", &v, &e), -1);
	assert_int_equal(plan_parse_mem("80Q", "--m", &v, &e), -1);
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
	plan_zero3_estimate(p, l, 1, 1, 1, 1, &gpu, &cpu);
	assert_true(gib2(cpu) == 1.52 && gib2(gpu) == 0.06);
	plan_zero3_estimate(p, l, 1, 1, 1, 0, &gpu, &cpu);
	assert_true(gib2(cpu) == 1.35 && gib2(gpu) == 0.17);
	plan_zero3_estimate(p, l, 1, 1, 0, 0, &gpu, &cpu);
	assert_true(gib2(cpu) == 0.09 && gib2(gpu) == 1.08);
	/* more GPUs and nodes divide the partitioned states */
	plan_zero3_estimate(p, l, 8, 2, 1, 0, &gpu, &cpu);
	assert_true(fabs(gpu - (4 * l + 2 * p / 16)) < 1);
	assert_true(fabs(cpu - 16 * p / 2 * 1.5) < 1);
}

/* Qwen2-72B full DPO, ZeRO-3 with the 16-bit gather, 2 nodes
 * x 8 GPUs, CPU offload, 1 TiB per node: node 0 needs more at save. */
static void c7_qwen2_72b_save_needs_more_host_memory(void **state)
{
	const struct plan_model_config *cfg = fx_model("qwen2-72b");
	struct plan_mem_input in;
	struct plan_mem_plan plan;
	double p;

	(void)state;
	p = (double)plan_model_params(cfg);
	memset(&in, 0, sizeof(in));
	in.params = in.trainable = p;
	in.largest_layer = (double)plan_model_largest_layer(cfg);
	in.nnodes = 2;
	in.gpus_per_node = 8;
	in.offload_optimizer = in.offload_param = 1;
	in.reference_model = 1;
	in.gather_on_save = 1;
	in.gpu_mem = 80.0 * 1073741824.0;
	in.host_mem = 1024.0 * 1073741824.0;
	plan_mem_plan(&in, &plan);
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
	plan_mem_plan(&in, &plan);
	assert_true(plan.gpu_short);
	assert_false(plan.host_short);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(published_sizes),
		cmocka_unit_test(exact_llama3_8b),
		cmocka_unit_test(qwen2_has_qkv_bias),
		cmocka_unit_test(parse_sizes),
		cmocka_unit_test(estimator_matches_deepspeed_docs),
		cmocka_unit_test(c7_qwen2_72b_save_needs_more_host_memory),
	};

	return cmocka_run_group_tests_name("plan_model", tests, NULL, NULL);
}
