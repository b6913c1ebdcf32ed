"""Measure one LLaMA-Factory DPO step's activation memory on the CPU and
compare it with distenv's model of it (docs/memory.md).

    VENV/bin/python bench/dpo_step_memory.py [--distenv ./distenv] [--quick] [--stacks]

For each shape below it builds a Qwen2 model with random weights (no
download), prepares it with LLaMA-Factory's own prepare_model_for_training
(gradient checkpointing as LLaMA-Factory turns it on, use_reentrant), and
runs the trainer's own get_batch_loss_metrics (the policy's forward, the
reference model's forward under no_grad, the logits held for the metrics)
and the backward on one example: chosen and rejected, two rows of SEQ
tokens, the prompt's labels masked. torch's profiler records every
allocation and free of the CPU allocator; the peak of the bytes alive,
less what was alive before the step (weights, batch), is the step's
activation memory. The weights' gradients are allocated before the step,
as after a run's first step: distenv counts them with the model states.
distenv plan is then asked for the same shape (a config.json written
beside, one GPU, cutoff_len SEQ) and its activation terms are summed the
way plan_seqfit.c sums them.

--stacks measures the first shape's forward peak per token and
vocabulary entry for the stacks distenv plans differently
(plugin/plan/plan_stack.h): LLaMA-Factory 0.9.5's step as it is
(labels popped before the model is called), and the step of
LLaMA-Factory 0.8.0-0.9.3, which call the model with the labels, so
the model computes its own cross-entropy in each forward. The labels
are put back by a thin wrapper around the policy and the reference
model (PassLabels); the model's loss is either the installed
transformers' ForCausalLMLoss or the tensor sequence of transformers
4.46's (loss/loss_utils.py: fp32 copy, shifted contiguous copy,
cross_entropy), set as the model's loss_function.

What it checks: the logits term (20 bytes per token and vocabulary entry
with a reference model), the checkpointed layer inputs and the per-layer
activations without checkpointing. What it cannot: CUDA kernels' own
workspaces, the caching allocator's fragmentation, ZeRO-3, and unsloth's
offload (a CPU tensor's copy to the CPU is the tensor itself).
"""

import argparse
import sys
from types import SimpleNamespace

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

# The trainer first, as LLaMA-Factory's own entry points import it: with
# the model utilities imported before it, trl 0.24's callbacks module
# takes the tuple its is_mergekit_available returns for true and fails on
# a missing mergekit.
from llamafactory.train.dpo.trainer import CustomDPOTrainer  # isort: skip
from llamafactory.extras.constants import IGNORE_INDEX
from llamafactory.model.model_utils.checkpointing import prepare_model_for_training
from transformers import Qwen2Config, Qwen2ForCausalLM

from plan_query import distenv_plan_terms

# name, config, rows' tokens, gradient checkpointing
SHAPES = [
    ("logits: Qwen2's vocabulary, 2 small layers",
     dict(vocab_size=152064, hidden_size=256, intermediate_size=704,
          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2),
     512, True),
    ("layers: 8 layers, small vocabulary, checkpointing on",
     dict(vocab_size=512, hidden_size=1024, intermediate_size=2816,
          num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=4),
     1024, True),
    ("layers: 8 layers, small vocabulary, checkpointing off",
     dict(vocab_size=512, hidden_size=1024, intermediate_size=2816,
          num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=4),
     1024, False),
]

ANSWER = 64  # label tokens per row; the rest is the prompt, masked
PAD = 16  # the rejected row is this much shorter, padded as the collator does


def make_models(cfg):
    torch.manual_seed(0)
    config = Qwen2Config(**cfg, max_position_embeddings=8192,
                         torch_dtype="bfloat16", attn_implementation="sdpa")
    policy = Qwen2ForCausalLM(config).to(torch.bfloat16)
    ref = Qwen2ForCausalLM(config).to(torch.bfloat16)
    ref.eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    return policy, ref


def make_batch(vocab, seq):
    ids = torch.randint(3, vocab, (2, seq))
    labels = ids.clone()
    labels[:, : seq - ANSWER] = IGNORE_INDEX
    # A padded row, as chosen and rejected of different lengths are: the
    # padding mask makes transformers build the 4D mask and sdpa repeat k
    # and v to every head, the case distenv models.
    mask = torch.ones_like(ids)
    mask[1, seq - PAD:] = 0
    labels[1, seq - PAD:] = IGNORE_INDEX
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


class PassLabels:
    """A model called as LLaMA-Factory 0.8.0-0.9.3 call it: with the
    batch's labels (0.9.4 and later pop them first)."""

    def __init__(self, model, labels):
        self.model, self.labels = model, labels

    def __call__(self, **kwargs):
        return self.model(**kwargs, labels=self.labels)

    def __getattr__(self, name):
        return getattr(self.model, name)


def causal_lm_loss_446(logits, labels, vocab_size, num_items_in_batch=None,
                       ignore_index=IGNORE_INDEX, **kwargs):
    """The tensors transformers 4.46's ForCausalLMLoss (loss/loss_utils.py)
    makes while its caller keeps the 16-bit logits: an fp32 copy, the
    shifted contiguous copy, cross_entropy's log_softmax."""
    logits = logits.float()
    shift_logits = logits[..., :-1, :].contiguous()
    shift_labels = labels[..., 1:].contiguous().view(-1)
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = F.cross_entropy(shift_logits.view(-1, vocab_size), shift_labels,
                           ignore_index=ignore_index, reduction=reduction)
    return loss / num_items_in_batch if num_items_in_batch is not None else loss


