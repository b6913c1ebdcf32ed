#!/bin/bash
# The unit tests and the distenv command under AddressSanitizer and
# UndefinedBehaviorSanitizer, and the command under valgrind. Prints TAP
# lines (`ok N - ...` / `not ok N - ...`) that tests/run counts.
#
#   tests/sanitize.sh            both parts
#   tests/sanitize.sh asan       ASan/UBSan build: cmocka tests + tests/cmd bats
#   tests/sanitize.sh valgrind   the in-tree ./distenv under valgrind
#   tests/sanitize.sh build      only the ASan/UBSan build (one TAP line);
#                                tests/sanitize_cluster.sh uses it
#
# The ASan build is a second, out-of-tree build in _build-asan/
# (gitignored). Automake refuses a VPATH build beside a configured source
# tree ("source directory already configured"), so the sources, tracked
# and new, are copied to _build-asan/src (generated autotools files with
# their times, so nothing is regenerated) and configured there with
# -fsanitize=address,undefined -fno-sanitize-recover=all. Sanitizer
# reports go to files (log_path), so a report in a test that expected a
# failure anyway is still seen: any report file is a `not ok`.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)
what=${1:-all}
build=${DISTENV_ASAN_BUILD:-$top/_build-asan}
# shellcheck source=tests/tap.bash
. tests/tap.bash

# The environment of one task of a one-node step, as tests/cmd sets it.
fake_step_env() {
	export SLURM_JOB_ID=812 SLURM_STEP_ID=4 SLURM_STEP_NUM_NODES=1
	export SLURM_NODEID=0 SLURM_STEP_NUM_TASKS=1 SLURM_PROCID=0
	export SLURM_LOCALID=0 SLURM_STEP_TASKS_PER_NODE=1
	export SLURMD_NODENAME=localhost SLURM_STEP_NODELIST=localhost
	export SLURM_STEP_RESV_PORTS=21005-21006
	unset MASTER_ADDR MASTER_PORT NNODES NODE_RANK RANK NPROC_PER_NODE \
		NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME DISTENV_SET \
		CUDA_VISIBLE_DEVICES SLURM_GPUS_ON_NODE WORLD_SIZE
}

# asan_build: (re)build the tree in $build/src with ASan and UBSan; the
# plugin is $build/src/.libs/distenv.so, the command $build/src/distenv.
asan_build() {
	local src=$build/src flags
	echo "# ASan/UBSan build in $src"
	rm -rf "$src" "$build/build.stamp"
	mkdir -p "$src"
	{
		git ls-files --cached --others --exclude-standard
		for f in configure Makefile.in aclocal.m4 config.h.in build-aux m4; do
			[ -e "$f" ] && find "$f" -type f
		done
	} | sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done |
		tar -cf - -T - | tar -xpf - -C "$src"
	flags='-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all'
	if ! (cd "$src" && { [ -x configure ] || autoreconf -fi; } &&
		./configure CFLAGS="$flags" LDFLAGS='-fsanitize=address,undefined' \
			>"$build/configure.log" 2>&1 &&
		make -j"$(nproc)" >"$build/make.log" 2>&1 &&
		make -j"$(nproc)" check TESTS= >>"$build/make.log" 2>&1); then
		tap not-ok "asan: build in $src (see $build/configure.log, $build/make.log)"
		tail -15 "$build/make.log" 2>/dev/null | sed 's/^/#   /'
		return 1
	fi
	# Written only after a complete build: tests/sanitize_cluster.sh
	# rebuilds when it is missing or older than a tracked source.
	touch "$build/build.stamp"
	tap ok "asan: build with -fsanitize=address,undefined"
}

