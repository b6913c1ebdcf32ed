/*
 * derive_bench.c: time of the per-task work of distenv for a step of
 * 10,000 nodes: the first host out of the node list (Slurm's hostlist),
 * then the core derivation, for the last node of the step. The network
 * facts are fixed, as they come from the node, not from the step size.
 *
 *   bench/derive_bench [ITERATIONS]
 *
 * Prints microseconds per task for a compressed node list
 * ("gpu-[00001-10000]") and for a list of 10,000 names that hostlist
 * cannot compress, and their ratio, measured in the same run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "distenv_derive.h"
#include "distenv_sys.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double run(const char *nodelist, int iterations)
{
	struct distenv_site site;
	struct distenv_request req;
	struct distenv_step step;
	struct distenv_iface ifs[3];
	struct distenv_addr addr;
	struct distenv_net net;
	const char *env[] = {"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", NULL};
	double t0;
	int i;

	distenv_site_defaults(&site);
	memset(&req, 0, sizeof(req));
	req.mode = DISTENV_MODE_TORCHRUN;
	memset(ifs, 0, sizeof(ifs));
	strcpy(ifs[0].name, "lo");
	distenv_ip_parse("127.0.0.1", &ifs[0].ip);
	ifs[0].prefix_len = 8;
	ifs[0].up = ifs[0].loopback = 1;
	strcpy(ifs[1].name, "eth1");
	distenv_ip_parse("10.99.0.1", &ifs[1].ip);
	ifs[1].prefix_len = 24;
	ifs[1].up = 1;
	strcpy(ifs[2].name, "ib0");
	distenv_ip_parse("10.77.39.16", &ifs[2].ip);
	ifs[2].prefix_len = 16;
	ifs[2].up = 1;
	memset(&addr, 0, sizeof(addr));
	distenv_ip_parse("10.77.0.1", &addr.ip);
	strcpy(addr.route_ifname, "ib0");
	memset(&net, 0, sizeof(net));
	net.ifaces = ifs;
	net.n_ifaces = 3;
	net.addrs = &addr;
	net.n_addrs = 1;
	net.resolved_host = "gpu-00001";

	t0 = now();
	for (i = 0; i < iterations; i++) {
		struct distenv_vars vars = {0};
		struct distenv_error err;

		memset(&step, 0, sizeof(step));
		step.kind = DISTENV_STEP_TASKS;
		step.job_id = 4242;
		step.step_id = i;
		step.nnodes = 10000;
		step.node_id = 9999;
		step.ntasks = 10000;
		step.local_ntasks = 1;
		step.procid = 9999;
		step.ephemeral_lo = 32768;
		step.ephemeral_hi = 60999;
		step.envp = env;
		strcpy(step.node_name, "gpu-10000");
		if (distenv_first_host(nodelist, "SLURM_STEP_NODELIST",
				       step.master_host,
				       sizeof(step.master_host), &err) ||
		    distenv_derive(&site, &req, &step, &net, &vars, &err)) {
			fprintf(stderr, "derive_bench: %s: %s\n", err.where,
				err.what);
			exit(1);
		}
		distenv_vars_free(&vars);
	}
	return (now() - t0) / iterations * 1e6;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 2000;
	size_t len = 10000 * 16, used = 0;
	char *flat = malloc(len);
	double compressed, uncompressed;
	int i;

	if (!flat || iterations <= 0)
		return 1;
	/* Names hostlist cannot fold into a range: no shared numeric run. */
	for (i = 0; i < 10000; i++)
		used += (size_t)snprintf(flat + used, len - used, "%sgpu%c-%d",
					 i ? "," : "", 'a' + i % 26, i);
	compressed = run("gpu-[00001-10000]", iterations);
	uncompressed = run(flat, iterations / 10 ? iterations / 10 : 1);
	printf("derive, 10000-node step, compressed list gpu-[00001-10000]: "
	       "%.1f us per task\n", compressed);
	printf("derive, 10000-node step, 10000 unfoldable names (%zu bytes): "
	       "%.1f us per task\n", used, uncompressed);
	printf("ratio uncompressed/compressed: %.1f (target: compressed under "
	       "100 us)\n", uncompressed / compressed);
	free(flat);
	return 0;
}
