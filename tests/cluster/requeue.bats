#!/usr/bin/env bats
# Long runs: the DPO templates requeue themselves on the
# warning before the time limit and the next start resumes from the newest
# checkpoint that every node holds complete (--distenv-resume,
# plugin/lf/lf_ckpt.h), on the namespace Slurm cluster with node-local
# disks (cluster.sh --node-local) and the real CPU DPO trainer of
# tests/cluster/templates.bats (2 nodes x 2 processes).
#
# The warning: Slurm's time limit has minute granularity and the signal of
# --signal=B:USR1@SECONDS comes at most that early, so the tests send the
# same signal to the batch shell themselves (scancel --batch --signal=USR1),
# as slurmctld does when the time limit nears.
#
# A requeued job waits: Slurm 22.05 gives it a BeginTime about two minutes
# ahead (the credential lifetime, cred_expire in AuthInfo, default 120 s) so
# that its old steps' credentials expire first. The tests start it at once
# with `scontrol update JobId=... StartTime=now` (wait_requeued); a real job
# just starts two minutes later.

load helpers
load lf_helpers

LFBIN="$TOP/tests/cluster/lf/bin"
TINY="$TOP/tests/cluster/lf/tiny_model"

setup_file() { cluster_file_setup 2 "" --node-local "$DISTENV_CLUSTER_DIR/node-local"; }
teardown_file() { cluster_file_teardown; }

setup() {
	cluster_test_setup
	export PATH="$LFBIN:$PATH" TMPDIR="$LOCAL"
}

# rq_yaml OUT KEY=VALUE...: dpo_full_zero3's YAML with the test's model,
# data and small settings (test_yaml): 4 steps an epoch, a checkpoint
# every 4 steps.
rq_yaml() {
	local out=$1
	shift
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" "$out" "$@"
}

# usr1_after_line FILE REGEX ID: once a line of FILE matches, USR1 to the
# job's batch shell, as slurmctld sends it --signal's seconds before the
# time limit
usr1_after_line() {
	wait_line "$1" "$2" "$3" && scancel --batch --signal=USR1 "$3"
}

# rq_template OUT YAML: dpo_full_zero3.sbatch with only its parameter
# block replaced (2 CPU nodes, 2 processes each), the rest byte for byte.
rq_template() {
	template_copy "$TPL/dpo_full_zero3.sbatch" "$1" "#SBATCH --job-name=dpo-requeue" \
		"#SBATCH --nodes=2" "#SBATCH --time=10" "#SBATCH --distenv-nproc=2" \
		"#SBATCH --distenv-lf-config=$2" "#SBATCH --signal=B:USR1@60" \
		"#SBATCH --open-mode=append"
}

# losses FILE: "step loss" lines logged by rank 0, in order
losses() {
	grep -oE 'rank 0/4 node=n1: step [0-9]+/[0-9]+ loss=[0-9.]+' "$1" |
		sed -E 's/.*step ([0-9]+)\/[0-9]+ loss=/\1 /'
}

