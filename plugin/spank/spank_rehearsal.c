/*
 * spank_rehearsal.c: slurmstepd, task_init, local task 0 of each node of
 * a multi-node step that asked for distenv: the network rehearsal
 * (plugin/core/distenv_rehearsal.h) after the derivation, with its
 * addresses: MASTER_ADDR and the interface in force
 * (GLOO_SOCKET_IFNAME), and the ring neighbour's address as distenv
 * would derive it were that node the master (its name through the
 * site's master_name: rule, the address that reaches it from here).
 * --distenv-check=warn (the default) prints the findings and goes on;
 * strict fails the step with the first (spank_task.c ends it on every
 * node); off skips the rehearsal.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "distenv_derive.h"
#include "distenv_env.h"
#include "distenv_master.h"
#include "distenv_rehearsal.h"
#include "distenv_sys.h"
#include "distenv_sys_rehearsal.h"
#include "spank_state.h"

#define FINDINGS_MAX 8 /* listen, 2 links, missing, 4 facts */

struct findings {
	struct distenv_error e[FINDINGS_MAX];
	size_t n;
};

static struct distenv_error *finding(struct findings *f)
{
	return f->n < FINDINGS_MAX ? &f->e[f->n++] : &f->e[FINDINGS_MAX - 1];
}

/* The address of interface ifname (a list: its first name) in family,
 * usable between nodes, into src; family 0 when none. */
static void source_address(const struct distenv_net *net, const char *ifname,
			   int family, struct distenv_ip *src)
{
	char name[DISTENV_IFNAME_MAX];
	size_t i, n = ifname ? strcspn(ifname, ",") : 0;

	memset(src, 0, sizeof(*src));
	if (!n || n >= sizeof(name))
		return;
	memcpy(name, ifname, n);
	name[n] = '\0';
	for (i = 0; i < net->n_ifaces; i++) {
		const struct distenv_iface *f = &net->ifaces[i];

		if (strcmp(f->name, name) == 0 && f->ip.family == family &&
		    !distenv_ip_is_loopback(&f->ip) &&
		    !distenv_ip_is_link_local(&f->ip)) {
			*src = f->ip;
			return;
		}
	}
}

/* The ring neighbour: its node name into host, its address into choice
 * (the one this node reaches it by), and this node's facts into facts
 * (freed by the caller). */
static int find_next(const struct distenv_site *site,
		     const struct distenv_step *step, uint32_t next, int family,
		     char *host, size_t host_len,
		     struct distenv_net_facts *facts,
		     struct distenv_master_choice *choice,
		     struct distenv_error *err)
{
	const char *var = distenv_step_nodelist_var(step);
	struct distenv_master_prefs prefs;
	char lookup[DISTENV_HOST_MAX];

	if (distenv_nth_host(distenv_env_get(step->envp, var), next, var, host,
			     host_len, err) ||
	    distenv_master_name_expand(site->master_name, host, lookup,
				       sizeof(lookup), err) ||
	    distenv_net_facts_gather(lookup, facts, err))
		return -1;
	memset(&prefs, 0, sizeof(prefs));
	prefs.family =
		family == AF_INET6 ? DISTENV_FAMILY_IPV6 : DISTENV_FAMILY_IPV4;
	return distenv_master_choose_prefs(&facts->net, &prefs, step->node_name,
					   1, 0, choice, err);
}

/* MASTER_ADDR as an address: a literal, or the first the resolver
 * gives for a name the user exported. */
static int master_ip(const char *addr, struct distenv_ip *ip,
		     struct distenv_error *err)
{
	struct distenv_net_facts facts;
	int rc = -1;

