/* Unit tests: exported launch variables that contradict the step fail
 * it, the same way on every node; values that agree pass. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_user_check.h"
#include "net_fixture.h"

struct world {
	struct distenv_step step;
	struct net_fixture fx;
	struct distenv_error err;
	const char *env[8];
};

/* Node index node_id of a 2-node step 77.3, one task per node; the
 * network of the namespace cluster, the user's MASTER_ADDR resolving to
 * master_ip. */
static struct world *world_new(uint32_t node_id, const char *kv,
			       const char *master_ip)
{
	static struct world w;

	memset(&w, 0, sizeof(w));
	w.env[0] = kv;
	fx_worker_step(&w.step, 77, 3, node_id ? "n2" : "n1", "n1", w.env);
	w.step.node_id = node_id;
	w.step.procid = node_id;
	fx_cluster_node(&w.fx, (int)node_id + 1, "n1");
	if (master_ip)
		fx_addr(&w.fx, master_ip, "eth0");
	distenv_error_clear(&w.err);
	return &w;
}

static int check(struct world *w, enum distenv_mode mode)
{
	return distenv_user_check(mode, &w->step, &w->fx.net, NULL, &w->err);
}

/* The migrating user's leftover NODE_RANK=0 fails on both nodes of a
 * 2-node step, also on node index 0 where it happens to agree. */
static void node_rank_fails_on_every_node(void **state)
{
	uint32_t node;

	(void)state;
	for (node = 0; node < 2; node++) {
		struct world *w = world_new(node, "NODE_RANK=0", NULL);

		assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), -1);
		assert_string_equal(w->err.where, "NODE_RANK (exported)");
		assert_string_equal(
			w->err.what,
			"you exported NODE_RANK=0, the step says each of its 2 "
			"nodes has its own, 0 to 1 (SLURM_NODEID): one exported "
			"value is wrong for all of them but one, and the "
			"rendezvous waits for the missing ones");
		assert_string_equal(w->err.fix, "unset it: distenv derives it "
						"for every node and task");
	}
}

static void rank_in_torchrun_mode(void **state)
{
	struct world *w = world_new(1, "RANK=0", NULL);

	(void)state;
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), -1);
	assert_string_equal(w->err.where, "RANK (exported)");
	assert_non_null(strstr(w->err.what, "LLaMA-Factory <= 0.9.0 reads RANK"));
	/* Elastic: c10d hands out the node ranks, so it does not matter. */
	w = world_new(1, "RANK=0", NULL);
	assert_int_equal(check(w, DISTENV_MODE_ELASTIC), 0);
}

/* On one node NODE_RANK=0 agrees and is fine; 1 is not. */
static void single_node_agreeing_value_passes(void **state)
{
	struct world *w = world_new(0, "NODE_RANK=0", NULL);

	(void)state;
	w->step.nnodes = 1;
	w->step.ntasks = 1;
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), 0);
	w = world_new(0, "NODE_RANK=1", NULL);
	w->step.nnodes = 1;
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), -1);
	assert_string_equal(w->err.what, "you exported NODE_RANK=1, the step "
					 "says 0 (SLURM_NODEID)");
}

static void nnodes_must_match(void **state)
{
	struct world *w = world_new(1, "NNODES=4", NULL);

	(void)state;
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), -1);
	assert_string_equal(w->err.what,
			    "you exported NNODES=4, the step says 2 "
			    "(SLURM_STEP_NUM_NODES: nodes in the step)");
	w = world_new(1, "NNODES=2", NULL);
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), 0);
	/* The batch script: the allocation's node count. */
	w = world_new(0, "NNODES=3", NULL);
	w->step.kind = DISTENV_STEP_BATCH;
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), -1);
	assert_non_null(strstr(w->err.what, "SLURM_JOB_NUM_NODES"));
}

