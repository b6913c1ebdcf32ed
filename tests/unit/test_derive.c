/* Unit tests: the whole derivation, per mode, with user values kept. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "distenv_derive.h"
#include "distenv_env.h"
#include "distenv_format.h"
#include "distenv_gpus.h"
#include "distenv_ports.h"
/* room for the environment that the GPU and port cases build */
#define DERIVE_WORLD_ENV 32
#include "derive_world.h"
#include "net_fixture.h"


/* Node 2 (index 1) of a 2-node step 77.3, one task per node. */
static struct world *world_new(enum distenv_mode mode)
{
	static struct world w;

	memset(&w, 0, sizeof(w));
	distenv_site_defaults(&w.site);
	w.req.mode = mode;
	fx_worker_step(&w.step, 77, 3, "n2", "n1", w.env);
	fx_cluster_node(&w.fx, 2, "n1");
	fx_addr(&w.fx, "10.77.0.1", "eth0");
	return &w;
}

static void env_add(struct world *w, const char *kv)
{
	size_t i = 0;

	while (w->env[i])
		i++;
	w->env[i] = kv;
}

static int derive(struct world *w)
{
	return distenv_derive(&w->site, &w->req, &w->step, &w->fx.net, &w->vars,
			      &w->err);
}

/* A world of mode whose task environment also holds the given
 * "NAME=value" entries (NULL: none), derived; derive()'s result in
 * *rc. */
static struct world *derived_with(enum distenv_mode mode, int *rc,
				  const char *a, const char *b, const char *c)
{
	struct world *w = world_new(mode);
	const char *kv[] = {a, b, c};
	size_t i;

	for (i = 0; i < 3; i++)
		if (kv[i])
			env_add(w, kv[i]);
	*rc = derive(w);
	return w;
}

/* derived_with two entries, which must fail at where (NULL: any). */
static struct world *refused(enum distenv_mode mode, const char *where,
			     const char *a, const char *b)
{
	int rc;
	struct world *w = derived_with(mode, &rc, a, b, NULL);

	assert_int_equal(rc, -1);
	if (where)
		assert_string_equal(w->err.where, where);
	return w;
}

static const char *val(struct world *w, const char *name)
{
	return distenv_vars_value(&w->vars, name);
}

static void torchrun_two_nodes(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);
	const char *order[] = {"NNODES", "NODE_RANK", "RANK", "NPROC_PER_NODE",
			       "MASTER_ADDR", "MASTER_PORT", "FORCE_TORCHRUN",
			       "PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE",
			       "PET_MASTER_ADDR", "PET_MASTER_PORT",
			       "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME",
			       "DISTENV_SET"};
	size_t i;

	(void)state;
	env_add(w, "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7");
	w->step.resv_ports = "21001-21002";
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.count, sizeof(order) / sizeof(order[0]));
	for (i = 0; i < w->vars.count; i++)
		assert_string_equal(w->vars.items[i].name, order[i]);
	assert_string_equal(val(w, "NNODES"), "2");
	assert_string_equal(val(w, "NODE_RANK"), "1");
	assert_string_equal(val(w, "RANK"), "1");
	assert_string_equal(val(w, "NPROC_PER_NODE"), "8");
	assert_string_equal(val(w, "MASTER_ADDR"), "10.77.0.1");
	assert_string_equal(val(w, "MASTER_PORT"), "21001");
	assert_string_equal(val(w, "FORCE_TORCHRUN"), "1");
	assert_string_equal(val(w, "PET_NNODES"), "2");
	assert_string_equal(val(w, "PET_NODE_RANK"), "1");
	assert_string_equal(val(w, "PET_NPROC_PER_NODE"), "8");
	assert_string_equal(val(w, "PET_MASTER_ADDR"), "10.77.0.1");
	assert_string_equal(val(w, "PET_MASTER_PORT"), "21001");
	assert_string_equal(val(w, "NCCL_SOCKET_IFNAME"), "=eth0");
	assert_string_equal(val(w, "GLOO_SOCKET_IFNAME"), "eth0");
	assert_null(val(w, "WORLD_SIZE")); /* torchrun sets it for workers */
	assert_non_null(strstr(distenv_vars_find(&w->vars, "NODE_RANK")->reason,
			       "LLaMA-Factory >= 0.9.1"));
	assert_non_null(strstr(distenv_vars_find(&w->vars, "RANK")->reason,
			       "LLaMA-Factory <= 0.9.0"));
	assert_non_null(strstr(distenv_vars_find(&w->vars, "NPROC_PER_NODE")->reason,
			       "CUDA_VISIBLE_DEVICES"));
	distenv_vars_free(&w->vars);
}

/* --distenv=elastic on node index 1: torchrun mode's variables, then the
 * c10d rendezvous: an RDZV_ID of job, step and start, the node range,
 * the restarts, and what a bare torchrun reads; the store on node 0. */
