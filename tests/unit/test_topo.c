/*
 * Unit tests: GPU -> HCA / interface locality over recorded topologies
 * of real machines (tests/topo/, SOURCES.md there). Every expected value
 * below was worked out by hand from the XML; the reasoning is in
 * tests/topo/EXPECTED.md, section by section.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <hwloc.h>

#include "distenv_derive.h"
#include "distenv_hca.h"
#include "distenv_topo.h"
#include "distenv_topo_hwloc.h"
#include "derive_world.h"
#include "net_fixture.h"

#define JURECA "jureca-dc-gpu-jrc0323.hwloc2.xml"
#define BOOSTER "juwels-booster-jwb0004.hwloc2.xml"
#define V100 "juwels-cluster-gpu-jwc09n003.hwloc1.xml"
#define TESTBOX "hwloc-test-32em64t-2n8c2t-pci-wholeio.xml"
#define DGX2 "hwloc-test-nvidiaDGX2.xml"

static struct distenv_topo topo;
static struct distenv_topo_plan plan;

static void load(const char *file, const char *nvidia_dir)
{
	char path[1024];
	struct distenv_error err;

	snprintf(path, sizeof(path), "%s/%s", DISTENV_TOPO_DIR, file);
	distenv_error_clear(&err);
	if (distenv_topo_load(path, nvidia_dir, &topo, &err))
		fail_msg("%s: %s", err.where, err.what);
}

/* Rank for a GPU list as CUDA_VISIBLE_DEVICES would hold it; returns
 * the NCCL_IB_HCA value. */
static const char *rank(const char *gpus)
{
	static char value[512];
	size_t sel[DISTENV_TOPO_GPUS_MAX], n = 0;
	char note[256];
	struct distenv_error err;

	if (gpus && distenv_topo_parse_gpus(&topo, gpus, "test", sel, &n, note,
					    sizeof(note), &err))
		fail_msg("%s", err.what);
	distenv_topo_rank(&topo, sel, n, &plan);
	return distenv_topo_hca_value(&topo, &plan, value, sizeof(value));
}

/* The step's GPUs on this node for a task environment (and the step's
 * SLURM_STEP_GPUS as user_init read it, or NULL). */
static int node_gpus(const char *const *env, const char *step_gpus,
		     size_t *sel, size_t *n, const char **source, char *note,
		     size_t len)
{
	struct distenv_gpus g;
	struct distenv_error err;

	distenv_gpus_read(env, step_gpus, &g);
	return distenv_topo_node_gpus(&topo, &g, sel, n, source, note, len,
				      &err);
}

static const char *netdev(size_t i)
{
	assert_true(i < plan.n_netdevs);
	return topo.nics[plan.netdevs[i].nic].name;
}

static void assert_netdevs(const char *const *want, size_t n)
{
	size_t i;

	assert_int_equal(plan.n_netdevs, n);
	for (i = 0; i < n; i++)
		assert_string_equal(netdev(i), want[i]);
}

static void assert_gpu(size_t i, const char *busid, int numa, int package)
{
	assert_string_equal(topo.gpus[i].place.busid, busid);
	assert_int_equal(topo.gpus[i].place.numa, numa);
	assert_int_equal(topo.gpus[i].place.package, package);
}

