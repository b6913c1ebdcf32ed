/* distenv_topo.c: GPUs of a task, and the NICs and HCAs closest to them. */
#include "distenv_topo.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "distenv_env.h"

int distenv_topo_busid_normalise(const char *in, char *out, size_t len)
{
	unsigned dom = 0, bus, dev, fn;
	char tail;
	int n;

	if (!in)
		return -1;
	n = sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail);
	if (n != 4) {
		dom = 0;
		if (sscanf(in, "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3)
			return -1;
	}
	if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return -1;
	snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

int distenv_topo_gpu_by_busid(const struct distenv_topo *topo,
			      const char *busid)
{
	char want[DISTENV_TOPO_BUSID_MAX];
	size_t i;

	if (distenv_topo_busid_normalise(busid, want, sizeof(want)))
		return -1;
	for (i = 0; i < topo->n_gpus; i++)
		if (strcmp(topo->gpus[i].place.busid, want) == 0)
			return (int) i;
	return -1;
}

/* Copy the value of a "Key: value" line, blanks around it removed. */
static void line_value(const char *v, size_t n, char *out, size_t len)
{
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n && isspace((unsigned char) v[n - 1]))
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(out, v, n);
	out[n] = '\0';
}

int distenv_topo_parse_gpu_info(const char *text, const char *dir_busid,
				const char *where,
				struct distenv_topo_gpu_info *out,
				struct distenv_error *err)
{
	char bus[64] = "", minor[32] = "";
	const char *line = text;

	memset(out, 0, sizeof(*out));
	out->minor = -1;
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t) (end - line) : strlen(line);
		const char *colon = memchr(line, ':', n);

		if (colon) {
			size_t klen = (size_t) (colon - line);
			const char *v = colon + 1;
			size_t vlen = n - klen - 1;

			if (klen == 8 && strncmp(line, "GPU UUID", 8) == 0)
				line_value(v, vlen, out->uuid,
					   sizeof(out->uuid));
			else if (klen == 12 &&
				 strncmp(line, "Bus Location", 12) == 0)
				line_value(v, vlen, bus, sizeof(bus));
			else if (klen == 12 &&
				 strncmp(line, "Device Minor", 12) == 0)
				line_value(v, vlen, minor, sizeof(minor));
		}
		line = end ? end + 1 : NULL;
	}
	if (distenv_topo_busid_normalise(bus[0] ? bus : dir_busid, out->busid,
					 sizeof(out->busid)))
		return distenv_error_set(err, where, NULL,
					 "no PCI bus id in 'Bus Location' nor "
					 "in the directory name");
	if (minor[0]) {
		uint32_t m;

		if (distenv_parse_u32(minor, 1u << 20, &m))
			return distenv_error_set(err, where, NULL,
						 "'Device Minor: %s' is not a "
						 "number",
						 minor);
		out->minor = (int) m;
	}
	if (out->minor < 0 && !out->uuid[0])
		return distenv_error_set(err, where, NULL,
					 "neither 'GPU UUID' nor 'Device "
					 "Minor' in the file");
	return 0;
}

static int all_digits(const char *s, size_t n)
{
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!isdigit((unsigned char) s[i]))
			return 0;
	return 1;
}

void distenv_topo_note_add(char *note, size_t len, const char *fmt, ...)
{
	size_t used = strlen(note);
	va_list ap;

	if (used + 1 >= len)
		return;
	snprintf(note + used, len - used, "%s", used ? ", " : "");
	used = strlen(note);
	va_start(ap, fmt);
	vsnprintf(note + used, len - used, fmt, ap);
	va_end(ap);
}

/* The GPU an index names (see distenv_topo_parse_gpus), or -1. */
static int gpu_by_index(const struct distenv_topo *topo, uint32_t n)
{
	size_t i;

	if (!topo->have_driver_info)
		return n < topo->n_gpus ? (int) n : -1;
	for (i = 0; i < topo->n_gpus; i++)
		if (topo->gpus[i].minor == (int) n)
			return (int) i;
	return -1;
}

