#!/usr/bin/env python3
"""Token lengths of a DPO dataset against cutoff_len, before the job trains.

    python3 templates/check_data_lengths.py [--max-prompt-tokens N] [--show N] CONFIG.yaml

CONFIG.yaml is the YAML given to `llamafactory-cli train`. Run it with the
Python that runs LLaMA-Factory (the job's environment): it needs
llamafactory (written against 0.9.5), transformers and PyYAML, and the
model's tokenizer at model_name_or_path. It reads model_name_or_path,
dataset (a comma list), dataset_dir (LLaMA-Factory's default: data),
template, cutoff_len (default 2048) and the other data keys of the YAML,
finds each dataset through dataset_dir/dataset_info.json and prints, for
the pairs of all of them, the count, p50, p90, p99 and max (nearest rank:
each is the length of a real pair) of the prompt, chosen and rejected
token counts and of prompt + the longer answer, then lists the pairs over
cutoff_len or --max-prompt-tokens.

How the tokens are counted: as LLaMA-Factory 0.9.5 encodes a pair, with
the chat template, by LLaMA-Factory's own code (docs/contracts.md 9):

- src/llamafactory/data/parser.py reads dataset_info.json (columns, tags,
  formatting, ranking) and src/llamafactory/data/converter.py turns a row
  into messages: alpaca joins the prompt and query columns with a newline
  as the user turn, history as earlier turns; sharegpt takes the messages
  column, a leading system turn as the system prompt; chosen and rejected
  are strings (alpaca) or one message each (sharegpt).
- src/llamafactory/data/processor/pairwise.py encodes prompt + chosen and
  prompt + rejected with Template.encode_oneturn
  (src/llamafactory/data/template.py). The prompt is everything before the
  answer: the template's prefix (bos where it has one), the system prompt
  (the template's default_system when the row has none), tools, earlier
  turns and the user turn with the assistant's opening tag. An answer is
  its text with the template's end of turn; templates with efficient_eos
  add one eos token to each answer. The counts here are those lengths.
- cutoff_len bounds prompt + the longer answer (pairwise.py, infer_seqlen
  in processor/processor_utils.py): a pair over it is not refused but cut,
  the prompt first when the answer is under half of cutoff_len, and the
  list says how many tokens of each are kept. --max-prompt-tokens (the
  longest prompt the memory plan allows) is compared with the prompt as it
  trains, after that cut.
- Pairs LLaMA-Factory drops (an even number of prompt turns, fewer than
  two answers, broken sharegpt roles) are counted apart, not measured.
  max_samples is applied as LLaMA-Factory does (the first N of each
  dataset); num_samples is not: every row is checked. Images, videos and
  audio are not expanded into their tokens (said when the data has them).

Units: tokens, and characters. The check also measures how many
characters of the pairs' own text (prompt turns, system prompt and both
answers, without the chat template's markup) one token of this tokenizer
holds on this data, and prints the limits in both units: a limit of N
tokens is about N x that many characters of such text. Figures given
without a unit ("8k prompts") may be either; docs/memory.md.

The stack: the LLaMA-Factory and transformers versions of this Python,
and the logits term the memory plan takes for them (22 bytes per token
and vocabulary entry where LLaMA-Factory 0.8.0-0.9.3 pass the labels to
a transformers 4.46-4.48 model, else 20: plugin/plan/plan_stack.h), with
the distenv plan options that plan for the same stack.

Host memory at a save: with use_unsloth_gc, the pinned block class each
row needs, how many rows cross a class boundary, and, given --host-base
and --host-mem, node 0's worst host memory at a save
(templates/check_data_host.py).

Exit status: 0 when every pair fits; 3 when some are over cutoff_len or
--max-prompt-tokens (listed), or node 0's save could run out of host
memory; 1 when the check cannot be made (the
message says what, where and how to fix it); 2 on a usage error.
"""

import argparse
import dataclasses
import difflib
import json
import math
import os
import re
import sys

from check_data_host import host_check, size
from check_data_units import TextCount, both_units, in_chars, stack_line

