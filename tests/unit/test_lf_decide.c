/* Unit tests: save_on_each_node, offload profile, settings
 * that fight, check levels, and the host-memory warning. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lf_decide.h"

static const char *z3 =
	"{\"zero_optimization\": {\"stage\": 3, \"sub_group_size\": 1e9, "
	"\"stage3_gather_16bit_weights_on_model_save\": true}}";
static const char *z3_offload =
	"{\"zero_optimization\": {\"stage\": 3, "
	"\"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}, "
	"\"offload_param\": {\"device\": \"cpu\", \"pin_memory\": true}, "
	"\"stage3_gather_16bit_weights_on_model_save\": true}}";

struct fx {
	struct lf_doc y, ds;
	struct lf_inputs in;
	struct lf_decision dec;
	struct distenv_error err;
};

static void setup_fx(struct fx *f, const char *yaml, const char *ds)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(lf_doc_load(&f->y, "dpo.yaml", yaml, strlen(yaml),
				     &f->err), 0);
	f->in.yaml = &f->y;
	if (ds) {
		assert_int_equal(lf_doc_load(&f->ds, "ds.json", ds, strlen(ds),
					     &f->err), 0);
		f->in.ds = &f->ds;
	}
	f->in.nnodes = 2;
	f->in.gpus_per_node = 8;
	f->in.out_storage = LF_STORAGE_LOCAL;
	f->in.out_fs = "ext2/3/4";
}

static void free_fx(struct fx *f)
{
	lf_doc_free(&f->y);
	lf_doc_free(&f->ds);
}

/* The message whose what contains needle, or NULL. */
static const struct distenv_error *find(const struct lf_decision *d,
					const char *needle, enum lf_level *lv)
{
	size_t i;

	for (i = 0; i < d->msgs.count; i++) {
		if (strstr(d->msgs.items[i].e.what, needle)) {
			if (lv)
				*lv = d->msgs.items[i].level;
			return &d->msgs.items[i].e;
		}
	}
	return NULL;
}

#define BASE "stage: dpo\nfinetuning_type: full\ndo_train: true\n" \
	     "output_dir: /out\ndeepspeed: ds.json\n"

static void auto_on_local_storage_sets_true(void **state)
{
	struct fx f;

	(void)state;
	setup_fx(&f, BASE, z3);
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.soen, 1);
	assert_int_equal(f.dec.soen_set, 1);
	assert_non_null(strstr(f.dec.changes[0], "save_on_each_node: true"));
	assert_int_equal(f.dec.msgs.count, 0);
	free_fx(&f);
}

static void auto_on_shared_storage_sets_false(void **state)
{
	struct fx f;

	(void)state;
	setup_fx(&f, BASE, z3);
	f.in.out_storage = LF_STORAGE_SHARED;
	f.in.out_fs = "nfs";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.soen, 0);
	assert_int_equal(f.dec.soen_set, 1);
	assert_int_equal(f.dec.msgs.count, 0);
	free_fx(&f);
}

static void user_true_on_shared_warns_strict_fails(void **state)
{
	struct fx f;
	const struct distenv_error *e;
	enum lf_level lv;

	(void)state;
	setup_fx(&f, BASE "save_on_each_node: true\n", z3);
	f.in.out_storage = LF_STORAGE_SHARED;
	f.in.out_fs = "lustre";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	/* the user's value is kept */
	assert_int_equal(f.dec.soen, 1);
	assert_int_equal(f.dec.soen_set, 0);
	e = find(&f.dec, "shared storage (lustre)", &lv);
	assert_non_null(e);
	assert_int_equal(lv, LF_WARN);
	assert_string_equal(e->where, "dpo.yaml:6:1");
	assert_int_equal(f.dec.msgs.errors, 0);
	free_fx(&f);

	setup_fx(&f, BASE "save_on_each_node: true\n", z3);
	f.in.out_storage = LF_STORAGE_SHARED;
	f.in.check = LF_CHECK_STRICT;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.msgs.errors, 1);
	free_fx(&f);

	setup_fx(&f, BASE "save_on_each_node: true\n", z3);
	f.in.out_storage = LF_STORAGE_SHARED;
	f.in.check = LF_CHECK_OFF;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.msgs.count, 0);
	free_fx(&f);

	/* --distenv-save-on-each-node=yes forces it, still warned */
	setup_fx(&f, BASE, z3);
	f.in.out_storage = LF_STORAGE_SHARED;
	f.in.soen = LF_SOEN_YES;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.soen, 1);
	assert_non_null(find(&f.dec, "every node writes", NULL));
	free_fx(&f);
}

