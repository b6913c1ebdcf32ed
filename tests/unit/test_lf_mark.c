/* Unit tests: storage marks (plugin/lf/lf_storage_mark.h): their text,
 * which mark a node reads, and the verdict. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lf_prepare.h"
#include "lf_storage_mark.h"

static void text_names_job_start_node(void **state)
{
	char buf[LF_MARK_TEXT_MAX];

	(void)state;
	assert_int_equal(lf_mark_text(4242, 1, "gpu-017", buf, sizeof(buf)),
			 (int)strlen("distenv storage mark: job 4242 start 1 node gpu-017\n"));
	assert_string_equal(buf, "distenv storage mark: job 4242 start 1 node gpu-017\n");
	/* a name that cannot be a file name, or does not fit */
	assert_int_equal(lf_mark_text(1, 0, "", buf, sizeof(buf)), -1);
	assert_int_equal(lf_mark_text(1, 0, "a/b", buf, sizeof(buf)), -1);
	assert_int_equal(lf_mark_text(1, 0, "n1", buf, 10), -1);
}

/* A mark left by another job, another start of this job, or under
 * another name is not this start's. */
static void only_this_start_matches(void **state)
{
	const char *mark = "distenv storage mark: job 7 start 2 node n2\n";

	(void)state;
	assert_true(lf_mark_matches(mark, 7, 2, "n2"));
	assert_false(lf_mark_matches(mark, 8, 2, "n2"));
	assert_false(lf_mark_matches(mark, 7, 1, "n2"));
	assert_false(lf_mark_matches(mark, 7, 2, "n1"));
	assert_false(lf_mark_matches(NULL, 7, 2, "n2"));
	assert_false(lf_mark_matches("distenv storage mark: job 7 start 2 node n2", 7, 2, "n2"));
}

static void node_zero_reads_one_others_read_zero(void **state)
{
	(void)state;
	assert_int_equal(lf_mark_partner_index(0, 1), -1);
	assert_int_equal(lf_mark_partner_index(0, 2), 1);
	assert_int_equal(lf_mark_partner_index(1, 2), 0);
	assert_int_equal(lf_mark_partner_index(999, 1000), 0);
}

static void verdicts(void **state)
{
	(void)state;
	assert_int_equal(lf_mark_verdict(1, 1), LF_STORAGE_SHARED);
	assert_int_equal(lf_mark_verdict(1, 0), LF_STORAGE_LOCAL);
	/* no mark step ran here for this start: no verdict */
	assert_int_equal(lf_mark_verdict(0, 0), LF_STORAGE_UNKNOWN);
	assert_int_equal(lf_mark_verdict(0, 1), LF_STORAGE_UNKNOWN);
}

/* The start a mark names: SLURM_RESTART_COUNT, 0 when unset or not a
 * count. */
static void start_from_restart_count(void **state)
{
	const char *three[] = {"SLURM_RESTART_COUNT=3", NULL};
	const char *bad[] = {"SLURM_RESTART_COUNT=3x", NULL};
	const char *neg[] = {"SLURM_RESTART_COUNT=-1", NULL};
	const char *none[] = {NULL};

	(void)state;
	assert_int_equal(lf_restart_count(three), 3);
	assert_int_equal(lf_restart_count(bad), 0);
	assert_int_equal(lf_restart_count(neg), 0);
	assert_int_equal(lf_restart_count(none), 0);
	assert_int_equal(lf_restart_count(NULL), 0);
}

/* The node's name is the caller's (the plugin reads SLURMD_NODENAME
 * once, for its messages too); the environment gives the start and the
 * partner whose mark this node reads. */
static void facts_env_keeps_the_callers_node_name(void **state)
{
	const char *env[] = {"SLURM_RESTART_COUNT=2",
			     "SLURM_STEP_NODELIST=n[1-2]",
			     "SLURMD_NODENAME=elsewhere", NULL};
	struct lf_prepare_facts f;
	char partner[64];

	(void)state;
	memset(&f, 0, sizeof(f));
	f.nnodes = 2;
	f.node_id = 0;
	f.node_name = "n1";
	lf_prepare_facts_env(env, &f, partner, sizeof(partner));
	assert_string_equal(f.node_name, "n1");
	assert_string_equal(f.partner_name, "n2");
	assert_int_equal(f.restart_count, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(text_names_job_start_node),
		cmocka_unit_test(only_this_start_matches),
		cmocka_unit_test(node_zero_reads_one_others_read_zero),
		cmocka_unit_test(verdicts),
		cmocka_unit_test(start_from_restart_count),
		cmocka_unit_test(facts_env_keeps_the_callers_node_name),
	};

	return cmocka_run_group_tests_name("lf_mark", tests, NULL, NULL);
}
