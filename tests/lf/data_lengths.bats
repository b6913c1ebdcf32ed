#!/usr/bin/env bats
# templates/check_data_lengths.py with the real LLaMA-Factory 0.9.5 stack
# (the venv of contrib/lfstack/venv.sh), on a byte-level BPE tokenizer
# trained on the templates' sample data (contrib/lfstack/tiny_model.py)
# with LLaMA-Factory's qwen template. The expected counts come from
# LLaMA-Factory's own preprocessing (get_dataset with stage "rm", as its
# DPO workflow calls it, cutoff_len too large to cut anything), not from
# the script's code path. No root, no cluster.

bats_require_minimum_version 1.5.0

load venv
# nothing from the network; the datasets cache of the oracle in the
# test's own directory
export HF_HUB_OFFLINE=1

setup_file() {
	[ -x "$PY" ] || return 0
	local top=$BATS_TEST_DIRNAME/../.. d=$BATS_FILE_TMPDIR
	"$PY" - "$top" "$d" <<'EOF'
import json, os, sys
top, d = sys.argv[1:]
sys.path.insert(0, os.path.join(top, "contrib", "lfstack"))
import tiny_model
sample = os.path.join(top, "templates", "data", "dpo_pairs.json")
tiny_model.make_tokenizer(tiny_model.corpus(sample), os.path.join(d, "model"))
rows = json.load(open(sample))
# alpaca: the sample pairs, then one whose chosen answer is long
os.makedirs(os.path.join(d, "alpaca"))
long = dict(rows[0], chosen=" ".join(["ZeRO-3 partitions parameters across ranks."] * 40))
json.dump(rows + [long], open(os.path.join(d, "alpaca", "pairs.json"), "w"), indent=1)
json.dump({"demo": {"file_name": "pairs.json", "ranking": True, "columns": {
    "prompt": "instruction", "query": "input", "chosen": "chosen", "rejected": "rejected"}}},
    open(os.path.join(d, "alpaca", "dataset_info.json"), "w"))
# sharegpt, JSON lines: system turns, earlier turns, and two rows that
# LLaMA-Factory drops (a system turn out of place, an answer as first turn)
os.makedirs(os.path.join(d, "sharegpt"))
with open(os.path.join(d, "sharegpt", "pairs.jsonl"), "w") as f:
    for i, r in enumerate(rows):
        conv = [{"from": "human", "value": r["instruction"]}]
        if i % 3 == 0:
            conv.insert(0, {"from": "system", "value": "Answer in one sentence."})
        if i % 4 == 1:
            conv = [{"from": "human", "value": "Hello"}, {"from": "gpt", "value": "Hi."}] + conv
        f.write(json.dumps({"conversations": conv, "chosen": {"from": "gpt", "value": r["chosen"]},
                            "rejected": {"from": "gpt", "value": r["rejected"]}}) + "\n")
    f.write(json.dumps({"conversations": [{"from": "gpt", "value": "no question"}],
                        "chosen": {"from": "gpt", "value": "a"}, "rejected": {"from": "gpt", "value": "b"}}) + "\n")
json.dump({"chat": {"file_name": "pairs.jsonl", "ranking": True, "formatting": "sharegpt",
                    "columns": {"messages": "conversations", "chosen": "chosen", "rejected": "rejected"}}},
          open(os.path.join(d, "sharegpt", "dataset_info.json"), "w"))
EOF
	local set
	for set in alpaca:demo sharegpt:chat; do
		write_yaml "${set%%:*}" "${set#*:}" 1000000 >"$d/${set%%:*}-uncut.yaml"
		lf_counts "$d/${set%%:*}-uncut.yaml" >"$d/${set%%:*}.lf"
	done
}

setup() {
	need_venv
	D=$BATS_FILE_TMPDIR
	CHECK=$BATS_TEST_DIRNAME/../../templates/check_data_lengths.py
	W=$BATS_TEST_TMPDIR
}

