/* Unit tests: resume preflight on checkpoint trees laid out as
 * Transformers + DeepSpeed write them: 2 nodes x 2 GPUs,
 * ZeRO-3, with and without save_on_each_node. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lf_resume.h"

#define MAXP 64

struct tree {
	char *p[MAXP];
	size_t n;
	struct lf_listing ls;
};

static void add_str(struct tree *t, const char *s)
{
	assert_true(t->n < MAXP);
	t->p[t->n++] = strdup(s);
	t->ls.paths = (const char *const *)t->p;
	t->ls.count = t->n;
}

static void add(struct tree *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add(struct tree *t, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	add_str(t, buf);
}

static void tree_free(struct tree *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->p[i]);
	memset(t, 0, sizeof(*t));
}

/* What node `node` holds of checkpoint-500 after a save, as measured
 * with Transformers 5.6 and DeepSpeed 0.19.8 on the namespace cluster
 * (tests/cluster/llamafactory.bats): every rank writes its shards and
 * rng_state; the main process(es) write trainer_state.json and the
 * weights: global rank 0 only, or local rank 0 of every node with
 * save_on_each_node; DeepSpeed's `latest` is written by global rank 0
 * only, with or without save_on_each_node (lf_resume.h). */
static void node_tree(struct tree *t, unsigned node, int save_on_each_node)
{
	unsigned r;

	memset(t, 0, sizeof(*t));
	add(t, "checkpoint-%u/", 500);
	add(t, "checkpoint-%u/global_step500/", 500);
	if (node == 0 || save_on_each_node) {
		add(t, "checkpoint-%u/trainer_state.json", 500);
		add(t, "checkpoint-%u/model.safetensors", 500);
	}
	if (node == 0)
		add(t, "checkpoint-%u/latest", 500);
	for (r = node * 2; r < node * 2 + 2; r++) {
		add(t, "checkpoint-500/global_step500/"
		       "bf16_zero_pp_rank_%u_mp_rank_00_optim_states.pt", r);
		add(t, "checkpoint-500/global_step500/"
		       "zero_pp_rank_%u_mp_rank_00_model_states.pt", r);
		add(t, "checkpoint-500/rng_state_%u.pth", r);
	}
}

static struct lf_resume_input input(unsigned node)
{
	struct lf_resume_input in = {"checkpoint-500", "global_step500", node,
				     2, 4, 3, 0, 0};

	return in;
}

static void node0_has_everything(void **state)
{
	struct tree t;
	struct lf_resume_input in = input(0);
	struct lf_resume_result r;
	struct distenv_error e;

	(void)state;
	node_tree(&t, 0, 0);
	assert_int_equal(lf_resume_check(&t.ls, &in, &r, &e), 0);
	assert_int_equal(r.missing_required, 0);
	assert_int_equal(r.missing_rng, 0);
	tree_free(&t);
}

static void node1_without_save_on_each_node_lacks_state(void **state)
{
	struct tree t;
	struct lf_resume_input in = input(1);
	struct lf_resume_result r;
	struct distenv_error e;

	(void)state;
	node_tree(&t, 1, 0);
	assert_int_equal(lf_resume_check(&t.ls, &in, &r, &e), -1);
	assert_int_equal(r.missing_required, 2);
	assert_string_equal(r.missing[0], "checkpoint-500/trainer_state.json");
	assert_string_equal(r.missing[1], "checkpoint-500/latest");
	assert_string_equal(e.where, "node 1");
	assert_string_equal(e.what, "cannot resume from checkpoint-500: 2 "
		"file(s) this node's ranks need are missing: "
		"checkpoint-500/trainer_state.json, checkpoint-500/latest");
	assert_non_null(strstr(e.fix, "save_on_each_node: true"));
	tree_free(&t);
}

static void node1_with_save_on_each_node_lacks_only_latest(void **state)
{
	struct tree t;
	struct lf_resume_input in = input(1);
	struct lf_resume_result r;
	struct distenv_error e;

	(void)state;
	node_tree(&t, 1, 1);
	assert_int_equal(lf_resume_check(&t.ls, &in, &r, &e), -1);
	assert_int_equal(r.missing_required, 1);
	assert_string_equal(r.missing[0], "checkpoint-500/latest");
	assert_int_equal(r.latest_restorable, 0);
	tree_free(&t);
}

/* node-local storage: the one missing file is DeepSpeed's tag file,
 * restorable from the tag directory's name */