static void tasks_mode_ranks(void **state)
{
	struct world *w = world_new(1, "WORLD_SIZE=8", NULL);

	(void)state;
	assert_int_equal(check(w, DISTENV_MODE_TASKS), -1);
	assert_string_equal(w->err.what,
			    "you exported WORLD_SIZE=8, the step says 2 "
			    "(SLURM_STEP_NUM_TASKS: tasks in the step)");
	w = world_new(1, "RANK=1", NULL);
	assert_int_equal(check(w, DISTENV_MODE_TASKS), -1);
	assert_non_null(strstr(w->err.what, "each of its 2 tasks has its own"));
	/* One task per node: LOCAL_RANK=0 agrees everywhere. */
	w = world_new(1, "LOCAL_RANK=0", NULL);
	assert_int_equal(check(w, DISTENV_MODE_TASKS), 0);
	/* Four tasks on two nodes: some node has two, on every node. */
	w = world_new(0, "LOCAL_RANK=0", NULL);
	w->step.ntasks = 4;
	assert_int_equal(check(w, DISTENV_MODE_TASKS), -1);
	assert_non_null(strstr(w->err.what, "some node runs several tasks"));
}

static void master_port_range(void **state)
{
	struct world *w = world_new(1, "MASTER_PORT=80", NULL);

	(void)state;
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), -1);
	assert_string_equal(w->err.where, "MASTER_PORT (exported)");
	assert_non_null(strstr(w->err.what, "MASTER_PORT=80, which is not a "
					    "port in 1024-65535"));
	w = world_new(1, "MASTER_PORT=29500x", NULL);
	assert_int_equal(check(w, DISTENV_MODE_TASKS), -1);
	w = world_new(1, "MASTER_PORT=29500", NULL);
	assert_int_equal(check(w, DISTENV_MODE_TASKS), 0);
}

/* An exported loopback address is named as the user's, with "unset it",
 * not the advice for /etc/hosts that a resolved name gets. */
static void master_addr_loopback(void **state)
{
	const char *kv[] = {"MASTER_ADDR=127.0.0.1", "MASTER_ADDR=localhost",
			    "MASTER_ADDR=::1"};
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		struct world *w = world_new(1, kv[i], NULL);

		assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), -1);
		assert_string_equal(w->err.where, "MASTER_ADDR (exported)");
		assert_non_null(strstr(w->err.what, "which is loopback: in a "
						    "2-node step"));
		assert_non_null(strstr(w->err.fix, "unset it"));
	}
	/* One node: loopback is fine. */
	{
		struct world *w = world_new(0, kv[0], NULL);

		w->step.nnodes = 1;
		assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), 0);
	}
}

/* Node index 0 hosts the store; the user's MASTER_ADDR must be one of
 * its addresses (here n2's 10.77.0.2 is not n1's). */
static void master_addr_not_node_zero(void **state)
{
	struct world *w = world_new(0, "MASTER_ADDR=n2", "10.77.0.2");

	(void)state;
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), -1);
	assert_string_equal(w->err.what,
			    "you exported MASTER_ADDR=n2, the step says node "
			    "index 0 is n1, where the rendezvous store listens, "
			    "and n2 is not one of its addresses");
	w = world_new(0, "MASTER_ADDR=n1", "10.77.0.1");
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), 0);
	/* On n2 the master's address is no address of n2: passes. */
	w = world_new(1, "MASTER_ADDR=n1", "10.77.0.1");
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), 0);
}

/* A node other than the master's, given its own address as MASTER_ADDR
 * (hiyouga/LlamaFactory issue 7326), fails naming the address, the
 * master node and the fix, whatever the mode; its master's address
 * passes (above). */
