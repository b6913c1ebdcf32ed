#!/usr/bin/env bats
# save_on_each_node from the storage that output_dir is on, as each node of
# a real Slurm cluster sees it (docs/contracts.md 2): a tmpfs made in
# the node's own mount namespace and reached through a bind mount. statfs
# reports the file system under a bind mount, so the decision follows the
# mount's source. A --distenv-mark-storage step replaces that guess by
# what the nodes see (plugin/lf/lf_storage_mark.h).

# Commands in single quotes run in the job's shell, not this one.
# shellcheck disable=SC2016

load helpers
load lf_helpers

setup_file() { cluster_file_setup 2 "" --node-local "$DISTENV_CLUSTER_DIR/node-local"; }
teardown_file() { cluster_file_teardown; }
setup() { cluster_test_setup; }

@test "output_dir under a bind mount of a node's own tmpfs is node-local on every node: save_on_each_node true" {
	lf="$TOP/tests/lf"
	# One YAML per node: output_dir under that node's bind mount.
	for n in n1 n2; do
		sed -e "s#MODEL_DIR#$lf/qwen2-72b#" -e "s#DS_PATH#$lf/ds_z3_config.json#" \
			-e "s#OUTPUT_DIR#/tmp/dv-bind-$n/out#" "$lf/full_dpo.yaml" >"$BATS_FILE_TMPDIR/dpo-$n.yaml"
	done
	# Mounts made in a step stay in the node's mount namespace (cluster.sh:
	# / is a slave there), so the root namespace never sees them; the
	# step removes them again.
	run srun -N2 --ntasks-per-node=1 bash -c '
		d=/tmp/dv-bind-$SLURMD_NODENAME
		mkdir -p "$d.src" "$d" &&
		mount -t tmpfs "dv-$SLURMD_NODENAME" "$d.src" &&
		mount --bind "$d.src" "$d" || exit 1
		echo "MOUNT $SLURMD_NODENAME $(awk -v d="$d" "\$5 == d {print \$4, \$5}" /proc/self/mountinfo)"
		distenv plan "$0/dpo-$SLURMD_NODENAME.yaml" --nodes 2 --gpus-per-node 8 --host-mem 4T |
			sed "s/^/$SLURMD_NODENAME: /"
		rc=${PIPESTATUS[0]}
		umount "$d" "$d.src"
		rmdir "$d" "$d.src"
		exit "$rc"' "$BATS_FILE_TMPDIR"
	echo "$output"
	[ "$status" -eq 0 ]
	for n in n1 n2; do
		# the bind mount is really there: mountinfo's root "/" at the target
		grep -qx "MOUNT $n / /tmp/dv-bind-$n" <<<"$output"
		grep -qF "$n:   save_on_each_node: true (decided by distenv)" <<<"$output"
		grep -qF "$n:   changed: save_on_each_node: true (output_dir is on node-local storage" <<<"$output"
	done
	# Nothing leaked into the root namespace.
	[ ! -e /tmp/dv-bind-n1 ] && [ ! -e /tmp/dv-bind-n2 ]
}

@test "--distenv-lf-config without --distenv says it does nothing, and the job runs untouched" {
	run srun -N1 --distenv-lf-config="$TOP/tests/lf/full_dpo.yaml" bash -c 'echo "LF[${DISTENV_LF_CONFIG:-}]"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qF 'distenv: warning: --distenv-lf-config does nothing without --distenv' <<<"$output"
	grep -qx 'LF\[\]' <<<"$output"
}

# other_node NODE: the node whose mark NODE reads (n1 reads n2's, n2 n1's)
other_node() {
	if [ "$1" = n1 ]; then echo n2; else echo n1; fi
}

# mark_job OUTPUT_DIR: a 2-node job whose first step prepares without
# marks, whose second marks output_dir, and whose third prepares again;
# each prepare prints the node's save_on_each_node lines of its resolved
# copy, tagged BEFORE and AFTER.
mark_job() {
	lf="$TOP/tests/lf"
	sed -e "s#MODEL_DIR#$lf/qwen2-72b#" -e "s#DS_PATH#$lf/ds_z3_config.json#" \
		-e "s#OUTPUT_DIR#$1#" "$lf/full_dpo.yaml" >mark.yaml
	cat >mark.sbatch <<-EOF
	#!/bin/bash
	#SBATCH -N2 --ntasks-per-node=1 --distenv --distenv-lf-config=$BATS_FILE_TMPDIR/mark.yaml
	show='grep -n save_on_each_node "\$DISTENV_LF_CONFIG" | sed "s/^/\$SLURMD_NODENAME \$0 /"'
	srun bash -c "\$show" BEFORE
	srun --distenv-show --distenv-mark-storage true
	srun bash -c "\$show" AFTER
	EOF
	sbatch --wait -o mark.out -e mark.out mark.sbatch
	cat mark.out
}

@test "storage marks: on a disk both nodes share (ext4, which statfs calls local), the mark step makes save_on_each_node false, saying it was probed; before, the guess says it is a guess" {
	rm -rf "$BATS_FILE_TMPDIR/sh"
	mark_job "$BATS_FILE_TMPDIR/sh/out"
	for n in n1 n2; do
		other=$(other_node "$n")
		grep -qE "^$n BEFORE [0-9]+:# .*save_on_each_node: true \(output_dir is on node-local storage \(guessed from the file system type \\(.*\\): no --distenv-mark-storage step of this job start marked it\)" mark.out
		grep -qE "^$n BEFORE [0-9]+:save_on_each_node: true" mark.out
		grep -qF "distenv: $n: storage mark of job" mark.out
		grep -qE "^$n AFTER [0-9]+:# .*save_on_each_node: false \(output_dir is on shared storage \(probed: $other's mark of this job start is visible here, though the file system type \\(.*\\) says local\)" mark.out
		grep -qE "^$n AFTER [0-9]+:save_on_each_node: false" mark.out
	done
	# one mark per node, each naming the job's first start
	ls -A "$BATS_FILE_TMPDIR/sh/out/.distenv/storage"
	[ "$(ls -A "$BATS_FILE_TMPDIR/sh/out/.distenv/storage" | tr '\n' ' ')" = "n1 n2 " ]
	grep -qE '^distenv storage mark: job [0-9]+ start 0 node n2$' "$BATS_FILE_TMPDIR/sh/out/.distenv/storage/n2"
}

