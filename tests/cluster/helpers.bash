# Helpers for the cluster tests: a real Slurm 22.05 cluster started by
# cluster.sh in network namespaces, with the freshly built distenv.so.

# shellcheck disable=SC2034 # the variables below are used by the .bats files that load this
TOP=${DISTENV_TOP:-$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}
CLUSTER="$TOP/tests/cluster/cluster.sh"
# The plugin and the command under test: the tree's build, or another
# build of them (tests/sanitize_cluster.sh runs this suite again with the
# ASan/UBSan build, and puts wrappers that load the ASan runtime into
# srun, sbatch and salloc first in PATH: DISTENV_WRAPPER_DIR).
PLUGIN=${DISTENV_PLUGIN:-$TOP/.libs/distenv.so}
COMMAND_DIR=${DISTENV_COMMAND_DIR:-$TOP}
export DISTENV_CLUSTER_DIR=${DISTENV_CLUSTER_DIR:-/tmp/distenv-cluster}
PLUGSTACK="$DISTENV_CLUSTER_DIR/plugstack.conf"
GLOO="$TOP/tests/cluster/gloo_allreduce.py"
LF="$TOP/tests/cluster/lf_torchrun.sh"
export DISTENV_TEST_TIMEOUT=${DISTENV_TEST_TIMEOUT:-20}
# The cluster's network and namespace prefix (cluster.sh's defaults), so
# tests can name node addresses and hosts files of a second cluster.
CLUSTER_NET=${DISTENV_CLUSTER_NET:-10.77.0}
CLUSTER_NS=${DISTENV_CLUSTER_NS:-dvn}

# The preamble of a cluster test file, after its `load helpers`:
#
#   setup_file() { cluster_file_setup 2; }
#   teardown_file() { cluster_file_teardown; }
#   setup() { cluster_test_setup; }
#
# with the file's own steps, if any, after these calls.

