#!/usr/bin/env bats
# distenv and Apptainer in the step's command: `apptainer exec IMG cmd`
# (Debian sid's apptainer package) on the Debian 12 directory image of
# contrib/containers/image.sh (python3 and torch). Apptainer is packaged
# in sid only, so this file runs in tests/releases.sh's 26.05 chroot
# alone, which installs Apptainer there, binds the image in read-only
# and names it in DISTENV_APPTAINER_IMAGE (run_apptainer), and runs bats
# in a mount namespace rooted at the chroot (Apptainer aborts in a plain
# chroot).
#
# Apptainer passes the host's environment through unless --cleanenv or
# --containall, the image's environment scripts
# (/.singularity.d/env/*.sh, where a definition's %environment lands)
# win over it, and it joins no network namespace of its own: the tasks
# inside reach each other on the node's interfaces, which distenv names
# to Gloo. It binds $HOME, /tmp, /var/tmp and the working directory by
# default; --contain gives a fresh /tmp (and $HOME, says its guide).
#
# The build's distenv runs inside from a bind of the tree; the image's
# glibc (Debian 12) is older than the one it was built with (sid), so it
# runs through the chroot's dynamic loader with the chroot's copies of
# the libraries it links, bound beside it (chroot_libs). Only distenv
# gets them: the command it execs runs on the image's own.

load helpers
load lf_helpers

setup_file() {
	IMG=${DISTENV_APPTAINER_IMAGE:?set by tests/releases.sh, in the 26.05 lane}
	export IMG
	cluster_file_setup 2
}
teardown_file() { cluster_file_teardown; }
setup() { cluster_test_setup; }

# chroot_libs DIR: into DIR, the dynamic loader and every library the
# build's distenv command links, as this (the build's) system has them
chroot_libs() {
	mkdir -p "$1"
	# shellcheck disable=SC2046 # one library path per word
	cp -L $(ldd "$TOP/distenv" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }') "$1/"
}

# in_container_distenv: BINDS, the tree at /mnt/1 and the libraries at
# /mnt/2, and DISTENV, the command line that runs the build's distenv
# inside the container
in_container_distenv() {
	chroot_libs "$BATS_FILE_TMPDIR/lib"
	BINDS=(--bind "$TOP/tests/cluster:/mnt/0" --bind "$TOP:/mnt/1" --bind "$BATS_FILE_TMPDIR/lib:/mnt/2")
	DISTENV=(/mnt/2/ld-linux-x86-64.so.2 --library-path /mnt/2 /mnt/1/distenv)
}

@test "apptainer: 2 nodes x 2 tasks, a Gloo all_reduce inside the container on distenv's variables" {
	run srun -N2 --ntasks-per-node=2 --distenv=tasks \
		apptainer exec --bind "$TOP/tests/cluster:/mnt/0" "$IMG" python3 /mnt/0/gloo_allreduce.py
	echo "$output"
	[ "$status" -eq 0 ]
	all_ranks_reduced "$output"
}

@test "apptainer: every task sees distenv's NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT, in the container" {
	# shellcheck disable=SC2016 # expanded in the container
	run srun -N2 --ntasks-per-node=2 --distenv=tasks \
		apptainer exec "$IMG" /bin/sh -c 'echo "IN $SLURM_PROCID node=$SLURM_NODEID NNODES=$NNODES NODE_RANK=$NODE_RANK MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT ports=$SLURM_STEP_RESV_PORTS debian=$(cat /etc/debian_version) in=$APPTAINER_CONTAINER"'
	echo "$output"
	[ "$status" -eq 0 ]
	tasks_saw_distenv "$output"
	# each task ran in the container: the image's Debian 12
	[ "$(grep -c "^IN .* debian=12\.[0-9]* in=$IMG\$" <<<"$output")" -eq 4 ]
}

@test "apptainer: distenv check-env as the container's first command runs the all_reduce when the values arrived" {
	in_container_distenv
	run srun -N2 --ntasks-per-node=2 --distenv=tasks \
		apptainer exec "${BINDS[@]}" "$IMG" "${DISTENV[@]}" check-env -- python3 /mnt/0/gloo_allreduce.py
	echo "$output"
	[ "$status" -eq 0 ]
	all_ranks_reduced "$output"
}

