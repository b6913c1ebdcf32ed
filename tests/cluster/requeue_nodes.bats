#!/usr/bin/env bats
# A requeued job on other nodes: Slurm schedules a requeued start like a
# new job, so with node-local disks (cluster.sh --node-local) its
# allocation may lack the checkpoints the run saved. The DPO template
# (the real template, the real LLaMA-Factory 0.9.5 of lf_real.bash,
# ZeRO-3 on 2 processes per node) never starts over silently then: it
# stops before training, naming the nodes that hold a checkpoint and
# those that do not.
# A 4-node cluster; the first start runs on n1 and n2, the requeued one
# on n1 and n3 (n2 drained: a partly overlapping allocation) or on n3 and
# n4 (disjoint). The requeue: USR1 as in llamafactory.bats, once the
# trainers have saved checkpoint-4 (the probe's pause).

load helpers
load lf_helpers
load lf_real

setup_file() { lf_real_file_setup 4; }
teardown_file() { cluster_file_teardown; }
setup() { lf_real_setup; }

# back in service whatever a test drained, also when it failed
teardown() {
	scontrol update NodeName=n2 State=RESUME 2>/dev/null || true
}

# first_start_then_requeue NAME NODES: the template on n1,n2 with
# output_dir $LOCAL/NAME, paused after checkpoint-4, warned, requeued;
# the requeued start then allowed on NODES only. Sets id to the job's id;
# a command of the test's own (not in $( ), where errexit would not
# reach its waits).
first_start_then_requeue() {
	local name=$1 nodes=$2
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" "$name.yaml" "output_dir=$LOCAL/$name"
	real_template dpo_full_zero3.sbatch "$name.sbatch" "$BATS_FILE_TMPDIR/$name.yaml" \
		"#SBATCH --signal=B:USR1@60" "#SBATCH --open-mode=append"
	# every trainer process says it started (the probe's argv line)
	id=$(DISTENV_TEST_PAUSE_AFTER=4 DISTENV_TEST_ENV_PROBE=WORLD_SIZE DPO_SAVE_GRACE=1 \
		submit "$name.sbatch" -w n1,n2)
	wait_line "$name.sbatch.out" 'paused after checkpoint-4' "$id"
	scancel --batch --signal=USR1 "$id"
	wait_line "$name.sbatch.out" "dpo: requeueing job $id" "$id"
	wait_state "$id" PENDING "$name.sbatch.out"
	# n2 drained while the job waits in the queue, as a failed node is
	scontrol update NodeName=n2 State=DRAIN Reason=distenv-test
	scontrol update JobId="$id" ReqNodeList="$nodes"
	wait_requeued "$id"
	wait_state "$id" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' "$name.sbatch.out"
}

@test "requeued onto a partly different allocation (n2 drained, n1 and n3): the job stops before training, naming n3 without a checkpoint and n1 with one" {
	local id
	first_start_then_requeue ov n1,n3
	cat ov.sbatch.out
	[ "$(job_field "$id" JobState)" = FAILED ]
	[ "$(job_field "$id" Restarts)" = 1 ]
	grep -q '^dpo: start 2 (restart 1 of at most 5)' ov.sbatch.out
	grep -qxF "dpo: nodes' newest complete checkpoints: n1 $LOCAL/ov/checkpoint-4,n3 none" ov.sbatch.out
	grep -qF "dpo: restart 1: n3 of this allocation hold no complete checkpoint in output_dir, n1 do: training would start over from step 0 on a partial copy. Not training." ov.sbatch.out
	grep -qF 'DPO_FRESH_START=1 starts over knowingly' ov.sbatch.out
	# the restart trained nothing: the first start's 4 ranks, no more
	[ "$(grep -cE '^probe: rank [0-3] node=n[12] argv=' ov.sbatch.out)" -eq 4 ]
	refute grep -q 'Resuming training from checkpoint' ov.sbatch.out
	refute grep -q '^dpo: resume: ' ov.sbatch.out
}

@test "requeued onto a disjoint allocation (n3 and n4): no node holds a checkpoint; the job stops before training and says so" {
	local id
	first_start_then_requeue dj n3,n4
	cat dj.sbatch.out
	[ "$(job_field "$id" JobState)" = FAILED ]
	[ "$(job_field "$id" Restarts)" = 1 ]
	grep -qxF "dpo: nodes' newest complete checkpoints: n3 none,n4 none" dj.sbatch.out
	grep -qF "dpo: restart 1: no node of this allocation (n[3-4]) holds a complete checkpoint in output_dir: training would start over from step 0. Not training." dj.sbatch.out
	[ "$(grep -cE '^probe: rank [0-3] node=n[12] argv=' dj.sbatch.out)" -eq 4 ]
	# the run's checkpoint is still where it was saved
	run srun -w n1 -N1 ls "$LOCAL/dj"
	[[ "$output" == *checkpoint-4* ]]
}
