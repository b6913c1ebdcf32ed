/* Unit tests: YAML/JSON reader, typed reads, known keys, storage. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lf_doc.h"
#include "lf_fstype.h"
#include "lf_keys.h"

static int load(struct lf_doc *d, const char *text, struct distenv_error *e)
{
	distenv_error_clear(e);
	return lf_doc_load(d, "cfg.yaml", text, strlen(text), e);
}

static void syntax_error_has_line_and_column(void **state)
{
	struct lf_doc d;
	struct distenv_error e;

	(void)state;
	assert_int_equal(load(&d, "stage: dpo\ncutoff_len: [1, 2\nbf16: true\n",
			      &e), -1);
	/* The flow sequence left open on line 2 (col 13): where it starts,
	 * not where libyaml noticed it (3:5). */
	assert_string_equal(e.where, "cfg.yaml:2:13");
	assert_non_null(strstr(e.what, "YAML/JSON syntax error"));
	assert_non_null(strstr(e.what, "a flow sequence that starts here "
				       "(noticed at 3:5)"));
	lf_doc_free(&d);
	assert_int_equal(load(&d, "a: 1\n b: 2\n", &e), -1);
	assert_string_equal(e.where, "cfg.yaml:2:3");
	lf_doc_free(&d);
	assert_int_equal(load(&d, "{\"stage\": 3,,}", &e), -1);
	assert_string_equal(strncmp(e.where, "cfg.yaml:1:", 11) ? "" : "ok", "ok");
	lf_doc_free(&d);
}

static void top_level_must_be_mapping(void **state)
{
	struct lf_doc d;
	struct distenv_error e;

	(void)state;
	assert_int_equal(load(&d, "- a\n- b\n", &e), -1);
	assert_string_equal(e.where, "cfg.yaml:1:1");
	assert_string_equal(e.what, "top level is not a mapping");
	lf_doc_free(&d);
	assert_int_equal(load(&d, "", &e), -1);
	assert_string_equal(e.what, "file is empty");
	lf_doc_free(&d);
	assert_int_equal(load(&d, "a: 1\n---\nb: 2\n", &e), -1);
	assert_string_equal(e.what, "more than one YAML document");
	assert_string_equal(e.where, "cfg.yaml:3:1");
	lf_doc_free(&d);
}

static void typed_reads(void **state)
{
	struct lf_doc d;
	struct distenv_error e;
	yaml_node_t *r;
	long long n = 0;
	int b = -1, found = -1;
	const char *s = NULL;

	(void)state;
	assert_int_equal(load(&d, "bf16: yes\nfp16: Off\nx: \"true\"\n"
				  "cutoff_len: 4096\nsub: 1e9\nbad: 12k\n"
				  "lst: [1]\nnone: null\nempty:\n",
			      &e), 0);
	r = lf_doc_root(&d);
	assert_int_equal(lf_get_bool(&d, r, "bf16", &b, &found, &e), 0);
	assert_true(found && b == 1);
	assert_int_equal(lf_get_bool(&d, r, "fp16", &b, &found, &e), 0);
	assert_true(found && b == 0);
	/* a quoted "true" is a string in PyYAML: not a boolean */
	assert_int_equal(lf_get_bool(&d, r, "x", &b, &found, &e), -1);
	assert_string_equal(e.where, "cfg.yaml:3:4");
	assert_string_equal(e.what, "x: 'true' is not true or false");
	assert_int_equal(lf_get_int(&d, r, "cutoff_len", &n, &found, &e), 0);
	assert_int_equal(n, 4096);
	assert_int_equal(lf_get_int(&d, r, "sub", &n, &found, &e), 0);
	assert_int_equal(n, 1000000000LL);
	assert_int_equal(lf_get_int(&d, r, "bad", &n, &found, &e), -1);
	assert_string_equal(e.what, "bad: '12k' is not an integer");
	assert_int_equal(lf_get_str(&d, r, "lst", &s, &found, &e), -1);
	assert_string_equal(e.what, "lst: a list is not a string");
	assert_int_equal(lf_get_str(&d, r, "none", &s, &found, &e), 0);
	assert_int_equal(found, 0);
	assert_int_equal(lf_get_str(&d, r, "empty", &s, &found, &e), 0);
	assert_int_equal(found, 0);
	assert_int_equal(lf_get_str(&d, r, "absent", &s, &found, &e), 0);
	assert_int_equal(found, 0);
	lf_doc_free(&d);
}

static void json_is_read_too(void **state)
{
	struct lf_doc d;
	struct distenv_error e;
	yaml_node_t *z;
	long long st = 0;
	int found = 0;

	(void)state;
	assert_int_equal(load(&d, "{\"zero_optimization\": {\"stage\": 3, "
				  "\"sub_group_size\": 1e9}}", &e), 0);
	z = lf_map_get(&d, lf_doc_root(&d), "zero_optimization", NULL);
	assert_non_null(z);
	assert_int_equal(lf_get_int(&d, z, "stage", &st, &found, &e), 0);
	assert_int_equal(st, 3);
	lf_doc_free(&d);
}

