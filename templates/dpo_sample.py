#!/usr/bin/env python3
"""Rejected answers sampled from the starting model, for DPO pairs that are
the model's own (templates/README.md, "DPO pairs that work").

    python3 templates/dpo_sample.py sample --node-rank R --nnodes N
        [--max-new-tokens T] [--temperature X] [--top-p P] [--top-k K]
        [--repetition-penalty R] [--seed S] CONFIG.yaml PROMPTS.json OUT_DIR
    python3 templates/dpo_sample.py merge [--name NAME] PROMPTS.json OUT_DIR

sample: the model and chat template of CONFIG.yaml (the DPO training
YAML: model_name_or_path, template, adapter_name_or_path), loaded with
LLaMA-Factory's own code as check_dpo_offpolicy.py does, answer the
prompts of PROMPTS.json (LLaMA-Factory's alpaca form: a list of objects
with instruction, optional input and system; chosen, when there, is kept)
whose index i has i % N == R: each node takes its share, by the NODE_RANK
and NNODES distenv exports. The prompt is encoded as LLaMA-Factory encodes
a pair's prompt (data/template.py, encode_oneturn; alpaca joins
instruction and input with a newline, data/converter.py); the answer is
sampled with Transformers' generate, as LLaMA-Factory's own
predict_with_generate does (train/sft/trainer.py, 0.9.5), up to T new
tokens (512), by default at temperature 1 without top-k or top-p (the
model's own distribution, the one DPO's reference model scores). Give
the settings you deploy with instead (--temperature, --top-p, --top-k,
--repetition-penalty: the names and meaning of LLaMA-Factory's generating
arguments, hparams/generating_args.py, whose defaults 0.95 / 0.7 / 50 /
1.0 its chat and API use) when the rejected answers should be what users
of the deployed model see. Each answer is one JSON line of
OUT_DIR/samples.rank-R.jsonl, written as soon as it is made: a restarted
job skips the indices already there (a line cut by the kill is redone).

merge: all OUT_DIR/samples.rank-*.jsonl into OUT_DIR/NAME.json (pairs in
alpaca preference form: instruction, input, system, chosen, rejected =
the sample) and OUT_DIR/dataset_info.json's NAME entry (ranking, the
columns): set dataset_dir to OUT_DIR and dataset to NAME. chosen is the
prompt row's chosen when it has one, else empty: write the corrections of
the samples there before training (rows with an empty chosen are
counted). Exit status: 0 done; 3 merge found prompts without a sample
(listed; run sample again); 1 an input error; 2 a usage error.
"""

import argparse
import glob
import json
import os
import sys

from check_dpo_offpolicy import CheckError, load_args, load_starting_model, own_sample

PROG = "dpo_sample"
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_MISSING = 0, 1, 2, 3


def read_prompts(path):
    try:
        with open(path, encoding="utf-8") as f:
            rows = json.load(f)
    except (OSError, UnicodeDecodeError) as err:
        raise CheckError(f"{path}: cannot read the prompts: {err}. Give a JSON list of "
                         "{\"instruction\": ..., \"input\": ...} objects")
    except json.JSONDecodeError as err:
        raise CheckError(f"{path}:{err.lineno}:{err.colno}: JSON syntax error: {err.msg}. Fix the file")
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("instruction"), str)
                                             for r in rows):
        raise CheckError(f"{path}: not a JSON list of objects with an instruction. Write the prompts in "
                         "LLaMA-Factory's alpaca form")
    return rows


def shard_path(out_dir, rank):
    return os.path.join(out_dir, f"samples.rank-{rank}.jsonl")


def done_indices(path):
    """The indices a shard already holds; a cut last line is not one."""
    done = set()
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    done.add(int(json.loads(line)["index"]))
                except (ValueError, KeyError, TypeError):
                    continue
    return done


def user_turn(row):
    return row["instruction"] + ("\n" + row["input"] if row.get("input") else "")


