#!/usr/bin/env python3
"""Would the starting model ever write these rejected answers? A check of
DPO pairs before training.

    python3 templates/check_dpo_offpolicy.py [--pairs N] [--samples K]
        [--margin M] [--max-new-tokens T] [--seed S] [--show N] CONFIG.yaml

CONFIG.yaml is the YAML given to `llamafactory-cli train`. Run it with the
Python that runs LLaMA-Factory (written against 0.9.5), where the
starting model fits (model_name_or_path, and adapter_name_or_path when the
YAML names one; spread over the node's GPUs, or on the CPU).

What it measures, with LLaMA-Factory's own code, so that the tokens are
those DPO trains on:
- the pairs: get_dataset with stage "rm", as train/dpo/workflow.py calls
  it (data/processor/pairwise.py: prompt + chosen and prompt + rejected,
  the YAML's template and cutoff_len, labels only on the answer);
- the model: model/loader.py's load_model, not trainable;
- for N pairs (--pairs, 256; a seeded draw, all when fewer), the mean
  per-token log-probability of the chosen and of the rejected answer under
  the model: train/trainer_utils.py's get_batch_logps (the sum that the
  DPO trainer logs as logps/chosen and logps/rejected) divided by the
  answer's token count, one forward pass each;
- for K prompts (--samples, 8) of those pairs, an answer sampled from the
  model itself (temperature 1, no top-k or top-p: its own distribution,
  up to T new tokens, --max-new-tokens, 256), and the same mean
  log-probability of it. An answer the model writes itself scores about
  minus the entropy of its next-token distribution per token.

A pair is listed when its rejected answer's mean log-probability is more
than M nats per token (--margin, 1.0) below the lowest of the model's own
samples: each of its tokens is, on the geometric mean, e = 2.7 times less
likely than in the least likely answer the model wrote itself, and over
an answer of n tokens e^n times: the model would practically never write
it. DPO pushes such answers down by features the model can see at once
(source, style, language), and learns little about what makes an answer
worse. The DPO paper (Rafailov et al. 2023, section 4) assumes the pairs
come from the reference model and warns of the shift between the data's
distribution and the reference model; Xu et al. 2024 ("Is DPO Superior
to PPO for LLM Alignment?", ICML 2024) show DPO exploiting answers
outside the model's distribution. The fix: sample the rejected answers
from the starting model (templates/README.md, "DPO pairs that work") and
write the chosen ones as corrections of those samples. The chosen
answers' figures are printed too: corrections of the model's samples stay
close to them.

Exit status: 0 no rejected answer far from the model's own; 3 some are
(listed; --show caps the list, 20 by default); 1 the check cannot be made
(what, where, and the fix); 2 a usage error.
"""

import argparse
import contextlib
import io
import math
import os
import random
import sys
import tempfile

PROG = "check_dpo_offpolicy"
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FAR = 0, 1, 2, 3
# Keys of the training YAML that concern training only, and would make
# get_train_args need DeepSpeed, a GPU's dtype or a kernel package that a
# forward pass does not.
TRAINING_ONLY = ("deepspeed", "bf16", "fp16", "enable_liger_kernel", "use_unsloth", "use_unsloth_gc",
                 "resume_from_checkpoint", "report_to", "save_on_each_node")


class CheckError(Exception):
    """Why the check cannot be made: what, where, and the fix."""