# write_yaml SET DATASET CUTOFF_LEN: a DPO training YAML on the data set
# SET of setup_file
write_yaml() {
	cat <<EOF
model_name_or_path: $BATS_FILE_TMPDIR/model
stage: dpo
do_train: true
finetuning_type: lora
dataset: $2
dataset_dir: $BATS_FILE_TMPDIR/$1
template: qwen
cutoff_len: $3
EOF
}

# lf_counts YAML: "prompt chosen rejected" of each pair that LLaMA-Factory's
# own preprocessing makes from YAML's data, in order: the prompt is the
# part of chosen_labels that is IGNORE_INDEX (processor/pairwise.py)
lf_counts() {
	# (LLaMA-Factory prints its first example to stdout too)
	HF_DATASETS_CACHE=$BATS_FILE_TMPDIR/hf \
		"$PY" - "$1" "$BATS_FILE_TMPDIR/out" <<'EOF' 2>/dev/null | sed -n 's/^PAIR //p'
import sys, yaml
from llamafactory.data import get_dataset, get_template_and_fix_tokenizer
from llamafactory.extras.constants import IGNORE_INDEX
from llamafactory.hparams import get_train_args
from llamafactory.model import load_tokenizer
cfg = dict(yaml.safe_load(open(sys.argv[1])), output_dir=sys.argv[2], report_to="none")
model_args, data_args, training_args, _, _ = get_train_args(cfg)
tokenizer_module = load_tokenizer(model_args)
template = get_template_and_fix_tokenizer(tokenizer_module["tokenizer"], data_args)
pairs = get_dataset(template, model_args, data_args, training_args, stage="rm", **tokenizer_module)["train_dataset"]
for ex in pairs:
    p = ex["chosen_labels"].count(IGNORE_INDEX)
    print("PAIR", p, len(ex["chosen_input_ids"]) - p, len(ex["rejected_input_ids"]) - p)
EOF
}

# listed OUTPUT: "prompt chosen rejected" of each pair the check lists
listed() {
	sed -nE 's/^  [a-z]+ row [0-9]+ \([^)]*\): prompt ([0-9]+), chosen ([0-9]+), rejected ([0-9]+):.*/\1 \2 \3/p' <<<"$1"
}

@test "LLaMA-Factory's preprocessing made the expected pairs (the oracle of the tests below)" {
	[ "$(wc -l <"$D/alpaca.lf")" -eq 17 ]
	[ "$(wc -l <"$D/sharegpt.lf")" -eq 15 ]
	# the long answer: 40 times a sentence, well over 200 tokens
	[ "$(tail -n 1 "$D/alpaca.lf" | cut -d' ' -f2)" -gt 200 ]
}

@test "a dataset that fits: exit 0, the count and the maxima of LLaMA-Factory's own lengths" {
	write_yaml alpaca demo 9216 >"$W/fit.yaml"
	run "$PY" "$CHECK" "$W/fit.yaml"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"check_data_lengths: $W/fit.yaml: 17 pairs, tokens as LLaMA-Factory 0.9.5 encodes them (template qwen, tokenizer of $D/model)"* ]]
	local max_p max_c max_r max_s
	max_p=$(cut -d' ' -f1 "$D/alpaca.lf" | sort -n | tail -n 1)
	max_c=$(cut -d' ' -f2 "$D/alpaca.lf" | sort -n | tail -n 1)
	max_r=$(cut -d' ' -f3 "$D/alpaca.lf" | sort -n | tail -n 1)
	max_s=$(awk '{ print $1 + ($2 > $3 ? $2 : $3) }' "$D/alpaca.lf" | sort -n | tail -n 1)
	grep -qE "^  prompt +17( +[0-9]+){3} +$max_p\$" <<<"$output"
	grep -qE "^  chosen +17( +[0-9]+){3} +$max_c\$" <<<"$output"
	grep -qE "^  rejected +17( +[0-9]+){3} +$max_r\$" <<<"$output"
	grep -qE "^  prompt\+answer +17( +[0-9]+){3} +$max_s  9216 \(cutoff_len, ~[0-9,]+ characters\)\$" <<<"$output"
	grep -qx 'check_data_lengths: all 17 pairs fit' <<<"$output"
}

