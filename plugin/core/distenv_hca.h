/*
 * distenv_hca.h: NCCL_IB_HCA, the InfiniBand HCA ports NCCL's IB
 * transport uses, in one place: its value from the topology's ranking
 * (distenv_topo_rank, which orders the HCAs by closeness to the step's
 * GPUs), the check of a list the user or the site gave, and the ports
 * named in messages. Pure: the node's topology (distenv_topo.h) in, text
 * out; no system call, no output.
 *
 * The rule (NCCL env docs, NCCL_IB_HCA; docs/contracts.md 4): one value
 * for every task of a node, the user's kept, else the site's fixed list
 * (site policy hca:), else with a topology the HCAs closest to the
 * step's GPUs on this node, active ports only. The derivation's part
 * (derive_emit_hca) is in distenv_hca.c too.
 */
#ifndef DISTENV_HCA_H
#define DISTENV_HCA_H

#include <stddef.h>

#include "distenv_error.h"
#include "distenv_topo.h"

/*
 * NCCL_IB_HCA for plan's HCAs: "=" then the exact names, each with its
 * active ports ("=mlx5_0:1,mlx5_1:1"), or the bare name where the
 * topology gives no port state (NCCL env docs, NCCL_IB_HCA: "=" for
 * exact names, "name:port" for a port). "" when plan has no HCA.
 * Returns buf.
 */
const char *distenv_topo_hca_value(const struct distenv_topo *topo,
				   const struct distenv_topo_plan *plan,
				   char *buf, size_t len);

/*
 * Whether an NCCL_IB_HCA value (text) selects at least one active port
 * of topo's HCAs, read as NCCL's IB transport reads it (NCCL env docs,
 * NCCL_IB_HCA; nccl src/transport/net_ib.cc ncclIbInit, with
 * src/misc/utils.cc parseStringList and matchIfList): a comma list, a
 * leading '^' excludes, a '=' after it makes the names exact, else each
 * is a prefix ("mlx5_1" also selects mlx5_10); "name:port" is one port,
 * a bare name every port. NCCL skips ports that are not ACTIVE, so they
 * select nothing; an HCA the topology gives no port state for counts as
 * one usable port. Returns 1 (something selected), 0 (nothing: NCCL
 * would find no IB device and fall back to TCP sockets), or -1 with err
 * when text is malformed (where names the variable or setting).
 */
int distenv_topo_hca_selects(const struct distenv_topo *topo, const char *text,
			     const char *where, struct distenv_error *err);

/*
 * Whether an NCCL_IB_HCA value (text, read as distenv_topo_hca_selects
 * reads it) selects port (from 1) of the HCA named dev; NULL or "" text
 * selects every port (NCCL's default: all HCAs). Returns 1, 0, or -1
 * when text is malformed.
 */
int distenv_hca_list_selects(const char *text, const char *dev, int port);

/* topo's HCA ports for messages: "mlx5_0:1, mlx5_1:1" (active ones, and
 * bare names without port state), then "; no active port: mlx5_4" when
 * some have none; "none" without HCAs. Returns buf. */
const char *distenv_topo_hca_ports(const struct distenv_topo *topo, char *buf,
				   size_t len);

#endif