def make_trainer(ref):
    """LLaMA-Factory's trainer object with only what get_batch_loss_metrics
    reads; the preference loss is the sigmoid DPO loss on four scalars per
    example, whose memory is nothing beside the logits."""
    t = CustomDPOTrainer.__new__(CustomDPOTrainer)
    t.finetuning_args = SimpleNamespace(use_ref_model=True)
    t.loss_type = "sigmoid"
    t.ld_alpha = None
    t.ref_model = ref
    t.ftx_gamma = 0.0

    def sigmoid_loss(pc, pr, rc, rr):
        logits = (pc - pr) - (rc - rr)
        return -F.logsigmoid(0.1 * logits), 0.1 * (pc - rc).detach(), 0.1 * (pr - rr).detach()

    t.compute_preference_loss = sigmoid_loss
    return t


def measure(cfg, seq, grad_ckpt, stack="0.9.5"):
    """The step's peak of live CPU bytes above what was alive before it:
    (forward peak, step peak). stack: "0.9.5" as it is; "labels" the
    labels passed (0.8.0-0.9.3) with the installed transformers' loss;
    "labels-4.46" the same with transformers 4.46's loss."""
    policy, ref = make_models(cfg)
    if stack == "labels-4.46":
        policy.loss_function = ref.loss_function = causal_lm_loss_446
    prepare_model_for_training(policy, SimpleNamespace(
        upcast_layernorm=False, disable_gradient_checkpointing=not grad_ckpt,
        use_unsloth_gc=False, use_reentrant_gc=True, upcast_lmhead_output=False))
    policy.train()
    # The weights' gradients exist before the step, as after the first
    # step of a run: the backward adds into them, so what it allocates is
    # activations and one weight's gradient at a time. distenv counts the
    # gradients with the model states.
    for p in policy.parameters():
        p.grad = torch.zeros_like(p)
    trainer = make_trainer(ref)
    batch = make_batch(cfg["vocab_size"], seq)
    model = policy
    if stack != "0.9.5":
        model = PassLabels(policy, batch["labels"])
        trainer.ref_model = PassLabels(ref, batch["labels"])
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss, _ = trainer.get_batch_loss_metrics(model, batch)
        with record_function("distenv_backward"):
            loss.backward()
    events = prof.profiler.kineto_results.events()
    back = min(e.start_ns() for e in events if e.name() == "distenv_backward")
    live = fwd_peak = peak = 0
    for e in sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns()):
        live += e.nbytes()
        peak = max(peak, live)
        if e.start_ns() < back:
            fwd_peak = max(fwd_peak, live)
    return fwd_peak, peak


def modeled(distenv, cfg, seq, grad_ckpt):
    """distenv plan's activation terms for the same step, in bytes."""
    terms = distenv_plan_terms(distenv, cfg, seq, ANSWER, grad_ckpt)
    return sum(terms[k] for k in ("ckpt_inputs", "layers", "recompute", "logits",
                                  "head", "attn_mask")), terms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--distenv", default="./distenv")
    ap.add_argument("--quick", action="store_true", help="the first shape only")
    ap.add_argument("--stacks", action="store_true",
                    help="the first shape's forward peak per stack only")
    ap.add_argument("--stacks-seq", type=int, default=128, metavar="S",
                    help="tokens per row for --stacks (default 128)")
    ap.add_argument("--stacks-only", default="0.9.5,labels,labels-4.46", metavar="LIST",
                    help="the --stacks variants to run (default all: 0.9.5,labels,labels-4.46)")
    args = ap.parse_args()
    mib = 2.0 ** 20
    if args.stacks:
        import transformers

        name, cfg, _, ckpt = SHAPES[0]
        seq = args.stacks_seq
        v = cfg["vocab_size"]
        print(f"torch {torch.__version__}, transformers {transformers.__version__}; "
              f"{name}, 2 rows of {seq}; forward peak per token and vocabulary entry")
        for stack, what in (("0.9.5", "LLaMA-Factory 0.9.5 (labels popped)"),
                            ("labels", f"labels passed (0.8.0-0.9.3), transformers {transformers.__version__}'s loss"),
                            ("labels-4.46", "labels passed (0.8.0-0.9.3), transformers 4.46's loss")):
            if stack not in args.stacks_only.split(","):
                continue
            fwd, _ = measure(cfg, seq, ckpt, stack)
            print(f"  {what:70} {fwd / (2 * seq * v):6.2f} bytes")
            sys.stdout.flush()
        return
    print(f"torch {torch.__version__}; one DPO step, 2 rows; MiB = 2^20 bytes")
    print(f"{'shape':55} {'tokens':>6} {'measured':>9} {'modeled':>9} {'ratio':>6}")
    for name, cfg, seq, ckpt in SHAPES[:1] if args.quick else SHAPES:
        fwd, act = measure(cfg, seq, ckpt)
        model, terms = modeled(args.distenv, cfg, seq, ckpt)
        print(f"{name:55} {2 * seq:6d} {act / mib:9.1f} {model / mib:9.1f} {model / act:6.2f}")
        if cfg["vocab_size"] > 100000:
            v = cfg["vocab_size"]
            print(f"  forward peak per token and vocabulary entry: {fwd / (2 * seq * v):.2f} bytes"
                  f" (modeled {terms['logits'] / (2 * seq * v):.2f})")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
