/* distenv_rehearsal.c: the rehearsal's plan, protocol and messages. */
#include "distenv_rehearsal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distenv_env.h"
#include "distenv_ports.h"

/* Linux's default ip_local_port_range (ip-sysctl.rst). */
#define EPH_LO_DEFAULT 32768
#define EPH_HI_DEFAULT 60999

int distenv_rehearsal_wanted(const struct distenv_step *step, int check,
			     int timeout_ms, int het)
{
	return step->kind == DISTENV_STEP_TASKS && step->nnodes > 1 &&
	       step->localid == 0 && check != DISTENV_CHECK_OFF &&
	       timeout_ms > 0 && !het;
}

int distenv_rehearsal_parse_timeout(const char *text, int *ms,
				    struct distenv_error *err)
{
	uint32_t s;
	char shown[40];

	if (!text || !*text) {
		*ms = DISTENV_REHEARSAL_TIMEOUT_MS;
		return 0;
	}
	if (distenv_parse_u32(text, 600, &s))
		return distenv_error_set(
			err, DISTENV_REHEARSAL_TIMEOUT_VAR,
			"give whole seconds 0-600 (0: no rehearsal), or unset "
			"it for the default of 5",
			"'%s' is not a number of seconds 0-600",
			distenv_printable(text, shown, sizeof(shown)));
	*ms = (int) s * 1000;
	return 0;
}

int distenv_rehearsal_port(const struct distenv_step *step,
			   const struct distenv_site *site,
			   uint16_t master_port, uint16_t *port, char *why,
			   size_t why_len, struct distenv_error *err)
{
	uint32_t half = ((uint32_t) site->port_hi - site->port_lo + 1) / 2;
	uint32_t extra;

	if (step->resv_ports && step->resv_ports[0] &&
	    distenv_resv_ports_nth(step->resv_ports, 1, port) == 0 &&
	    *port != master_port) {
		snprintf(why, why_len,
			 "the second port of SLURM_STEP_RESV_PORTS=%s, "
			 "reserved by Slurm for this step",
			 step->resv_ports);
		return 0;
	}
	/* half the range away; one more when that is MASTER_PORT itself
	 * (a --distenv-port that happens to be there) */
	for (extra = 0; extra < 2; extra++) {
		if (distenv_derive_port(step->job_id,
					step->step_id + half + extra,
					site->port_lo, site->port_hi,
					step->ephemeral_lo, step->ephemeral_hi,
					port, err))
			return -1;
		if (*port != master_port)
			break;
	}
	snprintf(why, why_len,
		 "derived from job %u step %u in port_range %u-%u, half the "
		 "range away from MASTER_PORT %u (Slurm reserved %s)",
		 step->job_id, step->step_id, site->port_lo, site->port_hi,
		 master_port,
		 step->resv_ports && step->resv_ports[0] ? "one port only" :
							   "no ports");
	return 0;
}

/* A 32-bit mix (the finaliser of MurmurHash3), so that neighbouring
 * ids land far apart in the range. */
