/* Unit tests: storage marks (plugin/lf/lf_storage_mark.h): their text,
 * which mark a node reads, and the verdict. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(text_names_job_start_node),
		cmocka_unit_test(only_this_start_matches),
		cmocka_unit_test(node_zero_reads_one_others_read_zero),
		cmocka_unit_test(verdicts),
	};

	return cmocka_run_group_tests_name("lf_mark", tests, NULL, NULL);
}
