#!/bin/bash
# A small Debian 12 container image for the container tests: a directory
# image (what `ch-run IMG -- cmd` and `apptainer exec IMG cmd` run) with
# python3 and Debian's torch, made by debootstrap(8) from Debian's
# registry, no container registry involved.
#
#   contrib/containers/image.sh        print the image's directory
#
# The root file system is built once and kept as a tarball under
# ${DISTENV_IMAGE_CACHE:-/var/cache/distenv/images} (outside the
# checkout: about 1 GB unpacked), rebuilt when the package list below
# changes (contrib/debootstrap_cache.bash, shared with the release
# chroots of tests/releases.sh). The directory beside it is unpacked
# again whenever the tarball is newer, so a test that wrote into it gets
# a clean one back on the next build. It holds an empty directory at the
# pinned LLaMA-Factory venv's path (contrib/lfstack/venv.sh --path),
# where the tests bind the venv. Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=contrib/debootstrap_cache.bash
. contrib/debootstrap_cache.bash
cache=${DISTENV_IMAGE_CACHE:-/var/cache/distenv/images}
name=bookworm-torch
packages=python3,python3-torch

if [ "$(id -u)" -ne 0 ]; then
	echo "image.sh: needs root (debootstrap)" >&2
	exit 1
fi
# one build and one unpacking at a time: two test lanes may ask at once
mkdir -p "$cache"
exec 9>"$cache/$name.lock"
flock 9
tar=$(debootstrap_tarball "$cache" "$name" bookworm "$packages")
dir="$cache/$name"
if [ ! -f "$dir.unpacked" ] || [ "$tar" -nt "$dir.unpacked" ]; then
	rm -rf --one-file-system -- "$dir" "$dir.unpacked"
	mkdir -p "$dir"
	tar -C "$dir" -xf "$tar"
	# the bind mount points images made by Charliecloud have (ch-run(1),
	# --bind: a read-only image gets no new directory)
	mkdir -p "$dir"/mnt/{0..9}
	touch "$dir.unpacked"
fi
# the mount point of the pinned LLaMA-Factory venv (contrib/lfstack/venv.sh),
# which the tests bind at its own path: its scripts name their python by
# that path. Made on every call, so an image unpacked before has it too.
mkdir -p "$dir$(contrib/lfstack/venv.sh --path)"
echo "$dir"
