#!/usr/bin/env bats
# Concurrency and load on a real Slurm 22.05 cluster (cluster.sh, 2 nodes,
# partition OverSubscribe=FORCE:8, MpiParams=ports=21000-21999): many steps
# back to back and 8 at once on the same nodes, with Slurm's reserved
# ports and without them (a bare `srun --resv-ports` reserves none, so
# distenv derives MASTER_PORT from job and step id; tests/cluster/README.md).
# No two steps that run at the same time may share a MASTER_PORT, both
# nodes of a step must agree on it, and the rendezvous must succeed.
# Figures go to the TAP stream as comments (tests/README.md lists them).

# Commands in single quotes run in the job's shell, not this one.
# shellcheck disable=SC2016

load helpers

setup_file() { cluster_file_setup 2; }
teardown_file() { cluster_file_teardown; }
setup() { cluster_test_setup; }

# check_steps FILE N: FILE holds lines "S STEP NODE PORT RESV"; N steps,
# both nodes of each step print the same port, and (when RESV is not "-")
# that port is the first of the step's reserved ports.
check_steps() {
	local file=$1 n=$2
	[ "$(grep -c '^S ' "$file")" -eq $((2 * n)) ]
	# One port per step.
	[ "$(awk '$1=="S"{print $2, $4}' "$file" | sort -u | wc -l)" -eq "$n" ]
	awk '$1=="S" && $5!="-" {split($5,p,"[-,]"); if (p[1]!=$4) exit 1}' "$file"
}

@test "50 steps back to back in one job with reserved ports: each step's first reserved port, the same on both nodes" {
	run batch <<'EOF2'
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1
t0=$(date +%s%N)
for i in $(seq 1 50); do
	srun -N2 --distenv bash -c 'echo "S $SLURM_STEP_ID $SLURMD_NODENAME $MASTER_PORT ${SLURM_STEP_RESV_PORTS:--}"' || echo "STEP FAILED $i"
done
echo "ELAPSED_MS $((($(date +%s%N) - t0) / 1000000))"
EOF2
	out=${lines[0]}
	[ "$status" -eq 0 ]
	! grep -q 'STEP FAILED' "$out" || false
	check_steps "$out" 50
	# Every step had reserved ports.
	! grep -qE '^S [0-9]+ n[12] [0-9]+ -$' "$out" || false
	ms=$(awk '$1=="ELAPSED_MS"{print $2}' "$out")
	echo "# 50 sequential 2-node steps with reserved ports: $ms ms ($(awk -v ms="$ms" 'BEGIN{printf "%.1f", 50000/ms}') steps/s)" >&3
}

@test "50 steps back to back without reserved ports: derived ports, the same on both nodes, all 50 different, inside port_range" {
	run batch <<'EOF2'
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1
t0=$(date +%s%N)
for i in $(seq 1 50); do
	srun -N2 --resv-ports --distenv bash -c 'echo "S $SLURM_STEP_ID $SLURMD_NODENAME $MASTER_PORT ${SLURM_STEP_RESV_PORTS:--}"' || echo "STEP FAILED $i"
done
echo "ELAPSED_MS $((($(date +%s%N) - t0) / 1000000))"
EOF2
	out=${lines[0]}
	[ "$status" -eq 0 ]
	! grep -q 'STEP FAILED' "$out" || false
	check_steps "$out" 50
	[ "$(awk '$1=="S" && $5=="-"' "$out" | wc -l)" -eq 100 ]
	[ "$(awk '$1=="S"{print $4}' "$out" | sort -u | wc -l)" -eq 50 ]
	awk '$1=="S" && ($4 < 29600 || $4 > 32767) {exit 1}' "$out"
	ms=$(awk '$1=="ELAPSED_MS"{print $2}' "$out")
	echo "# 50 sequential 2-node steps, derived ports: $ms ms ($(awk -v ms="$ms" 'BEGIN{printf "%.1f", 50000/ms}') steps/s)" >&3
}

# eight_steps RESV_FLAG: a job that runs 8 steps of 2 nodes at once, each
# a Gloo all_reduce in tasks mode (the rendezvous on MASTER_PORT), each
# printing its port and when it started and ended.
eight_steps() {
	batch <<EOF2
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1
export DISTENV_TEST_TIMEOUT=60
for i in \$(seq 1 8); do
	srun --overlap -N2 -n2 $1 --distenv=tasks bash -c 'echo "S \$SLURM_STEP_ID \$SLURMD_NODENAME \$MASTER_PORT \${SLURM_STEP_RESV_PORTS:--} \$(date +%s%N)"; /usr/bin/python3 "\$0" | sed "s/^/R \$SLURM_STEP_ID /"; echo "E \$SLURM_STEP_ID \$SLURMD_NODENAME \$(date +%s%N)"' "$GLOO" || echo "STEP FAILED \$i" &
done
wait
EOF2
}

