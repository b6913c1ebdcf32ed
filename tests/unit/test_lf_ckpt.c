/* Unit tests: which checkpoint a requeued job resumes from
 * (plugin/lf/lf_ckpt.h), over checkpoint trees laid out as
 * Transformers + DeepSpeed ZeRO-3 write them with save_on_each_node on
 * node-local disks: 2 nodes x 2 ranks, each node holding its own ranks'
 * shards and its own trainer_state.json and latest. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "lf_ckpt.h"
#include "lf_prepare.h"
#include "lf_sys.h"

#define MAXP 128

struct tree {
	char *p[MAXP];
	size_t n;
	struct lf_listing ls;
};

static void add(struct tree *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add(struct tree *t, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(t->n < MAXP);
	t->p[t->n++] = strdup(buf);
	t->ls.paths = (const char *const *)t->p;
	t->ls.count = t->n;
}

static void tree_free(struct tree *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->p[i]);
}

/* checkpoint-N as node `node` (ranks 2*node, 2*node+1) writes it, tag
 * global_stepN; skip_rank >= 0: that rank's optimizer shard is missing
 * (the save was cut). */
static void ckpt(struct tree *t, int n, int node, int skip_rank)
{
	int r;

	add(t, "checkpoint-%d/", n);
	add(t, "checkpoint-%d/trainer_state.json", n);
	add(t, "checkpoint-%d/latest", n);
	add(t, "checkpoint-%d/global_step%d/", n, n);
	for (r = 2 * node; r < 2 * node + 2; r++) {
		add(t, "checkpoint-%d/rng_state_%d.pth", n, r);
		add(t, "checkpoint-%d/global_step%d/zero_pp_rank_%d_mp_rank_00_model_states.pt",
		    n, n, r);
		if (r != skip_rank)
			add(t, "checkpoint-%d/global_step%d/bf16_zero_pp_rank_%d_mp_rank_00_optim_states.pt",
			    n, n, r);
	}
}

static struct lf_resume_input node_in(uint32_t node)
{
	struct lf_resume_input in;

	memset(&in, 0, sizeof(in));
	in.node_id = node;
	in.gpus_per_node = 2;
	in.world_size = 4;
	in.zero_stage = 3;
	return in;
}

/* Node 1's disk: checkpoint-8 cut while rank 3 wrote its optimizer
 * state; checkpoint-4 complete. Node 1 takes checkpoint-4 and names
 * checkpoint-8 and its missing file; node 0's disk, where both are
 * complete, gives checkpoint-8. */
static void test_cut_on_one_node(void **state)
{
	struct tree n0 = {0}, n1 = {0};
	struct lf_resume_input in0 = node_in(0), in1 = node_in(1);
	struct lf_ckpt_choice ch;
	char text[1024];

	(void)state;
	ckpt(&n0, 4, 0, -1);
	ckpt(&n0, 8, 0, -1);
	ckpt(&n1, 4, 1, -1);
	ckpt(&n1, 8, 1, 3);
	add(&n1, "runs/");
	add(&n1, "README.md");

	assert_int_equal(lf_ckpt_choose(&n1.ls, &in1, NULL, NULL, &ch), 0);
	assert_int_equal(ch.found, 1);
	assert_string_equal(ch.chosen, "checkpoint-4");
	assert_int_equal(ch.candidates, 2);
	assert_int_equal(ch.nskipped, 1);
	assert_string_equal(ch.skipped[0].name, "checkpoint-8");
	assert_int_equal(ch.skipped[0].missing, 1);
	assert_string_equal(ch.skipped[0].first,
			    "checkpoint-8/global_step8/bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt");
	lf_ckpt_describe(&ch, text, sizeof(text));
	assert_string_equal(text,
			    "resume from checkpoint-4 (newest complete on this "
			    "node of 2); skipped checkpoint-8: partial, 1 "
			    "file(s) missing here, first "
			    "checkpoint-8/global_step8/bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt");

	assert_int_equal(lf_ckpt_choose(&n0.ls, &in0, NULL, NULL, &ch), 0);
	assert_string_equal(ch.chosen, "checkpoint-8");
	assert_int_equal(ch.nskipped, 0);
	tree_free(&n0);
	tree_free(&n1);
}

