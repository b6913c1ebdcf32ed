#!/bin/bash
# The main job, end to end on this machine (Debian 12, as root): install
# Debian's packages and the pinned LLaMA-Factory stack (contrib/lfstack/),
# build distenv, start a real 2-node Slurm cluster in network namespaces
# with distenv.so in its plugstack and a node-local disk per node, and
# submit the ZeRO-3 DPO template (templates/dpo_full_zero3.sbatch, its
# parameter block set for 2 CPU nodes) running the real
# `llamafactory-cli train` on a tiny Qwen2 model made here. It prints the
# LLaMA-Factory version, what distenv derived on each node, each node's
# loss lines and checkpoint listing, and tears the cluster down (also on
# failure).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (it starts Slurm and network namespaces)" >&2; exit 1; }
contrib/install-deps.sh
contrib/build.sh
venv=$(contrib/lfstack/venv.sh)

export DISTENV_CLUSTER_DIR=${DISTENV_CLUSTER_DIR:-/tmp/distenv-demo}
dir=$DISTENV_CLUSTER_DIR
local_disk=$dir/node-local
trap 'tests/cluster/cluster.sh stop >/dev/null 2>&1 || true' EXIT
tests/cluster/cluster.sh stop >/dev/null 2>&1 || true
plugstack=$(mktemp)
echo "required $top/.libs/distenv.so" >"$plugstack"
tests/cluster/cluster.sh start -n 2 --plugstack "$plugstack" --resv-ports --node-local "$local_disk" >/dev/null
rm -f "$plugstack"
# shellcheck disable=SC1091
source "$dir/env.sh"

# The template's YAML with the demo's model, data, output_dir and step
# counts, and the CPU knobs (contrib/lfstack/cpu.yaml); nothing else.
"$venv/bin/python" contrib/lfstack/tiny_model.py templates/data/dpo_pairs.json "$dir/tiny" >/dev/null
"$venv/bin/python" contrib/lfstack/overlay.py templates/lf/qwen2_72b_full_dpo.yaml "$dir/dpo.yaml" \
	"model_name_or_path=$dir/tiny" "dataset_dir=$top/templates/data" \
	"deepspeed=$top/templates/deepspeed/ds_z3.json" "output_dir=$local_disk/dpo" \
	learning_rate=0.02 gradient_accumulation_steps=1 logging_steps=1 save_steps=4 \
	num_train_epochs=2.0 ddp_timeout=120 "@contrib/lfstack/cpu.yaml"
job=$dir/dpo_full_zero3.sbatch
out=$dir/dpo.out
contrib/lfstack/with_params.sh templates/dpo_full_zero3.sbatch "$job" \
	"#SBATCH --job-name=dpo-demo" "#SBATCH --nodes=2" "#SBATCH --time=10" \
	"#SBATCH --distenv-nproc=2" "#SBATCH --distenv-lf-config=$dir/dpo.yaml" \
	"#SBATCH --output=$out --open-mode=append"

echo "demo: LLaMA-Factory $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("llamafactory"))'), from $venv"
echo "demo: sbatch --wait $job"
rm -f "$out" # the template appends (--open-mode=append), for requeues
rc=0
# The venv first in PATH, as `source venv/bin/activate` would do; the job
# inherits it. No model hub: everything is on this machine.
PATH="$venv/bin:$PATH" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 sbatch --wait "$job" >/dev/null || rc=$?
echo "demo: what distenv derived on each node (--distenv-show):"
grep '^distenv: ' "$out" | grep -E ' (NNODES|NODE_RANK|MASTER_ADDR|MASTER_PORT|NPROC_PER_NODE|GLOO_SOCKET_IFNAME)=|node [0-9]+ of' || true
grep -E 'Initializing [0-9]+ distributed tasks at|Multi-node training enabled' "$out" | sed 's/^.*>> /demo: llamafactory-cli: /' || true
echo "demo: each node's loss lines (trainer_log.jsonl) and checkpoint files (trainer state, DeepSpeed tag and shards):"
# shellcheck disable=SC2016 # expanded on each node
srun -N2 --ntasks-per-node=1 bash -c '
	node=$(hostname)
	/usr/bin/python3 -c "
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if \"loss\" in r:
        print(\"%s: step %d/%d loss %.4f\" % (sys.argv[2], r[\"current_steps\"], r[\"total_steps\"], r[\"loss\"]))
" "$1/trainer_log.jsonl" "$node" || echo "$node: no trainer_log.jsonl"
	cd "$1" 2>/dev/null &&
		find checkpoint-* -type f \( -name trainer_state.json -o -name latest -o -path "*/global_step*" \) |
		sort -V | sed "s|^|$node: |"' sh "$local_disk/dpo" | sort -s -k1,1
echo "demo: job exit code $rc (full log: $out)"
exit "$rc"
