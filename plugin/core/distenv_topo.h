/*
 * distenv_topo.h: one node's topology as distenv needs it, and the
 * ranking of InfiniBand HCAs and network interfaces by closeness to a
 * task's GPUs (NCCL_IB_HCA's value and checks: distenv_hca.h). Pure:
 * plain structs in (filled from hwloc by distenv_topo_hwloc.h, or by
 * hand in tests), ordered choices with reasons out; no system call, no
 * output.
 *
 * Locality, best first (the same ladder as NCCL's path types
 * PIX/PXB, PHB, SYS in the NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL docs):
 *   1. same PCI switch: the GPU and the NIC share a PCI-to-PCI bridge
 *      (a deeper shared bridge is closer);
 *   2. same NUMA node;
 *   3. same package (socket);
 *   4. anywhere on the node;
 *   5. virtual: a network interface with no PCI device behind it (veth,
 *      bridge, docker, or one the topology does not list), used only
 *      when no physical interface reaches the master.
 */
#ifndef DISTENV_TOPO_H
#define DISTENV_TOPO_H

#include <stddef.h>

#include "distenv_error.h"
#include "distenv_gpus.h"

#define DISTENV_TOPO_BUSID_MAX 16 /* "dddd:bb:dd.f" and NUL */
#define DISTENV_TOPO_BRIDGES_MAX 8 /* PCI bridge levels kept per device */
#define DISTENV_TOPO_GPUS_MAX 64
#define DISTENV_TOPO_NICS_MAX 64
#define DISTENV_TOPO_PORTS_MAX 8 /* HCA ports looked at (Port1..Port8) */
#define DISTENV_TOPO_NAME_MAX 32 /* OS device names: ib0, mlx5_0 */
#define DISTENV_TOPO_UUID_MAX 80 /* GPU-xxxxxxxx-xxxx-... */
#define DISTENV_TOPO_REASON_MAX 192
#define DISTENV_TOPO_SOURCE_MAX 320

/* Where a PCI device sits. */
struct distenv_topo_place {
	char busid[DISTENV_TOPO_BUSID_MAX]; /* "" : no PCI device (virtual) */
	/* PCI-to-PCI bridges above the device, from the host bridge down,
	 * as bus ids. Two devices under the same PCI switch share a prefix
	 * of this chain; devices whose chains share nothing meet only at a
	 * host bridge or above. */
	char bridges[DISTENV_TOPO_BRIDGES_MAX][DISTENV_TOPO_BUSID_MAX];
	unsigned n_bridges;
	int numa; /* OS index of its one local NUMA node, -1: none/several */
	int package; /* logical index of its package, -1: unknown */
};

struct distenv_topo_gpu {
	struct distenv_topo_place place;
	char uuid[DISTENV_TOPO_UUID_MAX]; /* "GPU-...", "" when unknown */
	int minor; /* /dev/nvidiaN, from the driver's information file;
		     * -1 when unknown */
};

enum distenv_topo_nic_kind {
	DISTENV_TOPO_NETDEV, /* a kernel network interface: eth0, ib0 */
	DISTENV_TOPO_HCA, /* an OpenFabrics (verbs) device: mlx5_0 */
};

/* IB port state "4: ACTIVE" (Linux sysfs infiniband/<hca>/ports/N/state,
 * which hwloc stores as the PortNState info of the OpenFabrics device). */
#define DISTENV_TOPO_PORT_ACTIVE 4

struct distenv_topo_nic {
	char name[DISTENV_TOPO_NAME_MAX];
	enum distenv_topo_nic_kind kind;
	struct distenv_topo_place place;
	/* The other half of the same PCI device: for an HCA its netdev
	 * (mlx5_0 -> ib0), for a netdev its HCA; "" when none. */
	char peer[DISTENV_TOPO_NAME_MAX];
	/* HCA ports the topology describes: port_state[p - 1] for port p,
	 * 0 where it says nothing. n_ports == 0: no port information. */
	int port_state[DISTENV_TOPO_PORTS_MAX];
	unsigned n_ports;
};

/* A node's topology. gpus are NVIDIA GPUs in PCI bus-id order. */
struct distenv_topo {
	struct distenv_topo_gpu gpus[DISTENV_TOPO_GPUS_MAX];
	size_t n_gpus;
	struct distenv_topo_nic nics[DISTENV_TOPO_NICS_MAX];
	size_t n_nics;
	int have_driver_info; /* /proc/driver/nvidia information was read */
	char source[DISTENV_TOPO_SOURCE_MAX]; /* "hwloc XML FILE", ... */
};

/* What the NVIDIA driver says of one GPU
 * (/proc/driver/nvidia/gpus/<busid>/information). */
struct distenv_topo_gpu_info {
	char busid[DISTENV_TOPO_BUSID_MAX];
	char uuid[DISTENV_TOPO_UUID_MAX];
	int minor;
};

/*
 * Parse the text of one information file: lines "Key: value" with
 * "GPU UUID", "Bus Location" and "Device Minor" (the NVIDIA driver's
 * format). dir_busid, the name of the directory the file was in, is
 * used when the text has no "Bus Location". where names the file for
 * errors. Errors: no bus id, no usable minor or UUID.
 */
int distenv_topo_parse_gpu_info(const char *text, const char *dir_busid,
				const char *where,
				struct distenv_topo_gpu_info *out,
				struct distenv_error *err);

/*
 * Normalise a PCI bus id to "dddd:bb:dd.f", lower case ("5d:00.0" and
 * "00000000:5D:00.0", as nvidia-smi prints it, both work). Returns 0
 * or -1 (not a bus id).
 */
int distenv_topo_busid_normalise(const char *in, char *out, size_t len);