static int gpu_by_uuid(const struct distenv_topo *topo, const char *uuid,
		       size_t n)
{
	size_t i;

	for (i = 0; i < topo->n_gpus; i++)
		if (strlen(topo->gpus[i].uuid) == n &&
		    strncasecmp(topo->gpus[i].uuid, uuid, n) == 0)
			return (int) i;
	return -1;
}

int distenv_topo_parse_gpus(const struct distenv_topo *topo, const char *list,
			    const char *where, size_t *sel, size_t *n_sel,
			    char *note, size_t len, struct distenv_error *err)
{
	const char *p = list;

	*n_sel = 0;
	if (len)
		note[0] = '\0';
	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t) (end - p) : strlen(p);
		char entry[DISTENV_TOPO_UUID_MAX];
		int gi = -1;
		size_t k;

		if (n == 0 || n >= sizeof(entry))
			return distenv_error_set(
				err, where,
				"give GPU indices or GPU-/MIG- UUIDs, "
				"comma-separated",
				"'%s' has an empty or overlong entry", list);
		memcpy(entry, p, n);
		entry[n] = '\0';
		if (all_digits(entry, n)) {
			uint32_t idx;

			if (distenv_parse_u32(entry, 1u << 20, &idx))
				return distenv_error_set(err, where, NULL,
							 "'%s': index out of "
							 "range",
							 entry);
			gi = gpu_by_index(topo, idx);
			if (gi < 0)
				distenv_topo_note_add(note, len,
						      "GPU %s is not in the "
						      "topology",
						      entry);
		} else if (strncmp(entry, "GPU-", 4) == 0) {
			gi = gpu_by_uuid(topo, entry, n);
			if (gi < 0)
				distenv_topo_note_add(note, len,
						      "%s is not in the "
						      "topology",
						      entry);
		} else if (strncmp(entry, "MIG-GPU-", 8) == 0) {
			/* MIG-GPU-<gpu uuid>/<gi>/<ci>: the parent GPU. */
			const char *slash = strchr(entry, '/');

			gi = gpu_by_uuid(topo, entry + 4,
					 slash ? (size_t) (slash - entry - 4) :
						 n - 4);
			if (gi < 0)
				distenv_topo_note_add(note, len,
						      "%s is not in the "
						      "topology",
						      entry);
		} else if (strncmp(entry, "MIG-", 4) == 0) {
			distenv_topo_note_add(note, len,
					      "%s names no parent GPU", entry);
		} else {
			return distenv_error_set(
				err, where,
				"give GPU indices or GPU-/MIG- UUIDs, "
				"comma-separated",
				"'%s' is neither an index nor a GPU UUID",
				entry);
		}
		for (k = 0; gi >= 0 && k < *n_sel; k++)
			if (sel[k] == (size_t) gi)
				gi = -1;
		if (gi >= 0 && *n_sel < DISTENV_TOPO_GPUS_MAX)
			sel[(*n_sel)++] = (size_t) gi;
		p = end ? end + 1 : NULL;
		if (end && !*p)
			return distenv_error_set(err, where, NULL,
						 "'%s' ends with a comma",
						 list);
	}
	return 0;
}

int distenv_topo_node_gpus(const struct distenv_topo *topo,
			   const struct distenv_gpus *gpus, size_t *sel,
			   size_t *n_sel, const char **from, char *note,
			   size_t len, struct distenv_error *err)
{
	size_t i;

	*n_sel = 0;
	*from = NULL;
	if (len)
		note[0] = '\0';
	if (gpus->task_known && !gpus->task_count)
		return 0; /* the task was given no GPU */
	if (gpus->node_list) {
		*from = gpus->node_list_from;
		return distenv_topo_parse_gpus(topo, gpus->node_list, *from,
					       sel, n_sel, note, len, err);
	}
	/* No SLURM_STEP_GPUS narrowed the task's list: it is the step's. */
	if (gpus->task_list && !gpus->task_step_gpus &&
	    gpus->task_count == gpus->node_count) {
		*from = "CUDA_VISIBLE_DEVICES";
		return distenv_topo_parse_gpus(topo, gpus->task_list, *from,
					       sel, n_sel, note, len, err);
	}
	/* Here node_count can only be SLURM_GPUS_ON_NODE's. */
	if (gpus->node_count && gpus->node_count == topo->n_gpus) {
		*from = "SLURM_GPUS_ON_NODE: every GPU of the node";
		for (i = 0; i < topo->n_gpus; i++)
			sel[(*n_sel)++] = i;
		return 0;
	}
	if (gpus->node_count)
		distenv_topo_note_add(note, len,
				      "the step holds %u GPUs here (%s) but no "
				      "variable says which",
				      gpus->node_count, gpus->node_count_from);
	return 0;
}