def load_args(path, out_dir):
    """LLaMA-Factory's argument objects from the training YAML, with the
    training-only keys left out and a scratch output_dir."""
    import yaml
    from llamafactory.hparams import get_train_args

    try:
        with open(path, encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as err:
        raise CheckError(f"{path}: cannot read the training YAML: {err}. Give the YAML of llamafactory-cli train")
    if not isinstance(cfg, dict) or cfg.get("stage", "dpo") != "dpo":
        raise CheckError(f"{path}: not a DPO training YAML (stage: {cfg.get('stage') if isinstance(cfg, dict) else '?'}). "
                         "Give the YAML of the DPO run")
    cfg = {k: v for k, v in cfg.items() if k not in TRAINING_ONLY}
    cfg.update(output_dir=out_dir, overwrite_output_dir=True, report_to="none", do_train=True)
    try:
        return get_train_args(cfg)
    except (ValueError, TypeError) as err:
        raise CheckError(f"{path}: LLaMA-Factory refuses the YAML: {err}. Fix the YAML")


def load_pairs(args_tuple):
    """The pairs as LLaMA-Factory prepares them for DPO, and its template."""
    from llamafactory.data import get_dataset, get_template_and_fix_tokenizer
    from llamafactory.model import load_tokenizer

    model_args, data_args, training_args, _, _ = args_tuple
    tokenizer_module = load_tokenizer(model_args)
    template = get_template_and_fix_tokenizer(tokenizer_module["tokenizer"], data_args)
    # get_dataset prints its first example to stdout: kept out of the report
    with contextlib.redirect_stdout(io.StringIO()):
        data = get_dataset(template, model_args, data_args, training_args, stage="rm", **tokenizer_module)
    return tokenizer_module["tokenizer"], template, data["train_dataset"]


def load_starting_model(tokenizer, args_tuple):
    import torch
    from llamafactory.model import load_model

    model_args, _, _, finetuning_args, _ = args_tuple
    # inference: spread over the GPUs there are (as LLaMA-Factory's own
    # get_infer_args does), else the CPU
    model_args.device_map = "auto" if torch.cuda.is_available() else None
    return load_model(tokenizer, model_args, finetuning_args, is_trainable=False)


def mean_logp(model, input_ids, labels):
    """(mean per-token log-probability of the labelled tokens, their
    count): the DPO trainer's get_batch_logps over the token count."""
    import torch
    from llamafactory.train.trainer_utils import get_batch_logps

    device = model.get_input_embeddings().weight.device
    ids = torch.tensor([input_ids], device=device)
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False).logits.float()
    # with the model spread over GPUs the logits come out on the last one
    logps, count = get_batch_logps(logits, torch.tensor([labels], device=logits.device))
    n = int(count[0])
    return (float(logps[0]) / n if n else float("nan")), n


def prompt_length(labels):
    from llamafactory.extras.constants import IGNORE_INDEX

    n = 0
    while n < len(labels) and labels[n] == IGNORE_INDEX:
        n += 1
    return n


def own_sample(model, tokenizer, template, prompt_ids, max_new_tokens, temperature=1.0, top_p=1.0, top_k=0,
               repetition_penalty=1.0):
    """An answer the model writes itself to PROMPT_IDS, and its mean
    log-probability (the answer's tokens, with the end of turn it wrote).
    The defaults sample the model's own distribution; dpo_sample.py passes
    the settings a user deploys with."""
    import torch
    from llamafactory.extras.constants import IGNORE_INDEX

    device = model.get_input_embeddings().weight.device
    stop = [tokenizer.eos_token_id] + tokenizer.convert_tokens_to_ids(list(template.stop_words or []))
    with torch.no_grad():
        out = model.generate(input_ids=torch.tensor([prompt_ids], device=device), do_sample=True,
                             temperature=temperature, top_k=top_k, top_p=top_p,
                             repetition_penalty=repetition_penalty, max_new_tokens=max_new_tokens,
                             eos_token_id=[t for t in stop if t is not None],
                             pad_token_id=tokenizer.pad_token_id)
    answer = out[0, len(prompt_ids):].tolist()
    logp, _ = mean_logp(model, prompt_ids + answer, [IGNORE_INDEX] * len(prompt_ids) + answer)
    return tokenizer.decode(answer, skip_special_tokens=True), logp


def quantiles(values):
    """'p10 p50 p90' (nearest rank) of VALUES."""
    v = sorted(values)
    pick = [v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))] for q in (0.1, 0.5, 0.9)]
    return "  ".join(f"{x:8.3f}" for x in pick)


def short(text, n=60):
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def measure(args, out_dir):
    args_tuple = load_args(args.config, out_dir)
    tokenizer, template, pairs = load_pairs(args_tuple)
    if len(pairs) == 0:
        raise CheckError(f"{args.config}: LLaMA-Factory prepares no pairs from the dataset. "
                         "Run check_data_lengths.py on it: it names what is dropped")
    model = load_starting_model(tokenizer, args_tuple)
    rng = random.Random(args.seed)
    chosen_rows = sorted(rng.sample(range(len(pairs)), min(args.pairs, len(pairs))))
    measured = []
    for i in chosen_rows:
        ex = pairs[i]
        c, _ = mean_logp(model, ex["chosen_input_ids"], ex["chosen_labels"])
        r, _ = mean_logp(model, ex["rejected_input_ids"], ex["rejected_labels"])
        measured.append((i, c, r))
    import torch

    torch.manual_seed(args.seed)
    samples = []
    for i in chosen_rows[: args.samples]:
        ex = pairs[i]
        prompt = ex["chosen_input_ids"][: prompt_length(ex["chosen_labels"])]
        samples.append(own_sample(model, tokenizer, template, prompt, args.max_new_tokens))
    return tokenizer, pairs, measured, samples, len(pairs)


