#!/usr/bin/env bats
# End-to-end tests of distenv.so on a real Slurm 22.05 cluster of two
# nodes, each in its own network namespace (cluster.sh): eth0 joins the
# nodes, eth1 reaches nobody, and each node's /etc/hosts maps
# its own name to 127.0.1.1 first, as Debian's installer does.
# Slurm reserves ports per step (MpiParams=ports).

load helpers

setup_file() { cluster_file_setup 2; }
teardown_file() { cluster_file_teardown; }
setup() { cluster_test_setup; }

@test "srun --help and sbatch --help list the distenv options" {
	run srun --help
	[[ "$output" == *"--distenv=[torchrun|elastic|tasks|off]"* ]]
	[[ "$output" == *"--distenv-port=PORT"* ]]
	[[ "$output" == *"--distenv-ifname=NAME"* ]]
	[[ "$output" == *"--distenv-nproc=N"* ]]
	[[ "$output" == *"--distenv-nodes=MIN:MAX"* ]]
	[[ "$output" == *"--distenv-max-restarts=N"* ]]
	[[ "$output" == *"--distenv-show"* ]]
	run sbatch --help
	[[ "$output" == *"--distenv=[torchrun|elastic|tasks|off]"* ]]
	run salloc --help
	[[ "$output" == *"--distenv-show"* ]]
}

@test "#SBATCH --distenv: LLaMA-Factory's torchrun command on 2 nodes x 2 processes, every rank's all_reduce checked" {
	run batch <<EOF
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 --distenv --distenv-nproc=2
echo "BATCH NNODES=\$NNODES MASTER_ADDR=\$MASTER_ADDR FORCE_TORCHRUN=\$FORCE_TORCHRUN NPROC_PER_NODE=\$NPROC_PER_NODE"
srun "$LF" "$GLOO"
EOF
	out=${lines[0]}
	cat "$out"
	[ "$status" -eq 0 ]
	grep -qx "BATCH NNODES=2 MASTER_ADDR=$CLUSTER_NET.1 FORCE_TORCHRUN=1 NPROC_PER_NODE=2" "$out"
	for r in 0 1 2 3; do
		grep -qE "RANK $r/4 node=n[12] result=10 OK" "$out"
	done
	# counted as matches, not lines: torchrun's tee of two processes
	# into one file can put two ranks' lines on one
	[ "$(grep -oE 'RANK [0-3]/4 node=n1 result=10 OK' "$out" | wc -l)" -eq 2 ]
	[ "$(grep -oE 'RANK [0-3]/4 node=n2 result=10 OK' "$out" | wc -l)" -eq 2 ]
	! grep -q FAIL "$out" || false
}

@test "the trap is real: the same launch with hand-set variables and no interface variables fails" {
	run batch <<EOF
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1
# Gloo's connect timeout is about 5 x this (tests/cluster/README.md).
export DISTENV_TEST_TIMEOUT=5
srun bash -c 'FORCE_TORCHRUN=1 NNODES=2 NODE_RANK=\$SLURM_NODEID NPROC_PER_NODE=2 MASTER_ADDR=n1 MASTER_PORT=29500 exec "$LF" "$GLOO"'
EOF
	out=${lines[0]}
	cat "$out"
	[ "$status" -ne 0 ]
	! grep -qE 'result=10 OK' "$out" || false
	# Gloo advertised the loopback address its host name resolves to
	# (Debian 12's torch names it; the torch 2.6 of Debian 13 and
	# unstable says only that the full mesh failed)
	grep -qE 'connect.*\[127\.0\.1\.1\]|Connect timeout \[127\.0\.1\.1\]|Gloo connectFullMesh failed' "$out"
}

