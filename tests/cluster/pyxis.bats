#!/usr/bin/env bats
# distenv beside pyxis, through tests/cluster/fake_pyxis.c, a test plugin
# that does to the task what pyxis does in its task_init (the image's
# environment over the task's, RANK and LOCAL_RANK for a PyTorch image,
# the task moved into a mount namespace rooted at the image, with a fresh
# /tmp), since neither pyxis nor enroot can be installed here. Either
# plugstack order: distenv first works, and `distenv check-env` names
# what the image replaced; pyxis first fails the step at once, naming
# the order and the fix, and leaves jobs that did not ask for distenv
# alone. The resolved LLaMA-Factory YAML, written on the host, is seen
# inside only under a directory the container mounts: --distenv-lf-dir.

load helpers
load lf_helpers

# shellcheck disable=SC2034 # lf_helpers.bash's test_yaml reads it
TINY="$TOP/tests/cluster/lf/tiny_model"

setup_file() {
	IMG=$("$TOP/contrib/containers/image.sh")
	# pyxis's file name: distenv knows it by that (spank_pyxis.so)
	mkdir -p "$BATS_FILE_TMPDIR/plugin"
	FAKE=$BATS_FILE_TMPDIR/plugin/spank_pyxis.so
	gcc -Wall -Wextra -Werror -shared -fPIC -o "$FAKE" "$TOP/tests/cluster/fake_pyxis.c"
	# the build's distenv command inside: the tree, and libslurm, the
	# one library of its own the image lacks
	image_libs "$BATS_FILE_TMPDIR/lib"
	export IMG FAKE
	cluster_file_setup 2
}
teardown_file() { cluster_file_teardown; }
setup() {
	cluster_test_setup --keep-plugstack
	export LD_LIBRARY_PATH=/mnt/2
}

# pyxis_conf ENV_LINE...: the fake plugin's CONF for the image, with the
# tree at /mnt/0, this build at /mnt/1, libslurm at /mnt/2
pyxis_conf() {
	local line
	{
		echo "image $IMG"
		echo "mount $TOP/tests/cluster /mnt/0"
		echo "mount $TOP /mnt/1"
		echo "mount $BATS_FILE_TMPDIR/lib /mnt/2"
		for line in "$@"; do
			echo "env $line"
		done
	} >"$BATS_TEST_TMPDIR/pyxis.conf"
	echo "$BATS_TEST_TMPDIR/pyxis.conf"
}

@test "pyxis after distenv, a PyTorch image: the tasks run in the image, with pyxis's RANK and LOCAL_RANK; check-env finds distenv's values there, and the Gloo all_reduce runs" {
	printf 'required %s\nrequired %s\n' "$PLUGIN" "$FAKE" >"$PLUGSTACK"
	conf=$(pyxis_conf PYTORCH_VERSION=2.5.0)
	# shellcheck disable=SC2016 # expanded in the container
	run srun -N2 --ntasks-per-node=2 --distenv=tasks --fake-pyxis="$conf" \
		/bin/sh -c 'echo "IN $SLURM_PROCID RANK=$RANK LOCAL_RANK=$LOCAL_RANK image=$(cat /etc/debian_version)"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE '^IN ([0-3]) RANK=\1 LOCAL_RANK=[01] image=12\.' <<<"$output")" -eq 4 ]
	run srun -N2 --ntasks-per-node=2 --distenv=tasks --distenv-show --fake-pyxis="$conf" \
		/mnt/1/distenv check-env -- python3 /mnt/0/gloo_allreduce.py
	echo "$output"
	[ "$status" -eq 0 ]
	all_ranks_reduced "$output"
	# the show says that the image may replace what it lists
	grep -qE '^distenv: n1:   note: .*/spank_pyxis\.so is loaded after distenv: in its container the image.s environment replaces' <<<"$output"
	grep -qE '^distenv: n2:   note: .*Run `distenv check-env --` first in the container' <<<"$output"
}

