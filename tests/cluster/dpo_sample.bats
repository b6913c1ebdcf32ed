#!/usr/bin/env bats
# The path of DPO pairs that are the model's own on the namespace cluster,
# with the real LLaMA-Factory 0.9.5 of lf_real.bash: templates/
# dpo_sample.sbatch samples the rejected answers on 2 nodes (each node its
# share by distenv's NODE_RANK/NNODES) and merges them; the corrections
# are written; check_dpo_offpolicy.py finds the pairs within the model's
# reach; the DPO template trains on them. A resubmitted sampling job
# samples nothing again. The sampling template runs unchanged
# (template_copy), from a directory where its relative paths (the DPO
# YAML, the prompts, the output) are the test's.

load helpers
load lf_helpers
load lf_real

setup_file() { lf_real_file_setup 2; }
teardown_file() { cluster_file_teardown; }
setup() { lf_real_setup; }

@test "dpo_sample.sbatch on 2 nodes: each node samples its share, the merge writes pairs; corrected, the off-policy check passes them and the DPO template trains on them; resubmitted, nothing is sampled again" {
	local id state n
	# the sampling template's relative paths: its DPO YAML (the tiny
	# model), data/prompts.json (the 16 prompts of the sample data; the
	# odd rows keep their chosen answer) and data/own_samples
	mkdir -p templates/lf data
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" templates/lf/qwen2_72b_full_dpo.yaml "output_dir=$LOCAL/unused"
	"$VENV/bin/python" - "$TPL/data/dpo_pairs.json" data/prompts.json <<'EOF_PY'
import json, sys
rows = json.load(open(sys.argv[1]))
json.dump([dict({"instruction": r["instruction"], "input": r["input"]}, **({"chosen": r["chosen"]} if i % 2 else {}))
           for i, r in enumerate(rows)], open(sys.argv[2], "w"), indent=1)
EOF_PY
	n=$("$VENV/bin/python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' data/prompts.json)
	[ "$n" -eq 16 ]
	template_copy "$TPL/dpo_sample.sbatch" sample.sbatch "#SBATCH --job-name=dpo-sample" \
		"#SBATCH --nodes=2" "#SBATCH --time=5" "#SBATCH --open-mode=append"
	id=$(DPO_PYTHON="$VENV/bin/python" DPO_SAMPLE_MAX_NEW_TOKENS=8 submit sample.sbatch)
	state=$(wait_job "$id")
	cat sample.sbatch.out
	[ "$state" = COMPLETED ]
	# each node its share, by the NODE_RANK distenv exported there
	grep -qx "dpo_sample: node 0 of 2: 8 of 16 prompts, 0 already in data/own_samples/samples.rank-0.jsonl, 8 to sample" sample.sbatch.out
	grep -qx "dpo_sample: node 1 of 2: 8 of 16 prompts, 0 already in data/own_samples/samples.rank-1.jsonl, 8 to sample" sample.sbatch.out
	grep -qx "dpo_sample: 16 pairs in data/own_samples/dpo_own_samples.json, entry 'dpo_own_samples' in data/own_samples/dataset_info.json" sample.sbatch.out
	grep -qx 'dpo_sample: 8 pairs have no chosen answer yet: write each as a correction of its rejected sample before training' sample.sbatch.out

	# the corrections: here the sample with a word added
	"$VENV/bin/python" -c 'import json, sys
p = json.load(open(sys.argv[1]))
for r in p:
    r["chosen"] = r["chosen"] or r["rejected"] + " Corrected."
json.dump(p, open(sys.argv[1], "w"))' data/own_samples/dpo_own_samples.json
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" own.yaml "output_dir=$LOCAL/own" \
		"dataset_dir=$PWD/data/own_samples" dataset=dpo_own_samples
	# the rejected answers are the model's own: nothing listed
	run "$VENV/bin/python" "$TPL/check_dpo_offpolicy.py" --max-new-tokens 16 own.yaml
	echo "$output"
	[ "$status" -eq 0 ]

	real_template dpo_full_zero3.sbatch train.sbatch "$BATS_FILE_TMPDIR/own.yaml"
	id=$(submit train.sbatch)
	state=$(wait_job "$id")
	cat train.sbatch.out
	trained "$state" train.sbatch.out
	# the 16 pairs: 4 ranks, batch 1, 4 steps an epoch, 2 epochs
	grep -qE "Num examples = 16$" train.sbatch.out
	grep -qE "Total optimization steps = 8$" train.sbatch.out

	# resubmitted: every prompt answered, nothing sampled
	id=$(DPO_PYTHON="$VENV/bin/python" submit sample.sbatch)
	state=$(wait_job "$id")
	cat sample.sbatch.out
	[ "$state" = COMPLETED ]
	grep -qx "dpo_sample: node 0 of 2: 8 of 16 prompts, 8 already in data/own_samples/samples.rank-0.jsonl, 0 to sample" sample.sbatch.out
	grep -qx "dpo_sample: node 1 of 2: 8 of 16 prompts, 8 already in data/own_samples/samples.rank-1.jsonl, 0 to sample" sample.sbatch.out
}
