#!/bin/bash
# The cluster tests (tests/cluster/*.bats) again, on the real Slurm cluster,
# with the ASan/UBSan build of distenv.so loaded by every process that runs
# its code: srun, sbatch and salloc on the submit side, slurmd and
# slurmstepd (and so the forked task, where task_init runs) on the nodes.
# Prints TAP lines that tests/run counts. Needs root (the cluster does).
#
#   tests/sanitize_cluster.sh
#
# How the ASan runtime gets into Slurm's own programs, which are not built
# with it (an instrumented plugin needs the runtime loaded first):
#   - slurmd: LD_PRELOAD (cluster.sh's DISTENV_CLUSTER_SLURMD_PRELOAD);
#     slurmstepd inherits it from slurmd. A task's environment is the
#     job's, not slurmstepd's, so user programs do not get the runtime
#     (ASAN_OPTIONS does reach them; only the ASan distenv reads it).
#   - srun/sbatch/salloc: wrappers first in PATH that start the real
#     program through the dynamic loader with `--preload` (glibc >= 2.33),
#     which sets no LD_PRELOAD, so the job's environment stays clean too.
#     Batch scripts call srun by name, so their steps go through the
#     wrapper as well.
# Leak checking is off here (Slurm's daemons and clients keep memory to
# exit by design); the same code is leak-checked by tests/sanitize.sh.
# package.bats is left out: it tests the installed .deb, not this build.
# llamafactory.bats and dpo_sample.bats are left out too: their steps run
# the plugin's code that templates.bats runs (the LLaMA-Factory
# preparation in task_init), and their minutes go to the real trainer,
# not to distenv. containers.bats,
# pyxis.bats and apptainer.bats (which runs in the 26.05 chroot only) are
# left out: their steps run the plugin's code of the plain steps, then a
# container, and the command inside is not this build's.
#
# A canary plugin (tests/cluster/asan_canary.c) with a one-byte heap
# overflow, run in srun and in a task first, proves that a report from
# either side reaches the report directory.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)
build=${DISTENV_ASAN_BUILD:-$top/_build-asan}
reports=$build/cluster-reports
wrappers=$build/bin
# shellcheck source=tests/tap.bash
. tests/tap.bash
# A cluster of its own names (tests/cluster/cluster.sh), and a test user
# of its own (failures.bats), so that it can run beside the plain suite
# (tests/run does)
export DISTENV_CLUSTER_BRIDGE=${DISTENV_CLUSTER_BRIDGE:-dvbras} \
	DISTENV_CLUSTER_NET=${DISTENV_CLUSTER_NET:-10.82.0} \
	DISTENV_CLUSTER_NS=${DISTENV_CLUSTER_NS:-dvasn} \
	DISTENV_CLUSTER_VETH=${DISTENV_CLUSTER_VETH:-dvasv} \
	DISTENV_CLUSTER_CTLD_PORT=${DISTENV_CLUSTER_CTLD_PORT:-6882} \
	DISTENV_CLUSTER_DIR=${DISTENV_CLUSTER_DIR:-/tmp/distenv-cluster-asan} \
	DISTENV_TEST_USER=${DISTENV_TEST_USER:-distenvasan}

if [ "$(id -u)" -ne 0 ]; then
	tap ok "asan cluster # skip the cluster needs root"
	tap_status
	exit
fi

# The ASan build (tests/sanitize.sh build), rebuilt when its stamp is
# missing (no build, or one that stopped half-way) or older than a
# tracked source or the build script.
plugin=$build/src/.libs/distenv.so
stamp=$build/build.stamp
if [ ! -f "$stamp" ] || [ ! -f "$plugin" ] || [ ! -x "$build/src/distenv" ] ||
	[ -n "$(git ls-files -z plugin configure.ac Makefile.am tests/sanitize.sh |
		xargs -0 -I{} find {} -newer "$stamp" -print | head -1)" ]; then
	tests/sanitize.sh build 2>&1 | sed 's/^/# /'