def report(args, tokenizer, pairs, measured, samples, total):
    own = [s[1] for s in samples if not math.isnan(s[1])]
    print(f"{PROG}: {args.config}: {len(measured)} of {total} pairs, {len(own)} answers of the model's own; "
          "mean log-probability per answer token (nats) under the starting model")
    print(f"  {'':10} {'count':>6}  {'p10':>8}  {'p50':>8}  {'p90':>8}")
    print(f"  {'chosen':10} {len(measured):>6}  {quantiles([m[1] for m in measured])}")
    print(f"  {'rejected':10} {len(measured):>6}  {quantiles([m[2] for m in measured])}")
    if not own:
        raise CheckError(f"{args.config}: the model wrote no answer token for the sampled prompts. "
                         "Raise --max-new-tokens, or check the template's end of turn")
    print(f"  {'own':10} {len(own):>6}  {quantiles(own)}")
    floor = min(own) - args.margin
    far = [m for m in measured if m[2] < floor]
    print(f"{PROG}: the model's own answers score {min(own):.3f} at the lowest; a rejected answer under "
          f"{floor:.3f} (--margin {args.margin} below it) is one the model would practically never write")
    if not far:
        print(f"{PROG}: ok: every rejected answer is within reach of the model's own")
        return EXIT_OK
    print(f"{PROG}: warning: {len(far)} of {len(measured)} rejected answers are far below the model's own:")
    from llamafactory.extras.constants import IGNORE_INDEX

    for i, c, r in sorted(far, key=lambda m: m[2])[: args.show or None]:
        labels = pairs[i]["rejected_labels"]
        answer = tokenizer.decode([t for t, l in zip(pairs[i]["rejected_input_ids"], labels) if l != IGNORE_INDEX],
                                  skip_special_tokens=True)
        print(f"  pair {i}: rejected {r:.3f}, chosen {c:.3f}: \"{short(answer)}\"")
    if args.show and len(far) > args.show:
        print(f"  ... and {len(far) - args.show} more (--show 0 lists all)")
    print(f"{PROG}: DPO separates such pairs by their source and gains little. Sample the rejected answers from "
          "the starting model and write the chosen answers as corrections of "
          "those samples (templates/README.md, \"DPO pairs that work\")")
    return EXIT_FAR


def arguments(argv):
    p = argparse.ArgumentParser(prog=PROG, description="Rejected answers the starting model would not write.")
    p.add_argument("config", help="the training YAML")
    p.add_argument("--pairs", type=int, default=256, help="pairs to measure, a seeded draw (256)")
    p.add_argument("--samples", type=int, default=8, help="prompts the model answers itself (8)")
    p.add_argument("--margin", type=float, default=1.0, help="nats per token below the model's own (1.0)")
    p.add_argument("--max-new-tokens", type=int, default=256, help="longest own answer (256)")
    p.add_argument("--seed", type=int, default=0, help="seed of the draw and the sampling (0)")
    p.add_argument("--show", type=int, default=20, help="pairs listed, 0 for all (20)")
    args = p.parse_args(argv)
    if args.pairs < 1 or args.samples < 1 or args.max_new_tokens < 1 or args.margin < 0 or args.show < 0:
        p.error("--pairs, --samples and --max-new-tokens must be positive, --margin and --show not negative")
    return args


def main(argv):
    args = arguments(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # LLaMA-Factory's info lines (extras/logging.py) would bury the report
    os.environ.setdefault("LLAMAFACTORY_VERBOSITY", "WARN")
    try:
        with tempfile.TemporaryDirectory(prefix="check_dpo_offpolicy.") as out_dir:
            measured = measure(args, out_dir)
            return report(args, *measured)
    except CheckError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
