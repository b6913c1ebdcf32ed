"""Measure a DPO step's GPU memory on one CUDA GPU and compare it with
distenv's plan (docs/memory.md, plugin/plan/plan_activation.c).

    python3 bench/gpu_dpo_memory.py [--out FILE] [--distenv PATH]
    python3 bench/gpu_dpo_memory.py --device cpu --quick     # code paths only

Needs torch and transformers only: no LLaMA-Factory, no network, no
download (a Qwen2 config with random weights is built in code: Qwen2's
vocabulary of 152,064 entries, a small hidden size and 2 layers, so that
the logits dominate and a step takes well under a second; bf16 on CUDA).

The DPO step is reimplemented from LLaMA-Factory's sources, in three forms:

- no_labels (LLaMA-Factory 0.9.4+, train/dpo/trainer.py
  concatenated_forward: `labels = batch.pop("labels")` before the model
  call): the model returns 16-bit logits only;
- labels_t446 (LLaMA-Factory 0.8.0-0.9.3 pass the batch with its labels
  into the model; on transformers 4.46-4.48 the model then computes its
  own cross-entropy, transformers 4.46.0 src/transformers/loss/
  loss_utils.py ForCausalLMLoss: an fp32 copy of the logits, a shifted
  contiguous copy, cross_entropy's log_softmax). That loss is
  reimplemented here and computed inside the same window (after the
  lm_head, before the model's output is dropped), so the installed
  transformers version does not matter;
- labels_native: labels passed to the installed transformers' model as
  0.8.0-0.9.3 do (transformers 5.x's ForCausalLMLoss pads the labels
  instead of copying shifted logits: a different, smaller cost).

Each form: the policy's forward on chosen + rejected (one padded pair),
the logits cast to fp32, per-token log-probabilities gathered from
log_softmax (LLaMA-Factory 0.9.5 train/trainer_utils.py get_batch_logps),
the reference model's forward under no_grad while the policy's fp32
logits are held (get_batch_loss_metrics keeps them for its metrics), the
sigmoid DPO loss, the metrics, the backward. Gradient checkpointing on
(use_reentrant, as LLaMA-Factory model/model_utils/checkpointing.py),
sdpa attention, the policy's weight gradients allocated before the step
(as after a run's first step; no optimizer: its states are model states,
not activations).

Measured (CUDA: torch.cuda.max_memory_allocated/reserved after
reset_peak_memory_stats; CPU: torch's profiler, as bench/dpo_step_memory.py):

1. coef: the peak bytes above the pre-step baseline divided by
   tokens x vocabulary, per phase and for the step, per form, at a few
   row lengths, beside the plan's 20 (12 for the policy's forward);
2. frag (CUDA only): max_memory_reserved / max_memory_allocated over
   steps of varying row lengths, without and with
   PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (each in its own
   subprocess: the variable is read when CUDA initialises), beside the
   plan's usable-fraction band;
3. cap (CUDA only): the longest row whose step completes under
   torch.cuda.set_per_process_memory_fraction(cap / device memory),
   found by bisection, beside the row the plan's terms predict for the
   same shape and the same static bytes.

Every worker runs in a subprocess of this script, so that the main
process never holds GPU memory. Output: `name value` lines, a summary
table, and a JSON file (--out; default $OUT/gpu_dpo_memory.json if OUT is
set, else ./gpu_dpo_memory.json).
"""

import argparse
import gc
import json
import os
import platform
import random
import subprocess
import sys
import time

from plan_query import distenv_plan_terms  # bench/plan_query.py

GIB = 2.0 ** 30
IGNORE_INDEX = -100  # LLaMA-Factory extras/constants.py IGNORE_INDEX
BETA = 0.1  # LLaMA-Factory hparams/finetuning_args.py pref_beta default
PAD = 16  # the rejected row is this much shorter, padded (as the collator)