@test "srun -n4 --distenv=tasks: direct torch.distributed init, one task per rank" {
	run srun -N2 --ntasks-per-node=2 --distenv=tasks bash -c 'echo "VARS $SLURM_PROCID $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK $NNODES $MASTER_ADDR $GLOO_SOCKET_IFNAME"; exec /usr/bin/python3 "$0"' "$GLOO"
	echo "$output"
	[ "$status" -eq 0 ]
	for r in 0 1 2 3; do
		grep -qE "RANK $r/4 node=n[12] result=10 OK" <<<"$output"
	done
	grep -qE "^VARS 0 0 4 0 2 0 2 $CLUSTER_NET.1 eth0\$" <<<"$output"
	grep -qE "^VARS 3 3 4 1 2 1 2 $CLUSTER_NET.1 eth0\$" <<<"$output"
	# never the submitting host, which srun names to the tasks
	run srun -N2 --distenv=tasks bash -c 'echo "LAUNCH $SLURM_LAUNCH_NODE_IPADDR MASTER $MASTER_ADDR $SLURMD_NODENAME"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^LAUNCH ' <<<"$output")" -eq 2 ]
	[ "$(grep '^LAUNCH ' <<<"$output" | cut -d' ' -f1-4 | sort -u)" = "LAUNCH $CLUSTER_NET.254 MASTER $CLUSTER_NET.1" ]
}

@test "tasks mode with task 0 placed on node index 1 (SLURM_HOSTFILE, --distribution=arbitrary): MASTER_ADDR is task 0's node on both nodes, and the all_reduce completes" {
	printf 'n2\nn2\nn1\nn1\n' >hostfile
	run env SLURM_HOSTFILE="$PWD/hostfile" DISTENV_TEST_TIMEOUT=5 \
		srun -n4 --distribution=arbitrary --distenv=tasks --distenv-show bash -c 'echo "VARS $SLURMD_NODENAME $SLURM_NODEID $SLURM_PROCID $RANK $MASTER_ADDR $SLURM_DISTRIBUTION"; exec /usr/bin/python3 "$0"' "$GLOO"
	echo "$output"
	[ "$status" -eq 0 ]
	# Slurm really put task 0 on n2, which is node index 1
	grep -qxE "VARS n2 1 0 0 $CLUSTER_NET.2 arbitrary" <<<"$output"
	grep -qxE "VARS n1 0 2 2 $CLUSTER_NET.2 arbitrary" <<<"$output"
	for r in 0 1 2 3; do
		grep -qE "RANK $r/4 node=n[12] result=10 OK" <<<"$output"
	done
	grep -qF "distenv: n1:   MASTER_ADDR=$CLUSTER_NET.2  [set] task 0 (rank 0, which hosts the store) runs on n2, node index 1 of the step (Slurm's step layout, SLURM_DISTRIBUTION=arbitrary)" <<<"$output"
	# an exported MASTER_ADDR naming node index 0 instead is refused: by
	# n2, where task 0 runs, and by n1, whose own address it is (both
	# fail; the first to fail may end the step before the other speaks)
	run env SLURM_HOSTFILE="$PWD/hostfile" MASTER_ADDR="$CLUSTER_NET.1" \
		timeout 60 srun -n4 --distribution=arbitrary --distenv=tasks true
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qE "task 0 runs on n2 \(node index 1\), where the rendezvous store listens, and $CLUSTER_NET.1 is not one of its addresses|MASTER_ADDR=$CLUSTER_NET.1, an address of this node \(n1, node index 0, on eth0\), but the rendezvous store listens on n2 \(node index 1\)" <<<"$output"
}