fi
if [ -f "$stamp" ] && [ -f "$plugin" ] && [ -x "$build/src/distenv" ]; then
	tap ok "asan cluster: the ASan/UBSan build in $build/src is complete and current"
else
	tap not-ok "asan cluster: no complete ASan/UBSan build in $build/src (see $build/make.log)"
	exit 1
fi

runtime=$(realpath "$(gcc -print-file-name=libasan.so)")
loader=$(ldd /usr/bin/srun | awk '/ld-linux/ { print $1 }')
if [ ! -f "$runtime" ] || [ ! -x "$loader" ]; then
	tap not-ok "asan cluster: no ASan runtime ($runtime) or loader ($loader)"
	exit 1
fi

rm -rf "$reports" "$reports.upstream" "$wrappers"
mkdir -p "$reports" "$wrappers"
chmod 1777 "$reports" # steps of the unprivileged test user report too

# fork handlers for GCC 12's ASan runtime (tests/cluster/asan_fork_locks.c
# says why); the offsets of its internal lock functions, read with nm.
offset() { # offset SYMBOL: its value in the runtime's symbol table
	nm "$runtime" | awk -v s="$1" '$3 == s { print "0x" $1; exit }'
}
forklocks=$build/asan_fork_locks.so
defs=()
for pair in ASAN_INIT:__asan_init \
	LOCK_REGISTRY:_ZN6__lsan18LockThreadRegistryEv \
	UNLOCK_REGISTRY:_ZN6__lsan20UnlockThreadRegistryEv \
	LOCK_ALLOCATOR:_ZN6__lsan13LockAllocatorEv \
	UNLOCK_ALLOCATOR:_ZN6__lsan15UnlockAllocatorEv \
	LOCK_DEPOT:_ZN11__sanitizer17StackDepotLockAllEv \
	UNLOCK_DEPOT:_ZN11__sanitizer19StackDepotUnlockAllEv; do
	value=$(offset "${pair#*:}")
	if [ -z "$value" ]; then
		tap not-ok "asan cluster: ${pair#*:} not in $runtime's symbol table"
		exit 1
	fi
	defs+=("-DOFF_${pair%%:*}=$value")
done
if ! gcc -shared -fPIC -O2 "${defs[@]}" -o "$forklocks" tests/cluster/asan_fork_locks.c -ldl -lpthread; then
	tap not-ok "asan cluster: tests/cluster/asan_fork_locks.c does not build"
	exit 1
fi
preload="$runtime:$forklocks"
# The handlers say on stderr when the runtime is not the file whose
# offsets they hold; they must be silent.
said=$("$loader" --preload "$preload" /bin/true 2>&1)
if [ -z "$said" ]; then
	tap ok "asan cluster: the fork handlers install in a process with the runtime"
else
	tap not-ok "asan cluster: the fork handlers do not install: $said"
	exit 1
fi

for prog in srun sbatch salloc; do
	real=$(command -v "$prog") || { tap not-ok "asan cluster: no $prog"; exit 1; }
	printf '#!/bin/sh\nexec %q --preload %q %q "$@"\n' "$loader" "$preload" "$real" \
		>"$wrappers/$prog"
	chmod 0755 "$wrappers/$prog"
done

# halt_on_error=0: an error of the allocator (a double or a bad free) is
# reported and the process goes on; an access error still stops it, as
# nothing here is built with -fsanitize-recover=address. Each report is a
# file in $reports either way, and any file left there is a `not ok`.
# This keeps slurmd running through the double free of Slurm 22.05's own
# (tests/asan_upstream.sh), which would otherwise take the node down and
# fail the steps that launch on it beside the report.
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=0:halt_on_error=0"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
export DISTENV_CLUSTER_SLURMD_PRELOAD="$runtime $forklocks"
export DISTENV_PLUGIN=$plugin DISTENV_COMMAND_DIR=$build/src DISTENV_WRAPPER_DIR=$wrappers
# Slurm's programs are slower under the runtime; give each wait more time.
export DISTENV_TEST_TIMEOUT=${DISTENV_TEST_TIMEOUT:-40}