# The plan's numbers, hard-coded from the sources (the GPU machine has no
# distenv binary; --distenv PATH asks a binary instead and checks these):
# plugin/plan/plan_activation.c plan_act_logit_bytes: bytes per token and
# vocabulary entry at the step's peak, with / without a reference model;
# 12 is also the policy's forward alone.
PLAN_LOGIT_BYTES_REF = 20.0
PLAN_LOGIT_BYTES_NOREF = 12.0
# plugin/plan/plan_activation.c plan_act_terms: what the policy holds
# through the reference forward (fp32 logits + saved log_softmax output).
PLAN_LOGIT_BYTES_HELD = 8.0
# plugin/plan/plan_seqfit.h: usable fraction of a GPU's memory, without
# and with expandable segments (an assumption the plan prints as a band).
PLAN_FRAG = {"off": (0.80, 0.95), "on": (0.95, 0.99)}

FORMS = ("no_labels", "labels_t446", "labels_native")

# Model shapes. vocab 152064: Qwen2-7B/72B config.json vocab_size.
SHAPE_GPU = dict(vocab_size=152064, hidden_size=512, intermediate_size=1408,
                 num_hidden_layers=2, num_attention_heads=8,
                 num_key_value_heads=2)
SHAPE_QUICK = dict(vocab_size=32768, hidden_size=128, intermediate_size=352,
                   num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2)


# ---------------------------------------------------------------- the plan

def plan_act_terms(cfg, seq, pairs=1, grad_ckpt=True, reference=True):
    """plugin/plan/plan_activation.c plan_act_terms, ported for sdpa, no
    Liger, no unsloth: the activation bytes of one step at its peak, and
    the phase. Checked against `distenv plan --json` with --distenv."""
    h = float(cfg["hidden_size"])
    i = float(cfg["intermediate_size"])
    a = float(cfg["num_attention_heads"])
    hd = h / a
    hq = a * hd
    v = float(cfg["vocab_size"])
    layers = float(cfg["num_hidden_layers"])
    rows = 2.0 * pairs
    t = rows * seq
    # plan_act_layer_saved_bytes, sdpa: attn + mlp + norms
    saved = (2 * h + 2 * hq + 4 * hq + 4 * hq + 4 * a) + (2 * h + 8 * i) + 2 * 6 * h
    block = 2 * h * t
    logit_bytes = PLAN_LOGIT_BYTES_REF if reference else PLAN_LOGIT_BYTES_NOREF
    logits = logit_bytes * t * v
    held = PLAN_LOGIT_BYTES_HELD * t * v
    ckpt_inputs = layers * block if grad_ckpt else 0.0
    layer_terms = 0.0 if grad_ckpt else layers * saved * t
    head = 6 * h * t + 2 * h * t
    attn_mask = rows * seq * seq  # sdpa: a boolean (rows, 1, s, s) mask
    logit_phase = logits + head
    ref_phase = held + head + (8 * h + 6 * i) * t if reference else 0.0
    bwd_phase = (4 * h + 4 * i + 2 * h) * t + (saved * t if grad_ckpt else 0.0)
    if logit_phase >= ref_phase and logit_phase >= bwd_phase:
        phase, peak_var = "logits", logit_phase
    elif ref_phase >= bwd_phase:
        phase, peak_var = "ref_layer", ref_phase
    else:
        phase, peak_var = "backward", bwd_phase
    return {"tokens": t, "logits": logits if phase == "logits" else held,
            "peak": ckpt_inputs + layer_terms + attn_mask + peak_var, "phase": phase}


