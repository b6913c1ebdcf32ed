/* Unit tests: a launch line whose literal node rank, node count,
 * processes per node or master contradicts the step fails it on the
 * node that sees it (distenv_launch_line.h); values that agree, and
 * values the task's shell expands, pass. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_launch_line.h"

static struct distenv_error err, warn;

/* Node index node_id of a 2-node step on n1 and n2, the master n1 at
 * 10.95.0.1, one GPU per node. */
static struct distenv_launch_facts facts(uint32_t node_id)
{
	struct distenv_launch_facts f;

	memset(&f, 0, sizeof(f));
	f.nnodes = 2;
	f.node_id = node_id;
	f.node_name = node_id ? "n2" : "n1";
	f.master_host = "n1";
	f.master_addr = "10.95.0.1";
	f.nproc = "1";
	return f;
}

static int check_f(const struct distenv_launch_facts *f, const char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	distenv_error_clear(&err);
	return distenv_launch_line_check(argc, (char *const *)argv, f, &err,
					 &warn);
}

/* The command on node index 1 (n2). */
static int check(const char **argv)
{
	struct distenv_launch_facts f = facts(1);

	return check_f(&f, argv);
}

static void assert_has(const char *text, const char *part)
{
	if (!strstr(text, part))
		fail_msg("\"%s\" does not hold \"%s\"", text, part);
}

static void torchrun_node_rank(void **state)
{
	const char *space[] = { "torchrun", "--nnodes",	   "2",
				"--node_rank", "0", "x.py", NULL };
	const char *eq[] = { "torchrun", "--node_rank=0", "x.py", NULL };
	const char *hyphen[] = { "torchrun", "--node-rank", "0", "x.py", NULL };
	const char *agrees[] = { "torchrun", "--node_rank", "1", "x.py", NULL };

	(void)state;
	assert_int_equal(check(space), -1);
	assert_string_equal(err.where, "--node_rank (the step's command)");
	assert_has(err.what, "torchrun --node_rank 0 on n2 (node index 1 of 2)");
	assert_has(err.what, "the step needs --node_rank 1 on this node");
	assert_has(err.fix, "PET_NODE_RANK");
	assert_int_equal(check(eq), -1);
	assert_has(err.what, "--node_rank 0");
	assert_int_equal(check(hyphen), -1);
	assert_has(err.what, "--node-rank 0");
	assert_int_equal(check(agrees), 0);
	assert_false(distenv_error_is_set(&warn));
}

/* The batch script's double quotes expanded $SLURM_NODEID once
 * (huggingface/accelerate issue 2816); in single quotes each node's
 * shell expands its own. */
static void bash_c_script(void **state)
{
	const char *expanded[] = { "bash", "-c",
				   "cd /w && torchrun --nnodes 2 --node_rank 0 "
				   "--nproc_per_node 1 x.py",
				   NULL };
	const char *own[] = { "bash", "-c",
			      "torchrun --nnodes 2 --node_rank $SLURM_NODEID "
			      "x.py",
			      NULL };
	const char *lc[] = { "/bin/sh", "-lc", "exec torchrun --node_rank='0' x.py",
			     NULL };
	const char *nested[] = { "bash", "-c",
				 "bash -c \"torchrun --node_rank 0 x.py\"",
				 NULL };

	(void)state;
	assert_int_equal(check(expanded), -1);
	assert_has(err.what, "--node_rank 0");
	assert_int_equal(check(own), 0);
	assert_int_equal(check(lc), -1);
	assert_int_equal(check(nested), -1);
}

static void python_module_forms(void **state)
{
	const char *run[] = { "python3", "-u", "-m", "torch.distributed.run",
			      "--node_rank", "0", "x.py", NULL };
	const char *launch[] = { "python", "-m", "torch.distributed.launch",
				 "--node_rank=0", "x.py", NULL };
	const char *script[] = { "python3", "x.py", "--node_rank", "0", NULL };

	(void)state;
	assert_int_equal(check(run), -1);
	assert_int_equal(check(launch), -1);
	assert_int_equal(check(script), 0);
}

static void nnodes(void **state)
{
	const char *more[] = { "torchrun", "--nnodes", "3", "x.py", NULL };
	const char *eq[] = { "torchrun", "--nnodes=1", "x.py", NULL };
	const char *range_out[] = { "torchrun", "--nnodes=3:4", "x.py", NULL };
	const char *range_in[] = { "torchrun", "--nnodes", "1:4", "x.py",
				   NULL };
	const char *agrees[] = { "torchrun", "--nnodes=2", "x.py", NULL };

	(void)state;
	assert_int_equal(check(more), -1);
	assert_string_equal(err.where, "--nnodes (the step's command)");
	assert_has(err.what, "torchrun --nnodes 3 on n2");
	assert_has(err.what, "so it needs --nnodes 2");
	assert_int_equal(check(eq), -1);
	assert_int_equal(check(range_out), -1);
	assert_int_equal(check(range_in), 0);
	assert_int_equal(check(agrees), 0);
}