const char *distenv_topo_level_name(enum distenv_topo_level level)
{
	switch (level) {
	case DISTENV_TOPO_SAME_SWITCH:
		return "same PCI switch";
	case DISTENV_TOPO_SAME_NUMA:
		return "same NUMA node";
	case DISTENV_TOPO_SAME_PACKAGE:
		return "same package";
	case DISTENV_TOPO_ANYWHERE:
		return "other package";
	case DISTENV_TOPO_VIRTUAL:
		break;
	}
	return "virtual (no PCI device)";
}

static enum distenv_topo_level locality(const struct distenv_topo_place *g,
					const struct distenv_topo_place *n,
					unsigned *shared)
{
	unsigned i;

	*shared = 0;
	if (!n->busid[0])
		return DISTENV_TOPO_VIRTUAL;
	for (i = 0; i < g->n_bridges && i < n->n_bridges; i++) {
		if (strcmp(g->bridges[i], n->bridges[i]) != 0)
			break;
		*shared = i + 1;
	}
	if (*shared)
		return DISTENV_TOPO_SAME_SWITCH;
	if (g->numa >= 0 && g->numa == n->numa)
		return DISTENV_TOPO_SAME_NUMA;
	if (g->package >= 0 && g->package == n->package)
		return DISTENV_TOPO_SAME_PACKAGE;
	return DISTENV_TOPO_ANYWHERE;
}

/* a closer than b: lower level, then more shared bridges. */
static int closer(enum distenv_topo_level la, unsigned sa,
		  enum distenv_topo_level lb, unsigned sb)
{
	return la < lb || (la == lb && sa > sb);
}

/* The number users know a GPU by: its minor (the index Slurm and
 * nvidia-smi use) where known, else its place in bus-id order. */
static int gpu_number(const struct distenv_topo *topo, size_t gi)
{
	return topo->gpus[gi].minor >= 0 ? topo->gpus[gi].minor : (int) gi;
}

static void describe(const struct distenv_topo *topo,
		     struct distenv_topo_pick *pick)
{
	const struct distenv_topo_nic *nic = &topo->nics[pick->nic];
	const struct distenv_topo_gpu *g = &topo->gpus[pick->gpu];
	char peer[DISTENV_TOPO_NAME_MAX + 16] = "";

	if (nic->peer[0])
		snprintf(peer, sizeof(peer), " (%s %s)",
			 nic->kind == DISTENV_TOPO_HCA ? "netdev" : "on",
			 nic->peer);
	switch (pick->level) {
	case DISTENV_TOPO_SAME_SWITCH:
		snprintf(pick->reason, sizeof(pick->reason),
			 "%s: same PCI switch as GPU %d (bridge %s)%s",
			 nic->name, gpu_number(topo, pick->gpu),
			 g->place.bridges[pick->shared_bridges - 1], peer);
		break;
	case DISTENV_TOPO_SAME_NUMA:
		snprintf(pick->reason, sizeof(pick->reason),
			 "%s: same NUMA node (%d) as GPU %d%s", nic->name,
			 g->place.numa, gpu_number(topo, pick->gpu), peer);
		break;
	case DISTENV_TOPO_SAME_PACKAGE:
		snprintf(pick->reason, sizeof(pick->reason),
			 "%s: same package (%d) as GPU %d%s", nic->name,
			 g->place.package, gpu_number(topo, pick->gpu), peer);
		break;
	case DISTENV_TOPO_ANYWHERE:
		snprintf(pick->reason, sizeof(pick->reason),
			 "%s: no closer one for GPU %d (other package)%s",
			 nic->name, gpu_number(topo, pick->gpu), peer);
		break;
	case DISTENV_TOPO_VIRTUAL:
		snprintf(pick->reason, sizeof(pick->reason),
			 "%s: virtual (no PCI device)", nic->name);
		break;
	}
}