def sample(args):
    import torch
    from llamafactory.data import get_template_and_fix_tokenizer
    from llamafactory.model import load_tokenizer

    rows = read_prompts(args.prompts)
    os.makedirs(args.out_dir, exist_ok=True)
    shard = shard_path(args.out_dir, args.node_rank)
    done = done_indices(shard)
    mine = [i for i in range(len(rows)) if i % args.nnodes == args.node_rank]
    todo = [i for i in mine if i not in done]
    print(f"{PROG}: node {args.node_rank} of {args.nnodes}: {len(mine)} of {len(rows)} prompts, "
          f"{len(mine) - len(todo)} already in {shard}, {len(todo)} to sample")
    if not todo:
        return EXIT_OK
    args_tuple = load_args(args.config, os.path.join(args.out_dir, ".scratch"))
    model_args, data_args = args_tuple[0], args_tuple[1]
    tokenizer = load_tokenizer(model_args)["tokenizer"]
    template = get_template_and_fix_tokenizer(tokenizer, data_args)
    model = load_starting_model(tokenizer, args_tuple)
    with open(shard, "a", encoding="utf-8") as out:
        for i in todo:
            torch.manual_seed(args.seed * 1000003 + i)  # the same answer whichever node or restart makes it
            messages = [{"role": "user", "content": user_turn(rows[i])}, {"role": "assistant", "content": ""}]
            prompt_ids, _ = template.encode_oneturn(tokenizer, messages, rows[i].get("system"))
            text, logp = own_sample(model, tokenizer, template, prompt_ids, args.max_new_tokens,
                                    args.temperature, args.top_p, args.top_k, args.repetition_penalty)
            out.write(json.dumps({"index": i, "rejected": text, "mean_logp": logp}, ensure_ascii=False) + "\n")
            out.flush()
    print(f"{PROG}: node {args.node_rank}: {len(todo)} answers written to {shard}")
    return EXIT_OK


def merge(args):
    rows = read_prompts(args.prompts)
    samples = {}
    for shard in sorted(glob.glob(os.path.join(args.out_dir, "samples.rank-*.jsonl"))):
        with open(shard, encoding="utf-8") as f:
            for line in f:
                try:
                    s = json.loads(line)
                    samples[int(s["index"])] = s["rejected"]
                except (ValueError, KeyError, TypeError):
                    continue
    missing = [i for i in range(len(rows)) if i not in samples]
    if missing:
        print(f"{PROG}: {len(missing)} of {len(rows)} prompts have no sample in {args.out_dir} (first: "
              f"{', '.join(map(str, missing[:10]))}): run the sample step again (it skips what is done)",
              file=sys.stderr)
        return EXIT_MISSING
    pairs = [{"instruction": r["instruction"], "input": r.get("input", ""), "system": r.get("system", ""),
              "chosen": r.get("chosen", ""), "rejected": samples[i]} for i, r in enumerate(rows)]
    data_path = os.path.join(args.out_dir, f"{args.name}.json")
    with open(data_path, "w", encoding="utf-8") as f:
        json.dump(pairs, f, ensure_ascii=False, indent=1)
    info_path = os.path.join(args.out_dir, "dataset_info.json")
    info = {}
    if os.path.isfile(info_path):
        with open(info_path, encoding="utf-8") as f:
            info = json.load(f)
    info[args.name] = {"file_name": f"{args.name}.json", "ranking": True, "formatting": "alpaca",
                       "columns": {"prompt": "instruction", "query": "input", "system": "system",
                                   "chosen": "chosen", "rejected": "rejected"}}
    with open(info_path, "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
    empty = sum(1 for p in pairs if not p["chosen"])
    print(f"{PROG}: {len(pairs)} pairs in {data_path}, entry {args.name!r} in {info_path}")
    if empty:
        print(f"{PROG}: {empty} pairs have no chosen answer yet: write each as a correction of its rejected "
              "sample before training")
    return EXIT_OK


def arguments(argv):
    p = argparse.ArgumentParser(prog=PROG, description="Rejected answers sampled from the starting model.")
    sub = p.add_subparsers(dest="step", required=True)
    s = sub.add_parser("sample", help="this node's share of the prompts")
    s.add_argument("--node-rank", type=int, required=True)
    s.add_argument("--nnodes", type=int, required=True)
    s.add_argument("--max-new-tokens", type=int, default=512)
    s.add_argument("--temperature", type=float, default=1.0)
    s.add_argument("--top-p", type=float, default=1.0)
    s.add_argument("--top-k", type=int, default=0)
    s.add_argument("--repetition-penalty", type=float, default=1.0)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("config")
    s.add_argument("prompts")
    s.add_argument("out_dir")
    m = sub.add_parser("merge", help="the shards into one pairwise data set")
    m.add_argument("--name", default="dpo_own_samples")
    m.add_argument("prompts")
    m.add_argument("out_dir")
    args = p.parse_args(argv)
    if args.step == "sample" and not (args.nnodes >= 1 and 0 <= args.node_rank < args.nnodes
                                      and args.max_new_tokens >= 1):
        p.error("need 0 <= --node-rank < --nnodes and a positive --max-new-tokens")
    if args.step == "sample" and not (args.temperature > 0 and 0 < args.top_p <= 1 and args.top_k >= 0
                                      and args.repetition_penalty > 0):
        p.error("need --temperature > 0, 0 < --top-p <= 1, --top-k >= 0 (0: off) and --repetition-penalty > 0")
    return args


def main(argv):
    args = arguments(argv)
    os.environ.setdefault("LLAMAFACTORY_VERBOSITY", "WARN")
    try:
        return sample(args) if args.step == "sample" else merge(args)
    except CheckError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