@test "apptainer --cleanenv drops distenv's variables: distenv check-env stops the step on every node, before the command runs" {
	in_container_distenv
	# what the tasks get without the check: none of distenv's variables
	# shellcheck disable=SC2016 # expanded in the container
	run srun -N2 --distenv apptainer exec --cleanenv "$IMG" /bin/sh -c 'echo "IN NNODES=$NNODES MASTER_PORT=$MASTER_PORT SET=$DISTENV_SET"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cx 'IN NNODES= MASTER_PORT= SET=' <<<"$output")" -eq 2 ]
	# DISTENV_SET, the list of what distenv set, is dropped with the
	# rest: check-env names it, not each variable
	run srun -N2 --distenv apptainer exec --cleanenv "${BINDS[@]}" "$IMG" "${DISTENV[@]}" check-env -- echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	check_env_stopped "$output" 'distenv: error: DISTENV_SET: not set: this is no task of a step distenv set up, or the container runtime dropped the environment'
	nodes_idle
}

@test "apptainer --cleanenv with DISTENV_SET passed in (APPTAINERENV_DISTENV_SET): distenv check-env names each dropped variable on every node" {
	in_container_distenv
	# shellcheck disable=SC2016 # expanded in the task
	run srun -N2 --distenv /bin/sh -c 'APPTAINERENV_DISTENV_SET=$DISTENV_SET exec "$@"' task \
		apptainer exec --cleanenv "${BINDS[@]}" "$IMG" "${DISTENV[@]}" check-env -- echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	dropped=()
	for v in NNODES NODE_RANK MASTER_ADDR MASTER_PORT; do
		dropped+=("distenv: error: $v: not set here, though distenv set it for this step: the container runtime dropped it")
	done
	check_env_stopped "$output" "${dropped[@]}"
	nodes_idle
}

@test "apptainer: an image environment (/.singularity.d/env/90-environment.sh) setting NNODES and MASTER_PORT replaces distenv's, and distenv check-env stops the step naming each" {
	in_container_distenv
	# the file a definition's %environment becomes, in a read-only
	# overlay on the image (the cached image itself stays as built)
	mkdir -p "$BATS_TEST_TMPDIR/layer/.singularity.d/env"
	printf 'export NNODES=7\nexport MASTER_PORT=1234\n' >"$BATS_TEST_TMPDIR/layer/.singularity.d/env/90-environment.sh"
	# what the tasks get without the check: the image's values
	# shellcheck disable=SC2016 # expanded in the container
	run srun -N2 --distenv apptainer exec --overlay "$BATS_TEST_TMPDIR/layer:ro" "$IMG" /bin/sh -c 'echo "IN NNODES=$NNODES MASTER_PORT=$MASTER_PORT"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cx 'IN NNODES=7 MASTER_PORT=1234' <<<"$output")" -eq 2 ]
	run srun -N2 --distenv apptainer exec --overlay "$BATS_TEST_TMPDIR/layer:ro" "${BINDS[@]}" "$IMG" "${DISTENV[@]}" check-env -- echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	check_env_stopped "$output" "${REPLACED_7_1234[@]}"
	nodes_idle
}

@test "apptainer: the resolved YAML under the job's TMPDIR (under /tmp) is at \$DISTENV_LF_CONFIG inside, Apptainer binding /tmp; with --contain it is not, and distenv check-env says so on every node" {
	in_container_distenv
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dpo.yaml "output_dir=$BATS_FILE_TMPDIR/out"
	mkdir -p "$BATS_TEST_TMPDIR/tmp"
	# shellcheck disable=SC2016 # expanded in the container
	run env TMPDIR="$BATS_TEST_TMPDIR/tmp" srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		apptainer exec "${BINDS[@]}" "$IMG" "${DISTENV[@]}" check-env -- /bin/sh -c 'echo "TRAINING $DISTENV_LF_CONFIG $(grep -c . "$DISTENV_LF_CONFIG")"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE "^TRAINING $BATS_TEST_TMPDIR/tmp/distenv-[^ ]*/lf_config.yaml [1-9][0-9]*$" <<<"$output")" -eq 2 ]
	# --contain: a fresh /tmp in the container
	run env TMPDIR="$BATS_TEST_TMPDIR/tmp" srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		apptainer exec --contain "${BINDS[@]}" "$IMG" "${DISTENV[@]}" check-env -- echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -c '^TRAINING' <<<"$output")" -eq 0 ]
	[ "$(grep -cE "^distenv: error: DISTENV_LF_CONFIG: $BATS_TEST_TMPDIR/tmp/distenv-[^ ]*/lf_config.yaml: No such file or directory here" <<<"$output")" -eq 2 ]
	nodes_idle
}
