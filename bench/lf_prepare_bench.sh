#!/bin/bash
# Cost of --distenv-lf-config in task_init on a big node-local output_dir:
# 20 checkpoints of a 64-rank ZeRO-3 run (2 nodes x 32 processes, 3,000
# files per node: each checkpoint's trainer state, DeepSpeed tag, model
# and optimizer shards of the node's ranks and their rng states), on a
# 2-node namespace cluster of its own with a private tmpfs per node
# (bench/lib.bash). Each round, one after the other, as steps in one
# allocation:
#   distenv    srun -N2 --distenv --distenv-nproc=32 true
#   lf-config  the same with --distenv-lf-config=dpo.yaml: read the YAML,
#              the DeepSpeed JSON and config.json, classify output_dir's
#              storage, list it, check the newest checkpoint for this
#              node's 32 ranks, write the resolved copy
# Prints wall time per step (median, mean, 90th percentile) and the
# difference and ratio of the medians, from the same run. Target: the
# difference under 20 ms (the nodes do it in parallel, so it is the cost
# per node).
#
#   bench/lf_prepare_bench.sh [ROUNDS]     (root; default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
rounds=${1:-30}
so=${DISTENV_SO:-$top/.libs/distenv.so}
[ "$(id -u)" -eq 0 ] || { echo "lf_prepare_bench: run as root (it starts a cluster)" >&2; exit 1; }
[ -f "$so" ] || { echo "lf_prepare_bench: no $so; build first (contrib/build.sh)" >&2; exit 1; }

# shellcheck source=bench/lib.bash
source bench/lib.bash
work=$(mktemp -d)
local_disk=$DISTENV_CLUSTER_DIR/node-local
bench_cluster_up "$work" "$so" --node-local "$local_disk"
cd "$work"

# The run's files, on each node's own disk: node n holds ranks 32n..32n+31.
# shellcheck disable=SC2016 # expanded on each node
srun -N2 --ntasks-per-node=1 bash -c '
	out=$1/out node=$SLURM_NODEID
	for n in $(seq 100 100 2000); do
		c=$out/checkpoint-$n g=$c/global_step$n
		mkdir -p "$g"
		echo "{\"global_step\": $n}" >"$c/trainer_state.json"
		printf "global_step%s" "$n" >"$c/latest"
		for r in $(seq $((node * 32)) $((node * 32 + 31))); do
			: >"$g/zero_pp_rank_${r}_mp_rank_00_model_states.pt"
			: >"$g/bf16_zero_pp_rank_${r}_mp_rank_00_optim_states.pt"
			: >"$c/rng_state_$r.pth"
		done
	done
	echo "$(hostname): $(find "$out" -type f | wc -l) files"' sh "$local_disk"
/usr/bin/python3 "$top/contrib/lfstack/overlay.py" "$top/templates/lf/qwen2_72b_full_dpo.yaml" dpo.yaml \
	"model_name_or_path=$top/tests/cluster/lf/tiny_model" "dataset_dir=$top/templates/data" \
	"deepspeed=$top/templates/deepspeed/ds_z3.json" "output_dir=$local_disk/out"

# The resolved copies go to the node's disk too, as on a real node.
export TMPDIR=$local_disk
# shellcheck disable=SC2016
salloc -N2 bash -c '
	work=$1 rounds=$2
	for r in $(seq 0 "$rounds"); do
		for v in distenv lf-config; do
			flags=(--distenv --distenv-nproc=32)
			[ "$v" = lf-config ] && flags+=(--distenv-lf-config=dpo.yaml)
			t0=$(date +%s%N)
			srun -N2 "${flags[@]}" true >/dev/null 2>"$work/$v.err" ||
				{ cat "$work/$v.err" >&2; exit 1; }
			# round 0 warms up, not counted
			[ "$r" -eq 0 ] || echo $((($(date +%s%N) - t0) / 1000000)) >>"$work/$v.ms"
		done
	done' lf-prepare-bench "$work" "$rounds" >/dev/null

echo "--distenv-lf-config in task_init: $rounds rounds, 20 checkpoints x 64 ranks on node-local tmpfs, 2 nodes, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
read -r base _ _ < <(stats distenv.ms)
printf '  %-10s %9s %9s %9s %15s\n' variant median mean p90 "median - base"
for v in distenv lf-config; do
	read -r med mean p90 < <(stats "$v.ms")
	printf '  %-10s %6s ms %6s ms %6s ms %12s ms\n' "$v" "$med" "$mean" "$p90" $((med - base))
done
read -r med _ _ < <(stats lf-config.ms)
awk -v m="$med" -v b="$base" 'BEGIN { printf "  ratio lf-config / distenv: %.2f; per node: %d ms (target < 20 ms)\n", m / b, m - b }'
