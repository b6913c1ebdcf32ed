#!/bin/bash
# The main job, end to end on this machine (Debian 12, as root):
# install Debian's packages, build distenv, start a real 2-node Slurm
# cluster in network namespaces with distenv.so in its plugstack, submit
# a 2-node `#SBATCH --distenv` job that runs torchrun the way
# LLaMA-Factory does (Gloo on CPU, 2 processes per node), print each
# rank's all_reduce result, and tear the cluster down (also on failure).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

[ "$(id -u)" -eq 0 ] || { echo "demo: run as root (it starts Slurm and network namespaces)" >&2; exit 1; }
contrib/install-deps.sh
contrib/build.sh

export DISTENV_CLUSTER_DIR=${DISTENV_CLUSTER_DIR:-/tmp/distenv-demo}
trap 'tests/cluster/cluster.sh stop >/dev/null 2>&1 || true' EXIT
plugstack=$(mktemp)
echo "required $top/.libs/distenv.so" >"$plugstack"
tests/cluster/cluster.sh start -n 2 --plugstack "$plugstack" --resv-ports >/dev/null
rm -f "$plugstack"
# shellcheck disable=SC1091
source "$DISTENV_CLUSTER_DIR/env.sh"

job=$DISTENV_CLUSTER_DIR/demo.sbatch
out=$DISTENV_CLUSTER_DIR/demo.out
cat >"$job" <<JOB
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 --distenv --distenv-nproc=2 --distenv-show
# No NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT or NCCL/GLOO_SOCKET_IFNAME
# set by hand: distenv derives them on every node.
srun "$top/tests/cluster/lf_torchrun.sh" "$top/tests/cluster/gloo_allreduce.py"
JOB
echo "demo: sbatch --wait $job"
rc=0
sbatch --wait -o "$out" -e "$out" "$job" >/dev/null || rc=$?
echo "demo: what distenv derived on each node (--distenv-show):"
grep '^distenv: ' "$out" | grep -E ' (NNODES|NODE_RANK|MASTER_ADDR|MASTER_PORT|NPROC_PER_NODE|GLOO_SOCKET_IFNAME)=|node [0-9]+ of' || true
echo "demo: each rank's all_reduce result:"
grep -oE 'RANK [0-9]+/[0-9]+ node=[^ ]+ (result=[0-9.]+ OK|FAIL.*)' "$out" | sort -t' ' -k2,2n || true
echo "demo: job exit code $rc (full log: $out)"
exit "$rc"
