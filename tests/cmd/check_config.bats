#!/usr/bin/env bats
# distenv check-config: validates a site policy file as the plugin loads
# it (same owner/mode checks, same parser) and prints the effective
# policy per partition.

setup() {
	DISTENV="$BATS_TEST_DIRNAME/../../distenv"
	TOP="$BATS_TEST_DIRNAME/../.."
	# The loader trusts only root's files; a test run by another user
	# checks its own copies with --trust-owner.
	TRUST=()
	if [ "$(id -u)" -ne 0 ]; then
		TRUST=(--trust-owner)
	fi
}

# Copy $1 (or stdin when $1 is -) to $BATS_TEST_TMPDIR/$2, mode 0644.
put() {
	local dst="$BATS_TEST_TMPDIR/$2"
	if [ "$1" = - ]; then
		cat >"$dst"
	else
		cp "$1" "$dst"
	fi
	chmod 0644 "$dst"
	echo "$dst"
}

@test "the shipped example is valid and changes nothing" {
	f=$(put "$TOP/contrib/distenv.yaml" distenv.yaml)
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "# $f: valid, 0 partition sections" ]
	[ "${lines[2]}" = "[partitions not listed below]" ]
	[[ "${lines[3]}" =~ ^\ \ default_mode\ +off\ +top\ level$ ]]
	[[ "${lines[4]}" =~ ^\ \ port_range\ +29600-32767\ +top\ level$ ]]
	[[ "${lines[5]}" =~ ^\ \ interfaces\ +\(any\)\ +default$ ]]
	[[ "${lines[7]}" =~ ^\ \ master_name\ +\{host\}\ +top\ level$ ]]
	[[ "${lines[8]}" =~ ^\ \ hca\ +auto\ +top\ level$ ]]
	[[ "${lines[10]}" =~ ^\ \ lf_dir\ +\(TMPDIR,\ else\ /tmp\)\ +default$ ]]
	[[ "${lines[11]}" =~ ^\ \ env\ +\(none\) ]]
	[[ "${lines[13]}" =~ ^\ \ enabled\ +true\ +top\ level$ ]]
	[[ "${lines[14]}" =~ ^\ \ lf_features\ +true\ +top\ level$ ]]
	[[ "${lines[15]}" =~ ^\ \ locked\ +\(nothing\)\ +top\ level$ ]]
	[ "${#lines[@]}" -eq 16 ]
}

@test "site controls: a partition switched off, LLaMA-Factory features off, and locked rules show with their source; a bad lock is named" {
	f=$(put - controls.yaml <<-'EOF'
	locked: [port_range, interfaces]
	partitions:
	  gpu:
	    enabled: false
	    lf_features: false
	EOF
	)
	run "$DISTENV" check-config "$f" --partition gpu "${TRUST[@]}"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE '^  enabled +false +partition gpu$' <<<"$output"
	grep -qE '^  lf_features +false +partition gpu$' <<<"$output"
	grep -qE '^  locked +port_range, interfaces +top level$' <<<"$output"
	printf 'locked: [ports]\n' >"$f"
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	[ "$status" -ne 0 ]
	[ "$output" = "distenv: error: $f:1:10: locked: 'ports' cannot be locked. Write a YAML list of port_range, interfaces, lf_dir" ]
	printf 'enabled: no\n' >"$f"
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	[[ "$output" == *"enabled: 'no' is not true or false. Accepted values: true, false" ]]
}

@test "lf_dir: the directory of the resolved copies shows per partition with its source, lf_dir can be locked, and a relative one is named with FILE:LINE:COL and the fix" {
	f=$(put - lfdir.yaml <<-'EOF'
	lf_dir: /scratch/distenv
	partitions:
	  ctr:
	    lf_dir: /shared/distenv
	    locked: [lf_dir]
	EOF
	)
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE '^  lf_dir +/scratch/distenv +top level$' <<<"$output"
	grep -qE '^  lf_dir +/shared/distenv +partition ctr$' <<<"$output"
	grep -qE '^  locked +lf_dir +partition ctr$' <<<"$output"
	printf 'partitions:\n  ctr:\n    lf_dir: out/distenv\n' >"$f"
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	[ "$status" -eq 1 ]
	[[ "$output" == "distenv: error: $f:3:13: lf_dir: 'out/distenv' is not an absolute path. Give an absolute directory that exists on every node and that the job's container, if any, mounts at the same path (e.g. beside output_dir)" ]]
}

