"""Host memory at a save, per row, for templates/check_data_lengths.py.

Under LLaMA-Factory's use_unsloth_gc (model/model_utils/checkpointing.py)
every layer's input, 2 bytes x hidden_size per token of the step, is
copied to the host with a non-blocking copy, which PyTorch allocates
pinned (aten/src/ATen/native/TensorConversions.cpp, _to_copy) from its
caching host allocator (aten/src/ATen/core/CachingHostAllocator.h): each
block is rounded up to a power of two, and a freed block is kept for its
size class for the rest of training. A step of rows of s tokens (batch b
examples, chosen and rejected padded to one length: 2b rows) pins one
block of pow2ceil(2 x hidden x 2b x s) bytes per layer. A row whose
block is of a larger class than the others' adds that class, on top of
the ones already cached, on every GPU it reaches; the sampler reshuffles
each epoch, so that may first happen late in training, and a save (the
16-bit gather on node 0) then finds less free memory than earlier ones.
docs/memory.md, "Host memory per node". Standard library only.
"""

import json
import os

MIB = 2**20
GIB = 2**30


def pow2ceil(x):
    p = 1
    while p < x:
        p *= 2
    return p


def size(text):
    """'1T', '512G', '80GiB' as bytes (binary units, as distenv), None if
    not a size."""
    t = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    if len(t) < 2 or t[-1] not in units:
        return None
    try:
        value = float(t[:-1])
    except ValueError:
        return None
    return int(value * units[t[-1]]) if value > 0 else None


def model_shape(model_dir):
    """(hidden_size, num_hidden_layers) of config.json in model_dir, or
    None when it cannot be read."""
    try:
        with open(os.path.join(os.path.expanduser(str(model_dir)), "config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        cfg = cfg.get("text_config", cfg)
        return int(cfg["hidden_size"]), int(cfg["num_hidden_layers"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def row_class(tokens, hidden, batch):
    """The pinned block class of one layer's input for a step of rows of
    tokens each (2 x batch rows, 16-bit)."""
    return pow2ceil(2 * hidden * 2 * batch * tokens)


def fmt(nbytes):
    """A power-of-two size as GiB, MiB or KiB."""
    for unit, name in ((GIB, "GiB"), (MIB, "MiB"), (1024, "KiB")):
        if nbytes >= unit:
            return f"{nbytes / unit:g} {name}"
    return f"{nbytes} B"


def host_check(cfg, pairs, cutoff_len, args, say):
    """Print the host memory report of the pairs under use_unsloth_gc;
    return True when node 0's save could be killed (over --host-mem)."""
    if not cfg.get("use_unsloth_gc") or cfg.get("disable_gradient_checkpointing"):
        return False
    shape = model_shape(cfg.get("model_name_or_path"))
    if shape is None or not pairs:
        say("host at save: use_unsloth_gc is on, but the model's config.json (hidden_size, "
            "num_hidden_layers) cannot be read: pinned blocks not counted")
        return False
    hidden, layers = shape
    batch = cfg.get("per_device_train_batch_size", 8)
    batch = batch if isinstance(batch, int) and batch > 0 else 8
    rows = [(p, min(p.prompt + max(p.chosen, p.rejected), cutoff_len)) for p in pairs]
    classes = {}
    for p, tokens in rows:
        classes.setdefault(row_class(tokens, hidden, batch), []).append(p)
    median = row_class(sorted(t for _, t in rows)[(len(rows) - 1) // 2], hidden, batch)
    say(f"host at save (use_unsloth_gc: {layers} layers x one pinned block per step, rounded up to a "
        f"power of two; hidden_size {hidden}, batch {batch}): "
        + ", ".join(f"{fmt(c)}: {len(ps)} rows" for c, ps in sorted(classes.items())))
    above = [p for c, ps in sorted(classes.items()) if c > median for p in ps]
    if above:
        limit = max(t for _, t in rows if row_class(t, hidden, batch) <= median)
        say(f"{len(above)} rows cross a class boundary above the median row's {fmt(median)} "
            f"(rows up to {limit} tokens stay in it): "
            + ", ".join(f"{p.dataset} row {p.index}" for p in above[:args.show or len(above)]))
    cached = layers * sum(classes)  # per GPU, every class seen kept
    worst_gpu = layers * max(classes)
    if args.host_base is None or args.host_mem is None:
        say(f"host at save: per GPU {fmt(worst_gpu)} pinned, up to {fmt(cached)} with every class cached; "
            "give --host-base and --host-mem for node 0's worst")
        return False
    worst = args.host_base + args.gpus_per_node * cached
    over = worst > args.host_mem
    say(f"node 0 at a save, worst: {worst / GIB:.1f} GiB = {args.host_base / GIB:.1f} (--host-base) + "
        f"{args.gpus_per_node} GPUs x {fmt(cached)} (classes "
        + " + ".join(fmt(layers * c) for c in sorted(classes))
        + f" cached), against --host-mem {args.host_mem / GIB:.1f} GiB"
        + (": the save could be killed (exit -9)" if over else ""))
    if over:
        say("fix: cap the answers (cutoff_len) so that the rows stay in "
            f"{fmt(median)} blocks, pin_memory: false in the DeepSpeed offload config, or fewer long rows"
            + (f"; the rows above the median's class: {len(above)}" if above else ""))
    return over