@test "pyxis after distenv, an image that sets NNODES and MASTER_PORT: check-env stops the step on every node, naming each, and so it does for the resolved YAML that enroot's fresh /tmp hides" {
	printf 'required %s\nrequired %s\n' "$PLUGIN" "$FAKE" >"$PLUGSTACK"
	conf=$(pyxis_conf PYTORCH_VERSION=2.5.0 NNODES=7 MASTER_PORT=1234)
	run srun -N2 --distenv --fake-pyxis="$conf" /mnt/1/distenv check-env -- echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -c '^TRAINING' <<<"$output")" -eq 0 ]
	[ "$(grep -cF 'distenv: error: NNODES: is "7" here, not the value distenv set for this step' <<<"$output")" -eq 2 ]
	[ "$(grep -cF 'distenv: error: MASTER_PORT: is "1234" here, not the value distenv set for this step' <<<"$output")" -eq 2 ]
	# the image's values gone: the resolved YAML, written on the host
	# under Slurm's /tmp, is not under the container's /tmp
	conf=$(pyxis_conf PYTORCH_VERSION=2.5.0)
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dpo.yaml "output_dir=$BATS_FILE_TMPDIR/out"
	run env -u TMPDIR srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml --fake-pyxis="$conf" \
		/mnt/1/distenv check-env -- echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -c '^TRAINING' <<<"$output")" -eq 0 ]
	[ "$(grep -cE '^distenv: error: DISTENV_LF_CONFIG: /tmp/distenv-[^ ]*/lf_config.yaml: No such file or directory here' <<<"$output")" -eq 2 ]
	nodes_idle
}

@test "pyxis after distenv with enroot's PyTorch hook on: its MASTER_ADDR (a host name) and MASTER_PORT (one per job) replace distenv's, and check-env names both on every node" {
	printf 'required %s\nrequired %s\n' "$PLUGIN" "$FAKE" >"$PLUGSTACK"
	conf=$(pyxis_conf PYTORCH_VERSION=2.5.0)
	echo "hook pytorch" >>"$conf"
	# shellcheck disable=SC2016 # expanded in the container
	run srun -N2 --distenv --fake-pyxis="$conf" /bin/sh -c 'echo "IN MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE '^IN MASTER_ADDR=n1 MASTER_PORT=6[0-9]{4}$' <<<"$output")" -eq 2 ]
	run srun -N2 --distenv --fake-pyxis="$conf" /mnt/1/distenv check-env -- echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -c '^TRAINING' <<<"$output")" -eq 0 ]
	[ "$(grep -cF 'distenv: error: MASTER_ADDR: is "n1" here, not the value distenv set for this step' <<<"$output")" -eq 2 ]
	[ "$(grep -cE '^distenv: error: MASTER_PORT: is "6[0-9]{4}" here, not the value distenv set for this step' <<<"$output")" -eq 2 ]
	nodes_idle
}

