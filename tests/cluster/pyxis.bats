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
