/* distenv_topo_hwloc.c: a node's GPUs, NICs and HCAs, from hwloc 2.x. */
#include "distenv_topo_hwloc.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "distenv_sys_file.h"

#define NVIDIA_VENDOR 0x10de
#define PCI_CLASS_DISPLAY 0x03 /* 0x0300 VGA, 0x0302 3D controller */
/* Largest topology XML read: a 16-GPU DGX-2 with I/O is under 1 MiB. */
#define XML_MAX (64u << 20)
#define XML_FIX "give a topology XML file written by lstopo (lstopo FILE.xml)"

static void busid_of(unsigned dom, unsigned bus, unsigned dev, unsigned fn,
		     char *out, size_t len)
{
	snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
}

/* The PCI-to-PCI bridges above pci, the NUMA node and package it is
 * local to. */
static void place_of(hwloc_topology_t t, hwloc_obj_t pci,
		     struct distenv_topo_place *pl)
{
	char up[32][DISTENV_TOPO_BUSID_MAX];
	unsigned n = 0, i, skip;
	hwloc_obj_t b, nonio, pkg = NULL;

	memset(pl, 0, sizeof(*pl));
	pl->numa = -1;
	pl->package = -1;
	busid_of(pci->attr->pcidev.domain, pci->attr->pcidev.bus,
		 pci->attr->pcidev.dev, pci->attr->pcidev.func, pl->busid,
		 sizeof(pl->busid));
	for (b = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_BRIDGE, pci);
	     b && n < 32;
	     b = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_BRIDGE, b)) {
		const struct hwloc_bridge_attr_s *a = &b->attr->bridge;

		/* Host bridges (upstream "host") are where PCI meets the
		 * CPU side: sharing one is not sharing a switch. */
		if (a->upstream_type != HWLOC_OBJ_BRIDGE_PCI)
			continue;
		busid_of(a->upstream.pci.domain, a->upstream.pci.bus,
			 a->upstream.pci.dev, a->upstream.pci.func, up[n++],
			 DISTENV_TOPO_BUSID_MAX);
	}
	/* up[] runs from the device upwards; keep the top levels. */
	skip = n > DISTENV_TOPO_BRIDGES_MAX ? n - DISTENV_TOPO_BRIDGES_MAX : 0;
	for (i = 0; i + skip < n; i++)
		memcpy(pl->bridges[i], up[n - 1 - i], DISTENV_TOPO_BUSID_MAX);
	pl->n_bridges = n - skip;

	nonio = hwloc_get_non_io_ancestor_obj(t, pci);
	if (!nonio)
		return;
	if (nonio->nodeset && hwloc_bitmap_weight(nonio->nodeset) == 1)
		pl->numa = hwloc_bitmap_first(nonio->nodeset);
	if (nonio->type == HWLOC_OBJ_PACKAGE)
		pkg = nonio;
	else
		pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE,
						     nonio);
	if (!pkg && nonio->cpuset)
		pkg = hwloc_get_next_obj_covering_cpuset_by_type(
			t, nonio->cpuset, HWLOC_OBJ_PACKAGE, NULL);
	if (pkg)
		pl->package = (int) pkg->logical_index;
}

static int by_busid(const void *a, const void *b)
{
	const struct distenv_topo_gpu *x = a, *y = b;

	return strcmp(x->place.busid, y->place.busid);
}

static void fill_gpus(hwloc_topology_t t, struct distenv_topo *topo)
{
	hwloc_obj_t pci;

	for (pci = hwloc_get_next_pcidev(t, NULL); pci;
	     pci = hwloc_get_next_pcidev(t, pci)) {
		struct distenv_topo_gpu *g;

		if (pci->attr->pcidev.vendor_id != NVIDIA_VENDOR ||
		    (pci->attr->pcidev.class_id >> 8) != PCI_CLASS_DISPLAY ||
		    topo->n_gpus >= DISTENV_TOPO_GPUS_MAX)
			continue;
		g = &topo->gpus[topo->n_gpus++];
		memset(g, 0, sizeof(*g));
		g->minor = -1;
		place_of(t, pci, &g->place);
	}
	qsort(topo->gpus, topo->n_gpus, sizeof(topo->gpus[0]), by_busid);
}