static void unknown_keys_have_a_nearest(void **state)
{
	(void)state;
	assert_true(lf_key_known("save_on_each_node"));
	assert_true(lf_key_known("pref_beta"));
	assert_true(lf_key_known("deepspeed"));
	assert_false(lf_key_known("save_on_each_nodes"));
	assert_string_equal(lf_key_nearest("save_on_each_nodes"),
			    "save_on_each_node");
	assert_string_equal(lf_key_nearest("cuttoff_len"), "cutoff_len");
	assert_string_equal(lf_key_nearest("deepspeeed"), "deepspeed");
	assert_string_equal(lf_key_nearest("pref_betta"), "pref_beta");
	assert_null(lf_key_nearest("zzzzzzzzzzzzzzzzzzzzz"));
	assert_int_equal(lf_edit_distance("kitten", "sitting"), 3);
}

static void fstype_by_magic(void **state)
{
	const char *n = NULL;

	(void)state;
	assert_int_equal(lf_fstype_classify(0xEF53, &n), LF_STORAGE_LOCAL);
	assert_string_equal(n, "ext2/3/4");
	assert_int_equal(lf_fstype_classify(0x58465342, &n), LF_STORAGE_LOCAL);
	assert_int_equal(lf_fstype_classify(0x01021994, &n), LF_STORAGE_LOCAL);
	assert_string_equal(n, "tmpfs");
	assert_int_equal(lf_fstype_classify(0x794c7630, &n), LF_STORAGE_LOCAL);
	assert_int_equal(lf_fstype_classify(0x9123683E, &n), LF_STORAGE_LOCAL);
	assert_int_equal(lf_fstype_classify(0x6969, &n), LF_STORAGE_SHARED);
	assert_string_equal(n, "nfs");
	assert_int_equal(lf_fstype_classify(0x0BD00BD0, &n), LF_STORAGE_SHARED);
	assert_string_equal(n, "lustre");
	assert_int_equal(lf_fstype_classify(0x47504653, &n), LF_STORAGE_SHARED);
	assert_int_equal(lf_fstype_classify(0x19830326, &n), LF_STORAGE_SHARED);
	assert_int_equal(lf_fstype_classify(0x00c36400, &n), LF_STORAGE_SHARED);
	assert_int_equal(lf_fstype_classify(0xFF534D42, &n), LF_STORAGE_SHARED);
	/* a sign-extended f_type (32-bit long ABIs) still matches */
	assert_int_equal(lf_fstype_classify(0xFFFFFFFFFF534D42ull, &n),
			 LF_STORAGE_SHARED);
	assert_int_equal(lf_fstype_classify(0x65735546, &n), LF_STORAGE_UNKNOWN);
	assert_string_equal(n, "fuse");
	assert_int_equal(lf_fstype_classify(0x12345678, &n), LF_STORAGE_UNKNOWN);
	assert_string_equal(n, "unknown");
}

static void site_policy(void **state)
{
	struct distenv_error e;
	enum lf_storage s;
	const char *pol = "shared:/scratch, local:/scratch/node\nshared:/weka";

	(void)state;
	assert_int_equal(lf_site_storage(pol, "/scratch/u1/out", &s, &e), 0);
	assert_int_equal(s, LF_STORAGE_SHARED);
	assert_int_equal(lf_site_storage(pol, "/scratch/node/x", &s, &e), 0);
	assert_int_equal(s, LF_STORAGE_LOCAL);
	assert_int_equal(lf_site_storage(pol, "/scratch2/x", &s, &e), 0);
	assert_int_equal(s, LF_STORAGE_UNKNOWN);
	assert_int_equal(lf_site_storage(pol, "/weka", &s, &e), 0);
	assert_int_equal(s, LF_STORAGE_SHARED);
	assert_int_equal(lf_site_storage("nfs:/home", "/home", &s, &e), -1);
	assert_string_equal(e.what, "malformed entry 'nfs:/home'");
	assert_int_equal(lf_site_storage("shared:home", "/home", &s, &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(syntax_error_has_line_and_column),
		cmocka_unit_test(top_level_must_be_mapping),
		cmocka_unit_test(typed_reads),
		cmocka_unit_test(json_is_read_too),
		cmocka_unit_test(unknown_keys_have_a_nearest),
		cmocka_unit_test(fstype_by_magic),
		cmocka_unit_test(site_policy),
	};

	return cmocka_run_group_tests_name("lf_doc", tests, NULL, NULL);
}
