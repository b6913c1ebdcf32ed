#!/bin/bash
# Make, or reuse, the Python environment in which distenv's tests and demo
# run the real LLaMA-Factory: a venv of Debian 12's /usr/bin/python3 at
# ${DISTENV_VENV:-/var/cache/distenv/venv}, outside the checkout, holding
# exactly the pins of requirements.lock beside this script.
#
#   contrib/lfstack/venv.sh          make it unless it is current; print its path
#   contrib/lfstack/venv.sh --check  exit 0 if it is current, 1 if not
#   contrib/lfstack/venv.sh --path   print its path, building nothing
#
# "Current" means its stamp holds the SHA-256 of the lock file and of the
# recipe number below: a changed pin rebuilds it from scratch, an unchanged
# lock costs nothing. Raise the recipe number when a change to the steps
# below must rebuild existing venvs. The stamp is written last, so an
# interrupted build is never taken for a finished one. Two runs at once
# wait for each other (flock).
#
# stdout is the venv's path and nothing else, so callers take it with
# venv=$(contrib/lfstack/venv.sh). The tools this script runs (pip, the
# import check: DeepSpeed prints its accelerator warning on stdout) write
# wherever they like, so the script's stdout is kept on fd 3 and
# everything else goes to stderr.
set -euo pipefail
exec 3>&1 1>&2

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lock=$here/requirements.lock
venv=${DISTENV_VENV:-/var/cache/distenv/venv}
# before any other work: the test helpers ask this at every load
if [ "${1:-}" = --path ]; then
	echo "$venv" >&3
	exit 0
fi
stamp=$venv/.distenv-lock.sha256
# The interpreter by its own name (Debian 12: /usr/bin/python3.11), so
# that the venv's links name it rather than /usr/bin/python3: the release
# chroots of tests/releases.sh carry another python3 and get this one
# bound in beside it.
python=$(readlink -f /usr/bin/python3 2>/dev/null || echo /usr/bin/python3)
recipe=2

say() { echo "lfstack: $*" >&2; }

want=$({ cat "$lock"; echo "recipe $recipe"; } | sha256sum | cut -d' ' -f1)
current() { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }

if [ "${1:-}" = --check ]; then
	current
	exit
fi

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if current; then
	echo "$venv" >&3
	exit 0
fi

[ -x "$python" ] || { say "no $python: install Debian's python3 and python3-venv (contrib/install-deps.sh)"; exit 1; }
say "building $venv from $lock (a few minutes)"
start=$SECONDS
rm -rf "$venv"
"$python" -m venv "$venv"
# pip, without its notes on the machine's extra package locations that
# hold nothing for a package (one line each, a hundred per install)
pip() {
	"$venv/bin/python" -m pip --disable-pip-version-check --no-input --quiet "$@" \
		2> >(grep -v "^WARNING: Location '.*' is ignored: it is neither a file nor a directory.$" >&2)
}

# Everything but deepspeed, without dependency resolution: the lock is the
# resolution. torch comes first in the lock, which deepspeed's build needs.
grep -vE '^[[:space:]]*(#|$)|^deepspeed==' "$lock" >"$venv/.pins"
pip install --no-deps -r "$venv/.pins"

# deepspeed is a source distribution. Built against the venv's torch (no
# build isolation, which would fetch a CUDA torch to build with), for the
# CPU accelerator, with the two operators a CPU ZeRO-3 run loads compiled
# now rather than by every job at its start (each JIT build took about 40 s
# here): the shared-memory collective (deepspeed/ops/op_builder/cpu/comm.py,
# DS_BUILD_SHM_COMM) and the CPU Adam of optimizer offload
# (cpu/cpu_adam.py, DS_BUILD_CPU_ADAM).
DS_ACCELERATOR=cpu DS_BUILD_OPS=0 DS_BUILD_SHM_COMM=1 DS_BUILD_CPU_ADAM=1 \
	pip install --no-deps --no-build-isolation "$(grep -E '^deepspeed==' "$lock")"

# torchaudio's extension libraries on the registry are linked against
# CUDA's libc10_cuda.so; without them torchaudio imports as a build without
# its extension (requirements.lock says why it is installed at all).
rm -f "$venv"/lib/python3*/site-packages/torchaudio/lib/*.so

# What the tests rely on, checked once here rather than failing in a job.
"$venv/bin/python" - <<'EOF'
import importlib.metadata as md
import deepspeed
import llamafactory.data  # imports torchaudio and the templates
import torch
from deepspeed.git_version_info import installed_ops
from transformers import Qwen2ForCausalLM  # noqa: F401

assert torch.__version__.startswith("2.13.0"), torch.__version__
assert md.version("llamafactory") == "0.9.5"
missing = [op for op in ("deepspeed_shm_comm", "cpu_adam") if not installed_ops.get(op)]
assert not missing, f"deepspeed built without {missing}"
EOF
rm -f "$venv/.pins"
echo "$want" >"$stamp"
say "built $venv in $((SECONDS - start)) s"
echo "$venv" >&3