/* EXPECTED.md "JURECA-DC and JUWELS Booster": one HCA per GPU switch. */
static void a100_machine(const char *file)
{
	load(file, NULL);
	assert_int_equal(topo.n_gpus, 4);
	assert_gpu(0, "0000:03:00.0", 3, 0);
	assert_gpu(1, "0000:44:00.0", 1, 0);
	assert_gpu(2, "0000:84:00.0", 7, 1);
	assert_gpu(3, "0000:c4:00.0", 5, 1);
	assert_int_equal(topo.n_nics, 10);

	/* 1 GPU */
	assert_string_equal(rank("0"), "=mlx5_0:1");
	assert_string_equal(plan.hcas[0].reason,
			    "mlx5_0: same PCI switch as GPU 0 (bridge "
			    "0000:01:00.0) (netdev ib0)");
	{
		const char *want[] = {"ib0", "ib1", "enp225s0f0", "enp225s0f1",
				      "ib3", "ib2"};

		assert_netdevs(want, 6);
		assert_int_equal(plan.netdevs[1].level, DISTENV_TOPO_SAME_PACKAGE);
		assert_int_equal(plan.netdevs[2].level, DISTENV_TOPO_ANYWHERE);
	}
	assert_string_equal(rank("3"), "=mlx5_3:1");

	/* 2 GPUs, listed out of bus order: HCAs follow the GPUs' order. */
	assert_string_equal(rank("2,1"), "=mlx5_2:1,mlx5_1:1");
	assert_string_equal(netdev(0), "ib2");
	assert_string_equal(netdev(1), "ib1");

	/* all (torchrun: the task drives the node's 4 GPUs) */
	assert_string_equal(rank("0,1,2,3"),
			    "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
	{
		const char *want[] = {"ib0", "ib1", "ib2", "ib3", "enp225s0f0",
				      "enp225s0f1"};

		assert_netdevs(want, 6);
		assert_string_equal(plan.netdevs[4].reason,
				    "enp225s0f0: same package (1) as GPU 2");
	}
}

static void jureca(void **state)
{
	(void)state;
	a100_machine(JURECA);
}

static void juwels_booster(void **state)
{
	(void)state;
	a100_machine(BOOSTER);
}

/* EXPECTED.md "JUWELS Cluster GPU node": one HCA per socket, on the
 * PCIe switch of that socket's two GPUs. */
static void v100(void **state)
{
	const char *all[] = {"ib0", "ib1", "enp55s0f0", "enp55s0f1",
			     "enp55s0f2", "enp55s0f3"};

	(void)state;
	load(V100, NULL);
	assert_int_equal(topo.n_gpus, 4);
	assert_gpu(0, "0000:5d:00.0", 0, 0);
	assert_gpu(1, "0000:5e:00.0", 0, 0);
	assert_gpu(2, "0000:88:00.0", 1, 1);
	assert_gpu(3, "0000:89:00.0", 1, 1);

	assert_string_equal(rank("1"), "=mlx5_0:1");
	assert_string_equal(plan.hcas[0].reason,
			    "mlx5_0: same PCI switch as GPU 1 (bridge "
			    "0000:5b:00.0) (netdev ib0)");
	assert_string_equal(rank("0,1"), "=mlx5_0:1");
	assert_int_equal(plan.n_hcas, 1);
	assert_string_equal(plan.hcas[0].reason,
			    "mlx5_0: same PCI switch as GPU 0 (bridge "
			    "0000:5b:00.0) (netdev ib0), and GPU 1");
	assert_string_equal(rank("1,2"), "=mlx5_0:1,mlx5_1:1");
	assert_string_equal(rank("0,1,2,3"), "=mlx5_0:1,mlx5_1:1");
	assert_netdevs(all, 6);
	assert_int_equal(plan.netdevs[2].level, DISTENV_TOPO_SAME_NUMA);
	assert_string_equal(rank("3,2,1,0"), "=mlx5_1:1,mlx5_0:1");
}

/* EXPECTED.md "hwloc test machine": one HCA, on the second package. */
static void testbox(void **state)
{
	(void)state;
	load(TESTBOX, NULL);
	assert_int_equal(topo.n_gpus, 3);
	assert_gpu(0, "0000:03:00.0", 0, 0);
	assert_gpu(1, "0000:83:00.0", 1, 1);
	assert_gpu(2, "0000:84:00.0", 1, 1);
	/* Two PCI devices carry the bus id 0000:04:00.0 in this file (a
	 * SAS controller on package 0, the HCA on package 1): the HCA's
	 * place must come from its own PCI parent. */
	assert_string_equal(topo.nics[3].name, "mlx5_0");
	assert_int_equal(topo.nics[3].place.package, 1);

	assert_string_equal(rank("0"), "=mlx5_0:1");
	assert_int_equal(plan.hcas[0].level, DISTENV_TOPO_ANYWHERE);
	{
		const char *want[] = {"eth0", "eth1", "ib0"};

		assert_netdevs(want, 3);
	}
	assert_string_equal(rank("2"), "=mlx5_0:1");
	assert_int_equal(plan.hcas[0].level, DISTENV_TOPO_SAME_SWITCH);
	assert_string_equal(rank("0,1"), "=mlx5_0:1");
	assert_string_equal(plan.hcas[0].reason,
			    "mlx5_0: no closer one for GPU 0 (other package) "
			    "(netdev ib0), and GPU 1");
	assert_string_equal(rank("0,1,2"), "=mlx5_0:1");
	{
		const char *want[] = {"ib0", "eth0", "eth1"};

		assert_netdevs(want, 3);
	}
}

/* EXPECTED.md "DGX-2": 16 GPUs, no network device. */
static void dgx2(void **state)
{
	(void)state;
	load(DGX2, NULL);
	assert_int_equal(topo.n_gpus, 16);
	assert_int_equal(topo.n_nics, 0);
	assert_gpu(0, "0000:34:00.0", 0, 0);
	assert_gpu(8, "0000:b7:00.0", 1, 1);
	assert_gpu(15, "0000:e7:00.0", 1, 1);
	assert_string_equal(rank("0"), "");
	assert_string_equal(rank("0,8"), "");
	assert_string_equal(rank("0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"), "");
	assert_int_equal(plan.n_hcas, 0);
}

/* A port the topology says is down: the HCA is left out, and the GPU
 * gets the next closest one. */
static void inactive_port(void **state)
{
	(void)state;
	load(JURECA, NULL);
	assert_string_equal(topo.nics[3].name, "mlx5_0");
	topo.nics[3].port_state[0] = 1; /* DOWN */
	assert_string_equal(rank("0"), "=mlx5_1:1");
	assert_int_equal(plan.hcas[0].level, DISTENV_TOPO_SAME_PACKAGE);
	assert_string_equal(plan.skipped, "mlx5_0: no active port");
	/* No port information at all: the bare name. */
	topo.nics[3].n_ports = 0;
	assert_string_equal(rank("0"), "=mlx5_0");
}

/* A fake /proc/driver/nvidia/gpus: minors in reverse bus order, so an
 * index maps through the minor, not the bus order. */
static char fake_dir[64];

static void fake_driver(void)
{
	static const char *bus[] = {"0000:03:00.0", "0000:44:00.0",
				    "0000:84:00.0", "0000:c4:00.0"};
	char path[256];
	int i;

	snprintf(fake_dir, sizeof(fake_dir), "/tmp/distenv-topo-XXXXXX");
	assert_non_null(mkdtemp(fake_dir));
	for (i = 0; i < 4; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", fake_dir, bus[i]);
		assert_int_equal(mkdir(path, 0700), 0);
		snprintf(path, sizeof(path), "%s/%s/information", fake_dir,
			 bus[i]);
		f = fopen(path, "w");
		assert_non_null(f);
		fprintf(f, "Model: \t\t NVIDIA A100-SXM4-40GB\n"
			   "GPU UUID: \t GPU-0000000%d-1111-2222-3333-444444444444\n"
			   "Bus Type: \t PCIe\n"
			   "Bus Location: \t %s\n"
			   "Device Minor: \t %d\n",
			i, bus[i], 3 - i);
		fclose(f);
	}
}

static void unfake_driver(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_dir);
	assert_int_equal(system(cmd), 0);
}

