#!/usr/bin/env bats
# Shell-level tests of the distenv command, run with the environment a
# task inside srun would have. No Slurm daemon is needed: the command
# reads only the task's variables, the interfaces and the resolver.

setup() {
	# DISTENV_BIN: another build of the command (tests/sanitize.sh).
	DISTENV="${DISTENV_BIN:-$BATS_TEST_DIRNAME/../../distenv}"
	# One task of a one-node step on this machine.
	export SLURM_JOB_ID=812 SLURM_STEP_ID=4 SLURM_STEP_NUM_NODES=1
	export SLURM_NODEID=0 SLURM_STEP_NUM_TASKS=1 SLURM_PROCID=0
	export SLURM_LOCALID=0 SLURM_STEP_TASKS_PER_NODE=1
	export SLURMD_NODENAME=localhost SLURM_STEP_NODELIST=localhost
	unset MASTER_ADDR MASTER_PORT NNODES NODE_RANK RANK NPROC_PER_NODE \
		NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME DISTENV_SET CUDA_VISIBLE_DEVICES \
		SLURM_STEP_RESV_PORTS SLURM_GPUS_ON_NODE WORLD_SIZE \
		OMP_NUM_THREADS SLURM_CPU_BIND SLURM_CPUS_PER_TASK \
		SLURM_TRES_PER_TASK SLURM_JOB_CPUS_PER_NODE SLURM_JOB_NUM_NODES
}

@test "version names the Slurm release it was built against" {
	run "$DISTENV" --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^distenv\ [0-9.]+\ \(built\ against\ Slurm\ [0-9]{2}\.[0-9]{2}\.[0-9]+\)$ ]]
}

@test "env prints exports that eval sets, single-node step on loopback" {
	export SLURM_STEP_RESV_PORTS=21005-21006
	run "$DISTENV" env
	[ "$status" -eq 0 ]
	eval "$output"
	[ "$NNODES" = 1 ]
	[ "$NODE_RANK" = 0 ]
	[ "$RANK" = 0 ]
	[ "$NPROC_PER_NODE" = 1 ]
	[ "$MASTER_ADDR" = 127.0.0.1 ] || [ "$MASTER_ADDR" = ::1 ]
	[ "$MASTER_PORT" = 21005 ]
	[ "$FORCE_TORCHRUN" = 1 ]
	[ "$PET_MASTER_PORT" = 21005 ]
	[ "$NCCL_SOCKET_IFNAME" = "=lo" ]
	[ "$GLOO_SOCKET_IFNAME" = lo ]
	[[ "$DISTENV_SET" == NNODES:* ]]
}

@test "tasks mode gives per-rank variables" {
	export SLURM_STEP_NUM_TASKS=3 SLURM_PROCID=2 SLURM_LOCALID=2 SLURM_STEP_TASKS_PER_NODE=3
	run "$DISTENV" env --mode tasks
	[ "$status" -eq 0 ]
	eval "$output"
	[ "$RANK" = 2 ]
	[ "$WORLD_SIZE" = 3 ]
	[ "$LOCAL_RANK" = 2 ]
	[ "$LOCAL_WORLD_SIZE" = 3 ]
	[ -z "${FORCE_TORCHRUN:-}" ]
}