static void user_false_on_local_warns(void **state)
{
	struct fx f;

	(void)state;
	setup_fx(&f, BASE "save_on_each_node: false\n", z3);
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.soen, 0);
	assert_non_null(find(&f.dec, "nodes other than 0 will lack", NULL));
	free_fx(&f);
}

static void unknown_storage_is_left_alone(void **state)
{
	struct fx f;

	(void)state;
	setup_fx(&f, BASE, z3);
	f.in.out_storage = LF_STORAGE_UNKNOWN;
	f.in.out_fs = "fuse";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.soen_set, 0);
	assert_non_null(find(&f.dec, "cannot tell whether output_dir (fuse)",
			     NULL));
	free_fx(&f);
}

static void offload_cpu_sets_both_and_merges_alloc_conf(void **state)
{
	struct fx f;

	(void)state;
	setup_fx(&f, BASE, z3);
	f.in.offload = LF_OFFLOAD_CPU;
	f.in.alloc_conf = "max_split_size_mb:512";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.ds_offload_write, 1);
	assert_int_equal(f.dec.ds_changed, 1);
	assert_int_equal(f.dec.offload_cpu, 1);
	assert_int_equal(f.dec.alloc_conf_set, 1);
	assert_string_equal(f.dec.alloc_conf,
			    "max_split_size_mb:512,expandable_segments:True");
	free_fx(&f);

	/* the user's own expandable_segments is kept */
	setup_fx(&f, BASE, z3_offload);
	f.in.alloc_conf = "expandable_segments:False";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.ds_changed, 0);
	assert_int_equal(f.dec.offload_cpu, 1);
	assert_int_equal(f.dec.alloc_conf_set, 0);
	free_fx(&f);

	setup_fx(&f, BASE, z3_offload);
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_string_equal(f.dec.alloc_conf, "expandable_segments:True");
	free_fx(&f);
}

/* LLaMA-Factory 0.9.3+ replaces PYTORCH_CUDA_ALLOC_CONF in the trainers
 * unless OPTIM_TORCH is off: off when the value holds more than
 * expandable_segments:True, a warning when the user turned it on. */
static void optim_torch_off_keeps_alloc_conf(void **state)
{
	enum lf_level lv;
	struct fx f;

	(void)state;
	setup_fx(&f, BASE, z3_offload);
	f.in.alloc_conf = "max_split_size_mb:512";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_string_equal(f.dec.alloc_conf,
			    "max_split_size_mb:512,expandable_segments:True");
	assert_int_equal(f.dec.optim_torch_off, 1);
	assert_non_null(strstr(f.dec.changes[f.dec.nchanges - 1],
			       "OPTIM_TORCH=0, TORCH_NCCL_AVOID_RECORD_STREAMS=1"));
	free_fx(&f);

	/* LLaMA-Factory's own value, or none: nothing to keep */
	setup_fx(&f, BASE, z3_offload);
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.optim_torch_off, 0);
	free_fx(&f);
	setup_fx(&f, BASE, z3);
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.optim_torch_off, 0);
	free_fx(&f);

	/* no offload, the user's value only: kept all the same */
	setup_fx(&f, BASE, z3);
	f.in.alloc_conf = "garbage_collection_threshold:0.6";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.alloc_conf_set, 0);
	assert_int_equal(f.dec.optim_torch_off, 1);
	free_fx(&f);

	/* the user's OPTIM_TORCH is theirs: y (on) warns, 0 is quiet */
	setup_fx(&f, BASE, z3);
	f.in.alloc_conf = "garbage_collection_threshold:0.6";
	f.in.optim_torch = "y";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.optim_torch_off, 0);
	assert_non_null(find(&f.dec, "OPTIM_TORCH=y: LLaMA-Factory 0.9.3 and "
			     "later replace PYTORCH_CUDA_ALLOC_CONF="
			     "garbage_collection_threshold:0.6", &lv));
	assert_int_equal(lv, LF_WARN);
	free_fx(&f);
	setup_fx(&f, BASE, z3);
	f.in.alloc_conf = "garbage_collection_threshold:0.6";
	f.in.optim_torch = "0";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.optim_torch_off, 0);
	assert_null(find(&f.dec, "OPTIM_TORCH", NULL));
	free_fx(&f);
}

