/* distenv_user_check.c: exported launch variables against the step. */
#include "distenv_user_check.h"

#include <stdio.h>
#include <string.h>

#include "distenv_env.h"

#define UNSET_FIX "unset it: distenv derives it for every node and task"

static const char *user(const struct distenv_step *s, const char *name)
{
	return distenv_env_user_value(s->envp, name);
}

static int fail(struct distenv_error *err, const char *name, const char *value,
		const char *says)
{
	char where[64];

	snprintf(where, sizeof(where), "%s (exported)", name);
	return distenv_error_set(err, where, UNSET_FIX,
				 "you exported %s=%s, the step says %s", name,
				 value, says);
}

/* name must be want on every node; the same decision everywhere. */
static int check_equal(const struct distenv_step *s, const char *name,
		       uint32_t want, const char *what,
		       struct distenv_error *err)
{
	const char *v = user(s, name);
	uint32_t n;
	char says[160];

	if (!v)
		return 0;
	if (distenv_parse_u32(v, 1u << 30, &n) == 0 && n == want)
		return 0;
	snprintf(says, sizeof(says), "%u (%s)", want, what);
	return fail(err, name, v, says);
}

/* A value that differs per node (or per task) can be one exported value
 * only when there is one of them, and then it is 0. many: what the step
 * says when there are several ("" when there is one); source: where
 * distenv takes the value from. */
static int check_unique(const struct distenv_step *s, const char *name,
			const char *many, const char *source,
			struct distenv_error *err)
{
	const char *v = user(s, name);
	uint32_t n;
	char says[384];

	if (!v)
		return 0;
	if (!many[0] && distenv_parse_u32(v, 1u << 30, &n) == 0 && n == 0)
		return 0;
	if (!many[0])
		snprintf(says, sizeof(says), "0 (%s)", source);
	else
		snprintf(says, sizeof(says),
			 "%s (%s): one exported value is wrong for all of them "
			 "but one, and the rendezvous waits for the missing "
			 "ones",
			 many, source);
	return fail(err, name, v, says);
}

/* "each of its N nodes has its own, 0 to N-1", or "" for one. */
static const char *each_own(char *buf, size_t len, uint32_t count,
			    const char *what)
{
	if (count <= 1)
		return "";
	snprintf(buf, len, "each of its %u %ss has its own, 0 to %u", count,
		 what, count - 1);
	return buf;
}

static int check_port(const struct distenv_step *s, struct distenv_error *err)
{
	const char *v = user(s, "MASTER_PORT");
	uint32_t n;

	if (!v || (distenv_parse_u32(v, 65535, &n) == 0 && n >= 1024))
		return 0;
	return distenv_error_set(
		err, "MASTER_PORT (exported)",
		"unset it (distenv picks a free port of the site's range), or "
		"export a port in 1024-65535",
		"you exported MASTER_PORT=%s, which is not a port in "
		"1024-65535 (ports below 1024 need root to listen on)",
		v);
}

static int is_loopback_text(const char *v)
{
	struct distenv_ip ip;

	if (strcmp(v, "localhost") == 0 || strncmp(v, "localhost.", 10) == 0)
		return 1;
	return distenv_ip_parse(v, &ip) == 0 && distenv_ip_is_loopback(&ip);
}

/* On node index 0 the store listens on all of its addresses; the
 * others connect to MASTER_ADDR, which must be one of them. */
static int is_this_node(const struct distenv_net *net)
{
	size_t i, k;

	for (i = 0; i < net->n_addrs; i++)
		for (k = 0; k < net->n_ifaces; k++)
			if (distenv_ip_equal(&net->addrs[i].ip,
					     &net->ifaces[k].ip))
				return 1;
	return 0;
}

static int check_master_addr(const struct distenv_step *s,
			     const struct distenv_net *net,
			     struct distenv_error *err)
{
	const char *v = user(s, "MASTER_ADDR");
	char says[DISTENV_HOST_MAX * 2 + 96];

	if (!v || s->nnodes <= 1)
		return 0;
	if (is_loopback_text(v))
		return distenv_error_set(
			err, "MASTER_ADDR (exported)",
			"unset it: distenv derives the address of node index 0 "
			"that the other nodes reach",
			"you exported MASTER_ADDR=%s, which is loopback: in a "
			"%u-node step every node would connect to itself",
			v, s->nnodes);
	if (!net || s->node_id != s->master_node_id ||
	    s->kind == DISTENV_STEP_BATCH || !net->n_addrs || is_this_node(net))
		return 0;
	if (s->master_node_id)
		snprintf(says, sizeof(says),
			 "task 0 runs on %s (node index %u), where the "
			 "rendezvous store listens, and %s is not one of its "
			 "addresses",
			 s->node_name, s->master_node_id, v);
	else
		snprintf(says, sizeof(says),
			 "node index 0 is %s, where the rendezvous store "
			 "listens, and %s is not one of its addresses",
			 s->node_name, v);
	return fail(err, "MASTER_ADDR", v, says);
}

