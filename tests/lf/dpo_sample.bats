#!/usr/bin/env bats
# templates/dpo_sample.py and templates/dpo_sample.sbatch with the real
# LLaMA-Factory 0.9.5 stack (the venv of contrib/lfstack/venv.sh) and the
# tiny random model of contrib/lfstack/tiny_model.py: each node's share
# of the prompts, the skip of answered prompts on a restart, the merge
# into LLaMA-Factory's pairwise form, which LLaMA-Factory's own
# get_dataset then reads as pairs. The template runs outside Slurm with an
# srun that starts its command once per node of a two-node job. No root,
# no cluster.

bats_require_minimum_version 1.5.0

load venv
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1

setup_file() {
	[ -x "$PY" ] || return 0
	local top=$BATS_TEST_DIRNAME/../.. d=$BATS_FILE_TMPDIR
	"$PY" "$top/contrib/lfstack/tiny_model.py" "$top/templates/data/dpo_pairs.json" "$d/model" >/dev/null 2>&1
	# five prompts; rows 1 and 3 keep a chosen answer
	"$PY" - "$top/templates/data/dpo_pairs.json" "$d/prompts.json" <<'EOF_PY'
import json, sys
rows = json.load(open(sys.argv[1]))[:5]
json.dump([dict({"instruction": r["instruction"], "input": r["input"]}, **({"chosen": r["chosen"]} if i % 2 else {}))
           for i, r in enumerate(rows)], open(sys.argv[2], "w"), indent=1)
EOF_PY
	printf 'model_name_or_path: %s\nstage: dpo\ndo_train: true\nfinetuning_type: full\ndataset: x\ntemplate: qwen\ncutoff_len: 1024\noutput_dir: %s\n' \
		"$d/model" "$d/unused" >"$d/run.yaml"
}

setup() {
	need_venv
	D=$BATS_FILE_TMPDIR
	TOOL=$BATS_TEST_DIRNAME/../../templates/dpo_sample.py
	W=$BATS_TEST_TMPDIR
	export HF_DATASETS_CACHE=$BATS_TEST_TMPDIR/hf
}

# indices SHARD: the prompt indices a shard holds, one line
indices() {
	"$PY" -c 'import json, sys; print(*sorted(json.loads(l)["index"] for l in open(sys.argv[1])))' "$1"
}

@test "each node its share by NODE_RANK/NNODES; a restart skips what is done; merge waits for all shards" {
	run "$PY" "$TOOL" sample --node-rank 0 --nnodes 2 --max-new-tokens 8 "$D/run.yaml" "$D/prompts.json" "$W/out"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "dpo_sample: node 0 of 2: 3 of 5 prompts, 0 already in $W/out/samples.rank-0.jsonl, 3 to sample" <<<"$output"
	[ "$(indices "$W/out/samples.rank-0.jsonl")" = "0 2 4" ]
	run "$PY" "$TOOL" merge "$D/prompts.json" "$W/out"
	[ "$status" -eq 3 ]
	[ "$output" = "dpo_sample: 2 of 5 prompts have no sample in $W/out (first: 1, 3): run the sample step again (it skips what is done)" ]
	# a restart: a line cut by the kill is redone, the others kept
	head -n 2 "$W/out/samples.rank-0.jsonl" >"$W/cut"
	printf '{"index": 4, "rejec' >>"$W/cut"
	cp "$W/cut" "$W/out/samples.rank-0.jsonl"
	run "$PY" "$TOOL" sample --node-rank 0 --nnodes 2 --max-new-tokens 8 "$D/run.yaml" "$D/prompts.json" "$W/out"
	[ "$status" -eq 0 ]
	grep -qx "dpo_sample: node 0 of 2: 3 of 5 prompts, 2 already in $W/out/samples.rank-0.jsonl, 1 to sample" <<<"$output"
	[ "$(grep -c '"index": 4, "rejected"' "$W/out/samples.rank-0.jsonl")" -eq 1 ]
	run "$PY" "$TOOL" sample --node-rank 2 --nnodes 2 "$D/run.yaml" "$D/prompts.json" "$W/out"
	[ "$status" -eq 2 ]
}

