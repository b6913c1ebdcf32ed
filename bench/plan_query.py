"""`distenv plan --json` for a Qwen2 shape: the plan's GPU terms for one
GPU, one pair of rows of seq tokens (cutoff_len), a DPO step with a
reference model (sigmoid loss), sdpa. Shared by bench/dpo_step_memory.py
and bench/gpu_dpo_memory.py; needs only the standard library."""

import importlib.metadata
import json
import os
import subprocess
import tempfile


def bench_stack():
    """The stack the benches run (distenv plan --lf-version,
    --transformers-version): LLaMA-Factory 0.9.5's DPO step (its own
    functions, or copies of them where it is not installed) on this
    Python's transformers (unknown when not installed). Given
    explicitly, so that the plan does not ask the templates' Python
    (DPO_PYTHON, python3), which may be another."""
    def version(package, default):
        try:
            return importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            return default
    return version("llamafactory", "0.9.5"), version("transformers", "unknown")


def distenv_plan_terms(distenv, cfg, seq, answer, grad_ckpt=True):
    """The plan's gpu_bytes_per_term for the shape cfg (config.json's
    fields) at cutoff_len seq, written beside as config.json, a ZeRO-3
    DeepSpeed config and a LLaMA-Factory YAML, for bench_stack()."""
    with tempfile.TemporaryDirectory() as d:
        c = dict(cfg, model_type="qwen2", architectures=["Qwen2ForCausalLM"],
                 torch_dtype="bfloat16", tie_word_embeddings=False)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f)
        ds = os.path.join(d, "ds.json")
        with open(ds, "w") as f:
            json.dump({"zero_optimization": {"stage": 3}}, f)
        yaml = os.path.join(d, "dpo.yaml")
        with open(yaml, "w") as f:
            f.write(f"model_name_or_path: {d}\nstage: dpo\ndo_train: true\n"
                    f"finetuning_type: full\ndeepspeed: {ds}\npref_loss: sigmoid\n"
                    f"dataset: x\ntemplate: qwen\ncutoff_len: {seq}\n"
                    f"output_dir: {d}/out\nper_device_train_batch_size: 1\n"
                    f"bf16: true\nflash_attn: sdpa\n"
                    + ("" if grad_ckpt else "disable_gradient_checkpointing: true\n"))
        out = subprocess.run([distenv, "plan", yaml, "--json", "--gpu-mem", "1T",
                              "--host-mem", "1T", "--answer-tokens", str(answer),
                              "--lf-version", bench_stack()[0],
                              "--transformers-version", bench_stack()[1]],
                             capture_output=True, text=True, check=True).stdout
    return json.loads(out)["gpu_bytes_per_term"]