static void elastic_two_nodes(void **state)
{
	struct world *w = world_new(DISTENV_MODE_ELASTIC);
	const char *order[] = {"NNODES", "NODE_RANK", "RANK", "NPROC_PER_NODE",
			       "MASTER_ADDR", "MASTER_PORT", "FORCE_TORCHRUN",
			       "RDZV_ID", "MIN_NNODES", "MAX_NNODES",
			       "MAX_RESTARTS", "PET_NNODES",
			       "PET_NPROC_PER_NODE", "PET_RDZV_BACKEND",
			       "PET_RDZV_ENDPOINT", "PET_RDZV_ID",
			       "PET_MAX_RESTARTS", "PET_RDZV_CONF",
			       "PET_LOCAL_ADDR", "NCCL_SOCKET_IFNAME",
			       "GLOO_SOCKET_IFNAME", "DISTENV_SET"};
	size_t i;

	(void)state;
	w->step.resv_ports = "21001-21002";
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.count, sizeof(order) / sizeof(order[0]));
	for (i = 0; i < w->vars.count; i++)
		assert_string_equal(w->vars.items[i].name, order[i]);
	assert_string_equal(val(w, "RDZV_ID"), "77.3.0");
	assert_string_equal(val(w, "MIN_NNODES"), "2");
	assert_string_equal(val(w, "MAX_NNODES"), "2");
	assert_string_equal(val(w, "MAX_RESTARTS"), "0");
	assert_string_equal(val(w, "PET_NNODES"), "2:2");
	assert_string_equal(val(w, "PET_RDZV_BACKEND"), "c10d");
	assert_string_equal(val(w, "PET_RDZV_ENDPOINT"), "10.77.0.1:21001");
	assert_string_equal(val(w, "PET_RDZV_ID"), "77.3.0");
	assert_string_equal(val(w, "PET_RDZV_CONF"), "is_host=0");
	assert_string_equal(val(w, "PET_LOCAL_ADDR"), "10.77.0.2");
	assert_null(val(w, "PET_NODE_RANK")); /* c10d hands out node ranks */
	/* no restarts, a fixed node count: the shared store is fine */
	assert_null(val(w, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"));
	assert_int_equal(w->vars.n_warnings, 0); /* one node count */
	distenv_vars_free(&w->vars);

	/* a requeued start, a node range and restarts */
	w = world_new(DISTENV_MODE_ELASTIC);
	env_add(w, "SLURM_RESTART_COUNT=2");
	w->req.min_nodes = 1;
	w->req.max_nodes = 4;
	w->req.max_restarts = 3;
	w->req.max_restarts_given = 1;
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "RDZV_ID"), "77.3.2");
	assert_string_equal(val(w, "PET_NNODES"), "1:4");
	/* a range may change the DP world size: ZeRO checkpoints refuse it */
	assert_int_equal(w->vars.n_warnings, 1);
	assert_string_equal(w->vars.warnings[0].where, "--distenv-nodes=1:4");
	assert_non_null(strstr(w->vars.warnings[0].what, "DP world size"));
	assert_non_null(strstr(w->vars.warnings[0].fix, "MIN_NNODES = MAX_NNODES"));
	assert_string_equal(val(w, "PET_MAX_RESTARTS"), "3");
	assert_string_equal(distenv_vars_find(&w->vars, "MAX_RESTARTS")->reason,
			    "--distenv-max-restarts");
	/* workers may restart: each attempt gets a store of its own */
	assert_string_equal(val(w, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"), "1");
	assert_non_null(strstr(distenv_vars_find(&w->vars, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE")->reason,
			       "MAX_RESTARTS=3, nodes 1:4"));
	distenv_vars_free(&w->vars);

	/* --distenv-check=off: no warning for a range */
	w = world_new(DISTENV_MODE_ELASTIC);
	w->req.min_nodes = 1;
	w->req.max_nodes = 4;
	w->req.check = DISTENV_CHECK_OFF;
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.n_warnings, 0);
	distenv_vars_free(&w->vars);

	/* the user's value is kept */
	w = world_new(DISTENV_MODE_ELASTIC);
	env_add(w, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=0");
	w->req.max_restarts = 1;
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE"), "0");
	assert_int_equal(distenv_vars_find(&w->vars, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE")->action,
			 DISTENV_ACTION_KEPT);
	distenv_vars_free(&w->vars);

	/* a range the step's 2 nodes are outside of: refused */
	w = world_new(DISTENV_MODE_ELASTIC);
	w->req.min_nodes = 3;
	w->req.max_nodes = 4;
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where, "--distenv-nodes=3:4");
	assert_non_null(strstr(w->err.what, "the step has 2 nodes"));
}

/* torchrun mode with RDZV_ID exported: LLaMA-Factory will launch with
 * c10d, so the rendezvous parts come too; the user's id is kept. */
static void torchrun_with_user_rdzv_id(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);

	(void)state;
	env_add(w, "RDZV_ID=myrun");
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "RDZV_ID"), "myrun");
	assert_int_equal(distenv_vars_find(&w->vars, "RDZV_ID")->action,
			 DISTENV_ACTION_KEPT);
	assert_string_equal(val(w, "PET_RDZV_ID"), "myrun");
	assert_string_equal(val(w, "PET_RDZV_BACKEND"), "c10d");
	assert_non_null(val(w, "PET_RDZV_CONF"));
	distenv_vars_free(&w->vars);
}

static void tasks_mode(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TASKS);

	(void)state;
	w->step.ntasks = 4;
	w->step.local_ntasks = 2;
	w->step.procid = 3;
	w->step.localid = 1;
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "RANK"), "3");
	assert_string_equal(val(w, "WORLD_SIZE"), "4");
	assert_string_equal(val(w, "LOCAL_RANK"), "1");
	assert_string_equal(val(w, "LOCAL_WORLD_SIZE"), "2");
	assert_string_equal(val(w, "NODE_RANK"), "1");
	assert_string_equal(val(w, "NNODES"), "2");
	assert_string_equal(val(w, "MASTER_ADDR"), "10.77.0.1");
	assert_string_equal(val(w, "GLOO_SOCKET_IFNAME"), "eth0");
	assert_null(val(w, "FORCE_TORCHRUN"));
	assert_null(val(w, "PET_NNODES"));
	assert_null(val(w, "NPROC_PER_NODE"));
	distenv_vars_free(&w->vars);
}

