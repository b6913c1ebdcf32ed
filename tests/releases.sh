#!/bin/bash
# Build distenv against newer Slurm releases and run its unit and command
# tests there, each in a Debian chroot that carries that release.
#
#   tests/releases.sh              the releases of DISTENV_SLURM_RELEASES
#                                  (default "24.11 26.05")
#   DISTENV_SLURM_RELEASES=24.11 tests/releases.sh
#
# A SPANK plugin loads only into the Slurm it was built for, and what
# compiles against 22.05's slurm.h may not against a newer one (the
# signature of slurm_kill_job_step changed: configure.ac). Debian's
# registry carries 24.11 in Debian 13 (trixie) and 26.05 in unstable
# (sid); debootstrap(8) builds a minimal chroot of either. Each is built
# once and kept as a tarball under ${DISTENV_CHROOT_CACHE:-
# /var/cache/distenv/chroots}, rebuilt when the package list below
# changes; every run unpacks a fresh copy, builds the checkout's files
# there and removes it. Output: TAP lines, each naming the release.
# Needs root (debootstrap, chroot). The cluster suite still runs on the
# machine's own release only (README.md, "Slurm releases").
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
cache=${DISTENV_CHROOT_CACHE:-/var/cache/distenv/chroots}
mirror=${DISTENV_DEBIAN_MIRROR:-http://deb.debian.org/debian}
releases=${DISTENV_SLURM_RELEASES:-24.11 26.05}
packages=slurmd,slurmctld,slurm-client,munge,libslurm-dev,libhwloc-dev,libyaml-dev,gcc,make,autoconf,automake,libtool,pkg-config,bats,libcmocka-dev,python3,python3-yaml,iproute2,procps,shellcheck
n=0

# suite_of RELEASE: the Debian suite that carries it
suite_of() {
	case $1 in
	24.11) echo trixie ;;
	26.05) echo sid ;;
	*) return 1 ;;
	esac
}

tap() { # STATUS TEXT
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi
}

# chroot_tarball SUITE: the cached tarball, built when missing or stale
chroot_tarball() {
	local suite=$1 tar="$cache/$1.tar" stamp="$cache/$1.stamp" want tmp
	want=$(printf '%s %s\n' "$suite" "$packages" | sha256sum | cut -d' ' -f1)
	if [ -s "$tar" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
		echo "$tar"
		return 0
	fi
	command -v debootstrap >/dev/null ||
		apt-get install -y -qq --no-install-recommends debootstrap >/dev/null || return 1
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/$suite.XXXXXX")
	if ! debootstrap --variant=minbase --include="$packages" "$suite" "$tmp/root" "$mirror" \
		>"$cache/$suite.debootstrap.log" 2>&1; then
		echo "# debootstrap $suite failed: $cache/$suite.debootstrap.log" >&2
		tail -5 "$cache/$suite.debootstrap.log" >&2
		rm -rf -- "$tmp"
		return 1
	fi
	tar -C "$tmp/root" -cf "$tar.new" . && mv "$tar.new" "$tar" && echo "$want" >"$stamp"
	rm -rf -- "$tmp"
	echo "$tar"
}

# in_root ROOT CMD: run CMD (a bash command line) in the chroot at /src
in_root() {
	chroot "$1" /bin/bash -c "cd /src && $2"
}

run_release() {
	local rel=$1 suite tar root t0 v tag
	suite=$(suite_of "$rel") || {
		tap 1 "release $rel: unknown (known: 24.11, 26.05)"
		return
	}
	t0=$SECONDS
	tar=$(chroot_tarball "$suite") || {
		tap 1 "release $rel ($suite): cannot build the chroot"
		return
	}
	root=$(mktemp -d /var/tmp/distenv-release.XXXXXX)
	# shellcheck disable=SC2064 # expanded now, on purpose
	trap "umount -R '$root/sys' '$root/proc' 2>/dev/null; rm -rf --one-file-system -- '$root'" RETURN
	tar -C "$root" -xf "$tar"
	mkdir -p "$root/src"
	git ls-files -co --exclude-standard | tar -cf - -T - | tar -C "$root/src" -xf -
	# hwloc reads the machine from /proc and /sys
	mount -t proc proc "$root/proc"
	mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
	v=$(chroot "$root" slurmd -V 2>/dev/null | awk '{ print $2 }')
	tag="[Slurm $v]"
	[[ $v == "$rel".* ]]
	tap $? "$tag $suite carries Slurm $rel (slurmd -V: ${v:-nothing})"
	# shellcheck disable=SC2016 # expanded in the chroot
	in_root "$root" 'autoreconf -fi >/dev/null 2>&1 && ./configure --enable-werror >/tmp/configure.log 2>&1 && make -j"$(nproc)" >/tmp/make.log 2>&1 && make -j"$(nproc)" check TESTS= >>/tmp/make.log 2>&1'
	local rc=$?
	tap $rc "$tag builds with -Werror against its slurm.h and libslurm"
	if [ $rc -ne 0 ]; then
		grep -E 'error|Error' "$root/tmp/make.log" "$root/tmp/configure.log" 2>/dev/null | head -20 | sed 's/^/# /'
		return
	fi
	in_root "$root" "./distenv --version | grep -qx 'distenv [^ ]* (built against Slurm $v)'"
	tap $? "$tag distenv --version names the release it was built against"
	# The unit and command tests, each TAP line tagged with the release.
	# shellcheck disable=SC2016 # expanded in the chroot
	in_root "$root" 'for t in tests/unit/test_*; do case "$t" in *.c|*.h|*.o) continue ;; esac; [ -x "$t" ] && CMOCKA_MESSAGE_OUTPUT=TAP "$t" 2>&1; done; bats --tap tests/cmd/*.bats 2>&1' |
		while IFS= read -r line; do
			case $line in
			"ok "* | "not ok "*)
				n=$((n + 1))
				sed -E "s/^(not )?ok [0-9]+ (- )?/\\1ok $n $tag /" <<<"$line"
				;;
			*) echo "# $line" ;;
			esac
		done
	echo "# release $rel: $((SECONDS - t0)) s"
}

[ "$(id -u)" -eq 0 ] || {
	echo "ok 1 # skip tests/releases.sh needs root (debootstrap, chroot)"
	exit 0
}
for rel in $releases; do
	run_release "$rel"
done