static void driver_info(void **state)
{
	size_t sel[DISTENV_TOPO_GPUS_MAX], n;
	char note[256];
	const char *source;
	struct distenv_error err;

	(void)state;
	fake_driver();
	assert_int_equal(distenv_topo_driver_gpus(fake_dir), 4);
	load(JURECA, fake_dir);
	unfake_driver();
	assert_int_equal(distenv_topo_driver_gpus(fake_dir), 0);
	assert_true(topo.have_driver_info);
	assert_int_equal(topo.gpus[0].minor, 3);
	/* index 0 = minor 0 = the GPU at c4:00.0 */
	assert_string_equal(rank("0"), "=mlx5_3:1");
	assert_string_equal(plan.hcas[0].reason,
			    "mlx5_3: same PCI switch as GPU 0 (bridge "
			    "0000:c1:00.0) (netdev ib3)");
	assert_string_equal(rank("GPU-00000001-1111-2222-3333-444444444444"),
			    "=mlx5_1:1");
	assert_string_equal(
		rank("MIG-GPU-00000002-1111-2222-3333-444444444444/1/0"),
		"=mlx5_2:1");
	assert_int_equal(distenv_topo_parse_gpus(
				 &topo, "MIG-a5b3c2d1-0000-1111-2222-333333333333,7",
				 "CUDA_VISIBLE_DEVICES", sel, &n, note,
				 sizeof(note), &err),
			 0);
	assert_int_equal(n, 0);
	assert_string_equal(note, "MIG-a5b3c2d1-0000-1111-2222-333333333333 "
				  "names no parent GPU, GPU 7 is not in the "
				  "topology");
	{
		const char *env[] = {"CUDA_VISIBLE_DEVICES=0,1",
				     "SLURM_STEP_GPUS=2,3", NULL};

		assert_int_equal(node_gpus(env, NULL, sel, &n, &source, note,
					   sizeof(note)),
				 0);
		assert_string_equal(source, "SLURM_STEP_GPUS");
		assert_int_equal(n, 2);
		assert_string_equal(topo.gpus[sel[0]].place.busid,
				    "0000:44:00.0");
	}
}