@test "elastic mode with a node range warns that ZeRO checkpoints need one node count, in env and show; one node count is quiet" {
	export SLURM_STEP_RESV_PORTS=21005-21006
	run bash -c '"$1" env --mode elastic --nodes 1:2 2>&1 >/dev/null' sh "$DISTENV"
	[ "$status" -eq 0 ]
	[[ "$output" == "distenv: warning: --distenv-nodes=1:2: a restart with another node count changes the data-parallel world size"* ]]
	[[ "$output" == *"MIN_NNODES = MAX_NNODES"* ]]
	run "$DISTENV" show --mode elastic --nodes 1:2
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: localhost:   warning: --distenv-nodes=1:2: a restart with another node count"* ]]
	run bash -c '"$1" env --mode elastic --nodes 1:1 2>&1 >/dev/null' sh "$DISTENV"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "torchrun mode refuses several tasks on a node" {
	export SLURM_STEP_NUM_TASKS=2 SLURM_STEP_TASKS_PER_NODE=2
	run "$DISTENV" env
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: node localhost: 2 tasks of step 812.4 run on this node in torchrun mode. Use --ntasks-per-node=1 (torchrun starts one process per GPU itself), or --distenv=tasks to start one task per rank" ]
}

@test "a variable the user exported is kept and not printed" {
	export MASTER_PORT=29500
	run "$DISTENV" env
	[ "$status" -eq 0 ]
	! grep -q '^export MASTER_PORT=' <<<"$output" || false
	grep -qx "export PET_MASTER_PORT='29500'" <<<"$output"
	run "$DISTENV" show
	grep -q 'MASTER_PORT=29500  \[kept\] kept (set by user)' <<<"$output"
}

@test "values from an earlier distenv step are re-derived" {
	eval "$("$DISTENV" env)"
	export SLURM_STEP_ID=5 SLURM_STEP_RESV_PORTS=21010-21011
	run "$DISTENV" env
	[ "$status" -eq 0 ]
	grep -qx "export MASTER_PORT='21010'" <<<"$output"
}

@test "show explains every value" {
	run "$DISTENV" show
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "distenv: localhost: node 0 of 1 in step 812.4 (mode torchrun, task 0, 1 task on this node)" ]]
	grep -q 'NODE_RANK=0  \[set\] SLURM_NODEID: this node.s index in the step (read by LLaMA-Factory >= 0.9.1)' <<<"$output"
	grep -q 'RANK=0  \[set\] = NODE_RANK, for LLaMA-Factory <= 0.9.0 which reads RANK' <<<"$output"
	grep -q 'MASTER_PORT=[0-9]*  \[set\] derived from job 812 step 4 in port_range 29600-32767' <<<"$output"
}

@test "a multi-node step whose master resolves only to loopback fails with the fix" {
	export SLURM_STEP_NUM_NODES=2 SLURM_STEP_NODELIST=localhost,otherhost SLURM_STEP_TASKS_PER_NODE='1(x2)'
	run "$DISTENV" env
	[ "$status" -eq 1 ]
	# 127.0.0.1, or ::1 where /etc/hosts maps localhost to it first
	[[ "$output" =~ ^"distenv: error: node localhost: master host localhost: the name resolves only to the loopback address "(127\.0\.0\.1|::1)", which other nodes cannot reach. Map the name to the node's cluster address in /etc/hosts or DNS" ]]
}

# own_ipv4: this machine's first global IPv4 address (ip-address(8)).
own_ipv4() {
	ip -o -4 addr show scope global | awk '{ sub("/.*", "", $4); print $4; exit }'
}

@test "a node other than the master's refuses its own address as MASTER_ADDR, naming the master and the fix" {
	# This machine is node index 1 of a 2-node step; node index 0,
	# otherhost, hosts the store.
	export SLURM_STEP_NUM_NODES=2 SLURM_STEP_NODELIST=otherhost,localhost SLURM_STEP_TASKS_PER_NODE='1(x2)'
	export SLURM_NODEID=1 SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=1
	own=$(own_ipv4)
	[ -n "$own" ]
	MASTER_ADDR=$own run "$DISTENV" env
	[ "$status" -eq 1 ]
	[[ "$output" == "distenv: error: MASTER_ADDR (exported): you exported MASTER_ADDR=$own, an address of this node (localhost, node index 1, on "*"), but the rendezvous store listens on otherhost (node index 0): this node would wait for a store of its own that nobody starts, and the rendezvous never forms. Unset it: distenv derives the address of otherhost (node index 0) for every node; or export that node's address, the same on every node" ]]
	# With both interface variables exported too, distenv needs no
	# other network fact, and still checks this one.
	MASTER_ADDR=$own NCCL_SOCKET_IFNAME=lo GLOO_SOCKET_IFNAME=lo run "$DISTENV" env
	[ "$status" -eq 1 ]
	[[ "$output" == *"you exported MASTER_ADDR=$own, an address of this node (localhost, node index 1"* ]]
	# The same export on node index 0, which hosts the store, is right.
	export SLURM_STEP_NODELIST=localhost,otherhost SLURM_NODEID=0 SLURM_PROCID=0
	MASTER_ADDR=$own run "$DISTENV" env
	[ "$status" -eq 0 ]
	grep -qx "export PET_MASTER_ADDR='$own'" <<<"$output"
}