@test "a pair made too long is listed with its true token counts and LLaMA-Factory's cut; exit 3" {
	write_yaml alpaca demo 256 >"$W/cut.yaml"
	run "$PY" "$CHECK" "$W/cut.yaml"
	echo "$output"
	[ "$status" -eq 3 ]
	local p c r
	read -r p c r < <(tail -n 1 "$D/alpaca.lf")
	grep -qx 'check_data_lengths: 1 of 17 pairs are over cutoff_len 256:' <<<"$output"
	# the answer is over half of cutoff_len and the prompt under it: the
	# answer is cut to what the prompt leaves (processor_utils.py, infer_seqlen)
	grep -qxF "  demo row 16 ($D/alpaca/pairs.json:98): prompt $p, chosen $c, rejected $r: prompt+answer $((p + c)) > cutoff_len 256: LLaMA-Factory keeps prompt $p + answer $((256 - p))" <<<"$output"
	[ "$(listed "$output" | wc -l)" -eq 1 ]
}

@test "sharegpt JSON lines: every pair's counts are LLaMA-Factory's (cutoff_len 1 lists them all), the dropped rows are named" {
	write_yaml sharegpt chat 1 >"$W/all.yaml"
	run "$PY" "$CHECK" --show 0 "$W/all.yaml"
	echo "$output"
	[ "$status" -eq 3 ]
	diff <(listed "$output") "$D/sharegpt.lf"
	grep -qF "check_data_lengths: note: 2 rows that LLaMA-Factory drops as invalid pairs (not measured), first: chat row 9 ($D/sharegpt/pairs.jsonl:10), chat row 16 ($D/sharegpt/pairs.jsonl:17)" <<<"$output"
	# --show caps the list
	run "$PY" "$CHECK" --show 2 "$W/all.yaml"
	[ "$status" -eq 3 ]
	[ "$(listed "$output" | wc -l)" -eq 2 ]
	grep -qx '  ... and 13 more (--show 0 lists all)' <<<"$output"
}

@test "--max-prompt-tokens: the longest prompt fits at its own length, and is listed one token below it" {
	local max
	max=$(cut -d' ' -f1 "$D/alpaca.lf" | sort -n | tail -n 1)
	write_yaml alpaca demo 9216 >"$W/fit.yaml"
	run "$PY" "$CHECK" --max-prompt-tokens "$max" "$W/fit.yaml"
	[ "$status" -eq 0 ]
	grep -qE "^  prompt +17( +[0-9]+){4}  $max \(--max-prompt-tokens, as trained, ~[0-9,]+ characters\)\$" <<<"$output"
	run "$PY" "$CHECK" --max-prompt-tokens "$((max - 1))" "$W/fit.yaml"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$(listed "$output" | wc -l)" -eq "$(awk -v m="$max" '$1 == m' "$D/alpaca.lf" | wc -l)" ]
	grep -qE "^  demo row [0-9]+ .*: prompt as trained $max > --max-prompt-tokens $((max - 1))\$" <<<"$output"
}

@test "bad input: missing key, YAML syntax, unreadable YAML: what, where and the fix" {
	write_yaml alpaca demo 9216 | grep -v '^model_name_or_path' >"$W/nomodel.yaml"
	run "$PY" "$CHECK" "$W/nomodel.yaml"
	[ "$status" -eq 1 ]
	[ "$output" = "check_data_lengths: error: $W/nomodel.yaml: no 'model_name_or_path' key. Add model_name_or_path: the model directory; LLaMA-Factory needs it too" ]
	printf 'model_name_or_path: [%s\ndataset: demo\n' "$D/model" >"$W/syntax.yaml"
	run "$PY" "$CHECK" "$W/syntax.yaml"
	[ "$status" -eq 1 ]
	[[ "$output" == "check_data_lengths: error: $W/syntax.yaml:2:8: YAML syntax error: "*"(while parsing a flow sequence at 1:21). Fix the YAML"* ]]
	run "$PY" "$CHECK" "$W/none.yaml"
	[ "$status" -eq 1 ]
	[[ "$output" == "check_data_lengths: error: $W/none.yaml: cannot read the training YAML: "*"No such file or directory"* ]]
	write_yaml alpaca demo 0 >"$W/zero.yaml"
	run "$PY" "$CHECK" "$W/zero.yaml"
	[ "$status" -eq 1 ]
	[ "$output" = "check_data_lengths: error: $W/zero.yaml:8:13: cutoff_len: 0 is not a positive whole number. Write cutoff_len as a token count, for example cutoff_len: 9216" ]
	run "$PY" "$CHECK" --max-prompt-tokens lots "$W/zero.yaml"
	[ "$status" -eq 2 ]
}

