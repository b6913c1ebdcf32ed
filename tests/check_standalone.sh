#!/bin/bash
# The project stands alone: nothing it ships, installs or prints names a
# file outside its own tree or a tag of the workshop it was built in.
#
#   tests/check_standalone.sh             the tracked files, the built
#                                         plugin and command, and what
#                                         `make install` puts in place
#   tests/check_standalone.sh PATH...     only these files or folders
#
# Prints "standalone: ok", or one line per hit (file:line: text) and
# exits 1. The patterns are spelled in pieces so that this file does not
# match itself.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
up='\.\.'
patterns=(
	"$up/shared"          # the workshop folder beside a checkout
	"CONTRACTS\\.md"      # its notes
	"/work/(main|wt-)"    # where a checkout lives on the build machine
	"\\(case C[0-9]+\\)"  # the workshop's case tags
	"\\bcase C[0-9]+\\b"
)
regex=$(IFS='|'; echo "${patterns[*]}")
hits=$(mktemp)
trap 'rm -f "$hits"; rm -rf "${stage:-}"' EXIT

# scan_text FILE...: every matching line as FILE:LINE: TEXT
scan_text() {
	grep -InHE -- "$regex" "$@" >>"$hits" 2>/dev/null
}

# scan_binary FILE: the printable strings of FILE that match, debug
# information left out (it names the build folder, and no one sees it
# at run time)
scan_binary() {
	local bare
	bare=$(mktemp)
	objcopy --strip-debug "$1" "$bare" 2>/dev/null || cp "$1" "$bare"
	strings -a "$bare" | grep -nE -- "$regex" | sed "s|^|$1:|" >>"$hits"
	rm -f "$bare"
}

if [ $# -gt 0 ]; then
	for p in "$@"; do
		if [ -d "$p" ]; then
			find "$p" -type f -print0 | while IFS= read -r -d '' f; do
				if grep -qI . "$f" 2>/dev/null; then scan_text "$f"; else scan_binary "$f"; fi
			done
		elif grep -qI . "$p" 2>/dev/null; then
			scan_text "$p"
		else
			scan_binary "$p"
		fi
	done
else
	# the tracked files; in an unpacked tarball, the source folders
	if git rev-parse --show-toplevel >/dev/null 2>&1; then
		git ls-files -z
	else
		find README.md plugin templates contrib docs tests bench -type f \
			! -name '*.o' ! -name '*.lo' ! -path '*/.libs/*' ! -path '*/.deps/*' -print0
	fi | grep -zv '^tests/check_standalone.sh$' | xargs -0 grep -InHE -- "$regex" >>"$hits" 2>/dev/null
	for f in distenv .libs/distenv.so; do
		[ -f "$f" ] && scan_binary "$f"
	done
	# what an admin installs: make install into a scratch root
	if [ -f Makefile ]; then
		stage=$(mktemp -d)
		if make -s install DESTDIR="$stage" >/dev/null 2>&1; then
			find "$stage" -type f -print0 | while IFS= read -r -d '' f; do
				if grep -qI . "$f"; then scan_text "$f"; else scan_binary "$f"; fi
			done
		else
			echo "standalone: make install DESTDIR=$stage failed" >>"$hits"
		fi
	fi
fi
if [ -s "$hits" ]; then
	cat "$hits"
	exit 1
fi
echo "standalone: ok"