# cluster_file_setup NODES [PLUGSTACK_ARGS [START_ARG...]]: a cluster of
# NODES nodes with distenv.so required in plugstack.conf, with the
# plugstack arguments PLUGSTACK_ARGS; the START_ARGs go to `cluster.sh
# start` (e.g. --node-local DIR).
cluster_file_setup() {
	local nodes=$1 args=${2:-}
	shift
	[ $# -eq 0 ] || shift
	[ -f "$PLUGIN" ] || { echo "build first: no $PLUGIN" >&2; return 1; }
	cluster_start "$nodes" "required $PLUGIN $args" "$@"
}

# cluster_start NODES PLUGSTACK_TEXT [START_ARG...]: a cluster of NODES
# nodes, with Slurm's reserved ports, whose plugstack.conf is the text
# PLUGSTACK_TEXT (package.bats: the include line of Debian's
# /etc/slurm/plugstack.conf, to test the installed package). A cluster
# left running is stopped first.
cluster_start() {
	local nodes=$1 text=$2 conf rc
	shift 2
	conf=$(mktemp)
	printf '%s\n' "$text" >"$conf"
	"$CLUSTER" stop >/dev/null 2>&1 || true
	"$CLUSTER" start -n "$nodes" --plugstack "$conf" --resv-ports "$@" >/dev/null
	rc=$?
	rm -f "$conf"
	# what the machine had left: a full disk or memory stops every
	# cluster after it, in every lane
	[ "$rc" -eq 0 ] || echo "cluster.sh start: exit $rc; free on /: $(df -h --output=avail / | tail -1 | tr -d ' '); memory available: $(awk '/MemAvailable/ { print int($2 / 1024) " MiB" }' /proc/meminfo)" >&2
	return $rc
}

cluster_file_teardown() {
	"$CLUSTER" stop >&2
}

cluster_env() {
	# shellcheck disable=SC1091
	source "$DISTENV_CLUSTER_DIR/env.sh"
	# the freshly built distenv command (and the sanitizer wrappers)
	export PATH="${DISTENV_WRAPPER_DIR:+$DISTENV_WRAPPER_DIR:}$COMMAND_DIR:$PATH"
}

plugstack_with_distenv() {
	echo "required $PLUGIN ${1:-}" >"$PLUGSTACK"
}

# cluster_test_setup [--keep-plugstack]: setup of a test on the cluster:
# its variables (cluster_env); plugstack.conf back to distenv.so required
# without arguments, whatever the test before wrote there, unless
# --keep-plugstack (the file's tests write their own, or the cluster's
# is the one to test); the file's scratch directory as the working
# directory.
cluster_test_setup() {
	cluster_env
	if [ "${1:-}" != --keep-plugstack ]; then
		plugstack_with_distenv
	fi
	cd "$BATS_FILE_TMPDIR" || return 1
}

plugstack_without_distenv() {
	: >"$PLUGSTACK"
}

# image_libs DIR: into DIR, the one library of its own that the build's
# distenv command needs and the container image lacks (libslurm; the
# image has libyaml and hwloc), for a bind and LD_LIBRARY_PATH inside
image_libs() {
	mkdir -p "$1"
	cp "$(ldd "$TOP/distenv" | awk '/libslurm/ { print $3 }')" "$1/"
}

# all_ranks_reduced TEXT: the lines of tests/cluster/gloo_allreduce.py's
# 4 ranks (2 nodes x 2) are in TEXT, each with the sum 0+1+2+3+4
all_ranks_reduced() {
	local r
	for r in 0 1 2 3; do
		grep -qE "^RANK $r/4 node=n[12] result=10 OK$" <<<"$1"
	done
}

# tasks_saw_distenv TEXT: TEXT has one line of each of 4 tasks (2 nodes
# x 2) that echoed, in a container, "IN $SLURM_PROCID
# node=$SLURM_NODEID NNODES=... NODE_RANK=... MASTER_ADDR=...
# MASTER_PORT=... ports=$SLURM_STEP_RESV_PORTS ...", each with
# distenv's values: 2 nodes, the task's node as its rank, the first
# node's address and the step's first reserved port (Slurm's
# MpiParams=ports)
tasks_saw_distenv() {
	local r line node port ports
	[ "$(grep -c '^IN ' <<<"$1")" -eq 4 ]
	for r in 0 1 2 3; do
		line=$(grep "^IN $r " <<<"$1")
		node=$((r / 2))
		[[ $line == *" node=$node NNODES=2 NODE_RANK=$node MASTER_ADDR=$CLUSTER_NET.1 "* ]]
		port=${line#* MASTER_PORT=}
		port=${port%% *}
		ports=${line#* ports=}
		ports=${ports%% *}
		[ "$port" = "${ports%%[-,]*}" ]
	done
}

# check_env_stopped TEXT TEXT2...: `distenv check-env -- echo TRAINING`
# on 2 nodes stopped the step before its command (no TRAINING line in
# TEXT), with each of TEXT2... (fixed strings) once per node
check_env_stopped() {
	local out=$1 what
	shift
	[ "$(grep -c '^TRAINING' <<<"$out")" -eq 0 ]
	for what in "$@"; do
		[ "$(grep -cF "$what" <<<"$out")" -eq 2 ]
	done
}

# the errors of check-env for NNODES and MASTER_PORT replaced by 7 and 1234
REPLACED_7_1234=('distenv: error: NNODES: is "7" here, not the value distenv set for this step'
	'distenv: error: MASTER_PORT: is "1234" here, not the value distenv set for this step')

# Every node idle: no user mistake may drain or down a node. A node still
# "completing" the step that just failed is given up to 10 s to finish:
# that state passes, a drained or down node stays.
nodes_idle() {
	local states
	for _ in $(seq 1 40); do
		states=$(sinfo -h -N -o '%N %T' | sort -u)
		if [ -n "$states" ] && ! grep -qvE ' (idle|mixed|allocated)$' <<<"$states"; then
			break
		fi
		sleep 0.25
	done
	echo "$states" >&2
	[ -n "$states" ] && ! grep -qvE ' (idle|mixed|allocated)$' <<<"$states"
}

# Submit a batch script (text on stdin), wait for it and print the path
# of its output file; the exit status is the job's. Polls scontrol every
# half second: sbatch --wait checks only at 2, 10, 42, 74... seconds.
batch() {
	local script out id state code
	script=$(mktemp "$BATS_FILE_TMPDIR/job.XXXXXX")
	out="$script.out"
	cat >"$script"
	chmod +x "$script"
	echo "$out"
	id=$(sbatch --parsable -o "$out" -e "$out" "$@" "$script") || return 1
	for _ in $(seq 1 600); do
		state=$(scontrol -o show job "$id" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2)
		case "$state" in
		PENDING | RUNNING | CONFIGURING | COMPLETING | "") sleep 0.5 ;;
		*) break ;;
		esac
	done
	code=$(scontrol -o show job "$id" | grep -oE ' ExitCode=[0-9]+' | cut -d= -f2)
	echo "job $id: $state exit $code" >&2
	[ "$state" = COMPLETED ] && [ "$code" = 0 ]
}

# timed CMD...: run CMD (bats `run`) and set $elapsed_ms, printed with
# the test's number (failures.bats, rehearsal.bats).
timed() {
	local t0 t1
	t0=$(date +%s%N)
	run "$@"
	t1=$(date +%s%N)
	elapsed_ms=$(((t1 - t0) / 1000000))
	echo "elapsed: ${elapsed_ms} ms, status $status" >&2
	echo "# $BATS_TEST_NUMBER: step ended in ${elapsed_ms} ms, exit $status" >&3
}

# gone_within SECONDS PATH...: every PATH is gone within SECONDS. A
# step's slurm_spank_exit runs in slurmstepd after srun has had its tasks'
# exit codes and returned, so a check at once races it (the ASan
# wrappers make that window long enough to lose).
gone_within() {
	local limit=$1 deadline p
	deadline=$((SECONDS + limit))
	shift
	for p in "$@"; do
		while [ -e "$p" ]; do
			if [ "$SECONDS" -ge "$deadline" ]; then
				echo "still there after $limit s: $p" >&2
				return 1
			fi
			sleep 0.2
		done
	done
}

# refute CMD...: fails when CMD succeeds (bats ignores a bare `! CMD`
# except on a test's last line).
refute() {
	if "$@"; then
		echo "unexpected success: $*" >&2
		return 1
	fi
}