@test "bad input: dataset not in dataset_info.json, missing data file, JSON error, missing column, unknown template, no model directory" {
	write_yaml alpaca dem 9216 >"$W/name.yaml"
	run "$PY" "$CHECK" "$W/name.yaml"
	[ "$status" -eq 1 ]
	grep -qxF "check_data_lengths: error: $W/name.yaml:5:10: dataset 'dem' is not in $D/alpaca/dataset_info.json. Did you mean 'demo'? Add an entry for it there (file_name, \"ranking\": true, columns), or name one of: demo" <<<"$output"

	mkdir "$W/data"
	printf '{"demo": {"file_name": "gone.json", "ranking": true}}\n' >"$W/data/dataset_info.json"
	write_yaml alpaca demo 9216 | sed "s#^dataset_dir: .*#dataset_dir: $W/data#" >"$W/data.yaml"
	run "$PY" "$CHECK" "$W/data.yaml"
	[ "$status" -eq 1 ]
	grep -qxF "check_data_lengths: error: $W/data/dataset_info.json: dataset 'demo': file_name: $W/data/gone.json not found. Set file_name relative to dataset_dir, and run from the directory the job is submitted from" <<<"$output"

	printf '[\n {"instruction": "a", "input": "", "chosen": "b", "rejected": "c"},\n {"instruction": "a" "input": ""}\n]\n' >"$W/data/gone.json"
	run "$PY" "$CHECK" "$W/data.yaml"
	[ "$status" -eq 1 ]
	grep -qxF "check_data_lengths: error: $W/data/gone.json:3:22: JSON syntax error: Expecting ',' delimiter. A dataset file holds a JSON list of objects, or one JSON object per line" <<<"$output"

	printf '[{"instruction": "a", "chosen": "b", "rejected": "c"}]\n' >"$W/data/gone.json"
	run "$PY" "$CHECK" "$W/data.yaml"
	[ "$status" -eq 1 ]
	grep -qxF "check_data_lengths: error: $W/data/dataset_info.json: dataset 'demo': column 'input' (query) is not in $W/data/gone.json, whose columns are: chosen, instruction, rejected. LLaMA-Factory fails on it too (KeyError). Name the file's column in \"columns\": {\"query\": ...}, or null when the file has none (formatting alpaca)" <<<"$output"

	write_yaml alpaca demo 9216 | sed 's/^template: qwen$/template: qwenn/' >"$W/tpl.yaml"
	run "$PY" "$CHECK" "$W/tpl.yaml"
	[ "$status" -eq 1 ]
	grep -qF "check_data_lengths: error: $W/tpl.yaml:7:11: template 'qwenn' is not one of LLaMA-Factory's templates. Did you mean 'qwen'? " <<<"$output"

	write_yaml alpaca demo 9216 | sed "s#^model_name_or_path: .*#model_name_or_path: $W/nomodel#" >"$W/model.yaml"
	run "$PY" "$CHECK" "$W/model.yaml"
	[ "$status" -eq 1 ]
	grep -qxF "check_data_lengths: error: $W/model.yaml:1:21: model_name_or_path: no directory $W/nomodel. Point model_name_or_path at the model directory (with its tokenizer files) that the job reads, and run from the directory the job is submitted from" <<<"$output"
}