@test "every commented example of the shipped file is valid too" {
	# Uncomment the example lines (#key: or #  nested) after version:,
	# dropping the empty placeholders they replace.
	f=$(awk 'done { if ($0 ~ /^#([a-z]|  +[-A-Za-z])/) sub(/^#/, ""); print; next }
		{ print } /^version:/ { done = 1 }' "$TOP/contrib/distenv.yaml" |
		grep -v -e '^env: {}' -e '^storage: \[\]' -e '^partitions: {}' |
		put - examples.yaml)
	run "$DISTENV" check-config "$f" "${TRUST[@]}" --partition a100
	[ "$status" -eq 0 ]
	[[ "$output" == *"[partition a100]"* ]]
	[[ "$output" =~ hca\ +fixed\ =mlx5_0,mlx5_1,mlx5_2,mlx5_3\ +partition\ a100 ]]
	[[ "$output" =~ env\ +NCCL_IB_GID_INDEX=3\ +partition\ a100 ]]
	[[ "$output" =~ env\ +NCCL_IB_TC=106\ +top\ level ]]
	[[ "$output" =~ interfaces\ +\^docker,virbr,eth2\ +top\ level ]]
	[[ "$output" =~ storage\ +/local/scratch\ local ]]
}

@test "effective policy per partition: overrides and merged env" {
	f=$(put "$TOP/tests/site/good.yaml" good.yaml)
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "# $f: valid, 2 partition sections" ]
	[ "$(grep -c '^\[' <<<"$output")" -eq 3 ]
	run "$DISTENV" check-config "$f" "${TRUST[@]}" --partition a100
	[ "$status" -eq 0 ]
	[ "${lines[2]}" = "[partition a100]" ]
	[[ "$output" =~ env\ +NCCL_IB_GID_INDEX=3\ +top\ level ]]
	[[ "$output" =~ env\ +NCCL_IB_TC=41\ +partition\ a100 ]]
	[[ "$output" =~ env\ +NCCL_IB_SL=1\ +partition\ a100 ]]
	[[ "$output" =~ master_name\ +\{host\}-ib\ +top\ level ]]
	run "$DISTENV" check-config "$f" "${TRUST[@]}" --partition debug
	[[ "$output" =~ port_range\ +39000-39099\ +partition\ debug ]]
	[[ "$output" =~ storage\ +\(none\) ]]
	run "$DISTENV" check-config "$f" "${TRUST[@]}" --partition cpu
	[ "$status" -eq 0 ]
	[ "${lines[2]}" = "[partition cpu: not listed; the top level applies]" ]
	[[ "$output" =~ default_mode\ +torchrun\ +top\ level ]]
}

@test "an unknown key is an error with FILE:LINE:COL and the accepted keys" {
	f=$(printf 'default_mode: tasks\npartitions:\n  gpu:\n    hcas: auto\n' | put - bad.yaml)
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: $f:4:5: unknown key 'hcas'. Accepted keys in a partition: default_mode, port_range, interfaces, address_family, master_name, hca, topology_xml, env, storage, enabled, lf_features, locked" ]
}

@test "a wrong type and an invalid value name the key and what is accepted" {
	f=$(printf 'port_range:\n  - 29600\n  - 29700\n' | put - type.yaml)
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: $f:2:3: port_range: expected a single value, found a list. Write LO-HI with 1024 <= LO <= HI <= 65535, e.g. 29600-32767" ]
	f=$(printf 'address_family: inet6\n' | put - value.yaml)
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: $f:1:17: address_family: unknown value 'inet6'. Accepted values: ipv4, ipv6, any" ]
	f=$(printf 'env:\n  NCCL_SOCKET_IFNAME: eth0\n' | put - env.yaml)
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	[ "$status" -eq 1 ]
	[[ "$output" == "distenv: error: $f:2:3: env: NCCL_SOCKET_IFNAME cannot be set by the site policy. distenv derives it for each step"* ]]
}

@test "a file others can write, or a symbolic link, is refused" {
	f=$(put "$TOP/tests/site/good.yaml" gw.yaml)
	chmod 0664 "$f"
	run "$DISTENV" check-config "$f" "${TRUST[@]}"
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: $f: refused: mode 0664 lets its group write it. Make root own it and only root write it: chown root: FILE && chmod 644 FILE" ]
	f=$(put "$TOP/tests/site/good.yaml" good.yaml)
	ln -s "$f" "$BATS_TEST_TMPDIR/link.yaml"
	run "$DISTENV" check-config "$BATS_TEST_TMPDIR/link.yaml" "${TRUST[@]}"
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: $BATS_TEST_TMPDIR/link.yaml: cannot open the site policy file: it is a symbolic link. Name the file itself, not a symbolic link" ]
}