@test "pyxis before distenv: a step that asks for distenv fails at once on every node, naming the plugstack order and the fix; one that does not runs in the image untouched" {
	printf 'required %s\nrequired %s\n' "$FAKE" "$PLUGIN" >"$PLUGSTACK"
	conf=$(pyxis_conf PYTORCH_VERSION=2.5.0)
	run timeout 60 srun -N2 --distenv --fake-pyxis="$conf" echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$(grep -c '^TRAINING' <<<"$output")" -eq 0 ]
	[ "$(grep -cF "plugstack.conf: distenv's task_init runs inside a container: a plugin listed before distenv in the plugstack (pyxis, for one) moved the task into its mount namespace" <<<"$output")" -ge 1 ]
	grep -qF 'Ask the admin to load distenv before the container plugin: its plugstack line first (in a plugstack.conf.d directory, a file name that sorts first, e.g. 00-distenv.conf)' <<<"$output"
	nodes_idle
	# no --distenv: distenv stays out of the way
	# shellcheck disable=SC2016 # expanded in the container
	run timeout 60 srun -N2 --fake-pyxis="$conf" /bin/sh -c 'echo "IN RANK=$RANK image=$(cat /etc/debian_version)"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE '^IN RANK=[01] image=12\.' <<<"$output")" -eq 2 ]
}

@test "pyxis after distenv, --distenv-lf-config: by default (/tmp) the resolved YAML is not in the container and every node warns at launch, strict fails before it; under --distenv-lf-dir, a directory the container mounts, DISTENV_LF_CONFIG and its deepspeed: file are read inside, and removed at the step's end" {
	printf 'required %s\nrequired %s\n' "$PLUGIN" "$FAKE" >"$PLUGSTACK"
	conf=$(pyxis_conf PYTORCH_VERSION=2.5.0)
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dpo.yaml "output_dir=$BATS_FILE_TMPDIR/out"
	# shellcheck disable=SC2016 # expanded in the container
	look='ds=$(sed -n "s/^deepspeed: \"\([^\"]*\)\".*/\1/p" "$DISTENV_LF_CONFIG" 2>/dev/null); if test -r "$DISTENV_LF_CONFIG" && test -r "$ds"; then echo "FOUND $DISTENV_LF_CONFIG $ds"; else echo "MISSING $DISTENV_LF_CONFIG"; fi'
	run env -u TMPDIR srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		--distenv-offload=cpu --fake-pyxis="$conf" /bin/sh -c "$look"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE '^MISSING /tmp/distenv-[^ ]*/lf_config.yaml$' <<<"$output")" -eq 2 ]
	[ "$(grep -c '^FOUND' <<<"$output")" -eq 0 ]
	[ "$(grep -cE "^distenv: warning: n[12]: --distenv-lf-dir: the resolved copy is /tmp/distenv-[^ ]*/lf_config.yaml \(the directory of the default /tmp \(TMPDIR is not set\)\), and $FAKE is loaded after distenv: if this step runs in a pyxis container, enroot gives it a fresh /tmp and DISTENV_LF_CONFIG names no file there" <<<"$output")" -eq 2 ]
	grep -qF 'Give --distenv-lf-dir=DIR a directory the container mounts at the same path (pyxis: --container-mounts=DIR:DIR; e.g. beside output_dir), or ask the admins for the site file' <<<"$output"
	# strict: the step fails before the launch, on every node
	run env -u TMPDIR timeout 60 srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		--distenv-check=strict --fake-pyxis="$conf" echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$(grep -c '^TRAINING' <<<"$output")" -eq 0 ]
	grep -qE "distenv: error: n[12]: --distenv-lf-dir: the resolved copy is /tmp/distenv-[^ ]*/lf_config.yaml" <<<"$output"
	nodes_idle
	# a directory the container mounts at the same path: both files there
	dir=$BATS_FILE_TMPDIR/lfdir
	mkdir -p "$dir"
	echo "mount $dir $dir" >>"$conf"
	run env -u TMPDIR srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		--distenv-offload=cpu --distenv-lf-dir="$dir" --distenv-show --fake-pyxis="$conf" /bin/sh -c "$look"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE "^FOUND $dir/distenv-[0-9]+-[0-9]+\.0-([01])/lf_config.yaml $dir/distenv-[0-9]+-[0-9]+\.0-\1/ds_config.json$" <<<"$output")" -eq 2 ]
	[ "$(grep -cE "^distenv: n[12]: resolved copies in $dir/distenv-[^ ]*, under the directory of --distenv-lf-dir$" <<<"$output")" -eq 2 ]
	[ "$(grep -c 'fresh /tmp' <<<"$output")" -eq 0 ]
	nodes_idle
	# removed at the step's end, from the new place too
	[ -z "$(ls -A "$dir")" ]
}

@test "pyxis's own options, read by distenv: the YAML's container paths are checked at their host paths through --container-mounts, the resolved YAML goes to the first writable mount and is read inside under its container path; a path under no mount is named, not reported missing" {
	printf 'required %s\nrequired %s\n' "$PLUGIN" "$FAKE" >"$PLUGSTACK"
	host=$BATS_FILE_TMPDIR/hostrun
	mkdir -p "$host/out"
	mounts="$host:/mnt/3,$TOP/tests/cluster:/mnt/0:ro,$TOP:/mnt/1:ro,$BATS_FILE_TMPDIR/lib:/mnt/2"
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dpo.yaml output_dir=/mnt/3/out \
		model_name_or_path=/mnt/0/lf/tiny_model deepspeed=/mnt/1/templates/deepspeed/ds_z3.json
	# shellcheck disable=SC2016 # expanded in the container
	look='ds=$(sed -n "s/^deepspeed: \"\([^\"]*\)\".*/\1/p" "$DISTENV_LF_CONFIG" 2>/dev/null); if test -r "$DISTENV_LF_CONFIG" && test -r "$ds"; then echo "FOUND $DISTENV_LF_CONFIG $ds"; else echo "MISSING $DISTENV_LF_CONFIG"; fi'
	run env -u TMPDIR srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml --distenv-offload=cpu \
		--distenv-save-on-each-node=auto --distenv-show --container-image="$IMG" --container-mounts="$mounts" /bin/sh -c "$look"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE '^FOUND /mnt/3/distenv-[0-9]+-[0-9]+\.0-([01])/lf_config.yaml /mnt/3/distenv-[0-9]+-[0-9]+\.0-\1/ds_config.json$' <<<"$output")" -eq 2 ]
	[ "$(grep -cE "^distenv: n[12]: resolved copies in /mnt/3/distenv-[^ ]* \(host path $host/distenv-[^ ]*\), under the directory of the first writable --container-mounts directory" <<<"$output")" -eq 2 ]
	[ "$(grep -c 'not checked on this node' <<<"$output")" -eq 0 ]
	[ "$(grep -c 'fresh /tmp' <<<"$output")" -eq 0 ]
	# no --container-env: the show names what the image may replace
	[ "$(grep -cF "note: this pyxis step's --container-env does not keep MASTER_ADDR,MASTER_PORT,NNODES,NODE_RANK,NPROC_PER_NODE" <<<"$output")" -eq 2 ]
	nodes_idle
	# removed at the step's end from the mounted directory
	[ "$(ls -A "$host")" = out ]
	# output_dir under no mount: named, and the step runs
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dpo.yaml output_dir=/mnt/4/out \
		model_name_or_path=/mnt/0/lf/tiny_model deepspeed=/mnt/1/templates/deepspeed/ds_z3.json
	run env -u TMPDIR srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml --distenv-offload=cpu \
		--container-image="$IMG" --container-mounts="$mounts" /bin/sh -c "$look"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cF 'output_dir: /mnt/4/out is a path in the pyxis container under no entry of --container-mounts, so it was not checked on this node' <<<"$output")" -eq 2 ]
	[ "$(grep -c '^FOUND /mnt/3/' <<<"$output")" -eq 2 ]
	nodes_idle
	# strict: an error before the launch, on every node
	run env -u TMPDIR timeout 60 srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		--distenv-offload=cpu --distenv-save-on-each-node=no --distenv-check=strict \
		--container-image="$IMG" --container-mounts="$mounts" echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$(grep -c '^TRAINING' <<<"$output")" -eq 0 ]
	grep -qE '^distenv: error: n[12]: output_dir: /mnt/4/out is a path in the pyxis container under no entry of --container-mounts' <<<"$output"
	nodes_idle
}