# check_concurrent FILE: 8 steps, overlapping in time, 8 different ports,
# every rank's all_reduce OK.
check_concurrent() {
	local out=$1 last_start first_end
	! grep -q 'STEP FAILED' "$out" || false
	check_steps "$out" 8
	[ "$(awk '$1=="S"{print $4}' "$out" | sort -u | wc -l)" -eq 8 ]
	[ "$(grep -cE '^R [0-9]+ RANK [01]/2 node=n[12] result=3 OK$' "$out")" -eq 16 ]
	! grep -q FAIL "$out" || false
	# They really ran at the same time: the last start comes before the
	# first end.
	last_start=$(awk '$1=="S"{print $6}' "$out" | sort -n | tail -1)
	first_end=$(awk '$1=="E"{print $4}' "$out" | sort -n | head -1)
	[ "$last_start" -lt "$first_end" ]
}

@test "8 steps at once with reserved ports: 8 different MASTER_PORTs, every rendezvous succeeds" {
	t0=$(date +%s)
	run eight_steps ""
	out=${lines[0]}
	cat "$out"
	[ "$status" -eq 0 ]
	check_concurrent "$out"
	! grep -qE '^S .* - [0-9]+$' "$out" || false
	echo "# 8 concurrent steps with reserved ports: ports $(awk '$1=="S"{print $4}' "$out" | sort -un | paste -sd, -), 16/16 ranks OK, $(($(date +%s) - t0)) s" >&3
}

@test "8 steps at once without reserved ports: 8 different derived MASTER_PORTs, every rendezvous succeeds" {
	t0=$(date +%s)
	run eight_steps "--resv-ports"
	out=${lines[0]}
	cat "$out"
	[ "$status" -eq 0 ]
	check_concurrent "$out"
	[ "$(grep -cE '^S .* - [0-9]+$' "$out")" -eq 16 ]
	echo "# 8 concurrent steps, derived ports: ports $(awk '$1=="S"{print $4}' "$out" | sort -un | paste -sd, -), 16/16 ranks OK, $(($(date +%s) - t0)) s" >&3
}

@test "8 jobs at once on the same 2 nodes (OverSubscribe=FORCE:8), reserved and derived ports: no two share a MASTER_PORT" {
	local ids=() id state f barrier=$BATS_FILE_TMPDIR/job8.started
	# Each task ends once all 16 have started (or after 60 s). With a
	# fixed sleep instead, a 24.11 controller that launched the batch
	# scripts in two groups 5 s apart ran two groups that never met.
	mkdir "$barrier"
	cat >job8-task.sh <<EOF2
#!/bin/bash
echo "S \$SLURM_JOB_ID.\$SLURM_STEP_ID \$SLURMD_NODENAME \$MASTER_PORT \${SLURM_STEP_RESV_PORTS:--} \$(date +%s%N)"
touch "$barrier/\$SLURM_JOB_ID.\$SLURMD_NODENAME"
for _ in \$(seq 1 240); do
	[ "\$(ls "$barrier" | wc -l)" -ge 16 ] && break
	sleep 0.25
done
echo "E \$SLURM_JOB_ID \$SLURMD_NODENAME \$(date +%s%N)"
EOF2
	for i in $(seq 1 8); do
		flag=""
		if [ $((i % 2)) -eq 0 ]; then
			flag="--resv-ports"
		fi
		f="$BATS_FILE_TMPDIR/job8-$i.out"
		id=$(sbatch --parsable -N2 -o "$f" --wrap "srun -N2 $flag --distenv bash $BATS_FILE_TMPDIR/job8-task.sh")
		ids+=("$id")
	done
	for id in "${ids[@]}"; do
		for _ in $(seq 1 240); do
			state=$(scontrol -o show job "$id" | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2)
			case "$state" in PENDING | RUNNING | CONFIGURING | COMPLETING) sleep 0.5 ;; *) break ;; esac
		done
		[ "$state" = COMPLETED ]
	done
	cat "$BATS_FILE_TMPDIR"/job8-*.out >"$BATS_FILE_TMPDIR/job8.all"
	cat "$BATS_FILE_TMPDIR/job8.all"
	check_steps "$BATS_FILE_TMPDIR/job8.all" 8
	[ "$(awk '$1=="S"{print $4}' "$BATS_FILE_TMPDIR/job8.all" | sort -u | wc -l)" -eq 8 ]
	last_start=$(awk '$1=="S"{print $6}' "$BATS_FILE_TMPDIR/job8.all" | sort -n | tail -1)
	first_end=$(awk '$1=="E"{print $4}' "$BATS_FILE_TMPDIR/job8.all" | sort -n | head -1)
	[ "$last_start" -lt "$first_end" ]
	echo "# 8 concurrent jobs (4 reserved, 4 derived): ports $(awk '$1=="S"{print $4}' "$BATS_FILE_TMPDIR/job8.all" | sort -un | paste -sd, -)" >&3
	nodes_idle
}
