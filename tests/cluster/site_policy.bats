#!/usr/bin/env bats
# The site policy file (config= on the plugstack line, plugin/site/) on a
# real 2-node Slurm 22.05 cluster (cluster.sh). Besides cluster.sh's eth0
# (joins the nodes) and eth1 (reaches nobody), the nodes get here a second
# connected network: eth2, a veth pair from node 1 to node 2 on
# $DATA_NET.0/24, and the name n1-data resolving to n1's eth2 address
# first, its eth0 address second. Site files live in $BATS_FILE_TMPDIR,
# owned by root, mode 0644, as the loader demands.

# shellcheck disable=SC2016 # the tasks expand $VARS in 'bash -c', not bats
load helpers
load lf_helpers

# shellcheck disable=SC2034 # lf_helpers.bash's test_yaml reads it
TINY="$TOP/tests/cluster/lf/tiny_model"

# The second connected network: not one of the cluster's own subnets.
DATA_NET=10.66.0
[ "$CLUSTER_NET" != 10.66.0 ] || DATA_NET=10.67.0

site_file() {
	local f="$BATS_FILE_TMPDIR/$1"
	cat >"$f"
	chmod 0644 "$f"
	echo "$f"
}

setup_file() {
	site_file broken.yaml >/dev/null <<-'EOF'
	version: 1
	colour: blue
	EOF
	# Started with the broken file, so that slurmd's start logs it.
	cluster_file_setup 2 "config=$BATS_FILE_TMPDIR/broken.yaml"
	ip link add eth2 netns "${CLUSTER_NS}1" type veth peer name eth2 netns "${CLUSTER_NS}2"
	for i in 1 2; do
		ip -n "$CLUSTER_NS$i" addr add "$DATA_NET.$i/24" dev eth2
		ip -n "$CLUSTER_NS$i" link set eth2 up
		# Append in place: ip netns exec bind-mounted this very file
		# over /etc/hosts for slurmd and its jobs.
		printf '%s.1\tn1-data\n%s.1\tn1-data\n' "$DATA_NET" "$CLUSTER_NET" \
			>>"/etc/netns/$CLUSTER_NS$i/hosts"
	done
}

# The namespaces go, and eth2 with them.
teardown_file() { cluster_file_teardown; }
# Each test writes its own plugstack.conf (with_site).
setup() { cluster_test_setup --keep-plugstack; }

with_site() {
	plugstack_with_distenv "config=$1"
}

@test "a broken site file: logged at slurmd start, shown once to --distenv jobs, which fail, and to no other job" {
	broken="$BATS_FILE_TMPDIR/broken.yaml"
	msg="distenv: $broken:2:1: unknown key 'colour'. Accepted keys: version, default_mode, port_range"
	for n in 1 2; do
		grep -qF "$msg" "$DISTENV_CLUSTER_DIR/log/slurmd-n$n.log"
	done
	with_site "$broken"
	run srun -N2 --distenv true
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -cF "$msg" <<<"$output")" -eq 1 ]
	[[ "$output" == *"the plugin's configuration is broken"* ]]
	run sbatch --distenv --wrap true
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"$msg"* ]]
	# Jobs that did not ask for distenv run, with the admin told.
	run srun -N2 -l hostname
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx '0: n1' <<<"$output"
	grep -qx '1: n2' <<<"$output"
	[[ "$output" != *distenv* ]]
	run srun --help
	[[ "$output" != *"$msg"* ]]
	run batch <<<$'#!/bin/bash\n#SBATCH -N2\nsrun hostname'
	cat "${lines[0]}"
	[ "$status" -eq 0 ]
	nodes_idle
}

@test "a site file others can write is refused the same way" {
	f=$(site_file writable.yaml <<<'default_mode: torchrun')
	chmod 0666 "$f"
	with_site "$f"
	run srun -N2 --distenv true
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"distenv: $f: refused: mode 0666 lets anyone write it. Make root own it and only root write it"* ]]
	# Its default_mode was not applied: a job without --distenv is off.
	run srun -N1 bash -c 'echo "NNODES=${NNODES:-unset}"'
	[ "$status" -eq 0 ]
	grep -qx 'NNODES=unset' <<<"$output"
	nodes_idle
}