static void torchrun_rejects_several_tasks(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);

	(void)state;
	w->step.local_ntasks = 4;
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where, "node n2");
	assert_string_equal(w->err.what,
			    "4 tasks of step 77.3 run on this node in torchrun mode");
	assert_non_null(strstr(w->err.fix, "--ntasks-per-node=1"));
	assert_non_null(strstr(w->err.fix, "--distenv=tasks"));
	assert_int_equal(w->vars.count, 0);
}

static void user_values_are_kept(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);

	(void)state;
	env_add(w, "MASTER_PORT=29500");
	env_add(w, "NCCL_SOCKET_IFNAME=eth0");
	env_add(w, "NNODES=2");
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "MASTER_PORT"), "29500");
	assert_int_equal(distenv_vars_find(&w->vars, "MASTER_PORT")->action,
			 DISTENV_ACTION_KEPT);
	assert_string_equal(distenv_vars_find(&w->vars, "MASTER_PORT")->reason,
			    "kept (set by user)");
	assert_string_equal(val(w, "PET_MASTER_PORT"), "29500");
	assert_string_equal(val(w, "NCCL_SOCKET_IFNAME"), "eth0");
	assert_int_equal(distenv_vars_find(&w->vars, "NNODES")->action,
			 DISTENV_ACTION_KEPT);
	/* Kept variables are not in the marker: a later step keeps them too. */
	assert_null(strstr(val(w, "DISTENV_SET"), " MASTER_PORT:"));
	/* NNODES is the user's, so NODE_RANK comes first in the marker. */
	assert_int_equal(strncmp(val(w, "DISTENV_SET"), "NODE_RANK:", 10), 0);
	assert_non_null(strstr(val(w, "DISTENV_SET"), " PET_MASTER_PORT:"));
	distenv_vars_free(&w->vars);
}

/* Values the batch script inherited from distenv are re-derived. */
static void earlier_step_values_are_rederived(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);
	static char marker[256];

	(void)state;
	snprintf(marker, sizeof(marker), "DISTENV_SET=NNODES:%08x MASTER_ADDR:%08x",
		 distenv_value_hash("4"), distenv_value_hash("10.77.0.9"));
	env_add(w, "NNODES=4");
	env_add(w, "MASTER_ADDR=10.77.0.9");
	env_add(w, "MASTER_PORT=29500"); /* the user's: not in the marker */
	env_add(w, marker);
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "NNODES"), "2");
	assert_int_equal(distenv_vars_find(&w->vars, "NNODES")->action,
			 DISTENV_ACTION_SET);
	assert_string_equal(val(w, "MASTER_ADDR"), "10.77.0.1");
	assert_string_equal(val(w, "MASTER_PORT"), "29500");
	assert_int_equal(distenv_vars_find(&w->vars, "MASTER_PORT")->action,
			 DISTENV_ACTION_KEPT);
	distenv_vars_free(&w->vars);
}

/* srun's view before launch: more tasks than nodes in torchrun mode
 * fails once there; tasks mode and one task per node pass. */
static void step_layout_at_srun(void **state)
{
	struct distenv_error err;

	(void)state;
	assert_int_equal(distenv_check_step_layout(DISTENV_MODE_TORCHRUN, 4, 2,
						   12, 0, &err), -1);
	assert_string_equal(err.where, "-n/--ntasks-per-node");
	assert_string_equal(err.what, "step 12.0 has 4 tasks on 2 nodes in "
			    "torchrun mode: some node would run several torchruns");
	assert_non_null(strstr(err.fix, "--ntasks-per-node=1"));
	assert_int_equal(distenv_check_step_layout(DISTENV_MODE_ELASTIC, 3, 2,
						   12, 1, &err), -1);
	assert_int_equal(distenv_check_step_layout(DISTENV_MODE_TORCHRUN, 2, 2,
						   12, 0, &err), 0);
	assert_int_equal(distenv_check_step_layout(DISTENV_MODE_TASKS, 8, 2,
						   12, 0, &err), 0);
	assert_int_equal(distenv_check_step_layout(DISTENV_MODE_OFF, 8, 2,
						   12, 0, &err), 0);
}

/* A hand-set interface that this node does not have. */
static void user_ifname_matching_nothing(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);

	(void)state;
	env_add(w, "NCCL_SOCKET_IFNAME=ens5");
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where, "node n2: NCCL_SOCKET_IFNAME (exported)");
	assert_string_equal(w->err.what, "'ens5' matches no interface of this node "
					 "(it has: lo, eth1, eth0)");

	w = world_new(DISTENV_MODE_TORCHRUN);
	strcpy(w->req.ifname, "=ib0");
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where, "node n2: --distenv-ifname");
	assert_string_equal(w->err.what, "'=ib0' matches no interface of this node "
					 "(it has: lo, eth1, eth0)");

	w = world_new(DISTENV_MODE_TORCHRUN);
	env_add(w, "GLOO_SOCKET_IFNAME=eth0,bond0");
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where, "node n2: GLOO_SOCKET_IFNAME (exported)");
	assert_non_null(strstr(w->err.what, "'bond0' matches no interface"));
}

/* --distenv-ifname=ifname on node n2 (nnodes nodes), derived; expect
 * rc, and on success NCCL's and Gloo's values (freed here). */
