#!/usr/bin/env bats
# A user's mistakes on a real Slurm 22.05 cluster (cluster.sh, 2 nodes),
# made as someone moving from hand-set variables to distenv makes them:
# each one ends the step within seconds with what was wrong and the fix,
# never by a rendezvous that waits until its timeout, and without
# srun --kill-on-bad-exit.

# Commands in single quotes run in the job's shell, not this one.
# shellcheck disable=SC2016

load helpers
load lf_helpers

TINY="$TOP/tests/cluster/lf/tiny_model"

setup_file() { cluster_file_setup 2; }
teardown_file() { cluster_file_teardown; }
setup() { cluster_test_setup; }

# launch VAR=VALUE...: LLaMA-Factory's torchrun command on 2 nodes, with
# the user's leftover exports, timed; sets $elapsed_ms.
launch() {
	local t0 t1
	t0=$(date +%s%N)
	run timeout 120 env "$@" srun -N2 --distenv --distenv-nproc=2 "$LF" "$GLOO"
	t1=$(date +%s%N)
	elapsed_ms=$(((t1 - t0) / 1000000))
	echo "$output"
	echo "elapsed: ${elapsed_ms} ms, status $status"
	echo "# $BATS_TEST_NUMBER: step ended in ${elapsed_ms} ms, exit $status" >&3
}

# ended_fast: the step failed (not the timeout) within 30 s and no rank
# trained.
ended_fast() {
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$elapsed_ms" -lt 30000 ]
	! grep -q 'result=10 OK' <<<"$output" || false
}

@test "a leftover NODE_RANK=0 fails the step on both nodes within seconds, saying to unset it" {
	launch NODE_RANK=0
	ended_fast
	grep -qF 'distenv: error: NODE_RANK (exported): you exported NODE_RANK=0, the step says each of its 2 nodes has its own, 0 to 1 (SLURM_NODEID)' <<<"$output"
	grep -qF 'rendezvous waits for the missing ones. Unset it: distenv derives it for every node and task' <<<"$output"
	# the admin's view: the same reason in slurmd's log, with job, step,
	# node; the user's output has it once
	! grep -q 'failed the step' <<<"$output" || false
	grep -qE "distenv: job [0-9]+ step 0 node n[12]: failed the step: NODE_RANK \(exported\): you exported NODE_RANK=0, the step says each of its 2 nodes" \
		"$DISTENV_CLUSTER_DIR"/log/slurmd-n[12].log
	nodes_idle
}

@test "a leftover RANK=0 or NNODES=4 fails the same way" {
	launch RANK=0
	ended_fast
	grep -qF 'you exported RANK=0, the step says each of its 2 nodes has its own' <<<"$output"
	launch NNODES=4
	ended_fast
	grep -qF 'you exported NNODES=4, the step says 2 (SLURM_STEP_NUM_NODES: nodes in the step)' <<<"$output"
}

@test "values that agree with the step are kept, and the launch reduces" {
	launch NNODES=2 MASTER_PORT=29555
	[ "$status" -eq 0 ]
	[ "$(grep -c 'result=10 OK' <<<"$output")" -eq 4 ]
}

@test "an exported loopback MASTER_ADDR says it is the user's and to unset it; MASTER_PORT=80 is refused like --distenv-port=80" {
	launch MASTER_ADDR=127.0.0.1
	ended_fast
	grep -qF 'MASTER_ADDR (exported): you exported MASTER_ADDR=127.0.0.1, which is loopback: in a 2-node step every node would connect to itself' <<<"$output"
	! grep -q '/etc/hosts' <<<"$output" || false
	launch MASTER_PORT=80
	ended_fast
	grep -qF 'you exported MASTER_PORT=80, which is not a port in 1024-65535' <<<"$output"
}

@test "a failure on one node only ends the step on all nodes: the others do not wait in the rendezvous" {
	# An address no node holds: n1, which hosts the store, fails; n2
	# would start torchrun and wait for a store that never comes.
	launch MASTER_ADDR="$CLUSTER_NET.99"
	ended_fast
	grep -qF "distenv: error: MASTER_ADDR (exported): you exported MASTER_ADDR=$CLUSTER_NET.99, the step says node index 0 is n1, where the rendezvous store listens, and $CLUSTER_NET.99 is not one of its addresses" <<<"$output"
	grep -qE 'distenv: ending step [0-9]+\.0 on all 2 nodes, so that none waits for this one' <<<"$output"
	nodes_idle
}