static void offload_none_removes(void **state)
{
	struct fx f;

	(void)state;
	setup_fx(&f, BASE, z3_offload);
	f.in.offload = LF_OFFLOAD_NONE;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.ds_offload_write, -1);
	assert_int_equal(f.dec.offload_cpu, 0);
	assert_int_equal(f.dec.alloc_conf_set, 0);
	free_fx(&f);
}

static void offload_auto_uses_the_plan(void **state)
{
	struct fx f;

	(void)state;
	setup_fx(&f, BASE, z3);
	f.in.offload = LF_OFFLOAD_AUTO;
	f.in.model_params = 72710000000ULL;
	f.in.gpu_mem = 80.0 * 1073741824.0;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.ds_offload_write, 1);
	free_fx(&f);
	/* 8B fits in 80 GiB on 16 GPUs: nothing changes */
	setup_fx(&f, BASE, z3);
	f.in.offload = LF_OFFLOAD_AUTO;
	f.in.model_params = 8030000000ULL;
	f.in.gpu_mem = 80.0 * 1073741824.0;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.ds_offload_write, 0);
	free_fx(&f);
}

static void settings_that_fight(void **state)
{
	struct fx f;
	struct plan_model_config m;
	enum lf_level lv;
	const char *z2p = "{\"zero_optimization\": {\"stage\": 2, "
			  "\"offload_param\": {\"device\": \"cpu\"}}}";

	(void)state;
	setup_fx(&f, BASE, z3);
	f.in.force_torchrun = "0";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_non_null(find(&f.dec, "FORCE_TORCHRUN=0 with DeepSpeed on 2 "
			     "nodes", NULL));
	free_fx(&f);

	setup_fx(&f, BASE "cutoff_len: 16384\n", z3);
	memset(&m, 0, sizeof(m));
	m.hidden_size = 4096;
	m.num_hidden_layers = 32;
	m.intermediate_size = 14336;
	m.vocab_size = 128256;
	m.num_attention_heads = 32;
	m.num_key_value_heads = 8;
	m.head_dim = 128;
	m.max_position_embeddings = 8192;
	f.in.model = &m;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_non_null(find(&f.dec, "cutoff_len 16384 is larger than the "
			     "model's max_position_embeddings 8192", NULL));
	free_fx(&f);

	setup_fx(&f, BASE, NULL);
	f.in.ds_unreadable = 1;
	f.in.ds_problem = "No such file or directory";
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_non_null(find(&f.dec, "deepspeed: ds.json cannot be read: No "
			     "such file or directory", &lv));
	assert_int_equal(lv, LF_ERROR);
	free_fx(&f);

	setup_fx(&f, BASE, z2p);
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_non_null(find(&f.dec, "offload_param is only valid with ZeRO "
			     "stage 3, the config has stage 2", &lv));
	assert_int_equal(lv, LF_ERROR);
	free_fx(&f);

	setup_fx(&f, BASE "overwrite_output_dir: true\n"
		 "resume_from_checkpoint: /out/checkpoint-500\n", z3);
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_non_null(find(&f.dec, "overwrite_output_dir: true together "
			     "with resume_from_checkpoint", NULL));
	assert_int_equal(f.dec.resume, 1);
	assert_string_equal(f.dec.resume_ckpt, "checkpoint-500");
	free_fx(&f);
}

static void wrong_types_are_errors(void **state)
{
	struct fx f;

	(void)state;
	setup_fx(&f, BASE "save_on_each_node: sometimes\n", z3);
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), -1);
	assert_string_equal(f.err.where, "dpo.yaml:6:20");
	assert_string_equal(f.err.what, "save_on_each_node: 'sometimes' is not "
			    "true or false");
	free_fx(&f);
	setup_fx(&f, BASE "cutoff_len: [1]\n", z3);
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), -1);
	free_fx(&f);
	setup_fx(&f, BASE, "{\"zero_optimization\": {\"stage\": \"three\"}}");
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), -1);
	assert_string_equal(f.err.where, "ds.json:1:33");
	free_fx(&f);
}

/* LLaMA-Factory's parser would stop on it: an error in the default
 * mode, with the nearest known key and the way out. */
static void unknown_key_error_names_nearest(void **state)
{
	struct fx f;
	const struct distenv_error *e;
	enum lf_level lv = LF_WARN;

	(void)state;
	setup_fx(&f, BASE "save_on_each_nodes: true\n", z3);
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	e = find(&f.dec, "unknown LLaMA-Factory key 'save_on_each_nodes'", &lv);
	assert_non_null(e);
	assert_int_equal(lv, LF_ERROR);
	assert_int_equal(f.dec.msgs.errors, 1);
	assert_string_equal(e->where, "dpo.yaml:6:1");
	assert_string_equal(e->fix,
			    "did you mean 'save_on_each_node'? Check the key "
			    "against LLaMA-Factory's hparams/ for your version "
			    "(--distenv-check=off skips this check)");
	free_fx(&f);
}