@test "dpo_sample.sbatch: two nodes sample, the merge writes pairs LLaMA-Factory reads; resubmitted, nothing is sampled again" {
	local top=$BATS_TEST_DIRNAME/../..
	mkdir -p "$W/bin" "$W/job/templates"
	# srun: the command once per node of a two-node job, as distenv exports
	printf '#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\nfor r in 0 1; do NODE_RANK=$r NNODES=2 "$@" || exit; done\n' >"$W/bin/srun"
	chmod +x "$W/bin/srun"
	ln -s "$top"/templates/dpo_sample.py "$top"/templates/check_dpo_offpolicy.py "$W/job/templates/"
	sed -e "s|^config=[^ ]*|config=$D/run.yaml|" -e "s|^prompts=[^ ]*|prompts=$D/prompts.json|" \
		-e "s|^out=[^ ]*|out=$W/job/own|" "$top/templates/dpo_sample.sbatch" >"$W/job/sample.sbatch"
	cd "$W/job"
	PATH=$W/bin:$PATH DPO_PYTHON=$PY DPO_SAMPLE_MAX_NEW_TOKENS=8 SLURM_JOB_ID=7 SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST=n[1-2] \
		run bash sample.sbatch
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "dpo_sample: 5 pairs in $W/job/own/dpo_own_samples.json, entry 'dpo_own_samples' in $W/job/own/dataset_info.json" <<<"$output"
	grep -qx 'dpo_sample: 3 pairs have no chosen answer yet: write each as a correction of its rejected sample before training' <<<"$output"
	[ "$(indices own/samples.rank-1.jsonl)" = "1 3" ]
	# the corrections written, LLaMA-Factory's own preprocessing reads 5 pairs
	"$PY" -c 'import json, sys; p = json.load(open(sys.argv[1])); [r.update(chosen=r["chosen"] or "Corrected.") for r in p]; json.dump(p, open(sys.argv[1], "w"))' own/dpo_own_samples.json
	sed -e "s|^dataset: x|dataset: dpo_own_samples|" "$D/run.yaml" >lf.yaml
	echo "dataset_dir: $W/job/own" >>lf.yaml
	run "$PY" - lf.yaml "$W/lfout" <<'EOF_PY'
import contextlib, io, sys, yaml
from llamafactory.data import get_dataset, get_template_and_fix_tokenizer
from llamafactory.hparams import get_train_args
from llamafactory.model import load_tokenizer
cfg = dict(yaml.safe_load(open(sys.argv[1])), output_dir=sys.argv[2], report_to="none")
model_args, data_args, training_args, _, _ = get_train_args(cfg)
tm = load_tokenizer(model_args)
template = get_template_and_fix_tokenizer(tm["tokenizer"], data_args)
with contextlib.redirect_stdout(io.StringIO()):
    pairs = get_dataset(template, model_args, data_args, training_args, stage="rm", **tm)["train_dataset"]
print("PAIRS", len(pairs))
EOF_PY
	grep -qx 'PAIRS 5' <<<"$output"
	# resubmitted: every prompt answered, nothing sampled
	PATH=$W/bin:$PATH DPO_PYTHON=$PY SLURM_JOB_ID=8 SLURM_JOB_NUM_NODES=2 SLURM_JOB_NODELIST=n[1-2] run bash sample.sbatch
	[ "$status" -eq 0 ]
	grep -qx "dpo_sample: node 1 of 2: 2 of 5 prompts, 2 already in $W/job/own/samples.rank-1.jsonl, 0 to sample" <<<"$output"
}

@test "the sampling settings reach generate: --top-k 1 gives the same answers for any seed, the default another answer for another seed; bad settings exit 2" {
	local s
	for s in 1 2; do
		run "$PY" "$TOOL" sample --node-rank 0 --nnodes 2 --max-new-tokens 8 --seed "$s" --top-k 1 \
			"$D/run.yaml" "$D/prompts.json" "$W/greedy-$s"
		[ "$status" -eq 0 ]
		run "$PY" "$TOOL" sample --node-rank 0 --nnodes 2 --max-new-tokens 8 --seed "$s" \
			"$D/run.yaml" "$D/prompts.json" "$W/own-$s"
		[ "$status" -eq 0 ]
	done
	cmp "$W/greedy-1/samples.rank-0.jsonl" "$W/greedy-2/samples.rank-0.jsonl"
	run cmp -s "$W/own-1/samples.rank-0.jsonl" "$W/own-2/samples.rank-0.jsonl"
	[ "$status" -eq 1 ]
	for bad in "--temperature 0" "--top-p 1.5" "--top-k -1" "--repetition-penalty 0"; do
		# shellcheck disable=SC2086 # an option and its value
		run "$PY" "$TOOL" sample --node-rank 0 --nnodes 2 $bad "$D/run.yaml" "$D/prompts.json" "$W/bad"
		[ "$status" -eq 2 ]
		[[ "$output" == *"need --temperature > 0, 0 < --top-p <= 1, --top-k >= 0 (0: off) and --repetition-penalty > 0"* ]]
	done
}