/* An HCA chosen for an earlier GPU is as close to this one too. */
static void also(const struct distenv_topo *topo,
		 struct distenv_topo_pick *pick, size_t gi)
{
	size_t used = strlen(pick->reason);

	snprintf(pick->reason + used, sizeof(pick->reason) - used,
		 ", and GPU %d", gpu_number(topo, gi));
}

static int hca_usable(const struct distenv_topo_nic *nic)
{
	unsigned p;

	if (nic->n_ports == 0)
		return 1;
	for (p = 0; p < nic->n_ports && p < DISTENV_TOPO_PORTS_MAX; p++)
		if (nic->port_state[p] == DISTENV_TOPO_PORT_ACTIVE)
			return 1;
	return 0;
}

static void rank_hcas(const struct distenv_topo *topo, const size_t *sel,
		      size_t n_sel, struct distenv_topo_plan *plan)
{
	size_t s, i, k;

	for (i = 0; i < topo->n_nics; i++) {
		const struct distenv_topo_nic *nic = &topo->nics[i];

		if (nic->kind == DISTENV_TOPO_HCA && !hca_usable(nic))
			distenv_topo_note_add(plan->skipped,
					      sizeof(plan->skipped),
					      "%s: no active port", nic->name);
	}
	for (s = 0; s < n_sel; s++) {
		const struct distenv_topo_place *g = &topo->gpus[sel[s]].place;
		enum distenv_topo_level best = DISTENV_TOPO_VIRTUAL;
		unsigned best_shared = 0, shared;

		for (i = 0; i < topo->n_nics; i++) {
			const struct distenv_topo_nic *nic = &topo->nics[i];
			enum distenv_topo_level l;

			if (nic->kind != DISTENV_TOPO_HCA || !hca_usable(nic))
				continue;
			l = locality(g, &nic->place, &shared);
			if (closer(l, shared, best, best_shared)) {
				best = l;
				best_shared = shared;
			}
		}
		for (i = 0; i < topo->n_nics; i++) {
			const struct distenv_topo_nic *nic = &topo->nics[i];
			struct distenv_topo_pick *pick;
			int seen = 0;

			if (nic->kind != DISTENV_TOPO_HCA || !hca_usable(nic) ||
			    locality(g, &nic->place, &shared) != best ||
			    shared != best_shared)
				continue;
			for (k = 0; k < plan->n_hcas; k++)
				if (plan->hcas[k].nic == i) {
					also(topo, &plan->hcas[k], sel[s]);
					seen = 1;
				}
			if (seen || plan->n_hcas >= DISTENV_TOPO_NICS_MAX)
				continue;
			pick = &plan->hcas[plan->n_hcas++];
			pick->nic = i;
			pick->level = best;
			pick->shared_bridges = best_shared;
			pick->gpu = sel[s];
			describe(topo, pick);
		}
	}
}

