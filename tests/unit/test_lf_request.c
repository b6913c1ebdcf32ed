/* Unit tests: the options of the LLaMA-Factory run preparation into
 * lf_prepare's request (lf_request.h), the one parser of the plugin and
 * of distenv plan / prepare. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "lf_ckpt.h"
#include "lf_decide.h"
#include "lf_dir.h"
#include "lf_model.h"
#include "lf_request.h"

static void shared_options_set_their_fields(void **state)
{
	struct lf_prepare_request req;
	struct distenv_error err;

	(void)state;
	memset(&req, 0, sizeof(req));
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_SAVE_ON_EACH_NODE,
					"no", "--distenv-save-on-each-node",
					&err),
			 0);
	assert_int_equal(req.soen, LF_SOEN_NO);
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_OFFLOAD, "cpu",
					"--offload", &err),
			 0);
	assert_int_equal(req.offload, LF_OFFLOAD_CPU);
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_CHECK, "strict",
					"--check", &err),
			 0);
	assert_int_equal(req.check, LF_CHECK_STRICT);
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_MODEL_PARAMS, "7.6B",
					"--model-params", &err),
			 0);
	assert_int_equal(req.model_params, 7600000000ULL);
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_GPU_MEM, "80G",
					"--distenv-gpu-mem", &err),
			 0);
	assert_int_equal(req.gpu_mem, 80ULL << 30);
	/* the command's only */
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_HOST_MEM, "1T",
					"--host-mem", &err),
			 0);
	assert_int_equal(req.host_mem, 1ULL << 40);
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_ANSWER_TOKENS,
					"2048", "--answer-tokens", &err),
			 0);
	assert_int_equal(req.answer_tokens, 2048);
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_LF_VERSION, "0.9.3",
					"--lf-version", &err),
			 0);
	assert_true(req.stack.lf.known);
	assert_string_equal(req.stack.lf.text, "0.9.3");
	assert_string_equal(req.stack.lf_from, "--lf-version");
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_TF_VERSION,
					"4.46.1", "--transformers-version",
					&err),
			 0);
	assert_int_equal(req.stack.tf.minor, 46);
	assert_string_equal(req.stack.tf_from, "--transformers-version");
	/* the fields the other options left alone */
	assert_int_equal(req.soen, LF_SOEN_NO);
	assert_int_equal(req.resume, LF_RESUME_DEFAULT);
	assert_null(req.config);
	assert_null(req.resume_path);
}

/* lf-config and storage-policy are pointed at, not copied: the value
 * must outlive the request. */
static void strings_point_at_the_value(void **state)
{
	static const char yaml[] = "/home/u/dpo.yaml";
	static const char policy[] = "shared:/gpfs,local:/scratch";
	static const char dir[] = "/scratch/u/out";
	struct lf_prepare_request req;
	struct distenv_error err;

	(void)state;
	memset(&req, 0, sizeof(req));
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_LF_CONFIG, yaml,
					"--lf-config", &err),
			 0);
	assert_ptr_equal(req.config, yaml);
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_STORAGE_POLICY,
					policy, "--storage-policy", &err),
			 0);
	assert_ptr_equal(req.storage_policy, policy);
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_LF_DIR, dir,
					"--lf-dir", &err),
			 0);
	assert_ptr_equal(req.dir, dir);
}

/* --distenv-lf-dir / --lf-dir: an absolute path without blanks, or an
 * error naming the option, and the field as it was. */
static void lf_dir_must_be_absolute_and_plain(void **state)
{
	static const char *const bad[] = {
		"",      "out/distenv",    "./x", "/scratch/my dir",
		"/a\tb", "/scratch/$USER", NULL,
	};
	struct lf_prepare_request req;
	struct distenv_error err;
	size_t i;

	(void) state;
	memset(&req, 0, sizeof(req));
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_LF_DIR, "out/x",
					"--distenv-lf-dir", &err),
			 -1);
	assert_string_equal(err.where, "--distenv-lf-dir");
	assert_string_equal(err.what, "'out/x' is not an absolute path");
	assert_non_null(strstr(err.fix, "absolute directory"));
	assert_null(req.dir);
	for (i = 0; bad[i]; i++) {
		assert_int_equal(lf_request_set(&req, DISTENV_OPT_LF_DIR,
						bad[i], "--lf-dir", &err),
				 -1);
		assert_string_equal(err.where, "--lf-dir");
		assert_null(req.dir);
	}
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_LF_DIR, NULL,
					"--lf-dir", &err),
			 -1);
	assert_string_equal(err.what, "no directory given");
}

/* The base folder of the copies: the option over the site's lf_dir:
 * over TMPDIR over /tmp, and the reason for each. */