static void node1_with_save_on_each_node_resumes_restoring_latest(void **state)
{
	struct tree t;
	struct lf_resume_input in = input(1);
	struct lf_resume_result r;
	struct distenv_error e;

	(void)state;
	in.latest_tag = NULL;
	in.restore_latest = 1;
	node_tree(&t, 1, 1);
	assert_int_equal(lf_resume_check(&t.ls, &in, &r, &e), 0);
	assert_int_equal(r.missing_required, 0);
	assert_int_equal(r.listed, 0);
	assert_int_equal(r.latest_restorable, 1);
	assert_string_equal(r.tag, "global_step500");
	tree_free(&t);
}

/* not when more is missing, and never on node 0, where DeepSpeed does
 * write it: there its absence means the save was cut */
static void latest_not_restored_for_a_partial_or_node0_copy(void **state)
{
	size_t i;
	struct tree t;
	struct lf_resume_input in = input(1);
	struct lf_resume_result r;
	struct distenv_error e;

	(void)state;
	in.restore_latest = 1;
	node_tree(&t, 1, 0);
	assert_int_equal(lf_resume_check(&t.ls, &in, &r, &e), -1);
	assert_int_equal(r.latest_restorable, 0);
	assert_int_equal(r.missing_required, 2);
	assert_string_equal(r.missing[1], "checkpoint-500/latest");
	tree_free(&t);

	in = input(0);
	in.restore_latest = 1;
	node_tree(&t, 0, 1);
	for (i = 0; strcmp(t.p[i], "checkpoint-500/latest"); i++)
		;
	free(t.p[i]);
	t.p[i] = t.p[--t.n];
	t.ls.count = t.n;
	assert_int_equal(lf_resume_check(&t.ls, &in, &r, &e), -1);
	assert_int_equal(r.latest_restorable, 0);
	assert_string_equal(r.missing[0], "checkpoint-500/latest");
	tree_free(&t);
}

/* an fp32 run (no bf16_ prefix): a missing optimizer shard is named as
 * the node's other rank names its own */
static void missing_shard_named_with_the_runs_prefix(void **state)
{
	struct tree t;
	struct lf_resume_input in = input(1);
	struct lf_resume_result r;
	struct distenv_error e;

	(void)state;
	memset(&t, 0, sizeof(t));
	add(&t, "checkpoint-500/trainer_state.json");
	add(&t, "checkpoint-500/latest");
	add(&t, "checkpoint-500/global_step500/"
		"zero_pp_rank_2_mp_rank_00_optim_states.pt");
	add(&t, "checkpoint-500/global_step500/"
		"zero_pp_rank_2_mp_rank_00_model_states.pt");
	add(&t, "checkpoint-500/global_step500/"
		"zero_pp_rank_3_mp_rank_00_model_states.pt");
	add(&t, "checkpoint-500/rng_state_2.pth");
	add(&t, "checkpoint-500/rng_state_3.pth");
	assert_int_equal(lf_resume_check(&t.ls, &in, &r, &e), -1);
	assert_int_equal(r.missing_required, 1);
	assert_string_equal(r.missing[0], "checkpoint-500/global_step500/"
			    "zero_pp_rank_3_mp_rank_00_optim_states.pt");
	tree_free(&t);
}

static void node0_tree_seen_from_node1_lacks_its_shards(void **state)
{
	struct tree t;
	struct lf_resume_input in = input(1);
	struct lf_resume_result r;
	struct distenv_error e;

	(void)state;
	/* node 1 with a copy of node 0's files only (the hand-copy gone
	 * wrong of docs/contracts.md 8) */
	node_tree(&t, 0, 0);
	assert_int_equal(lf_resume_check(&t.ls, &in, &r, &e), -1);
	assert_int_equal(r.missing_required, 4);
	assert_int_equal(r.missing_rng, 2);
	assert_string_equal(r.missing[0], "checkpoint-500/global_step500/"
			    "zero_pp_rank_2_mp_rank_00_model_states.pt");
	assert_string_equal(r.missing[1], "checkpoint-500/global_step500/"
			    "bf16_zero_pp_rank_2_mp_rank_00_optim_states.pt");
	assert_string_equal(r.missing[4], "checkpoint-500/rng_state_2.pth");
	tree_free(&t);
}

static void zero2_needs_mp_rank_model_states(void **state)
{
	struct tree t;
	struct lf_resume_input in = input(0);
	struct lf_resume_result r;
	struct distenv_error e;

	(void)state;
	in.zero_stage = 2;
	node_tree(&t, 0, 0);
	assert_int_equal(lf_resume_check(&t.ls, &in, &r, &e), -1);
	assert_int_equal(r.missing_required, 1);
	assert_string_equal(r.missing[0], "checkpoint-500/global_step500/"
			    "mp_rank_00_model_states.pt");
	add_str(&t, "checkpoint-500/global_step500/mp_rank_00_model_states.pt");
	assert_int_equal(lf_resume_check(&t.ls, &in, &r, &e), 0);
	tree_free(&t);
}

