/*
 * cmd_topo.c: `distenv topo`: the GPUs, network interfaces and HCAs of a
 * node as hwloc sees them (or a topology XML file: lstopo FILE.xml on
 * the machine, then distenv topo --xml FILE.xml anywhere), and which
 * HCAs and interfaces distenv would pick for a set of GPUs, with the
 * reasons. For admins checking a new machine type. Its options are the
 * option table's rows for topo (distenv_option_table.c).
 *
 * NCCL_IB_HCA is shown as distenv sets it: one value for every task of a
 * step holding those GPUs on the node. The HCA nearest to each GPU
 * follows as information only: NCCL pairs each GPU with it by itself.
 * Without --gpus, the GPUs are the step's on this node as a task sees
 * them (distenv_topo_node_gpus), else all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "distenv_hca.h"
#include "distenv_topo.h"
#include "distenv_topo_hwloc.h"

extern char **environ;

static const char *place_num(int v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%d", v);
	return buf;
}

static void print_bridges(const struct distenv_topo_place *pl)
{
	unsigned i;

	if (!pl->n_bridges)
		fputs("-", stdout);
	for (i = 0; i < pl->n_bridges; i++)
		printf("%s%s", i ? ">" : "", pl->bridges[i]);
}

static void print_gpus(const struct distenv_topo *topo)
{
	size_t i;

	printf("GPUs (NVIDIA PCI devices, bus-id order):\n");
	if (!topo->n_gpus)
		printf("  none\n");
	for (i = 0; i < topo->n_gpus; i++) {
		const struct distenv_topo_gpu *g = &topo->gpus[i];
		char numa[16], pkg[16];

		printf("  GPU %d  %s  NUMA %s  package %s  bridges ",
		       g->minor >= 0 ? g->minor : (int) i, g->place.busid,
		       place_num(g->place.numa, numa, sizeof(numa)),
		       place_num(g->place.package, pkg, sizeof(pkg)));
		print_bridges(&g->place);
		if (g->uuid[0])
			printf("  %s", g->uuid);
		putchar('\n');
	}
}

static const char *port_state_name(int state)
{
	/* Linux sysfs infiniband/<hca>/ports/N/state values. */
	static const char *const names[] = {
		"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"
	};

	return state >= 0 && state <= 5 ? names[state] : "?";
}

static void print_nics(const struct distenv_topo *topo)
{
	size_t i;
	unsigned p;

	printf("network devices:\n");
	if (!topo->n_nics)
		printf("  none\n");
	for (i = 0; i < topo->n_nics; i++) {
		const struct distenv_topo_nic *n = &topo->nics[i];
		char numa[16], pkg[16];

		printf("  %-12s %-6s %s  NUMA %s  package %s  bridges ",
		       n->name, n->kind == DISTENV_TOPO_HCA ? "HCA" : "netdev",
		       n->place.busid[0] ? n->place.busid : "virtual",
		       place_num(n->place.numa, numa, sizeof(numa)),
		       place_num(n->place.package, pkg, sizeof(pkg)));
		print_bridges(&n->place);
		for (p = 0; p < n->n_ports; p++)
			if (n->port_state[p])
				printf("  port %u %s", p + 1,
				       port_state_name(n->port_state[p]));
		if (n->peer[0])
			printf("  (with %s)", n->peer);
		putchar('\n');
	}
}

/* The HCAs nearest to each GPU alone: information, not a value to set
 * per rank (NCCL pairs each GPU with its nearest NIC itself). */
static void print_nearest(const struct distenv_topo *topo, const size_t *sel,
			  size_t n_sel)
{
	struct distenv_topo_plan *one = malloc(sizeof(*one));
	size_t i, k;
	int shown = 0;

	if (!one)
		return;
	for (i = 0; i < n_sel; i++) {
		distenv_topo_rank(topo, &sel[i], 1, one);
		if (!one->n_hcas)
			continue;
		if (!shown++)
			printf("  nearest HCA of each GPU (information; NCCL "
			       "pairs them itself):\n");
		printf("    GPU %d:", topo->gpus[sel[i]].minor >= 0 ?
					      topo->gpus[sel[i]].minor :
					      (int) sel[i]);
		for (k = 0; k < one->n_hcas; k++)
			printf("%s %s", k ? "," : "",
			       topo->nics[one->hcas[k].nic].name);
		printf(" (%s)\n", distenv_topo_level_name(one->hcas[0].level));
	}
	free(one);
}