static struct world *with_ifname(const char *ifname, uint32_t nnodes, int rc,
				 const char *nccl, const char *gloo)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);

	w->step.nnodes = nnodes;
	w->step.node_id = nnodes - 1;
	snprintf(w->req.ifname, sizeof(w->req.ifname), "%s", ifname);
	assert_int_equal(derive(w), rc);
	if (rc == 0) {
		assert_string_equal(val(w, "NCCL_SOCKET_IFNAME"), nccl);
		assert_string_equal(val(w, "GLOO_SOCKET_IFNAME"), gloo);
		distenv_vars_free(&w->vars);
	}
	return w;
}

static void option_ifname(void **state)
{
	struct world *w;

	(void)state;
	with_ifname("eth0", 2, 0, "eth0", "eth0");

	/* A list NCCL would take the dead-end eth1 from (it comes first in
	 * getifaddrs order): every worker would advertise 10.99.x.1. */
	w = with_ifname("eth", 2, -1, NULL, NULL);
	assert_string_equal(w->err.where, "node n2: --distenv-ifname");
	assert_string_equal(w->err.what,
			    "you gave --distenv-ifname=eth, but NCCL takes eth1 "
			    "from it (the first interface it selects), and eth1 "
			    "does not reach the master 10.77.0.1 (eth0 does)");
	assert_string_equal(w->err.fix,
			    "leave --distenv-ifname out (distenv then picks "
			    "eth0), or name an interface in the master's subnet");

	w = with_ifname("=eth1", 2, -1, NULL, NULL); /* insisting on eth1 */
	assert_string_equal(w->err.what,
			    "you gave --distenv-ifname==eth1, but eth1 does not "
			    "reach the master 10.77.0.1 (eth0 does)");

	/* NCCL's exclusion list: NCCL takes lo first, Gloo gets a plain
	 * name. */
	w = with_ifname("^eth1", 2, -1, NULL, NULL);
	assert_non_null(strstr(w->err.what, "NCCL takes lo from it"));
	with_ifname("^lo,eth1", 2, 0, "^lo,eth1", "eth0");

	/* One node: nothing to reach, the user's eth1 is used. */
	with_ifname("=eth1", 1, 0, "=eth1", "eth1");
}

/* Exported interface variables Gloo or NCCL cannot read fail before
 * launch: NCCL's '^'/'=' syntax or an address in GLOO_SOCKET_IFNAME, an
 * address in NCCL_SOCKET_IFNAME. */
static void user_ifname_syntax(void **state)
{
	struct world *w;

	(void)state;
	w = refused(DISTENV_MODE_TORCHRUN,
		    "node n2: GLOO_SOCKET_IFNAME (exported)",
		    "GLOO_SOCKET_IFNAME=^lo,docker", NULL);
	assert_string_equal(w->err.what,
			    "you exported GLOO_SOCKET_IFNAME=^lo,docker: Gloo "
			    "takes plain interface names, and '^' is NCCL's list "
			    "syntax (Gloo looks for an interface named '^lo' and "
			    "fails at init with \"Unable to find address for: "
			    "^lo\")");
	assert_non_null(strstr(w->err.fix, "GLOO_SOCKET_IFNAME=eth0"));

	/* The address of this node's eth0: the fix names eth0. */
	w = refused(DISTENV_MODE_TORCHRUN, NULL,
		    "GLOO_SOCKET_IFNAME=10.77.0.2", NULL);
	assert_string_equal(w->err.what,
			    "you exported GLOO_SOCKET_IFNAME=10.77.0.2: "
			    "'10.77.0.2' is an IP address, not an interface name "
			    "(Gloo fails at init with \"Unable to find address "
			    "for: ...\")");
	assert_string_equal(w->err.fix,
			    "export GLOO_SOCKET_IFNAME=eth0 (the interface "
			    "holding 10.77.0.2 here), or unset it and let "
			    "distenv derive it");

	w = refused(DISTENV_MODE_TASKS,
		    "node n2: NCCL_SOCKET_IFNAME (exported)",
		    "NCCL_SOCKET_IFNAME==eth0,192.168.1.", NULL);
	assert_non_null(strstr(w->err.what, "'192.168.1.' is an IP address"));
	assert_non_null(strstr(w->err.what, "would find no socket interface"));

	/* All three exported: no network fact is gathered, and the
	 * syntax is still checked. */
	w = world_new(DISTENV_MODE_TORCHRUN);
	env_add(w, "MASTER_ADDR=10.77.0.1");
	env_add(w, "NCCL_SOCKET_IFNAME==eth0");
	env_add(w, "GLOO_SOCKET_IFNAME==eth0");
	assert_false(distenv_needs_net(&w->site, &w->req, &w->step));
	assert_int_equal(distenv_derive(&w->site, &w->req, &w->step, NULL,
					&w->vars, &w->err), -1);
	assert_non_null(strstr(w->err.what, "'=' is NCCL's list syntax"));

	/* The site's interfaces: list in NCCL's syntax: Gloo still gets a
	 * plain name (--distenv-ifname: option_ifname). */
	w = world_new(DISTENV_MODE_TORCHRUN);
	strcpy(w->site.ifaces, "^=eth1");
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "GLOO_SOCKET_IFNAME"), "eth0");
	distenv_vars_free(&w->vars);
}

/* An exported interface that exists but is on no network of the
 * master's: the workers would advertise an address the others cannot
 * reach. */
