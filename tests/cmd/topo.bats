#!/usr/bin/env bats
# `distenv topo`: the GPU-to-HCA/interface table of a node, from recorded
# topologies (tests/topo/, hand-worked answers in tests/topo/EXPECTED.md)
# and from this machine.

setup() {
	DISTENV="$BATS_TEST_DIRNAME/../../distenv"
	TOPO="$BATS_TEST_DIRNAME/../topo"
	unset CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS HWLOC_XMLFILE
}

@test "topo: JURECA-DC, all GPUs, one HCA per GPU switch" {
	run "$DISTENV" topo --xml "$TOPO/jureca-dc-gpu-jrc0323.hwloc2.xml"
	[ "$status" -eq 0 ]
	grep -qx "topology: hwloc XML $TOPO/jureca-dc-gpu-jrc0323.hwloc2.xml" <<<"$output"
	grep -qx 'for GPUs 0,1,2,3 (all GPUs of the node):' <<<"$output"
	grep -qx '  NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1' <<<"$output"
	grep -qx '    mlx5_2: same PCI switch as GPU 2 (bridge 0000:81:00.0) (netdev ib2)' <<<"$output"
	grep -q '^  GPU 0  0000:03:00.0  NUMA 3  package 0  bridges 0000:00:01.1>0000:01:00.0>0000:02:00.0$' <<<"$output"
}

@test "topo: --gpus picks a subset, HCAs in the order of the GPUs" {
	run "$DISTENV" topo --xml "$TOPO/juwels-booster-jwb0004.hwloc2.xml" --gpus 3,0
	[ "$status" -eq 0 ]
	grep -qx 'for GPUs 3,0 (--gpus):' <<<"$output"
	grep -qx '  NCCL_IB_HCA==mlx5_3:1,mlx5_0:1' <<<"$output"
	# the first interface listed is the one beside GPU 3
	[ "$(grep -A1 'interfaces, closest first' <<<"$output" | tail -1)" = "    ib3: same PCI switch as GPU 3 (bridge 0000:c1:00.0) (on mlx5_3)" ]
}

@test "topo: V100 node, one HCA per socket, from CUDA_VISIBLE_DEVICES" {
	CUDA_VISIBLE_DEVICES=0,1 run "$DISTENV" topo --xml "$TOPO/juwels-cluster-gpu-jwc09n003.hwloc1.xml"
	[ "$status" -eq 0 ]
	grep -qx 'for GPUs 0,1 (CUDA_VISIBLE_DEVICES):' <<<"$output"
	grep -qx '  NCCL_IB_HCA==mlx5_0:1' <<<"$output"
	CUDA_VISIBLE_DEVICES=0,1 SLURM_STEP_GPUS=2,3 run "$DISTENV" topo --xml "$TOPO/juwels-cluster-gpu-jwc09n003.hwloc1.xml"
	grep -qx 'for GPUs 2,3 (SLURM_STEP_GPUS):' <<<"$output"
	grep -qx '  NCCL_IB_HCA==mlx5_1:1' <<<"$output"
}

@test "topo: a task bound to one GPU is shown the node's NCCL_IB_HCA, and each GPU's nearest HCA" {
	# Task 1 of srun --gpus-per-task=1 on a step holding all 4 GPUs.
	CUDA_VISIBLE_DEVICES=0 SLURM_STEP_GPUS=1 SLURM_GPUS_ON_NODE=4 run "$DISTENV" topo --xml "$TOPO/jureca-dc-gpu-jrc0323.hwloc2.xml"
	[ "$status" -eq 0 ]
	for line in 'for GPUs 0,1,2,3 (SLURM_GPUS_ON_NODE: every GPU of the node):' \
		'  NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1' \
		'  (one value for every task of a step holding these GPUs on the node)' \
		'  nearest HCA of each GPU (information; NCCL pairs them itself):' \
		'    GPU 1: mlx5_1 (same PCI switch)' '    GPU 3: mlx5_3 (same PCI switch)'; do
		grep -qxF -- "$line" <<<"$output"
	done
	# --gpus still shows one GPU's set, as a step holding only it gets.
	run "$DISTENV" topo --xml "$TOPO/jureca-dc-gpu-jrc0323.hwloc2.xml" --gpus 1
	grep -qx '  NCCL_IB_HCA==mlx5_1:1' <<<"$output"
}