static void lf_dir_choice_order(void **state)
{
	static const char opt[] = "/o", site[] = "/s", tmpdir[] = "/t";
	struct lf_dir_choice c;

	(void) state;
	lf_dir_choose(opt, site, tmpdir, &c);
	assert_ptr_equal(c.base, opt);
	assert_int_equal(c.source, LF_DIR_FROM_OPTION);
	assert_string_equal(lf_dir_source_text(c.source), "--distenv-lf-dir");
	lf_dir_choose("", site, tmpdir, &c);
	assert_ptr_equal(c.base, site);
	assert_int_equal(c.source, LF_DIR_FROM_SITE);
	assert_string_equal(lf_dir_source_text(c.source),
			    "the site file's lf_dir:");
	lf_dir_choose(NULL, NULL, tmpdir, &c);
	assert_ptr_equal(c.base, tmpdir);
	assert_int_equal(c.source, LF_DIR_FROM_TMPDIR);
	assert_string_equal(lf_dir_source_text(c.source), "TMPDIR");
	lf_dir_choose(NULL, "", NULL, &c);
	assert_string_equal(c.base, "/tmp");
	assert_int_equal(c.source, LF_DIR_FROM_TMP);
	assert_string_equal(lf_dir_source_text(c.source),
			    "the default /tmp (TMPDIR is not set)");
	lf_dir_choose(NULL, NULL, "/t d", &c);
	assert_string_equal(c.base, "/tmp");
	assert_int_equal(c.source, LF_DIR_FROM_TMP_BLANK);
	/* an option or site directory is taken even when TMPDIR is bad */
	lf_dir_choose(NULL, site, "/t d", &c);
	assert_ptr_equal(c.base, site);
}

/* Under /tmp or not: what a container's own /tmp hides. */
static void lf_dir_under_tmp_only_tmp(void **state)
{
	char buf[256];

	(void) state;
	assert_true(lf_dir_under_tmp("/tmp"));
	assert_true(lf_dir_under_tmp("/tmp/"));
	assert_true(lf_dir_under_tmp("/tmp/distenv-0-1.0-0"));
	assert_true(lf_dir_under_tmp("//tmp/x"));
	assert_false(lf_dir_under_tmp("/tmpfs/x"));
	assert_false(lf_dir_under_tmp("/var/tmp/x"));
	assert_false(lf_dir_under_tmp("/scratch/tmp"));
	/* the folder's name under the chosen base */
	lf_resolved_dir("/s", 1000, 7, 2, 1, 0, buf, sizeof(buf));
	assert_string_equal(buf, "/s/distenv-1000-7.2-1");
	lf_resolved_dir("/s", 1000, 7, 2, 1, 3, buf, sizeof(buf));
	assert_string_equal(buf, "/s/distenv-1000-7.2-1-r3");
}

/* A bad value: the error the parser itself gives (what the plugin and
 * plan each called before), naming the option as the user gave it, and
 * the field as it was. */
static void bad_values_give_the_parsers_errors(void **state)
{
	struct lf_prepare_request req;
	struct distenv_error err, want;
	int n;
	uint64_t u;

	(void)state;
	memset(&req, 0, sizeof(req));
	req.offload = LF_OFFLOAD_AUTO;
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_OFFLOAD, "gpu",
					"--distenv-offload", &err),
			 -1);
	assert_string_equal(err.where, "--distenv-offload");
	assert_string_equal(err.what, "'gpu' is not accepted");
	assert_string_equal(err.fix, "use none, cpu or auto");
	assert_int_equal(req.offload, LF_OFFLOAD_AUTO);

	assert_int_equal(lf_request_set(&req, DISTENV_OPT_SAVE_ON_EACH_NODE,
					"maybe", "--save-on-each-node", &err),
			 -1);
	lf_parse_soen("maybe", "--save-on-each-node", &n, &want);
	assert_string_equal(err.what, want.what);
	assert_string_equal(err.fix, "use auto, yes or no");

	assert_int_equal(lf_request_set(&req, DISTENV_OPT_CHECK, "loud",
					"--check", &err),
			 -1);
	assert_string_equal(err.fix, "use warn, strict or off");

	assert_int_equal(lf_request_set(&req, DISTENV_OPT_MODEL_PARAMS, "72",
					"--distenv-model-params", &err),
			 -1);
	assert_string_equal(err.what, "'72' is not a parameter count with a "
				      "unit");
	assert_string_equal(err.where, "--distenv-model-params");
	assert_int_equal(req.model_params, 0);

	assert_int_equal(lf_request_set(&req, DISTENV_OPT_GPU_MEM, "80",
					"--gpu-mem", &err),
			 -1);
	plan_parse_mem("80", "--gpu-mem", &u, &want);
	assert_string_equal(err.what, "'80' is not a memory size with a unit");
	assert_string_equal(err.fix, want.fix);
	assert_int_equal(req.gpu_mem, 0);

	assert_int_equal(lf_request_set(&req, DISTENV_OPT_ANSWER_TOKENS,
					"1048577", "--answer-tokens", &err),
			 -1);
	assert_string_equal(err.what, "'1048577' is not a token count from 1 "
				      "to 1048576");
	assert_string_equal(err.where, "--answer-tokens");
	assert_string_equal(err.fix, "");
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_ANSWER_TOKENS, "0",
					"--answer-tokens", &err),
			 -1);
	assert_int_equal(lf_request_set(&req, DISTENV_OPT_TF_VERSION, "4.x",
					"--transformers-version", &err),
			 -1);
	assert_string_equal(err.where, "--transformers-version");
	assert_non_null(strstr(err.what, "'4.x' is not a version"));
	assert_false(req.stack.tf.known);
	assert_null(req.stack.tf_from);
}