static void user_ifname_must_reach_master(void **state)
{
	struct world *w;
	int rc;

	(void)state;
	w = refused(DISTENV_MODE_TORCHRUN,
		    "node n2: GLOO_SOCKET_IFNAME (exported)",
		    "GLOO_SOCKET_IFNAME=eth1", NULL);
	assert_string_equal(w->err.what,
			    "you exported GLOO_SOCKET_IFNAME=eth1, but eth1 does "
			    "not reach the master 10.77.0.1 (eth0 does)");
	assert_string_equal(w->err.fix, "unset it, or name an interface in the "
					"master's subnet");

	/* Gloo connects every peer on each listed interface. */
	w = refused(DISTENV_MODE_TASKS, NULL,
		    "GLOO_SOCKET_IFNAME=eth0,eth1", NULL);
	assert_non_null(strstr(w->err.what, "but eth1 does not reach"));

	/* NCCL's bootstrap takes the first interface the list selects, in
	 * getifaddrs order: eth1 here, before eth0. */
	w = refused(DISTENV_MODE_TORCHRUN,
		    "node n2: NCCL_SOCKET_IFNAME (exported)",
		    "NCCL_SOCKET_IFNAME=eth", NULL);
	assert_string_equal(w->err.what,
			    "you exported NCCL_SOCKET_IFNAME=eth, but NCCL takes "
			    "eth1 from it (the first interface it selects), and "
			    "eth1 does not reach the master 10.77.0.1 (eth0 "
			    "does)");
	/* ... and lo's 127.0.0.1 for an exclusion list that spares it. */
	w = refused(DISTENV_MODE_TORCHRUN, NULL,
		    "NCCL_SOCKET_IFNAME=^docker", NULL);
	assert_non_null(strstr(w->err.what, "NCCL takes lo from it"));

	/* Loopback told by the address, not by the name: an interface
	 * called eth9 that holds 127.0.0.2 first reaches nobody. */
	w = world_new(DISTENV_MODE_TORCHRUN);
	fx_iface(&w->fx, "eth9", "127.0.0.2", 8, 1);
	fx_iface(&w->fx, "eth9", "10.77.0.9", 24, 1);
	env_add(w, "NCCL_SOCKET_IFNAME==eth9");
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.what,
			    "you exported NCCL_SOCKET_IFNAME==eth9, but NCCL "
			    "takes eth9's address 127.0.0.2 from it (the first "
			    "address it selects), and that does not reach the "
			    "master 10.77.0.1 (eth0 does)");

	/* What does reach is kept. */
	w = derived_with(DISTENV_MODE_TORCHRUN, &rc,
			 "NCCL_SOCKET_IFNAME=^lo,eth1",
			 "GLOO_SOCKET_IFNAME=eth0", NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(val(w, "NCCL_SOCKET_IFNAME"), "^lo,eth1");
	assert_string_equal(val(w, "GLOO_SOCKET_IFNAME"), "eth0");
	distenv_vars_free(&w->vars);

	/* One node, or the batch script: nothing is checked. */
	w = world_new(DISTENV_MODE_TORCHRUN);
	w->step.nnodes = 1;
	w->step.node_id = 0;
	env_add(w, "GLOO_SOCKET_IFNAME=eth1");
	assert_int_equal(derive(w), 0);
	distenv_vars_free(&w->vars);
	w = world_new(DISTENV_MODE_TORCHRUN);
	w->step.kind = DISTENV_STEP_BATCH;
	env_add(w, "GLOO_SOCKET_IFNAME=eth1");
	assert_int_equal(derive(w), 0);
	distenv_vars_free(&w->vars);
}

/* srun --ntasks-per-node=8 --gpus-per-task=1: Slurm 22.05 gives task 3
 * its own GPU, as device 0 under cgroup constraints, and keeps the
 * step's count in SLURM_GPUS_ON_NODE (distenv_gpus.h). */
static void one_gpu_per_task(void **state)
{
	struct world *w;
	const struct distenv_var *v;
	int rc;

	(void)state;
	w = world_new(DISTENV_MODE_TASKS);
	w->step.ntasks = 16;
	w->step.local_ntasks = 8;
	w->step.procid = 11;
	w->step.localid = 3;
	env_add(w, "CUDA_VISIBLE_DEVICES=0");
	env_add(w, "SLURM_STEP_GPUS=3");
	env_add(w, "SLURM_GPUS_ON_NODE=8");
	assert_int_equal(derive(w), 0);
	v = distenv_vars_find(&w->vars, "LOCAL_RANK");
	assert_string_equal(v->value, "3");
	assert_string_equal(v->reason,
			    "SLURM_LOCALID: this task's index on the node; note: "
			    "each task here sees 1 GPU (CUDA_VISIBLE_DEVICES=0 in "
			    "this one), so for LOCAL_RANK 1-7 "
			    "torch.cuda.set_device(LOCAL_RANK) fails with "
			    "\"invalid device ordinal\": ask for "
			    "--gpus-per-node=8 instead of --gpus-per-task, so "
			    "that every task sees the node's GPUs, or use device "
			    "LOCAL_RANK % 1");
	/* The node's first task, which --distenv-show prints, says it
	 * too. */
	w->step.localid = 0;
	distenv_vars_free(&w->vars);
	assert_int_equal(derive(w), 0);
	assert_non_null(strstr(distenv_vars_find(&w->vars, "LOCAL_RANK")->reason,
			       "so for LOCAL_RANK 1-7"));
	distenv_vars_free(&w->vars);

	/* Every task sees the node's GPUs: no note. */
	w->step.localid = 3;
	w->env[0] = "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7";
	w->env[1] = "SLURM_STEP_GPUS=0,1,2,3,4,5,6,7";
	assert_int_equal(derive(w), 0);
	assert_string_equal(distenv_vars_find(&w->vars, "LOCAL_RANK")->reason,
			    "SLURM_LOCALID: this task's index on the node");
	distenv_vars_free(&w->vars);

	/* torchrun mode, the node's one task bound to one of the step's
	 * 8 GPUs (--gpu-bind=single:1): 8 processes, and a note. */
	w = derived_with(DISTENV_MODE_TORCHRUN, &rc,
			 "CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=0",
			 "SLURM_GPUS_ON_NODE=8");
	assert_int_equal(rc, 0);
	assert_string_equal(val(w, "NPROC_PER_NODE"), "8");
	assert_string_equal(val(w, "PET_NPROC_PER_NODE"), "8");
	v = distenv_vars_find(&w->vars, "NPROC_PER_NODE");
	assert_string_equal(v->reason,
			    "GPUs of the step on this node (SLURM_GPUS_ON_NODE); "
			    "note: this task sees 1 of them "
			    "(CUDA_VISIBLE_DEVICES=0), and torchrun's workers "
			    "inherit that, so local ranks 1-7 find no device: "
			    "leave out --gpus-per-task and --gpu-bind, so that "
			    "the node's one task sees all 8");
	distenv_vars_free(&w->vars);

	/* The plugin's view of the step (user_init): its 4 GPUs here. */
	w->env[0] = "CUDA_VISIBLE_DEVICES=2";
	w->env[1] = "SLURM_STEP_GPUS=2";
	w->env[2] = NULL;
	w->step.step_gpus = "0,1,2,3";
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "NPROC_PER_NODE"), "4");
	assert_non_null(strstr(distenv_vars_find(&w->vars, "NPROC_PER_NODE")->reason,
			       "(SLURM_STEP_GPUS of the step); note: this task "
			       "sees 1 of them"));
	distenv_vars_free(&w->vars);
}

