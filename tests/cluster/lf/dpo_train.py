#!/usr/bin/python3
"""A small, real DPO training that stands in for LLaMA-Factory's
`launcher.py` (the script `llamafactory-cli train` hands to torchrun) in
the cluster tests, where LLaMA-Factory, DeepSpeed and CUDA cannot be
installed. Runs on Debian 12's torch 1.13 (CPU) with Gloo DDP.

    dpo_train.py CONFIG.yaml        (normally via bin/llamafactory-cli)

What is real: the config is a LLaMA-Factory training YAML (the keys below,
with LLaMA-Factory's / Transformers' defaults); the data is a preference
dataset in LLaMA-Factory's alpaca preference format, found through
`dataset_dir/dataset_info.json`; the loss is DPO's sigmoid loss
(Rafailov et al. 2023, LLaMA-Factory `pref_loss: sigmoid`) of a trainable
policy against a frozen reference model (full: a frozen copy; LoRA: the
same model with its adapters off, as LLaMA-Factory does); gradients are
averaged across every rank of every node by DDP over Gloo.

What stands in: the model is a next-byte model of `hidden_size` from
`model_name_or_path/config.json` (tokens are the bytes of the UTF-8 text),
and the checkpoint files are written with the names and by the processes
that Transformers' Trainer + DeepSpeed ZeRO-3 use (docs/contracts.md
section 2), each holding real state:

  checkpoint-N/trainer_state.json        should_save processes (below)
  checkpoint-N/training_args.bin         should_save processes
  checkpoint-N/latest                    "global_stepN": global rank 0
      only; DeepSpeed 0.19 writes it there also when
      checkpoint.use_node_local_storage is on, which Transformers turns on
      with save_on_each_node (seen with the real stack in
      tests/cluster/llamafactory.bats; plugin/lf/lf_resume.h)
  checkpoint-N/rng_state_<rank>.pth      every rank
  checkpoint-N/global_stepN/zero_pp_rank_<rank>_mp_rank_00_model_states.pt
  checkpoint-N/global_stepN/[bf16_]zero_pp_rank_<rank>_mp_rank_00_optim_states.pt
      every rank: its 1/W partition of the flat trainable parameters and
      of the Adam moments (DeepSpeed engine `_get_ckpt_name` /
      `_get_zero_ckpt_name`: ZeRO-3 names model states per data-parallel
      rank; "bf16_" when bf16 is on). Resuming needs every rank's shard:
      the partitions are all-gathered back into the full state.
  checkpoint-N/pytorch_model.bin (full) or adapter_model.bin (LoRA)
      global rank 0 only: with stage3_gather_16bit_weights_on_model_save
      the 16-bit weights are gathered on global rank 0.

should_save (Transformers TrainingArguments.should_save): local rank 0 of
every node when save_on_each_node is true, else global rank 0 only. The
same processes rotate checkpoints (save_total_limit).

Resume (LLaMA-Factory hparams/parser.py get_train_args, Transformers
Trainer.train / _load_from_checkpoint): resume_from_checkpoint unset,
output_dir a directory and overwrite_output_dir false: the newest
checkpoint-<N> of *this node's* output_dir (transformers.trainer_utils
get_last_checkpoint); none there but checkpoint files present: "Output
directory already exists and is not empty". Loading: `latest` missing ->
"[deepspeed] failed to resume from checkpoint"; a shard or
trainer_state.json missing -> FileNotFoundError; rng_state_<rank>.pth
missing -> only a message (as Transformers does).

Test knobs (environment, never in templates):
  DPO_TEST_PAUSE_AFTER=N   after saving checkpoint-N, print
      "dpo: paused after checkpoint-N" and wait to be cancelled
"""

import copy
import datetime
import json
import os
import random
import re
import shutil
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import yaml

HOST = socket.gethostname()
RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
NODE_RANK = int(os.environ.get("GROUP_RANK", "0"))

# Transformers trainer_utils.PREFIX_CHECKPOINT_DIR and get_last_checkpoint's
# pattern; LLaMA-Factory's CHECKPOINT_NAMES (files that mean "a model was
# saved here"), used for its "not empty" check.
CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")
CHECKPOINT_NAMES = (
    "trainer_state.json", "pytorch_model.bin", "model.safetensors",
    "adapter_model.bin", "adapter_model.safetensors", "training_args.bin",
)