static void gpu_lists(void **state)
{
	size_t sel[DISTENV_TOPO_GPUS_MAX], n;
	char note[256];
	const char *source;
	struct distenv_error err;
	const char *none[] = {"CUDA_VISIBLE_DEVICES=NoDevFiles",
			      "SLURM_STEP_GPUS=0", NULL};
	const char *empty[] = {"CUDA_VISIBLE_DEVICES=", NULL};
	const char *step_only[] = {"SLURM_STEP_GPUS=1,3", NULL};
	const char *by_hand[] = {"CUDA_VISIBLE_DEVICES=2", NULL};
	/* Task 1 of srun --gpus-per-task=1 on a step holding GPUs 2 and 3
	 * here, cgroup-constrained: Slurm 22.05 narrows both lists to the
	 * task's GPU and keeps the step's count (distenv_gpus.h). */
	const char *bound[] = {"CUDA_VISIBLE_DEVICES=1", "SLURM_STEP_GPUS=3",
			       "SLURM_GPUS_ON_NODE=2", NULL};
	const char *whole[] = {"CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=3",
			       "SLURM_GPUS_ON_NODE=4", NULL};

	(void)state;
	load(JURECA, NULL);
	assert_int_equal(node_gpus(none, NULL, sel, &n, &source, note,
				   sizeof(note)),
			 0);
	assert_int_equal(n, 0);
	assert_int_equal(node_gpus(empty, NULL, sel, &n, &source, note,
				   sizeof(note)),
			 0);
	assert_int_equal(n, 0);
	assert_int_equal(node_gpus(step_only, NULL, sel, &n, &source, note,
				   sizeof(note)),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(sel[1], 3);
	/* No Slurm GPU variable: the hand-exported list, the same in
	 * every task. */
	assert_int_equal(node_gpus(by_hand, NULL, sel, &n, &source, note,
				   sizeof(note)),
			 0);
	assert_string_equal(source, "CUDA_VISIBLE_DEVICES");
	assert_int_equal(n, 1);
	assert_int_equal(sel[0], 2);
	/* A bound task: its own GPU is not the step's set. The plugin
	 * knows the set from user_init; the command alone does not. */
	assert_int_equal(node_gpus(bound, "2,3", sel, &n, &source, note,
				   sizeof(note)),
			 0);
	assert_string_equal(source, "SLURM_STEP_GPUS of the step");
	assert_int_equal(n, 2);
	assert_int_equal(sel[0], 2);
	assert_int_equal(sel[1], 3);
	assert_int_equal(node_gpus(bound, NULL, sel, &n, &source, note,
				   sizeof(note)),
			 0);
	assert_null(source);
	assert_int_equal(n, 0);
	assert_string_equal(note, "the step holds 2 GPUs here "
				  "(SLURM_GPUS_ON_NODE) but no variable says "
				  "which");
	/* ... unless the step holds every GPU of the node. */
	assert_int_equal(node_gpus(whole, NULL, sel, &n, &source, note,
				   sizeof(note)),
			 0);
	assert_string_equal(source, "SLURM_GPUS_ON_NODE: every GPU of the node");
	assert_int_equal(n, 4);
	assert_int_equal(distenv_topo_parse_gpus(&topo, "0,,1", "--gpus", sel,
						 &n, note, sizeof(note), &err),
			 -1);
	assert_int_equal(distenv_topo_parse_gpus(&topo, "gpu0", "--gpus", sel,
						 &n, note, sizeof(note), &err),
			 -1);
	assert_string_equal(err.what,
			    "'gpu0' is neither an index nor a GPU UUID");
	assert_int_equal(distenv_topo_parse_gpus(&topo, "1,", "--gpus", sel,
						 &n, note, sizeof(note), &err),
			 -1);
	/* Twice the same GPU counts once. */
	assert_int_equal(distenv_topo_parse_gpus(&topo, "1,1", "--gpus", sel,
						 &n, note, sizeof(note), &err),
			 0);
	assert_int_equal(n, 1);
}

static void gpu_info_parse(void **state)
{
	struct distenv_topo_gpu_info info;
	struct distenv_error err;
	char b[DISTENV_TOPO_BUSID_MAX];

	(void)state;
	assert_int_equal(distenv_topo_parse_gpu_info(
				 "GPU UUID: \t GPU-abc\nDevice Minor: \t 5\n",
				 "0000:5D:00.0", "f", &info, &err),
			 0);
	assert_string_equal(info.busid, "0000:5d:00.0");
	assert_string_equal(info.uuid, "GPU-abc");
	assert_int_equal(info.minor, 5);
	assert_int_equal(distenv_topo_parse_gpu_info("Model: x\n", "nope", "f",
						     &info, &err),
			 -1);
	assert_int_equal(distenv_topo_parse_gpu_info(
				 "Device Minor: x1\n", "0000:01:00.0", "f",
				 &info, &err),
			 -1);
	assert_int_equal(distenv_topo_busid_normalise("00000000:5D:00.0", b,
						      sizeof(b)),
			 0);
	assert_string_equal(b, "0000:5d:00.0");
	assert_int_equal(distenv_topo_busid_normalise("5d:00.0", b, sizeof(b)),
			 0);
	assert_string_equal(b, "0000:5d:00.0");
	assert_int_equal(distenv_topo_busid_normalise("5d:40.0", b, sizeof(b)),
			 -1);
}

/* The derivation with a topology: a node of the JURECA type whose four
 * IPoIB interfaces and a veth all sit in the master's subnet. */
static struct world *world_new(const char *cvd)
{
	static struct world w;

	memset(&w, 0, sizeof(w));
	distenv_site_defaults(&w.site);
	w.req.mode = DISTENV_MODE_TORCHRUN;
	fx_worker_step(&w.step, 77, 3, "jrc0324", "jrc0323", w.env);
	w.env[0] = cvd;
	memset(&w.fx, 0, sizeof(w.fx));
	w.fx.net.resolved_host = "jrc0323";
	fx_iface(&w.fx, "lo", "127.0.0.1", 8, 1);
	fx_iface(&w.fx, "veth0", "10.2.0.50", 16, 1);
	fx_iface(&w.fx, "ib0", "10.2.0.10", 16, 1);
	fx_iface(&w.fx, "ib1", "10.2.0.11", 16, 1);
	fx_iface(&w.fx, "ib2", "10.2.0.12", 16, 1);
	fx_iface(&w.fx, "ib3", "10.2.0.13", 16, 1);
	fx_iface(&w.fx, "enp225s0f0", "10.1.0.10", 16, 1);
	fx_addr(&w.fx, "10.2.0.1", "veth0");
	return &w;
}

static int derive(struct world *w)
{
	return distenv_derive(&w->site, &w->req, &w->step, &w->fx.net, &w->vars,
			      &w->err);
}

static void derive_with_topology(void **state)
{
	struct world *w;
	const struct distenv_var *v;

	(void)state;
	load(JURECA, NULL);
	/* No topology: today's choice (the first interface in the
	 * master's subnet, in getifaddrs order), no NCCL_IB_HCA. */
	w = world_new("CUDA_VISIBLE_DEVICES=2,3");
	assert_int_equal(derive(w), 0);
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_SOCKET_IFNAME"),
			    "=veth0");
	assert_null(distenv_vars_find(&w->vars, "NCCL_IB_HCA"));
	distenv_vars_free(&w->vars);

	w = world_new("CUDA_VISIBLE_DEVICES=2,3");
	w->step.topo = &topo;
	assert_int_equal(derive(w), 0);
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_SOCKET_IFNAME"),
			    "=ib2");
	assert_string_equal(distenv_vars_value(&w->vars, "GLOO_SOCKET_IFNAME"),
			    "veth0");
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_IB_HCA"),
			    "=mlx5_2:1,mlx5_3:1");
	v = distenv_vars_find(&w->vars, "NCCL_IB_HCA");
	assert_string_equal(
		v->reason,
		"HCAs closest to GPUs 2,3 (CUDA_VISIBLE_DEVICES): mlx5_2: same "
		"PCI switch as GPU 2 (bridge 0000:81:00.0) (netdev ib2); "
		"mlx5_3: same PCI switch as GPU 3 (bridge 0000:c1:00.0) "
		"(netdev ib3); the same for every task of the node");
	v = distenv_vars_find(&w->vars, "NCCL_SOCKET_IFNAME");
	assert_non_null(strstr(v->reason, "ib2: same PCI switch as GPU 2"));
	assert_non_null(strstr(w->vars.items[w->vars.count - 1].value,
			       "NCCL_IB_HCA:"));
	distenv_vars_free(&w->vars);

	/* tasks mode (one task per rank): the task's own GPU. */
	w = world_new("CUDA_VISIBLE_DEVICES=1");
	w->req.mode = DISTENV_MODE_TASKS;
	w->step.topo = &topo;
	assert_int_equal(derive(w), 0);
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_IB_HCA"),
			    "=mlx5_1:1");
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_SOCKET_IFNAME"),
			    "=ib1");
	distenv_vars_free(&w->vars);

	/* The user's NCCL_IB_HCA is kept. */
	w = world_new("CUDA_VISIBLE_DEVICES=0");
	w->env[1] = "NCCL_IB_HCA=mlx5_1";
	w->step.topo = &topo;
	assert_int_equal(derive(w), 0);
	v = distenv_vars_find(&w->vars, "NCCL_IB_HCA");
	assert_int_equal(v->action, DISTENV_ACTION_KEPT);
	assert_string_equal(v->value, "mlx5_1");
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_SOCKET_IFNAME"),
			    "=ib0");
	distenv_vars_free(&w->vars);

	/* --distenv-ifname wins over the topology. */
	w = world_new("CUDA_VISIBLE_DEVICES=0");
	w->step.topo = &topo;
	strcpy(w->req.ifname, "=ib3");
	assert_int_equal(derive(w), 0);
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_SOCKET_IFNAME"),
			    "=ib3");
	distenv_vars_free(&w->vars);

	/* Site policy hca: off. */
	w = world_new("CUDA_VISIBLE_DEVICES=0");
	w->step.topo = &topo;
	w->site.hca_mode = DISTENV_HCA_OFF;
	assert_int_equal(derive(w), 0);
	assert_null(distenv_vars_find(&w->vars, "NCCL_IB_HCA"));
	distenv_vars_free(&w->vars);

	/* No GPU for the task: no HCA; the interface stays the default. */
	w = world_new("CUDA_VISIBLE_DEVICES=");
	w->step.topo = &topo;
	assert_int_equal(derive(w), 0);
	assert_null(distenv_vars_find(&w->vars, "NCCL_IB_HCA"));
	distenv_vars_free(&w->vars);
}