@test "--distenv-show prints one block per node with every value and its source" {
	run srun -N2 --distenv --distenv-show true
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^distenv: n1: node 0 of 2 in step' <<<"$output"
	grep -q '^distenv: n2: node 1 of 2 in step' <<<"$output"
	grep -q '^distenv: n2:   NODE_RANK=1  \[set\] SLURM_NODEID' <<<"$output"
	grep -qF "distenv: n1:   MASTER_ADDR=$CLUSTER_NET.1  [set] node index 0 of the step is n1; n1 resolves to $CLUSTER_NET.1 on this node (loopback 127.0.1.1 skipped)" <<<"$output"
	grep -qxF "distenv: n2:   MASTER_ADDR=$CLUSTER_NET.1  [set] node index 0 of the step is n1; n1 resolves to $CLUSTER_NET.1 on this node" <<<"$output"
	grep -qF "distenv: n1:   NCCL_SOCKET_IFNAME==eth0  [set] eth0 holds the master address $CLUSTER_NET.1 (this is the master node)" <<<"$output"
	grep -qF "distenv: n2:   GLOO_SOCKET_IFNAME=eth0  [set] the subnet of eth0 holds the master address $CLUSTER_NET.1" <<<"$output"
	# The same MASTER_PORT on both nodes.
	[ "$(grep -oE 'distenv: n[12]:   MASTER_PORT=[0-9]+' <<<"$output" | sed 's/.*=//' | sort -u | wc -l)" -eq 1 ]
}

@test "MASTER_PORT is the step's first reserved port, the same on every node, different for concurrent steps" {
	run batch <<'EOF'
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=2 --overcommit
srun -N2 -n2 --distenv bash -c 'echo "A $SLURM_STEP_RESV_PORTS $MASTER_PORT"; sleep 3' &
srun -N2 -n2 --distenv bash -c 'echo "B $SLURM_STEP_RESV_PORTS $MASTER_PORT"; sleep 3' &
wait
EOF
	out=${lines[0]}
	cat "$out"
	[ "$status" -eq 0 ]
	a=$(awk '$1=="A"{print $3}' "$out" | sort -u)
	b=$(awk '$1=="B"{print $3}' "$out" | sort -u)
	[ "$(wc -l <<<"$a")" -eq 1 ]
	[ "$(wc -l <<<"$b")" -eq 1 ]
	[ -n "$a" ]
	[ -n "$b" ]
	[ "$a" != "$b" ]
	awk '$1=="A"{split($2,p,"[-,]"); if (p[1]!=$3) exit 1}' "$out"
}

@test "a variable the user exported is kept, on every node" {
	run env MASTER_PORT=29999 NCCL_SOCKET_IFNAME=eth0 srun -N2 --distenv --distenv-show bash -c 'echo "GOT $MASTER_PORT $PET_MASTER_PORT $NCCL_SOCKET_IFNAME"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^GOT 29999 29999 eth0$' <<<"$output")" -eq 2 ]
	grep -qF 'MASTER_PORT=29999  [kept] kept (set by user)' <<<"$output"
}

@test "values set for the batch script are re-derived in each step" {
	run batch <<'EOF'
#!/bin/bash
#SBATCH -N2 --distenv
echo "BATCH $NNODES"
srun -N1 -n1 bash -c 'echo "STEP1 $NNODES $NODE_RANK"'
srun -N2 -n2 bash -c 'echo "STEP2 $NNODES $NODE_RANK"'
EOF
	out=${lines[0]}
	cat "$out"
	[ "$status" -eq 0 ]
	grep -qx 'BATCH 2' "$out"
	grep -qx 'STEP1 1 0' "$out"
	grep -qx 'STEP2 2 1' "$out"
}