/* The GPU with bus id busid (any form), or -1. */
int distenv_topo_gpu_by_busid(const struct distenv_topo *topo,
			      const char *busid);

/*
 * The GPUs of a list as CUDA_VISIBLE_DEVICES / SLURM_STEP_GPUS hold it
 * (docs/contracts.md 7): comma-separated indices, GPU-<uuid>, or
 * MIG-GPU-<uuid>/<gi>/<ci>. An index is the device minor (/dev/nvidiaN,
 * what Slurm's gres.conf File= names) where the driver's information
 * was read, else the N-th NVIDIA GPU in bus-id order. A MIG-<uuid>
 * (driver R470 and later) names no parent GPU and cannot be placed.
 * sel gets indexes into topo->gpus, in the list's order, each once.
 * Entries that match no GPU are skipped and listed in note (len bytes,
 * "" when all matched). Errors: a malformed entry (where names the
 * variable or option).
 */
int distenv_topo_parse_gpus(const struct distenv_topo *topo, const char *list,
			    const char *where, size_t *sel, size_t *n_sel,
			    char *note, size_t len, struct distenv_error *err);

/*
 * The step's GPUs on this node (distenv_gpus.h), as indexes into
 * topo->gpus: the GPUs NCCL_IB_HCA serves, one set for every task of the
 * node whatever GPU each task sees (NCCL pairs each GPU with its nearest
 * NIC by itself, and its maintainers ask for the same NCCL_IB_HCA on every
 * rank of a node: docs/contracts.md 4). In order: gpus->node_list; the
 * task's CUDA_VISIBLE_DEVICES when no SLURM_STEP_GPUS narrowed it to the
 * task and it counts what the step holds; every GPU of the topology when
 * SLURM_GPUS_ON_NODE counts as many; else none, and note says why. A
 * task that sees no GPU ("" or "NoDevFiles") gets none. *from names the
 * source (NULL: none). Otherwise as distenv_topo_parse_gpus.
 */
int distenv_topo_node_gpus(const struct distenv_topo *topo,
			   const struct distenv_gpus *gpus, size_t *sel,
			   size_t *n_sel, const char **from, char *note,
			   size_t len, struct distenv_error *err);

enum distenv_topo_level {
	DISTENV_TOPO_SAME_SWITCH,
	DISTENV_TOPO_SAME_NUMA,
	DISTENV_TOPO_SAME_PACKAGE,
	DISTENV_TOPO_ANYWHERE,
	DISTENV_TOPO_VIRTUAL,
};

/* One chosen device with its locality to the GPU it is closest to. */
struct distenv_topo_pick {
	size_t nic; /* index into topo->nics */
	enum distenv_topo_level level;
	unsigned shared_bridges; /* PCI bridges shared with that GPU */
	size_t gpu; /* index into topo->gpus; unused when
					* no GPU was selected */
	size_t order; /* that GPU's place in the selection */
	char reason[DISTENV_TOPO_REASON_MAX]; /* "mlx5_2: same PCI switch as
					       * GPU 2 (0000:84:00.0)" */
};

struct distenv_topo_plan {
	/* HCAs with an active port (or no port information), for each
	 * selected GPU in order those at its best level, each once. */
	struct distenv_topo_pick hcas[DISTENV_TOPO_NICS_MAX];
	size_t n_hcas;
	/* Every netdev, closest to any selected GPU first (ties: the
	 * earlier GPU of the selection, then topology order); virtual ones
	 * last. */
	struct distenv_topo_pick netdevs[DISTENV_TOPO_NICS_MAX];
	size_t n_netdevs;
	/* HCAs left out because the topology says no port is active. */
	char skipped[256];
};

/*
 * Rank topo's NICs for the GPUs sel[0..n_sel-1] (indexes into
 * topo->gpus, the task's order; in torchrun mode all of the node's GPUs
 * the task was given). With no GPU selected, no HCA is chosen and the
 * netdevs keep topology order (physical before virtual).
 */
void distenv_topo_rank(const struct distenv_topo *topo, const size_t *sel,
		       size_t n_sel, struct distenv_topo_plan *plan);

/* Append s to buf (len bytes, *used of them taken); a part that does
 * not fit is left out whole, so a list is never cut mid-name. For the
 * lists of this file and of distenv_hca.h. */
void distenv_topo_append(char *buf, size_t len, size_t *used, const char *s);

/* Add a printf-formatted part to note (len bytes), after ", " when note
 * is not empty; cut at len. */
void distenv_topo_note_add(char *note, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The plan's reasons joined with "; " (HCAs or netdevs). Returns buf. */
const char *distenv_topo_reasons(const struct distenv_topo_pick *picks,
				 size_t n, char *buf, size_t len);

/*
 * The netdev preference of plan among names: the first pick whose name
 * is in names (n of them, DISTENV_TOPO_NAME_MAX-byte strings are not
 * required: any C strings), physical before virtual. Names absent from
 * the topology count as virtual. Returns the index into names of the
 * preferred one, or -1 when names is empty; *pick (may be NULL) gets
 * the plan's entry for it, or NULL when it is absent from the topology.
 */
int distenv_topo_prefer(const struct distenv_topo *topo,
			const struct distenv_topo_plan *plan,
			const char *const *names, size_t n,
			const struct distenv_topo_pick **pick);

/* One line on topo for --distenv-show: its source and what it holds
 * ("hwloc XML F: 4 GPUs, 4 HCAs, 6 network interfaces"). Returns buf. */
const char *distenv_topo_summary(const struct distenv_topo *topo, char *buf,
				 size_t len);

/* "same PCI switch", "same NUMA node", ... */
const char *distenv_topo_level_name(enum distenv_topo_level level);

#endif
