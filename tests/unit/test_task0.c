/* Unit tests: when the node of task 0 is asked of slurmctld
 * (distenv_task0_moves), and that a derivation given the answer kept
 * once per step per node (struct distenv_task0) uses it, failure
 * included, without asking again: there is no slurm.conf here, so a
 * request would stall in libslurm and end the test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_sys.h"

/* Task 2 on n1, node index 0 of the 2-node step 91.5 whose hostfile put
 * task 0 on n2; the user exported the master and the interfaces, so no
 * network facts are gathered. dist: SLURM_DISTRIBUTION. */
static void task_env(const char **env, const char *dist)
{
	const char *base[] = {"SLURM_JOB_ID=91", "SLURM_STEP_ID=5",
			      "SLURM_STEP_NUM_NODES=2", "SLURM_NODEID=0",
			      "SLURM_STEP_NUM_TASKS=4", "SLURM_PROCID=2",
			      "SLURM_LOCALID=0",
			      "SLURM_STEP_TASKS_PER_NODE=2(x2)",
			      "SLURMD_NODENAME=n1", "SLURM_STEP_NODELIST=n[1-2]",
			      "SLURM_STEP_RESV_PORTS=21001-21002",
			      "MASTER_ADDR=10.91.0.2",
			      "NCCL_SOCKET_IFNAME=eth0", "GLOO_SOCKET_IFNAME=eth0",
			      dist, NULL};

	memcpy(env, base, sizeof(base));
}

static void site_req(struct distenv_site *site, struct distenv_request *req,
		     enum distenv_mode mode)
{
	distenv_site_defaults(site);
	memset(req, 0, sizeof(*req));
	req->mode = mode;
}

static void asked_only_for_arbitrary_tasks_steps(void **state)
{
	struct distenv_site site;
	struct distenv_request req;
	const char *arb[] = {"SLURM_DISTRIBUTION=arbitrary", NULL};
	const char *arb_pack[] = {"SLURM_DISTRIBUTION=arbitrary,Pack", NULL};
	const char *block[] = {"SLURM_DISTRIBUTION=block", NULL};
	const char *none[] = {NULL};

	(void)state;
	site_req(&site, &req, DISTENV_MODE_TASKS);
	assert_string_equal(distenv_task0_moves(&site, &req, 0, 2, arb),
			    "arbitrary");
	assert_string_equal(distenv_task0_moves(&site, &req, 0, 2, arb_pack),
			    "arbitrary,Pack");
	/* block, cyclic and plane start task 0 on node index 0 */
	assert_null(distenv_task0_moves(&site, &req, 0, 2, block));
	assert_null(distenv_task0_moves(&site, &req, 0, 2, none));
	/* one node, or the batch script: task 0 is here */
	assert_null(distenv_task0_moves(&site, &req, 0, 1, arb));
	assert_null(distenv_task0_moves(&site, &req, 1, 2, arb));
	/* torchrun numbers the nodes itself: node index 0 is the master */
	site_req(&site, &req, DISTENV_MODE_TORCHRUN);
	assert_null(distenv_task0_moves(&site, &req, 0, 2, arb));
	/* a site default of tasks mode counts as the request does */
	site_req(&site, &req, DISTENV_MODE_UNSET);
	site.default_mode = DISTENV_MODE_TASKS;
	assert_string_equal(distenv_task0_moves(&site, &req, 0, 2, arb),
			    "arbitrary");
}

/* A derivation for task_env(dist) in tasks mode, given the kept
 * answer task0; its result. */
struct derived {
	int rc;
	struct distenv_step step;
	struct distenv_vars vars;
	struct distenv_error err;
	const char *env[16];
};

static void derive_kept(struct derived *d, const char *dist,
			const struct distenv_task0 *task0)
{
	struct distenv_site site;
	struct distenv_request req;

	memset(d, 0, sizeof(*d));
	site_req(&site, &req, DISTENV_MODE_TASKS);
	task_env(d->env, dist);
	d->rc = distenv_derive_for_task_topo(&site, &req, d->env, 0, NULL, NULL,
					     NULL, task0, &d->step, &d->vars,
					     &d->err);
}

static void kept_answer_names_the_master(void **state)
{
	static struct derived d;
	struct distenv_task0 task0;

	(void)state;
	memset(&task0, 0, sizeof(task0));
	snprintf(task0.host, sizeof(task0.host), "n2");
	task0.node_id = 1;
	derive_kept(&d, "SLURM_DISTRIBUTION=arbitrary", &task0);
	assert_int_equal(d.rc, 0);
	assert_string_equal(d.step.master_host, "n2");
	assert_int_equal(d.step.master_node_id, 1);
	assert_string_equal(d.step.master_dist, "arbitrary");
	distenv_vars_free(&d.vars);
}

static void kept_failure_fails_the_task(void **state)
{
	static struct derived d;
	struct distenv_task0 task0;

	(void)state;
	memset(&task0, 0, sizeof(task0));
	task0.rc = distenv_error_set(&task0.err, "SLURM_DISTRIBUTION",
				     "export MASTER_ADDR as the host of task 0",
				     "cannot get step 91.5's task layout from "
				     "slurmctld (Connection refused)");
	derive_kept(&d, "SLURM_DISTRIBUTION=arbitrary", &task0);
	assert_int_equal(d.rc, -1);
	assert_string_equal(d.err.where, "SLURM_DISTRIBUTION");
	assert_string_equal(d.err.what, "cannot get step 91.5's task layout "
					"from slurmctld (Connection refused)");
	assert_string_equal(d.err.fix,
			    "export MASTER_ADDR as the host of task 0");
	assert_int_equal(d.vars.count, 0);
}

/* A block step never looks at the kept answer: the master is node
 * index 0, the first of the node list. */
static void block_step_ignores_it(void **state)
{
	static struct derived d;
	struct distenv_task0 task0;

	(void)state;
	memset(&task0, 0, sizeof(task0));
	task0.rc = distenv_error_set(&task0.err, "SLURM_DISTRIBUTION", NULL,
				     "not to be seen");
	derive_kept(&d, "SLURM_DISTRIBUTION=block", &task0);
	assert_int_equal(d.rc, 0);
	assert_string_equal(d.step.master_host, "n1");
	assert_int_equal(d.step.master_node_id, 0);
	assert_null(d.step.master_dist);
	distenv_vars_free(&d.vars);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(asked_only_for_arbitrary_tasks_steps),
		cmocka_unit_test(kept_answer_names_the_master),
		cmocka_unit_test(kept_failure_fails_the_task),
		cmocka_unit_test(block_step_ignores_it),
	};

	return cmocka_run_group_tests_name("task0", tests, NULL, NULL);
}