def plan_longest_row(cfg, static, usable, lo=1, limit=1 << 20):
    """The longest row whose static + activation peak fits in usable bytes
    (plugin/plan/plan_seqfit.c longest_row: doubling, then bisection)."""
    def fits(s):
        return static + plan_act_terms(cfg, s)["peak"] <= usable
    if not fits(lo):
        return 0
    hi = lo
    while hi < limit and fits(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


# ------------------------------------------------------------ the DPO step

def get_batch_logps(logits, labels):
    """LLaMA-Factory 0.9.5 train/trainer_utils.py get_batch_logps (ld_alpha
    None): log_softmax over the whole vocabulary of logits[:, :-1]."""
    import torch
    labels = labels[:, 1:].clone()
    logits = logits[:, :-1, :]
    loss_mask = labels != IGNORE_INDEX
    labels[labels == IGNORE_INDEX] = 0
    per_token_logps = torch.gather(logits.log_softmax(-1), dim=2, index=labels.unsqueeze(2)).squeeze(2)
    valid_length = loss_mask.sum(-1)
    return (per_token_logps * loss_mask).sum(-1), valid_length


def causal_lm_loss_t446(logits, labels, vocab_size):
    """transformers 4.46.0 src/transformers/loss/loss_utils.py
    ForCausalLMLoss (also 4.47, 4.48): fp32 copy, shifted contiguous
    copy, cross_entropy (log_softmax + nll_loss)."""
    import torch.nn.functional as F
    logits = logits.float()
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous()
    shift_logits = shift_logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1).to(shift_logits.device)
    return F.cross_entropy(shift_logits, shift_labels, ignore_index=IGNORE_INDEX)


def model_logits(model, batch, form):
    """The model call of concatenated_forward, returning the 16-bit logits.
    The model's own loss, where there is one, is dropped with the output
    object, as LLaMA-Factory reads `.logits` only."""
    kw = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
              use_cache=False, return_dict=True)
    if form == "no_labels":
        return model(**kw).logits
    if form == "labels_native":
        return model(**kw, labels=batch["labels"]).logits
    # labels_t446: transformers 4.46-4.48 models/qwen2/modeling_qwen2.py
    # Qwen2ForCausalLM.forward computes self.loss_function(logits, labels,
    # vocab_size) right after lm_head, in the model's dtype logits.
    out = model(**kw)
    logits = out.logits
    del out
    loss = causal_lm_loss_t446(logits, batch["labels"], model.config.vocab_size)
    del loss
    return logits


def concatenated_forward(model, batch, form):
    """LLaMA-Factory 0.9.5 train/dpo/trainer.py concatenated_forward (its
    0.8.0-0.9.3 form passes the labels into the model: model_logits)."""
    import torch
    all_logits = model_logits(model, batch, form).to(torch.float32)
    all_logps, valid_length = get_batch_logps(all_logits, batch["labels"])
    b = batch["input_ids"].size(0) // 2
    chosen_logps, rejected_logps = all_logps.split(b, dim=0)
    chosen_logits, rejected_logits = all_logits.split(b, dim=0)
    chosen_length, _ = valid_length.split(b, dim=0)
    return {"chosen_logps": chosen_logps, "rejected_logps": rejected_logps,
            "chosen_logits": chosen_logits, "rejected_logits": rejected_logits,
            "chosen_logps_avg": chosen_logps / chosen_length}


def compute_reference_log_probs(ref, batch, form):
    """train/dpo/trainer.py compute_reference_log_probs: under no_grad."""
    import torch
    with torch.no_grad():
        out = concatenated_forward(ref, batch, form)
        return out["chosen_logps"], out["rejected_logps"]


def get_batch_loss_metrics(policy, ref, batch, form, mark):
    """train/dpo/trainer.py get_batch_loss_metrics, sigmoid loss
    (trl's DPOTrainer.dpo_loss for loss_type sigmoid, label_smoothing 0),
    ftx_gamma 0; mark(phase) between the phases."""
    import torch.nn.functional as F
    out = concatenated_forward(policy, batch, form)
    mark("policy_forward")
    rc, rr = compute_reference_log_probs(ref, batch, form)
    mark("reference_forward")
    pc, pr = out["chosen_logps"], out["rejected_logps"]
    logits = (pc - pr) - (rc - rr)
    losses = -F.logsigmoid(BETA * logits)
    chosen_rewards = BETA * (pc - rc).detach()
    rejected_rewards = BETA * (pr - rr).detach()
    metrics = {
        "rewards/chosen": chosen_rewards.mean().item(),
        "rewards/rejected": rejected_rewards.mean().item(),
        "rewards/accuracies": (chosen_rewards > rejected_rewards).float().mean().item(),
        "logps/chosen": pc.mean().item(),
        "logits/chosen": out["chosen_logits"].mean().item(),
        "logits/rejected": out["rejected_logits"].mean().item(),
    }
    return losses.mean(), metrics