def log(msg):
    print(f"dpo: rank {RANK}/{WORLD} node={HOST}: {msg}", flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def read_config(path):
    with open(path, encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    if not isinstance(cfg, dict):
        die(f"{path}: not a mapping")
    if cfg.get("stage", "sft") != "dpo":
        die(f"{path}: stage is {cfg.get('stage')!r}; this stand-in trains stage: dpo only")
    if cfg.get("pref_loss", "sigmoid") != "sigmoid":
        die(f"{path}: pref_loss {cfg['pref_loss']!r}: only sigmoid is implemented")
    if not cfg.get("output_dir"):
        die(f"{path}: output_dir is required")
    if cfg.get("deepspeed") and "WORLD_SIZE" not in os.environ:
        # LLaMA-Factory parser.py: DeepSpeed needs the torchrun path.
        die("Please use `FORCE_TORCHRUN=1` to launch DeepSpeed training.")
    return cfg


def as_bool(v):
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes", "y", "on")
    return bool(v)


def read_deepspeed(cfg):
    """The DeepSpeed JSON the YAML names: its ZeRO stage (for the shard
    names), whether bf16 is on ("auto" follows the YAML's bf16) and where
    parameters and optimizer states are offloaded (logged only)."""
    path = cfg.get("deepspeed")
    if not path:
        return 0, as_bool(cfg.get("bf16", False)), "none"
    with open(path, encoding="utf-8") as f:
        ds = json.load(f)
    zero = ds.get("zero_optimization", {})
    stage = int(zero.get("stage", 0))
    bf16 = ds.get("bf16", {}).get("enabled", "auto")
    bf16 = as_bool(cfg.get("bf16", False)) if bf16 == "auto" else as_bool(bf16)
    offload = "/".join(zero.get(k, {}).get("device", "none")
                       for k in ("offload_param", "offload_optimizer"))
    return stage, bf16, offload


def load_pairs(cfg):
    """Preference pairs of the datasets named by `dataset` (comma list),
    from dataset_dir/dataset_info.json entries with ranking: true (alpaca
    formatting: prompt/query/chosen/rejected columns)."""
    ddir = cfg.get("dataset_dir", "data")
    with open(os.path.join(ddir, "dataset_info.json"), encoding="utf-8") as f:
        info = json.load(f)
    pairs = []
    for name in str(cfg.get("dataset", "")).split(","):
        name = name.strip()
        if name not in info:
            die(f"dataset {name!r} is not in {ddir}/dataset_info.json")
        entry = info[name]
        if not entry.get("ranking") or entry.get("formatting", "alpaca") != "alpaca":
            die(f"dataset {name!r}: this stand-in reads alpaca preference data (ranking: true)")
        cols = {"prompt": "instruction", "query": "input", "chosen": "chosen", "rejected": "rejected"}
        cols.update(entry.get("columns", {}))
        with open(os.path.join(ddir, entry["file_name"]), encoding="utf-8") as f:
            rows = json.load(f)
        for r in rows:
            prompt = r[cols["prompt"]]
            if r.get(cols["query"]):
                prompt += "\n" + r[cols["query"]]
            pairs.append((prompt, r[cols["chosen"]], r[cols["rejected"]]))
    if cfg.get("max_samples"):
        pairs = pairs[: int(cfg["max_samples"])]
    if not pairs:
        die("no preference pairs")
    return pairs


def tokenize(text, limit):
    return list(text.encode("utf-8"))[:limit]


class ByteLM(nn.Module):
    """Next-byte model: the previous byte's embedding plus a projection of
    the prompt's mean embedding, tanh, then a head over 256 bytes. With
    lora_rank > 0 the head gets a LoRA adapter (B starts at zero, so the
    adapted model starts equal to the base, as LoRA does)."""

    def __init__(self, hidden, lora_rank=0, lora_alpha=None):
        super().__init__()
        self.embed = nn.Embedding(256, hidden)
        self.ctx = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 256)
        self.lora_rank = lora_rank
        if lora_rank:
            self.lora_A = nn.Parameter(torch.randn(lora_rank, hidden) * 0.1)
            self.lora_B = nn.Parameter(torch.zeros(256, lora_rank))
            self.lora_scale = (lora_alpha or 2 * lora_rank) / lora_rank

    def forward(self, prompt, response, adapters=True):
        """Sum of log-probabilities of response's bytes after prompt."""
        toks = torch.tensor(prompt + response)
        emb = self.embed(toks)
        h = torch.tanh(emb[:-1] + self.ctx(emb[: len(prompt)].mean(0)))
        logits = self.head(h)
        if self.lora_rank and adapters:
            logits = logits + self.lora_scale * (h @ self.lora_A.t() @ self.lora_B.t())
        logp = F.log_softmax(logits, dim=-1).gather(1, toks[1:, None]).squeeze(1)
        return logp[len(prompt) - 1:].sum()


def flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors]) if tensors else torch.zeros(0)


