#!/usr/bin/env bats
# The CPU budget of a task on a real Slurm 22.05 cluster whose task
# plugin binds tasks to CPUs (cluster.sh --task-affinity: TaskPlugin=
# task/affinity, each node declaring this machine's real CPUs). A task
# bound to fewer CPUs than the processes it starts runs slower without
# any error; distenv warns (strict: fails the step) naming the cause,
# and exports OMP_NUM_THREADS from the task's CPUs unless it is set
# (docs/variables.md, "The CPU budget of a task").

# Commands in single quotes run in the job's shell, not this one.
# shellcheck disable=SC2016

load helpers

setup_file() { cluster_file_setup 2 "" --task-affinity; }
teardown_file() { cluster_file_teardown; }
setup() { cluster_test_setup; }

# What a task prints: its CPUs and OMP_NUM_THREADS.
SHOW='echo "TASK $SLURMD_NODENAME cpus=$(python3 -c "import os; print(len(os.sched_getaffinity(0)))") OMP=${OMP_NUM_THREADS:-unset}"'
WARN="CPUs of the task: the task may run on 1 CPU (0) but starts 2 processes (NPROC_PER_NODE=2, torchrun's workers)"

@test "the nodes declare the machine's CPUs, and Slurm binds a task to them" {
	run sinfo -h -N -o '%N %c'
	[ "$status" -eq 0 ]
	[ "$(grep -c " $(nproc --all)\$" <<<"$output")" -eq 2 ]
	run timeout 30 srun -N1 --cpu-bind=map_cpu:0 bash -c "$SHOW"
	[ "$status" -eq 0 ]
	grep -qx 'TASK n1 cpus=1 OMP=unset' <<<"$output"
}

@test "a step bound to 1 CPU in torchrun mode with NPROC_PER_NODE=2 warns, naming the binding and the fix; OMP_NUM_THREADS=1" {
	run timeout 30 srun -N2 --cpu-bind=map_cpu:0 --distenv --distenv-nproc=2 bash -c "$SHOW"
	[ "$status" -eq 0 ]
	[ "$(grep -cF "distenv: warning: node n1: $WARN" <<<"$output")" -eq 1 ]
	[ "$(grep -cF "distenv: warning: node n2: $WARN" <<<"$output")" -eq 1 ]
	grep -qF 'SLURM_CPU_BIND=quiet,map_cpu:0 binds it' <<<"$output"
	grep -qF 'Give the task its CPUs: srun -c N' <<<"$output"
	grep -qF -- '--cpu-bind=none' <<<"$output"
	grep -qx 'TASK n1 cpus=1 OMP=1' <<<"$output"
	grep -qx 'TASK n2 cpus=1 OMP=1' <<<"$output"
}

@test "under --distenv-check=strict the same step fails before its command, on every node" {
	run timeout 30 srun -N2 --cpu-bind=map_cpu:0 --distenv --distenv-nproc=2 --distenv-check=strict bash -c "$SHOW"
	[ "$status" -ne 0 ]
	grep -qF "distenv: error: node n" <<<"$output"
	grep -qF "$WARN" <<<"$output"
	[ "$(grep -c '^TASK ' <<<"$output")" -eq 0 ]
	nodes_idle
}

@test "a healthy step (-c 2) passes strict, OMP_NUM_THREADS = 2 CPUs / 2 workers; a user's OMP_NUM_THREADS is kept" {
	run timeout 30 srun -N2 -c2 --distenv --distenv-nproc=2 --distenv-check=strict bash -c "$SHOW"
	[ "$status" -eq 0 ]
	refute grep -q 'warning' <<<"$output"
	grep -qx 'TASK n1 cpus=2 OMP=1' <<<"$output"
	grep -qx 'TASK n2 cpus=2 OMP=1' <<<"$output"
	run timeout 30 srun -N1 -c2 --distenv=tasks bash -c "$SHOW"
	[ "$status" -eq 0 ]
	grep -qx 'TASK n1 cpus=2 OMP=2' <<<"$output"
	OMP_NUM_THREADS=7 run timeout 30 srun -N2 --cpu-bind=map_cpu:0 --distenv --distenv-nproc=2 bash -c "$SHOW"
	[ "$status" -eq 0 ]
	grep -qx 'TASK n1 cpus=1 OMP=7' <<<"$output"
	grep -qx 'TASK n2 cpus=1 OMP=7' <<<"$output"
}

@test "sbatch run inside another job's step: sbatch warns; the new job's srun inherits the binding, and distenv names SLURM_CPU_BIND" {
	local script="$BATS_FILE_TMPDIR/inner.sh" out="$BATS_FILE_TMPDIR/inner.out" id state
	cat >"$script" <<EOS
#!/bin/bash
#SBATCH -N1 -c2
env | grep -E '^SLURM_(CPU_BIND|CPUS_PER_TASK)=' | sed 's/^/BATCH /'
srun --distenv --distenv-nproc=2 bash -c '$SHOW'
EOS
	chmod +x "$script"
	# the outer job's step (1 CPU, Slurm's own binding) submits and ends
	run timeout 30 srun -N1 -c1 sbatch --parsable --distenv -o "$out" "$script"
	[ "$status" -eq 0 ]
	# sbatch itself warns, naming the outer job and what it passes on
	# (from 24.11, srun -c also exports SLURM_TRES_PER_TASK)
	grep -qE "^distenv: warning: the submitting environment: this runs inside job [0-9]+ \(SLURM_JOB_ID\) and passes its SLURM_CPU_BIND=quiet,mask_cpu:0x1, SLURM_CPUS_PER_TASK=1(, SLURM_TRES_PER_TASK=cpu[=:]1)? on to the new job" <<<"$output"
	id=$(grep -E '^[0-9]+$' <<<"$output")
	for _ in $(seq 1 120); do
		state=$(scontrol -o show job "$id" | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2)
		case "$state" in
		PENDING | RUNNING | CONFIGURING | COMPLETING | "") sleep 0.5 ;;
		*) break ;;
		esac
	done
	cat "$out"
	[ "$state" = COMPLETED ]
	# what the outer step passed on: its binding and its -c
	grep -qx 'BATCH SLURM_CPU_BIND=quiet,mask_cpu:0x1' "$out"
	# the job holds 2 CPUs and asked for -c 2, the task runs on 1
	grep -qE '^TASK n[12] cpus=1 OMP=1$' "$out"
	grep -qF "$WARN" "$out"
	# srun writes the mask it read as mask_cpu:1
	grep -qF 'SLURM_CPU_BIND=quiet,mask_cpu:1 binds it (srun --cpu-bind, srun'"'"'s default binding, or a SLURM_CPU_BIND left by another job'"'"'s step' "$out"
	# -c 2 asked for more than the task has: not named as the cause
	refute grep -qF 'SLURM_CPUS_PER_TASK=2 (' "$out"
}
