#!/bin/bash
# Build the libFuzzer targets tests/fuzz/fuzz_*.c (or those named on the
# command line) with clang, ASan and UBSan, straight from the sources
# (no libtool, no configure), into $DISTENV_FUZZ_BUILD (default
# _build-fuzz/ at the top of the tree).
#
#   tests/fuzz/build.sh                 every target
#   tests/fuzz/build.sh fuzz_ifspec     one target
#
# Every .c of the core and of the parser directories (plugin/core,
# plugin/sys, plugin/site, plugin/plan, plugin/lf, plugin/topo: those
# that exist) goes into one instrumented archive; a target links what it
# uses from it, plus libslurm (hostlists), libyaml and hwloc when
# installed. A source that does not compile is skipped with a warning
# (another engineer's half-written file must not stop the others); a
# target that then cannot link fails. Prints "built PATH" or "FAILED
# NAME" per target; exits 1 when any target failed. Needs clang and
# libclang-rt-14-dev (libFuzzer).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
top=$(pwd)
out=${DISTENV_FUZZ_BUILD:-$top/_build-fuzz}
CC=${FUZZ_CC:-clang}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-std=gnu11 -g -O1 -Wall -Wno-unused-parameter $SAN"

command -v "$CC" >/dev/null || { echo "build.sh: $CC not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }

dirs=()
for d in plugin/core plugin/sys plugin/site plugin/plan plugin/lf plugin/topo; do
	[ -d "$d" ] && dirs+=("$d")
done
incs=(-I"$top")
for d in "${dirs[@]}"; do incs+=(-I"$top/$d"); done

libs=(-lslurm)
for pc in yaml-0.1 hwloc; do
	if pkg-config --exists "$pc" 2>/dev/null; then
		read -r -a more <<<"$(pkg-config --libs "$pc")"
		libs+=("${more[@]}")
	fi
done

mkdir -p "$out/obj"
rm -f "$out/obj/"*.o "$out/libdistenv_fuzz.a"
srcs=()
for d in "${dirs[@]}"; do
	for f in "$d"/*.c; do [ -f "$f" ] && srcs+=("$f"); done
done
# compile SRC: one instrumented object, or a warning and none.
compile() {
	local o
	o="$out/obj/$(tr / _ <<<"$1").o"
	# shellcheck disable=SC2086 # CFLAGS is a list of flags
	if ! $CC $CFLAGS -fsanitize=fuzzer-no-link "${incs[@]}" -c "$1" -o "$o" 2>"$o.err"; then
		echo "build.sh: warning: $1 does not compile, left out:" >&2
		head -5 "$o.err" >&2
		rm -f "$o"
	fi
	rm -f "$o.err"
}
# As many at a time as there are cores (2 on the CI machine).
jobs_max=$(nproc)
for f in "${srcs[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
	compile "$f" &
done
wait
objs=("$out"/obj/*.o)
[ -e "${objs[0]}" ] || { echo "build.sh: no object compiled" >&2; exit 1; }
ar rcs "$out/libdistenv_fuzz.a" "${objs[@]}"

targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
	for f in tests/fuzz/fuzz_*.c; do
		[ -f "$f" ] && targets+=("$(basename "$f" .c)")
	done
fi
failed=0
for t in "${targets[@]}"; do
	t=${t%.c}
	t=${t##*/}
	rm -f "$out/$t"
	# shellcheck disable=SC2086
	if $CC $CFLAGS -fsanitize=fuzzer "${incs[@]}" "tests/fuzz/$t.c" \
		"$out/libdistenv_fuzz.a" "${libs[@]}" -o "$out/$t" 2>"$out/$t.build.log"; then
		echo "built $out/$t"
	else
		echo "FAILED $t (see $out/$t.build.log)"
		head -20 "$out/$t.build.log" >&2
		failed=1
	fi
done
exit "$failed"