/* One reading of the GPUs for every counter (distenv_gpus.h). */
static void gpu_facts(void **state)
{
	const char *bound[] = {"CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=5",
			       "SLURM_GPUS_ON_NODE=4", NULL};
	const char *whole[] = {"CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=6,7",
			       "SLURM_GPUS_ON_NODE=2", NULL};
	const char *by_hand[] = {"CUDA_VISIBLE_DEVICES=GPU-1b2c,GPU-77aa", NULL};
	const char *none[] = {"CUDA_VISIBLE_DEVICES=NoDevFiles", NULL};
	const char *nproc[] = {"NPROC_PER_NODE=3", "SLURM_GPUS_ON_NODE=8", NULL};
	struct distenv_gpus g;

	(void)state;
	distenv_gpus_read(bound, NULL, &g);
	assert_true(g.task_known);
	assert_int_equal(g.task_count, 1);
	assert_int_equal(g.node_count, 4);
	assert_string_equal(g.node_count_from, "SLURM_GPUS_ON_NODE");
	assert_null(g.node_list); /* SLURM_STEP_GPUS names the task's only */
	distenv_gpus_read(bound, "4,5,6,7", &g);
	assert_string_equal(g.node_list, "4,5,6,7");
	assert_string_equal(g.node_list_from, "SLURM_STEP_GPUS of the step");
	distenv_gpus_read(whole, NULL, &g);
	assert_string_equal(g.node_list, "6,7");
	assert_int_equal(g.node_count, 2);
	distenv_gpus_read(by_hand, NULL, &g);
	assert_int_equal(g.node_count, 2);
	assert_string_equal(g.node_count_from, "CUDA_VISIBLE_DEVICES");
	distenv_gpus_read(none, NULL, &g);
	assert_true(g.task_known);
	assert_int_equal(g.task_count, 0);
	assert_null(g.task_list);
	assert_int_equal(g.node_count, 0);
	assert_int_equal(distenv_gpus_per_node(bound, NULL), 4);
	assert_int_equal(distenv_gpus_per_node(nproc, NULL), 3);
	assert_int_equal(distenv_gpus_per_node(none, NULL), 1);
	assert_int_equal(distenv_gpus_list_count("0,1,2"), 3);
	assert_int_equal(distenv_gpus_list_count(""), 0);
}

static void port_sources(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);
	uint16_t expect;

	(void)state;
	w->req.port = 31000;
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "MASTER_PORT"), "31000");
	distenv_vars_free(&w->vars);

	w = world_new(DISTENV_MODE_TORCHRUN);
	w->req.port = 31000;
	w->step.resv_ports = "20000,20005-20006";
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "MASTER_PORT"), "20000");
	distenv_vars_free(&w->vars);

	w = world_new(DISTENV_MODE_TORCHRUN);
	assert_int_equal(derive(w), 0);
	distenv_derive_port(77, 3, DISTENV_PORT_LO_DEFAULT, DISTENV_PORT_HI_DEFAULT,
			    32768, 60999, &expect, NULL);
	assert_int_equal(atoi(val(w, "MASTER_PORT")), expect);
	distenv_vars_free(&w->vars);

	w = world_new(DISTENV_MODE_TORCHRUN);
	w->step.resv_ports = "junk";
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where, "SLURM_STEP_RESV_PORTS");
}

static void nproc_sources(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);

	(void)state;
	env_add(w, "SLURM_GPUS_ON_NODE=4");
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "NPROC_PER_NODE"), "4");
	distenv_vars_free(&w->vars);

	w = world_new(DISTENV_MODE_TORCHRUN);
	env_add(w, "CUDA_VISIBLE_DEVICES=GPU-1b2c,GPU-77aa");
	env_add(w, "SLURM_GPUS_ON_NODE=8");
	w->req.nproc = 3;
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "NPROC_PER_NODE"), "3");
	distenv_vars_free(&w->vars);

	w = world_new(DISTENV_MODE_TORCHRUN);
	env_add(w, "CUDA_VISIBLE_DEVICES=GPU-1b2c,GPU-77aa");
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "NPROC_PER_NODE"), "2");
	distenv_vars_free(&w->vars);

	w = world_new(DISTENV_MODE_TORCHRUN);
	env_add(w, "CUDA_VISIBLE_DEVICES=NoDevFiles");
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "NPROC_PER_NODE"), "1");
	distenv_vars_free(&w->vars);
}

