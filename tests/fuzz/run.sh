#!/bin/bash
# Build and run every libFuzzer target tests/fuzz/fuzz_*.c for a bounded
# time and print one TAP line per target:
#
#   ok 3 - fuzz_ifspec: 1234567 execs in 40 s, no crash
#   not ok 4 - fuzz_nodelist: crash after 5678 execs (artifact: PATH)
#
# Each run starts by replaying the target's seed corpus
# tests/fuzz/corpus/<target>/ (known inputs and the regressions of past
# crashes), then mutates for the time left. New inputs go to a scratch
# directory, never into the tree. Per target: SECONDS_PER_TARGET (default
# 40), but at most FUZZ_TOTAL_SECONDS (default 480) over all targets
# together, so a CI run stays under 10 minutes however many targets
# there are. A crash, leak, sanitizer report or timeout leaves its input
# under $DISTENV_FUZZ_BUILD/artifacts/ (default _build-fuzz/): copy it to
# tests/fuzz/corpus/<target>/ once fixed, so every later run replays it.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
top=$(pwd)
out=${DISTENV_FUZZ_BUILD:-$top/_build-fuzz}
export DISTENV_FUZZ_BUILD=$out
per=${SECONDS_PER_TARGET:-40}
total=${FUZZ_TOTAL_SECONDS:-480}
# FUZZ_SEED set: a reproducible run, the same inputs in the same order
# on any machine, with each target's executions from tests/fuzz/runs.txt
# (SECONDS_PER_TARGET still caps it). Unset: a fresh random search.
seed=${FUZZ_SEED:-}

# runs_for TARGET: its line in tests/fuzz/runs.txt, else the default line.
runs_for() {
	awk -v t="$1" '$1 == t {r = $2} $1 == "default" {d = $2}
		END {print (r != "" ? r : d)}' tests/fuzz/runs.txt
}

targets=()
for f in tests/fuzz/fuzz_*.c; do
	[ -f "$f" ] && targets+=("$(basename "$f" .c)")
done
if [ "${#targets[@]}" -eq 0 ]; then
	echo "ok 1 # skip no fuzz targets"
	exit 0
fi
if ! command -v clang >/dev/null; then
	echo "ok 1 # skip clang not installed (contrib/install-deps.sh)"
	exit 0
fi
n=${#targets[@]}
if [ $((per * n)) -gt "$total" ]; then
	per=$((total / n))
	[ "$per" -ge 5 ] || per=5
fi

echo "# building ${n} fuzz targets into $out"
tests/fuzz/build.sh "${targets[@]}" | sed 's/^/# /'

export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
mkdir -p "$out/artifacts"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
stats="$out/fuzz-stats.txt"
: >"$stats"

echo "1..$n"
i=0
failed=0
for t in "${targets[@]}"; do
	i=$((i + 1))
	bin="$out/$t"
	if [ ! -x "$bin" ]; then
		echo "not ok $i - $t: does not build (see $out/$t.build.log)"
		failed=1
		continue
	fi
	work="$scratch/$t"
	mkdir -p "$work"
	seeds=()
	[ -d "tests/fuzz/corpus/$t" ] && seeds=("tests/fuzz/corpus/$t")
	log="$out/$t.log"
	repro=()
	[ -n "$seed" ] && repro=(-seed="$seed" -runs="$(runs_for "$t")")
	timeout -k 10 $((per + 120)) "$bin" -max_total_time="$per" "${repro[@]}" \
		-print_final_stats=1 -max_len=4096 -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$out/artifacts/$t-" \
		"$work" "${seeds[@]}" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	execs=${execs:-0}
	ncorpus=$(find "$work" -type f | wc -l)
	printf '%s %s %s %s\n' "$t" "$execs" "$per" "$rc" >>"$stats"
	if [ "$rc" -eq 0 ]; then
		echo "ok $i - $t: $execs execs${seed:+ (seed $seed)} in at most $per s, no crash (seeds: ${#seeds[@]} dir, new inputs: $ncorpus)"
	else
		art=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log" | tail -1)
		echo "not ok $i - $t: exit $rc after $execs execs (artifact: ${art:-none}; log: $log)"
		grep -E 'ERROR|SUMMARY|#[0-9]+ 0x' "$log" | head -15 | sed 's/^/#   /'
		failed=1
	fi
done
echo "# executions per target: $stats"
exit "$failed"