/* Only a virtual interface reaches the master: it stays the choice. */
static void virtual_only(void **state)
{
	struct world *w;

	(void)state;
	load(JURECA, NULL);
	w = world_new("CUDA_VISIBLE_DEVICES=1");
	w->fx.net.n_ifaces = 2; /* lo, veth0 */
	w->step.topo = &topo;
	assert_int_equal(derive(w), 0);
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_SOCKET_IFNAME"),
			    "=veth0");
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_IB_HCA"),
			    "=mlx5_1:1");
	distenv_vars_free(&w->vars);
}

/* srun --ntasks-per-node=4 --gpus-per-task=1 in tasks mode: Slurm
 * 22.05 gives each task its own GPU (device 0 under cgroup constraints,
 * else its own index), SLURM_STEP_GPUS names that one GPU, and
 * SLURM_GPUS_ON_NODE keeps the step's 4. NCCL_IB_HCA (and the interface
 * NCCL prefers) must be the node's value in every task. */
static void hca_one_value_per_node(void **state)
{
	static const char *const own[] = {"SLURM_STEP_GPUS=0", "SLURM_STEP_GPUS=1",
					  "SLURM_STEP_GPUS=2", "SLURM_STEP_GPUS=3"};
	static const char *const cvd[] = {"CUDA_VISIBLE_DEVICES=0",
					  "CUDA_VISIBLE_DEVICES=1",
					  "CUDA_VISIBLE_DEVICES=2",
					  "CUDA_VISIBLE_DEVICES=3"};
	struct world *w;
	int k, constrained;

	(void)state;
	load(JURECA, NULL);
	for (constrained = 0; constrained < 2; constrained++) {
		for (k = 0; k < 4; k++) {
			w = world_new(constrained ? cvd[0] : cvd[k]);
			w->req.mode = DISTENV_MODE_TASKS;
			w->step.ntasks = 8;
			w->step.local_ntasks = 4;
			w->step.procid = 4 + (uint32_t)k;
			w->step.localid = (uint32_t)k;
			w->env[1] = own[k];
			w->env[2] = "SLURM_GPUS_ON_NODE=4";
			w->step.topo = &topo;
			assert_int_equal(derive(w), 0);
			assert_string_equal(
				distenv_vars_value(&w->vars, "NCCL_IB_HCA"),
				"=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
			assert_non_null(strstr(
				distenv_vars_find(&w->vars, "NCCL_IB_HCA")->reason,
				"HCAs closest to GPUs 0,1,2,3 (SLURM_GPUS_ON_NODE: "
				"every GPU of the node)"));
			assert_string_equal(
				distenv_vars_value(&w->vars, "NCCL_SOCKET_IFNAME"),
				"=ib0");
			distenv_vars_free(&w->vars);
		}
	}
	/* Half the node, GPUs 2 and 3: the task's variables do not say
	 * which, the step's environment in user_init does. */
	for (k = 2; k < 4; k++) {
		w = world_new(cvd[k]);
		w->req.mode = DISTENV_MODE_TASKS;
		w->step.local_ntasks = 2;
		w->step.localid = (uint32_t)k - 2;
		w->env[1] = own[k];
		w->env[2] = "SLURM_GPUS_ON_NODE=2";
		w->step.topo = &topo;
		w->step.step_gpus = "2,3";
		assert_int_equal(derive(w), 0);
		assert_string_equal(distenv_vars_value(&w->vars, "NCCL_IB_HCA"),
				    "=mlx5_2:1,mlx5_3:1");
		assert_string_equal(
			distenv_vars_value(&w->vars, "NCCL_SOCKET_IFNAME"),
			"=ib2");
		distenv_vars_free(&w->vars);
	}
	/* The V100 node: one HCA per socket, both for every task. */
	load(V100, NULL);
	for (k = 0; k < 4; k++) {
		w = world_new(cvd[0]);
		w->req.mode = DISTENV_MODE_TASKS;
		w->step.local_ntasks = 4;
		w->step.localid = (uint32_t)k;
		w->env[1] = own[k];
		w->env[2] = "SLURM_GPUS_ON_NODE=4";
		w->step.topo = &topo;
		assert_int_equal(derive(w), 0);
		assert_string_equal(distenv_vars_value(&w->vars, "NCCL_IB_HCA"),
				    "=mlx5_0:1,mlx5_1:1");
		distenv_vars_free(&w->vars);
	}
}

/* With the node's topology, an HCA list from the user or the site that
 * selects no active port fails: NCCL would use TCP without a word. */
static struct world *hca_world(const char *hca, struct distenv_topo *t,
				int rc)
{
	struct world *w = world_new("CUDA_VISIBLE_DEVICES=0");

	w->env[1] = hca;
	w->step.topo = t;
	assert_int_equal(derive(w), rc);
	return w;
}

static void hca_lists_checked(void **state)
{
	struct world *w;

	(void)state;
	load(JURECA, NULL);
	w = hca_world("NCCL_IB_HCA=mlx5_9", &topo, -1);
	/* the ports in the topology's order */
	assert_string_equal(w->err.where, "node jrc0324: NCCL_IB_HCA (exported)");
	assert_string_equal(w->err.what,
			    "'mlx5_9' selects no active port of this node's HCAs "
			    "(mlx5_1:1, mlx5_0:1, mlx5_3:1, mlx5_2:1): NCCL would "
			    "find no InfiniBand device and fall back to TCP "
			    "sockets without a word");
	assert_non_null(strstr(w->err.fix, "unset NCCL_IB_HCA"));

	/* a port the HCA does not have, an exclusion of every HCA, a
	 * port that is no number */
	hca_world("NCCL_IB_HCA==mlx5_0:2", &topo, -1);
	hca_world("NCCL_IB_HCA=^mlx5", &topo, -1);
	w = hca_world("NCCL_IB_HCA==mlx5_0:x", &topo, -1);
	assert_string_equal(w->err.what,
			    "'mlx5_0:x': the port after ':' is not a number "
			    "from 1");

	/* What selects a port is kept as given. */
	w = hca_world("NCCL_IB_HCA=^=mlx5_0,mlx5_1", &topo, 0);
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_IB_HCA"),
			    "^=mlx5_0,mlx5_1");
	distenv_vars_free(&w->vars);

	/* Without a topology nothing is known to check against. */
	w = hca_world("NCCL_IB_HCA=mlx5_9", NULL, 0);
	distenv_vars_free(&w->vars);

	/* The site's fixed list: checked, unless the user's replaces it. */
	w = world_new("CUDA_VISIBLE_DEVICES=0");
	w->site.hca_mode = DISTENV_HCA_FIXED;
	strcpy(w->site.hca, "=mlx5_4,mlx5_5");
	w->step.topo = &topo;
	assert_int_equal(derive(w), -1);
	assert_string_equal(w->err.where, "node jrc0324: site policy hca:");
	assert_non_null(strstr(w->err.fix, "ask the admin to correct hca:"));
	w->env[1] = "NCCL_IB_HCA==mlx5_1:1";
	assert_int_equal(derive(w), 0);
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_IB_HCA"),
			    "=mlx5_1:1");
	distenv_vars_free(&w->vars);
	w->env[1] = NULL;
	strcpy(w->site.hca, "=mlx5_1,mlx5_3");
	assert_int_equal(derive(w), 0);
	assert_string_equal(distenv_vars_value(&w->vars, "NCCL_IB_HCA"),
			    "=mlx5_1,mlx5_3");
	distenv_vars_free(&w->vars);

	/* A port the topology says is down selects nothing. */
	assert_string_equal(topo.nics[3].name, "mlx5_0");
	topo.nics[3].port_state[0] = 1; /* DOWN */
	w = hca_world("NCCL_IB_HCA==mlx5_0", &topo, -1);
	assert_non_null(strstr(w->err.what, "(mlx5_1:1, mlx5_3:1, mlx5_2:1; "
					    "no active port: mlx5_0)"));
}

