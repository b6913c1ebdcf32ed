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
#
# The template dpo_full_zero3_apptainer.sbatch runs unchanged but for its
# parameter block, its container settings from the environment of
# sbatch: the real LLaMA-Factory 0.9.5 DPO training, 2 nodes x 2
# processes, inside the image. The pinned venv (Debian 12's Python 3.11,
# as the image's) is bound into the chroot by tests/releases.sh
# (lf_stack_into) and into the image at its own path; Apptainer keeps
# the image's PATH, so APPTAINERENV_PREPEND_PATH puts the venv's bin on
# it. DPO_DISTENV is one word: a script that runs the build's distenv
# as above. The template's --nv on these GPU-less nodes: the step runs,
# and none of Apptainer's log lines is in the job's output (one is, in a
# step's output, when a bind fails).

load helpers
load lf_helpers

# a line of Apptainer's own log, colored or not
APPTAINER_SAYS=$'^(\e\\[[0-9;]*m)?(INFO|WARNING|ERROR|FATAL):'

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

@test "apptainer: template dpo_full_zero3_apptainer as it is: real LLaMA-Factory 0.9.5 DPO on 2x2 inside the image on distenv's values, check-env passed, the resolved YAML read inside, the checkpoint written" {
	# the venv at its own path, bound into the chroot by tests/releases.sh
	[ -x "$VENV/bin/llamafactory-cli" ]
	in_container_distenv
	# Every path the run reads or writes is the same inside: the venv,
	# the model, data, DeepSpeed config, output_dir, the probe and the
	# submit directory bound at their own paths (DPO_BINDS); the
	# resolved YAML under /tmp, which Apptainer binds by default.
	run_dir=$BATS_FILE_TMPDIR/dpo
	[[ $run_dir == /tmp/* ]]
	mkdir -p "$run_dir/probe" "$run_dir/hf"
	cp -r "$TPL/data" "$TPL/deepspeed/ds_z3.json" "$run_dir/"
	cp "$TOP/tests/cluster/lf/probe/sitecustomize.py" "$run_dir/probe/"
	"$VENV/bin/python" "$TOP/contrib/lfstack/tiny_model.py" "$run_dir/data/dpo_pairs.json" "$run_dir/tiny" >&2
	# the distenv command as the image sees it (DPO_DISTENV, one word): a
	# script that runs the build's distenv on the bound libraries
	printf '#!/bin/sh\nexec %s "$@"\n' "${DISTENV[*]}" >"$run_dir/distenv"
	chmod +x "$run_dir/distenv"
	# one epoch: 4 steps (16 pairs, 4 ranks, batch 1), checkpoint-4
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dpo.yaml "@$TOP/contrib/lfstack/cpu.yaml" \
		"model_name_or_path=$run_dir/tiny" "dataset_dir=$run_dir/data" \
		"deepspeed=$run_dir/ds_z3.json" "output_dir=$run_dir/out" num_train_epochs=1.0
	test_params "$PWD/dpo.yaml"
	# shellcheck disable=SC2154 # set by test_params (lf_helpers.bash)
	template_copy "$TPL/dpo_full_zero3_apptainer.sbatch" ap.sbatch "${template_params[@]}"
	# Apptainer's own lines reach the step's output: a bind of a path
	# that does not exist stops it, saying so
	run srun -N1 apptainer exec --nv --bind "$run_dir/none" "$IMG" true
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -cE "$APPTAINER_SAYS" <<<"$output")" -ge 1 ]
	# the container settings and the venv (as `source venv/bin/activate`
	# puts it; Apptainer keeps the image's PATH, so the venv's bin goes
	# in by APPTAINERENV_PREPEND_PATH) from the environment of sbatch
	id=$(
		unset TMPDIR
		export PATH="$VENV/bin:$PATH" APPTAINERENV_PREPEND_PATH="$VENV/bin" \
			PYTHONPATH="$run_dir/probe" HF_HOME="$run_dir/hf" \
			HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
			DISTENV_TEST_ENV_PROBE=APPTAINER_CONTAINER,MASTER_ADDR,WORLD_SIZE \
			DPO_IMAGE="$IMG" DPO_DISTENV="$run_dir/distenv" \
			DPO_BINDS="$VENV,$run_dir,$PWD,${BINDS[3]},${BINDS[5]}"
		submit ap.sbatch
	)
	state=$(wait_job "$id")
	cat ap.sbatch.out
	# COMPLETED, or trained to the end and then failed only in torch's
	# teardown (lf_helpers.bash, tests/README.md)
	trained "$state" ap.sbatch.out
	# --nv on nodes without GPUs: Apptainer runs the step and says
	# nothing, no line of its own (INFO:, WARNING:, ERROR:, FATAL:)
	[ "$(grep -cE "$APPTAINER_SAYS" ap.sbatch.out)" -eq 0 ]
	# every trainer process ran in the image (APPTAINER_CONTAINER), two
	# on each node, with distenv's world and master and its resolved
	# YAML, which the container found at the host's path: distenv
	# check-env, the command before it, passed on both nodes
	[ "$(grep -cxE "probe: rank [0-3] node=n1 APPTAINER_CONTAINER=$IMG" ap.sbatch.out)" -eq 2 ]
	[ "$(grep -cxE "probe: rank [0-3] node=n2 APPTAINER_CONTAINER=$IMG" ap.sbatch.out)" -eq 2 ]
	for r in 0 1 2 3; do
		grep -qE "^probe: rank $r node=n[12] WORLD_SIZE=4$" ap.sbatch.out
		grep -qE "^probe: rank $r node=n[12] MASTER_ADDR=$CLUSTER_NET\.1$" ap.sbatch.out
		grep -qE "^probe: rank $r node=n[12] argv=/tmp/distenv-[0-9]+-$id\.[0-9]+-[01]/lf_config.yaml$" ap.sbatch.out
	done
	[ "$(grep -c '^distenv: error' ap.sbatch.out)" -eq 0 ]
	grep -q 'Multi-node training enabled: num nodes: 2, node rank: 0' ap.sbatch.out
	grep -q 'Multi-node training enabled: num nodes: 2, node rank: 1' ap.sbatch.out
	grep -q 'Detected DeepSpeed ZeRO-3' ap.sbatch.out
	# the losses of the 4 steps, the first log(2), all finite
	run loss_summary "$run_dir/out"
	echo "$output"
	[ "$output" = "4 True 0.693" ]
	for f in trainer_state.json latest model.safetensors rng_state_0.pth rng_state_3.pth \
		global_step4/zero_pp_rank_3_mp_rank_00_optim_states.pt; do
		[ -s "$run_dir/out/checkpoint-4/$f" ]
	done
	nodes_idle
}