def make_models(cfg, device):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    torch.manual_seed(0)
    config = Qwen2Config(**cfg, max_position_embeddings=1 << 18, attn_implementation="sdpa",
                         tie_word_embeddings=False, use_cache=False)
    with torch.device(device):
        policy = Qwen2ForCausalLM(config).to(torch.bfloat16)
        ref = Qwen2ForCausalLM(config).to(torch.bfloat16)
    ref.eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    # LLaMA-Factory model/model_utils/checkpointing.py: gradient
    # checkpointing with use_reentrant (use_reentrant_gc default true) and
    # enable_input_require_grads.
    policy.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    policy.enable_input_require_grads()
    policy.train()
    for p in policy.parameters():
        p.grad = torch.zeros_like(p)
    return policy, ref


def make_batch(vocab, seq, device, pairs=1):
    """pairs x (chosen, rejected) rows of seq tokens; the rejected row is
    PAD tokens shorter and padded (so transformers builds the 4D mask, the
    case the plan counts); the prompt's labels masked."""
    import torch
    g = torch.Generator().manual_seed(seq)
    rows = 2 * pairs
    ids = torch.randint(3, vocab, (rows, seq), generator=g)
    labels = ids.clone()
    answer = max(1, min(64, seq // 4))
    labels[:, : seq - answer] = IGNORE_INDEX
    mask = torch.ones_like(ids)
    mask[pairs:, seq - PAD:] = 0
    labels[pairs:, seq - PAD:] = IGNORE_INDEX
    return {k: t.to(device) for k, t in
            (("input_ids", ids), ("attention_mask", mask), ("labels", labels))}


class CudaTracker:
    """Peak allocated bytes above the baseline, per phase."""

    def __init__(self):
        import torch
        self.torch = torch
        self.peaks = {}
        self.reserved = 0

    def start(self):
        t = self.torch
        t.cuda.synchronize()
        self.base = t.cuda.memory_allocated()
        t.cuda.reset_peak_memory_stats()

    def mark(self, name):
        t = self.torch
        t.cuda.synchronize()
        self.peaks[name] = t.cuda.max_memory_allocated() - self.base
        self.reserved = max(self.reserved, t.cuda.max_memory_reserved())
        t.cuda.reset_peak_memory_stats()

    def finish(self):
        return self.peaks


class CpuTracker:
    """torch's profiler on the CPU allocator (bench/dpo_step_memory.py);
    phases split by record_function markers."""

    def __init__(self):
        from torch.profiler import ProfilerActivity, profile, record_function
        self.record_function = record_function
        self.prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
        self.names = []
        self.reserved = 0

    def start(self):
        self.prof.__enter__()

    def mark(self, name):
        self.names.append(name)
        with self.record_function("distenv_mark_" + name):
            pass

    def finish(self):
        self.prof.__exit__(None, None, None)
        events = self.prof.profiler.kineto_results.events()
        ends = []
        for name in self.names:
            ns = min(e.start_ns() for e in events if e.name() == "distenv_mark_" + name)
            ends.append((ns, name))
        peaks = {n: 0 for n in self.names}
        live = 0
        for e in sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns()):
            live += e.nbytes()
            for ns, name in ends:
                if e.start_ns() < ns:
                    peaks[name] = max(peaks[name], live)
                    break
        return peaks


def dpo_step(policy, ref, batch, form, tracker):
    tracker.start()
    loss, _ = get_batch_loss_metrics(policy, ref, batch, form, tracker.mark)
    loss.backward()
    del loss
    tracker.mark("backward")
    return tracker.finish()


def null_step(policy, ref, batch, form):
    class _N:
        reserved = 0

        def start(self):
            pass

        def mark(self, name):
            pass

        def finish(self):
            return {}
    dpo_step(policy, ref, batch, form, _N())


def is_oom(exc):
    msg = str(exc)
    return "out of memory" in msg or "ALLOC" in msg or "OutOfMemory" in type(exc).__name__


# ----------------------------------------------------------------- workers

def worker_coef(a):
    """1. Bytes per token and vocabulary entry per phase, form, length."""
    import torch
    cfg, dev = a["cfg"], a["device"]
    policy, ref = make_models(cfg, dev)
    res = []
    info = {"device_name": "cpu", "total_memory": 0}
    if dev == "cuda":
        pr = torch.cuda.get_device_properties(0)
        info = {"device_name": pr.name, "total_memory": pr.total_memory}
    for form in a["forms"]:
        # warm-up at a short row: cuBLAS workspaces and the like are
        # allocated once and would count as the first step's activations
        null_step(policy, ref, make_batch(cfg["vocab_size"], min(a["seqs"]) // 4 or 64, dev), form)
        for seq in a["seqs"]:
            batch = make_batch(cfg["vocab_size"], seq, dev)
            tr = CudaTracker() if dev == "cuda" else CpuTracker()
            t0 = time.time()
            peaks = dpo_step(policy, ref, batch, form, tr)
            peaks["step"] = max(peaks.values())
            tv = 2.0 * seq * cfg["vocab_size"]
            res.append({"form": form, "seq": seq, "tokens": 2 * seq, "peaks": peaks,
                        "coef": {k: v / tv for k, v in peaks.items()},
                        "seconds": time.time() - t0})
            print(f"  coef {form} s={seq}: step {peaks['step'] / tv:.2f} bytes/(token x vocab)",
                  file=sys.stderr, flush=True)
            del batch
            gc.collect()
            if dev == "cuda":
                torch.cuda.empty_cache()
    return dict(info, runs=res)


def worker_frag(a):
    """2. reserved / allocated over steps of varying row lengths."""
    import torch
    cfg = a["cfg"]
    policy, ref = make_models(cfg, "cuda")
    rng = random.Random(a["seed"])
    lens = [rng.randrange(a["lo"], a["hi"] + 1, 64) for _ in range(a["steps"])]
    null_step(policy, ref, make_batch(cfg["vocab_size"], a["lo"], "cuda"), "no_labels")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    steps = []
    for s in lens:
        null_step(policy, ref, make_batch(cfg["vocab_size"], s, "cuda"), a["form"])
        torch.cuda.synchronize()
        steps.append({"seq": s, "max_allocated": torch.cuda.max_memory_allocated(),
                      "max_reserved": torch.cuda.max_memory_reserved(),
                      "reserved": torch.cuda.memory_reserved()})
    st = torch.cuda.memory_stats()
    ma, mr = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    return {"lengths": lens, "steps": steps, "max_allocated": ma, "max_reserved": mr,
            "reserved_over_allocated": mr / ma, "usable_fraction": ma / mr,
            "num_alloc_retries": st.get("num_alloc_retries", 0),
            "num_ooms": st.get("num_ooms", 0),
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}


def worker_cap(a):
    """3. The longest row whose step completes under a memory cap."""
    import torch
    cfg, form = a["cfg"], a["form"]
    total = torch.cuda.get_device_properties(0).total_memory
    cap = a["cap_gib"] * GIB
    if cap > total:
        return {"skipped": f"cap {a['cap_gib']} GiB above the device's {total / GIB:.1f} GiB"}
    torch.cuda.set_per_process_memory_fraction(cap / total)
    policy, ref = make_models(cfg, "cuda")
    null_step(policy, ref, make_batch(cfg["vocab_size"], 256, "cuda"), form)
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    static = torch.cuda.memory_allocated()
    tried = []

    def fits(s):
        gc.collect()
        torch.cuda.empty_cache()
        ok = True
        t0 = time.time()
        try:
            null_step(policy, ref, make_batch(cfg["vocab_size"], s, "cuda"), form)
            torch.cuda.synchronize()
        except (torch.OutOfMemoryError, RuntimeError) as e:
            if not is_oom(e):
                raise
            ok = False
        gc.collect()
        torch.cuda.empty_cache()
        tried.append({"seq": s, "fits": ok, "seconds": round(time.time() - t0, 2)})
        print(f"  cap {form} {a['alloc_conf'] or 'default'}: s={s} {'fits' if ok else 'OOM'}",
              file=sys.stderr, flush=True)
        return ok

    pred = plan_longest_row(cfg, static, cap)
    lo, hi = 256, max(512, int(pred * 1.25))
    if not fits(lo):
        return {"static": static, "longest": 0, "tried": tried, "cap": cap, "total": total}
    while hi < a["limit"] and fits(hi):
        lo, hi = hi, hi * 2
    while hi - lo > a["step"]:
        mid = (lo + hi) // 2 // 64 * 64
        if mid <= lo:
            break
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return {"static": static, "longest": lo, "first_oom": hi, "tried": tried, "cap": cap,
            "total": total, "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}


WORKERS = {"coef": worker_coef, "frag": worker_frag, "cap": worker_cap}


DEADLINE = [None]  # time.time() by which every worker must have ended


def run_worker(kind, wargs, env_extra, timeout):
    """This script in a subprocess (fresh CUDA state, its own allocator
    settings); its last stdout line is the JSON result. No worker runs
    past --budget-s from the start."""
    if DEADLINE[0] is not None:
        left = DEADLINE[0] - time.time()
        if left < 15:
            return {"error": "skipped: --budget-s spent"}
        timeout = min(timeout, int(left))
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    env.update(env_extra)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", kind,
           "--worker-args", json.dumps(wargs)]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    if p.returncode != 0 or not p.stdout.strip():
        return {"error": f"exit {p.returncode}", "stdout_tail": p.stdout[-2000:]}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["wall_s"] = round(time.time() - t0, 1)
    return r


# -------------------------------------------------------------------- main

def default_out():
    d = os.environ.get("OUT")
    return os.path.join(d if d else ".", "gpu_dpo_memory.json")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--quick", action="store_true",
                    help="tiny sizes (for --device cpu: proves the code paths)")
    ap.add_argument("--out", default=default_out())
    ap.add_argument("--distenv", help="a distenv binary: take the plan's terms from `distenv plan`")
    ap.add_argument("--seqs", help="row lengths for the coefficient, comma-separated")
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--cap-gib", type=float, default=80.0,
                    help="memory cap emulated with set_per_process_memory_fraction")
    ap.add_argument("--worker-timeout", type=int, default=150,
                    help="seconds, each subprocess")
    ap.add_argument("--budget-s", type=int, default=270,
                    help="seconds for all of it: later workers are skipped")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--worker-args", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        r = WORKERS[args.worker](json.loads(args.worker_args))
        print(json.dumps(r), flush=True)
        return 0

    import torch
    import transformers
    DEADLINE[0] = time.time() + args.budget_s
    cpu = args.device == "cpu"
    quick = args.quick
    cfg = SHAPE_QUICK if quick else SHAPE_GPU
    if args.seqs:
        seqs = [int(x) for x in args.seqs.split(",")]
    else:
        seqs = [128, 256] if quick else [2048, 4096, 8192]
    forms = [f for f in args.forms.split(",") if f]
    if not cpu and not torch.cuda.is_available():
        print("error: CUDA not available (use --device cpu --quick for the code paths)",
              file=sys.stderr)
        return 2

    lines = []
    table = []

    def emit(name, value):
        lines.append((name, value))
        print(f"{name} {value}", flush=True)

    res = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "device": args.device, "quick": quick, "model": cfg,
           "versions": {"python": platform.python_version(), "torch": torch.__version__,
                        "transformers": transformers.__version__,
                        "cuda": torch.version.cuda},
           "plan": {"logit_bytes_ref": PLAN_LOGIT_BYTES_REF,
                    "logit_bytes_noref": PLAN_LOGIT_BYTES_NOREF,
                    "usable_band": PLAN_FRAG, "source": "hard-coded from plugin/plan"}}
    emit("torch", torch.__version__)
    emit("transformers", transformers.__version__)
    emit("model", "qwen2 random " + " ".join(f"{k}={v}" for k, v in cfg.items()))

    # the plan's coefficient: hard-coded, or from a distenv binary
    plan_coef = PLAN_LOGIT_BYTES_REF
    if args.distenv:
        try:
            terms = distenv_plan_terms(args.distenv, cfg, seqs[-1], 64)
            plan_coef = terms["logits"] / (2.0 * seqs[-1] * cfg["vocab_size"])
            port = plan_act_terms(cfg, seqs[-1])
            act = sum(terms[k] for k in ("ckpt_inputs", "layers", "recompute", "logits",
                                          "head", "attn_mask"))
            res["plan"].update(source="distenv plan --json", distenv_terms=terms)
            emit("plan.logit_coef.distenv", f"{plan_coef:.2f}")
            emit("plan.act_peak.port_over_distenv", f"{port['peak'] / act:.4f}")
        except (OSError, subprocess.CalledProcessError, KeyError, ValueError) as e:
            emit("plan.distenv", f"unusable ({e}); using the hard-coded {PLAN_LOGIT_BYTES_REF:g}")
    emit("plan.logit_coef", f"{plan_coef:.2f} (plugin/plan/plan_activation.c plan_act_logit_bytes)")
    emit("plan.logit_coef.policy_forward", f"{PLAN_LOGIT_BYTES_NOREF:.2f}")

    # 1. the coefficient
    t0 = time.time()
    r = run_worker("coef", {"cfg": cfg, "device": args.device, "seqs": seqs, "forms": forms},
                   {}, args.worker_timeout * (3 if cpu else 1))
    res["coef"] = r
    if "error" in r:
        emit("coef.error", r["error"])
    else:
        emit("device", r["device_name"])
        if r["total_memory"]:
            emit("device.memory_gib", f"{r['total_memory'] / GIB:.1f}")
    for run in r.get("runs", []):
        f, s, c = run["form"], run["seq"], run["coef"]
        plan = plan_act_terms(cfg, s)
        tv = 2.0 * s * cfg["vocab_size"]
        # the plan's non-logit terms at the peak (checkpointed inputs,
        # head, mask) taken out, to leave the logits alone
        logits_only = (run["peaks"]["step"] - (plan["peak"] - plan["logits"])) / tv
        run["plan_peak"] = plan["peak"]
        run["coef_logits_only"] = logits_only
        for ph, pc in (("policy_forward", PLAN_LOGIT_BYTES_NOREF),
                       ("reference_forward", plan_coef), ("backward", None)):
            v = c.get(ph, 0.0)
            emit(f"coef.{f}.s{s}.{ph}", f"{v:.2f}" + (f" ratio {v / pc:.3f}" if pc else ""))
        emit(f"coef.{f}.s{s}.step", f"{c['step']:.2f} ratio {c['step'] / plan_coef:.3f}")
        emit(f"coef.{f}.s{s}.step_logits_only", f"{logits_only:.2f} ratio {logits_only / plan_coef:.3f}")
        emit(f"act_peak.{f}.s{s}.measured_over_plan", f"{run['peaks']['step'] / plan['peak']:.3f}")
        table.append((f"coef {f} s={s}", f"{c['step']:.2f}", f"{plan_coef:.2f}",
                      f"{c['step'] / plan_coef:.3f}"))
    emit("coef.seconds", f"{time.time() - t0:.1f}")

    # 2. fragmentation
    res["frag"] = {}
    for var, conf in (("off", ""), ("on", "expandable_segments:True")):
        if cpu:
            emit(f"frag.{var}", "skipped on cpu")
            continue
        lo = 1024 if not quick else 256
        hi = 8192 if not quick else 1024
        r = run_worker("frag", {"cfg": cfg, "seed": 1, "lo": lo, "hi": hi,
                                "steps": 6 if quick else 16, "form": "no_labels"},
                       {"PYTORCH_CUDA_ALLOC_CONF": conf} if conf else {}, args.worker_timeout)
        res["frag"][var] = r
        if "error" in r:
            emit(f"frag.{var}.error", r["error"])
            continue
        blo, bhi = PLAN_FRAG[var]
        mid = (blo + bhi) / 2
        emit(f"frag.{var}.reserved_over_allocated", f"{r['reserved_over_allocated']:.3f}")
        emit(f"frag.{var}.usable_fraction",
             f"{r['usable_fraction']:.3f} plan band {blo:.2f}-{bhi:.2f} ratio_to_mid {r['usable_fraction'] / mid:.3f}")
        emit(f"frag.{var}.num_alloc_retries", r["num_alloc_retries"])
        table.append((f"usable fraction, expandable {var}", f"{r['usable_fraction']:.3f}",
                      f"{mid:.3f}", f"{r['usable_fraction'] / mid:.3f}"))

    # 3. the longest row under a cap
    res["cap"] = {}
    cap_runs = (("no_labels", "off", ""), ("no_labels", "on", "expandable_segments:True"),
                ("labels_t446", "on", "expandable_segments:True"))
    for form, var, conf in cap_runs:
        key = f"{form}.expandable_{var}"
        if cpu:
            emit(f"cap.{key}", "skipped on cpu")
            continue
        if form not in forms:
            continue
        r = run_worker("cap", {"cfg": cfg, "form": form, "cap_gib": args.cap_gib,
                               "alloc_conf": conf, "limit": 1 << 17, "step": 64},
                       {"PYTORCH_CUDA_ALLOC_CONF": conf} if conf else {}, args.worker_timeout)
        res["cap"][key] = r
        if "error" in r or "skipped" in r:
            emit(f"cap.{key}", r.get("error") or r.get("skipped"))
            continue
        st, cap = r["static"], r["cap"]
        blo, bhi = PLAN_FRAG[var]
        pred = {"f1": plan_longest_row(cfg, st, cap),
                "mid": plan_longest_row(cfg, st, cap * (blo + bhi) / 2),
                "lo": plan_longest_row(cfg, st, cap * blo),
                "hi": plan_longest_row(cfg, st, cap * bhi)}
        r["plan_longest"] = pred
        m = r["longest"]
        implied = (st + plan_act_terms(cfg, m)["peak"]) / cap if m else 0.0
        r["implied_usable_fraction"] = implied
        emit(f"cap.{key}.cap_gib", f"{args.cap_gib:g}")
        emit(f"cap.{key}.static_gib", f"{st / GIB:.2f}")
        emit(f"cap.{key}.longest_row", m)
        emit(f"cap.{key}.plan_longest_row_all_usable", f"{pred['f1']} ratio {m / pred['f1']:.3f}")
        emit(f"cap.{key}.plan_longest_row_band",
             f"{pred['lo']}-{pred['hi']} mid {pred['mid']} ratio_to_mid {m / pred['mid']:.3f}")
        emit(f"cap.{key}.implied_usable_fraction", f"{implied:.3f} plan band {blo:.2f}-{bhi:.2f}")
        table.append((f"longest row @{args.cap_gib:g} GiB {form} exp {var}", str(m),
                      str(pred["mid"]), f"{m / pred['mid']:.3f}"))

    res["lines"] = [[n, str(v)] for n, v in lines]
    print()
    print(f"{'summary':48} {'measured':>10} {'plan':>10} {'ratio':>7}")
    for row in table:
        print(f"{row[0]:48} {row[1]:>10} {row[2]:>10} {row[3]:>7}")
    res["summary"] = [list(t) for t in table]
    d = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(d, exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"json {args.out}")
    return 0 if "error" not in res["coef"] else 1


if __name__ == "__main__":
    sys.exit(main())