	if (distenv_ip_parse(addr, ip) == 0)
		return 0;
	memset(&facts, 0, sizeof(facts));
	if (distenv_net_facts_gather(addr, &facts, err) == 0) {
		if (facts.net.n_addrs) {
			*ip = facts.net.addrs[0].ip;
			rc = 0;
		} else {
			distenv_error_set(err, "MASTER_ADDR", NULL,
					  "'%s' does not resolve: %s", addr,
					  facts.net.resolve_error ?
						  facts.net.resolve_error :
						  "no address");
		}
	}
	distenv_net_facts_free(&facts);
	return rc;
}

/* errno's text for a message; none for a connect still under way at
 * the deadline (the cause says "timed out"). */
static const char *detail(int errnum)
{
	return errnum && errnum != EINPROGRESS ? strerror(errnum) : "";
}

/* One connection's failure as a finding: link holds what both kinds
 * share, the rest is this connection's. */
static void link_finding(const struct distenv_rehearsal_plan *plan,
			 struct distenv_rehearsal_link *link, int ring,
			 const char *to_node, const char *to_addr,
			 uint16_t port, int foreign, int errnum,
			 struct findings *f)
{
	link->ring = ring;
	link->to_node = to_node;
	link->to_addr = to_addr;
	link->port = port;
	link->cause = foreign ? DISTENV_REHEARSAL_FOREIGN :
				distenv_rehearsal_cause_of(errnum);
	link->detail = detail(errnum);
	distenv_rehearsal_link_error(plan, link, finding(f));
}

/* What the connections' results say, as findings. */
static void judge(const struct distenv_rehearsal_plan *plan,
		  const struct distenv_step *step, const char *master_addr,
		  const char *ifname, const char *src_text,
		  const char *next_host, const char *next_addr,
		  const struct distenv_rehearsal_result *res,
		  struct findings *f)
{
	struct distenv_rehearsal_link link;

	if (res->listen_errno)
		distenv_error_set(
			finding(f), step->node_name,
			"another program holds the port: run the step again "
			"(new ports), or --distenv-check=off to skip this "
			"rehearsal",
			"network rehearsal: %s could not listen on its %s "
			"port %u: %s",
			step->node_name, res->listen_ring ? "ring" : "check-in",
			res->listen_port, strerror(res->listen_errno));
	memset(&link, 0, sizeof(link));
	link.from_node = step->node_name;
	link.src_addr = src_text;
	link.ifname = ifname;
	link.waited_ms = res->waited_ms;
	if (!plan->on_master && !res->master_ok)
		link_finding(plan, &link, 0, step->master_host, master_addr,
			     plan->master_port, res->master_foreign,
			     res->master_errno, f);
	if (!res->next_ok)
		link_finding(plan, &link, 1, next_host, next_addr,
			     res->next_port, res->next_foreign, res->next_errno,
			     f);
}

/* Node index i's name from the step's node list, "?" when unknown. */
static void node_name(const struct distenv_step *step, uint32_t i, char *buf,
		      size_t len)
{
	const char *var = distenv_step_nodelist_var(step);
	struct distenv_error e;

	if (distenv_nth_host(distenv_env_get(step->envp, var), i, var, buf, len,
			     &e))
		snprintf(buf, len, "?");
}

/* The facts compared (distenv_rehearsal_facts.h): the master with each
 * node that checked in (the first that differs by name, the count of
 * the others), another node with the master's answer. */
static void judge_facts(const struct distenv_rehearsal_plan *plan,
			const struct distenv_step *step,
			const struct distenv_rehearsal_facts *mine,
			const struct distenv_rehearsal_result *res,
			struct findings *f)
{
	const struct distenv_rehearsal_facts *m =
		&res->facts[plan->master_node_id];
	char name[DISTENV_HOST_MAX];
	uint32_t first, count;
	int rule;

