#!/bin/bash
# Set aside the sanitizer reports of a known bug in Slurm 22.05 itself,
# so that the ASan cluster run (tests/sanitize_cluster.sh) fails on
# distenv's reports and on every other one, and only names these:
#
#   tests/asan_upstream.sh DIR
#
# moves each such report from DIR to DIR.upstream/ and prints one TAP
# comment line for it; every other file stays in DIR. Exit 0.
#
# The bug (tests/README.md, "A report of Slurm's own"): Slurm 22.05's
# cred/munge plugin makes one MUNGE context when it reads the key
# (cred_p_read_public_key) and hands it to every call of
# cred_p_verify_sign, which slurmd makes from the thread of each launch
# request; libmunge's munge_decode frees the context's strings from the
# last call first (src/libmunge/decode.c, _decode_init). Two launches
# at once free the same string: ASan reports a double free in slurmd.
# A report is this bug only when its error is a double free, its first
# two frames above free are munge_decode and cred_p_verify_sign, and
# nothing in it names distenv.
set -uo pipefail
dir=${1:?usage: tests/asan_upstream.sh DIR}
for f in "$dir"/*; do
	[ -f "$f" ] || continue
	grep -q 'distenv' "$f" && continue
	grep -q 'ERROR: AddressSanitizer: attempting double-free' "$f" || continue
	# the first error's stack: the frames up to the first blank line
	frames=$(awk 'f && /^$/ { exit } f; /ERROR: AddressSanitizer/ { f = 1 }' "$f" |
		sed -n 's/^ *#[0-9]* 0x[0-9a-f]* in \([^ ]*\) .*/\1/p' | head -3 | tr '\n' ' ')
	[ "$frames" = "__interceptor_free munge_decode cred_p_verify_sign " ] || continue
	mkdir -p "$dir.upstream"
	mv "$f" "$dir.upstream/"
	echo "# Slurm's own bug, not distenv's: a double free in libmunge's munge_decode, called by cred_p_verify_sign of two launch requests at once on one shared MUNGE context (tests/README.md, \"A report of Slurm's own\"): $dir.upstream/${f##*/}"
done
exit 0