@test "master_name picks the data network: the master's eth2 address, each node's eth2, all_reduce over it" {
	f=$(site_file data.yaml <<<'master_name: "{host}-data"')
	with_site "$f"
	run srun -N2 --distenv -l bash -c 'echo "VARS $SLURMD_NODENAME $MASTER_ADDR $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "0: VARS n1 $DATA_NET.1 =eth2 eth2" <<<"$output"
	grep -qx "1: VARS n2 $DATA_NET.1 =eth2 eth2" <<<"$output"
	run srun -N2 --distenv=tasks /usr/bin/python3 "$GLOO"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE 'RANK 0/2 node=n1 result=3 OK' <<<"$output"
	grep -qE 'RANK 1/2 node=n2 result=3 OK' <<<"$output"
}

@test "interfaces: excludes one of the two connected networks: eth0 carries the job" {
	f=$(site_file exclude.yaml <<-'EOF'
	master_name: "{host}-data"
	interfaces: ^=eth2
	EOF
	)
	with_site "$f"
	run srun -N2 --distenv -l --distenv-show bash -c 'echo "VARS $SLURMD_NODENAME $MASTER_ADDR $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "0: VARS n1 $CLUSTER_NET.1 =eth0 eth0" <<<"$output"
	grep -qx "1: VARS n2 $CLUSTER_NET.1 =eth0 eth0" <<<"$output"
	grep -qF "MASTER_ADDR=$CLUSTER_NET.1  [set] node index 0 of the step is n1; n1-data resolves to $CLUSTER_NET.1 on this node (site policy master_name: {host}-data)" <<<"$output"
	run srun -N2 --distenv=tasks /usr/bin/python3 "$GLOO"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE 'RANK 1/2 node=n2 result=3 OK' <<<"$output"
	# Leaving only the dead-end network fails the step, naming the list.
	f=$(site_file deadend.yaml <<<'interfaces: =eth1')
	with_site "$f"
	run srun -N2 --distenv true
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"is left out by the site policy (interfaces: =eth1; this node has: "* ]]
	nodes_idle
}

@test "per-partition extra variables reach every task; the user's own are kept" {
	f=$(site_file env.yaml <<-'EOF'
	env:
	  NCCL_IB_GID_INDEX: 3
	partitions:
	  debug:
	    env:
	      NCCL_IB_TC: 106
	  other:
	    env:
	      NCCL_IB_TC: 1
	EOF
	)
	with_site "$f"
	run srun -N2 --distenv -l bash -c 'echo "VARS $SLURM_JOB_PARTITION ${NCCL_IB_GID_INDEX:-unset} ${NCCL_IB_TC:-unset}"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx '0: VARS debug 3 106' <<<"$output"
	grep -qx '1: VARS debug 3 106' <<<"$output"
	run env NCCL_IB_TC=41 srun -N2 --distenv --distenv-show -l bash -c 'echo "VARS ${NCCL_IB_GID_INDEX:-unset} ${NCCL_IB_TC:-unset}"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx '1: VARS 3 41' <<<"$output"
	grep -qF 'NCCL_IB_GID_INDEX=3  [set] site policy, partition debug' <<<"$output"
	grep -qF 'NCCL_IB_TC=41  [kept] kept (set by user)' <<<"$output"
	# The batch script gets them too; a job without distenv does not.
	run batch <<<$'#!/bin/bash\n#SBATCH -N1 --distenv\necho "BATCH ${NCCL_IB_TC:-unset}"'
	grep -qx 'BATCH 106' "${lines[0]}"
	run srun -N2 -l bash -c 'echo "VARS ${NCCL_IB_GID_INDEX:-unset} ${NCCL_IB_TC:-unset}"'
	[ "$status" -eq 0 ]
	grep -qx '1: VARS unset unset' <<<"$output"
}