@test "topo: DGX-2 has 16 GPUs and no HCA" {
	run "$DISTENV" topo --xml "$TOPO/hwloc-test-nvidiaDGX2.xml" --gpus 0,8
	[ "$status" -eq 0 ]
	[ "$(grep -c '^  GPU ' <<<"$output")" -eq 16 ]
	grep -qx '  NCCL_IB_HCA: not set (no HCA for these GPUs)' <<<"$output"
}

@test "topo: a fake driver directory maps indices through device minors" {
	dir=$(mktemp -d)
	mkdir "$dir/0000:03:00.0" "$dir/0000:c4:00.0"
	printf 'GPU UUID: \t GPU-aaaa\nBus Location: \t 0000:03:00.0\nDevice Minor: \t 1\n' >"$dir/0000:03:00.0/information"
	printf 'GPU UUID: \t GPU-bbbb\nBus Location: \t 0000:c4:00.0\nDevice Minor: \t 0\n' >"$dir/0000:c4:00.0/information"
	run "$DISTENV" topo --xml "$TOPO/jureca-dc-gpu-jrc0323.hwloc2.xml" --nvidia-dir "$dir" --gpus 0
	rm -rf "$dir"
	[ "$status" -eq 0 ]
	grep -q "and the NVIDIA driver's GPU list" <<<"$output"
	grep -qx '  NCCL_IB_HCA==mlx5_3:1' <<<"$output"
	grep -q '^  GPU 0  0000:c4:00.0 .*GPU-bbbb$' <<<"$output"
}

@test "topo: this machine loads natively; no GPU means no HCA" {
	run "$DISTENV" topo --nvidia-dir /nonexistent
	[ "$status" -eq 0 ]
	grep -q '^topology: this node (hwloc API 2\.' <<<"$output"
	if ! grep -q '^  GPU 0 ' <<<"$output"; then
		grep -qx '  NCCL_IB_HCA: not set (no HCA for these GPUs)' <<<"$output"
	fi
}

@test "topo: a FIFO as --xml is refused at once, not waited on" {
	# No one writes the FIFO: a reader that opened it blocking would wait
	# forever (fifo(7)); timeout turns such a hang into status 124.
	mkfifo "$BATS_TEST_TMPDIR/topo.xml"
	run timeout 10 "$DISTENV" topo --xml "$BATS_TEST_TMPDIR/topo.xml"
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: $BATS_TEST_TMPDIR/topo.xml: refused: not a regular file. Name a regular file, not a FIFO" ]
	# the same FIFO in HWLOC_XMLFILE, which hwloc would open itself
	HWLOC_XMLFILE="$BATS_TEST_TMPDIR/topo.xml" run timeout 10 "$DISTENV" topo
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: HWLOC_XMLFILE: $BATS_TEST_TMPDIR/topo.xml: refused: not a regular file. Name a regular file, not a FIFO" ]
}

@test "topo: an empty --xml file is refused" {
	: >"$BATS_TEST_TMPDIR/empty.xml"
	run "$DISTENV" topo --xml "$BATS_TEST_TMPDIR/empty.xml"
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: $BATS_TEST_TMPDIR/empty.xml: the topology XML is empty. Give a topology XML file written by lstopo (lstopo FILE.xml)" ]
}

@test "topo: errors name the file or the option" {
	run "$DISTENV" topo --xml /nonexistent.xml
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: /nonexistent.xml: cannot open the topology XML: No such file or directory. Give a topology XML file written by lstopo (lstopo FILE.xml)" ]
	run "$DISTENV" topo --xml "$TOPO/SOURCES.md"
	[ "$status" -eq 1 ]
	# the last line: the hwloc of Debian unstable (2.15) prints its
	# parser's complaint first ("hwloc/libxml: Failed to read input
	# buffer")
	[[ "${lines[-1]}" == "distenv: error: $TOPO/SOURCES.md: "* ]]
	run "$DISTENV" topo --xml "$TOPO/jureca-dc-gpu-jrc0323.hwloc2.xml" --gpus gpu0
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: --gpus: 'gpu0' is neither an index nor a GPU UUID. Give GPU indices or GPU-/MIG- UUIDs, comma-separated" ]
	run "$DISTENV" topo --bogus
	[ "$status" -eq 2 ]
	run "$DISTENV" topo extra
	[ "$status" -eq 2 ]
}