PROG = "check_data_lengths"
EXIT_FIT, EXIT_ERROR, EXIT_USAGE, EXIT_OVER = 0, 1, 2, 3

# The dataset list in dataset_dir (extras/constants.py).
DATA_CONFIG = "dataset_info.json"
# Stages whose data goes through the pairwise processor (train/dpo and
# train/rm of src/llamafactory/train/ call get_dataset with stage "rm").
PAIRWISE_STAGES = ("dpo", "rm")
# The row columns each format's converter reads for a pair
# (data/converter.py); response is read only by non-pair rows.
COLUMNS = {
    "alpaca": ("prompt", "query", "history", "system", "tools", "chosen", "rejected"),
    "sharegpt": ("messages", "system", "tools", "chosen", "rejected"),
    "openai": ("messages", "system", "tools", "chosen", "rejected"),
}
MEDIA_COLUMNS = ("images", "videos", "audios")


class CheckError(Exception):
    """Why the check cannot be made: what was wrong, where, and the fix."""

    def __init__(self, where, what, fix=""):
        super().__init__(what)
        self.where, self.what, self.fix = where, what, fix

    def __str__(self):
        text = f"{self.where}: {self.what}" if self.where else self.what
        return f"{text}. {self.fix}" if self.fix else text


def at(path, mark=None):
    """FILE or FILE:LINE:COL of a PyYAML mark (0-based) or a (line, col) pair."""
    if mark is None:
        return path
    if isinstance(mark, tuple):
        return f"{path}:{mark[0]}:{mark[1]}"
    return f"{path}:{mark.line + 1}:{mark.column + 1}"


def reason(err):
    """An exception as text inside a sentence of ours."""
    return f"{type(err).__name__}: {str(err).strip().rstrip('.')}"


def yaml_error(path, err):
    """PyYAML's error at the problem, naming where the construct it is in
    starts (an open bracket or quote is usually the mistake)."""
    what = f"YAML syntax error: {getattr(err, 'problem', None) or err}"
    context = getattr(err, "context_mark", None)
    if context is not None and getattr(err, "context", None):
        what += f" ({err.context} at {context.line + 1}:{context.column + 1})"
    return CheckError(at(path, getattr(err, "problem_mark", None)), what,
                      "Fix the YAML; llamafactory-cli would refuse it too")


def did_you_mean(word, choices):
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"Did you mean '{close[0]}'? " if close else ""


# ---- the training YAML -------------------------------------------------------


class Config:
    """The training YAML: values, and where each key's value starts."""

    def __init__(self, path):
        import yaml

        self.path = path
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as err:
            raise CheckError(path, f"cannot read the training YAML: {err}",
                             "Give the YAML you pass to llamafactory-cli train")
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
            self.values = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise yaml_error(path, err)
        if not isinstance(self.values, dict):
            raise CheckError(path, "not a YAML mapping of LLaMA-Factory keys",
                             "Give the YAML you pass to llamafactory-cli train")
        self.marks = {k.value: v.start_mark for k, v in node.value}

    def where(self, key):
        return at(self.path, self.marks.get(key))

    def get(self, key, default=None):
        return self.values.get(key, default)

    def require(self, key, hint):
        value = self.values.get(key)
        if value is None or value == "":
            raise CheckError(self.path, f"no '{key}' key", f"Add {hint}; LLaMA-Factory needs it too")
        return value

    def positive_int(self, key, default):
        value = self.values.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise CheckError(self.where(key), f"{key}: {value!r} is not a positive whole number",
                             f"Write {key} as a token count, for example {key}: 9216")
        return value


def data_arguments(cfg):
    """LLaMA-Factory's DataArguments from the YAML's data keys, so that its
    defaults and its own checks (hparams/data_args.py) apply."""
    from llamafactory.hparams import DataArguments

    names = {f.name for f in dataclasses.fields(DataArguments)}
    kwargs = {k: v for k, v in cfg.values.items() if k in names}
    kwargs["cutoff_len"] = cfg.positive_int("cutoff_len", 2048)
    if not isinstance(kwargs.get("dataset_dir", "data"), str):
        raise CheckError(cfg.where("dataset_dir"), "dataset_dir is not a path",
                         f"Name the directory holding {DATA_CONFIG}")
    try:
        return DataArguments(**kwargs)
    except (ValueError, TypeError) as err:
        raise CheckError(cfg.path, f"LLaMA-Factory refuses the data keys: {err}", "Fix the YAML")


