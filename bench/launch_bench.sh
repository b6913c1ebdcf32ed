#!/bin/bash
# Launch overhead of distenv on a real Slurm 22.05 cluster: starts its own
# 2-node namespace cluster (tests/cluster/cluster.sh, with names of its
# own so that it can run beside the test suite's), measures, stops it (also
# on failure or Ctrl-C).
#
#   sudo bench/launch_bench.sh [ROUNDS]      (default 30 rounds)
#
# Each round runs, one after the other (interleaved, so drift in the
# machine's load hits every variant alike):
#   none     srun -N2 true, plugstack.conf empty (no plugin at all)
#   loaded   srun -N2 true, distenv.so loaded, job without --distenv
#   distenv  srun -N2 --distenv true
# each as a new job (srun outside an allocation: allocation + step), and
# then the same three, again in turns, as steps inside one 2-node
# allocation (salloc).
# Prints wall time per launch (median, mean, 90th percentile, ms),
# launches per second (from the median)
# and the ratios against "none", all from the same run.
#
# Env: DISTENV_SO (default .libs/distenv.so of this tree), BENCH_CLUSTER_*
# to change the cluster's names (defaults in bench/lib.bash).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
rounds=${1:-30}
so=${DISTENV_SO:-$top/.libs/distenv.so}
[ "$(id -u)" -eq 0 ] || { echo "launch_bench: run as root (it starts a cluster)" >&2; exit 1; }
[ -f "$so" ] || { echo "launch_bench: no $so; build first (contrib/build.sh)" >&2; exit 1; }

# shellcheck source=bench/lib.bash
source bench/lib.bash
work=$(mktemp -d)
bench_cluster_up "$work" "$so"
plugstack=$DISTENV_CLUSTER_DIR/plugstack.conf
cd "$work"

# variant NAME: set up plugstack.conf and the srun flags for NAME.
variant() {
	case "$1" in
	none) : >"$plugstack"; flags=() ;;
	loaded) echo "required $so" >"$plugstack"; flags=() ;;
	distenv) echo "required $so" >"$plugstack"; flags=(--distenv) ;;
	esac
}

# One warm-up launch of each, not counted.
for v in none loaded distenv; do variant "$v"; ms srun -N2 "${flags[@]}" true >/dev/null; done

for r in $(seq 1 "$rounds"); do
	for v in none loaded distenv; do
		variant "$v"
		ms srun -N2 "${flags[@]}" true >>"$work/job-$v.ms"
	done
	: "$r"
done

# Steps inside one allocation: the allocation is made once, each srun is
# only a step. srun and slurmstepd read plugstack.conf at every launch,
# so the variants can take turns inside the one allocation too.
# shellcheck disable=SC2016
salloc -N2 bash -c '
	so=$1 plugstack=$2 work=$3 rounds=$4
	for r in $(seq 1 "$rounds"); do
		for v in none loaded distenv; do
			case $v in
			none) : >"$plugstack"; flags=() ;;
			loaded) echo "required $so" >"$plugstack"; flags=() ;;
			distenv) echo "required $so" >"$plugstack"; flags=(--distenv) ;;
			esac
			t0=$(date +%s%N)
			srun -N2 "${flags[@]}" true >/dev/null 2>&1 || exit 1
			echo $((($(date +%s%N) - t0) / 1000000)) >>"$work/step-$v.ms"
		done
	done' launch-bench "$so" "$plugstack" "$work" "$rounds" >/dev/null 2>&1

# Medians make the ratios (stats, bench/lib.bash); means shown too.
echo "distenv launch overhead: $rounds rounds, 2-node cluster in namespaces, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
for kind in job step; do
	case $kind in
	job) echo "srun -N2 true as a new job (allocation + step):" ;;
	step) echo "srun -N2 true as a step inside one salloc -N2 allocation:" ;;
	esac
	read -r base_med _ _ < <(stats "$work/$kind-none.ms")
	printf '  %-8s %9s %9s %9s %9s %13s\n' variant median mean p90 "launch/s" "median/none"
	for v in none loaded distenv; do
		read -r med mean p90 < <(stats "$work/$kind-$v.ms")
		printf '  %-8s %6s ms %6s ms %6s ms %9.2f %13.2f\n' "$v" "$med" "$mean" "$p90" \
			"$(awk -v m="$med" 'BEGIN{print 1000/m}')" \
			"$(awk -v m="$med" -v b="$base_med" 'BEGIN{print m/b}')"
	done
done