/* Numbers, not strings: checkpoint-10 is newer than checkpoint-9; a
 * file named like a checkpoint and checkpoint-x are not candidates. */
static void test_numeric_order(void **state)
{
	struct tree t = {0};
	struct lf_resume_input in = node_in(0);
	struct lf_ckpt_choice ch;

	(void)state;
	ckpt(&t, 9, 0, -1);
	ckpt(&t, 10, 0, -1);
	add(&t, "checkpoint-11");
	add(&t, "checkpoint-x/");
	add(&t, "checkpoint-/");
	lf_ckpt_choose(&t.ls, &in, NULL, NULL, &ch);
	assert_string_equal(ch.chosen, "checkpoint-10");
	assert_int_equal(ch.candidates, 2);
	tree_free(&t);
}

/* A save cut before trainer_state.json and latest (written last, by
 * the node's should_save process) on the newest two; nothing complete
 * at all gives found 0 and says so. */
static void test_none_complete(void **state)
{
	struct tree t = {0};
	struct lf_resume_input in = node_in(1);
	struct lf_ckpt_choice ch;
	char text[1024];

	(void)state;
	add(&t, "checkpoint-2/");
	add(&t, "checkpoint-2/global_step2/");
	ckpt(&t, 6, 1, 2);
	lf_ckpt_choose(&t.ls, &in, NULL, NULL, &ch);
	assert_int_equal(ch.found, 0);
	assert_string_equal(ch.chosen, "");
	assert_int_equal(ch.nskipped, 2);
	assert_string_equal(ch.skipped[0].name, "checkpoint-6");
	assert_string_equal(ch.skipped[1].name, "checkpoint-2");
	/* trainer_state.json, latest and node 1's 2 shards x 2 */
	assert_int_equal(ch.skipped[1].missing, 6);
	assert_string_equal(ch.skipped[1].first,
			    "checkpoint-2/trainer_state.json");
	lf_ckpt_describe(&ch, text, sizeof(text));
	assert_non_null(strstr(text, "no checkpoint complete on this node "
				     "(2 in output_dir): start from step 0"));
	assert_non_null(strstr(text, "skipped checkpoint-2: partial, 6"));
	tree_free(&t);
}

/* The tag comes from each checkpoint's own `latest`. */
static const char *tag_of(void *ctx, const char *name)
{
	(void)ctx;
	return strcmp(name, "checkpoint-8") ? NULL : "mytag\n";
}

static void test_latest_tag(void **state)
{
	struct tree t = {0};
	struct lf_resume_input in = node_in(0);
	struct lf_ckpt_choice ch;

	(void)state;
	ckpt(&t, 4, 0, -1);
	ckpt(&t, 8, 0, -1); /* files under global_step8, latest says mytag */
	lf_ckpt_choose(&t.ls, &in, tag_of, NULL, &ch);
	assert_string_equal(ch.chosen, "checkpoint-4");
	assert_string_equal(ch.skipped[0].first,
			    "checkpoint-8/mytag/zero_pp_rank_0_mp_rank_00_model_states.pt");
	tree_free(&t);
}

/* Past LF_CKPT_SKIPPED_MAX partial ones: all counted, the first named. */
static void test_many_skipped(void **state)
{
	struct tree t = {0};
	struct lf_resume_input in = node_in(0);
	struct lf_ckpt_choice ch;
	char text[2048];
	int n;

	(void)state;
	ckpt(&t, 1, 0, -1);
	for (n = 2; n <= 12; n++)
		add(&t, "checkpoint-%d/", n);
	lf_ckpt_choose(&t.ls, &in, NULL, NULL, &ch);
	assert_string_equal(ch.chosen, "checkpoint-1");
	assert_int_equal(ch.nskipped, 11);
	assert_string_equal(ch.skipped[0].name, "checkpoint-12");
	lf_ckpt_describe(&ch, text, sizeof(text));
	assert_non_null(strstr(text, "; and 3 more skipped"));
	tree_free(&t);
}

