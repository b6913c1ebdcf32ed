#!/usr/bin/env bash
# selftest.sh - prove that cluster.sh gives a working multi-node Slurm and
# that the hand-written torchrun line fails/succeeds as documented in
# README.md.  Takes ~3 minutes (case 2 waits for Gloo's connect timeout).
# Run as root; leaves the cluster stopped.
# shellcheck disable=SC2317 # helpers are called indirectly through check()
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/cluster.sh
export DISTENV_CLUSTER_DIR=${DISTENV_CLUSTER_DIR:-/tmp/distenv-cluster}
fails=0
check() { # DESCRIPTION COMMAND...: PASS if COMMAND succeeds
	local what=$1
	shift
	if "$@"; then
		echo "PASS: $what"
	else
		echo "FAIL: $what"
		fails=$((fails + 1))
	fi
}
nodes_are() { [[ $(srun -N2 hostname | sort | tr '\n' ' ') == "$1" ]]; }
no_daemons() {
	local d
	for d in slurmd slurmctld slurmstepd munged; do
		! pgrep -x "$d" >/dev/null || return 1
	done
}
no_netns() { ! ip netns list | grep -q '^dvn'; }
no_bridge() { ! ip link show dvbr0 >/dev/null 2>&1; }
fails_() { ! "$@"; }
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }

# sbatch --wait polls the controller at 2, 10, 42, 74, ... s after submit;
# poll ourselves instead so the timings below are the job's own.
run_job() { # NAME SBATCH-ARGS... ; prints wall seconds, returns job rc
	local name=$1 id t0 st
	shift
	t0=$(date +%s)
	id=$(sbatch --parsable -o "$DISTENV_CLUSTER_DIR/jobs/$name.out" "$@" "$here/torchrun.sbatch") || return 99
	while :; do
		st=$(scontrol show job -o "$id" | grep -o 'JobState=[A-Z_]*')
		case $st in
		*PENDING | *RUNNING | *CONFIGURING | *COMPLETING) sleep 0.5 ;;
		*) break ;;
		esac
	done
	echo "job $name ($id): $st wall=$(($(date +%s) - t0))s"
	grep -h 'RANK\|srun rc' "$DISTENV_CLUSTER_DIR/jobs/$name.out" | sort
	[[ $st == JobState=COMPLETED ]]
}

"$cluster" stop >/dev/null 2>&1
t0=$(date +%s%N)
check "start -n 2" "$cluster" start -n 2 >/dev/null || exit 1
echo "start -n 2: $(ms "$t0") ms"
# shellcheck source=/dev/null
. "$DISTENV_CLUSTER_DIR/env.sh"

# 1. hostnames and interfaces
check "srun -N2 hostname = n1 n2" nodes_are "n1 n2 "
srun -N2 -l ip -br addr | sort
# shellcheck disable=SC2016 # expanded on the node
srun -N2 -l sh -c 'getent hosts "$(hostname)"' | sort

# 2. LLaMA-Factory style: --master_addr n1, no GLOO_SOCKET_IFNAME: must fail
check "case 2 (master_addr n1, no GLOO_SOCKET_IFNAME) fails" fails_ run_job case2 --export=ALL

# 3. MASTER_ADDR=10.77.0.1 + GLOO_SOCKET_IFNAME=eth0: must succeed
check "case 3 (2 nodes x 1 proc)" run_job case3 --export=ALL,TR_MASTER_ADDR=10.77.0.1,GLOO_SOCKET_IFNAME=eth0
check "case 3 (2 nodes x 2 procs)" run_job case3x2 --export=ALL,TR_MASTER_ADDR=10.77.0.1,GLOO_SOCKET_IFNAME=eth0,TR_NPROC=2

# 4. stop, leftovers, idempotence, repeatability
t0=$(date +%s%N)
"$cluster" stop 2>/dev/null
echo "stop: $(ms "$t0") ms"
check "no slurmd/slurmctld/slurmstepd/munged left" no_daemons
check "no dvn* namespaces left" no_netns
check "bridge dvbr0 gone" no_bridge
check "/etc/netns/dvn1 gone" test ! -e /etc/netns/dvn1
check "second stop is a no-op" "$cluster" stop
t0=$(date +%s%N)
check "start again" "$cluster" start -n 2 >/dev/null
echo "restart: $(ms "$t0") ms"
check "srun after restart" nodes_are "n1 n2 "
"$cluster" stop 2>/dev/null
check "stopped again" no_daemons

# 5. lint
check "shellcheck cluster.sh" shellcheck "$cluster"

echo "failures: $fails"
exit $((fails > 0))