/* The rows the function leaves to its callers: the plugin's
 * --distenv-resume, plan's and prepare's step facts and output flags,
 * and every row of another parser. Nothing is touched. */
static void other_ids_are_left_to_the_caller(void **state)
{
	static const int callers[] = {
		DISTENV_OPT_RESUME, DISTENV_OPT_STEP_NODES,
		DISTENV_OPT_GPUS_PER_NODE, DISTENV_OPT_NODE_ID,
		DISTENV_OPT_PRINT_YAML, DISTENV_OPT_JSON, DISTENV_OPT_PORT,
		DISTENV_OPT_MODE, DISTENV_OPT_COUNT, -1,
	};
	struct lf_prepare_request req, before;
	struct distenv_error err, clear;
	size_t i;

	(void)state;
	memset(&before, 0, sizeof(before));
	before.check = LF_CHECK_OFF;
	distenv_error_clear(&clear);
	for (i = 0; i < sizeof(callers) / sizeof(callers[0]); i++) {
		req = before;
		err = clear;
		assert_int_equal(lf_request_set(&req, callers[i], "auto", "--x",
						&err),
				 LF_REQUEST_NOT_OWNED);
		assert_memory_equal(&req, &before, sizeof(req));
		assert_memory_equal(&err, &clear, sizeof(err));
	}
}

/* Every row whose parser is DISTENV_PARSE_LF is the function's, but the
 * plugin's --distenv-resume; no row of another parser is. */
static void lf_rows_are_the_functions(void **state)
{
	static const char *const good[DISTENV_OPT_COUNT] = {
		[DISTENV_OPT_LF_CONFIG] = "x.yaml",
		[DISTENV_OPT_LF_DIR] = "/scratch/u",
		[DISTENV_OPT_GPU_MEM] = "80G",
		[DISTENV_OPT_HOST_MEM] = "1T",
		[DISTENV_OPT_MODEL_PARAMS] = "70B",
		[DISTENV_OPT_ANSWER_TOKENS] = "1024",
		[DISTENV_OPT_LF_VERSION] = "0.9.5",
		[DISTENV_OPT_TF_VERSION] = "5.6.0",
		[DISTENV_OPT_OFFLOAD] = "none",
		[DISTENV_OPT_SAVE_ON_EACH_NODE] = "yes",
		[DISTENV_OPT_CHECK] = "warn",
		[DISTENV_OPT_STORAGE_POLICY] = "shared:/gpfs",
	};
	struct lf_prepare_request req;
	struct distenv_error err;
	int i, want;

	(void)state;
	for (i = 0; i < DISTENV_OPT_COUNT; i++) {
		memset(&req, 0, sizeof(req));
		want = distenv_option_table[i].parser == DISTENV_PARSE_LF &&
				       i != DISTENV_OPT_RESUME ?
			       0 :
			       LF_REQUEST_NOT_OWNED;
		assert_int_equal(lf_request_set(&req, i,
						good[i] ? good[i] : "1", "--x",
						&err),
				 want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(shared_options_set_their_fields),
		cmocka_unit_test(strings_point_at_the_value),
		cmocka_unit_test(bad_values_give_the_parsers_errors),
		cmocka_unit_test(other_ids_are_left_to_the_caller),
		cmocka_unit_test(lf_rows_are_the_functions),
		cmocka_unit_test(lf_dir_must_be_absolute_and_plain),
		cmocka_unit_test(lf_dir_choice_order),
		cmocka_unit_test(lf_dir_under_tmp_only_tmp),
	};

	return cmocka_run_group_tests_name("lf_request", tests, NULL, NULL);
}