/* This machine, natively: no GPU, so no HCA, whatever NICs it has. */
static void native(void **state)
{
	struct distenv_error err;

	(void)state;
	assert_int_equal(distenv_topo_load(NULL, "/nonexistent", &topo, &err), 0);
	assert_false(topo.have_driver_info);
	assert_string_equal(rank(NULL), "");
	assert_int_equal(plan.n_hcas, 0);
}

static void bad_xml(void **state)
{
	struct distenv_error err;

	(void)state;
	assert_int_equal(distenv_topo_load("/nonexistent.xml", NULL, &topo,
					   &err),
			 -1);
	assert_string_equal(err.where, "/nonexistent.xml");
	assert_non_null(strstr(err.what, "No such file"));
	assert_int_equal(distenv_topo_load(DISTENV_TOPO_DIR "/SOURCES.md", NULL,
					   &topo, &err),
			 -1);
}

/* A library of another major hwloc API is refused before any call, as
 * hwloc's utilities refuse it; minor and release numbers may differ. */
static void abi_check(void **state)
{
	struct distenv_error err;

	(void)state;
	assert_int_equal(distenv_topo_abi_check(0x20800, 0x20c00, &err), 0);
	assert_int_equal(distenv_topo_abi_check(0x20c00, 0x20800, &err), 0);
	assert_int_equal(distenv_topo_abi_check(0x20800, 0x30000, &err), -1);
	assert_non_null(strstr(err.what, "built against hwloc API 2.8"));
	assert_non_null(strstr(err.what, "loaded is API 3.0"));
	assert_non_null(strstr(err.fix, "rebuild distenv"));
	assert_int_equal(distenv_topo_abi_check(0x20800, 0x10b06, &err), -1);
	assert_non_null(strstr(err.what, "loaded is API 1.11"));
	/* the library this test runs with is the one it was built against */
	assert_int_equal(distenv_topo_abi_check(HWLOC_API_VERSION,
						hwloc_get_api_version(), &err),
			 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(jureca),
		cmocka_unit_test(juwels_booster),
		cmocka_unit_test(v100),
		cmocka_unit_test(testbox),
		cmocka_unit_test(dgx2),
		cmocka_unit_test(inactive_port),
		cmocka_unit_test(driver_info),
		cmocka_unit_test(gpu_lists),
		cmocka_unit_test(gpu_info_parse),
		cmocka_unit_test(derive_with_topology),
		cmocka_unit_test(virtual_only),
		cmocka_unit_test(hca_one_value_per_node),
		cmocka_unit_test(hca_lists_checked),
		cmocka_unit_test(native),
		cmocka_unit_test(bad_xml),
		cmocka_unit_test(abi_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
