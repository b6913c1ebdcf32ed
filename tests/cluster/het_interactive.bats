#!/usr/bin/env bats
# Heterogeneous jobs and salloc's interactive step on a real Slurm
# cluster (cluster.sh, 3 nodes, sched/backfill, which heterogeneous jobs
# need, and LaunchParameters=use_interactive_step).
#
# A heterogeneous step (srun --het-group=0,1) runs as one step per
# component; its tasks' SLURM_* variables describe the whole step, and
# distenv derives from them: one rendezvous over every component's nodes.
# The glue's own ids (the step it cancels, the run preparation's node
# index) follow the same rule (distenv_step_ids_resolve, distenv_step.h).

# Commands in single quotes run in the job's shell, not this one.
# shellcheck disable=SC2016

load helpers

setup_file() { cluster_file_setup 3 "" --backfill --interactive-step; }
teardown_file() { cluster_file_teardown; }
setup() { cluster_test_setup; }

# salloc_het CMD [ARG...]: run CMD (with \$0... = ARGs) in the shell of a heterogeneous allocation of
# n1 (component 0) and n[2-3] (component 1); bats `run`.
salloc_het() {
	run timeout 120 salloc -N1 -w n1 : -N2 -w n2,n3 bash -c "$1" "${@:2}"
	echo "$output"
}

@test "a heterogeneous step (srun --het-group=0,1): one rendezvous over every component's nodes, every rank's all_reduce checked" {
	salloc_het 'srun --het-group=0,1 --distenv bash -c "echo VARS \$(hostname) \$NODE_RANK \$NNODES \$MASTER_ADDR \$MASTER_PORT"; srun --het-group=0,1 --distenv --distenv-nproc=2 "$0" "$1"' "$LF" "$GLOO"
	[ "$status" -eq 0 ]
	# one master address and port on every node
	[ "$(grep -c "^VARS n[1-3] [0-2] 3 $CLUSTER_NET.1 " <<<"$output")" -eq 3 ]
	[ "$(grep '^VARS ' <<<"$output" | awk '{ print $5 }' | sort -u | wc -l)" -eq 1 ]
	grep -q "^VARS n1 0 3 " <<<"$output"
	grep -q "^VARS n2 1 3 " <<<"$output"
	grep -q "^VARS n3 2 3 " <<<"$output"
	for r in 0 1 2 3 4 5; do
		grep -qE "RANK $r/6 node=n[1-3] result=21 OK" <<<"$output"
	done
	# counted by match, not by line: torchrun's prefixed output of two
	# ranks can land on one line ("...OK[default1]:RANK 1/6 ...")
	for n in n1 n2 n3; do
		[ "$(grep -oE "RANK [0-5]/6 node=$n result=21 OK" <<<"$output" | wc -l)" -eq 2 ]
	done
}

@test "a step of one component (srun --het-group=1) counts that component's nodes, with its first node as master" {
	salloc_het 'srun --het-group=1 --distenv bash -c "echo ONE \$(hostname) \$NODE_RANK \$NNODES \$MASTER_ADDR"'
	[ "$status" -eq 0 ]
	grep -qx "ONE n2 0 2 $CLUSTER_NET.2" <<<"$output"
	grep -qx "ONE n3 1 2 $CLUSTER_NET.2" <<<"$output"
}

@test "#SBATCH --distenv with #SBATCH hetjob: the script has component 0's values, srun --het-group=0,1 inside the whole step's" {
	cat >het.sbatch <<'EOF'
#!/bin/bash
#SBATCH -N1 -w n1 --distenv
#SBATCH hetjob
#SBATCH -N2 -w n2,n3
echo "BATCH $NNODES $MASTER_ADDR"
srun --het-group=0,1 bash -c 'echo "STEP $(hostname) $NODE_RANK $NNODES $MASTER_ADDR"'
EOF
	id=$(sbatch --parsable -o het.out het.sbatch)
	# a heterogeneous job has a record per component: wait for the
	# first (the leader) to finish
	for _ in $(seq 1 240); do
		state=$(scontrol -o show job "$id" 2>/dev/null | head -1 | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2)
		case "$state" in
		PENDING | RUNNING | CONFIGURING | COMPLETING | "") sleep 0.5 ;;
		*) break ;;
		esac
	done
	cat het.out
	[ "$state" = COMPLETED ]
	# a bare srun in this script runs on component 0 alone: one node
	grep -qx "BATCH 1 $CLUSTER_NET.1" het.out
	grep -qx "STEP n1 0 3 $CLUSTER_NET.1" het.out
	grep -qx "STEP n2 1 3 $CLUSTER_NET.1" het.out
	grep -qx "STEP n3 2 3 $CLUSTER_NET.1" het.out
}