def check_stage(cfg):
    stage = cfg.get("stage")
    if stage is not None and stage not in PAIRWISE_STAGES:
        raise CheckError(cfg.where("stage"), f"stage {stage!r} does not train on preference pairs",
                         "This check measures DPO/RM pairs (stage: dpo or rm)")


# ---- tokenizer and chat template -------------------------------------------


def load_tokenizer(cfg):
    """The model's tokenizer as LLaMA-Factory loads it (model/loader.py,
    load_tokenizer; patcher.py adds add_tokens / add_special_tokens)."""
    from transformers import AutoTokenizer

    model = cfg.require("model_name_or_path", "model_name_or_path: the model directory")
    fix = ("Point model_name_or_path at the model directory (with its tokenizer files) that the job "
           "reads, and run from the directory the job is submitted from")
    # A path that is not there would be taken for a hub id, with an error
    # about repository names.
    if str(model).startswith(("/", ".", "~")) and not os.path.isdir(os.path.expanduser(str(model))):
        raise CheckError(cfg.where("model_name_or_path"), f"model_name_or_path: no directory {model}", fix)
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            model,
            use_fast=cfg.get("use_fast_tokenizer", True),
            split_special_tokens=cfg.get("split_special_tokens", False),
            trust_remote_code=cfg.get("trust_remote_code", False),
            revision=cfg.get("model_revision", "main"),
            cache_dir=cfg.get("cache_dir"),
            padding_side="right",
        )
    except Exception as err:  # transformers raises OSError, ValueError and more
        raise CheckError(cfg.where("model_name_or_path"), f"cannot load the tokenizer of {model}: {reason(err)}", fix)
    for key, special in (("add_tokens", False), ("add_special_tokens", True)):
        if cfg.get(key):
            words = [w.strip() for w in str(cfg.get(key)).split(",")]
            tokenizer.add_tokens(words, special_tokens=special)
    return tokenizer


def load_template(cfg, tokenizer, data_args):
    from llamafactory.data.template import TEMPLATES, get_template_and_fix_tokenizer

    name = data_args.template
    if name is not None and name not in TEMPLATES:
        raise CheckError(cfg.where("template"), f"template {name!r} is not one of LLaMA-Factory's templates",
                         f"{did_you_mean(str(name), TEMPLATES)}The names are those of "
                         "src/llamafactory/data/template.py's register_template")
    try:
        return get_template_and_fix_tokenizer(tokenizer, data_args)
    except ValueError as err:
        raise CheckError(cfg.where("template"), f"LLaMA-Factory refuses the template: {err}", "Fix the YAML")


# ---- datasets: dataset_info.json and the files it names --------------------