static void batch_script_values(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);

	(void)state;
	w->step.kind = DISTENV_STEP_BATCH;
	w->step.nnodes = 4;
	w->step.node_id = 0;
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.count, 5);
	assert_string_equal(val(w, "NNODES"), "4");
	assert_string_equal(val(w, "NPROC_PER_NODE"), "1");
	assert_string_equal(val(w, "MASTER_ADDR"), "10.77.0.1");
	assert_string_equal(val(w, "FORCE_TORCHRUN"), "1");
	assert_null(val(w, "MASTER_PORT"));
	assert_null(val(w, "NODE_RANK"));
	distenv_vars_free(&w->vars);

	/* A resolution problem does not fail the batch script. */
	w = world_new(DISTENV_MODE_TASKS);
	w->step.kind = DISTENV_STEP_BATCH;
	w->fx.net.n_addrs = 0;
	w->fx.net.resolve_error = "Name or service not known";
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "NNODES"), "2");
	assert_null(val(w, "MASTER_ADDR"));
	distenv_vars_free(&w->vars);
}

static void mode_off_sets_nothing(void **state)
{
	struct world *w = world_new(DISTENV_MODE_UNSET);

	(void)state;
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.count, 0);
	assert_false(distenv_needs_net(&w->site, &w->req, &w->step));
	w->req.mode = DISTENV_MODE_OFF;
	w->site.default_mode = DISTENV_MODE_TORCHRUN;
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.count, 0);
}

static void loopback_master_fails_step(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);

	(void)state;
	w->step.node_id = 0;
	w->step.node_name[1] = '1';
	fx_cluster_node(&w->fx, 1, "n1");
	fx_addr(&w->fx, "127.0.1.1", "lo");
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where, "node n1: master host n1");
	assert_non_null(strstr(w->err.what, "only to the loopback address 127.0.1.1"));
}

static void user_master_addr_everything_set(void **state)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);

	(void)state;
	env_add(w, "MASTER_ADDR=10.77.0.1");
	assert_string_equal(distenv_master_host(&w->step), "10.77.0.1");
	env_add(w, "NCCL_SOCKET_IFNAME=eth0");
	env_add(w, "GLOO_SOCKET_IFNAME=eth0");
	assert_false(distenv_needs_net(&w->site, &w->req, &w->step));
	assert_int_equal(distenv_derive(&w->site, &w->req, &w->step, NULL,
					&w->vars, &w->err), 0);
	assert_string_equal(val(w, "MASTER_ADDR"), "10.77.0.1");
	assert_string_equal(val(w, "PET_MASTER_ADDR"), "10.77.0.1");
	assert_int_equal(distenv_vars_find(&w->vars, "GLOO_SOCKET_IFNAME")->action,
			 DISTENV_ACTION_KEPT);
	distenv_vars_free(&w->vars);
}

static void bad_values_are_refused(void **state)
{
	struct distenv_vars vars = {0};
	struct distenv_error err;
	char big[DISTENV_VALUE_MAX + 2];

	(void)state;
	assert_int_equal(distenv_vars_add(&vars, "A", "x\ny", DISTENV_ACTION_SET,
					  &err, "r"), -1);
	assert_string_equal(err.what, "value holds a line break");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(distenv_vars_add(&vars, "A", big, DISTENV_ACTION_SET,
					  &err, "r"), -1);
	assert_int_equal(distenv_vars_add(&vars, "1A", "x", DISTENV_ACTION_SET,
					  &err, "r"), -1);
	assert_int_equal(distenv_vars_add(&vars, "A=B", "x", DISTENV_ACTION_SET,
					  &err, "r"), -1);
	assert_int_equal(vars.count, 0);
}

/* Worker gpu02 of a 2-node step whose master gpu01 is reached over two
 * interfaces in one subnet (fx_two_nics), --distenv-check=check. */
static struct world *two_nics_world(int check, const char *first,
				    const char *second)
{
	struct world *w = world_new(DISTENV_MODE_TORCHRUN);

	fx_worker_step(&w->step, 77, 3, "gpu02", "gpu01", w->env);
	fx_two_nics(&w->fx, first, second, "eno1");
	w->req.check = check;
	return w;
}

/* Two interfaces on the master's subnet: the kernel's is exported on
 * every node, whatever the order; a warning for the job log and
 * --distenv-show by default, the step fails under strict, nothing under
 * off, nor when the user chose. */