@test "storage marks: on node-local disks (a tmpfs per node at one path) the probe says node-local, and a mark left by an earlier job is not taken for this one's" {
	mark_job "$LOCAL/mk/out"
	for n in n1 n2; do
		other=$(other_node "$n")
		grep -qE "^$n AFTER [0-9]+:# .*save_on_each_node: true \(output_dir is on node-local storage \(probed: $other's mark of this job start is not visible here\)" mark.out
		grep -qE "^$n AFTER [0-9]+:save_on_each_node: true" mark.out
	done
	# each node holds its own mark only
	run srun -N2 --ntasks-per-node=1 bash -c 'echo "$SLURMD_NODENAME has $(ls -A "$0" | tr "\n" " ")"' "$LOCAL/mk/out/.distenv/storage"
	echo "$output"
	grep -qx 'n1 has n1 ' <<<"$output"
	grep -qx 'n2 has n2 ' <<<"$output"
	# a shared directory with the marks of an earlier job: this job
	# writes no new ones, so they do not count, and the guess is said
	rm -rf "$BATS_FILE_TMPDIR/old"
	mkdir -p "$BATS_FILE_TMPDIR/old/out/.distenv/storage"
	for n in n1 n2; do
		echo "distenv storage mark: job 1 start 0 node $n" >"$BATS_FILE_TMPDIR/old/out/.distenv/storage/$n"
	done
	lf="$TOP/tests/lf"
	sed -e "s#MODEL_DIR#$lf/qwen2-72b#" -e "s#DS_PATH#$lf/ds_z3_config.json#" \
		-e "s#OUTPUT_DIR#$BATS_FILE_TMPDIR/old/out#" "$lf/full_dpo.yaml" >old.yaml
	run srun -N2 --ntasks-per-node=1 --distenv --distenv-lf-config=old.yaml bash -c 'grep save_on_each_node "$DISTENV_LF_CONFIG"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qF 'no --distenv-mark-storage step of this job start marked it' <<<"$output"
	refute grep -q probed <<<"$output"
}

@test "storage marks: --distenv-mark-storage without --distenv-lf-config fails the step with the fix; a YAML without output_dir too" {
	run srun -N1 --distenv --distenv-mark-storage true
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qF 'no training YAML to take output_dir from' <<<"$output"
	grep -qF 'Give --distenv-lf-config with it' <<<"$output"
	printf 'stage: dpo\n' >noout.yaml
	run srun -N1 --distenv --distenv-lf-config=noout.yaml --distenv-mark-storage true
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qF 'no output_dir to mark' <<<"$output"
}

@test "distenv prepare and --distenv-lf-config take the same facts: on node-local disks, with storage marks, a requeue count and DISTENV_RESUME, both write the same resolved copy on each node and export the same resume" {
	lf="$TOP/tests/lf"
	sed -e "s#MODEL_DIR#$lf/qwen2-72b#" -e "s#DS_PATH#$lf/ds_z3_config.json#" \
		-e "s#OUTPUT_DIR#$LOCAL/same/out#" "$lf/full_dpo.yaml" >same.yaml
	# (each step's copy is in a folder named by its step: the header's
	# first two lines are compared without it)
	# the checkpoint the job script agreed on (an empty one: the
	# resume check is off in both, what counts is that both take it)
	srun -N2 --ntasks-per-node=1 mkdir -p "$LOCAL/same/out/checkpoint-4"
	cat >same.sbatch <<-EOF
	#!/bin/bash
	#SBATCH -N2 --ntasks-per-node=1 --distenv
	export SLURM_RESTART_COUNT=1 DISTENV_RESUME=$LOCAL/same/out/checkpoint-4
	srun --distenv-lf-config=$BATS_FILE_TMPDIR/same.yaml --distenv-mark-storage true
	srun --distenv-lf-config=$BATS_FILE_TMPDIR/same.yaml --distenv-check=off bash -c 'sed -E "1s/ step [0-9]+,/ step S,/; 2s/distenv-([0-9]+)-[0-9]+[.][0-9]+-/distenv-\1-J.S-/" "\$DISTENV_LF_CONFIG" >plugin.\$SLURMD_NODENAME; echo "\$DISTENV_LF_RESUME" >>plugin.\$SLURMD_NODENAME'
	srun bash -c 'eval "\$(distenv prepare --lf-config $BATS_FILE_TMPDIR/same.yaml --check off)" && sed -E "1s/ step [0-9]+,/ step S,/; 2s/distenv-([0-9]+)-[0-9]+[.][0-9]+-/distenv-\1-J.S-/" "\$DISTENV_LF_CONFIG" >cmd.\$SLURMD_NODENAME; echo "\$DISTENV_LF_RESUME" >>cmd.\$SLURMD_NODENAME'
	EOF
	sbatch --wait -o same.out -e same.out same.sbatch
	cat same.out
	for n in n1 n2; do
		cat "plugin.$n"
		diff "plugin.$n" "cmd.$n"
		# the copy says it was probed, and names the resume
		grep -qF "probed: " "plugin.$n"
		grep -qx "$LOCAL/same/out/checkpoint-4" "plugin.$n"
	done
}
