#!/usr/bin/env bats
# Launch-time warnings of long runs, on the namespace Slurm cluster:
# - sbatch: a job that resumes (--distenv-resume) or is requeued
#   (--requeue) without a --signal=B: lead of at least a save
#   (plugin/core/distenv_requeue.h) warns on sbatch's terminal, and fails
#   the submission under --distenv-check=strict. The jobs are submitted
#   held and cancelled: only sbatch's side is tested.
# - srun: elastic mode with a node range warns that ZeRO checkpoints do
#   not survive a change of node count.

load helpers

setup_file() { cluster_file_setup 2; }
teardown_file() { cluster_file_teardown; }
setup() { cluster_test_setup; }

# held ARGS...: `run sbatch --hold --parsable ARGS...` (output: sbatch's
# stderr and the job ID), then cancel the job, if one was submitted.
held() {
	local id
	run sbatch --hold --parsable "$@"
	echo "$output" >&2
	id=$(grep -E '^[0-9]+$' <<<"$output" || true)
	if [ -n "$id" ]; then scancel "$id"; fi
}

# a script whose #SBATCH lines ask for a requeue, with signal line $1
script_with() {
	printf '#!/bin/bash\n#SBATCH -N1\n%s\n#SBATCH --requeue\ntrue\n' "$1" >job.sh
}

@test "sbatch --distenv-resume=auto without --signal: a warning on sbatch's terminal, the job submitted all the same; with --signal=B:USR1@300 quiet" {
	held --distenv --distenv-resume=auto --wrap true
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: --distenv-resume=auto: no --signal: the batch script gets no warning before the time limit"* ]]
	[[ "$output" == *"Add --signal=B:USR1@900"* ]]
	[[ "$output" =~ (^|$'\n')[0-9]+($'\n'|$) ]]
	held --distenv --distenv-resume=auto --signal=B:USR1@300 --wrap true
	[ "$status" -eq 0 ]
	[[ "$output" != *"distenv: warning"* ]]
}

@test "#SBATCH --requeue with #SBATCH --signal=USR1@300 (no B:): the warning names the script's line" {
	script_with "#SBATCH --signal=USR1@300"
	held --distenv job.sh
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: --signal=USR1@300 (job.sh line 3): without \"B:\" the signal goes to the job's steps"* ]]
	[[ "$output" == *"Give it as --signal=B:USR1@300"* ]]
}

@test "#SBATCH --requeue with a good #SBATCH --signal is quiet; a short lead on the command line overrides it and warns" {
	script_with "#SBATCH --signal=B:USR1@900"
	held --distenv job.sh
	[ "$status" -eq 0 ]
	[[ "$output" != *"distenv: warning"* ]]
	held --distenv --signal=B:USR1@30 job.sh
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: --signal=B:USR1@30 (the sbatch command line): the warning comes 30 s before the time limit"* ]]
}

@test "SBATCH_SIGNAL in sbatch's environment counts as sbatch reads it: USR1@600 warns, B:USR1@600 is quiet" {
	script_with ""
	SBATCH_SIGNAL=USR1@600 held --distenv job.sh
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: --signal=USR1@600 (SBATCH_SIGNAL): without \"B:\""* ]]
	SBATCH_SIGNAL=B:USR1@600 held --distenv job.sh
	[ "$status" -eq 0 ]
	[[ "$output" != *"distenv: warning"* ]]
}

@test "--distenv-check=strict: no --signal fails the submission with the reason" {
	held --distenv --distenv-check=strict --distenv-resume=auto --wrap true
	[ "$status" -ne 0 ]
	[[ "$output" == *"error: distenv: --distenv-resume=auto: no --signal"* ]]
	[[ ! "$output" =~ (^|$'\n')[0-9]+($'\n'|$) ]]
}

@test "--requeue warns only with --distenv, and not under --distenv-check=off" {
	held --requeue --wrap true
	[ "$status" -eq 0 ]
	[[ "$output" != *"distenv"* ]]
	held --distenv --requeue --wrap true
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: --requeue: no --signal"* ]]
	held --distenv --distenv-check=off --requeue --wrap true
	[ "$status" -eq 0 ]
	[[ "$output" != *"distenv: warning"* ]]
}

@test "elastic mode with a node range (--distenv-nodes=1:2): a warning that ZeRO checkpoints need the same node count; 2:2 is quiet" {
	run timeout 60 srun -N2 --ntasks-per-node=1 --distenv=elastic --distenv-nodes=1:2 true
	echo "$output" >&2
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: --distenv-nodes=1:2: a restart with another node count changes the data-parallel world size"* ]]
	[[ "$output" == *"MIN_NNODES = MAX_NNODES"* ]]
	run timeout 60 srun -N2 --ntasks-per-node=1 --distenv=elastic --distenv-nodes=2:2 true
	echo "$output" >&2
	[ "$status" -eq 0 ]
	[[ "$output" != *"distenv: warning"* ]]
}
