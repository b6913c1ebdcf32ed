#!/usr/bin/env bats
# distenv and a container runtime in the step's command: Charliecloud's
# `ch-run IMG -- cmd` (Debian 12's charliecloud-runtime) on a directory
# image with Debian's python3 and torch (contrib/containers/image.sh,
# built once and cached outside the checkout). ch-run passes the host's
# environment through (ch-run(1), ENVIRONMENT VARIABLES) and joins no
# network namespace of its own, so the tasks inside reach each other on
# the node's interfaces, which distenv names to Gloo.
#
# What works today, as the tests below show. What does not (the resolved
# LLaMA-Factory YAML under a TMPDIR that ch-run binds at /tmp; an image
# environment that sets a name distenv sets) is not asserted here.

load helpers

setup_file() {
	IMG=$("$TOP/contrib/containers/image.sh")
	export IMG
	cluster_file_setup 2
}
teardown_file() { cluster_file_teardown; }
setup() {
	cluster_test_setup
	# ch-run refuses to start without USER (ch-run.c); a root shell
	# under bats may have none
	export USER=${USER:-$(id -un)}
}

@test "ch-run: 2 nodes x 2 tasks, a Gloo all_reduce inside the container on distenv's variables" {
	run srun -N2 --ntasks-per-node=2 --distenv=tasks \
		ch-run -b "$TOP/tests/cluster:/mnt/0" "$IMG" -- python3 /mnt/0/gloo_allreduce.py
	echo "$output"
	[ "$status" -eq 0 ]
	for r in 0 1 2 3; do
		grep -qE "^RANK $r/4 node=n[12] result=10 OK$" <<<"$output"
	done
}

@test "ch-run: every task sees distenv's NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT" {
	# shellcheck disable=SC2016 # expanded in the container
	run srun -N2 --ntasks-per-node=2 --distenv=tasks \
		ch-run "$IMG" -- /bin/sh -c 'echo "IN $SLURM_PROCID node=$SLURM_NODEID NNODES=$NNODES NODE_RANK=$NODE_RANK MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT ports=$SLURM_STEP_RESV_PORTS ch=$CH_RUNNING"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^IN ' <<<"$output")" -eq 4 ]
	for r in 0 1 2 3; do
		line=$(grep "^IN $r " <<<"$output")
		node=$((r / 2))
		[[ $line == *" node=$node NNODES=2 NODE_RANK=$node MASTER_ADDR=$CLUSTER_NET.1 "* ]]
		# the step's first reserved port (Slurm's MpiParams=ports)
		port=${line#* MASTER_PORT=}
		port=${port%% *}
		ports=${line#* ports=}
		ports=${ports%% *}
		[ "$port" = "${ports%%[-,]*}" ]
		# the task ran in the container
		[[ $line == *" ch=Weird Al Yankovic" ]]
	done
}