/* Workers per node: a warning, not an error; auto and gpu pass. */
static void nproc_per_node(void **state)
{
	const char *more[] = { "torchrun", "--nproc_per_node", "4", "x.py",
			       NULL };
	const char *eq[] = { "torchrun", "--nproc-per-node=4", "x.py", NULL };
	const char *gpu[] = { "torchrun", "--nproc_per_node=gpu", "x.py",
			      NULL };
	const char *agrees[] = { "torchrun", "--nproc_per_node", "1", "x.py",
				 NULL };

	(void)state;
	assert_int_equal(check(more), 0);
	assert_true(distenv_error_is_set(&warn));
	assert_has(warn.what, "--nproc_per_node 4");
	assert_has(warn.what, "NPROC_PER_NODE=1");
	assert_int_equal(check(eq), 0);
	assert_has(warn.what, "--nproc-per-node 4");
	assert_int_equal(check(gpu), 0);
	assert_false(distenv_error_is_set(&warn));
	assert_int_equal(check(agrees), 0);
	assert_false(distenv_error_is_set(&warn));
}

static void master_addr(void **state)
{
	const char *own[] = { "torchrun", "--master_addr", "n2", "x.py", NULL };
	const char *fqdn[] = { "torchrun", "--master-addr=n2.cluster", "x.py",
			       NULL };
	const char *name[] = { "torchrun", "--master_addr", "n1", "x.py",
			       NULL };
	const char *addr[] = { "torchrun", "--master_addr=10.95.0.1", "x.py",
			       NULL };
	const char *unknown[] = { "torchrun", "--master_addr", "10.1.2.3",
				  "x.py", NULL };
	const char *lo[] = { "torchrun", "--master_addr", "localhost", "x.py",
			     NULL };

	(void)state;
	assert_int_equal(check(own), -1);
	assert_string_equal(err.where, "--master_addr (the step's command)");
	assert_has(err.what, "n2 is this node");
	assert_has(err.what, "n1 (node index 0, MASTER_ADDR 10.95.0.1)");
	assert_int_equal(check(fqdn), -1);
	assert_int_equal(check(name), 0);
	assert_int_equal(check(addr), 0);
	assert_int_equal(check(unknown), 0);
	assert_int_equal(check(lo), -1);
	assert_has(err.what, "loopback");
}

/* --rdzv_endpoint=$(hostname) in the task's shell: each node its own
 * (NVIDIA/nvidia-resiliency-ext issue 142); right on the master only. */
static void rdzv_endpoint_hostname(void **state)
{
	const char *argv[] = { "bash", "-c",
			       "torchrun --rdzv_backend=c10d "
			       "--rdzv_endpoint=$(hostname):29400 x.py",
			       NULL };
	const char *env[] = { "bash", "-c",
			      "torchrun --rdzv-backend c10d --rdzv-endpoint "
			      "${HOSTNAME}:29400 x.py",
			      NULL };
	struct distenv_launch_facts master = facts(0);

	(void)state;
	assert_int_equal(check(argv), -1);
	assert_string_equal(err.where, "--rdzv_endpoint (the step's command)");
	assert_has(err.what, "$(hostname) is this node");
	assert_int_equal(check(env), -1);
	assert_int_equal(check_f(&master, argv), 0);
}

static void standalone(void **state)
{
	const char *argv[] = { "torchrun", "--standalone", "--nproc_per_node=1",
			       "x.py", NULL };

	(void)state;
	assert_int_equal(check(argv), -1);
	assert_string_equal(err.where, "--standalone (the step's command)");
	assert_has(err.what, "a rendezvous store of its own");
}