static void master_addr_own_address_off_master(void **state)
{
	static const enum distenv_mode modes[] = { DISTENV_MODE_TORCHRUN,
						   DISTENV_MODE_TASKS,
						   DISTENV_MODE_ELASTIC };
	struct world *w;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		w = world_new(1, "MASTER_ADDR=10.77.0.2", "10.77.0.2");
		assert_int_equal(check(w, modes[i]), -1);
		assert_string_equal(w->err.where, "MASTER_ADDR (exported)");
		assert_string_equal(
			w->err.what,
			"you exported MASTER_ADDR=10.77.0.2, an address of this "
			"node (n2, node index 1, on eth0), but the rendezvous "
			"store listens on n1 (node index 0): this node would "
			"wait for a store of its own that nobody starts, and "
			"the rendezvous never forms");
		assert_string_equal(
			w->err.fix,
			"unset it: distenv derives the address of n1 (node "
			"index 0) for every node; or export that node's "
			"address, the same on every node");
	}
	/* Its host name, as resolved here; any interface of the node. */
	w = world_new(1, "MASTER_ADDR=n2", "10.99.2.1");
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), -1);
	assert_non_null(strstr(w->err.what,
			       "you exported MASTER_ADDR=n2, which resolves "
			       "here to 10.99.2.1, an address of this node "
			       "(n2, node index 1, on eth1)"));
	/* The site's master_name: rule names what distenv resolves. */
	w = world_new(1, "MASTER_ADDR=n2", "10.77.0.2");
	assert_int_equal(distenv_user_check(DISTENV_MODE_TORCHRUN, &w->step,
					    &w->fx.net, "n1-ib", &w->err),
			 -1);
	assert_non_null(strstr(w->err.fix, "the address of n1-ib (node "
					   "index 0)"));
	/* A single-node step, or the batch script: nothing to check. */
	w = world_new(1, "MASTER_ADDR=10.77.0.2", "10.77.0.2");
	w->step.nnodes = 1;
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), 0);
	w = world_new(1, "MASTER_ADDR=10.77.0.2", "10.77.0.2");
	w->step.kind = DISTENV_STEP_BATCH;
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), 0);
}

/* A host name /etc/hosts maps to 127.0.1.1 (Debian's installer) is this
 * node too: said as loopback, with the same fix. */
static void master_addr_own_name_loopback(void **state)
{
	struct world *w = world_new(1, "MASTER_ADDR=n2", "127.0.1.1");

	(void)state;
	assert_int_equal(check(w, DISTENV_MODE_TORCHRUN), -1);
	assert_non_null(strstr(w->err.what,
			       "you exported MASTER_ADDR=n2, which resolves "
			       "here to 127.0.1.1, a loopback address of this "
			       "node (n2, node index 1)"));
	assert_non_null(strstr(w->err.fix, "unset it: distenv derives"));
}

/* Tasks mode with task 0 on node index 1 (an arbitrary distribution):
 * node index 0 is not the master there, and the master node itself is
 * judged by the rule of the master's addresses. */
static void master_addr_own_when_task0_elsewhere(void **state)
{
	struct world *w = world_new(0, "MASTER_ADDR=10.77.0.1", "10.77.0.1");

	(void)state;
	w->step.master_node_id = 1;
	snprintf(w->step.node_name, sizeof(w->step.node_name), "n1");
	snprintf(w->step.master_host, sizeof(w->step.master_host), "n2");
	assert_int_equal(check(w, DISTENV_MODE_TASKS), -1);
	assert_non_null(strstr(w->err.what, "the rendezvous store listens on "
					    "n2 (node index 1)"));
	assert_non_null(strstr(w->err.fix, "the address of n2 (node index "
					   "1)"));
}


static void off_checks_nothing(void **state)
{
	struct world *w = world_new(1, "NODE_RANK=0", NULL);

	(void)state;
	assert_int_equal(check(w, DISTENV_MODE_OFF), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(node_rank_fails_on_every_node),
		cmocka_unit_test(rank_in_torchrun_mode),
		cmocka_unit_test(single_node_agreeing_value_passes),
		cmocka_unit_test(nnodes_must_match),
		cmocka_unit_test(tasks_mode_ranks),
		cmocka_unit_test(master_port_range),
		cmocka_unit_test(master_addr_loopback),
		cmocka_unit_test(master_addr_not_node_zero),
		cmocka_unit_test(master_addr_own_address_off_master),
		cmocka_unit_test(master_addr_own_name_loopback),
		cmocka_unit_test(master_addr_own_when_task0_elsewhere),
		cmocka_unit_test(off_checks_nothing),
	};

	return cmocka_run_group_tests_name("user_check", tests, NULL, NULL);
}