@test "a partition's topology_xml gives its jobs the HCAs of their GPUs, also when only the partition's default_mode turns distenv on" {
	xml="$TOP/tests/topo/jureca-dc-gpu-jrc0323.hwloc2.xml"
	f=$(site_file topo.yaml <<-EOF
	default_mode: "off"
	partitions:
	  debug:
	    default_mode: torchrun
	    topology_xml: $xml
	EOF
	)
	with_site "$f"
	# No --distenv: the partition's default turns it on, and its
	# recorded topology (a JURECA-DC GPU node) ranks the HCAs.
	run env CUDA_VISIBLE_DEVICES=2,3 srun -N2 -l bash -c 'echo "HCA $SLURMD_NODENAME ${NCCL_IB_HCA:-unset}"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx '0: HCA n1 =mlx5_2:1,mlx5_3:1' <<<"$output"
	grep -qx '1: HCA n2 =mlx5_2:1,mlx5_3:1' <<<"$output"
	run env CUDA_VISIBLE_DEVICES=0 srun -N1 --distenv-show bash -c 'echo "HCA ${NCCL_IB_HCA:-unset}"'
	echo "$output"
	grep -qx 'HCA =mlx5_0:1' <<<"$output"
	grep -qF 'NCCL_IB_HCA==mlx5_0:1  [set] HCAs closest to GPUs 0 (CUDA_VISIBLE_DEVICES)' <<<"$output"
	# --distenv=off still wins: no topology, no variable.
	run env CUDA_VISIBLE_DEVICES=2,3 srun -N1 --distenv=off bash -c 'echo "HCA ${NCCL_IB_HCA:-unset}"'
	grep -qx 'HCA unset' <<<"$output"
}

@test "a partition's default_mode turns distenv on for its jobs" {
	f=$(site_file mode.yaml <<-'EOF'
	default_mode: "off"
	partitions:
	  debug:
	    default_mode: tasks
	EOF
	)
	with_site "$f"
	run srun -N2 --ntasks-per-node=2 -l bash -c 'echo "VARS $RANK $WORLD_SIZE $LOCAL_RANK"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx '3: VARS 3 4 1' <<<"$output"
	# --distenv=off still wins.
	run srun -N1 --distenv=off bash -c 'echo "VARS ${WORLD_SIZE:-unset}"'
	grep -qx 'VARS unset' <<<"$output"
}

@test "a site default mode never fails a job that did not ask for distenv: several tasks per node under default torchrun run untouched, slurmd's log says why; --distenv still fails" {
	f=$(site_file tr.yaml <<-'EOF'
	default_mode: torchrun
	EOF
	)
	for line in "config=$f" "default=torchrun"; do
		plugstack_with_distenv "$line"
		run timeout 60 srun -N1 -n2 bash -c 'echo "TASK $SLURM_PROCID NNODES=${NNODES:-unset}"'
		echo "$output"
		[ "$status" -eq 0 ]
		grep -qx 'TASK 0 NNODES=unset' <<<"$output"
		grep -qx 'TASK 1 NNODES=unset' <<<"$output"
		! grep -q distenv <<<"$output" || false
		grep -qE "distenv: step [0-9]+\.0 left untouched: the site default mode torchrun does not fit it, and the job did not ask for distenv \(node n1: 2 tasks of step" "$DISTENV_CLUSTER_DIR/log/slurmd-n1.log"
		# one task per node fits: the default applies
		run timeout 60 srun -N2 bash -c 'echo "NNODES=${NNODES:-unset}"'
		[ "$(grep -cx 'NNODES=2' <<<"$output")" -eq 2 ]
		# asking for it explicitly fails with the fix, as without a
		# default: in srun, before any task starts
		run timeout 60 srun -N1 -n2 --distenv true
		[ "$status" -ne 0 ]
		grep -qE 'distenv: -n/--ntasks-per-node: step [0-9]+\.0 has 2 tasks on 1 node in torchrun mode' <<<"$output"
	done
}