@test "units: characters per token of the pairs' own text, measured with the tokenizer, and the limits in both units" {
	write_yaml alpaca demo 9216 >"$W/fit.yaml"
	run "$PY" "$CHECK" --max-prompt-tokens 4000 "$W/fit.yaml"
	echo "$output"
	[ "$status" -eq 0 ]
	# the oracle: the alpaca rows' text (instruction and input joined by a
	# newline, as converter.py does; chosen; rejected), each encoded alone
	local want
	want=$("$PY" - "$D/model" "$D/alpaca/pairs.json" <<'EOF2'
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
chars = tokens = 0
for r in json.load(open(sys.argv[2])):
    prompt = r["instruction"] + ("\n" + r["input"] if r.get("input") else "")
    for text in (prompt, r["chosen"], r["rejected"]):
        if text:
            chars += len(text)
            tokens += len(tok.encode(text, add_special_tokens=False))
cpt = chars / tokens
print(f"{cpt:.2f} characters per token on this data ({chars:,} characters of the pairs' text in {tokens:,} tokens")
print(f"{int(round(9216 * cpt / 100.0)) * 100:,}")
print(f"{int(round(4000 * cpt / 100.0)) * 100:,}")
EOF2
)
	local line chars9216 chars4000
	line=$(sed -n 1p <<<"$want")
	chars9216=$(sed -n 2p <<<"$want")
	chars4000=$(sed -n 3p <<<"$want")
	grep -qF "check_data_lengths: units: $line, without the chat template); cutoff_len 9216 tokens (~$chars9216 characters), --max-prompt-tokens 4000 tokens (~$chars4000 characters)" <<<"$output"
	grep -qE "^  prompt\+answer +17( +[0-9]+){4}  9216 \(cutoff_len, ~$chars9216 characters\)\$" <<<"$output"
	grep -qE "^  prompt +17( +[0-9]+){4}  4000 \(--max-prompt-tokens, as trained, ~$chars4000 characters\)\$" <<<"$output"
}

@test "the stack: LLaMA-Factory and transformers of this Python, the plan's logits term for them and the distenv plan options" {
	write_yaml alpaca demo 9216 >"$W/fit.yaml"
	run "$PY" "$CHECK" "$W/fit.yaml"
	[ "$status" -eq 0 ]
	local lf tf
	lf=$("$PY" -c 'import importlib.metadata as m; print(m.version("llamafactory"))')
	tf=$("$PY" -c 'import importlib.metadata as m; print(m.version("transformers"))')
	grep -qxF "check_data_lengths: stack: LLaMA-Factory $lf, transformers $tf: the memory plan's logits term is 20 bytes per token and vocabulary entry (distenv plan --lf-version $lf --transformers-version $tf)" <<<"$output"
}