@test "each node given its own address as MASTER_ADDR: the node that is not the master fails the step within seconds, naming the master and the fix" {
	# The name head resolves on each node to that node's own address,
	# as when every node is told its own address: n1, the master, holds
	# it and passes; n2 would wait for a store on itself.
	local i hosts saved=()
	for i in 1 2; do
		hosts=/etc/netns/$CLUSTER_NS$i/hosts
		saved[i]=$(cat "$hosts")
		# Append in place: ip netns exec bind-mounted this very file.
		printf '%s.%s\thead\n' "$CLUSTER_NET" "$i" >>"$hosts"
	done
	launch MASTER_ADDR=head
	for i in 1 2; do
		printf '%s\n' "${saved[i]}" >"/etc/netns/$CLUSTER_NS$i/hosts"
	done
	ended_fast
	grep -qF "distenv: error: MASTER_ADDR (exported): you exported MASTER_ADDR=head, which resolves here to $CLUSTER_NET.2, an address of this node (n2, node index 1, on eth0), but the rendezvous store listens on n1 (node index 0): this node would wait for a store of its own that nobody starts, and the rendezvous never forms. Unset it: distenv derives the address of n1 (node index 0) for every node; or export that node's address, the same on every node" <<<"$output"
	grep -qE 'distenv: ending step [0-9]+\.0 on all 2 nodes' <<<"$output"
	# n1 holds the address: no error there, n2's only.
	[ "$(grep -c 'distenv: error:' <<<"$output")" -eq 1 ]
	grep -qE "distenv: job [0-9]+ step 0 node n2: failed the step: MASTER_ADDR \(exported\): you exported MASTER_ADDR=head" \
		"$DISTENV_CLUSTER_DIR"/log/slurmd-n2.log
	nodes_idle
}

# line_step CMD...: CMD as a 2-node step in torchrun mode, timed; sets
# $elapsed_ms (as launch).
line_step() {
	local t0 t1
	t0=$(date +%s%N)
	run timeout 120 srun -N2 --ntasks-per-node=1 --distenv "$@"
	t1=$(date +%s%N)
	elapsed_ms=$(((t1 - t0) / 1000000))
	echo "$output"
	echo "elapsed: ${elapsed_ms} ms, status $status"
	echo "# $BATS_TEST_NUMBER: step ended in ${elapsed_ms} ms, exit $status" >&3
}

NODE_RANK_0="distenv: error: --node_rank (the step's command): torchrun --node_rank 0 on n2 (node index 1 of 2): the step needs --node_rank 1 on this node"

@test "a launch line with a literal torchrun --node_rank 0 fails the step on n2 within seconds, naming the argument and the rank it needs" {
	line_step torchrun --nnodes 2 --node_rank 0 --nproc_per_node 1 "$GLOO"
	ended_fast
	grep -qF "$NODE_RANK_0" <<<"$output"
	grep -qF 'Write --node_rank "$NODE_RANK" inside bash -c' <<<"$output"
	# n1's rank 0 is its own: only n2 fails, and ends the step
	[ "$(grep -c 'distenv: error:' <<<"$output")" -eq 1 ]
	grep -qE 'distenv: ending step [0-9]+\.0 on all 2 nodes' <<<"$output"
	nodes_idle
}

@test "the launch line expanded once in bash -c \"...\" (the batch script's double quotes) fails the same way" {
	line_step bash -c "torchrun --nnodes 2 --node_rank 0 --nproc_per_node 1 $GLOO"
	ended_fast
	grep -qF "$NODE_RANK_0" <<<"$output"
	nodes_idle
}

@test "--node_rank \$SLURM_NODEID in single quotes, expanded by each node's shell, passes and the all_reduce completes" {
	line_step bash -c 'torchrun --redirects 1 --tee 1 --nnodes 2 --node_rank $SLURM_NODEID --nproc_per_node 1 '"$GLOO"
	[ "$status" -eq 0 ]
	[ "$(grep -o 'result=3 OK' <<<"$output" | wc -l)" -eq 2 ]
	refute grep -q 'distenv: error:' <<<"$output"
}

@test "a c10d --rdzv_endpoint of \$(hostname), each node its own, fails the step on n2 naming the master" {
	line_step bash -c 'torchrun --nnodes 2 --rdzv_backend c10d --rdzv_endpoint $(hostname):29400 --nproc_per_node 1 '"$GLOO"
	ended_fast
	grep -qF "distenv: error: --rdzv_endpoint (the step's command): torchrun --rdzv_endpoint \$(hostname):29400 on n2 (node index 1 of 2): \$(hostname) is this node, but the rendezvous store is on the master, n1 (node index 0" <<<"$output"
	nodes_idle
}