static void test_parse(void **state)
{
	struct distenv_error err;
	char path[20];
	int mode = -1;

	(void)state;
	assert_int_equal(lf_parse_resume("auto", "--distenv-resume", &mode,
					 path, sizeof(path), &err), 0);
	assert_int_equal(mode, LF_RESUME_AUTO);
	assert_int_equal(lf_parse_resume("off", "--distenv-resume", &mode,
					 path, sizeof(path), &err), 0);
	assert_int_equal(mode, LF_RESUME_OFF);
	assert_int_equal(lf_parse_resume("out/checkpoint-4", "x", &mode, path,
					 sizeof(path), &err), 0);
	assert_int_equal(mode, LF_RESUME_PATH);
	assert_string_equal(path, "out/checkpoint-4");
	distenv_error_clear(&err);
	assert_int_equal(lf_parse_resume("", "--distenv-resume", &mode, path,
					 sizeof(path), &err), -1);
	assert_string_equal(err.where, "--distenv-resume");
	assert_int_equal(lf_parse_resume("out/checkpoint-12345", "x", &mode,
					 path, sizeof(path), &err), -1);
	assert_non_null(strstr(err.what, "longer than 19 bytes"));
}

/* The same choice from a real directory tree listed by lf_sys_list,
 * as lf_prepare lists output_dir (depth 3). */
static void touch(const char *root, const char *rel)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (rel[strlen(rel) - 1] == '/') {
		assert_int_equal(mkdir(path, 0700), 0);
		return;
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
}