@test "the units and stack rules without LLaMA-Factory: the coefficient per stack and the conversion" {
	run "$PY" - "$BATS_TEST_DIRNAME/../../templates" <<'EOF2'
import sys
sys.path.insert(0, sys.argv[1])
import check_data_units as u
for lf, tf, want in (("0.9.1", "4.46.1", 22), ("0.9.3", "4.48.3", 22), ("0.8.0", "4.46.0rc1", 22),
                     ("0.9.4", "4.46.1", 20), ("0.9.5", "5.6.0", 20), ("0.9.1", "4.45.2", 20),
                     ("0.7.1", "4.46.1", 20), ("0.9.3", "4.49.0", 20), ("unknown", "4.47.0", 22),
                     ("unknown", "unknown", 22), ("0.9.5", "unknown", 20)):
    assert u.logit_bytes(lf, tf) == want, (lf, tf, u.logit_bytes(lf, tf))
c = u.TextCount()
class Tok:
    def encode(self, text, add_special_tokens=False):
        return list(range((len(text) + 1) // 2))
c.add(Tok(), "ab" * 50)
c.add(Tok(), "")
c.add(Tok(), None)
assert (c.chars, c.tokens) == (100, 50), c
assert c.per_token() == 2.0
assert u.TextCount().per_token() == 0.0
# the field notes' 8k read as characters at 1.67 and 1.80 characters per token
assert u.in_chars(4906, 1.67) == 8200 and u.in_chars(4551, 1.80) == 8200
assert u.both_units(9216, 1.72) == "9216 tokens (~15,900 characters)"
assert u.both_units(9216, 0.0) == "9216 tokens"
print("ok")
EOF2
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
}

@test "host at save under use_unsloth_gc: each row's pinned block class, the rows over the median's class, node 0's worst against --host-mem" {
	# the tokenizer of setup_file, and a config.json whose hidden size
	# puts the rows in blocks of MiB (4 layers, batch 1)
	cp -r "$D/model" "$W/model"
	printf '{"hidden_size": 65536, "num_hidden_layers": 4}\n' >"$W/model/config.json"
	write_yaml alpaca demo 9216 | sed "s#^model_name_or_path: .*#model_name_or_path: $W/model#" >"$W/h.yaml"
	printf 'use_unsloth_gc: true\nper_device_train_batch_size: 1\n' >>"$W/h.yaml"
	# the oracle, from LLaMA-Factory's own lengths: a row of s tokens pins
	# 2 bytes x 65536 x 2 rows x s per layer, rounded up to a power of two
	local want
	want=$(python3 - "$D/alpaca.lf" <<'EOF2'
import sys
def p2(x):
    p = 1
    while p < x:
        p *= 2
    return p
toks = [sum(map(int, l.split()[:1])) + max(map(int, l.split()[1:])) for l in open(sys.argv[1])]
cls = [p2(2 * 65536 * 2 * t) for t in toks]
counts = {c: cls.count(c) for c in sorted(set(cls))}
print(", ".join(f"{c // 2**20} MiB: {n} rows" for c, n in counts.items()))
median = p2(2 * 65536 * 2 * sorted(toks)[(len(toks) - 1) // 2])
print(sum(1 for c in cls if c > median), median // 2**20)
print(2**30 + 8 * 4 * sum(counts))
EOF2
)
	local classes crossing median worst
	classes=$(sed -n 1p <<<"$want")
	read -r crossing median < <(sed -n 2p <<<"$want")
	worst=$(sed -n 3p <<<"$want")
	# the data has rows on both sides of a class boundary
	[ "$crossing" -ge 1 ]
	run "$PY" "$CHECK" "$W/h.yaml"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qxF "check_data_lengths: host at save (use_unsloth_gc: 4 layers x one pinned block per step, rounded up to a power of two; hidden_size 65536, batch 1): $classes" <<<"$output"
	grep -qF "check_data_lengths: $crossing rows cross a class boundary above the median row's $median MiB" <<<"$output"
	grep -qF "demo row 16" <<<"$output"
	# node 0: 1 GiB + 8 GPUs x 4 layers x every class seen; 1 MiB more
	# memory fits, 1 MiB less could be killed (exit 3)
	run "$PY" "$CHECK" --host-base 1G --host-mem "$(((worst >> 20) + 1))M" "$W/h.yaml"
	[ "$status" -eq 0 ]
	[[ "$output" == *"node 0 at a save, worst: "*"against --host-mem"* ]]
	[[ "$output" != *"could be killed"* ]]
	run "$PY" "$CHECK" --host-base 1G --host-mem "$(((worst >> 20) - 1))M" "$W/h.yaml"
	[ "$status" -eq 3 ]
	[[ "$output" == *": the save could be killed (exit -9)"* ]]
	[[ "$output" == *"fix: cap the answers (cutoff_len) so that the rows stay in $median MiB blocks, pin_memory: false in the DeepSpeed offload config, or fewer long rows"* ]]
	# without use_unsloth_gc: nothing pinned, nothing said
	sed -i 's/^use_unsloth_gc: true$/use_unsloth_gc: false/' "$W/h.yaml"
	run "$PY" "$CHECK" --host-base 1G --host-mem 1M "$W/h.yaml"
	[ "$status" -eq 0 ]
	[[ "$output" != *"host at save"* ]]
	run "$PY" "$CHECK" --host-mem lots "$W/h.yaml"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--host-mem: 'lots' is not a size with a unit (600G, 1T)"* ]]
}
