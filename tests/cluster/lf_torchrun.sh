#!/bin/bash
# Stand-in for `llamafactory-cli train`: builds the torchrun command the
# way LLaMA-Factory does (src/llamafactory/cli.py, v0.9.1-v0.9.3; the
# defaults are those of docs/contracts.md section 1) and runs SCRIPT
# under Debian's torchrun instead of LLaMA-Factory's launcher.
#
#   lf_torchrun.sh SCRIPT [ARGS...]
#
# Debian 12's torch 1.13 on Python 3.11 crashes with torchrun's default
# --redirects/--tee, so those two are added (docs/contracts.md section 3).
set -euo pipefail
script=$1
shift
case "${FORCE_TORCHRUN:-0}" in
true | 1 | y) ;;
*)
	echo "lf_torchrun: FORCE_TORCHRUN is not set: LLaMA-Factory would run a single process" >&2
	exec /usr/bin/python3 "$script" "$@"
	;;
esac
# The defaults LLaMA-Factory falls back to when a variable is missing.
exec /usr/bin/torchrun --redirects 1 --tee 1 \
	--nnodes "${NNODES:-1}" --node_rank "${NODE_RANK:-0}" \
	--nproc_per_node "${NPROC_PER_NODE:-1}" \
	--master_addr "${MASTER_ADDR:-127.0.0.1}" \
	--master_port "${MASTER_PORT:-$((20001 + RANDOM % 9999))}" \
	"$script" "$@"