static void test_on_disk(void **state)
{
	char root[] = "/tmp/test_lf_ckpt.XXXXXX", cmd[600];
	struct tree t = {0};
	struct lf_sys_listing ls = {0};
	struct lf_resume_input in = node_in(1);
	struct lf_ckpt_choice ch;
	struct distenv_error err;
	size_t i;

	(void)state;
	assert_non_null(mkdtemp(root));
	ckpt(&t, 4, 1, -1);
	ckpt(&t, 8, 1, 2);
	for (i = 0; i < t.n; i++)
		touch(root, t.p[i]);
	assert_int_equal(lf_sys_list(root, 3, NULL, &ls, &err), 0);
	lf_ckpt_choose(&ls.ls, &in, NULL, NULL, &ch);
	assert_string_equal(ch.chosen, "checkpoint-4");
	assert_string_equal(ch.skipped[0].name, "checkpoint-8");
	lf_sys_listing_free(&ls);
	tree_free(&t);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* lf_prepare on a requeued job (SLURM_RESTART_COUNT 1): the resolved YAML
 * names the newest complete checkpoint, overwrite_output_dir is false in
 * the copy, the note names the skipped one; a first run changes nothing;
 * an explicit PATH that is partial fails the step before launch. One
 * node, 2 ranks, ZeRO-3. */
static void test_prepare(void **state)
{
	char root[] = "/tmp/test_lf_ckpt.XXXXXX", out[256], path[512],
	     want[600], cmd[600];
	struct tree t = {0};
	struct lf_prepare_request req;
	struct lf_prepare_facts f;
	struct lf_prepare_result res;
	struct distenv_error err;
	size_t i;

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(out, sizeof(out), "%s/out", root);
	touch(root, "out/");
	ckpt(&t, 4, 0, -1);
	ckpt(&t, 8, 0, 1);
	for (i = 0; i < t.n; i++) {
		snprintf(path, sizeof(path), "out/%s", t.p[i]);
		touch(root, path);
	}
	snprintf(path, sizeof(path), "%s/ds.json", root);
	write_file(path, "{\"zero_optimization\": {\"stage\": 3}}\n");
	snprintf(want, sizeof(want),
		 "# a comment\nstage: dpo\ndo_train: true\noutput_dir: %s\n"
		 "overwrite_output_dir: true\ndeepspeed: %s/ds.json\n", out,
		 root);
	snprintf(path, sizeof(path), "%s/t.yaml", root);
	write_file(path, want);

	memset(&req, 0, sizeof(req));
	memset(&f, 0, sizeof(f));
	req.config = path;
	req.check = LF_CHECK_WARN;
	f.nnodes = 1;
	f.gpus_per_node = 2;
	f.job_id = 7;
	f.restart_count = 1;
	f.write = LF_WRITE_NONE;
	assert_int_equal(lf_prepare(&req, &f, &res, &err), 0);
	assert_int_equal(res.resume_set, 1);
	snprintf(want, sizeof(want), "%s/checkpoint-4", out);
	assert_string_equal(res.resume_path, want);
	assert_non_null(strstr(res.resume_note, "resume from checkpoint-4 "
				"(newest complete on this node of 2); skipped "
				"checkpoint-8: partial, 1 file(s) missing here, "
				"first checkpoint-8/global_step8/bf16_zero_pp_"
				"rank_1_mp_rank_00_optim_states.pt"));
	snprintf(want, sizeof(want), "\nresume_from_checkpoint: \"%s/checkpoint-4\"\n",
		 out);
	assert_non_null(strstr(res.yaml_text, want));
	assert_non_null(strstr(res.yaml_text, "\noverwrite_output_dir: false\n"));
	assert_null(strstr(res.yaml_text, "overwrite_output_dir: true"));
	assert_non_null(strstr(res.yaml_text, "# a comment\n"));
	assert_non_null(strstr(res.dir, "-r1"));
	lf_prepare_result_free(&res);

	/* a first run: the YAML decides, nothing about the resume changes */
	f.restart_count = 0;
	assert_int_equal(lf_prepare(&req, &f, &res, &err), 0);
	assert_int_equal(res.resume_set, 0);
	assert_null(strstr(res.yaml_text, "resume_from_checkpoint"));
	assert_non_null(strstr(res.yaml_text, "overwrite_output_dir: true"));
	assert_null(strstr(res.dir, "-r"));
	lf_prepare_result_free(&res);

	/* the step's explicit choice, partial on this node: stopped */
	snprintf(want, sizeof(want), "%s/checkpoint-8", out);
	req.resume = LF_RESUME_PATH;
	req.resume_path = want;
	distenv_error_clear(&err);
	assert_int_equal(lf_prepare(&req, &f, &res, &err), -1);
	assert_non_null(strstr(err.what, "cannot resume from checkpoint-8"));
	assert_non_null(strstr(err.what, "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt"));
	lf_prepare_result_free(&res);

	tree_free(&t);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

/* Node 0's disk: checkpoint-8 written by a run of 4 nodes (ranks 0-7,
 * say copied here whole), checkpoint-4 by this run's 2 nodes: the newer
 * one is skipped for its world size, said with the sizes, and the
 * older one chosen. */
static void test_other_world_size_skipped(void **state)
{
	struct tree t;
	struct lf_resume_input in = node_in(0);
	struct lf_ckpt_choice ch;
	char text[2048];
	int node;

	(void)state;
	memset(&t, 0, sizeof(t));
	for (node = 0; node < 4; node++)
		ckpt(&t, 8, node, -1);
	ckpt(&t, 4, 0, -1);
	assert_int_equal(lf_ckpt_choose(&t.ls, &in, NULL, NULL, &ch), 0);
	assert_int_equal(ch.found, 1);
	assert_string_equal(ch.chosen, "checkpoint-4");
	lf_ckpt_describe(&ch, text, sizeof(text));
	assert_non_null(strstr(text, "; skipped checkpoint-8: cannot resume "
				     "from checkpoint-8: it was saved by a "
				     "data-parallel world of at least 8 "
				     "ranks"));
	assert_null(strstr(text, "partial"));
	tree_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_on_one_node),
		cmocka_unit_test(test_numeric_order),
		cmocka_unit_test(test_none_complete),
		cmocka_unit_test(test_latest_tag),
		cmocka_unit_test(test_other_world_size_skipped),
		cmocka_unit_test(test_many_skipped),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_on_disk),
		cmocka_unit_test(test_prepare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