static void print_plan(const struct distenv_topo *topo, const size_t *sel,
		       size_t n_sel, const char *from)
{
	struct distenv_topo_plan *plan = malloc(sizeof(*plan));
	char hca[1024];
	size_t i;

	if (!plan)
		return;
	printf("for GPUs");
	for (i = 0; i < n_sel; i++)
		printf("%s%d", i ? "," : " ",
		       topo->gpus[sel[i]].minor >= 0 ?
			       topo->gpus[sel[i]].minor :
			       (int) sel[i]);
	printf("%s (%s):\n", n_sel ? "" : " none", from);
	distenv_topo_rank(topo, sel, n_sel, plan);
	distenv_topo_hca_value(topo, plan, hca, sizeof(hca));
	if (hca[0])
		printf("  NCCL_IB_HCA=%s\n", hca);
	else
		printf("  NCCL_IB_HCA: not set (no HCA for these GPUs)\n");
	for (i = 0; i < plan->n_hcas; i++)
		printf("    %s\n", plan->hcas[i].reason);
	if (plan->skipped[0])
		printf("    left out: %s\n", plan->skipped);
	if (hca[0])
		printf("  (one value for every task of a step holding these "
		       "GPUs on the node)\n");
	print_nearest(topo, sel, n_sel);
	printf("  interfaces, closest first (NCCL_SOCKET_IFNAME takes the "
	       "first that reaches the master):\n");
	if (!plan->n_netdevs)
		printf("    none\n");
	for (i = 0; i < plan->n_netdevs; i++)
		printf("    %s\n", plan->netdevs[i].reason);
	free(plan);
}

int distenv_cmd_topo(const struct distenv_command *cmd, int argc, char **argv)
{
	struct distenv_cmd_options o;
	const char *value;
	const char *xml = NULL, *gpus = NULL;
	const char *nvidia_dir = DISTENV_NVIDIA_GPUS_DIR;
	struct distenv_topo *topo;
	struct distenv_gpus task;
	struct distenv_error err;
	size_t sel[DISTENV_TOPO_GPUS_MAX], n_sel = 0, i;
	const char *from;
	char note[512] = "";
	int id, rc = 1;

	distenv_error_clear(&err);
	distenv_cmd_options_begin(&o, cmd);
	while ((id = distenv_cmd_option(&o, argc, argv, &value, &err)) >= 0) {
		if (id == DISTENV_OPT_XML)
			xml = value;
		else if (id == DISTENV_OPT_GPUS)
			gpus = value;
		else if (id == DISTENV_OPT_NVIDIA_DIR)
			nvidia_dir = value;
	}
	rc = distenv_cmd_options_end(&o, id, argc, argv, 0, 0, &err);
	if (rc >= 0)
		return rc;
	rc = 1;
	topo = malloc(sizeof(*topo));
	if (!topo) {
		distenv_error_set(&err, "distenv topo", NULL, "out of memory");
		return distenv_cmd_fail(&err);
	}
	if (distenv_topo_load(xml, nvidia_dir, topo, &err))
		goto out;
	distenv_gpus_read((const char *const *) environ, NULL, &task);
	if (gpus) {
		from = "--gpus";
		if (distenv_topo_parse_gpus(topo, gpus, "--gpus", sel, &n_sel,
					    note, sizeof(note), &err))
			goto out;
	} else if (distenv_topo_node_gpus(topo, &task, sel, &n_sel, &from, note,
					  sizeof(note), &err)) {
		goto out;
	} else if (!from) {
		from = "all GPUs of the node";
		for (i = 0; i < topo->n_gpus; i++)
			sel[n_sel++] = i;
	}
	printf("topology: %s%s\n", topo->source,
	       topo->have_driver_info ? " and the NVIDIA driver's GPU list" :
					"");
	print_gpus(topo);
	print_nics(topo);
	if (note[0])
		printf("note: %s\n", note);
	print_plan(topo, sel, n_sel, from);
	rc = 0;
out:
	free(topo);
	return rc ? distenv_cmd_fail(&err) : 0;
}
