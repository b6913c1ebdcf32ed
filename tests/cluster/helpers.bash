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

# Start a cluster of $1 nodes with distenv.so in plugstack.conf
# (required, with the plugstack arguments in $2). Further arguments go to
# `cluster.sh start` (e.g. --node-local DIR).
cluster_up() {
	local nodes=$1 args=${2:-} conf
	shift
	[ $# -eq 0 ] || shift
	[ -f "$PLUGIN" ] || { echo "build first: no $PLUGIN" >&2; return 1; }
	conf=$(mktemp)
	echo "required $PLUGIN $args" >"$conf"
	"$CLUSTER" stop >/dev/null 2>&1 || true
	"$CLUSTER" start -n "$nodes" --plugstack "$conf" --resv-ports "$@" >/dev/null
	local rc=$?
	rm -f "$conf"
	return $rc
}

# Start a cluster of $1 nodes whose plugstack.conf is the text $2 (e.g.
# the include line of Debian's /etc/slurm/plugstack.conf, to test the
# installed package).
cluster_up_plugstack() {
	local nodes=$1 text=$2 conf rc
	conf=$(mktemp)
	printf '%s\n' "$text" >"$conf"
	"$CLUSTER" stop >/dev/null 2>&1 || true
	"$CLUSTER" start -n "$nodes" --plugstack "$conf" --resv-ports >/dev/null
	rc=$?
	rm -f "$conf"
	return $rc
}

cluster_down() {
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

# setup of a test on the plain cluster: its variables, the plugin
# required, the file's own scratch directory as the working directory.
with_distenv_in_tmpdir() {
	cluster_env
	plugstack_with_distenv
	cd "$BATS_FILE_TMPDIR" || return 1
}

plugstack_without_distenv() {
	: >"$PLUGSTACK"
}

# Every node idle: no user mistake may drain or down a node. A node still
# "completing" the step that just failed is given up to 10 s to finish:
# that state passes, a drained or down node stays.
nodes_idle() {
	local states
	for _ in $(seq 1 40); do
		states=$(sinfo -h -N -o '%N %T' | sort -u)
		[ -n "$states" ] && ! grep -qvE ' (idle|mixed|allocated)$' <<<"$states" && break
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

# refute CMD...: fails when CMD succeeds (bats ignores a bare `! CMD`
# except on a test's last line).
refute() {
	if "$@"; then
		echo "unexpected success: $*" >&2
		return 1
	fi
}