/* c10d hands out node ranks: --node_rank is ignored, a warning. */
static void c10d_node_rank_warns(void **state)
{
	const char *eq[] = { "torchrun", "--rdzv_backend=c10d", "--node_rank",
			     "0", "x.py", NULL };
	const char *space[] = { "torchrun", "--rdzv-backend", "c10d",
				"--node_rank=0", "x.py", NULL };
	const char *plain[] = { "torchrun", "--node_rank", "0", "x.py", NULL };
	struct distenv_launch_facts f = facts(1);

	(void)state;
	assert_int_equal(check(eq), 0);
	assert_true(distenv_error_is_set(&warn));
	assert_has(warn.what, "ignored");
	assert_int_equal(check(space), 0);
	assert_true(distenv_error_is_set(&warn));
	/* PET_RDZV_BACKEND=c10d (distenv's elastic mode) does the same */
	f.rdzv_backend = "c10d";
	assert_int_equal(check_f(&f, plain), 0);
	assert_true(distenv_error_is_set(&warn));
}

static void accelerate_launch(void **state)
{
	const char *rank[] = { "accelerate", "launch", "--multi_gpu",
			       "--machine_rank", "0", "x.py", NULL };
	const char *hyphen[] = { "accelerate", "launch", "--machine-rank=0",
				 "x.py", NULL };
	const char *machines[] = { "accelerate", "launch", "--num_machines=3",
				   "x.py", NULL };
	const char *ip[] = { "accelerate", "launch", "--main_process_ip", "n2",
			     "x.py", NULL };
	const char *agrees[] = { "accelerate", "launch", "--machine_rank", "1",
				 "--num_machines", "2", "--main_process_ip",
				 "10.95.0.1", "x.py", NULL };

	(void)state;
	assert_int_equal(check(rank), -1);
	assert_string_equal(err.where, "--machine_rank (the step's command)");
	assert_has(err.what, "accelerate launch --machine_rank 0 on n2");
	assert_has(err.fix, "\"$NODE_RANK\"");
	assert_int_equal(check(hyphen), -1);
	assert_int_equal(check(machines), -1);
	assert_int_equal(check(ip), -1);
	assert_int_equal(check(agrees), 0);
}

static void deepspeed_launcher(void **state)
{
	const char *rank[] = { "deepspeed", "--no_ssh", "--node_rank", "0",
			       "x.py", NULL };
	const char *nodes[] = { "deepspeed", "--num_nodes=3", "x.py", NULL };
	const char *addr[] = { "deepspeed", "--master_addr=n2", "x.py", NULL };
	const char *unset[] = { "deepspeed", "--node_rank", "-1",
				"--num_nodes", "-1", "x.py", NULL };
	const char *agrees[] = { "deepspeed", "--no_ssh", "--node_rank=1",
				 "--num_nodes", "2", "--master_addr", "n1",
				 "x.py", NULL };

	(void)state;
	assert_int_equal(check(rank), -1);
	assert_has(err.what, "deepspeed --node_rank 0 on n2");
	assert_int_equal(check(nodes), -1);
	assert_int_equal(check(addr), -1);
	assert_int_equal(check(unset), 0);
	assert_int_equal(check(agrees), 0);
}

/* The script's own arguments are not the launcher's; llamafactory-cli
 * takes none; a single-node step has nothing to contradict. */
static void not_judged(void **state)
{
	const char *after[] = { "torchrun", "--nproc_per_node=1", "x.py",
				"--node_rank", "0", NULL };
	const char *unknown_flag[] = { "torchrun", "--some-new-flag", "x.py",
				       "--node_rank", "0", NULL };
	const char *lf[] = { "llamafactory-cli", "train", "--node_rank", "0",
			     NULL };
	const char *echo[] = { "bash", "-c",
			       "echo torchrun --node_rank 0 x.py; printf '%s' "
			       "'torchrun --nnodes 5'",
			       NULL };
	const char *rank[] = { "torchrun", "--node_rank", "0", "x.py", NULL };
	struct distenv_launch_facts one = facts(0);

	(void)state;
	assert_int_equal(check(after), 0);
	assert_int_equal(check(unknown_flag), 0);
	assert_int_equal(check(lf), 0);
	assert_int_equal(check(echo), 0);
	one.nnodes = 1;
	one.node_id = 0;
	rank[2] = "5";
	assert_int_equal(check_f(&one, rank), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(torchrun_node_rank),
		cmocka_unit_test(bash_c_script),
		cmocka_unit_test(python_module_forms),
		cmocka_unit_test(nnodes),
		cmocka_unit_test(nproc_per_node),
		cmocka_unit_test(master_addr),
		cmocka_unit_test(rdzv_endpoint_hostname),
		cmocka_unit_test(standalone),
		cmocka_unit_test(c10d_node_rank_warns),
		cmocka_unit_test(accelerate_launch),
		cmocka_unit_test(deepspeed_launcher),
		cmocka_unit_test(not_judged),
	};

	return cmocka_run_group_tests_name("launch_line", tests, NULL, NULL);
}