def read_json_file(path, where, what):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise CheckError(where, f"cannot read {what} {path}: {err}",
                         f"Set dataset_dir to the directory holding {DATA_CONFIG}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise CheckError(at(path, (err.lineno, err.colno)), f"JSON syntax error: {err.msg}", "Fix the file")


def dataset_entry(cfg, data_args, name, info, info_path):
    """The entry of dataset NAME, checked as a local file of pairs."""
    if name not in info:
        raise CheckError(cfg.where("dataset"), f"dataset {name!r} is not in {info_path}",
                         f"{did_you_mean(name, info)}Add an entry for it there (file_name, "
                         f"\"ranking\": true, columns), or name one of: {', '.join(sorted(info)) or 'none'}")
    entry = info[name]
    where = f"{info_path}: dataset {name!r}"
    if not isinstance(entry, dict):
        raise CheckError(where, "the entry is not a JSON object", "Write it as LLaMA-Factory's data/README.md shows")
    remote = [k for k in ("hf_hub_url", "ms_hub_url", "om_hub_url", "script_url", "cloud_file_name") if k in entry]
    if remote:
        raise CheckError(where, f"loaded through {remote[0]}, not from a local file",
                         "This check reads local files only: download the data, register it with "
                         "file_name, or skip the check (DPO_DATA_CHECK=off)")
    if not isinstance(entry.get("file_name"), str):
        raise CheckError(where, "no file_name", "Name the data file (relative to dataset_dir) in file_name")
    if entry.get("ranking") is not True:
        raise CheckError(where, "no \"ranking\": true: LLaMA-Factory reads it as single answers, not pairs",
                         "Add \"ranking\": true and the chosen and rejected columns")
    return entry


def dataset_attrs(cfg, data_args):
    """(name, DatasetAttr, path of its data) for each dataset of the YAML,
    as LLaMA-Factory's parser.py reads them."""
    from llamafactory.data.parser import get_dataset_list

    names = data_args.dataset or []
    info_path = os.path.join(data_args.dataset_dir, DATA_CONFIG)
    info = read_json_file(info_path, cfg.where("dataset_dir"), "the dataset list")
    if not isinstance(info, dict):
        raise CheckError(info_path, "not a JSON object of dataset entries", "Write it as LLaMA-Factory's data/README.md shows")
    out = []
    for name in names:
        entry = dataset_entry(cfg, data_args, name, info, info_path)
        attr = get_dataset_list([name], data_args.dataset_dir)[0]
        if attr.formatting not in COLUMNS:
            raise CheckError(f"{info_path}: dataset {name!r}", f"formatting {attr.formatting!r} is not known",
                             f"Use one of: {', '.join(COLUMNS)}")
        out.append((name, attr, os.path.join(data_args.dataset_dir, entry["file_name"]), info_path))
    return out


def data_files(path, where):
    """The files of a dataset, as LLaMA-Factory's loader.py lists them (a
    file, or every file of a directory in os.listdir order)."""
    if os.path.isdir(path):
        files = [os.path.join(path, f) for f in os.listdir(path)]
    elif os.path.isfile(path):
        files = [path]
    else:
        raise CheckError(where, f"file_name: {path} not found",
                         "Set file_name relative to dataset_dir, and run from the directory the job is submitted from")
    if not files:
        raise CheckError(where, f"file_name: {path} is an empty directory", "Put the data files there")
    return files


def json_rows(path):
    """(line, row) of a JSON list of objects, or of JSON lines."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as err:
        raise CheckError(path, f"cannot read the data file: {err}", "Check the path and its permissions")
    space = re.compile(r"[ \t\r\n]*")
    pos = space.match(text).end()
    if not text.startswith("[", pos):
        return list(_json_lines(path, text))
    return list(_json_list(path, text, space, space.match(text, pos + 1).end()))


def _json_error(path, text, pos, msg):
    line = text.count("\n", 0, pos) + 1
    col = pos - text.rfind("\n", 0, pos)
    return CheckError(at(path, (line, col)), f"JSON syntax error: {msg}",
                      "A dataset file holds a JSON list of objects, or one JSON object per line")


def _json_list(path, text, space, pos):
    # Walks the list itself so that each row keeps the line it starts on.
    decoder = json.JSONDecoder()
    line, counted = 1, 0
    if text.startswith("]", pos):
        return
    while True:
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            row, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise _json_error(path, text, err.pos, err.msg)
        yield line, row
        pos = space.match(text, end).end()
        if text.startswith(",", pos):
            pos = space.match(text, pos + 1).end()
        elif text.startswith("]", pos):
            pos = space.match(text, pos + 1).end()
            if pos != len(text):
                raise _json_error(path, text, pos, "extra data after the list")
            return
        else:
            raise _json_error(path, text, pos, "expecting ',' or ']'")


def _json_lines(path, text):
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as err:
                raise CheckError(at(path, (n, err.colno)), f"JSON syntax error: {err.msg}",
                                 "A dataset file holds a JSON list of objects, or one JSON object per line")


def other_rows(path, builder):
    """(None, row) of a csv/parquet/arrow/text file, read by the datasets
    library as LLaMA-Factory's loader does."""
    from datasets import load_dataset

    try:
        return [(None, r) for r in load_dataset(builder, data_files=[path], split="train").to_list()]
    except Exception as err:  # datasets raises many kinds
        raise CheckError(path, f"cannot read the data file: {reason(err)}", "Check the file")


def file_rows(path, where):
    """Rows of one data file as dicts that have every column of the file
    (None where a row lacks one, as the datasets library fills them)."""
    from llamafactory.extras.constants import FILEEXT2TYPE

    builder = FILEEXT2TYPE.get(os.path.splitext(path)[1][1:])
    if builder is None:
        raise CheckError(where, f"{path}: LLaMA-Factory reads no such file type",
                         f"Use one of: {', '.join(FILEEXT2TYPE)}")
    rows = json_rows(path) if builder == "json" else other_rows(path, builder)
    for line, row in rows:
        if not isinstance(row, dict):
            raise CheckError(at(path, (line, 1)) if line else path, "a row is not a JSON object",
                             "Each row is an object with the columns dataset_info.json names")
    columns = {k for _, row in rows for k in row}
    return [(line, {c: row.get(c) for c in columns}) for line, row in rows], columns


def check_columns(attr, columns, path, info_path, name):
    for field in COLUMNS[attr.formatting] + MEDIA_COLUMNS:
        column = getattr(attr, field)
        if column and column not in columns:
            raise CheckError(f"{info_path}: dataset {name!r}",
                             f"column {column!r} ({field}) is not in {path}, whose columns are: "
                             f"{', '.join(sorted(columns)) or 'none'}",
                             f"LLaMA-Factory fails on it too (KeyError). Name the file's column in "
                             f"\"columns\": {{\"{field}\": ...}}, or null when the file has none "
                             f"(formatting {attr.formatting})")


# ---- measuring -------------------------------------------------------------


@dataclasses.dataclass
class Pair:
    dataset: str
    path: str
    index: int  # 0-based, in the file
    line: int  # where the row starts, 0 when unknown
    prompt: int
    chosen: int
    rejected: int

    def where(self):
        return f"{self.path}:{self.line}" if self.line else self.path


def encode_pair(template, tokenizer, example):
    """Token counts of prompt, chosen, rejected as pairwise.py makes them, or
    None for a pair it drops (preprocess_dataset's check)."""
    prompt, response = example["_prompt"], example["_response"]
    if len(prompt) % 2 != 1 or len(response) < 2:
        return None
    system, tools = example["_system"], example["_tools"]
    prompt_ids, chosen_ids = template.encode_oneturn(tokenizer, prompt + [response[0]], system, tools)
    _, rejected_ids = template.encode_oneturn(tokenizer, prompt + [response[1]], system, tools)
    eos = 1 if template.efficient_eos else 0
    return len(prompt_ids), len(chosen_ids) + eos, len(rejected_ids) + eos


def count_text(count, tokenizer, example):
    """The pair's own text into count: system prompt, prompt turns, both
    answers."""
    count.add(tokenizer, example.get("_system"))
    for message in (example.get("_prompt") or []) + (example.get("_response") or [])[:2]:
        if isinstance(message, dict):
            count.add(tokenizer, message.get("content"))


def measure(data_args, template, tokenizer, name, attr, path, info_path, count=None):
    """Pairs of one dataset, the rows LLaMA-Factory drops, and how many rows
    carry media; the measured pairs' text into count (a TextCount)."""
    from llamafactory.data.converter import get_dataset_converter

    converter = get_dataset_converter(attr.formatting, attr, data_args)
    where = f"{info_path}: dataset {name!r}"
    pairs, dropped, media, seen = [], [], 0, 0
    for file in data_files(path, where):
        rows, columns = file_rows(file, where)
        check_columns(attr, columns, file, info_path, name)
        for index, (line, row) in enumerate(rows):
            if data_args.max_samples is not None and seen >= data_args.max_samples:
                return pairs, dropped, media
            seen += 1
            try:
                example = converter(row)
                counts = encode_pair(template, tokenizer, example)
            except Exception as err:  # a row the converter or template cannot read
                raise CheckError(at(file, (line, 1)) if line else file,
                                 f"row {index} cannot be read as {attr.formatting} pairs: {reason(err)}",
                                 "Check the row against the columns and tags of its dataset_info.json entry")
            if any(example.get(k) for k in ("_images", "_videos", "_audios")):
                media += 1
            if counts is None:
                dropped.append(Pair(name, file, index, line or 0, 0, 0, 0))
            else:
                pairs.append(Pair(name, file, index, line or 0, *counts))
                if count is not None:
                    count_text(count, tokenizer, example)
    return pairs, dropped, media


# ---- the report ------------------------------------------------------------


def nearest_rank(sorted_values, p):
    """The p-th percentile by nearest rank: a value of the data itself."""
    return sorted_values[max(0, math.ceil(p / 100 * len(sorted_values)) - 1)]


def table(pairs, cutoff_len, max_prompt, cpt=0.0):
    def chars(n):
        return f", ~{in_chars(n, cpt):,} characters" if cpt else ""

    rows = [
        ("prompt", [p.prompt for p in pairs],
         f"{max_prompt} (--max-prompt-tokens, as trained{chars(max_prompt)})" if max_prompt else ""),
        ("chosen", [p.chosen for p in pairs], ""),
        ("rejected", [p.rejected for p in pairs], ""),
        ("prompt+answer", [p.prompt + max(p.chosen, p.rejected) for p in pairs],
         f"{cutoff_len} (cutoff_len{chars(cutoff_len)})"),
    ]
    lines = [f"  {'':<14}{'count':>8}{'p50':>8}{'p90':>8}{'p99':>8}{'max':>8}  limit"]
    for label, values, limit in rows:
        v = sorted(values)
        stats = [len(v)] + [nearest_rank(v, p) for p in (50, 90, 99, 100)]
        lines.append(f"  {label:<14}" + "".join(f"{s:>8}" for s in stats) + f"  {limit}".rstrip())
    return lines


def over_limits(pair, cutoff_len, max_prompt):
    """Why PAIR is over, or "" when it fits. The kept lengths are
    LLaMA-Factory's own cut (processor_utils.py, infer_seqlen)."""
    from llamafactory.data.processor.processor_utils import infer_seqlen

    answer = max(pair.chosen, pair.rejected)
    kept_prompt, kept_answer = infer_seqlen(pair.prompt, answer, cutoff_len)
    why = []
    if pair.prompt + answer > cutoff_len:
        why.append(f"prompt+answer {pair.prompt + answer} > cutoff_len {cutoff_len}: "
                   f"LLaMA-Factory keeps prompt {kept_prompt} + answer {kept_answer}")
    if max_prompt and kept_prompt > max_prompt:
        why.append(f"prompt as trained {kept_prompt} > --max-prompt-tokens {max_prompt}")
    return "; ".join(why)


def report(cfg, template_name, pairs, dropped, media, cutoff_len, max_prompt, show, count=None):
    """Print the report; return the exit status."""
    import llamafactory
    import transformers

    say(f"{cfg.path}: {len(pairs)} pairs, tokens as LLaMA-Factory {llamafactory.__version__} "
        f"encodes them (template {template_name}, tokenizer of {cfg.get('model_name_or_path')})")
    say(stack_line(llamafactory.__version__, transformers.__version__))
    cpt = count.per_token() if count is not None else 0.0
    if cpt:
        say(f"units: {cpt:.2f} characters per token on this data ({count.chars:,} characters of the pairs' "
            f"text in {count.tokens:,} tokens, without the chat template); cutoff_len "
            f"{both_units(cutoff_len, cpt)}"
            + (f", --max-prompt-tokens {both_units(max_prompt, cpt)}" if max_prompt else ""))
    if dropped:
        say(f"note: {len(dropped)} rows that LLaMA-Factory drops as invalid pairs (not measured), first: "
            + ", ".join(f"{d.dataset} row {d.index} ({d.where()})" for d in dropped[:5]))
    if media:
        say(f"note: {media} rows have images, videos or audio: their tokens are not counted")
    if not pairs:
        say("no pairs to measure")
        return EXIT_FIT
    for line in table(pairs, cutoff_len, max_prompt, cpt):
        print(line)
    over = [(p, why) for p in pairs if (why := over_limits(p, cutoff_len, max_prompt))]
    if not over:
        say(f"all {len(pairs)} pairs fit")
        return EXIT_FIT
    limits = f"cutoff_len {cutoff_len}" + (f" or --max-prompt-tokens {max_prompt}" if max_prompt else "")
    say(f"{len(over)} of {len(pairs)} pairs are over {limits}:")
    for p, why in over if show == 0 else over[:show]:
        print(f"  {p.dataset} row {p.index} ({p.where()}): prompt {p.prompt}, chosen {p.chosen}, "
              f"rejected {p.rejected}: {why}")
    if 0 < show < len(over):
        print(f"  ... and {len(over) - show} more (--show 0 lists all)")
    return EXIT_OVER


def say(text):
    print(f"{PROG}: {text}", flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Token lengths of the DPO pairs of a LLaMA-Factory training YAML against cutoff_len.",
        epilog="Exit status: 0 all pairs fit, 3 some are over (listed), 1 the check cannot be made, 2 usage error.")
    parser.add_argument("config", help="the YAML given to llamafactory-cli train")
    parser.add_argument("--max-prompt-tokens", type=int, metavar="N", default=0,
                        help="the longest prompt the memory plan allows (0: no limit)")
    parser.add_argument("--show", type=int, metavar="N", default=50,
                        help="list at most N pairs that are over (0: all; default 50)")
    parser.add_argument("--host-base", metavar="SIZE", type=str, default=None,
                        help="node 0's host memory at a save without use_unsloth_gc's pinned blocks (distenv plan "
                             "--json: host_bytes_steady + host_bytes_gather), with its unit: 600G")
    parser.add_argument("--host-mem", metavar="SIZE", type=str, default=None,
                        help="the memory of node 0 the job may use, with its unit: 1T")
    parser.add_argument("--gpus-per-node", type=int, metavar="G", default=8,
                        help="GPUs (training processes) per node (default 8)")
    args = parser.parse_args(argv)
    if args.max_prompt_tokens < 0 or args.show < 0:
        parser.error("--max-prompt-tokens and --show take a count >= 0")
    if args.gpus_per_node < 1:
        parser.error("--gpus-per-node takes a count >= 1")
    for name in ("host_base", "host_mem"):
        value = getattr(args, name)
        if value is not None and size(value) is None:
            parser.error(f"--{name.replace('_', '-')}: {value!r} is not a size with a unit (600G, 1T)")
        setattr(args, name, None if value is None else size(value))
    return args


def run(args):
    cfg = Config(args.config)
    check_stage(cfg)
    cfg.require("model_name_or_path", "model_name_or_path: the model directory")
    cfg.require("dataset", "dataset: NAME (an entry of dataset_info.json)")
    # Imported only now: they take seconds, and a YAML mistake needs none.
    os.environ.setdefault("LLAMAFACTORY_VERBOSITY", "WARN")
    data_args = data_arguments(cfg)
    datasets = dataset_attrs(cfg, data_args)
    tokenizer = load_tokenizer(cfg)
    template = load_template(cfg, tokenizer, data_args)
    pairs, dropped, media, count = [], [], 0, TextCount()
    for name, attr, path, info_path in datasets:
        p, d, m = measure(data_args, template, tokenizer, name, attr, path, info_path, count)
        pairs, dropped, media = pairs + p, dropped + d, media + m
    status = report(cfg, data_args.template, pairs, dropped, media, data_args.cutoff_len,
                    args.max_prompt_tokens, args.show, count)
    if host_check(cfg, pairs, data_args.cutoff_len, args, say):
        status = EXIT_OVER
    return status


def main(argv):
    args = parse_args(argv)
    try:
        return run(args)
    except CheckError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return EXIT_ERROR
    except ImportError as err:
        print(f"{PROG}: error: {err}. Run it with the Python that runs llamafactory-cli "
              "(the job's environment: LLaMA-Factory, transformers, PyYAML)", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
