#!/bin/bash
# The network rehearsal's cost on a healthy step: starts its own 2-node
# namespace cluster (tests/cluster/cluster.sh; names of its own unless
# DISTENV_CLUSTER_* are set), measures, stops it (also on failure).
#
#   sudo bench/rehearsal_bench.sh [ROUNDS]      (default 20 rounds)
#
# Each round runs `srun -N2 --distenv true` with the rehearsal (the
# default) and without it (DISTENV_REHEARSAL_TIMEOUT=0), one after the
# other, first as steps inside one salloc -N2 allocation, then as new
# jobs. Prints median, mean and 90th percentile (ms) of each, and the
# ratio of the medians (with / without).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
rounds=${1:-20}
so=${DISTENV_SO:-$top/.libs/distenv.so}
[ "$(id -u)" -eq 0 ] || { echo "rehearsal_bench: run as root (it starts a cluster)" >&2; exit 1; }
[ -f "$so" ] || { echo "rehearsal_bench: no $so; build first (contrib/build.sh)" >&2; exit 1; }
export DISTENV_CLUSTER_BRIDGE=${DISTENV_CLUSTER_BRIDGE:-dvbrrb} \
	DISTENV_CLUSTER_NET=${DISTENV_CLUSTER_NET:-10.94.0} \
	DISTENV_CLUSTER_NS=${DISTENV_CLUSTER_NS:-dvrbn} \
	DISTENV_CLUSTER_VETH=${DISTENV_CLUSTER_VETH:-dvrbv} \
	DISTENV_CLUSTER_CTLD_PORT=${DISTENV_CLUSTER_CTLD_PORT:-6894} \
	DISTENV_CLUSTER_DIR=${DISTENV_CLUSTER_DIR:-/tmp/distenv-cluster-rb}
work=$(mktemp -d)
trap 'tests/cluster/cluster.sh stop >/dev/null 2>&1; rm -rf "$work"' EXIT
echo "required $so" >"$work/plugstack.conf"
tests/cluster/cluster.sh start -n 2 --plugstack "$work/plugstack.conf" --resv-ports >/dev/null 2>&1
# shellcheck disable=SC1091
source "$DISTENV_CLUSTER_DIR/env.sh"

# One warm-up launch of each, not counted.
srun -N2 --distenv true >/dev/null 2>&1
DISTENV_REHEARSAL_TIMEOUT=0 srun -N2 --distenv true >/dev/null 2>&1

# shellcheck disable=SC2016
salloc -N2 bash -c '
	work=$1 rounds=$2
	for r in $(seq 1 "$rounds"); do
		for v in with without; do
			t=; [ "$v" = with ] || t=0
			t0=$(date +%s%N)
			DISTENV_REHEARSAL_TIMEOUT=$t srun -N2 --distenv true >"$work/last.out" 2>&1 ||
				{ echo "step $v: failed"; cat "$work/last.out"; } >>"$work/failures"
			echo $((($(date +%s%N) - t0) / 1000)) >>"$work/step-$v.us"
		done
	done' rehearsal-bench "$work" "$rounds" >/dev/null 2>&1 || echo "salloc failed" >>"$work/failures"
for r in $(seq 1 "$rounds"); do
	for v in with without; do
		t=
		[ "$v" = with ] || t=0
		t0=$(date +%s%N)
		DISTENV_REHEARSAL_TIMEOUT=$t srun -N2 --distenv true >"$work/last.out" 2>&1 ||
			{ echo "job $v: failed"; cat "$work/last.out"; } >>"$work/failures"
		echo $((($(date +%s%N) - t0) / 1000)) >>"$work/job-$v.us"
	done
	: "$r"
done

# A launch that failed is counted all the same, and said.
if [ -s "$work/failures" ]; then
	echo "rehearsal_bench: launches that failed:" >&2
	cat "$work/failures" >&2
fi

# stats FILE: median mean p90, in ms, from microseconds (a step of
# 40 ms: whole milliseconds would hide the difference measured)
stats() {
	sort -n "$1" | awk '{ a[NR] = $1 / 1000; s += $1 / 1000 }
		END { printf "%.2f %.2f %.2f\n", a[int((NR + 1) / 2)], s / NR, a[int(NR * 0.9)] }'
}

echo "network rehearsal cost: $rounds rounds, 2-node cluster in namespaces, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $(date -u +%Y-%m-%dT%H:%MZ)"
for kind in step job; do
	case $kind in
	step) echo "srun -N2 --distenv true as a step inside one salloc -N2 allocation:" ;;
	job) echo "srun -N2 --distenv true as a new job (allocation + step):" ;;
	esac
	read -r base base_mean _ < <(stats "$work/$kind-without.us")
	for v in with without; do
		read -r med mean p90 < <(stats "$work/$kind-$v.us")
		printf '  %-8s median %7s ms  mean %7s ms  p90 %7s ms  /without: median %.3f, mean %.3f\n' \
			"$v" "$med" "$mean" "$p90" "$(awk -v m="$med" -v b="$base" 'BEGIN { print m / b }')" \
			"$(awk -v m="$mean" -v b="$base_mean" 'BEGIN { print m / b }')"
	done
done