asan() {
	local src=$build/src reports=$build/reports t rc out
	asan_build || return
	rm -rf "$reports"
	mkdir -p "$reports"

	export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:exitcode=86"
	export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0:exitcode=86"
	export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
	for t in "$src"/tests/unit/test_*; do
		case "$t" in *.c | *.h | *.o | *.log | *.trs) continue ;; esac
		[ -x "$t" ] || continue
		out=$(CMOCKA_MESSAGE_OUTPUT=TAP "$t" 2>&1)
		rc=$?
		tap_relay "asan: ${t##*/}: " <<<"$out"
		if [ "$rc" -eq 0 ]; then
			tap ok "asan: ${t##*/} exits 0 (no leak, no sanitizer report)"
		else
			tap not-ok "asan: ${t##*/} exits $rc"
		fi
	done
	# The copies of the bats files, so that every one of them (those
	# that name ../../distenv too) runs the ASan build of the command.
	out=$(DISTENV_BIN="$src/distenv" bats --tap "$src"/tests/cmd/*.bats 2>&1)
	tap_relay "asan: distenv command: " <<<"$out"
	tap_no_reports "$reports" "asan: unit and command tests (ASan, LSan, UBSan)"
	unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
}

# valgrind LABEL EXPECTED_STATUS ARGS...: the command must leak nothing
# and make no memory error; its exit status must be the expected one.
vg() {
	local label=$1 want=$2 log rc lost
	shift 2
	log=$(mktemp)
	valgrind --leak-check=full --show-leak-kinds=all \
		--errors-for-leak-kinds=definite,indirect,possible \
		--error-exitcode=99 --log-file="$log" ./distenv "$@" >/dev/null 2>&1
	rc=$?
	lost=$(grep -E 'definitely lost|indirectly lost|possibly lost|in use at exit' "$log" |
		sed 's/^==[0-9]*== *//' | paste -sd ';' -)
	if [ "$rc" -eq "$want" ] && grep -q 'ERROR SUMMARY: 0 errors' "$log" &&
		{ grep -q 'All heap blocks were freed' "$log" ||
			! grep -qE '(definitely|indirectly|possibly) lost: [1-9]' "$log"; }; then
		tap ok "valgrind: distenv $label: exit $rc, 0 errors, 0 bytes lost (${lost:-})"
	else
		tap not-ok "valgrind: distenv $label: exit $rc (want $want): ${lost:-}"
		grep -E '==[0-9]+== (Invalid|Conditional|  (at|by)|[0-9,]+ bytes in)' "$log" | head -20 | sed 's/^/#   /'
	fi
	rm -f "$log"
}

valgrind_part() {
	if ! command -v valgrind >/dev/null; then
		tap ok "valgrind # skip valgrind not installed (contrib/install-deps.sh)"
		return
	fi
	if [ ! -x ./distenv ]; then
		tap not-ok "valgrind: no ./distenv (build first: contrib/build.sh)"
		return
	fi
	# In a subshell, for the fake step's variables: its results are
	# numbered on their own and relayed with their plan.
	tap_relay "" < <(
		tap_n=0
		fake_step_env
		vg "--version" 0 --version
		vg "env (torchrun, reserved port)" 0 env
		vg "show" 0 show
		vg "env --mode tasks --nproc 2" 0 env --mode tasks --nproc 2
		vg "env --ifname ^=docker,ib (exclusion list)" 0 env --ifname '^=docker,ib'
		MASTER_PORT=29500 vg "env, user's MASTER_PORT kept" 0 env
		vg "env --port abc (option error)" 2 env --port abc
		vg "env --ifname '=ens5' (no such interface)" 1 env --ifname =ens5
		SLURM_STEP_RESV_PORTS=21000- vg "env, bad SLURM_STEP_RESV_PORTS" 1 env
		SLURM_STEP_TASKS_PER_NODE=2 SLURM_STEP_NUM_TASKS=2 vg "env, 2 tasks in torchrun mode" 1 env
		unset SLURM_JOB_ID
		vg "env outside a step" 1 env
		tap_plan
	)
}

case "$what" in
build) asan_build ;;
asan) asan ;;
valgrind) valgrind_part ;;
*)
	asan
	valgrind_part
	;;
esac
tap_status