@test "template requeue: USR1 before the time limit requeues the job; checkpoint-8 cut on n2, so both nodes resume from checkpoint-4 and finish the 12 planned steps with the uninterrupted loss curve" {
	rq_yaml rq.yaml "output_dir=$LOCAL/rq" num_train_epochs=3.0
	rq_template rq.sbatch "$BATS_FILE_TMPDIR/rq.yaml"
	# the trainer's pause knob is for the first start only: the job's
	# environment is the same on every start
	mkdir -p bin
	cat >bin/llamafactory-cli <<EOF
#!/bin/bash
if [ "\${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then unset DPO_TEST_PAUSE_AFTER; fi
exec "$LFBIN/llamafactory-cli" "\$@"
EOF
	chmod +x bin/llamafactory-cli
	export PATH="$BATS_FILE_TMPDIR/bin:$PATH"
	# first start: pause after checkpoint-8, then "the time limit nears"
	id=$(DPO_TEST_PAUSE_AFTER=8 DPO_SAVE_GRACE=1 DPO_MAX_RESTARTS=2 \
		sbatch --parsable -o rq.out -e rq.out rq.sbatch)
	usr1_after_line rq.out 'paused after checkpoint-8' "$id"
	wait_line rq.out "dpo: requeueing job $id \(restart 1 of at most 2\)" "$id"
	wait_state "$id" PENDING rq.out
	# the save of checkpoint-8 was cut on n2: rank 3's optimizer state
	# never reached the disk
	srun -w n2 -N1 rm "$LOCAL/rq/checkpoint-8/global_step8/bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt"
	wait_requeued "$id"
	wait_state "$id" 'COMPLETED|FAILED|CANCELLED|TIMEOUT' rq.out
	cat rq.out
	[ "$(job_field "$id" JobState)" = COMPLETED ]
	[ "$(job_field "$id" Restarts)" = 1 ]
	grep -q '^dpo: start 2 (restart 1 of at most 2)' rq.out
	# each node's view, and why n2 skipped checkpoint-8
	grep -qE "^distenv: n1: resume from checkpoint-8 \(newest complete on this node of 2\)$" rq.out
	grep -qE "^distenv: n2: resume from checkpoint-4 \(newest complete on this node of 2\); skipped checkpoint-8: partial, 2 file\(s\) missing here, first checkpoint-8/global_step8/bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt$" rq.out
	grep -qxF "dpo: nodes' newest complete checkpoints: n1 $LOCAL/rq/checkpoint-8,n2 $LOCAL/rq/checkpoint-4" rq.out
	grep -qxF "dpo: resume: $LOCAL/rq/checkpoint-4 (the newest checkpoint every node holds)" rq.out
	for r in 0 1 2 3; do
		grep -qE "rank $r/4 node=n[12]: resumed from checkpoint-4 at step 4 of 12" rq.out
	done
	grep -q 'done step 12' rq.out
	# the loss curve: steps 1-8, then 5-12 again from checkpoint-4; the
	# repeated steps match the first start's to the last digit, so the
	# restart adds no jump
	losses rq.out >all.losses
	cat all.losses
	[ "$(cut -d' ' -f1 all.losses | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 5 6 7 8 9 10 11 12 " ]
	diff <(sed -n '5,8p' all.losses) <(sed -n '9,12p' all.losses)
	# and the resumed curve (1-4, then 5-12) has no step larger than the
	# largest step of the uninterrupted part
	sed -n '1,4p;9,16p' all.losses | awk '
		NR > 1 { d = $2 - prev; if (d < 0) d = -d; if ($1 == 5) jump = d; else if (d > big) big = d }
		{ prev = $2 }
		END { print "restart step", jump, "largest other", big; exit !(jump <= big) }'
}

@test "template requeue: restart cap reached: USR1 is answered with a clear message and no requeue; training goes on until the job's end, which is final" {
	rq_yaml cap.yaml "output_dir=$LOCAL/cap"
	rq_template cap.sbatch "$BATS_FILE_TMPDIR/cap.yaml"
	id=$(DPO_TEST_PAUSE_AFTER=4 DPO_SAVE_GRACE=1 DPO_MAX_RESTARTS=0 \
		sbatch --parsable -o cap.out -e cap.out cap.sbatch)
	usr1_after_line cap.out 'paused after checkpoint-4' "$id"
	wait_line cap.out 'restart cap reached' "$id"
	# not requeued: still the first start, still running, the step intact
	sleep 3
	cat cap.out
	[ "$(job_field "$id" JobState)" = RUNNING ]
	[ "$(job_field "$id" Restarts)" = 0 ]
	refute grep -qE 'Terminated|aborted|FAILED' cap.out
	# the time limit ends it (here: scancel); nothing starts it again
	scancel "$id"
	wait_state "$id" 'CANCELLED|FAILED|COMPLETED|TIMEOUT' cap.out
	sleep 2
	cat cap.out
	[ "$(job_field "$id" JobState)" = CANCELLED ]
	[ "$(job_field "$id" Restarts)" = 0 ]
	grep -qF 'dpo: time limit near, restart cap reached (0 of 0 restarts): not requeued; training goes on until the time limit ends the job. Resubmit to continue from the newest checkpoint.' cap.out
	refute grep -q 'requeueing' cap.out
	[ "$(grep -c '^dpo: start ' cap.out)" -eq 1 ]
}

@test "template requeue: a step that ends while the trap waits is not requeued; a --signal lead beyond the time limit is reported at the start" {
	rq_yaml done.yaml "output_dir=$LOCAL/done"
	# A time limit of 1 minute under a lead of 900 s: the user's mistake.
	template_copy "$TPL/dpo_full_zero3.sbatch" done.sbatch "#SBATCH --job-name=dpo-done" \
		"#SBATCH --nodes=2" "#SBATCH --time=1" "#SBATCH --distenv-nproc=2" \
		"#SBATCH --distenv-lf-config=$BATS_FILE_TMPDIR/done.yaml" \
		"#SBATCH --signal=B:USR1@900" "#SBATCH --open-mode=append"
	# training that ends 4 s after it started, as the last steps of a run do
	mkdir -p donebin
	printf '#!/bin/bash\necho "TRAIN started on $SLURMD_NODENAME"\nsleep 4\necho "TRAIN done on $SLURMD_NODENAME"\n' >donebin/llamafactory-cli
	chmod +x donebin/llamafactory-cli
	id=$(PATH="$PWD/donebin:$PATH" DPO_SAVE_GRACE=30 sbatch --parsable -o done.out -e done.out done.sbatch)
	usr1_after_line done.out 'TRAIN started' "$id"
	state=$(wait_job "$id")
	cat done.out
	[ "$state" = COMPLETED ]
	[ "$(job_field "$id" Restarts)" = 0 ]
	grep -qF 'dpo: warning: --signal=B:USR1@900 sends USR1 900s before the time limit, but the time limit is 1:00: the warning comes at the start, not before the end.' done.out
	# the warning is the first thing after the start lines
	[ "$(grep -n 'dpo: warning: --signal' done.out | cut -d: -f1)" -lt "$(grep -n 'TRAIN started' done.out | head -n 1 | cut -d: -f1)" ]
	grep -qF 'dpo: the training step ended before the time limit: not requeued' done.out
	refute grep -q 'requeueing' done.out
}

@test "template requeue: USR1 while the script still runs its first checks is answered, not fatal; the job completes" {
	rq_yaml early.yaml "output_dir=$LOCAL/early"
	rq_template early.sbatch "$BATS_FILE_TMPDIR/early.yaml"
	# squeue, which the limit check runs first, holds the script there
	# until the test has signalled it
	mkdir -p earlybin
	# (the template hides squeue's stderr: the mark goes to the job's output)
	printf '#!/bin/bash\necho "SQUEUE asked" >>%q\nsleep 4\nexec %q "$@"\n' "$PWD/early.out" "$(command -v squeue)" >earlybin/squeue
	printf '#!/bin/bash\necho "TRAIN ran on $SLURMD_NODENAME"\n' >earlybin/llamafactory-cli
	chmod +x earlybin/squeue earlybin/llamafactory-cli
	id=$(PATH="$PWD/earlybin:$PATH" sbatch --parsable -o early.out -e early.out early.sbatch)
	usr1_after_line early.out 'SQUEUE asked' "$id"
	state=$(wait_job "$id")
	cat early.out
	[ "$state" = COMPLETED ]
	[ "$(job_field "$id" Restarts)" = 0 ]
	grep -qF 'dpo: time limit near (USR1), but the training step is not running: not requeued' early.out
	[ "$(grep -c '^TRAIN ran on n' early.out)" -eq 2 ]
	refute grep -q 'requeueing' early.out
}

# fake_checkpoint DIR N: checkpoint-4 of a ZeRO-3 run of N ranks as
# Transformers + DeepSpeed lay it out (empty files: the preflight reads
# names, never contents), on storage every node sees
fake_checkpoint() {
	local dir=$1/checkpoint-4 r
	mkdir -p "$dir/global_step4"
	echo global_step4 >"$dir/latest"
	echo '{"global_step": 4}' >"$dir/trainer_state.json"
	for ((r = 0; r < $2; r++)); do
		: >"$dir/global_step4/zero_pp_rank_${r}_mp_rank_00_model_states.pt"
		: >"$dir/global_step4/bf16_zero_pp_rank_${r}_mp_rank_00_optim_states.pt"
		: >"$dir/rng_state_$r.pth"
	done
}

@test "resume preflight: a checkpoint saved by another data-parallel world size fails the step before launch, naming both sizes and the fix; the same size resumes" {
	local shared=$BATS_FILE_TMPDIR/ws site=$DISTENV_CLUSTER_DIR/etc/distenv-site.yaml n
	mkdir -p "$shared"
	printf 'version: 1\nstorage:\n  - {path: %s, type: shared}\n' "$shared" >"$site"
	chmod 0644 "$site"
	plugstack_with_distenv "config=$site"
	for n in 8 2 4; do
		rm -rf "$shared/out"
		fake_checkpoint "$shared/out" "$n"
		rq_yaml ws.yaml "output_dir=$shared/out"
		run srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=ws.yaml \
			--distenv-resume=auto bash -c 'echo "RESUME=$DISTENV_LF_RESUME"'
		echo "$output"
		case $n in
		8)
			[ "$status" -ne 0 ]
			grep -qE '^distenv: error: n[12]: node [01]: cannot resume from checkpoint-4: it was saved by a data-parallel world of at least 8 ranks \(global_step4 holds rank 7.s shards\), and this step has 4' <<<"$output"
			grep -q 'ds_to_universal.py' <<<"$output"
			refute grep -q '^RESUME=' <<<"$output"
			;;
		2)
			[ "$status" -ne 0 ]
			grep -qE '^distenv: error: n1: node 0: cannot resume from checkpoint-4: global_step4 holds the shards of ranks up to 1 only, and this step has 4 ranks' <<<"$output"
			refute grep -q '^RESUME=' <<<"$output"
			;;
		4)
			[ "$status" -eq 0 ]
			[ "$(grep -c "^RESUME=$shared/out/checkpoint-4$" <<<"$output")" -eq 2 ]
			;;
		esac
	done
}