# in_netns CMD...: CMD in a network namespace of its own (unshare(1),
# no root needed): v0 holds 10.200.0.2/24, its peer v1 an IPv6
# link-local address only.
in_netns() {
	local flags=-rn
	# root needs no user namespace, and a chrooted caller may not make
	# one (unshare(2): EPERM), as in tests/releases.sh's chroots
	if [ "$(id -u)" -eq 0 ]; then
		flags=-n
	fi
	unshare "$flags" sh -c 'ip link set lo up &&
		ip link add v0 type veth peer name v1 &&
		ip link set v0 up && ip link set v1 up &&
		ip addr add 10.200.0.2/24 dev v0 &&
		ip -6 addr add fe80::5/64 dev v1 nodad &&
		exec "$@"' sh "$@"
}

@test "an NCCL list whose later interface has an IPv6 link-local address only: a warning naming it and the usable ones" {
	# This namespace is node index 0 of a 2-node step, the master at
	# 10.200.0.2 on v0; NCCL's bootstrap takes v0, its socket transport
	# v1 too.
	export SLURM_STEP_NUM_NODES=2 SLURM_STEP_NODELIST=localhost,otherhost SLURM_STEP_TASKS_PER_NODE='1(x2)'
	export SLURM_STEP_NUM_TASKS=2 MASTER_ADDR=10.200.0.2
	NCCL_SOCKET_IFNAME='=v0,v1' run in_netns "$DISTENV" env
	[ "$status" -eq 0 ]
	[[ "$output" =~ "distenv: warning: node localhost: NCCL_SOCKET_IFNAME (exported): you exported NCCL_SOCKET_IFNAME==v0,v1, which also selects v1, and NCCL takes v1's address fe80::"[0-9a-f:]+", which is IPv6 link-local (it needs the link's scope and crosses no router)" ]]
	grep -qF "Export NCCL_SOCKET_IFNAME==v0 (the interfaces of the list that other nodes can reach), or unset it and let distenv derive it" <<<"$output"
	grep -qx "export GLOO_SOCKET_IFNAME='v0'" <<<"$output"
	# v0 alone: no word.
	NCCL_SOCKET_IFNAME='=v0' run in_netns "$DISTENV" env
	[ "$status" -eq 0 ]
	! grep -q 'warning' <<<"$output" || false
}

@test "env -- CMD: a launch line that contradicts this node fails, naming the argument and the value it needs; one left to the shell passes" {
	# node index 0 of a 2-node step, the master at 10.200.0.2 on v0
	export SLURM_STEP_NUM_NODES=2 SLURM_STEP_NODELIST=localhost,otherhost SLURM_STEP_TASKS_PER_NODE='1(x2)'
	export SLURM_STEP_NUM_TASKS=2 MASTER_ADDR=10.200.0.2
	run in_netns "$DISTENV" env -- bash -c "torchrun --nnodes 2 --node_rank 1 x.py"
	[ "$status" -eq 1 ]
	grep -qF "distenv: error: --node_rank (the step's command): torchrun --node_rank 1 on localhost (node index 0 of 2): the step needs --node_rank 0 on this node" <<<"$output"
	[ "$(grep -c '^export ' <<<"$output")" -eq 0 ]
	run in_netns "$DISTENV" env -- torchrun --nnodes=3 x.py
	[ "$status" -eq 1 ]
	grep -qF "the step has 2 nodes, so it needs --nnodes 2" <<<"$output"
	run in_netns "$DISTENV" env -- bash -c 'torchrun --nnodes 2 --node_rank $NODE_RANK --nproc_per_node 8 x.py'
	[ "$status" -eq 0 ]
	grep -qx "export NODE_RANK='0'" <<<"$output"
	grep -qF "distenv: warning: --nproc_per_node (the step's command): torchrun --nproc_per_node 8 on localhost" <<<"$output"
}

@test "an interface that does not exist is named with the ones that do" {
	run "$DISTENV" env --ifname =ens5
	[ "$status" -eq 1 ]
	[[ "$output" == "distenv: error: node localhost: --distenv-ifname: '=ens5' matches no interface of this node (it has: lo"* ]]
	export NCCL_SOCKET_IFNAME=eth9
	run "$DISTENV" env
	[ "$status" -eq 1 ]
	[[ "$output" == *"NCCL_SOCKET_IFNAME (exported): 'eth9' matches no interface"* ]]
}

