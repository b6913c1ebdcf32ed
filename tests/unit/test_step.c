/* Unit tests: step facts from a task's environment. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
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

/* The shell of salloc's interactive step, as the distenv command sees
 * it: 22.05 and 24.11 print the id unsigned, 26.05 signed. */
static void interactive_step_env(void **state)
{
	const char *env[] = {"SLURM_JOB_ID=11", "SLURM_JOB_NUM_NODES=2",
			     "SLURMD_NODENAME=n1", "SLURM_STEP_ID=4294967290",
			     "SLURM_STEP_NUM_NODES=1", NULL};
	const char *ids[] = {"4294967290", "-6", "4294967280"};
	struct distenv_step s;
	struct distenv_error err;
	char var[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		snprintf(var, sizeof(var), "SLURM_STEP_ID=%s", ids[i]);
		env[3] = var;
		assert_int_equal(distenv_step_from_env(env, -1, &s, &err), 0);
		assert_int_equal(s.kind, DISTENV_STEP_BATCH);
		assert_int_equal(s.nnodes, 2);
	}
	/* the last normal id, and a malformed negative one, stay steps */
	env[3] = "SLURM_STEP_ID=4294967279";
	assert_int_equal(distenv_step_from_env(env, -1, &s, &err), -1);
	assert_string_equal(err.where, "SLURM_NODEID");
	env[3] = "SLURM_STEP_ID=-0";
	assert_int_equal(distenv_step_from_env(env, -1, &s, &err), -1);
	assert_string_equal(err.where, "SLURM_STEP_ID");
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

/* Node n3, the second node of component 1 in a step over components 0
 * (n1) and 1 (n[2-3]) of a heterogeneous job 11 (component 1: job 12),
 * as 22.05 ran it. */
static void het_step_ids(void **state)
{
	const char *env[] = {"SLURM_HET_SIZE=2", "SLURM_JOB_ID=11",
			     "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=3",
			     "SLURM_NODEID=2", NULL};
	struct distenv_step_ids items = {12, 0, 2, 1, 0}, out;

	(void)state;
	distenv_step_ids_resolve(&items, env, &out);
	assert_int_equal(out.het, 1);
	assert_int_equal(out.job_id, 11);
	assert_int_equal(out.step_id, 0);
	assert_int_equal(out.nnodes, 3);
	assert_int_equal(out.node_id, 2);
	/* the leader's only node: its items already name job 11 */
	env[4] = "SLURM_NODEID=0";
	items = (struct distenv_step_ids){11, 0, 1, 0, 0};
	distenv_step_ids_resolve(&items, env, &out);
	assert_int_equal(out.het, 1);
	assert_int_equal(out.job_id, 11);
	assert_int_equal(out.nnodes, 3);
	assert_int_equal(out.node_id, 0);
}

/* srun --het-group=1: a step of component 1 (job 14) alone; the
 * environment names the leader 13, whose step 0 is another step. */
static void het_one_component_ids(void **state)
{
	const char *env[] = {"SLURM_HET_SIZE=2", "SLURM_JOB_ID=13",
			     "SLURM_STEP_ID=0", "SLURM_STEP_NUM_NODES=2",
			     "SLURM_NODEID=1", NULL};
	struct distenv_step_ids items = {14, 0, 2, 1, 0}, out;

	(void)state;
	distenv_step_ids_resolve(&items, env, &out);
	assert_int_equal(out.het, 0);
	assert_int_equal(out.job_id, 14);
	assert_int_equal(out.nnodes, 2);
	assert_int_equal(out.node_id, 1);
}

static void plain_and_malformed_ids(void **state)
{
	const char *plain[] = {"SLURM_JOB_ID=5", "SLURM_STEP_NUM_NODES=4",
			       "SLURM_NODEID=3", NULL};
	const char *bad_node[] = {"SLURM_HET_SIZE=2", "SLURM_JOB_ID=11",
				  "SLURM_STEP_NUM_NODES=3", "SLURM_NODEID=3",
				  NULL};
	const char *bad_job[] = {"SLURM_HET_SIZE=2", "SLURM_JOB_ID=x",
				 "SLURM_STEP_NUM_NODES=3", "SLURM_NODEID=1",
				 NULL};
	struct distenv_step_ids items = {5, 2, 2, 1, 0}, out;

	(void)state;
	/* no SLURM_HET_SIZE: the items, even where the counts differ */
	distenv_step_ids_resolve(&items, plain, &out);
	assert_int_equal(out.het, 0);
	assert_int_equal(out.job_id, 5);
	assert_int_equal(out.nnodes, 2);
	distenv_step_ids_resolve(&items, bad_node, &out);
	assert_int_equal(out.het, 0);
	assert_int_equal(out.job_id, 5);
	assert_int_equal(out.node_id, 1);
	distenv_step_ids_resolve(&items, bad_job, &out);
	assert_int_equal(out.het, 0);
	assert_int_equal(out.job_id, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tasks_per_node),
		cmocka_unit_test(srun_task_env),
		cmocka_unit_test(batch_env),
		cmocka_unit_test(missing_and_malformed),
		cmocka_unit_test(interactive_step_env),
		cmocka_unit_test(het_step_ids),
		cmocka_unit_test(het_one_component_ids),
		cmocka_unit_test(plain_and_malformed_ids),
	};

	return cmocka_run_group_tests_name("step", tests, NULL, NULL);
}
