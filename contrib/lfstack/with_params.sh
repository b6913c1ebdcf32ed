#!/bin/bash
# with_params.sh TEMPLATE OUT LINE...: write OUT, a copy of the job
# template TEMPLATE whose parameter block (the lines between
# "# ---- parameters" and "# ---- end of parameters") is LINE..., and
# check that every other line is the template's, unchanged and in order.
# This is how the tests and the demo run the templates unchanged on a
# machine of their own; a user edits the block instead.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: with_params.sh TEMPLATE OUT LINE..." >&2; exit 2; }
tpl=$1 out=$2
shift 2
PARAMS=$(printf '%s\n' "$@") awk '
	/^# ---- parameters/ { print; print ENVIRON["PARAMS"]; skip = 1; next }
	/^# ---- end of parameters/ { skip = 0 }
	!skip { print }' "$tpl" >"$out"
strip() { sed '/^# ---- parameters/,/^# ---- end of parameters/d' "$1"; }
if ! diff <(strip "$tpl") <(strip "$out") >&2 || [ "$(grep -c '^# ---- parameters' "$out")" -ne 1 ]; then
	echo "with_params.sh: $out differs from $tpl outside the parameter block" >&2
	exit 1
fi
