/*
 * topo_bench.c: the topology work distenv does per step per node, in
 * milliseconds: load the topology with I/O objects (natively, and from
 * each recorded machine in tests/topo/), read the NVIDIA driver's GPU
 * list, then select the GPUs and rank the HCAs and interfaces for all of
 * them. The load happens once per step per node (slurm_spank_user_init);
 * the ranking once per task.
 *
 *   bench/topo_bench [ITERATIONS]
 *
 * Target: from XML under 5 ms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distenv_hca.h"
#include "distenv_topo.h"
#include "distenv_topo_hwloc.h"

static const char *const fixtures[] = {
	"jureca-dc-gpu-jrc0323.hwloc2.xml",
	"juwels-booster-jwb0004.hwloc2.xml",
	"juwels-cluster-gpu-jwc09n003.hwloc1.xml",
	"hwloc-test-32em64t-2n8c2t-pci-wholeio.xml",
	"hwloc-test-nvidiaDGX2.xml",
	NULL};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Milliseconds per load, and per ranking (*rank_us, microseconds). */
static double run(const char *xml, int iterations, double *rank_us)
{
	static struct distenv_topo topo;
	static struct distenv_topo_plan plan;
	size_t sel[DISTENV_TOPO_GPUS_MAX], i;
	char hca[512];
	double t0, load;
	int k;

	t0 = now();
	for (k = 0; k < iterations; k++) {
		struct distenv_error err;

		if (distenv_topo_load(xml, DISTENV_NVIDIA_GPUS_DIR, &topo,
				      &err)) {
			fprintf(stderr, "topo_bench: %s: %s\n", err.where,
				err.what);
			exit(1);
		}
	}
	load = (now() - t0) / iterations * 1e3;
	for (i = 0; i < topo.n_gpus; i++)
		sel[i] = i;
	t0 = now();
	for (k = 0; k < iterations * 10; k++) {
		distenv_topo_rank(&topo, sel, topo.n_gpus, &plan);
		distenv_topo_hca_value(&topo, &plan, hca, sizeof(hca));
	}
	*rank_us = (now() - t0) / (iterations * 10) * 1e6;
	return load;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 100;
	double ms, us;
	size_t i;

	if (iterations <= 0)
		return 1;
	ms = run(NULL, iterations / 10 ? iterations / 10 : 1, &us);
	printf("topology, native load of this node: %.2f ms per step per "
	       "node; ranking all GPUs: %.1f us per task\n", ms, us);
	for (i = 0; fixtures[i]; i++) {
		char path[1024];

		snprintf(path, sizeof(path), "%s/%s", DISTENV_TOPO_DIR,
			 fixtures[i]);
		ms = run(path, iterations, &us);
		printf("topology, from XML %s: %.2f ms per step per node; "
		       "ranking all GPUs: %.1f us per task (target: XML under "
		       "5 ms)\n", fixtures[i], ms, us);
	}
	return 0;
}