@test "template dpo_full_zero3_pyxis through the stand-in: the job's host steps, then the training step in the image, with distenv's values and the resolved YAML in the first mount" {
	printf 'required %s\nrequired %s\n' "$PLUGIN" "$FAKE" >"$PLUGSTACK"
	# the run's directory, under /tmp so that the stand-in makes its
	# mount point in the fresh tmpfs, as enroot's x-create does
	run_dir=$BATS_FILE_TMPDIR/tpl
	mkdir -p "$run_dir/out" "$run_dir/bin"
	# a llamafactory-cli that says where it runs and what it reads
	cat >"$run_dir/bin/llamafactory-cli" <<-'CLI'
		#!/bin/sh
		echo "LFCLI image=$(cat /etc/debian_version) addr=$MASTER_ADDR nnodes=$NNODES config=$2"
		if test -r "$2"; then echo "LFCLI read $(grep -c '^save_on_each_node: ' "$2")"; fi
	CLI
	chmod +x "$run_dir/bin/llamafactory-cli"
	# the template's rule: every path the same inside and out
	cp -r "$TINY" "$TPL/deepspeed/ds_z3.json" "$run_dir/"
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dpo.yaml "output_dir=$run_dir/out" \
		"model_name_or_path=$run_dir/tiny_model" "deepspeed=$run_dir/ds_z3.json"
	test_params "$PWD/dpo.yaml"
	template_copy "$TPL/dpo_full_zero3_pyxis.sbatch" pyxis.sbatch "${template_params[@]}"
	# the container settings from the environment of sbatch
	id=$(PATH="$run_dir/bin:$PATH" DPO_DATA_CHECK=off DPO_IMAGE="$IMG" \
		DPO_MOUNTS="$run_dir,$PWD" submit pyxis.sbatch)
	state=$(wait_job "$id")
	cat pyxis.sbatch.out
	[ "$state" = COMPLETED ]
	# the storage marks on the host, then the step in the image
	grep -qE "^distenv: n[12]: storage mark of job $id start 0 written in $run_dir/out/" pyxis.sbatch.out
	[ "$(grep -cE "^LFCLI image=12\.[0-9]+ addr=$CLUSTER_NET\.1 nnodes=2 config=$run_dir/distenv-[0-9]+-$id\.[0-9]+-[01]/lf_config.yaml$" pyxis.sbatch.out)" -eq 2 ]
	[ "$(grep -cx 'LFCLI read 1' pyxis.sbatch.out)" -eq 2 ]
	[ "$(grep -c 'not checked on this node' pyxis.sbatch.out)" -eq 0 ]
	# the template's --container-env keeps every one of them
	[ "$(grep -c 'does not keep' pyxis.sbatch.out)" -eq 0 ]
	# the copies removed at the step's end
	[ "$(ls -A "$run_dir")" = "$(printf 'bin\nds_z3.json\nout\ntiny_model')" ]
}
