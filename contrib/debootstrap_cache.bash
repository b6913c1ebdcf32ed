# A Debian root file system made once by debootstrap(8) and kept as a
# tarball, for the release chroots (tests/releases.sh) and the container
# images (contrib/containers/image.sh). Sourced; needs root.
#
# debootstrap_tarball CACHE NAME SUITE PACKAGES: print the path of
# CACHE/NAME.tar, a minbase root of SUITE with PACKAGES (a comma list),
# built when it is missing or when SUITE or PACKAGES changed since it was
# built (CACHE/NAME.stamp holds their hash). The mirror is
# DISTENV_DEBIAN_MIRROR (default deb.debian.org). A failed build leaves
# the old tarball, prints the log's end and returns 1.
debootstrap_tarball() {
	local cache=$1 name=$2 suite=$3 packages=$4
	local tar="$cache/$name.tar" stamp="$cache/$name.stamp" log="$cache/$name.debootstrap.log"
	local mirror=${DISTENV_DEBIAN_MIRROR:-http://deb.debian.org/debian} want tmp
	want=$(printf '%s %s\n' "$suite" "$packages" | sha256sum | cut -d' ' -f1)
	if [ -s "$tar" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
		echo "$tar"
		return 0
	fi
	command -v debootstrap >/dev/null ||
		apt-get install -y -qq --no-install-recommends debootstrap >/dev/null || return 1
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/$name.XXXXXX")
	if ! debootstrap --variant=minbase --include="$packages" "$suite" "$tmp/root" "$mirror" \
		>"$log" 2>&1; then
		echo "# debootstrap $suite failed: $log" >&2
		tail -5 "$log" >&2
		rm -rf -- "$tmp"
		return 1
	fi
	tar -C "$tmp/root" -cf "$tar.new" . && mv "$tar.new" "$tar" && echo "$want" >"$stamp"
	rm -rf -- "$tmp"
	echo "$tar"
}