@test "a file not owned by root is refused without --trust-owner" {
	f=$(put "$TOP/tests/site/good.yaml" owned.yaml)
	if [ "$(id -u)" -eq 0 ]; then
		chown 65534 "$f"
		run "$DISTENV" check-config "$f" --trust-owner
		[ "$status" -eq 1 ]
		[[ "$output" == "distenv: error: $f: refused: owned by uid 65534, not root."* ]]
	else
		run "$DISTENV" check-config "$f"
		[ "$status" -eq 1 ]
		[[ "$output" == "distenv: error: $f: refused: owned by uid $(id -u), not root."* ]]
		run "$DISTENV" check-config "$f" --trust-owner
		[ "$status" -eq 0 ]
	fi
}

@test "a relative FILE is read from the current directory" {
	put "$TOP/tests/site/partitions.yaml" partitions.yaml >/dev/null
	cd "$BATS_TEST_TMPDIR"
	run "$DISTENV" check-config partitions.yaml "${TRUST[@]}" --partition cpu
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "# $BATS_TEST_TMPDIR/partitions.yaml: valid, 2 partition sections" ]
	[[ "$output" =~ default_mode\ +tasks\ +partition\ cpu ]]
}

@test "usage errors exit 2" {
	run "$DISTENV" check-config a.yaml b.yaml
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: b.yaml: unexpected argument. See distenv check-config --help" ]
	run "$DISTENV" check-config a.yaml --slurm-conf /etc/slurm/slurm.conf
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: --slurm-conf: reads slurm.conf, not FILE: give one of them. See distenv check-config --help" ]
	run "$DISTENV" check-config --slurm-conf /nonexistent/slurm.conf
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: /nonexistent/slurm.conf: cannot find slurm.conf. Give its path with --slurm-conf PATH or SLURM_CONF" ]
	run "$DISTENV" check-config --colour a.yaml
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: --colour: unknown option. See distenv check-config --help" ]
	run "$DISTENV" check-config a.yaml --partition
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: --partition: needs a value. See distenv check-config --help" ]
	run "$DISTENV" check-config /nonexistent/distenv.yaml
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: /nonexistent/distenv.yaml: cannot open the site policy file: No such file or directory. Check config= on the plugstack line" ]
}

@test "without FILE: the configuration slurmd runs, found through slurm.conf, PlugStackConfig and its includes, with what would fail or weaken jobs" {
	local d=$BATS_TEST_TMPDIR/etc
	mkdir -p "$d/plugstack.d"
	chmod 755 "$d" "$d/plugstack.d"
	cat >"$d/slurm.conf" <<-EOF
	ClusterName=x
	plugstackconfig=$d/plugstack.conf
	PartitionName=DEFAULT MaxTime=1
	PartitionName=debug Nodes=n[1-2] Default=YES
	PartitionName=gpu Nodes=n1
	EOF
	echo "include $d/plugstack.d/*.conf" >"$d/plugstack.conf"
	cat >"$d/site.yaml" <<-'EOF'
	default_mode: tasks
	topology_xml: /nonexistent/a100.xml
	partitions:
	  gpux:
	    default_mode: torchrun
	EOF
	chmod 600 "$d/site.yaml"
	echo "required /usr/lib/x86_64-linux-gnu/slurm-wlm/distenv.so default=torchrun config=$d/site.yaml" >"$d/plugstack.d/distenv.conf"
	SLURM_CONF=$d/slurm.conf run "$DISTENV" check-config
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "slurm.conf: $d/slurm.conf (2 partitions)" <<<"$output"
	grep -qx "distenv's line: $d/plugstack.d/distenv.conf:1: required /usr/lib/x86_64-linux-gnu/slurm-wlm/distenv.so default=torchrun config=$d/site.yaml" <<<"$output"
	grep -qF "warning: $d/site.yaml: mode 0600: only root can read it, and every --distenv job of another user fails on it" <<<"$output"
	grep -qF "warning: $d/site.yaml:4: section for partition gpux, which $d/slurm.conf does not define" <<<"$output"
	grep -qF "warning: top level: default= on the plugstack line ($d/plugstack.d/distenv.conf:1) overrides the file's default_mode" <<<"$output"
	grep -qF "warning: top level: topology_xml /nonexistent/a100.xml is not a file on this host: jobs there get no NCCL_IB_HCA" <<<"$output"
	grep -qx "\[partition gpu\] mode without --distenv: torchrun (plugstack default=); port_range 29600-32767; interfaces (any)" <<<"$output"
	# (more where the test directory is not root's)
	grep -qE "^([5-9]|[1-9][0-9]) warnings$" <<<"$output"
	# a broken argument names the plugstack file and line
	echo "required distenv.so colour=blue" >"$d/plugstack.d/distenv.conf"
	run "$DISTENV" check-config --slurm-conf "$d/slurm.conf"
	[ "$status" -eq 1 ]
	[[ "$output" == *"distenv: error: $d/plugstack.d/distenv.conf:1: plugstack.conf argument 'colour=blue': unknown argument"* ]]
	# commented out: not loaded
	echo "#required distenv.so" >"$d/plugstack.d/distenv.conf"
	run "$DISTENV" check-config --slurm-conf "$d/slurm.conf"
	[ "$status" -eq 0 ]
	grep -qF 'distenv is not loaded by this configuration' <<<"$output"
}