/* The first address MASTER_ADDR resolved to here that is this node's
 * own: loopback (told by the address: a host name /etc/hosts maps to
 * 127.0.1.1), or an address of one of its interfaces, whose name goes to
 * ifname ("" for loopback on no interface). NULL: none. */
static const struct distenv_addr *own_address(const struct distenv_net *net,
					      const char **ifname)
{
	size_t i, k;

	for (i = 0; i < net->n_addrs; i++) {
		*ifname = "";
		for (k = 0; k < net->n_ifaces; k++)
			if (distenv_ip_equal(&net->addrs[i].ip,
					     &net->ifaces[k].ip)) {
				*ifname = net->ifaces[k].name;
				return &net->addrs[i];
			}
		if (distenv_ip_is_loopback(&net->addrs[i].ip))
			return &net->addrs[i];
	}
	return NULL;
}

/*
 * A node other than the master's given its own address as MASTER_ADDR
 * (hiyouga/LlamaFactory issue 7326: each node exported its own address,
 * so each took itself for the master and the rendezvous never formed).
 * Its torchrun (or its ranks, in tasks mode) connects to a store on
 * itself that nobody starts, while the master's store waits for it.
 */
static int check_own_master_addr(const struct distenv_step *s,
				 const struct distenv_net *net,
				 const char *master_name,
				 struct distenv_error *err)
{
	const char *v = user(s, "MASTER_ADDR");
	const struct distenv_addr *own;
	const char *ifname = "";
	char ip[DISTENV_IP_TEXT_MAX], resolved[DISTENV_IP_TEXT_MAX + 32] = "";
	char on[DISTENV_IFNAME_MAX + 8] = "";
	char fix[DISTENV_HOST_MAX + 160];
	struct distenv_ip literal;

	if (!v || s->nnodes <= 1 || s->kind == DISTENV_STEP_BATCH ||
	    s->node_id == s->master_node_id || !net ||
	    !(own = own_address(net, &ifname)))
		return 0;
	distenv_ip_format(&own->ip, ip, sizeof(ip));
	if (distenv_ip_parse(v, &literal) != 0)
		snprintf(resolved, sizeof(resolved),
			 ", which resolves here to %s", ip);
	if (ifname[0])
		snprintf(on, sizeof(on), ", on %s", ifname);
	if (!master_name || !master_name[0])
		master_name = s->master_host;
	snprintf(fix, sizeof(fix),
		 "unset it: distenv derives the address of %s (node index %u) "
		 "for every node; or export that node's address, the same on "
		 "every node",
		 master_name, s->master_node_id);
	return distenv_error_set(
		err, "MASTER_ADDR (exported)", fix,
		"you exported MASTER_ADDR=%s%s, %s address of this node (%s, "
		"node index %u%s), but the rendezvous store listens on %s "
		"(node index %u): this node would wait for a store of its own "
		"that nobody starts, and the rendezvous never forms",
		v, resolved,
		distenv_ip_is_loopback(&own->ip) ? "a loopback" : "an",
		s->node_name, s->node_id, on, s->master_host,
		s->master_node_id);
}

int distenv_user_check(enum distenv_mode mode, const struct distenv_step *s,
		       const struct distenv_net *net, const char *master_name,
		       struct distenv_error *err)
{
	char nodes_buf[96], tasks[96];
	const char *nodes;
	const char *nnodes_src =
		s->kind == DISTENV_STEP_BATCH ?
			"SLURM_JOB_NUM_NODES: nodes in the allocation" :
			"SLURM_STEP_NUM_NODES: nodes in the step";

	if (mode == DISTENV_MODE_OFF)
		return 0;
	if (check_equal(s, "NNODES", s->nnodes, nnodes_src, err) ||
	    check_port(s, err) || check_master_addr(s, net, err) ||
	    check_own_master_addr(s, net, master_name, err))
		return -1;
	if (s->kind == DISTENV_STEP_BATCH || mode == DISTENV_MODE_ELASTIC)
		return 0;
	nodes = each_own(nodes_buf, sizeof(nodes_buf), s->nnodes, "node");
	if (check_unique(s, "NODE_RANK", nodes, "SLURM_NODEID", err) ||
	    check_unique(s, "PET_NODE_RANK", nodes, "SLURM_NODEID", err))
		return -1;
	if (mode == DISTENV_MODE_TORCHRUN)
		return check_unique(
			s, "RANK", nodes,
			"SLURM_NODEID; LLaMA-Factory <= 0.9.0 reads "
			"RANK as the node rank",
			err);
	if (check_equal(s, "WORLD_SIZE", s->ntasks,
			"SLURM_STEP_NUM_TASKS: tasks in the step", err) ||
	    check_unique(s, "RANK",
			 each_own(tasks, sizeof(tasks), s->ntasks, "task"),
			 "SLURM_PROCID", err))
		return -1;
	/* More tasks than nodes: some node holds several, so LOCAL_RANK
	 * differs there; decided from the step's counts, the same on every
	 * node. */
	return check_unique(s, "LOCAL_RANK",
			    s->ntasks > s->nnodes ?
				    "some node runs several tasks, each with "
				    "its own" :
				    "",
			    "SLURM_LOCALID", err);
}