	for (rule = 0; rule < DISTENV_RULES_N; rule++) {
		if (!plan->on_master) {
			if (res->master_ok &&
			    distenv_rehearsal_facts_differ(rule, mine, m))
				distenv_rehearsal_facts_error(rule,
							      step->node_name,
							      step->node_name,
							      mine,
							      step->master_host,
							      m, 0, finding(f));
			continue;
		}
		first = distenv_rehearsal_facts_first(rule, res->facts,
						      res->seen, plan->nnodes,
						      plan->master_node_id,
						      &count);
		if (first == UINT32_MAX)
			continue;
		node_name(step, first, name, sizeof(name));
		distenv_rehearsal_facts_error(rule, step->node_name, name,
					      &res->facts[first],
					      step->node_name, mine, count - 1,
					      finding(f));
	}
}

/* The master: the nodes that never checked in, by name. */
static void judge_missing(const struct distenv_rehearsal_plan *plan,
			  const struct distenv_step *step,
			  const char *master_addr,
			  const struct distenv_rehearsal_result *res,
			  struct findings *f)
{
	static char names[DISTENV_REHEARSAL_NAMES_MAX][DISTENV_HOST_MAX];
	const char *ptrs[DISTENV_REHEARSAL_NAMES_MAX];
	struct distenv_error e;
	uint32_t i, k = 0;

	for (i = 0; i < plan->nnodes && k < DISTENV_REHEARSAL_NAMES_MAX; i++) {
		if (i == plan->master_node_id || res->seen[i])
			continue;
		node_name(step, i, names[k], sizeof(names[k]));
		ptrs[k] = names[k];
		k++;
	}
	if (distenv_rehearsal_missing(plan, res->seen, ptrs, step->node_name,
				      master_addr, &e))
		*finding(f) = e;
}

/* Print the findings: warnings, or errors but the first, which err
 * takes (strict). */
static int tell(const struct findings *f, int strict, struct distenv_error *err)
{
	char line[3 * DISTENV_ERROR_TEXT];
	size_t i;

	for (i = strict ? 1 : 0; i < f->n; i++) {
		distenv_error_format(&f->e[i], line, sizeof(line));
		fprintf(stderr, "distenv: %s: %s\n",
			strict ? "error" : "warning", line);
	}
	fflush(stderr);
	if (!strict || !f->n)
		return 0;
	*err = f->e[0];
	return -1;
}

static void show_passed(const struct distenv_rehearsal_plan *plan,
			const struct distenv_step *step,
			const char *master_addr,
			const struct distenv_rehearsal_result *res)
{
	if (plan->on_master)
		fprintf(stderr,
			"distenv: rehearsal: all %u nodes checked in with "
			"%s at %s port %u (%s), and each reached its ring "
			"neighbour on an ephemeral port, in %d ms\n",
			plan->nnodes, step->node_name, master_addr,
			plan->master_port, plan->master_port_why,
			res->waited_ms);
	else
		fprintf(stderr,
			"distenv: rehearsal: %s checked in with the master "
			"%s at %s port %u and reached its ring neighbour, in "
			"%d ms\n",
			step->node_name, step->master_host, master_addr,
			plan->master_port, res->waited_ms);
	fflush(stderr);
}

/* A variable in force for the task: derived, else the user's. */
static const char *in_force(const struct distenv_vars *vars,
			    const struct distenv_step *step, const char *name)
{
	const char *v = distenv_vars_value(vars, name);

	return v ? v : distenv_env_get(step->envp, name);
}

/* This node's facts for its check-in (distenv_sys_rehearsal_facts). */
static void my_facts(const struct distenv_step *step,
		     const struct distenv_vars *vars, const char *ifname,
		     struct distenv_rehearsal_facts *facts)
{
	struct distenv_facts_source src;
	const char *off = in_force(vars, step, "NCCL_IB_DISABLE");

	memset(&src, 0, sizeof(src));
	src.ifname = ifname;
	src.hca = in_force(vars, step, "NCCL_IB_HCA");
	src.ib_disabled = off && strcmp(off, "1") == 0;
	src.eph_lo = step->ephemeral_lo;
	src.eph_hi = step->ephemeral_hi;
	distenv_sys_rehearsal_facts(&src, facts);
}