def unflat(vec, like):
    out, i = [], 0
    for t in like:
        out.append(vec[i:i + t.numel()].view_as(t))
        i += t.numel()
    return out


def partition(vec):
    """DeepSpeed ZeRO-3's layout in spirit: the flat vector padded to a
    multiple of the data-parallel size, rank r owns slice r."""
    per = -(-vec.numel() // WORLD)
    padded = torch.zeros(per * WORLD)
    padded[: vec.numel()] = vec
    return padded[RANK * per:(RANK + 1) * per].clone()


def gather(part, numel):
    parts = [torch.zeros_like(part) for _ in range(WORLD)]
    dist.all_gather(parts, part)
    return torch.cat(parts)[:numel]


def get_last_checkpoint(out):
    found = [(int(m.group(1)), d) for d in os.listdir(out)
             if (m := CHECKPOINT_RE.match(d)) and os.path.isdir(os.path.join(out, d))]
    return os.path.join(out, max(found)[1]) if found else None


class Run:
    def __init__(self, cfg):
        self.cfg = cfg
        self.out = cfg["output_dir"]
        self.save_on_each_node = as_bool(cfg.get("save_on_each_node", False))
        self.should_save = LOCAL_RANK == 0 if self.save_on_each_node else RANK == 0
        self.zero_stage, self.bf16, self.offload = read_deepspeed(cfg)
        self.beta = float(cfg.get("pref_beta", 0.1))
        self.bs = int(cfg.get("per_device_train_batch_size", 8))
        self.ga = int(cfg.get("gradient_accumulation_steps", 1))
        self.save_steps = int(cfg.get("save_steps", 500))
        self.logging_steps = int(cfg.get("logging_steps", 500))
        self.limit = cfg.get("save_total_limit")
        self.cutoff = int(cfg.get("cutoff_len", 2048))
        self.seed = int(cfg.get("seed", 42))
        self.pairs = load_pairs(cfg)

        mpath = cfg.get("model_name_or_path") or ""
        hidden = 32
        if os.path.isfile(os.path.join(mpath, "config.json")):
            with open(os.path.join(mpath, "config.json"), encoding="utf-8") as f:
                hidden = int(json.load(f).get("hidden_size", hidden))
        torch.manual_seed(self.seed)  # the same initial weights on every rank
        lora = cfg.get("finetuning_type", "lora") == "lora"  # LLaMA-Factory's default
        self.lora = lora
        self.model = ByteLM(hidden, int(cfg.get("lora_rank", 8)) if lora else 0,
                            cfg.get("lora_alpha"))
        if lora:
            for n, p in self.model.named_parameters():
                p.requires_grad = n.startswith("lora_")
            self.ref = None  # the policy with adapters off
        else:
            self.ref = copy.deepcopy(self.model).requires_grad_(False)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.ddp = nn.parallel.DistributedDataParallel(self.model) if WORLD > 1 else self.model
        self.opt = torch.optim.AdamW(self.params, lr=float(cfg.get("learning_rate", 5e-5)),
                                     weight_decay=float(cfg.get("weight_decay", 0.0)))

        per_rank = -(-len(self.pairs) // WORLD)  # DistributedSampler pads
        self.steps_per_epoch = max(1, per_rank // (self.bs * self.ga))
        max_steps = int(cfg.get("max_steps", -1))
        epochs = float(cfg.get("num_train_epochs", 3.0))
        self.max_steps = max_steps if max_steps > 0 else max(1, int(epochs * self.steps_per_epoch + 0.999999))
        self.step = 0
        self.log_history = []

    # -- data --------------------------------------------------------------
    def shard(self, epoch):
        g = torch.Generator()
        g.manual_seed(self.seed + epoch)
        order = torch.randperm(len(self.pairs), generator=g).tolist()
        per_rank = -(-len(order) // WORLD)
        order += order[: per_rank * WORLD - len(order)]
        return order[RANK::WORLD]

    def batches(self, step):
        epoch, k = divmod(step, self.steps_per_epoch)
        mine = self.shard(epoch)
        n = self.bs * self.ga
        idx = mine[k * n:(k + 1) * n]
        return [idx[i:i + self.bs] for i in range(0, len(idx), self.bs)]

    def encode(self, i):
        prompt, chosen, rejected = self.pairs[i]
        half = max(1, self.cutoff // 2)
        return tokenize(prompt, half), tokenize(chosen, half), tokenize(rejected, half)

    # -- training ------------------------------------------------------------
    def loss(self, batch):
        total = 0.0
        for i in batch:
            p, c, r = self.encode(i)
            pc, pr = self.ddp(p, c), self.ddp(p, r)
            with torch.no_grad():
                if self.ref is None:
                    rc, rr = self.model(p, c, adapters=False), self.model(p, r, adapters=False)
                else:
                    rc, rr = self.ref(p, c), self.ref(p, r)
            # sigmoid DPO loss: -log sigmoid(beta * (policy margin - reference margin))
            total = total + -F.logsigmoid(self.beta * ((pc - rc) - (pr - rr)))
        return total / len(batch)

    def train_step(self):
        self.opt.zero_grad()
        micro = self.batches(self.step)
        loss_sum = 0.0
        for j, batch in enumerate(micro):
            loss = self.loss(batch) / len(micro)
            if WORLD > 1 and j < len(micro) - 1:
                with self.ddp.no_sync():
                    loss.backward()
            else:
                loss.backward()
            loss_sum += loss.item()
        self.opt.step()
        self.step += 1
        mean = torch.tensor([loss_sum])
        if WORLD > 1:
            dist.all_reduce(mean)
            mean /= WORLD
        return mean.item()

    # -- checkpoints -----------------------------------------------------------
    def shard_names(self, step):
        tag = f"global_step{step}"
        pre = "bf16_" if self.bf16 else ""
        if self.zero_stage == 3:
            model = f"zero_pp_rank_{RANK}_mp_rank_00_model_states.pt"
        else:
            model = "mp_rank_00_model_states.pt"
        return tag, model, f"{pre}zero_pp_rank_{RANK}_mp_rank_00_optim_states.pt"

    def opt_vectors(self):
        st = [self.opt.state.get(p, {}) for p in self.params]
        avg = flat([s["exp_avg"] if "exp_avg" in s else torch.zeros_like(p) for s, p in zip(st, self.params)])
        sq = flat([s["exp_avg_sq"] if "exp_avg_sq" in s else torch.zeros_like(p) for s, p in zip(st, self.params)])
        return avg, sq

    def save(self):
        step = self.step
        ckpt = os.path.join(self.out, f"checkpoint-{step}")
        tag, mname, oname = self.shard_names(step)
        os.makedirs(os.path.join(ckpt, tag), exist_ok=True)
        wrote = []
        numel = sum(p.numel() for p in self.params)
        avg, sq = self.opt_vectors()
        torch.save({"global_steps": step, "dp_world_size": WORLD, "zero_stage": self.zero_stage,
                    "param_shapes": [tuple(p.shape) for p in self.params], "numel": numel},
                   os.path.join(ckpt, tag, mname))
        torch.save({"optimizer_state_dict": {
            "zero_stage": self.zero_stage, "partition_count": WORLD,
            "fp32_flat_groups": partition(flat([p.detach() for p in self.params])),
            "exp_avg": partition(avg), "exp_avg_sq": partition(sq),
            "adam_step": step}}, os.path.join(ckpt, tag, oname))
        wrote += [f"{tag}/{mname}", f"{tag}/{oname}"]
        torch.save({"python": random.getstate(), "cpu": torch.get_rng_state()},
                   os.path.join(ckpt, f"rng_state_{RANK}.pth"))
        wrote.append(f"rng_state_{RANK}.pth")
        if RANK == 0:
            if self.lora:
                lora = {k: v for k, v in self.model.state_dict().items() if k.startswith("lora_")}
                torch.save(lora, os.path.join(ckpt, "adapter_model.bin"))
                wrote.append("adapter_model.bin")
            else:
                sd = {k: v.to(torch.bfloat16 if self.bf16 else torch.float32)
                      for k, v in self.model.state_dict().items()}
                torch.save(sd, os.path.join(ckpt, "pytorch_model.bin"))
                wrote.append("pytorch_model.bin")
        if self.should_save:
            state = {"global_step": step, "epoch": step / self.steps_per_epoch,
                     "max_steps": self.max_steps, "save_steps": self.save_steps,
                     "logging_steps": self.logging_steps, "train_batch_size": self.bs,
                     "num_train_epochs": float(self.cfg.get("num_train_epochs", 3.0)),
                     "log_history": self.log_history, "best_metric": None,
                     "best_model_checkpoint": None, "is_world_process_zero": RANK == 0,
                     "is_local_process_zero": LOCAL_RANK == 0}
            with open(os.path.join(ckpt, "trainer_state.json"), "w", encoding="utf-8") as f:
                json.dump(state, f, indent=2)
            torch.save(dict(self.cfg), os.path.join(ckpt, "training_args.bin"))
            wrote += ["trainer_state.json", "training_args.bin"]
            if RANK == 0:
                with open(os.path.join(ckpt, "latest"), "w", encoding="utf-8") as f:
                    f.write(tag)
                wrote.append("latest")
            self.rotate()
        log(f"saved checkpoint-{step}: {' '.join(sorted(wrote))}")
        if WORLD > 1:
            dist.barrier()

    def rotate(self):
        if self.limit is None or int(self.limit) <= 0:
            return
        found = sorted((int(m.group(1)), d) for d in os.listdir(self.out)
                       if (m := CHECKPOINT_RE.match(d)))
        for _, d in found[: max(0, len(found) - int(self.limit))]:
            shutil.rmtree(os.path.join(self.out, d), ignore_errors=True)
            log(f"deleted older checkpoint {d} (save_total_limit {self.limit})")

    def resume_path(self):
        rfc = self.cfg.get("resume_from_checkpoint")
        if isinstance(rfc, bool) or (isinstance(rfc, str) and rfc.lower() == "true"):
            rfc = get_last_checkpoint(self.out) if os.path.isdir(self.out) else None
            if rfc is None:
                die(f"No valid checkpoint found in output directory ({self.out})")
        elif (rfc is None and os.path.isdir(self.out)
              and not as_bool(self.cfg.get("overwrite_output_dir", False))):
            rfc = get_last_checkpoint(self.out)
            if rfc is None and any(os.path.isfile(os.path.join(self.out, n)) for n in CHECKPOINT_NAMES):
                die("Output directory already exists and is not empty. Please set `overwrite_output_dir`.")
            if rfc is not None:
                log(f"Resuming training from {rfc}.")
        return rfc

    def load(self, ckpt):
        # Transformers deepspeed_load_checkpoint: global_step* dirs, then
        # DeepSpeed reads `latest` for the tag.
        if not any(d.startswith("global_step") for d in os.listdir(ckpt)):
            raise ValueError(f"Can't find a valid checkpoint at {ckpt}")
        latest = os.path.join(ckpt, "latest")
        if not os.path.isfile(latest):
            log(f"Unable to find latest file at {latest}, if trying to load latest checkpoint "
                "please ensure this file exists or pass an explicit checkpoint tag when loading a checkpoint.")
            raise ValueError(f"[deepspeed] failed to resume from checkpoint {ckpt}")
        with open(latest, encoding="utf-8") as f:
            tag = f.read().strip()
        step = int(tag.replace("global_step", ""))
        _, mname, oname = self.shard_names(step)
        meta = torch.load(os.path.join(ckpt, tag, mname))
        opt = torch.load(os.path.join(ckpt, tag, oname))["optimizer_state_dict"]
        with open(os.path.join(ckpt, "trainer_state.json"), encoding="utf-8") as f:
            state = json.load(f)
        rng = os.path.join(ckpt, f"rng_state_{RANK}.pth")
        rng_state = torch.load(rng) if os.path.isfile(rng) else None
        if rng_state is None:
            log(f"Didn't find an RNG file for process {RANK}, reproducibility is not guaranteed.")
        if meta["dp_world_size"] != WORLD:
            die(f"checkpoint has {meta['dp_world_size']} partitions, this run {WORLD} ranks")
        numel = meta["numel"]
        params = gather(opt["fp32_flat_groups"], numel)
        avg, sq = gather(opt["exp_avg"], numel), gather(opt["exp_avg_sq"], numel)
        with torch.no_grad():
            for p, v in zip(self.params, unflat(params, self.params)):
                p.copy_(v)
        for p, a, s in zip(self.params, unflat(avg, self.params), unflat(sq, self.params)):
            self.opt.state[p] = {"step": torch.tensor(float(opt["adam_step"])),
                                 "exp_avg": a.clone(), "exp_avg_sq": s.clone()}
        if rng_state is not None:
            random.setstate(rng_state["python"])
            torch.set_rng_state(rng_state["cpu"])
        self.step = int(state["global_step"])
        self.log_history = state.get("log_history", [])

    def run(self):
        rfc = self.resume_path()
        if rfc:
            self.load(rfc)
            log(f"resumed from {os.path.basename(rfc)} at step {self.step} of {self.max_steps}")
        else:
            log(f"fresh start, step 0 of {self.max_steps}")
        os.makedirs(self.out, exist_ok=True)
        pause = int(os.environ.get("DPO_TEST_PAUSE_AFTER", "0") or 0)
        t0 = time.time()
        while self.step < self.max_steps:
            loss = self.train_step()
            if self.step % self.logging_steps == 0 or self.step == 1:
                self.log_history.append({"loss": round(loss, 6), "step": self.step,
                                         "epoch": round(self.step / self.steps_per_epoch, 4)})
                if RANK == 0:
                    log(f"step {self.step}/{self.max_steps} loss={loss:.6f}")
            if self.step % self.save_steps == 0:
                self.save()
                if self.step == pause:
                    log(f"paused after checkpoint-{self.step}")
                    while True:
                        time.sleep(1)
        losses = [h["loss"] for h in self.log_history]
        if RANK == 0:
            log(f"done step {self.step} in {time.time() - t0:.1f}s, "
                f"loss first={losses[0]:.6f} last={losses[-1]:.6f}" if losses else "done, no steps")


def main():
    if len(sys.argv) != 2:
        print("usage: dpo_train.py CONFIG.yaml", file=sys.stderr)
        sys.exit(2)
    cfg = read_config(sys.argv[1])
    if WORLD > 1:
        # ddp_timeout: Transformers' process-group timeout in seconds
        # (LLaMA-Factory's examples set 180000000; tests set it short).
        dist.init_process_group("gloo", timeout=datetime.timedelta(
            seconds=int(cfg.get("ddp_timeout", 1800))))
    run = Run(cfg)
    if RANK == 0:
        log(f"config {sys.argv[1]}: output_dir={run.out} save_on_each_node={run.save_on_each_node} "
            f"finetuning_type={'lora' if run.lora else 'full'} pref_beta={run.beta} "
            f"zero_stage={run.zero_stage} offload={run.offload} bf16={run.bf16} "
            f"PYTORCH_CUDA_ALLOC_CONF={os.environ.get('PYTORCH_CUDA_ALLOC_CONF', '')} pairs={len(run.pairs)} "
            f"max_steps={run.max_steps} save_steps={run.save_steps}")
    log(f"local_rank {LOCAL_RANK} node_rank {NODE_RANK} should_save={run.should_save}")
    run.run()
    if WORLD > 1:
        dist.barrier()
    log("exiting")
    # Every rank has saved and passed the last barrier: end here, without
    # the interpreter's teardown of the Gloo group. Left to the teardown,
    # Debian 13's torch 2.6 now and then aborted a rank (std::terminate,
    # SIGABRT); destroyed first (dist.destroy_process_group, as
    # LLaMA-Factory's run_exp does), Debian 12's torch 1.13 now and then
    # left a rank hanging in its exit. Either failed a finished run.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
