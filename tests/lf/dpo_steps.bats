#!/usr/bin/env bats
# templates/check_dpo_steps.py on synthetic logs in the shapes LLaMA-Factory
# 0.9.5 writes them: the Trainer's log_history entries (trainer_state.json,
# and the dicts rank 0 prints to the job log) with the DPO trainer's keys
# (train/dpo/trainer.py), and trainer_log.jsonl (train/callbacks.py,
# LogCallback.on_log: accuracy only). Standard library; no venv needed.

bats_require_minimum_version 1.5.0

setup_file() {
	python3 - "$BATS_FILE_TMPDIR" <<'EOF_PY'
import json, os, sys
d = sys.argv[1]
beta = 0.1

def entry(step, acc, fall_c, fall_r, start_c=-300.0, start_r=-320.0):
    # rewards are beta times the change of the log-probability since the
    # reference model (the start); logps are the policy's own
    rc, rr = -beta * fall_c, -beta * fall_r
    return {"loss": 0.69 - 0.05 * step, "grad_norm": 1.0, "learning_rate": 1e-6,
            "rewards/chosen": rc, "rewards/rejected": rr, "rewards/accuracies": acc,
            "rewards/margins": rc - rr, "logps/chosen": start_c - fall_c, "logps/rejected": start_r - fall_r,
            "logits/chosen": 0.1, "logits/rejected": 0.1, "epoch": step / 100, "step": step}

# off-policy pairs: accuracy 1.0 by step 3, rejected falls 60 nats, chosen 5
saturating = [entry(s, a, fc, fr) for s, a, fc, fr in
              [(1, 0.5, 0.5, 2), (2, 0.9, 1, 15), (3, 1.0, 3, 40), (4, 1.0, 5, 60), (5, 1.0, 5, 80)]]
# on-policy pairs: accuracy climbs slowly, both fall together
healthy = [entry(s, a, fc, fr) for s, a, fc, fr in
           [(1, 0.4, 0.2, 0.3), (2, 0.55, 1, 1.5), (3, 0.6, 2, 3), (4, 0.65, 3, 4.5), (5, 0.7, 4, 6)]]
# accuracy saturates, but chosen falls as fast as rejected
together = [entry(s, 1.0, 30 * s, 35 * s) for s in range(1, 6)]
for name, rows in (("saturating", saturating), ("healthy", healthy), ("together", together)):
    with open(os.path.join(d, name + ".jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    # an eval entry in between: not a training step
    with open(os.path.join(d, name + "_state.json"), "w") as f:
        json.dump({"global_step": 5, "log_history": rows[:2] + [{"eval_loss": 0.5, "step": 2}] + rows[2:]},
                  f, indent=2)
# the job log: tqdm's carriage returns, the dicts ProgressCallback writes
# (trainer_callback.py of the pinned transformers)
with open(os.path.join(d, "job.log"), "w") as f:
    f.write("dpo: job 7 on 2 nodes\n")
    for r in saturating:
        # transformers 5 writes floats as text, 4 significant digits
        f.write(" 20%|##        | 1/5 [00:01<00:04]\r"
                + str({k: f"{v:.4g}" if isinstance(v, float) else v for k, v in r.items() if k != "step"}) + "\n")
# an output_dir: a checkpoint holding the first three steps, the newer
# trainer_log.jsonl with five (accuracy only)
out = os.path.join(d, "out")
os.makedirs(os.path.join(out, "checkpoint-3"))
json.dump({"log_history": saturating[:3]}, open(os.path.join(out, "checkpoint-3", "trainer_state.json"), "w"))
with open(os.path.join(out, "trainer_log.jsonl"), "w") as f:
    for r in saturating:
        f.write(json.dumps({"current_steps": r["step"], "total_steps": 100, "loss": r["loss"],
                            "accuracy": r["rewards/accuracies"], "lr": 1e-6, "epoch": r["epoch"],
                            "percentage": r["step"], "elapsed_time": "0:00:01",
                            "remaining_time": "0:01:00"}) + "\n")
os.makedirs(os.path.join(d, "jsonl_only"))
os.link(os.path.join(out, "trainer_log.jsonl"), os.path.join(d, "jsonl_only", "trainer_log.jsonl"))
os.makedirs(os.path.join(d, "empty"))
EOF_PY
}

setup() {
	D=$BATS_FILE_TMPDIR
	CHECK=$BATS_TEST_DIRNAME/../../templates/check_dpo_steps.py
}

@test "pairs separated by their source: accuracy 1.0 and the rejected log-probability collapsing warn, exit 3" {
	run python3 "$CHECK" "$D/saturating.jsonl"
	echo "$output"
	[ "$status" -eq 3 ]
	grep -qx "check_dpo_steps: $D/saturating.jsonl: the first 5 of 5 logged DPO steps" <<<"$output"
	grep -qE '^ +3 +0\.540 +1\.000 +3\.700 +-0\.300 +-4\.000 +-303\.000 +-360\.000$' <<<"$output"
	grep -qF "check_dpo_steps: warning: accuracy 1.00 at step 3 (>= 0.95) and the rejected answers' log-probability fell by 40.0 (from -320.0, 12%), the chosen one by 3.0 (>= 2.0x the chosen fall)" <<<"$output"
	grep -qF 'Sample the rejected answers from the starting model' <<<"$output"
}

@test "on-policy pairs: accuracy climbing slowly passes, exit 0" {
	run python3 "$CHECK" "$D/healthy.jsonl"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'check_dpo_steps: ok: accuracy stays under 0.95 in the first 5 logged steps' <<<"$output"
}

@test "trainer_state.json: the eval entry is not a step; --steps reads only the first ones" {
	run python3 "$CHECK" "$D/saturating_state.json"
	[ "$status" -eq 3 ]
	grep -qx "check_dpo_steps: $D/saturating_state.json: the first 5 of 5 logged DPO steps" <<<"$output"
	# two steps: accuracy 0.9 at most, not saturated
	run python3 "$CHECK" --steps 2 "$D/saturating_state.json"
	[ "$status" -eq 0 ]
	grep -qx "check_dpo_steps: $D/saturating_state.json: the first 2 of 5 logged DPO steps" <<<"$output"
}

@test "saturated accuracy with both log-probabilities falling together: a note, exit 0" {
	run python3 "$CHECK" "$D/together.jsonl"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "check_dpo_steps: note: accuracy 1.00 at step 1, but no collapse of the rejected answers' log-probability: not warned" <<<"$output"
	# a ratio of 1 counts this as a collapse
	run python3 "$CHECK" --fall-ratio 1 "$D/together.jsonl"
	[ "$status" -eq 3 ]
}

@test "the job log: the dicts rank 0 prints, inside tqdm's lines" {
	run python3 "$CHECK" "$D/job.log"
	echo "$output"
	[ "$status" -eq 3 ]
	grep -qx "check_dpo_steps: $D/job.log: the first 5 of 5 logged DPO steps" <<<"$output"
	# no step in the dicts: the Nth logged one; the values as rounded there
	grep -qE '^ +#3 +0\.540 +1\.000 +3\.700 +-0\.300 +-4\.000 +-303\.000 +-360\.000$' <<<"$output"
	grep -qF "check_dpo_steps: warning: accuracy 1.00 at step #3 (>= 0.95)" <<<"$output"
}

@test "output_dir: the checkpoint's trainer_state.json is read, not trainer_log.jsonl" {
	run python3 "$CHECK" "$D/out"
	echo "$output"
	[ "$status" -eq 3 ]
	grep -qx "check_dpo_steps: $D/out/checkpoint-3/trainer_state.json: the first 3 of 3 logged DPO steps" <<<"$output"
}

@test "trainer_log.jsonl alone: the accuracy, and a note that the log-probabilities are elsewhere" {
	run python3 "$CHECK" "$D/jsonl_only"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "check_dpo_steps: $D/jsonl_only/trainer_log.jsonl: the first 5 of 5 logged DPO steps" <<<"$output"
	grep -qF "check_dpo_steps: note: $D/jsonl_only/trainer_log.jsonl holds the accuracy only" <<<"$output"
	grep -qE '^ +3 +0\.540 +1\.000 +- +- +- +- +-$' <<<"$output"
}

@test "nothing logged yet, an unreadable path, bad options: exit 1 or 2 with what to do" {
	run python3 "$CHECK" "$D/empty"
	[ "$status" -eq 1 ]
	[ "$output" = "check_dpo_steps: error: $D/empty: no logged DPO steps (entries with loss and rewards/accuracies) yet. Run again after the first logging_steps, or give the job log" ]
	run python3 "$CHECK" "$D/none.jsonl"
	[ "$status" -eq 1 ]
	[ "$output" = "check_dpo_steps: error: $D/none.jsonl: cannot read: No such file or directory. Give output_dir, trainer_state.json, trainer_log.jsonl or the job log" ]
	printf '{"loss": 1,\n' >"$BATS_TEST_TMPDIR/broken.jsonl"
	run python3 "$CHECK" "$BATS_TEST_TMPDIR/broken.jsonl"
	[ "$status" -eq 1 ]
	[[ "$output" == "check_dpo_steps: error: $BATS_TEST_TMPDIR/broken.jsonl:1:"*": JSON syntax error: "* ]]
	run python3 "$CHECK" --steps 0 "$D/healthy.jsonl"
	[ "$status" -eq 2 ]
}

# dpo_check_steps RC of templates/dpo_job.bash, as dpo_job_train calls it
# after the training step, on a YAML whose output_dir is OUT
job_check() {
	printf 'stage: dpo\noutput_dir: "%s"  # the run\npref_beta: 0.1\n' "$1" >"$BATS_TEST_TMPDIR/run.yaml"
	# shellcheck disable=SC1091
	bash -c 'set -euo pipefail; source "$1"; dpo_lf_config=$2; dpo_check_steps "$3"; echo "dpo: trained"' \
		bash "$BATS_TEST_DIRNAME/../../templates/dpo_job.bash" "$BATS_TEST_TMPDIR/run.yaml" "$2"
}

@test "dpo_job.bash after training: warn goes on, strict fails a job that trained (exit 3), off is silent" {
	DPO_DATA_CHECK=warn run job_check "$D/out" 0
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qF "dpo: warning: the first steps show pairs separated by their source (see above); DPO_DATA_CHECK=strict fails the job instead." <<<"$output"
	grep -qx 'dpo: trained' <<<"$output"
	DPO_DATA_CHECK=strict run job_check "$D/out" 0
	[ "$status" -eq 3 ]
	grep -qF 'and DPO_DATA_CHECK=strict: failing the job (exit 3)' <<<"$output"
	# a training step that failed keeps its own status (the caller's exit)
	DPO_DATA_CHECK=strict run job_check "$D/out" 1
	[ "$status" -eq 0 ]
	grep -qF "check_dpo_steps: warning: accuracy 1.00" <<<"$output"
	DPO_DATA_CHECK=off run job_check "$D/out" 0
	[ "$status" -eq 0 ]
	[ "$output" = "dpo: trained" ]
	# nothing logged: the report's error, and the job goes on
	DPO_DATA_CHECK=strict run job_check "$D/empty" 0
	[ "$status" -eq 0 ]
	grep -qx 'dpo: trained' <<<"$output"
}