@test "slurmd's log says at its start which distenv it loaded, for which Slurm, with which plugstack arguments and site file" {
	local v
	v=$(distenv --version | sed -n 's/^distenv \([^ ]*\) (built against Slurm \([^)]*\))$/\1 \2/p')
	[ -n "$v" ]
	for n in 1 2; do
		grep -qF "distenv: ${v% *} loaded (built for Slurm ${v#* }); plugstack arguments: config=$BATS_FILE_TMPDIR/broken.yaml; site file: $BATS_FILE_TMPDIR/broken.yaml (broken: see the error above; jobs that ask for distenv fail)" \
			"$DISTENV_CLUSTER_DIR/log/slurmd-n$n.log"
	done
}

@test "site controls: locked rules refuse the user's --distenv-port and --distenv-ifname; a partition with lf_features: false refuses --distenv-lf-config; one with enabled: false refuses --distenv and gets no site default" {
	f=$(site_file locked.yaml <<-'EOF'
	locked: [port_range, interfaces]
	EOF
	)
	with_site "$f"
	run timeout 60 srun -N2 --distenv --distenv-port=30000 true
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qF "distenv: error: --distenv-port: the site locks the port range for partition debug ($f: locked: [port_range]), so --distenv-port=30000 is not taken. Leave --distenv-port out" <<<"$output"
	run timeout 60 srun -N2 --distenv --distenv-ifname=eth0 true
	[ "$status" -ne 0 ]
	grep -qF "the site locks the interface rules for partition debug" <<<"$output"
	run timeout 60 srun -N2 --distenv bash -c 'echo "NNODES=$NNODES"'
	[ "$(grep -cx 'NNODES=2' <<<"$output")" -eq 2 ]

	f=$(site_file nolf.yaml <<-'EOF'
	partitions:
	  debug:
	    lf_features: false
	EOF
	)
	with_site "$f"
	printf 'stage: dpo\nfinetuning_type: lora\n' >nolf-dpo.yaml
	run timeout 60 srun -N2 --distenv --distenv-lf-config=nolf-dpo.yaml true
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qF "the LLaMA-Factory run preparation is turned off for partition debug ($f: lf_features: false)" <<<"$output"

	f=$(site_file off.yaml <<-'EOF'
	default_mode: torchrun
	partitions:
	  debug:
	    enabled: false
	EOF
	)
	with_site "$f"
	run timeout 60 srun -N2 bash -c 'echo "NNODES=${NNODES:-unset}"'
	[ "$status" -eq 0 ]
	[ "$(grep -cx 'NNODES=unset' <<<"$output")" -eq 2 ]
	run timeout 60 srun -N2 --distenv true
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qF "distenv: error: --distenv: distenv is turned off for partition debug ($f: enabled: false)" <<<"$output"
}

