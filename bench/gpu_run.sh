#!/bin/bash
# The one command for the GPU machine: bench/gpu_dpo_memory.py on one
# CUDA GPU (torch, transformers; no LLaMA-Factory, no network), after the
# machine's nvidia-smi and versions. Results in $OUT (default: .):
# gpu_dpo_memory.json and this run's log, gpu_dpo_memory.log.
#
#   OUT=/some/dir bench/gpu_run.sh [more gpu_dpo_memory.py options]
#
# The script stops its own workers at --budget-s (270 s); the timeout
# here is the backstop (under 5 minutes in all).
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-.}
PY=${PYTHON:-python3}
mkdir -p "$OUT" || exit 1
{
	echo "== date"
	date -u
	echo "== nvidia-smi"
	nvidia-smi || echo "nvidia-smi failed"
	echo "== versions"
	"$PY" - <<'PYEOF'
import platform
import torch
import transformers
print("python", platform.python_version())
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "available", torch.cuda.is_available())
print("transformers", transformers.__version__)
try:
    import peft
    print("peft", peft.__version__)
except ImportError:
    print("peft absent (not needed)")
PYEOF
	echo "== bench/gpu_dpo_memory.py"
	timeout -k 10 290 "$PY" bench/gpu_dpo_memory.py \
		--out "$OUT/gpu_dpo_memory.json" "$@"
	echo "exit $?"
} 2>&1 | tee "$OUT/gpu_dpo_memory.log"