static void shared_subnet_check_modes(void **state)
{
	struct world *w;
	char *text = NULL;
	size_t len = 0;
	FILE *mem;

	(void)state;
	w = two_nics_world(DISTENV_CHECK_WARN, "enp37s0f0", "eno1");
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "NCCL_SOCKET_IFNAME"), "=eno1");
	assert_string_equal(val(w, "GLOO_SOCKET_IFNAME"), "eno1");
	assert_int_equal(w->vars.n_warnings, 1);
	assert_string_equal(w->vars.warnings[0].where,
			    "node gpu02: NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME");
	assert_non_null(strstr(w->vars.warnings[0].what,
			       "enp37s0f0 (192.168.1.21/20) and eno1 "
			       "(192.168.0.21/20) are both in the subnet of the "
			       "master address 192.168.0.10: the kernel routes it "
			       "through eno1, so distenv exports eno1"));
	mem = open_memstream(&text, &len);
	distenv_format_show(mem, &w->step, DISTENV_MODE_TORCHRUN, &w->vars);
	fclose(mem);
	assert_non_null(strstr(text, "distenv: gpu02:   warning: node gpu02: "
				     "NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME: "
				     "enp37s0f0 (192.168.1.21/20) and eno1"));
	assert_non_null(strstr(text, ". Put the interfaces on distinct "
				     "subnets"));
	free(text);
	mem = open_memstream(&text, &len);
	distenv_format_warnings(mem, &w->vars);
	fclose(mem);
	assert_ptr_equal(strstr(text, "distenv: warning: node gpu02: "
				      "NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME: "
				      "enp37s0f0 (192.168.1.21/20) and eno1 "),
			 text);
	assert_ptr_equal(strchr(text, '\n'), text + len - 1); /* one line */
	free(text);
	distenv_vars_free(&w->vars);
	assert_int_equal(w->vars.n_warnings, 0);

	w = two_nics_world(DISTENV_CHECK_STRICT, "eno1", "enp37s0f0");
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where,
			    "node gpu02: NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME");
	assert_non_null(strstr(w->err.what, "eno1 (192.168.0.21/20) and "
					    "enp37s0f0 (192.168.1.21/20) are "
					    "both"));
	assert_non_null(strstr(w->err.fix, "--distenv-ifname=NAME"));

	w = two_nics_world(DISTENV_CHECK_OFF, "eno1", "enp37s0f0");
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "NCCL_SOCKET_IFNAME"), "=eno1");
	assert_int_equal(w->vars.n_warnings, 0);
	distenv_vars_free(&w->vars);

	/* The user chose: no warning, even under strict. */
	w = two_nics_world(DISTENV_CHECK_STRICT, "eno1", "enp37s0f0");
	strcpy(w->req.ifname, "=enp37s0f0");
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "NCCL_SOCKET_IFNAME"), "=enp37s0f0");
	assert_string_equal(val(w, "GLOO_SOCKET_IFNAME"), "enp37s0f0");
	assert_int_equal(w->vars.n_warnings, 0);
	distenv_vars_free(&w->vars);

	/* One node: no other node to reach. */
	w = two_nics_world(DISTENV_CHECK_STRICT, "eno1", "enp37s0f0");
	w->step.nnodes = 1;
	w->step.node_id = 0;
	assert_int_equal(derive(w), 0);
	assert_int_equal(w->vars.n_warnings, 0);
	distenv_vars_free(&w->vars);
}

/* A BGP-unnumbered worker (fx_bgp_node): the step fails on it before
 * launch, also when the user names lo; lo is never exported. */
static void routable_address_on_lo_fails_step(void **state)
{
	struct world *w;

	(void)state;
	w = world_new(DISTENV_MODE_TORCHRUN);
	fx_worker_step(&w->step, 77, 3, "rack1-11", "rack1-10", w->env);
	fx_bgp_node(&w->fx, "10.9.0.11", 0);
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where, "node rack1-11: master host rack1-10");
	assert_non_null(strstr(w->err.what, "is 10.9.0.11 (the kernel's source "
					    "address for it), and lo holds it"));
	assert_null(val(w, "NCCL_SOCKET_IFNAME"));

	w = world_new(DISTENV_MODE_TASKS);
	fx_worker_step(&w->step, 77, 3, "rack1-11", "rack1-10", w->env);
	fx_bgp_node(&w->fx, "10.9.0.11", 0);
	strcpy(w->req.ifname, "=lo");
	assert_int_equal(derive(w), -1);
	assert_non_null(strstr(w->err.what, "and lo holds it"));

	/* With the /32 on eth0 as well: eth0, never lo. */
	w = world_new(DISTENV_MODE_TORCHRUN);
	fx_worker_step(&w->step, 77, 3, "rack1-11", "rack1-10", w->env);
	fx_bgp_node(&w->fx, "10.9.0.11", 1);
	assert_int_equal(derive(w), 0);
	assert_string_equal(val(w, "MASTER_ADDR"), "10.9.0.10");
	assert_string_equal(val(w, "NCCL_SOCKET_IFNAME"), "=eth0");
	assert_string_equal(val(w, "GLOO_SOCKET_IFNAME"), "eth0");
	distenv_vars_free(&w->vars);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(torchrun_two_nodes),
		cmocka_unit_test(elastic_two_nodes),
		cmocka_unit_test(torchrun_with_user_rdzv_id),
		cmocka_unit_test(tasks_mode),
		cmocka_unit_test(torchrun_rejects_several_tasks),
		cmocka_unit_test(user_values_are_kept),
		cmocka_unit_test(earlier_step_values_are_rederived),
		cmocka_unit_test(step_layout_at_srun),
		cmocka_unit_test(user_ifname_matching_nothing),
		cmocka_unit_test(option_ifname),
		cmocka_unit_test(user_ifname_syntax),
		cmocka_unit_test(user_ifname_must_reach_master),
		cmocka_unit_test(one_gpu_per_task),
		cmocka_unit_test(gpu_facts),
		cmocka_unit_test(port_sources),
		cmocka_unit_test(nproc_sources),
		cmocka_unit_test(batch_script_values),
		cmocka_unit_test(mode_off_sets_nothing),
		cmocka_unit_test(loopback_master_fails_step),
		cmocka_unit_test(user_master_addr_everything_set),
		cmocka_unit_test(bad_values_are_refused),
		cmocka_unit_test(shared_subnet_check_modes),
		cmocka_unit_test(routable_address_on_lo_fails_step),
	};

	return cmocka_run_group_tests_name("derive", tests, NULL, NULL);
}