@test "one GPU per task: every task of the node gets the node's NCCL_IB_HCA, and LOCAL_RANK a note" {
	# srun --ntasks-per-node=4 --gpus-per-task=1 on a JURECA-DC node:
	# each task sees its GPU as device 0, SLURM_STEP_GPUS names it.
	export HWLOC_XMLFILE="$BATS_TEST_DIRNAME/../topo/jureca-dc-gpu-jrc0323.hwloc2.xml"
	export SLURM_STEP_NUM_TASKS=4 SLURM_STEP_TASKS_PER_NODE=4
	export CUDA_VISIBLE_DEVICES=0 SLURM_GPUS_ON_NODE=4
	for t in 0 1 2 3; do
		SLURM_PROCID=$t SLURM_LOCALID=$t SLURM_STEP_GPUS=$t run "$DISTENV" env --mode tasks
		[ "$status" -eq 0 ]
		grep -qx "export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1'" <<<"$output"
	done
	SLURM_PROCID=2 SLURM_LOCALID=2 SLURM_STEP_GPUS=2 run "$DISTENV" show --mode tasks
	grep -qF 'LOCAL_RANK=2  [set] SLURM_LOCALID: this task'"'"'s index on the node; note: each task here sees 1 GPU' <<<"$output"
	grep -qF 'so for LOCAL_RANK 1-3 torch.cuda.set_device(LOCAL_RANK) fails with "invalid device ordinal"' <<<"$output"
	# An HCA the node does not have fails before launch.
	NCCL_IB_HCA=mlx5_9 SLURM_STEP_GPUS=0 run "$DISTENV" env --mode tasks
	[ "$status" -eq 1 ]
	[[ "$output" == "distenv: error: node localhost: NCCL_IB_HCA (exported): 'mlx5_9' selects no active port of this node's HCAs"* ]]
}

@test "a CUDA_VISIBLE_DEVICES naming GPUs the task lacks: a warning with the task's GPUs in both numberings; Slurm's values pass" {
	# The step holds GPUs 4 and 5 of the node; a recipe's 0,1,2,3.
	export SLURM_GPUS_ON_NODE=2 SLURM_STEP_GPUS=4,5
	CUDA_VISIBLE_DEVICES=0,1,2,3 run "$DISTENV" env
	[ "$status" -eq 0 ]
	grep -qxF "distenv: warning: node localhost: CUDA_VISIBLE_DEVICES (exported): you exported CUDA_VISIBLE_DEVICES=0,1,2,3 (Slurm never sets such a value): device 2 is not one of this task's GPUs, 4,5 (SLURM_STEP_GPUS); CUDA shows only the devices listed before the first index it cannot use, so the task sees fewer GPUs than the list names, or none. Unset it (Slurm sets it for each task), or name the task's GPUs: 0,1 (CUDA's numbering when Slurm constrains the devices, ConstrainDevices=yes) or 4,5 (their global indices otherwise)" <<<"$output"
	grep -qx "export NPROC_PER_NODE='2'" <<<"$output"
	# What Slurm sets: the global indices, or 0 to n-1 under
	# ConstrainDevices.
	CUDA_VISIBLE_DEVICES=4,5 run "$DISTENV" env
	[ "$status" -eq 0 ]
	! grep -q 'warning' <<<"$output" || false
	CUDA_VISIBLE_DEVICES=0,1 run "$DISTENV" env
	[ "$status" -eq 0 ]
	! grep -q 'warning' <<<"$output" || false
}

@test "Gloo is given NCCL's syntax or an address: refused before launch" {
	GLOO_SOCKET_IFNAME='^lo,docker' run "$DISTENV" env
	[ "$status" -eq 1 ]
	[[ "$output" == "distenv: error: node localhost: GLOO_SOCKET_IFNAME (exported): you exported GLOO_SOCKET_IFNAME=^lo,docker: Gloo takes plain interface names"* ]]
	GLOO_SOCKET_IFNAME=127.0.0.1 run "$DISTENV" env
	[ "$status" -eq 1 ]
	[[ "$output" == *"'127.0.0.1' is an IP address, not an interface name"*"Export GLOO_SOCKET_IFNAME=lo (the interface holding 127.0.0.1 here)"* ]]
	run "$DISTENV" env --ifname 10.1.2.3
	[ "$status" -eq 2 ]
	[[ "$output" == *"'10.1.2.3' is an IP address, not an interface name"* ]]
}