static void fill_nics(hwloc_topology_t t, struct distenv_topo *topo)
{
	hwloc_obj_t pcis[DISTENV_TOPO_NICS_MAX];
	hwloc_obj_t os;
	size_t i, j;

	for (os = hwloc_get_next_osdev(t, NULL); os;
	     os = hwloc_get_next_osdev(t, os)) {
		hwloc_obj_osdev_type_t type = os->attr->osdev.type;
		struct distenv_topo_nic *nic;
		hwloc_obj_t pci;
		unsigned p;

		if ((type != HWLOC_OBJ_OSDEV_NETWORK &&
		     type != HWLOC_OBJ_OSDEV_OPENFABRICS) ||
		    !os->name || topo->n_nics >= DISTENV_TOPO_NICS_MAX)
			continue;
		nic = &topo->nics[topo->n_nics];
		memset(nic, 0, sizeof(*nic));
		snprintf(nic->name, sizeof(nic->name), "%s", os->name);
		nic->kind = type == HWLOC_OBJ_OSDEV_OPENFABRICS ?
				    DISTENV_TOPO_HCA :
				    DISTENV_TOPO_NETDEV;
		nic->place.numa = -1;
		nic->place.package = -1;
		pci = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PCI_DEVICE,
						     os);
		if (pci)
			place_of(t, pci, &nic->place);
		pcis[topo->n_nics++] = pci;
		for (p = 1; p <= DISTENV_TOPO_PORTS_MAX; p++) {
			char key[32];
			const char *v;

			snprintf(key, sizeof(key), "Port%uState", p);
			v = hwloc_obj_get_info_by_name(os, key);
			if (!v)
				continue;
			nic->port_state[p - 1] = atoi(v);
			nic->n_ports = p;
		}
	}
	/* An HCA and a netdev on the same PCI device belong together
	 * (mlx5_0 and its IPoIB interface ib0). */
	for (i = 0; i < topo->n_nics; i++)
		for (j = 0; j < topo->n_nics; j++)
			if (pcis[i] && pcis[i] == pcis[j] &&
			    topo->nics[i].kind != topo->nics[j].kind &&
			    !topo->nics[i].peer[0])
				snprintf(topo->nics[i].peer,
					 sizeof(topo->nics[i].peer), "%s",
					 topo->nics[j].name);
}

/* The driver's per-GPU "information" file: a few hundred bytes in /proc
 * (docs/contracts.md 7). */
static const struct distenv_file_rules gpu_info_rules = {
	.name = "the NVIDIA driver's GPU information",
	.max = 4096,
};

unsigned distenv_topo_driver_gpus(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void read_driver_info(hwloc_topology_t t, const char *dir,
			     struct distenv_topo *topo)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		struct distenv_topo_gpu_info info;
		struct distenv_file text;
		char path[4096];
		int gi, bad;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/information", dir,
			 e->d_name);
		if (distenv_file_read(path, &gpu_info_rules, &text, NULL))
			continue;
		bad = distenv_topo_parse_gpu_info(text.data, e->d_name, path,
						  &info, NULL);
		distenv_file_free(&text);
		if (bad)
			continue;
		/* Only GPUs the topology has as NVIDIA PCI devices. */
		if (!hwloc_get_pcidev_by_busidstring(t, info.busid))
			continue;
		gi = distenv_topo_gpu_by_busid(topo, info.busid);
		if (gi < 0)
			continue;
		snprintf(topo->gpus[gi].uuid, sizeof(topo->gpus[gi].uuid), "%s",
			 info.uuid);
		topo->gpus[gi].minor = info.minor;
		topo->have_driver_info = 1;
	}
	closedir(d);
}

/* A topology XML file a user names (--xml, or HWLOC_XMLFILE in a job's
 * environment), read with the caller's rights (docs/contracts.md 5). */
static const struct distenv_file_rules xml_rules = {
	.name = "the topology XML",
	.fix = XML_FIX,
	.max = XML_MAX,
};

/* The XML the load will read, into text: the file xml names, or none
 * (text empty) when xml is NULL. hwloc opens HWLOC_XMLFILE itself, and a
 * FIFO there would block it forever: that file must pass the same reader
 * first (hwloc reads it again; HWLOC_FSROOT and HWLOC_SYNTHETIC, which
 * hwloc puts before it, are left to hwloc). */
