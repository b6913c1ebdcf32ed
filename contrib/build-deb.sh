#!/bin/bash
# Build the Debian package of this source tree:
#
#   contrib/build-deb.sh [OUTDIR]     (default OUTDIR: _build/deb)
#
# Copies the tree (the files git knows, committed or not, or everything
# when run from an unpacked release tarball) into a scratch directory, stages
# contrib/debian there as debian/, runs `dpkg-buildpackage -us -uc -b`
# and moves the .deb (and .buildinfo, .changes) into OUTDIR, with the
# build's log, dpkg-buildpackage.log. The source
# tree is not touched. Prints the path of the .deb on stdout.
# Needs dpkg-dev, debhelper and the Build-Depends of contrib/debian/control.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/_build/deb}
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d /tmp/distenv-deb.XXXXXX)
trap 'rm -rf -- "$work"' EXIT
mkdir "$work/distenv"
cd "$src"
if [ "$(git -C "$src" rev-parse --show-toplevel 2>/dev/null)" = "$src" ]; then
	git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do
			# tracked files someone deleted are skipped
			[ -f "$f" ] || continue
			mkdir -p "$work/distenv/$(dirname "$f")"
			cp -p -- "$f" "$work/distenv/$f"
		done
else
	# From an unpacked release tarball (make dist), which holds no build
	# outputs; a configured tree would bring its objects along.
	if [ -e config.status ]; then
		echo "build-deb: $src is configured; run 'make deb' (it packages 'make dist') or use a clean tree" >&2
		exit 1
	fi
	cp -a . "$work/distenv/"
fi
rm -rf "$work/distenv/debian"
cp -a contrib/debian "$work/distenv/debian"
# The package's version carries the Slurm major.minor it is built for
# (0.1.0-1+slurm22.05): a plugin loads only into that release, and one
# repository can then hold a build per release.
slurm_mm=$(dpkg-query -W -f='${Version}' libslurm-dev | cut -d. -f1,2)
[[ $slurm_mm =~ ^[0-9]+\.[0-9]+$ ]] || { echo "build-deb: cannot read libslurm-dev's version" >&2; exit 1; }
sed -i "1s/^distenv (\([^)]*\))/distenv (\1+slurm$slurm_mm)/" "$work/distenv/debian/changelog"

cd "$work/distenv"
log=$out/dpkg-buildpackage.log
if ! dpkg-buildpackage -us -uc -b >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "build-deb: dpkg-buildpackage failed (full log: $log)" >&2
	exit 1
fi
cd "$work"
deb=
for f in distenv_*.deb distenv-dbgsym_*.deb distenv_*.buildinfo distenv_*.changes; do
	[ -e "$f" ] || continue
	mv -f -- "$f" "$out/"
	case "$f" in distenv_*.deb) deb=$out/$f ;; esac
done
[ -n "$deb" ] || { echo "build-deb: no .deb was built" >&2; exit 1; }
echo "$deb"