@test "bad option values are refused with the option named, exit 2 (a usage error, as in every subcommand; tests/cmd/options.bats: --help and unknown options)" {
	run "$DISTENV" env --port abc
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: --port: 'abc' is not a port number from 1024 to 65535. Give a port number from 1024 to 65535" ]
	run "$DISTENV" env --mode mpi
	[ "$output" = "distenv: error: --mode: unknown mode 'mpi'. Use torchrun (one task per node that runs torchrun or llamafactory-cli), elastic (the same with torchrun's c10d rendezvous), tasks (one task per rank) or off" ]
	run "$DISTENV" env --ifname 'eth0;reboot'
	[ "$status" -eq 2 ]
	[[ "$output" == *"has the character ';'"* ]]
	run "$DISTENV" env --nproc 0
	[ "$status" -eq 2 ]
	run "$DISTENV" env --bogus
	[ "$status" -eq 2 ]
	run "$DISTENV" frobnicate
	[ "$status" -eq 2 ]
}

@test "outside a Slurm step it says what is missing" {
	run env -i "$DISTENV" env
	[ "$status" -eq 1 ]
	[ "$output" = "distenv: error: SLURM_JOB_ID: not set. Run inside a Slurm step (srun), or set the variable" ]
}

@test "a malformed reserved-port list is reported" {
	export SLURM_STEP_RESV_PORTS=21000-
	run "$DISTENV" env
	[ "$status" -eq 1 ]
	[[ "$output" == "distenv: error: SLURM_STEP_RESV_PORTS: '21000-' is not a port list"* ]]
}

@test "export lines quote values for the shell" {
	export SLURM_STEP_NODELIST="localhost"
	run "$DISTENV" env --ifname "^=eth9"
	[ "$status" -eq 0 ]
	grep -qx "export NCCL_SOCKET_IFNAME='^=eth9'" <<<"$output"
}

@test "show in salloc's shell (a job, no step, no slurmd) says that it is that shell and that the plugin exports nothing there" {
	unset SLURM_STEP_ID SLURMD_NODENAME SLURM_STEP_NUM_NODES SLURM_STEP_NODELIST
	export SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST=localhost,otherhost
	run "$DISTENV" show
	echo "$output"
	[[ "${lines[0]}" == "distenv: submit host: the shell of job 812's allocation, outside any step (mode torchrun, 2 nodes): the plugin exports nothing here; each srun step gets its own values" ]]
}

@test "env on 1 CPU with NPROC_PER_NODE=2: a warning naming the binding and the fix; OMP_NUM_THREADS from the CPUs, a user's kept" {
	export SLURM_CPU_BIND=quiet,map_cpu:0
	run taskset -c 0 "$DISTENV" env --nproc 2
	[ "$status" -eq 0 ]
	grep -qF "distenv: warning: node localhost: CPUs of the task: the task may run on 1 CPU (0) but starts 2 processes (NPROC_PER_NODE=2, torchrun's workers)" <<<"$output"
	grep -qF "SLURM_CPU_BIND=quiet,map_cpu:0 binds it" <<<"$output"
	grep -qF "Give the task its CPUs: srun -c N" <<<"$output"
	grep -qx "export OMP_NUM_THREADS='1'" <<<"$output"
	OMP_NUM_THREADS=3 run taskset -c 0 "$DISTENV" env --nproc 2
	[ "$status" -eq 0 ]
	! grep -q "OMP_NUM_THREADS=" <<<"$output" || false
}

@test "env on 2 CPUs: no warning, OMP_NUM_THREADS = CPUs / processes; under half of the job's CPUs on the node warns" {
	run taskset -c 0-1 "$DISTENV" env --nproc 2
	[ "$status" -eq 0 ]
	! grep -q "warning" <<<"$output" || false
	grep -qx "export OMP_NUM_THREADS='1'" <<<"$output"
	run taskset -c 0-1 "$DISTENV" env --mode tasks
	[ "$status" -eq 0 ]
	grep -qx "export OMP_NUM_THREADS='2'" <<<"$output"
	export SLURM_JOB_CPUS_PER_NODE=8
	run taskset -c 0 "$DISTENV" env --mode tasks
	[ "$status" -eq 0 ]
	grep -qF "the task may run on 1 CPU (0), under half of the 8 the job holds here for each of the step's 1 task on the node" <<<"$output"
	grep -qF "no -c: srun counts 1 CPU per task, and srun of Slurm 22.05 to 23.02 does not take sbatch's -c" <<<"$output"
}