@test "sbatch --export=NONE: every srun step gets its variables; the batch script gets those of #SBATCH --distenv from Slurm 23.11 on, not on 22.05" {
	# The ASan rerun preloads the sanitizer runtime into srun by a
	# wrapper first in PATH; --export=NONE clears both in the batch script.
	[ -z "${DISTENV_WRAPPER_DIR:-}" ] || skip "under the ASan wrappers: --export=NONE takes away the preloaded runtime the srun inside needs"
	run batch --export=NONE <<'EOF'
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 --distenv
echo "BATCH NNODES=${NNODES:-unset} MASTER_ADDR=${MASTER_ADDR:-unset}"
# no PATH in the steps under --export=NONE
srun /bin/bash -c 'echo "STEP $SLURM_NODEID NNODES=$NNODES NODE_RANK=$NODE_RANK"'
EOF
	out=${lines[0]}
	cat "$out"
	[ "$status" -eq 0 ]
	grep -qx 'STEP 0 NNODES=2 NODE_RANK=0' "$out"
	grep -qx 'STEP 1 NNODES=2 NODE_RANK=1' "$out"
	release=$(srun --version | awk '{ print $2 }')
	echo "release $release"
	case $release in
	22.05.*) grep -qx 'BATCH NNODES=unset MASTER_ADDR=unset' "$out" ;;
	*) grep -qx "BATCH NNODES=2 MASTER_ADDR=$CLUSTER_NET.1" "$out" ;;
	esac
}

@test "salloc --distenv, then srun inside, without nohup" {
	run salloc -N2 --distenv srun bash -c 'echo "NODE $NODE_RANK $NNODES $MASTER_ADDR"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "NODE 0 2 $CLUSTER_NET.1" <<<"$output"
	grep -qx "NODE 1 2 $CLUSTER_NET.1" <<<"$output"
}

@test "bad option values fail at submission with the option named" {
	run sbatch --distenv-port=abc --wrap true
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"distenv: --distenv-port: 'abc' is not a port number from 1024 to 65535. Give a port number from 1024 to 65535"* ]]
	run batch <<'EOF'
#!/bin/bash
#SBATCH --distenv-port=80
true
EOF
	[ "$status" -ne 0 ]
	run srun --distenv=bogus true
	[ "$status" -ne 0 ]
	[[ "$output" == *"distenv: --distenv: unknown mode 'bogus'"* ]]
	run srun --distenv-ifname='eth0;reboot' true
	[ "$status" -ne 0 ]
	[[ "$output" == *"has the character ';'"* ]]
	run srun --distenv-nproc=0 true
	[ "$status" -ne 0 ]
	nodes_idle
}

@test "an interface that a node lacks fails the step there, naming the ones it has; no node drains" {
	run srun -N2 --distenv --distenv-ifname==ens5 true
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"distenv: error: node n1: --distenv-ifname: '=ens5' matches no interface of this node (it has: lo, eth1, eth0)"* ]]
	[[ "$output" == *"distenv: error: node n2: --distenv-ifname: '=ens5' matches no interface of this node (it has: lo, eth1, eth0)"* ]]
	run env NCCL_SOCKET_IFNAME=ens5 srun -N2 --distenv true
	[ "$status" -ne 0 ]
	[[ "$output" == *"NCCL_SOCKET_IFNAME (exported): 'ens5' matches no interface"* ]]
	# eth1 reaches nothing and comes first in getifaddrs order: NCCL's
	# bootstrap would take it from "eth" on every node.
	run env NCCL_SOCKET_IFNAME=eth srun -N2 --distenv true
	[ "$status" -ne 0 ]
	[[ "$output" == *"NCCL_SOCKET_IFNAME (exported): you exported NCCL_SOCKET_IFNAME=eth, but NCCL takes eth1 from it (the first interface it selects), and eth1 does not reach the master"* ]]
	nodes_idle
}

@test "torchrun mode with several tasks on a node fails with the fix: once, in srun, before any task starts" {
	run srun -N2 -n4 --distenv bash -c 'echo "LAUNCHED $SLURMD_NODENAME"'
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qE '^srun: error: distenv: -n/--ntasks-per-node: step [0-9]+\.0 has 4 tasks on 2 nodes in torchrun mode: some node would run several torchruns\. Use --ntasks-per-node=1' <<<"$output"
	[ "$(grep -c 'distenv: ' <<<"$output")" -eq 1 ]
	refute grep -q LAUNCHED <<<"$output"
	run srun -N1 -n2 --distenv bash -c 'echo "LAUNCHED $SLURMD_NODENAME"'
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"distenv: -n/--ntasks-per-node: step "*" has 2 tasks on 1 node in torchrun mode"* ]]
	refute grep -q LAUNCHED <<<"$output"
	nodes_idle
}