@test "lf_dir: the resolved copies of --distenv-lf-config go under the partition's directory, --distenv-show says why, the user's --distenv-lf-dir wins unless locked, and the step's end removes them from there" {
	site_dir=$BATS_FILE_TMPDIR/site-lf
	user_dir=$BATS_FILE_TMPDIR/user-lf
	mkdir -p "$site_dir" "$user_dir"
	f=$(site_file lfdir.yaml <<-EOF
	partitions:
	  debug:
	    lf_dir: $site_dir
	EOF
	)
	with_site "$f"
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" site-dpo.yaml "output_dir=$BATS_FILE_TMPDIR/out"
	run timeout 60 srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=site-dpo.yaml \
		--distenv-show bash -c 'test -r "$DISTENV_LF_CONFIG" && echo "AT $DISTENV_LF_CONFIG"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE "^AT $site_dir/distenv-[0-9]+-[0-9]+\.0-[01]/lf_config.yaml$" <<<"$output")" -eq 2 ]
	[ "$(grep -cE "^distenv: n[12]: resolved copies in $site_dir/distenv-[^ ]*, under the directory of the site file's lf_dir:$" <<<"$output")" -eq 2 ]
	nodes_idle
	[ -z "$(ls -A "$site_dir")" ]
	# the user's option over the site's key
	run timeout 60 srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=site-dpo.yaml \
		--distenv-lf-dir="$user_dir" bash -c 'head -3 "$DISTENV_LF_CONFIG"; echo "AT $DISTENV_LF_CONFIG"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE "^AT $user_dir/distenv-[^ ]*/lf_config.yaml$" <<<"$output")" -eq 2 ]
	[ "$(grep -cF ", under the directory of --distenv-lf-dir." <<<"$output")" -eq 2 ]
	nodes_idle
	[ -z "$(ls -A "$user_dir")" ]
	[ -z "$(ls -A "$site_dir")" ]
	# locked: the option is refused, naming the rule
	f=$(site_file lfdir-locked.yaml <<-EOF
	lf_dir: $site_dir
	locked: [lf_dir]
	EOF
	)
	with_site "$f"
	run timeout 60 srun -N2 --distenv --distenv-lf-config=site-dpo.yaml \
		--distenv-lf-dir="$user_dir" echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -c '^TRAINING' <<<"$output")" -eq 0 ]
	grep -qF "distenv: error: --distenv-lf-dir: the site locks the directory of the resolved copies for partition debug ($f: locked: [lf_dir]), so --distenv-lf-dir=$user_dir is not taken. Leave --distenv-lf-dir out" <<<"$output"
	nodes_idle
	[ -z "$(ls -A "$user_dir")" ]
	# a relative --distenv-lf-dir fails srun at once
	run timeout 60 srun -N1 --distenv --distenv-lf-config=site-dpo.yaml --distenv-lf-dir=out echo TRAINING
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -c '^TRAINING' <<<"$output")" -eq 0 ]
	grep -qF "srun: error: distenv: --distenv-lf-dir: 'out' is not an absolute path. Give an absolute directory" <<<"$output"
}

@test "at SlurmdDebug=debug, slurmd's log holds each task's derived values with their reasons, and where the resolved copies went" {
	plugstack_with_distenv
	sed -i 's/^SlurmdDebug=.*/SlurmdDebug=debug/' "$SLURM_CONF"
	scontrol reconfigure
	sleep 2
	run timeout 60 srun -N2 --distenv true
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" debug-dpo.yaml "output_dir=$BATS_FILE_TMPDIR/out"
	lf_status=0
	env -u TMPDIR timeout 60 srun -N2 --distenv --distenv-nproc=2 \
		--distenv-lf-config=debug-dpo.yaml true || lf_status=$?
	sed -i 's/^SlurmdDebug=.*/SlurmdDebug=info/' "$SLURM_CONF"
	scontrol reconfigure
	[ "$status" -eq 0 ]
	[ "$lf_status" -eq 0 ]
	# where the resolved copies went, and why
	grep -qE "distenv: node n2: resolved copies in /tmp/distenv-[0-9]+-[0-9]+\.0-1, under the directory of the default /tmp \(TMPDIR is not set\)$" "$DISTENV_CLUSTER_DIR/log/slurmd-n2.log"
	job=$(sed -n 's/.*distenv: job \([0-9]*\) step 0 node n2 task 1: NNODES=2 \[set\] SLURM_STEP_NUM_NODES: nodes in the step$/\1/p' "$DISTENV_CLUSTER_DIR/log/slurmd-n2.log" | tail -n 1)
	[ -n "$job" ]
	grep -qF "distenv: job $job step 0 node n2 task 1: NODE_RANK=1 [set] SLURM_NODEID" "$DISTENV_CLUSTER_DIR/log/slurmd-n2.log"
	grep -qF "distenv: job $job step 0 node n1 task 0: MASTER_ADDR=$CLUSTER_NET.1 [set]" "$DISTENV_CLUSTER_DIR/log/slurmd-n1.log"
}
