#!/usr/bin/env bats
# distenv and a container runtime in the step's command: Charliecloud's
# `ch-run IMG -- cmd` (Debian 12's charliecloud-runtime) on a directory
# image with Debian's python3 and torch (contrib/containers/image.sh,
# built once and cached outside the checkout). ch-run passes the host's
# environment through (ch-run(1), ENVIRONMENT VARIABLES) and joins no
# network namespace of its own, so the tasks inside reach each other on
# the node's interfaces, which distenv names to Gloo.
#
# An image environment that sets a name distenv sets wins inside the
# container (ch-run --set-env: its values "replace any already in the
# environment", ch-run(1)); `distenv check-env` as the container's first
# command stops such a step on every node, naming each variable. So it
# does when the resolved LLaMA-Factory YAML was written under a TMPDIR
# that ch-run binds at the guest's /tmp, where the exported path does
# not exist.

load helpers
load lf_helpers

TINY="$TOP/tests/cluster/lf/tiny_model"

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
	all_ranks_reduced "$output"
}

@test "ch-run: every task sees distenv's NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT" {
	# shellcheck disable=SC2016 # expanded in the container
	run srun -N2 --ntasks-per-node=2 --distenv=tasks \
		ch-run "$IMG" -- /bin/sh -c 'echo "IN $SLURM_PROCID node=$SLURM_NODEID NNODES=$NNODES NODE_RANK=$NODE_RANK MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT ports=$SLURM_STEP_RESV_PORTS ch=$CH_RUNNING"'
	echo "$output"
	[ "$status" -eq 0 ]
	tasks_saw_distenv "$output"
	# each task ran in the container
	[ "$(grep -c '^IN .* ch=Weird Al Yankovic$' <<<"$output")" -eq 4 ]
}

# in_container_distenv: the build's distenv command for the container:
# the tree at /mnt/1, and at /mnt/2 the one library of its own the
# image lacks (libslurm; the image has libyaml and hwloc), found through
# LD_LIBRARY_PATH, which srun and ch-run pass on
in_container_distenv() {
	image_libs "$BATS_FILE_TMPDIR/lib"
	export LD_LIBRARY_PATH=/mnt/2
	BINDS=(-b "$TOP/tests/cluster:/mnt/0" -b "$TOP:/mnt/1" -b "$BATS_FILE_TMPDIR/lib:/mnt/2")
}

@test "ch-run: distenv check-env as the container's first command runs the all_reduce when the values arrived" {
	in_container_distenv
	run srun -N2 --ntasks-per-node=2 --distenv=tasks \
		ch-run "${BINDS[@]}" "$IMG" -- /mnt/1/distenv check-env -- python3 /mnt/0/gloo_allreduce.py
	echo "$output"
	[ "$status" -eq 0 ]
	all_ranks_reduced "$output"
}

@test "ch-run --set-env replacing NNODES and MASTER_PORT: distenv check-env stops the step on every node, naming each and its value, before the command runs" {
	in_container_distenv
	printf 'NNODES=7\nMASTER_PORT=1234\n' >"$BATS_TEST_TMPDIR/image.env"
	# what the tasks get without the check: the image's values
	# shellcheck disable=SC2016 # expanded in the container
	run srun -N2 --distenv ch-run --set-env="$BATS_TEST_TMPDIR/image.env" "$IMG" -- /bin/sh -c 'echo "IN NNODES=$NNODES MASTER_PORT=$MASTER_PORT"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cx 'IN NNODES=7 MASTER_PORT=1234' <<<"$output")" -eq 2 ]
	run srun -N2 --distenv ch-run --set-env="$BATS_TEST_TMPDIR/image.env" "${BINDS[@]}" "$IMG" -- /mnt/1/distenv check-env -- echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	check_env_stopped "$output" "${REPLACED_7_1234[@]}"
	nodes_idle
}

@test "ch-run with a TMPDIR of the job's: the resolved YAML is not at \$DISTENV_LF_CONFIG inside, and distenv check-env says so on every node; under Slurm's /tmp it is, and the command runs" {
	in_container_distenv
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dpo.yaml "output_dir=$BATS_FILE_TMPDIR/out"
	mkdir -p "$BATS_TEST_TMPDIR/tmp"
	run env TMPDIR="$BATS_TEST_TMPDIR/tmp" srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		ch-run "${BINDS[@]}" "$IMG" -- /mnt/1/distenv check-env -- echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -c '^TRAINING' <<<"$output")" -eq 0 ]
	[ "$(grep -cE "^distenv: error: DISTENV_LF_CONFIG: $BATS_TEST_TMPDIR/tmp/distenv-[^ ]*/lf_config.yaml: No such file or directory here" <<<"$output")" -eq 2 ]
	# without a TMPDIR of its own the task gets Slurm's /tmp, which
	# ch-run binds at the same path
	# shellcheck disable=SC2016 # expanded in the container
	run env -u TMPDIR srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		ch-run "${BINDS[@]}" "$IMG" -- /mnt/1/distenv check-env -- /bin/sh -c 'echo "TRAINING $DISTENV_LF_CONFIG"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE '^TRAINING /tmp/distenv-[^ ]*/lf_config.yaml$' <<<"$output")" -eq 2 ]
	nodes_idle
}