static uint32_t mix(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

uint16_t distenv_rehearsal_ring_port(uint32_t job_id, uint32_t step_id,
				     uint32_t node_id, unsigned try_no,
				     uint16_t eph_lo, uint16_t eph_hi)
{
	uint32_t lo = eph_lo, hi = eph_hi, h;

	if (lo > hi || lo == 0) {
		lo = EPH_LO_DEFAULT;
		hi = EPH_HI_DEFAULT;
	}
	h = mix(job_id);
	h = mix(h ^ step_id);
	h = mix(h ^ node_id);
	h = mix(h ^ try_no);
	return (uint16_t) (lo + h % (hi - lo + 1));
}

uint32_t distenv_rehearsal_next(uint32_t node_id, uint32_t nnodes)
{
	return node_id + 1 >= nnodes ? 0 : node_id + 1;
}

uint32_t distenv_rehearsal_prev(uint32_t node_id, uint32_t nnodes)
{
	return node_id == 0 ? nnodes - 1 : node_id - 1;
}

int distenv_rehearsal_plan(const struct distenv_step *step,
			   const struct distenv_site *site,
			   uint16_t master_port, int timeout_ms,
			   struct distenv_rehearsal_plan *plan,
			   struct distenv_error *err)
{
	unsigned t;

	memset(plan, 0, sizeof(*plan));
	plan->job_id = step->job_id;
	plan->step_id = step->step_id;
	plan->nnodes = step->nnodes;
	plan->node_id = step->node_id;
	plan->master_node_id = step->master_node_id;
	plan->on_master = step->node_id == step->master_node_id;
	plan->next_node_id =
		distenv_rehearsal_next(step->node_id, step->nnodes);
	plan->prev_node_id =
		distenv_rehearsal_prev(step->node_id, step->nnodes);
	plan->eph_lo = step->ephemeral_lo;
	plan->eph_hi = step->ephemeral_hi;
	plan->timeout_ms = timeout_ms;
	for (t = 0; t < DISTENV_REHEARSAL_RING_TRIES; t++) {
		plan->ring_ports[t] =
			distenv_rehearsal_ring_port(step->job_id, step->step_id,
						    step->node_id, t,
						    step->ephemeral_lo,
						    step->ephemeral_hi);
		plan->next_ports[t] =
			distenv_rehearsal_ring_port(step->job_id, step->step_id,
						    plan->next_node_id, t,
						    step->ephemeral_lo,
						    step->ephemeral_hi);
	}
	return distenv_rehearsal_port(step, site, master_port,
				      &plan->master_port, plan->master_port_why,
				      sizeof(plan->master_port_why), err);
}

void distenv_rehearsal_line(char *buf, size_t len, const char *kind,
			    uint32_t job_id, uint32_t step_id, uint32_t node_id)
{
	snprintf(buf, len, "distenv-%s %u %u %u\n", kind, job_id, step_id,
		 node_id);
}

int distenv_rehearsal_line_parse(const char *line, const char *kind,
				 uint32_t job_id, uint32_t step_id,
				 uint32_t *node_id)
{
	char want[32], word[32], extra;
	unsigned long j, s, n;

	if (!line)
		return -1;
	snprintf(want, sizeof(want), "distenv-%s", kind);
	if (sscanf(line, "%31s %lu %lu %lu %c", word, &j, &s, &n, &extra) !=
		    4 ||
	    strcmp(word, want) != 0 || j != job_id || s != step_id ||
	    n > UINT32_MAX)
		return -1;
	*node_id = (uint32_t) n;
	return 0;
}

enum distenv_rehearsal_cause distenv_rehearsal_cause_of(int errnum)
{
	switch (errnum) {
	case 0:
		return DISTENV_REHEARSAL_OK;
	case ECONNREFUSED:
		return DISTENV_REHEARSAL_REFUSED;
	case ETIMEDOUT:
	case EINPROGRESS:
	case EALREADY:
		return DISTENV_REHEARSAL_TIMED_OUT;
	case EHOSTUNREACH:
	case ENETUNREACH:
		return DISTENV_REHEARSAL_NO_ROUTE;
	default:
		return DISTENV_REHEARSAL_OTHER;
	}
}

static const char *cause_text(enum distenv_rehearsal_cause c)
{
	switch (c) {
	case DISTENV_REHEARSAL_OK:
		return "connected";
	case DISTENV_REHEARSAL_REFUSED:
		return "refused (nothing listened, or a firewall rejects)";
	case DISTENV_REHEARSAL_TIMED_OUT:
		return "timed out (no answer: a firewall drops the packets)";
	case DISTENV_REHEARSAL_NO_ROUTE:
		return "no route to the host";
	case DISTENV_REHEARSAL_FOREIGN:
		return "another program answered on the port";
	case DISTENV_REHEARSAL_LISTEN:
		return "could not listen";
	default:
		return "failed";
	}
}

int distenv_rehearsal_link_error(const struct distenv_rehearsal_plan *plan,
				 const struct distenv_rehearsal_link *l,
				 struct distenv_error *err)
{
	char fix[DISTENV_ERROR_TEXT];
	const char *detail = l->detail && l->detail[0] ? l->detail : NULL;

	if (l->cause == DISTENV_REHEARSAL_NO_ROUTE)
		snprintf(fix, sizeof(fix),
			 "%s has no route to %s over %s: check the nodes' "
			 "routes, or choose the interface with "
			 "--distenv-ifname",
			 l->from_node, l->to_addr, l->ifname);
	else if (l->ring)
		snprintf(fix, sizeof(fix),
			 "on %s, let TCP from the step's nodes reach the "
			 "kernel's ephemeral range %u-%u: NCCL and Gloo "
			 "listen on ports from it that cannot be chosen "
			 "(nftables: tcp dport %u-%u accept, for the nodes' "
			 "subnet), and check that the nodes' "
			 "ip_local_port_range agree; or --distenv-check=off "
			 "to skip this rehearsal",
			 l->to_node, plan->eph_lo, plan->eph_hi, plan->eph_lo,
			 plan->eph_hi);
	else
		snprintf(fix, sizeof(fix),
			 "on %s, let TCP from the step's nodes reach port %u "
			 "(%s), MASTER_PORT and the ephemeral range %u-%u "
			 "(nftables: tcp dport accept rules for the nodes' "
			 "subnet); if %s's task starts late, raise %s; or "
			 "--distenv-check=off to skip this rehearsal",
			 l->to_node, l->port, plan->master_port_why,
			 plan->eph_lo, plan->eph_hi, l->to_node,
			 DISTENV_REHEARSAL_TIMEOUT_VAR);
	return distenv_error_set(
		err, l->from_node, fix,
		"network rehearsal: %s cannot reach %s%s at %s port %u%s "
		"from %s over %s: %s%s%s after %d ms",
		l->from_node, l->ring ? "its ring neighbour " : "the master ",
		l->to_node, l->to_addr, l->port,
		l->ring ? " (ephemeral range, as NCCL and Gloo use)" :
			  " (the check-in before MASTER_PORT)",
		l->src_addr && l->src_addr[0] ? l->src_addr : "its address",
		l->ifname, cause_text(l->cause), detail ? ": " : "",
		detail ? detail : "", l->waited_ms);
}

uint32_t distenv_rehearsal_missing(const struct distenv_rehearsal_plan *plan,
				   const unsigned char *seen,
				   const char *const *names,
				   const char *master_node,
				   const char *master_addr,
				   struct distenv_error *err)
{
	char list[DISTENV_ERROR_TEXT] = "";
	size_t used = 0;
	uint32_t i, missing = 0;

	for (i = 0; i < plan->nnodes; i++) {
		if (i == plan->master_node_id || seen[i])
			continue;
		if (missing < DISTENV_REHEARSAL_NAMES_MAX &&
		    used < sizeof(list)) {
			const char *name =
				names && names[missing] ? names[missing] : "?";
			int n = snprintf(list + used, sizeof(list) - used,
					 "%s%s (node index %u)",
					 missing ? ", " : "", name, i);

			if (n > 0)
				used += (size_t) n;
		}
		missing++;
	}
	if (!missing)
		return 0;
	distenv_error_set(
		err, master_node,
		"read each missing node's own distenv line in the job's output: "
		"it names the connection it could not make; none: its task "
		"reached distenv later than the wait (a slow prolog, a plugin "
		"listed before distenv; raise DISTENV_REHEARSAL_TIMEOUT) or "
		"never started; or a firewall on this node drops the port",
		"network rehearsal: %u of %u nodes never checked in with the "
		"master %s at %s port %u within %d ms: %s%s",
		missing, plan->nnodes, master_node, master_addr,
		plan->master_port, plan->timeout_ms, list,
		missing > DISTENV_REHEARSAL_NAMES_MAX ? ", ..." : "");
	return missing;
}