static int read_xml(const char *xml, const char *env_xml,
		    struct distenv_file *text, struct distenv_error *err)
{
	if (xml && distenv_file_read(xml, &xml_rules, text, err))
		return -1;
	if (!xml && env_xml && env_xml[0] && !getenv("HWLOC_FSROOT") &&
	    !getenv("HWLOC_SYNTHETIC")) {
		if (distenv_file_read(env_xml, &xml_rules, text, err)) {
			distenv_error_prefix_where(err, "HWLOC_XMLFILE");
			return -1;
		}
		distenv_file_free(text);
	}
	if (xml && !text->len) {
		distenv_file_free(text);
		return distenv_error_set(err, xml, XML_FIX,
					 "the topology XML is empty");
	}
	return 0;
}

int distenv_topo_abi_check(unsigned built, unsigned loaded,
			   struct distenv_error *err)
{
	if (built >> 16 == loaded >> 16)
		return 0;
	return distenv_error_set(err, "hwloc",
				 "rebuild distenv against the hwloc library "
				 "installed here (its -dev package), or "
				 "install the hwloc it was built with",
				 "distenv was built against hwloc API %u.%u, "
				 "but the hwloc library loaded is API %u.%u, "
				 "of another major version and so of another "
				 "ABI",
				 built >> 16, (built >> 8) & 0xff, loaded >> 16,
				 (loaded >> 8) & 0xff);
}

int distenv_topo_load(const char *xml, const char *nvidia_dir,
		      struct distenv_topo *topo, struct distenv_error *err)
{
	hwloc_topology_t t;
	const char *env_xml = getenv("HWLOC_XMLFILE");
	unsigned v = hwloc_get_api_version();
	struct distenv_file text = { 0 };

	memset(topo, 0, sizeof(*topo));
	if (distenv_topo_abi_check(HWLOC_API_VERSION, v, err) ||
	    read_xml(xml, env_xml, &text, err))
		return -1;
	if (hwloc_topology_init(&t) < 0) {
		distenv_file_free(&text);
		return distenv_error_set(err, "hwloc", NULL,
					 "cannot set up a topology: %s",
					 strerror(errno));
	}
	/* Only what the ranking reads: packages, NUMA nodes, groups, PCI
	 * paths to devices, network and OpenFabrics devices. Caches and
	 * Misc objects cost load time and say nothing here. */
	hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	hwloc_topology_set_cache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_icache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_type_filter(t, HWLOC_OBJ_MISC,
				       HWLOC_TYPE_FILTER_KEEP_NONE);
	/* hwloc counts the buffer's length with the final NUL. */
	if (xml && hwloc_topology_set_xmlbuffer(t, text.data,
						(int) text.len + 1) < 0) {
		int e = errno;

		distenv_file_free(&text);
		hwloc_topology_destroy(t);
		return distenv_error_set(err, xml, XML_FIX,
					 "cannot use as topology XML: %s",
					 strerror(e));
	}
	if (hwloc_topology_load(t) < 0) {
		int e = errno;

		distenv_file_free(&text);
		hwloc_topology_destroy(t);
		return distenv_error_set(err, xml ? xml : "hwloc",
					 xml ? "give a topology XML file "
					       "written by lstopo" :
					       NULL,
					 "cannot load the topology: %s",
					 strerror(e));
	}
	if (xml)
		snprintf(topo->source, sizeof(topo->source), "hwloc XML %s",
			 xml);
	else if (env_xml && env_xml[0])
		snprintf(topo->source, sizeof(topo->source),
			 "hwloc XML %s (HWLOC_XMLFILE)", env_xml);
	else
		snprintf(topo->source, sizeof(topo->source),
			 "this node (hwloc API %u.%u)", v >> 16,
			 (v >> 8) & 0xff);
	distenv_file_free(&text);
	fill_gpus(t, topo);
	fill_nics(t, topo);
	if (nvidia_dir)
		read_driver_info(t, nvidia_dir, topo);
	hwloc_topology_destroy(t);
	return 0;
}