# het_fail NODE: NODE cannot resolve the master's name (n1); the others
# would sleep 60 s and then say LIVED_ON. Only a sleep that ran its 60 s
# says it: the step's kill may reach the sleep a moment before its shell.
# Sets $step_ms, the step's time in milliseconds.
het_fail() {
	local hosts=/etc/netns/$CLUSTER_NS${1#n}/hosts saved
	saved=$(cat "$hosts")
	# Rewrite in place: ip netns exec bind-mounted this very file.
	grep -v 'n1$' <<<"$saved" >"$hosts"
	salloc_het 't0=$(date +%s%N); srun --het-group=0,1 --distenv bash -c "echo start \$(hostname); sleep 60 && echo LIVED_ON \$(hostname)"; echo "STEP_MS $((($(date +%s%N) - t0) / 1000000))"'
	printf '%s\n' "$saved" >"$hosts"
	step_ms=$(grep -oE '^STEP_MS [0-9]+' <<<"$output" | cut -d' ' -f2)
	echo "# $BATS_TEST_NUMBER: $1 failed, the step ended in ${step_ms} ms" >&3
}

@test "a node of the second component fails: the step ends on every component's nodes within seconds" {
	het_fail n2
	[[ "$output" == *"distenv: error: node n2: master host n1: cannot resolve the name"* ]]
	[[ "$output" == *"distenv: ending step "*".0 on all 3 nodes of its heterogeneous components"* ]]
	[[ "$output" != *LIVED_ON* ]]
	[ "$step_ms" -lt 15000 ]
	nodes_idle
}

@test "the only node of the first component fails: the second component's nodes end too" {
	het_fail n1
	[[ "$output" == *"distenv: error: node n1: master host n1: cannot resolve the name"* ]]
	[[ "$output" == *"on all 3 nodes of its heterogeneous components"* ]]
	[[ "$output" != *LIVED_ON* ]]
	[ "$step_ms" -lt 15000 ]
	nodes_idle
}

@test "salloc's interactive step (use_interactive_step): the shell on the first node has the job's values, the srun inside the step's" {
	[ -z "${DISTENV_WRAPPER_DIR:-}" ] || skip "under the ASan wrappers: salloc starts the interactive step's srun itself, without the preloaded runtime"
	cat >cmds <<'EOF'
echo "SHELL_ON $(hostname) $NNODES $MASTER_ADDR $SLURM_STEP_ID"
distenv env | grep -E "^export (NNODES|MASTER_ADDR)="
srun bash -c 'echo "INNER $(hostname) $NODE_RANK $NNODES $MASTER_ADDR:$MASTER_PORT"' </dev/null
exit
EOF
	# salloc without a command starts the interactive step with a pty
	# (InteractiveStepOptions "--interactive --preserve-env --pty
	# $SHELL"): script(1) gives it a terminal and types the lines above
	# (the srun reads no terminal input: srun would pass it to its task
	# 0). SHELL is set here: where the caller has none (a CI runner),
	# salloc's srun gets no command and stops with "No command given to
	# execute".
	run env SHELL=/bin/bash timeout 60 script -qec "salloc -N2 --distenv" /dev/null <cmds
	# the terminal's carriage returns and bash's bracketed-paste codes
	output=$(tr -d '\r' <<<"$output" | sed 's/\x1b\[[?0-9;]*[a-zA-Z]//g')
	echo "$output"
	[ "$status" -eq 0 ]
	# the interactive step: SLURM_INTERACTIVE_STEP, 0xfffffffa, which
	# 26.05 prints as -6
	grep -qE "^SHELL_ON n1 2 $CLUSTER_NET.1 (4294967290|-6)$" <<<"$output"
	# the distenv command in that shell takes it for one, too (not for
	# a one-node step)
	grep -qx "export NNODES='2'" <<<"$output"
	grep -qx "export MASTER_ADDR='$CLUSTER_NET.1'" <<<"$output"
	port=$(grep -oE "INNER n1 0 2 $CLUSTER_NET.1:[0-9]+" <<<"$output" | cut -d: -f2)
	[ -n "$port" ]
	grep -qE "INNER n2 1 2 $CLUSTER_NET.1:$port$" <<<"$output"
}
