#!/usr/bin/env bats
# templates/check_dpo_offpolicy.py with the real LLaMA-Factory 0.9.5 stack
# (the venv of contrib/lfstack/venv.sh) and the tiny model of
# contrib/lfstack/tiny_model.py. With random weights that model gives
# every text about -ln(vocabulary) nats per token, its own samples too,
# so nothing could be told apart: setup_file first trains it on the
# sample pairs' rejected answers (a few hundred steps, seconds of CPU)
# until they are what it writes itself, and trains a second model the
# same way on the chosen answers (another model, which writes those).
# Then pairs whose rejected answers are the first model's pass, and the
# same prompts with rejected answers from another source (the chosen
# answers' words shuffled, random characters, the second model's samples
# through templates/dpo_sample.py) are listed. No root, no cluster.

bats_require_minimum_version 1.5.0

load venv
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1

setup_file() {
	[ -x "$PY" ] || return 0
	local top=$BATS_TEST_DIRNAME/../.. d=$BATS_FILE_TMPDIR
	"$PY" "$top/contrib/lfstack/tiny_model.py" "$top/templates/data/dpo_pairs.json" "$d/random" >/dev/null 2>&1
	"$PY" - "$top" "$d" <<'EOF_PY' 2>/dev/null
import json, os, random, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
top, d = sys.argv[1:]
rows = json.load(open(os.path.join(top, "templates", "data", "dpo_pairs.json")))
tok = AutoTokenizer.from_pretrained(os.path.join(d, "random"))
# the qwen template's turns (LLaMA-Factory's data/template.py), with its
# default system prompt
system = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


def train(key, out):
    """The random model trained on each prompt's KEY answer, saved as OUT."""
    model = AutoModelForCausalLM.from_pretrained(os.path.join(d, "random"))
    seqs = []
    for r in rows:
        p = tok.encode(f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{r['instruction']}<|im_end|>\n"
                       "<|im_start|>assistant\n")
        a = tok.encode(r[key] + "<|im_end|>\n")
        seqs.append((p + a, [-100] * len(p) + a))
    n = max(len(s[0]) for s in seqs)
    ids = torch.tensor([s[0] + [tok.pad_token_id] * (n - len(s[0])) for s in seqs])
    labels = torch.tensor([s[1] + [-100] * (n - len(s[1])) for s in seqs])
    torch.manual_seed(0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(300):
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.save_pretrained(os.path.join(d, out))
    tok.save_pretrained(os.path.join(d, out))
    print(out, "loss", float(loss))


# the starting model writes the rejected answers; another the chosen ones
train("rejected", "model")
train("chosen", "other")
# the data sets: the model's own rejected answers; the chosen answers'
# words shuffled; random printable characters
os.makedirs(os.path.join(d, "data"))
rng = random.Random(3)
words = " ".join(r["chosen"] for r in rows).split()
shuffled, noise = [], []
for r in rows:
    rng.shuffle(words)
    shuffled.append(dict(r, rejected=" ".join(words[:10])))
    noise.append(dict(r, rejected="".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789 ") for _ in range(60))))
info = {}
for name, data in (("own", rows), ("shuffled", shuffled), ("noise", noise)):
    json.dump(data, open(os.path.join(d, "data", name + ".json"), "w"), indent=1)
    info[name] = {"file_name": name + ".json", "ranking": True, "columns": {
        "prompt": "instruction", "query": "input", "chosen": "chosen", "rejected": "rejected"}}
json.dump(info, open(os.path.join(d, "data", "dataset_info.json"), "w"), indent=1)
EOF_PY
}

setup() {
	need_venv
	D=$BATS_FILE_TMPDIR
	CHECK=$BATS_TEST_DIRNAME/../../templates/check_dpo_offpolicy.py
	W=$BATS_TEST_TMPDIR
	export HF_DATASETS_CACHE=$BATS_TEST_TMPDIR/hf
}

# write_yaml DATASET: a DPO training YAML as the templates' (with the
# training-only keys the check leaves out)
write_yaml() {
	cat <<EOF
model_name_or_path: $BATS_FILE_TMPDIR/model
stage: dpo
do_train: true
finetuning_type: full
dataset: $1
dataset_dir: $BATS_FILE_TMPDIR/data
template: qwen
cutoff_len: 1024
bf16: true
deepspeed: $BATS_TEST_TMPDIR/not-needed.json
output_dir: $BATS_TEST_TMPDIR/out
EOF
}

@test "rejected answers the model writes itself: within reach of its own samples, exit 0" {
	write_yaml own >"$W/own.yaml"
	run "$PY" "$CHECK" --max-new-tokens 64 "$W/own.yaml"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "check_dpo_offpolicy: $W/own.yaml: 16 of 16 pairs, 8 answers of the model's own; mean log-probability per answer token (nats) under the starting model" <<<"$output"
	grep -qE '^  rejected +16 +-0\.[0-9]+ +-0\.[0-9]+ +-0\.[0-9]+$' <<<"$output"
	grep -qE '^  own +8 +-0\.[0-9]+ +-0\.[0-9]+ +-0\.[0-9]+$' <<<"$output"
	grep -qx "check_dpo_offpolicy: ok: every rejected answer is within reach of the model's own" <<<"$output"
	# the scratch output_dir, not the YAML's: nothing written there
	[ ! -e "$W/out" ]
}

@test "rejected answers from another source (shuffled words, random characters): listed with the fix, exit 3" {
	local set
	for set in shuffled noise; do
		write_yaml "$set" >"$W/$set.yaml"
		run "$PY" "$CHECK" --max-new-tokens 64 "$W/$set.yaml"
		echo "$output"
		[ "$status" -eq 3 ]
		grep -qx "check_dpo_offpolicy: warning: 16 of 16 rejected answers are far below the model's own:" <<<"$output"
		[ "$(grep -cE '^  pair [0-9]+: rejected -[0-9.]+, chosen -[0-9.]+: ".*"$' <<<"$output")" -eq 16 ]
		grep -qF 'Sample the rejected answers from the starting model' <<<"$output"
	done
	# --show caps the list; --pairs draws fewer
	run "$PY" "$CHECK" --max-new-tokens 64 --show 2 --pairs 5 "$W/noise.yaml"
	[ "$status" -eq 3 ]
	grep -qx "check_dpo_offpolicy: warning: 5 of 5 rejected answers are far below the model's own:" <<<"$output"
	grep -qx '  ... and 3 more (--show 0 lists all)' <<<"$output"
}

@test "not a DPO YAML, no YAML, bad options: exit 1 or 2 with what to do" {
	write_yaml own | sed 's/^stage: dpo/stage: sft/' >"$W/sft.yaml"
	run "$PY" "$CHECK" "$W/sft.yaml"
	[ "$status" -eq 1 ]
	[ "$output" = "check_dpo_offpolicy: error: $W/sft.yaml: not a DPO training YAML (stage: sft). Give the YAML of the DPO run" ]
	run "$PY" "$CHECK" "$W/none.yaml"
	[ "$status" -eq 1 ]
	[[ "$output" == "check_dpo_offpolicy: error: $W/none.yaml: cannot read the training YAML: "*"No such file or directory"* ]]
	run "$PY" "$CHECK" --pairs 0 "$W/none.yaml"
	[ "$status" -eq 2 ]
}

# dpo_check_data of templates/dpo_job.bash on a first start, with the
# #SBATCH line that names the YAML, as a template's dpo_job_start runs it
job_check() {
	printf '#!/bin/bash\n#SBATCH --distenv-lf-config=%s\n' "$1" >"$BATS_TEST_TMPDIR/job.sbatch"
	bash -c 'set -euo pipefail; source "$1"; restarts=0; dpo_check_data "$2"; echo "dpo: training"' \
		bash "$BATS_TEST_DIRNAME/../../templates/dpo_job.bash" "$BATS_TEST_TMPDIR/job.sbatch"
}

@test "dpo_job.bash before training: DPO_OFFPOLICY_PAIRS runs it; strict stops (exit 3), warn goes on" {
	write_yaml noise >"$W/noise.yaml"
	DPO_PYTHON=$PY DPO_OFFPOLICY_PAIRS=4 DPO_DATA_CHECK=strict run job_check "$W/noise.yaml"
	echo "$output"
	[ "$status" -eq 3 ]
	grep -qx "check_dpo_offpolicy: warning: 4 of 4 rejected answers are far below the model's own:" <<<"$output"
	grep -qF 'dpo: the off-policy check did not pass (exit 3, see above) and DPO_DATA_CHECK=strict: not training' <<<"$output"
	DPO_PYTHON=$PY DPO_OFFPOLICY_PAIRS=4 DPO_DATA_CHECK=warn run job_check "$W/noise.yaml"
	[ "$status" -eq 0 ]
	grep -qF 'dpo: warning: the off-policy check did not pass (exit 3, see above); training anyway.' <<<"$output"
	grep -qx 'dpo: training' <<<"$output"
	# unset: only the length check runs
	DPO_PYTHON=$PY DPO_DATA_CHECK=strict run job_check "$W/noise.yaml"
	[ "$status" -eq 0 ]
	[ "$(grep -c check_dpo_offpolicy <<<"$output")" -eq 0 ]
}

@test "a real DPO run on the off-policy pairs: check_dpo_steps reads LLaMA-Factory's own logs and warns" {
	write_yaml shuffled | grep -v '^bf16\|^deepspeed' >"$W/train.yaml"
	printf '%s\n' "overwrite_output_dir: true" "per_device_train_batch_size: 4" "learning_rate: 1.0e-3" \
		"max_steps: 6" "logging_steps: 1" "save_steps: 3" "report_to: none" "pref_beta: 0.1" >>"$W/train.yaml"
	run "$VENV/bin/llamafactory-cli" train "$W/train.yaml"
	echo "$output" >"$W/job.log"
	[ "$status" -eq 0 ]
	# the key names the report reads are the trainer's, in both places
	run python3 "$BATS_TEST_DIRNAME/../../templates/check_dpo_steps.py" "$W/out"
	echo "$output"
	[ "$status" -eq 3 ]
	grep -qx "check_dpo_steps: $W/out/trainer_state.json: the first 6 of 6 logged DPO steps" <<<"$output"
	grep -qE '^ +1 +0\.693 +0\.000 +0\.000 +0\.000 +0\.000 +-[0-9.]+ +-[0-9.]+$' <<<"$output"
	grep -qF "check_dpo_steps: warning: accuracy 1.00 at step" <<<"$output"
	run python3 "$BATS_TEST_DIRNAME/../../templates/check_dpo_steps.py" "$W/job.log"
	[ "$status" -eq 3 ]
	grep -qx "check_dpo_steps: $W/job.log: the first 6 of 6 logged DPO steps" <<<"$output"
}

@test "rejected answers another model wrote (one trained on the chosen answers, sampled through dpo_sample.py): listed, exit 3" {
	local top=$BATS_TEST_DIRNAME/../..
	"$PY" -c 'import json, sys
rows = json.load(open(sys.argv[1]))
json.dump([{"instruction": r["instruction"], "input": r["input"], "chosen": r["chosen"]} for r in rows], open(sys.argv[2], "w"))' \
		"$top/templates/data/dpo_pairs.json" "$W/prompts.json"
	write_yaml x | sed "s|^model_name_or_path: .*|model_name_or_path: $D/other|" >"$W/other.yaml"
	run "$PY" "$top/templates/dpo_sample.py" sample --node-rank 0 --nnodes 1 --max-new-tokens 64 \
		"$W/other.yaml" "$W/prompts.json" "$W/other"
	[ "$status" -eq 0 ]
	run "$PY" "$top/templates/dpo_sample.py" merge --name other_model "$W/prompts.json" "$W/other"
	[ "$status" -eq 0 ]
	write_yaml other_model | sed "s|^dataset_dir: .*|dataset_dir: $W/other|" >"$W/check.yaml"
	run "$PY" "$CHECK" --max-new-tokens 64 "$W/check.yaml"
	echo "$output"
	[ "$status" -eq 3 ]
	grep -qx "check_dpo_offpolicy: warning: 16 of 16 rejected answers are far below the model's own:" <<<"$output"
	grep -qF 'Sample the rejected answers from the starting model' <<<"$output"
}