static void last_checkpoint_by_number(void **state)
{
	const char *p[] = {"checkpoint-900/", "checkpoint-1000/",
			   "checkpoint-1000x/", "checkpoint-2000",
			   "runs/", "checkpoint-/"};
	struct lf_listing ls = {p, 6};
	char name[64];

	(void)state;
	assert_int_equal(lf_last_checkpoint(&ls, name, sizeof(name)), 1);
	/* checkpoint-2000 is a file, not a directory */
	assert_string_equal(name, "checkpoint-1000");
	ls.count = 0;
	assert_int_equal(lf_last_checkpoint(&ls, name, sizeof(name)), 0);
}

/* ranks first..last's ZeRO-3 shards and rng states in checkpoint-500 */
static void add_ranks(struct tree *t, unsigned first, unsigned last)
{
	unsigned r;

	for (r = first; r <= last; r++) {
		add(t, "checkpoint-500/global_step500/"
		       "bf16_zero_pp_rank_%u_mp_rank_00_optim_states.pt", r);
		add(t, "checkpoint-500/global_step500/"
		       "zero_pp_rank_%u_mp_rank_00_model_states.pt", r);
		add(t, "checkpoint-500/rng_state_%u.pth", r);
	}
}

/* Saved by 4 nodes x 2 GPUs on shared storage, resumed on 2 x 2: every
 * file node 0's ranks read is there, and DeepSpeed would still refuse
 * the checkpoint after loading the model. */
static void larger_world_refused(void **state)
{
	struct tree t;
	struct lf_resume_input in = input(0);
	struct distenv_error e;

	(void)state;
	node_tree(&t, 0, 0);
	add_ranks(&t, 2, 7);
	assert_int_equal(lf_resume_check(&t.ls, &in, NULL, &e), -1);
	assert_string_equal(e.where, "node 0");
	assert_string_equal(e.what, "cannot resume from checkpoint-500: it "
		"was saved by a data-parallel world of at least 8 ranks "
		"(global_step500 holds rank 7's shards), and this step has 4; "
		"DeepSpeed would refuse it only after loading the model");
	assert_non_null(strstr(e.fix, "node and GPU count that saved it"));
	assert_non_null(strstr(e.fix, "ds_to_universal.py"));
	/* node-local or shared alike */
	in.shared = 1;
	assert_int_equal(lf_resume_check(&t.ls, &in, NULL, &e), -1);
	tree_free(&t);
}

/* Saved by 1 node x 2 GPUs on shared storage, resumed on 2 x 2: node 0
 * has its files; the shards of ranks 2 and 3 are nowhere. On node-local
 * storage the same listing is node 0's own disk, and says nothing. */
static void smaller_world_refused_on_shared_storage(void **state)
{
	struct tree t;
	struct lf_resume_input in = input(0);
	struct distenv_error e;

	(void)state;
	node_tree(&t, 0, 0);
	in.shared = 1;
	assert_int_equal(lf_resume_check(&t.ls, &in, NULL, &e), -1);
	assert_string_equal(e.what, "cannot resume from checkpoint-500: "
		"global_step500 holds the shards of ranks up to 1 only, and "
		"this step has 4 ranks: it was saved by a smaller "
		"data-parallel world, or its save did not finish");
	in.shared = 0;
	assert_int_equal(lf_resume_check(&t.ls, &in, NULL, &e), 0);
	/* the same world, every rank's files on the shared disk */
	add_ranks(&t, 2, 3);
	in.shared = 1;
	assert_int_equal(lf_resume_check(&t.ls, &in, NULL, &e), 0);
	tree_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(node0_has_everything),
		cmocka_unit_test(node1_without_save_on_each_node_lacks_state),
		cmocka_unit_test(node1_with_save_on_each_node_lacks_only_latest),
		cmocka_unit_test(node1_with_save_on_each_node_resumes_restoring_latest),
		cmocka_unit_test(latest_not_restored_for_a_partial_or_node0_copy),
		cmocka_unit_test(missing_shard_named_with_the_runs_prefix),
		cmocka_unit_test(node0_tree_seen_from_node1_lacks_its_shards),
		cmocka_unit_test(zero2_needs_mp_rank_model_states),
		cmocka_unit_test(last_checkpoint_by_number),
		cmocka_unit_test(larger_world_refused),
		cmocka_unit_test(smaller_world_refused_on_shared_storage),
	};

	return cmocka_run_group_tests_name("lf_resume", tests, NULL, NULL);
}
