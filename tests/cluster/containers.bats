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

@test "ch-run: template dpo_full_zero3 with dpo_exec=(ch-run ... distenv check-env --): real LLaMA-Factory 0.9.5 DPO on 2x2 inside the image on distenv's values, losses logged, the checkpoint written" {
	"$TOP/contrib/lfstack/venv.sh" >/dev/null
	in_container_distenv
	# Every path the run reads or writes is the same inside: the venv
	# bound at its own path (image.sh makes the mount point); the model,
	# data, DeepSpeed config, output_dir, the probe, the submit directory
	# and the resolved YAML under /tmp, which ch-run binds at the guest's
	# /tmp when the task has no TMPDIR of its own.
	run_dir=$BATS_FILE_TMPDIR/dpo
	[[ $run_dir == /tmp/* ]]
	[[ $PWD == /tmp/* ]]
	mkdir -p "$run_dir/probe" "$run_dir/hf"
	cp -r "$TPL/data" "$TPL/deepspeed/ds_z3.json" "$run_dir/"
	cp "$TOP/tests/cluster/lf/probe/sitecustomize.py" "$run_dir/probe/"
	"$VENV/bin/python" "$TOP/contrib/lfstack/tiny_model.py" "$run_dir/data/dpo_pairs.json" "$run_dir/tiny" >&2
	# one epoch: 4 steps (16 pairs, 4 ranks, batch 1), checkpoint-4
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dpo.yaml "@$TOP/contrib/lfstack/cpu.yaml" \
		"model_name_or_path=$run_dir/tiny" "dataset_dir=$run_dir/data" \
		"deepspeed=$run_dir/ds_z3.json" "output_dir=$run_dir/out" num_train_epochs=1.0
	test_params "$PWD/dpo.yaml"
	# shellcheck disable=SC2154 # set by test_params (lf_helpers.bash)
	template_copy "$TPL/dpo_full_zero3.sbatch" ch.sbatch "${template_params[@]}"
	# the user's edit templates/README.md ("In a container") describes:
	# dpo_exec before dpo_job_train, nothing else
	line=$(printf 'dpo_exec=(ch-run -b %q -b %q -b %q -c %q %q -- /mnt/1/distenv check-env --)' \
		"$VENV" "$TOP:/mnt/1" "$BATS_FILE_TMPDIR/lib:/mnt/2" "$PWD" "$IMG")
	awk -v l="$line" '/^dpo_job_train$/ { print l } { print }' ch.sbatch >ch.edited
	run diff ch.sbatch ch.edited
	[ "$status" -eq 1 ]
	[ "$(grep -c '^[<>]' <<<"$output")" -eq 1 ]
	grep -qxF "> $line" <<<"$output"
	# the venv as `source venv/bin/activate` puts it; the job inherits it
	id=$(
		unset TMPDIR
		export PATH="$VENV/bin:$PATH" PYTHONPATH="$run_dir/probe" HF_HOME="$run_dir/hf" \
			HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
			DISTENV_TEST_ENV_PROBE=CH_RUNNING,MASTER_ADDR,WORLD_SIZE
		submit ch.edited
	)
	state=$(wait_job "$id")
	cat ch.edited.out
	# COMPLETED, or trained to the end and then failed only in torch's
	# teardown (lf_helpers.bash, tests/README.md)
	trained "$state" ch.edited.out
	# every trainer process ran in the container (CH_RUNNING: ch-run(1)),
	# two on each node, with distenv's world and master and its resolved
	# YAML, which the container found at the host's path: distenv
	# check-env, the command before it, passed on both nodes
	[ "$(grep -cE '^probe: rank [0-3] node=n1 CH_RUNNING=Weird Al Yankovic$' ch.edited.out)" -eq 2 ]
	[ "$(grep -cE '^probe: rank [0-3] node=n2 CH_RUNNING=Weird Al Yankovic$' ch.edited.out)" -eq 2 ]
	for r in 0 1 2 3; do
		grep -qE "^probe: rank $r node=n[12] CH_RUNNING=Weird Al Yankovic$" ch.edited.out
		grep -qE "^probe: rank $r node=n[12] WORLD_SIZE=4$" ch.edited.out
		grep -qE "^probe: rank $r node=n[12] MASTER_ADDR=$CLUSTER_NET\.1$" ch.edited.out
		grep -qE "^probe: rank $r node=n[12] argv=/tmp/distenv-[0-9]+-$id\.[0-9]+-[01]/lf_config.yaml$" ch.edited.out
	done
	grep -qE "Initializing 2 distributed tasks at: $CLUSTER_NET\.1:[0-9]+" ch.edited.out
	grep -q 'Multi-node training enabled: num nodes: 2, node rank: 0' ch.edited.out
	grep -q 'Multi-node training enabled: num nodes: 2, node rank: 1' ch.edited.out
	grep -q 'Detected DeepSpeed ZeRO-3' ch.edited.out
	# the losses: the trainer's log line of each of the 4 steps, the first
	# log(2) (policy = reference), all finite
	[ "$(grep -oE "\{'loss': '?[0-9]" ch.edited.out | wc -l)" -eq 4 ]
	run loss_summary "$run_dir/out"
	echo "$output"
	[ "$output" = "4 True 0.693" ]
	# the checkpoint, on the shared disk: the trainer's files from rank 0
	# and each rank's ZeRO-3 shards
	for f in trainer_state.json latest model.safetensors rng_state_0.pth rng_state_3.pth \
		global_step4/zero_pp_rank_0_mp_rank_00_model_states.pt \
		global_step4/zero_pp_rank_3_mp_rank_00_optim_states.pt; do
		[ -s "$run_dir/out/checkpoint-4/$f" ]
	done
	nodes_idle
}
