#!/usr/bin/env bats
# save_on_each_node from the storage that output_dir is on, as each node of
# a real Slurm cluster sees it (docs/contracts.md 2): a tmpfs made in
# the node's own mount namespace and reached through a bind mount. statfs
# reports the file system under a bind mount, so the decision follows the
# mount's source.

# Commands in single quotes run in the job's shell, not this one.
# shellcheck disable=SC2016

load helpers

setup_file() {
	load helpers
	cluster_up 2
}

teardown_file() {
	load helpers
	cluster_down
}

setup() {
	cluster_env
	plugstack_with_distenv
	cd "$BATS_FILE_TMPDIR" || return 1
}

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