static void rank_netdevs(const struct distenv_topo *topo, const size_t *sel,
			 size_t n_sel, struct distenv_topo_plan *plan)
{
	size_t i, s, k;

	for (i = 0; i < topo->n_nics; i++) {
		const struct distenv_topo_nic *nic = &topo->nics[i];
		struct distenv_topo_pick pick;

		if (nic->kind != DISTENV_TOPO_NETDEV ||
		    plan->n_netdevs >= DISTENV_TOPO_NICS_MAX)
			continue;
		memset(&pick, 0, sizeof(pick));
		pick.nic = i;
		pick.level = nic->place.busid[0] ? DISTENV_TOPO_ANYWHERE :
						   DISTENV_TOPO_VIRTUAL;
		for (s = 0; s < n_sel; s++) {
			unsigned shared;
			enum distenv_topo_level l =
				locality(&topo->gpus[sel[s]].place, &nic->place,
					 &shared);

			if (s == 0 || closer(l, shared, pick.level,
					     pick.shared_bridges)) {
				pick.level = l;
				pick.shared_bridges = shared;
				pick.gpu = sel[s];
				pick.order = s;
			}
		}
		if (n_sel)
			describe(topo, &pick);
		else
			snprintf(pick.reason, sizeof(pick.reason),
				 "%s: %s, no GPU selected", nic->name,
				 pick.level == DISTENV_TOPO_VIRTUAL ?
					 "virtual (no PCI device)" :
					 "PCI device");
		/* Insert after every entry that is as close or closer:
		 * stable, so ties keep topology order. */
		for (k = plan->n_netdevs; k > 0; k--) {
			const struct distenv_topo_pick *prev =
				&plan->netdevs[k - 1];

			if (!closer(pick.level, pick.shared_bridges,
				    prev->level, prev->shared_bridges) &&
			    !(pick.level == prev->level &&
			      pick.shared_bridges == prev->shared_bridges &&
			      pick.order < prev->order))
				break;
			plan->netdevs[k] = *prev;
		}
		plan->netdevs[k] = pick;
		plan->n_netdevs++;
	}
}

void distenv_topo_rank(const struct distenv_topo *topo, const size_t *sel,
		       size_t n_sel, struct distenv_topo_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	rank_hcas(topo, sel, n_sel, plan);
	rank_netdevs(topo, sel, n_sel, plan);
}

/* Append s to buf; a part that does not fit is left out whole. */
void distenv_topo_append(char *buf, size_t len, size_t *used, const char *s)
{
	size_t n = strlen(s);

	if (*used + n + 1 > len) {
		*used = len;
		return;
	}
	memcpy(buf + *used, s, n + 1);
	*used += n;
}

const char *distenv_topo_reasons(const struct distenv_topo_pick *picks,
				 size_t n, char *buf, size_t len)
{
	size_t used = 0, i;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i)
			distenv_topo_append(buf, len, &used, "; ");
		distenv_topo_append(buf, len, &used, picks[i].reason);
	}
	return buf;
}

int distenv_topo_prefer(const struct distenv_topo *topo,
			const struct distenv_topo_plan *plan,
			const char *const *names, size_t n,
			const struct distenv_topo_pick **pick)
{
	enum distenv_topo_level best_level = DISTENV_TOPO_VIRTUAL;
	unsigned best_shared = 0;
	int best = -1;
	size_t i, k;

	if (pick)
		*pick = NULL;
	for (i = 0; i < n; i++) {
		const struct distenv_topo_pick *found = NULL;
		enum distenv_topo_level l = DISTENV_TOPO_VIRTUAL;
		unsigned shared = 0;

		for (k = 0; k < plan->n_netdevs; k++)
			if (strcmp(topo->nics[plan->netdevs[k].nic].name,
				   names[i]) == 0)
				found = &plan->netdevs[k];
		if (found) {
			l = found->level;
			shared = found->shared_bridges;
		}
		if (best < 0 || closer(l, shared, best_level, best_shared)) {
			best = (int) i;
			best_level = l;
			best_shared = shared;
			if (pick)
				*pick = found;
		}
	}
	return best;
}

const char *distenv_topo_summary(const struct distenv_topo *topo, char *buf,
				 size_t len)
{
	size_t hcas = 0, i;

	for (i = 0; i < topo->n_nics; i++)
		hcas += topo->nics[i].kind == DISTENV_TOPO_HCA;
	snprintf(buf, len, "%s: %zu GPUs%s, %zu HCAs, %zu network interfaces",
		 topo->source, topo->n_gpus,
		 topo->have_driver_info ? " (with the driver's GPU list)" : "",
		 hcas, topo->n_nics - hcas);
	return buf;
}
