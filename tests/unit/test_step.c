/* Unit tests: step facts from a task's environment. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_step.h"

static void tasks_per_node(void **state)
{
	struct distenv_error err;
	uint32_t n = 0;

	(void)state;
	assert_int_equal(distenv_tasks_on_node("2(x3),1", 0, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(distenv_tasks_on_node("2(x3),1", 2, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(distenv_tasks_on_node("2(x3),1", 3, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(distenv_tasks_on_node("4", 0, &n, &err), 0);
	assert_int_equal(n, 4);
	assert_int_equal(distenv_tasks_on_node("1(x10000)", 9999, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(distenv_tasks_on_node("2(x3),1", 4, &n, &err), -1);
	assert_string_equal(err.what, "'2(x3),1' lists 4 nodes, not node 4");
	assert_int_equal(distenv_tasks_on_node("2(x3", 0, &n, &err), -1);
	assert_string_equal(err.what, "'2(x3' is not a list like 2(x3),1");
	assert_int_equal(distenv_tasks_on_node("", 0, &n, &err), -1);
	assert_int_equal(distenv_tasks_on_node("a", 0, &n, &err), -1);
	assert_int_equal(distenv_tasks_on_node("2(x0)", 0, &n, &err), -1);
	assert_int_equal(distenv_tasks_on_node("2,", 1, &n, &err), -1);
}

static void srun_task_env(void **state)
{
	const char *env[] = {"SLURM_JOB_ID=812", "SLURM_STEP_ID=4",
			     "SLURM_STEP_NUM_NODES=2", "SLURM_NODEID=1",
			     "SLURM_STEP_NUM_TASKS=4", "SLURM_PROCID=3",
			     "SLURM_LOCALID=1", "SLURM_STEP_TASKS_PER_NODE=2(x2)",
			     "SLURMD_NODENAME=n2",
			     "SLURM_STEP_RESV_PORTS=21001-21002", NULL};
	struct distenv_step s;
	struct distenv_error err;

	(void)state;
	assert_int_equal(distenv_step_from_env(env, -1, &s, &err), 0);
	assert_int_equal(s.kind, DISTENV_STEP_TASKS);
	assert_int_equal(s.job_id, 812);
	assert_int_equal(s.step_id, 4);
	assert_int_equal(s.nnodes, 2);
	assert_int_equal(s.node_id, 1);
	assert_int_equal(s.ntasks, 4);
	assert_int_equal(s.procid, 3);
	assert_int_equal(s.localid, 1);
	assert_int_equal(s.local_ntasks, 2);
	assert_string_equal(s.node_name, "n2");
	assert_string_equal(s.resv_ports, "21001-21002");
	assert_string_equal(distenv_step_nodelist_var(&s), "SLURM_STEP_NODELIST");
}

static void batch_env(void **state)
{
	const char *env[] = {"SLURM_JOB_ID=812", "SLURM_JOB_NUM_NODES=3",
			     "SLURMD_NODENAME=n1", "SLURM_STEP_ID=9", NULL};
	struct distenv_step s;
	struct distenv_error err;

	(void)state;
	/* The glue says it is the batch step: a stray SLURM_STEP_ID from
	 * the submitting shell does not matter. */
	assert_int_equal(distenv_step_from_env(env, 1, &s, &err), 0);
	assert_int_equal(s.kind, DISTENV_STEP_BATCH);
	assert_int_equal(s.nnodes, 3);
	assert_string_equal(distenv_step_nodelist_var(&s), "SLURM_JOB_NODELIST");
}

static void missing_and_malformed(void **state)
{
	const char *none[] = {NULL};
	const char *bad[] = {"SLURM_JOB_ID=812", "SLURM_STEP_ID=0",
			     "SLURM_STEP_NUM_NODES=two", NULL};
	const char *no_tpn[] = {"SLURM_JOB_ID=1", "SLURM_STEP_ID=0",
				"SLURM_STEP_NUM_NODES=1", "SLURM_NODEID=0",
				"SLURM_STEP_NUM_TASKS=1", "SLURM_PROCID=0",
				"SLURM_LOCALID=0", NULL};
	struct distenv_step s;
	struct distenv_error err;

	(void)state;
	assert_int_equal(distenv_step_from_env(none, -1, &s, &err), -1);
	assert_string_equal(err.where, "SLURM_JOB_ID");
	assert_string_equal(err.what, "not set");
	assert_non_null(strstr(err.fix, "srun"));
	assert_int_equal(distenv_step_from_env(bad, -1, &s, &err), -1);
	assert_string_equal(err.where, "SLURM_STEP_NUM_NODES");
	assert_string_equal(err.what, "'two' is not a whole number");
	assert_int_equal(distenv_step_from_env(no_tpn, -1, &s, &err), -1);
	assert_string_equal(err.where, "SLURM_STEP_TASKS_PER_NODE");
	assert_int_equal(distenv_step_from_env(none, 0, &s, &err), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tasks_per_node),
		cmocka_unit_test(srun_task_env),
		cmocka_unit_test(batch_env),
		cmocka_unit_test(missing_and_malformed),
	};

	return cmocka_run_group_tests_name("step", tests, NULL, NULL);
}