@test "a master name that resolves only to loopback fails the step with the host, the address and the fix" {
	hosts="/etc/netns/${CLUSTER_NS}1/hosts"
	saved=$(cat "$hosts")
	# Rewrite in place: ip netns exec bind-mounted this very file.
	grep -v 'n1$' <<<"$saved" >"$hosts"
	printf '127.0.1.1\tn1\n' >>"$hosts"
	run timeout 60 srun -N2 --distenv true
	printf '%s\n' "$saved" >"$hosts"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"distenv: error: node n1: master host n1: the name resolves only to the loopback address 127.0.1.1, which other nodes cannot reach. Map the name to the node's cluster address in /etc/hosts or DNS"* ]]
	nodes_idle
}

@test "a job without --distenv is untouched: same environment and exit code as on a cluster without the plugin" {
	# Variables that differ between any two jobs.
	# (SLURM_JOB_SLUID: a unique id of the job, from 26.05 on)
	vary='(SLURM_JOB_ID|SLURM_JOBID|SLURM_JOB_SLUID|SLURM_STEP_ID|SLURM_STEPID|SLURM_TASK_PID|SLURM_JOB_START_TIME|SLURM_JOB_END_TIME|SLURM_SRUN_COMM_PORT|SLURM_STEP_LAUNCHER_PORT|SLURM_STEP_RESV_PORTS|SLURM_LAUNCH_NODE_IPADDR)='
	run srun -N2 -l bash -c 'env | sort; exit 3'
	with_status=$status
	with=$(grep -vE "^ *[0-9]+: $vary" <<<"$output" | sort)
	plugstack_without_distenv
	run srun -N2 -l bash -c 'env | sort; exit 3'
	without_status=$status
	without=$(grep -vE "^ *[0-9]+: $vary" <<<"$output" | sort)
	[ "$with_status" -eq 3 ]
	[ "$without_status" -eq 3 ]
	diff <(echo "$with") <(echo "$without")
	grep -qE '^ *1: SLURMD_NODENAME=n2$' <<<"$with"
	! grep -qE '^ *[01]: (NNODES|NODE_RANK|MASTER_ADDR|DISTENV_SET)=' <<<"$with" || false
}

@test "distenv env inside srun works where the plugin is not installed" {
	plugstack_without_distenv
	run srun -N2 --ntasks-per-node=1 bash -c 'eval "$(distenv env --nproc 2)" && exec "$0" "$1"' "$LF" "$GLOO"
	echo "$output"
	[ "$status" -eq 0 ]
	for r in 0 1 2 3; do
		grep -qE "RANK $r/4 node=n[12] result=10 OK" <<<"$output"
	done
}

@test "--distenv-show without --distenv says once per node that distenv is off" {
	run srun -N2 --ntasks-per-node=2 --distenv-show true
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^distenv: n1: off for this step' <<<"$output")" -eq 1 ]
	[ "$(grep -c '^distenv: n2: off for this step' <<<"$output")" -eq 1 ]
}

@test "without reserved ports, MASTER_PORT is derived from job and step id inside port_range, the same on both nodes" {
	plugstack_with_distenv "port_range=30100-30199"
	# A bare --resv-ports gives the step no reserved ports (tests/cluster/README.md).
	run srun -N2 --resv-ports --distenv --distenv-show bash -c 'echo "P[$SLURM_STEP_RESV_PORTS] $MASTER_PORT"'
	echo "$output"
	[ "$status" -eq 0 ]
	ports=$(grep -oE '^P\[\] [0-9]+$' <<<"$output" | awk '{print $2}' | sort -u)
	[ "$(wc -l <<<"$ports")" -eq 1 ]
	[ "$ports" -ge 30100 ]
	[ "$ports" -le 30199 ]
	grep -q "MASTER_PORT=$ports  \[set\] derived from job [0-9]* step 0 in port_range 30100-30199" <<<"$output"
}

