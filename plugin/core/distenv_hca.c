/*
 * distenv_hca.c: NCCL_IB_HCA: the value from the topology's ranking, the
 * check of a given list as NCCL's IB transport reads it, and the
 * derivation's rule that picks among the user's, the site's and the
 * topology's (distenv_hca.h).
 */
#include "distenv_hca.h"

#include <stdio.h>
#include <string.h>

#include "distenv_derive_int.h"
#include "distenv_env.h"
#include "distenv_ifspec.h"

const char *distenv_topo_hca_value(const struct distenv_topo *topo,
				   const struct distenv_topo_plan *plan,
				   char *buf, size_t len)
{
	char one[DISTENV_TOPO_NAME_MAX + 16];
	size_t used = 0, i;
	unsigned p;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < plan->n_hcas; i++) {
		const struct distenv_topo_nic *nic =
			&topo->nics[plan->hcas[i].nic];

		if (nic->n_ports == 0) {
			snprintf(one, sizeof(one), "%s%s", used ? "," : "=",
				 nic->name);
			distenv_topo_append(buf, len, &used, one);
			continue;
		}
		for (p = 0; p < nic->n_ports && p < DISTENV_TOPO_PORTS_MAX;
		     p++) {
			if (nic->port_state[p] != DISTENV_TOPO_PORT_ACTIVE)
				continue;
			snprintf(one, sizeof(one), "%s%s:%u", used ? "," : "=",
				 nic->name, p + 1);
			distenv_topo_append(buf, len, &used, one);
		}
	}
	return buf;
}

/* One entry of an NCCL_IB_HCA list: the name part and the port after
 * ':' (-1: every port). */
struct hca_entry {
	char name[DISTENV_IFNAME_MAX];
	int port;
};

static int hca_entries(const char *text, const char *where,
		       struct distenv_ifspec *spec, struct hca_entry *out,
		       struct distenv_error *err)
{
	size_t i;

	if (distenv_ifspec_parse(text, where, spec, err))
		return -1;
	for (i = 0; i < spec->count; i++) {
		const char *colon = strchr(spec->names[i], ':');
		uint32_t port;

		snprintf(out[i].name, sizeof(out[i].name), "%.*s",
			 colon ? (int) (colon - spec->names[i]) :
				 (int) strlen(spec->names[i]),
			 spec->names[i]);
		out[i].port = -1;
		if (!colon)
			continue;
		if (distenv_parse_u32(colon + 1, 255, &port) || port == 0)
			return distenv_error_set(
				err, where,
				"write HCA names with an optional port, e.g. "
				"=mlx5_0:1,mlx5_1:1",
				"'%s': the port after ':' is not a number from 1",
				spec->names[i]);
		out[i].port = (int) port;
	}
	return 0;
}

/* Whether the list selects port (-1: the HCA has no port state) of nic. */
static int hca_port_selected(const struct distenv_ifspec *spec,
			     const struct hca_entry *e, const char *nic,
			     int port)
{
	size_t i;
	int hit = 0;

	for (i = 0; i < spec->count && !hit; i++) {
		int name = spec->exact ? strcmp(nic, e[i].name) == 0 :
					 strncmp(nic, e[i].name,
						 strlen(e[i].name)) == 0;

		hit = name && (e[i].port < 0 || port < 0 || e[i].port == port);
	}
	return spec->exclude ? !hit : hit;
}

int distenv_topo_hca_selects(const struct distenv_topo *topo, const char *text,
			     const char *where, struct distenv_error *err)
{
	struct distenv_ifspec spec;
	struct hca_entry e[DISTENV_IFSPEC_MAX_NAMES];
	size_t i;
	unsigned p;

	if (hca_entries(text, where, &spec, e, err))
		return -1;
	for (i = 0; i < topo->n_nics; i++) {
		const struct distenv_topo_nic *nic = &topo->nics[i];

		if (nic->kind != DISTENV_TOPO_HCA)
			continue;
		if (nic->n_ports == 0 &&
		    hca_port_selected(&spec, e, nic->name, -1))
			return 1;
		for (p = 0; p < nic->n_ports && p < DISTENV_TOPO_PORTS_MAX; p++)
			if (nic->port_state[p] == DISTENV_TOPO_PORT_ACTIVE &&
			    hca_port_selected(&spec, e, nic->name, (int) p + 1))
				return 1;
	}
	return 0;
}

int distenv_hca_list_selects(const char *text, const char *dev, int port)
{
	struct distenv_ifspec spec;
	struct hca_entry e[DISTENV_IFSPEC_MAX_NAMES];
	struct distenv_error err;

	if (!text || !*text)
		return 1;
	if (hca_entries(text, "NCCL_IB_HCA", &spec, e, &err))
		return -1;
	return hca_port_selected(&spec, e, dev, port);
}

