/*
 * distenv_topo_hwloc.h: fill a struct distenv_topo (distenv_topo.h) from
 * hwloc 2.x, natively or from an XML file, and from the NVIDIA driver's
 * per-GPU information files. The only file of distenv that calls hwloc.
 */
#ifndef DISTENV_TOPO_HWLOC_H
#define DISTENV_TOPO_HWLOC_H

#include "distenv_error.h"
#include "distenv_topo.h"

/* Where the NVIDIA driver lists its GPUs, one directory per PCI bus id
 * holding an "information" file (docs/contracts.md 7). */
#define DISTENV_NVIDIA_GPUS_DIR "/proc/driver/nvidia/gpus"

/* How many GPUs the NVIDIA driver lists in dir (DISTENV_NVIDIA_GPUS_DIR,
 * or another of its layout): its entries but "." names; 0 when it cannot
 * be read. Without one there is nothing to rank, and a native hwloc load
 * (tens of milliseconds, bench/topo_bench) would only slow the launch. */
unsigned distenv_topo_driver_gpus(const char *dir);

/*
 * Load the topology with I/O objects (HWLOC_TYPE_FILTER_KEEP_IMPORTANT:
 * PCI devices and bridges that lead to them, network and OpenFabrics OS
 * devices) and fill topo: NVIDIA GPUs (PCI vendor 0x10de, class 0x03xx
 * display controller) in bus-id order, network interfaces and HCAs,
 * each with its PCI bridges, NUMA node and package, found with hwloc's
 * helpers (hwloc_get_non_io_ancestor_obj, hwloc_get_ancestor_obj_by_type,
 * hwloc_get_pcidev_by_busidstring).
 *
 * xml: a topology XML file (hwloc 1.x or 2.x format, as lstopo or
 * hwloc-gather-topology write it; read whole with the caller's rights by
 * distenv_file_read, a regular file of 1 byte to 64 MiB), or NULL for
 * this node (hwloc then honours HWLOC_XMLFILE from this process's
 * environment itself).
 * nvidia_dir: DISTENV_NVIDIA_GPUS_DIR, another directory of the same
 * layout (tests), or NULL to read none; a missing directory or an
 * unreadable file in it is not an error (it only means GPU indices
 * count in bus-id order). Errors: hwloc cannot be set up, the XML file
 * is refused (distenv_sys_file.h: a FIFO, a link, ...), empty or cannot
 * be parsed, the node's topology cannot be loaded.
 * Time: milliseconds from XML (bench/topo_bench).
 */
int distenv_topo_load(const char *xml, const char *nvidia_dir,
		      struct distenv_topo *topo, struct distenv_error *err);

/*
 * The ABI check distenv_topo_load makes first, as hwloc's own utilities
 * do before they call the library (hwloc_utils_check_api_version in
 * hwloc's utils/hwloc/misc.h): built and loaded are HWLOC_API_VERSION as
 * distenv was compiled against it and hwloc_get_api_version() of the
 * library loaded now, (X << 16) + (Y << 8) + Z each. hwloc keeps its ABI
 * within a major version and breaks it between them (hwloc's manual,
 * "How do I handle API changes?"), so the majors must be equal.
 * Returns 0, or -1 with err naming both versions and the fix.
 */
int distenv_topo_abi_check(unsigned built, unsigned loaded,
			   struct distenv_error *err);

#endif