# --- the canary: a report from srun and from a task must be seen -----------
canary=$build/asan_canary.so
if ! gcc -shared -fPIC -g -O1 -fsanitize=address -o "$canary" tests/cluster/asan_canary.c; then
	tap not-ok "asan cluster: canary plugin does not build"
	exit 1
fi
conf=$(mktemp)
printf 'required %s\noptional %s\n' "$plugin" "$canary" >"$conf"
trap 'tests/cluster/cluster.sh stop >/dev/null 2>&1; rm -f "$conf"' EXIT
trap 'exit 130' INT TERM
if tests/cluster/cluster.sh start -n 2 --plugstack "$conf" --resv-ports >/dev/null; then
	# shellcheck disable=SC1091 # written by cluster.sh start
	source "$DISTENV_CLUSTER_DIR/env.sh"
	for side in srun task; do
		rm -f "$reports"/*
		PATH="$wrappers:$PATH" timeout 60 srun -N1 --asan-canary="$side" true >/dev/null 2>&1
		if grep -qs 'heap-buffer-overflow' "$reports"/asan.* &&
			grep -qs 'asan_canary.c' "$reports"/asan.*; then
			tap ok "asan cluster: a heap overflow in the $side's plugin code is reported"
		else
			tap not-ok "asan cluster: the canary's overflow in the $side was not reported"
		fi
	done
	rm -f "$reports"/*
	PATH="$wrappers:$PATH" timeout 60 srun -N2 --distenv true >/dev/null 2>&1
	maps=/proc/$(cat "$DISTENV_CLUSTER_DIR/pids/slurmd-n1.pid")/maps
	if grep -qs libasan "$maps" && grep -qs asan_fork_locks "$maps" &&
		! grep -qs 'asan_fork_locks:' "$DISTENV_CLUSTER_DIR"/log/slurmd-*; then
		tap ok "asan cluster: slurmd runs with the ASan runtime and its fork handlers"
	else
		tap not-ok "asan cluster: slurmd has no ASan runtime or fork handlers (maps, log/slurmd-*)"
	fi
	tests/cluster/cluster.sh stop >/dev/null 2>&1
	tests/asan_upstream.sh "$reports"
	tap_no_reports "$reports" "asan cluster: a 2-node --distenv step and the cluster's stop"
else
	tap not-ok "asan cluster: cannot start the canary cluster"
fi
rm -f "$conf" "$reports"/*

# --- the suite ---------------------------------------------------------------
# DISTENV_SANITIZE_BATS="a.bats b.bats" runs only those files.
files=()
for f in ${DISTENV_SANITIZE_BATS:-tests/cluster/*.bats}; do
	case "$f" in
	tests/cluster/package.bats | tests/cluster/llamafactory.bats | tests/cluster/dpo_sample.bats | tests/cluster/containers.bats | tests/cluster/pyxis.bats | tests/cluster/apptainer.bats) ;;
	*) files+=("$f") ;;
	esac
done
# DISTENV_SANITIZE_FILTER=REGEX runs only the tests whose name matches.
filter=()
[ -z "${DISTENV_SANITIZE_FILTER:-}" ] || filter=(-f "$DISTENV_SANITIZE_FILTER")
# Interrupted, this script takes bats and the cluster down with it: bats
# runs in a session of its own (setsid execs it, so $! is its pid and
# process group), killed as a group.
exec {suite}< <(DISTENV_TOP=$top exec setsid bats --tap "${filter[@]}" "${files[@]}" 2>&1)
bats_pid=$!
trap 'kill -TERM -- "-$bats_pid" 2>/dev/null; tests/cluster/cluster.sh stop >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM
tap_relay "asan cluster: " <&"$suite"
exec {suite}<&-
wait "$bats_pid"
tests/cluster/cluster.sh stop >/dev/null 2>&1
trap - EXIT INT TERM
tests/asan_upstream.sh "$reports"
tap_no_reports "$reports" "asan cluster: srun, sbatch, salloc, slurmd, slurmstepd and tasks"
tap_status