const char *distenv_topo_hca_ports(const struct distenv_topo *topo, char *buf,
				   size_t len)
{
	char one[DISTENV_TOPO_NAME_MAX + 16], idle[256] = "";
	size_t used = 0, i;
	unsigned p;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < topo->n_nics; i++) {
		const struct distenv_topo_nic *nic = &topo->nics[i];
		int active = nic->n_ports == 0;

		if (nic->kind != DISTENV_TOPO_HCA)
			continue;
		if (nic->n_ports == 0) {
			snprintf(one, sizeof(one), "%s%s", used ? ", " : "",
				 nic->name);
			distenv_topo_append(buf, len, &used, one);
		}
		for (p = 0; p < nic->n_ports && p < DISTENV_TOPO_PORTS_MAX;
		     p++) {
			if (nic->port_state[p] != DISTENV_TOPO_PORT_ACTIVE)
				continue;
			active = 1;
			snprintf(one, sizeof(one), "%s%s:%u", used ? ", " : "",
				 nic->name, p + 1);
			distenv_topo_append(buf, len, &used, one);
		}
		if (!active)
			distenv_topo_note_add(idle, sizeof(idle), "%s",
					      nic->name);
	}
	if (idle[0]) {
		distenv_topo_append(buf, len, &used,
				    used ? "; no active port: " :
					   "no active port: ");
		distenv_topo_append(buf, len, &used, idle);
	}
	if (!used)
		snprintf(buf, len, "none");
	return buf;
}

/*
 * With the node's topology, a list the user or the site gave for
 * NCCL_IB_HCA must select an active port of this node's HCAs
 * (distenv_topo_hca_selects): otherwise NCCL finds no IB device and
 * falls back to TCP sockets without a word (nccl
 * src/transport/net_ib.cc, ncclIbInit). Without a topology nothing is
 * known to compare with, and nothing is checked.
 */
static int check_hca_list(struct derivation *d, const char *what,
			  const char *value, const char *fix)
{
	char where[DISTENV_HOST_MAX + 64], ports[512];
	int rc;

	if (!d->step->topo)
		return 0;
	snprintf(where, sizeof(where), "node %s: %s", d->step->node_name, what);
	rc = distenv_topo_hca_selects(d->step->topo, value, where, d->err);
	if (rc != 0)
		return rc < 0 ? -1 : 0;
	distenv_topo_hca_ports(d->step->topo, ports, sizeof(ports));
	return distenv_error_set(
		d->err, where, fix,
		"'%s' selects no active port of this node's HCAs (%s): NCCL "
		"would find no InfiniBand device and fall back to TCP sockets "
		"without a word",
		value, ports);
}

/*
 * NCCL_IB_HCA, one value for the whole node: the user's (kept), the
 * site's fixed list (site policy hca:), or with a topology the HCAs
 * closest to the step's GPUs on this node, active ports only, ordered by
 * GPU (distenv_topo_node_gpus, distenv_topo_rank,
 * distenv_topo_hca_value); nothing for hca: off, without a topology, or
 * when no HCA is near. Never the HCA of one task's GPU: NCCL pairs each
 * GPU with its closest NIC itself, and a value that differs between the
 * ranks of a node makes its topology search fail (docs/contracts.md 4).
 */
int derive_emit_hca(struct derivation *d)
{
	char value[DISTENV_IFSPEC_TEXT_MAX], reasons[768], gpus[128];
	const struct topo_view *t = d->topo;
	const char *user = distenv_env_user_value(d->step->envp, "NCCL_IB_HCA");
	size_t i, used = 0;

	if (user &&
	    check_hca_list(
		    d, "NCCL_IB_HCA (exported)", user,
		    "name an HCA port this node has (e.g. =mlx5_0:1), or "
		    "unset NCCL_IB_HCA and let distenv derive it"))
		return -1;
	if (d->site->hca_mode == DISTENV_HCA_OFF)
		return 0;
	if (d->site->hca_mode == DISTENV_HCA_FIXED) {
		if (!user &&
		    check_hca_list(d, "site policy hca:", d->site->hca,
				   "ask the admin to correct hca: in the site "
				   "policy file for this node type, or export "
				   "NCCL_IB_HCA=<an HCA port of this node>"))
			return -1;
		return derive_emit(d, "NCCL_IB_HCA", d->site->hca,
				   "site policy hca: (a fixed list)%s%s",
				   d->site->partition[0] ? ", partition " : "",
				   d->site->partition);
	}
	if (!t || !t->plan.n_hcas)
		return 0;
	distenv_topo_hca_value(d->step->topo, &t->plan, value, sizeof(value));
	if (!value[0])
		return 0;
	gpus[0] = '\0';
	for (i = 0; i < t->n_gpus && used < sizeof(gpus); i++) {
		const struct distenv_topo_gpu *g =
			&d->step->topo->gpus[t->gpus[i]];
		int w = snprintf(gpus + used, sizeof(gpus) - used, "%s%d",
				 i ? "," : "",
				 g->minor >= 0 ? g->minor : (int) t->gpus[i]);

		if (w < 0)
			break;
		used += (size_t) w;
	}
	distenv_topo_reasons(t->plan.hcas, t->plan.n_hcas, reasons,
			     sizeof(reasons));
	/* NCCL env docs, NCCL_IB_HCA: "=" for exact names, name:port. */
	return derive_emit(
		d, "NCCL_IB_HCA", value,
		"HCAs closest to GPUs %s (%s): %s%s%s; the same for every "
		"task of the node",
		gpus, t->source ? t->source : "-", reasons,
		t->note[0] ? "; not placed: " : "", t->note);
}