@test "without FILE: every partition of a large slurm.conf counts, so a section for the 300th is not called unknown" {
	local d=$BATS_TEST_TMPDIR/big i
	mkdir -p "$d"
	chmod 755 "$d"
	{
		echo "PlugStackConfig=$d/plugstack.conf"
		for i in $(seq 1 300); do echo "PartitionName=p$i Nodes=n1"; done
	} >"$d/slurm.conf"
	printf 'partitions:\n  p300:\n    default_mode: tasks\n  nope:\n    default_mode: tasks\n' >"$d/site.yaml"
	chmod 644 "$d/site.yaml"
	echo "required distenv.so config=$d/site.yaml" >"$d/plugstack.conf"
	run "$DISTENV" check-config --slurm-conf "$d/slurm.conf"
	echo "$output" | head -20
	[ "$status" -eq 0 ]
	grep -qx "slurm.conf: $d/slurm.conf (300 partitions)" <<<"$output"
	! grep -q "section for partition p300" <<<"$output" || false
	grep -qF "section for partition nope, which $d/slurm.conf does not define" <<<"$output"
	grep -qx "\[partition p300\] mode without --distenv: tasks; port_range 29600-32767; interfaces (any)" <<<"$output"
	grep -qx "\[partition p299\] mode without --distenv: off; port_range 29600-32767; interfaces (any)" <<<"$output"
}

@test "without FILE: pyxis loaded before distenv (an include glob that sorts its file first) is a warning naming both lines and the fix; after distenv, a note" {
	local d=$BATS_TEST_TMPDIR/etc
	mkdir -p "$d/plugstack.conf.d"
	printf 'ClusterName=x\nPlugStackConfig=%s/plugstack.conf\nPartitionName=debug Nodes=n1\n' "$d" >"$d/slurm.conf"
	echo "include $d/plugstack.conf.d/*.conf" >"$d/plugstack.conf"
	echo "required /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so" >"$d/plugstack.conf.d/a-pyxis.conf"
	echo "required distenv.so" >"$d/plugstack.conf.d/distenv.conf"
	run "$DISTENV" check-config --slurm-conf "$d/slurm.conf"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qxF "warning: /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so ($d/plugstack.conf.d/a-pyxis.conf:1) is loaded before distenv ($d/plugstack.conf.d/distenv.conf:1): Slurm calls the plugins' task_init in plugstack order, so distenv's runs inside the container, in its mount namespace and with the image's environment. Load distenv first: put its line before that one (in a plugstack.conf.d directory, a file name that sorts first, e.g. 00-distenv.conf)" <<<"$output"
	# the fix: a name that sorts first
	mv "$d/plugstack.conf.d/distenv.conf" "$d/plugstack.conf.d/00-distenv.conf"
	run "$DISTENV" check-config --slurm-conf "$d/slurm.conf"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c 'is loaded before distenv' <<<"$output")" -eq 0 ]
	grep -qxF "container plugin: /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so ($d/plugstack.conf.d/a-pyxis.conf:1), after distenv: the image's environment replaces distenv's values of the names it sets; jobs can run \`distenv check-env\` first in the container" <<<"$output"
	grep -qxF "container plugin: enroot gives the container a fresh /tmp, so --distenv-lf-config's resolved YAML is seen inside only under a directory it mounts at the same path: set lf_dir: in the site file, or users give --distenv-lf-dir" <<<"$output"
}