@test "a recorded GPU server's topology (HWLOC_XMLFILE) gives each node's tasks the HCAs of their GPUs, with the reason" {
	xml="$TOP/tests/topo/jureca-dc-gpu-jrc0323.hwloc2.xml"
	# JURECA-DC: one HCA per GPU switch (tests/topo/EXPECTED.md).
	run env HWLOC_XMLFILE="$xml" CUDA_VISIBLE_DEVICES=2,3 srun -N2 --distenv --distenv-show bash -c 'echo "HCA $SLURMD_NODENAME $NCCL_IB_HCA $NPROC_PER_NODE"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'HCA n1 =mlx5_2:1,mlx5_3:1 2' <<<"$output"
	grep -qx 'HCA n2 =mlx5_2:1,mlx5_3:1 2' <<<"$output"
	grep -q '^distenv: n2:   NCCL_IB_HCA==mlx5_2:1,mlx5_3:1  \[set\] HCAs closest to GPUs 2,3 (CUDA_VISIBLE_DEVICES): mlx5_2: same PCI switch as GPU 2' <<<"$output"
	# Without a topology file and without NVIDIA GPUs on these nodes:
	# no NCCL_IB_HCA, and the show output says why.
	run srun -N2 --distenv --distenv-show bash -c 'echo "HCA[${NCCL_IB_HCA:-}]"'
	[ "$status" -eq 0 ]
	[ "$(grep -c '^HCA\[\]$' <<<"$output")" -eq 2 ]
	grep -q 'topology: none (no NVIDIA GPU listed in /proc/driver/nvidia/gpus)' <<<"$output"
}

@test "DISTENV_JOB_END: the batch script and every srun step get the job's end from its time limit, as scontrol gives it; a job without a limit gets none" {
	run batch --time=7 <<'EOF2'
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 --distenv --distenv-show
echo "BATCH END=${DISTENV_JOB_END:-none}"
srun --distenv bash -c 'echo "STEP $(hostname) END=${DISTENV_JOB_END:-none}"'
scontrol -o show job "$SLURM_JOB_ID" | grep -oE '(Start|End)Time=[^ ]+' | sed 's/^/SCONTROL /'
EOF2
	out=${lines[0]}
	cat "$out"
	[ "$status" -eq 0 ]
	end=$(sed -n 's/^BATCH END=//p' "$out")
	[[ "$end" =~ ^[0-9]+$ ]]
	# scontrol's EndTime in the cluster's local time zone, to the second
	[ "$(date -d "$(sed -n 's/^SCONTROL EndTime=//p' "$out")" +%s)" = "$end" ]
	start=$(date -d "$(sed -n 's/^SCONTROL StartTime=//p' "$out")" +%s)
	[ $((end - start)) -eq 420 ]
	grep -qx "STEP n1 END=$end" "$out"
	grep -qx "STEP n2 END=$end" "$out"
	# the reason names the source and the date
	grep -qE "^distenv: n1:   DISTENV_JOB_END=$end  \[set\] (SLURM_JOB_END_TIME|slurmctld's end time of the job .*): the time limit ends the job at $(date -u -d "@$end" +%Y-%m-%dT%H:%M:%SZ) " "$out"
	run batch --time=UNLIMITED <<'EOF2'
#!/bin/bash
#SBATCH -N1 --distenv
echo "BATCH END=${DISTENV_JOB_END:-none}"
srun --distenv bash -c 'echo "STEP END=${DISTENV_JOB_END:-none}"'
EOF2
	out=${lines[0]}
	cat "$out"
	[ "$status" -eq 0 ]
	grep -qx "BATCH END=none" "$out"
	grep -qx "STEP END=none" "$out"
}