int distenv_remote_rehearsal(spank_t sp, const struct distenv_site *site,
			     const struct distenv_request *req,
			     const struct distenv_step *step,
			     const struct distenv_vars *vars,
			     struct distenv_error *err)
{
	struct distenv_step_ids ids = { 0, 0, 0, 0, 0 };
	struct distenv_rehearsal_plan plan;
	struct distenv_rehearsal_peers peers;
	struct distenv_rehearsal_result res;
	struct distenv_net_facts facts;
	struct distenv_master_choice next;
	struct findings f;
	const char *maddr = distenv_vars_value(vars, "MASTER_ADDR");
	const char *mport = distenv_vars_value(vars, "MASTER_PORT");
	const char *ifname = distenv_vars_value(vars, "GLOO_SOCKET_IFNAME");
	char next_host[DISTENV_HOST_MAX] = "?", src_text[DISTENV_IP_TEXT_MAX];
	int strict = req->check == DISTENV_CHECK_STRICT, timeout_ms = 0, rc;
	uint32_t port = 0;

	memset(&f, 0, sizeof(f));
	distenv_spank_step_ids(sp, &ids);
	if (distenv_rehearsal_parse_timeout(
		    distenv_env_get(step->envp, DISTENV_REHEARSAL_TIMEOUT_VAR),
		    &timeout_ms, finding(&f)))
		return distenv_rehearsal_wanted(step, req->check, 1, ids.het) ?
			       tell(&f, strict, err) :
			       0;
	f.n = 0;
	if (!distenv_rehearsal_wanted(step, req->check, timeout_ms, ids.het) ||
	    !maddr || !mport || distenv_parse_u32(mport, 65535, &port))
		return 0;
	if (distenv_rehearsal_plan(step, site, (uint16_t) port, timeout_ms,
				   &plan, &f.e[0])) {
		f.n = 1;
		return tell(&f, strict, err);
	}
	memset(&peers, 0, sizeof(peers));
	memset(&facts, 0, sizeof(facts));
	memset(&res, 0, sizeof(res));
	distenv_error_clear(&f.e[0]);
	if (master_ip(maddr, &peers.master, &f.e[0]) ||
	    find_next(site, step, plan.next_node_id, peers.master.family,
		      next_host, sizeof(next_host), &facts, &next, &f.e[0])) {
		distenv_net_facts_free(&facts);
		f.n = 1;
		distenv_error_prefix_where(&f.e[0], "network rehearsal");
		return tell(&f, strict, err);
	}
	peers.next = next.ip;
	source_address(&facts.net, ifname, peers.master.family, &peers.src);
	distenv_net_facts_free(&facts);
	src_text[0] = '\0';
	if (peers.src.family)
		distenv_ip_format(&peers.src, src_text, sizeof(src_text));
	my_facts(step, vars, ifname, &peers.facts);
	res.seen = calloc(plan.nnodes, 1);
	res.facts = calloc(plan.nnodes, sizeof(*res.facts));
	if (!res.seen || !res.facts) {
		free(res.seen);
		free(res.facts);
		return 0;
	}
	res.facts[plan.node_id] = peers.facts;
	distenv_sys_rehearse(&plan, &peers, &res);
	judge(&plan, step, maddr, ifname ? ifname : "?", src_text, next_host,
	      next.addr, &res, &f);
	if (plan.on_master)
		judge_missing(&plan, step, maddr, &res, &f);
	judge_facts(&plan, step, &peers.facts, &res, &f);
	slurm_debug("distenv: job %u step %u node %s: rehearsal: %zu "
		    "findings in %d ms",
		    plan.job_id, plan.step_id, step->node_name, f.n,
		    res.waited_ms);
	free(res.seen);
	free(res.facts);
	if (!f.n && req->show)
		show_passed(&plan, step, maddr, &res);
	rc = tell(&f, strict, err);
	return rc;
}