static void host_memory_message(void **state)
{
	struct fx f;
	const struct distenv_error *e;

	(void)state;
	setup_fx(&f, BASE, z3_offload);
	f.in.model_params = 72710000000ULL;
	f.in.host_mem = 1024.0 * 1073741824.0;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_true(f.dec.have_plan);
	e = find(&f.dec, "host memory at checkpoint time", NULL);
	assert_non_null(e);
	assert_string_equal(e->where, "node 0");
	assert_non_null(strstr(e->what, "GiB needed"));
	assert_non_null(strstr(e->what, "135.4 for the 16-bit gather"));
	assert_non_null(strstr(e->fix, "zero_to_fp32.py"));
	assert_non_null(strstr(e->fix, "--mem"));
	free_fx(&f);
	/* node 1 does not gather: only its steady share is checked */
	setup_fx(&f, BASE, z3_offload);
	f.in.model_params = 72710000000ULL;
	f.in.host_mem = 1024.0 * 1073741824.0;
	f.in.node_id = 1;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_null(find(&f.dec, "host memory at checkpoint time", NULL));
	assert_null(find(&f.dec, "host memory:", NULL));
	f.in.host_mem = 512.0 * 1073741824.0;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	e = find(&f.dec, "host memory: 1015.7 GiB needed while training", NULL);
	assert_non_null(e);
	assert_string_equal(e->where, "node 1");
	free_fx(&f);
	/* LoRA DPO: no reference model, gather still the whole model */
	setup_fx(&f, "stage: dpo\nfinetuning_type: lora\noutput_dir: /out\n"
		 "deepspeed: ds.json\n", z3);
	f.in.model_params = 72710000000ULL;
	f.in.host_mem = 128.0 * 1073741824.0;
	assert_int_equal(lf_decide(&f.in, &f.dec, &f.err), 0);
	assert_int_equal(f.dec.mem_in.reference_model, 0);
	assert_true(f.dec.mem.host_gather > 145e9);
	assert_non_null(find(&f.dec, "host memory at checkpoint time", NULL));
	free_fx(&f);
}

static void option_parsers(void **state)
{
	struct distenv_error e;
	int v = -1;

	(void)state;
	assert_int_equal(lf_parse_soen("auto", "--o", &v, &e), 0);
	assert_int_equal(v, LF_SOEN_AUTO);
	assert_int_equal(lf_parse_soen("no", "--o", &v, &e), 0);
	assert_int_equal(v, LF_SOEN_NO);
	assert_int_equal(lf_parse_soen("maybe", "--o", &v, &e), -1);
	assert_string_equal(e.what, "'maybe' is not accepted");
	assert_string_equal(e.fix, "use auto, yes or no");
	assert_int_equal(lf_parse_offload("cpu", "--o", &v, &e), 0);
	assert_int_equal(v, LF_OFFLOAD_CPU);
	assert_int_equal(lf_parse_offload("", "--o", &v, &e), -1);
	assert_int_equal(lf_parse_offload("nvme", "--o", &v, &e), -1);
	assert_int_equal(lf_parse_check("strict", "--o", &v, &e), 0);
	assert_int_equal(v, LF_CHECK_STRICT);
	assert_int_equal(lf_parse_check(NULL, "--o", &v, &e), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(auto_on_local_storage_sets_true),
		cmocka_unit_test(auto_on_shared_storage_sets_false),
		cmocka_unit_test(user_true_on_shared_warns_strict_fails),
		cmocka_unit_test(user_false_on_local_warns),
		cmocka_unit_test(unknown_storage_is_left_alone),
		cmocka_unit_test(offload_cpu_sets_both_and_merges_alloc_conf),
		cmocka_unit_test(optim_torch_off_keeps_alloc_conf),
		cmocka_unit_test(offload_none_removes),
		cmocka_unit_test(offload_auto_uses_the_plan),
		cmocka_unit_test(settings_that_fight),
		cmocka_unit_test(wrong_types_are_errors),
		cmocka_unit_test(unknown_key_error_names_nearest),
		cmocka_unit_test(host_memory_message),
		cmocka_unit_test(option_parsers),
	};

	return cmocka_run_group_tests_name("lf_decide", tests, NULL, NULL);
}