@test "a c10d rendezvous given --node_rank warns (ignored); --distenv-check=strict fails; off checks nothing" {
	line_step bash -c 'torchrun --redirects 1 --tee 1 --nnodes 2 --rdzv_backend c10d --rdzv_endpoint n1:29400 --node_rank 0 --nproc_per_node 1 '"$GLOO"
	[ "$status" -eq 0 ]
	grep -qF "distenv: warning: --node_rank (the step's command): torchrun --node_rank 0 on n1 (node index 0 of 2): ignored: with the c10d rendezvous" <<<"$output"
	line_step --distenv-check=strict torchrun --nnodes 2 --rdzv_backend c10d --rdzv_endpoint n1:29400 --node_rank 0 --nproc_per_node 1 "$GLOO"
	ended_fast
	grep -qF "distenv: error: --node_rank (the step's command): torchrun --node_rank 0 on n" <<<"$output"
	# off: the line that fails above starts (and would wait until the
	# rendezvous timeout: cut at 5 s here)
	line_step --distenv-check=off timeout 5 torchrun --nnodes 2 --node_rank 0 --nproc_per_node 1 "$GLOO"
	refute grep -q 'distenv: error:' <<<"$output"
	[ "$status" -eq 124 ]
}

@test "--distenv-lf-config with a command that names the original YAML: a warning naming \"\$DISTENV_LF_CONFIG\"; strict fails the step" {
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dpo.yaml "output_dir=$BATS_FILE_TMPDIR/out"
	run timeout 60 srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		bash -c 'echo "RAN train dpo.yaml"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^RAN ' <<<"$output")" -eq 2 ]
	grep -qF "distenv: warning: n1: --distenv-lf-config: the step's command names dpo.yaml, the original: the resolved copy distenv wrote (save_on_each_node, resume, offload) is not used. Run the copy: llamafactory-cli train \"\$DISTENV_LF_CONFIG\"" <<<"$output"
	launch_t0=$(date +%s)
	run timeout 60 srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		--distenv-check=strict bash -c 'echo "RAN train ./dpo.yaml"'
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ $(($(date +%s) - launch_t0)) -lt 30 ]
	! grep -q '^RAN ' <<<"$output" || false
	grep -qF "distenv: error: n" <<<"$output"
	grep -qF "the step's command names ./dpo.yaml, the original" <<<"$output"
	# the copy: no word
	run timeout 60 srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=dpo.yaml \
		--distenv-check=strict bash -c 'echo "RAN train $DISTENV_LF_CONFIG"'
	echo "$output"
	[ "$status" -eq 0 ]
	! grep -q "names .*the original" <<<"$output" || false
}

@test "an unknown LLaMA-Factory key or a local model path that does not exist fails srun and sbatch at submit, before the job queues; --distenv-check=off lets it through" {
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" typo.yaml "output_dir=$BATS_FILE_TMPDIR/out" cuttoff_len=4096
	run timeout 60 srun -N2 --distenv --distenv-lf-config=typo.yaml true
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	grep -qE "error: distenv: --distenv-lf-config: typo.yaml:[0-9]+:1: unknown LLaMA-Factory key 'cuttoff_len' .*Did you mean 'cutoff_len'\?" <<<"$output"
	# nothing ran: the check is srun's, before any allocation
	! grep -q 'distenv: n[12]' <<<"$output" || false
	jobs_before=$(squeue -h | wc -l)
	run sbatch -N2 --distenv --distenv-lf-config=typo.yaml --wrap true
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qF "unknown LLaMA-Factory key 'cuttoff_len'" <<<"$output"
	[ "$(squeue -h | wc -l)" -eq "$jobs_before" ]
	run timeout 60 srun -N2 --distenv --distenv-lf-config=typo.yaml --distenv-check=off true
	[ "$status" -eq 0 ]
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" nomodel.yaml "output_dir=$BATS_FILE_TMPDIR/out" model_name_or_path=/models/no-such-model
	run timeout 60 srun -N2 --distenv --distenv-lf-config=nomodel.yaml --distenv-check=strict true
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	grep -qF "model_name_or_path: /models/no-such-model is a local path and cannot be read on this node: No such file or directory" <<<"$output"
}
