#!/bin/bash
# Build distenv against newer Slurm releases and run its tests there,
# each in a Debian chroot that carries that release: the unit and command
# tests, then the cluster suite on that release's daemons.
#
#   tests/releases.sh              the releases of DISTENV_SLURM_RELEASES
#                                  (default "24.11 26.05")
#   DISTENV_SLURM_RELEASES=24.11 tests/releases.sh
#   tests/releases.sh cluster      the build and the cluster suite only
#   tests/releases.sh no-cluster   the build, unit and command tests only
#   DISTENV_CLUSTER_FILES="tests/cluster/a.bats ..."  only these files of
#                                  the cluster suite
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
# Needs root (debootstrap, chroot, network namespaces).
#
# The cluster suite runs inside the chroot: tests/cluster/cluster.sh
# starts the chroot's munged, slurmctld and slurmds (each slurmd in its
# own network namespace, as on this machine), bats and the jobs' tasks
# see the chroot's files, and the Debian package is built there from a
# clean copy of the tree (package.bats installs it in the chroot). The
# chroot's own torch (python3-torch) runs the Gloo tests. Of
# llamafactory.bats, the tests DISTENV_RELEASES_LF_FILTER selects run,
# with this machine's pinned venv and its Python 3.11 bound into the
# chroot (lf_stack_into).
#
# tests/cluster/apptainer.bats runs in the 26.05 chroot alone (Debian
# packages Apptainer in sid only): run_apptainer installs Apptainer there
# from .debs cached beside the tarball, binds in the Debian 12 image of
# contrib/containers/image.sh and the pinned venv (lf_stack_into: the
# Apptainer template's test trains inside the image with it), and runs
# the file in a mount namespace pivoted to the chroot.
#
# Each release's cluster has names of its own (cluster_names), apart from
# those of this machine's suite and of each other: its bridge, network,
# namespaces and controller port. The chroots share this machine's
# network stack, so tests/run runs the releases side by side, each in a
# call of its own, beside the suite on this machine's Slurm.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=tests/tap.bash
. tests/tap.bash
# shellcheck source=contrib/debootstrap_cache.bash
. contrib/debootstrap_cache.bash
cache=${DISTENV_CHROOT_CACHE:-/var/cache/distenv/chroots}
releases=${DISTENV_SLURM_RELEASES:-24.11 26.05}
what=${1:-all}
# the tests of llamafactory.bats run on each release (no single quotes)
lf_filter=${DISTENV_RELEASES_LF_FILTER:-^the pinned venv|^real 0\.9\.5, template dpo_full_zero3 on node-local disks|^real 0\.9\.5, the trap: save_on_each_node|^real 0\.9\.5 in elastic mode}
case $what in
all | cluster | no-cluster) ;;
*)
	echo "usage: tests/releases.sh [all|cluster|no-cluster]" >&2
	exit 2
	;;
esac
packages=slurmd,slurmctld,slurm-client,munge,libslurm-dev,libhwloc-dev,libyaml-dev,gcc,make,autoconf,automake,libtool,pkg-config,bats,libcmocka-dev,python3,python3-yaml,iproute2,procps,shellcheck,python3-torch,debhelper,build-essential

# suite_of RELEASE: the Debian suite that carries it
suite_of() {
	case $1 in
	24.11) echo trixie ;;
	26.05) echo sid ;;
	*) return 1 ;;
	esac
}

# cluster_names RELEASE: export the names of that release's cluster
# (tests/cluster/cluster.sh reads them; the environment reaches the
# chroot), none shared with the default cluster (dvbr0, 10.77.0, dvn,
# dvv, 6817), tests/run's real LLaMA-Factory lane (dvbrlf, 10.83.0), the
# sanitizer run's or bench/launch_bench.sh's
cluster_names() {
	local id=${1//./}
	export DISTENV_CLUSTER_BRIDGE=dvbr$id DISTENV_CLUSTER_NS=dv${id}n \
		DISTENV_CLUSTER_VETH=dv${id}v DISTENV_CLUSTER_CTLD_PORT=6$id \
		DISTENV_CLUSTER_DIR=/tmp/distenv-cluster-$id
	case $1 in
	24.11) export DISTENV_CLUSTER_NET=10.79.0 ;;
	26.05) export DISTENV_CLUSTER_NET=10.80.0 ;;
	esac
}

check() { # STATUS TEXT: one result, ok when STATUS is 0
	if [ "$1" -eq 0 ]; then tap ok "$2"; else tap not-ok "$2"; fi
}

# chroot_tarball SUITE: the cached tarball, built when missing or stale
chroot_tarball() {
	debootstrap_tarball "$cache" "$1" "$1" "$packages"
}

# end_root ROOT: stop what still runs in the chroot (a bats that was
# interrupted leaves srun, tasks or daemons there), then unmount and
# remove it. A process is the chroot's when its root directory is the
# chroot's, compared by device and inode: the path of a root in another
# mount namespace (in_root_pivoted) does not read as ROOT here.
end_root() {
	local root=$1 p pids id
	# the cluster's own stop first: it removes the links it made
	[ -x "$root/src/tests/cluster/cluster.sh" ] && [ -d "$root/proc/1" ] &&
		chroot "$root" /src/tests/cluster/cluster.sh stop >/dev/null 2>&1
	id=$(stat -c %d:%i "$root")
	for _ in 1 2 3; do
		pids=()
		for p in /proc/[0-9]*; do
			[ "$(stat -L -c %d:%i "$p/root" 2>/dev/null)" = "$id" ] && pids+=("${p#/proc/}")
		done
		[ ${#pids[@]} -gt 0 ] || break
		kill -KILL "${pids[@]}" 2>/dev/null
		sleep 0.5
	done
	umount -R "$root" 2>/dev/null
	# Never remove through a mount that is still there: the host's
	# LLaMA-Factory venv is bound in from the same file system.
	if findmnt -rn -o TARGET | grep -q "^$root"; then
		echo "# $root: still mounted, left in place" >&2
		return
	fi
	rm -rf --one-file-system -- "$root"
}

# lf_stack_into ROOT: the host's pinned LLaMA-Factory venv
# (contrib/lfstack/venv.sh) at its own path in the chroot, read-only, with
# the Debian 12 Python 3.11 it was made with (the interpreter and its
# standard library; the chroots carry Python 3.13, for which no CPU torch
# wheel is on this machine). The venv's links name /usr/bin/python3.11.
# Builds the venv first when it is not current (or waits for the build
# under way beside it). Fails, changing nothing, when it cannot, or when
# the venv is not of that Python.
lf_stack_into() {
	local root=$1 venv
	venv=$(contrib/lfstack/venv.sh) || return 1
	[ -x /usr/bin/python3.11 ] &&
		[ "$(readlink "$venv/bin/python3.11")" = /usr/bin/python3.11 ] || return 1
	# once per chroot: the Apptainer tests bind them before the others
	if ! mountpoint -q "$root$venv"; then
		cp /usr/bin/python3.11 "$root/usr/bin/python3.11"
		mkdir -p "$root/usr/lib/python3.11" "$root$venv"
		mount --bind -o ro /usr/lib/python3.11 "$root/usr/lib/python3.11" &&
			mount --bind -o ro "$venv" "$root$venv" || return 1
	fi
	chroot "$root" "$venv/bin/python" -c 'import llamafactory' 2>/dev/null
}

# in_root ROOT CMD: run CMD (a bash command line) in the chroot at /src
in_root() {
	chroot "$1" /bin/bash -c "cd /src && $2"
}

# in_root_pivoted ROOT CMD: in_root, in a mount namespace of its own whose
# root is the chroot (pivot_root(2)), the host's tree detached. Apptainer
# runs nothing in a plain chroot: its starter joins the container's
# mount namespace, whose root is the namespace's and not the chroot's,
# and aborts ("Running inside a weak chrooted environment, prefer
# pivot_root instead of chroot"). The mounts made under ROOT before
# reach the namespace as they are.
in_root_pivoted() {
	# shellcheck disable=SC2016 # expanded in the namespace
	unshare --mount --propagation private /bin/bash -c '
		cd "$1" && mkdir -p .distenv-host && pivot_root . .distenv-host &&
			exec /usr/sbin/chroot . /bin/bash -c "umount -l /.distenv-host && rmdir /.distenv-host && cd /src && $2"
	' in_root_pivoted "$1" "$2"
}

# apptainer_into ROOT SUITE: Apptainer (Debian's apptainer, packaged in
# sid only) installed in the chroot, its packages cached beside the
# chroot's tarball: CACHE/SUITE.apptainer/*.deb, kept while that tarball
# is the one they were fetched for (their stamp is its stamp), so a run
# after the first installs them with dpkg, no network (a few seconds,
# against a full rebuild of the tarball for a longer package list). The
# first fetch resolves them with the tarball's own package lists; when
# the registry no longer has those versions, with fresh ones.
# Apptainer's root default capabilities become `no`: its `full` asks for
# every capability, and a machine whose bounding set lacks one (this
# one: CAP_SYS_RESOURCE) refuses the container ("Requesting capability
# set ... while permitted capability set is ..."); the tests' commands
# need none.
apptainer_into() {
	local root=$1 suite=$2 debs="$cache/$2.apptainer" stamp tmp
	stamp=$(cat "$cache/$suite.stamp")
	if [ "$(cat "$debs/stamp" 2>/dev/null)" != "$stamp" ]; then
		rm -rf -- "$debs" "$debs.new" "$root/tmp/apptainer-debs"
		mkdir -p "$root/tmp/apptainer-debs/partial"
		tmp='apt-get install -y -qq --no-install-recommends --download-only -o Dir::Cache::archives=/tmp/apptainer-debs apptainer'
		in_root "$root" "$tmp" >/dev/null 2>&1 ||
			in_root "$root" "apt-get update -qq && $tmp" >/dev/null 2>&1 || return 1
		mkdir -p "$debs.new" && cp "$root"/tmp/apptainer-debs/*.deb "$debs.new/" &&
			echo "$stamp" >"$debs.new/stamp" && mv "$debs.new" "$debs" || return 1
	fi
	mkdir -p "$root/tmp/apptainer-debs"
	cp "$debs"/*.deb "$root/tmp/apptainer-debs/" &&
		in_root "$root" 'dpkg -i /tmp/apptainer-debs/*.deb' >/dev/null 2>&1 &&
		rm -rf -- "$root/tmp/apptainer-debs" &&
		sed -i 's/^root default capabilities = full$/root default capabilities = no/' \
			"$root/etc/apptainer/apptainer.conf"
}

run_release() {
	local rel=$1 suite tar root t0 v tag
	suite=$(suite_of "$rel") || {
		tap not-ok "release $rel: unknown (known: 24.11, 26.05)"
		return
	}
	cluster_names "$rel"
	t0=$SECONDS
	tar=$(chroot_tarball "$suite") || {
		tap not-ok "release $rel ($suite): cannot build the chroot"
		return
	}
	root=$(mktemp -d /var/tmp/distenv-release.XXXXXX)
	# an interrupted run cleans up too
	# shellcheck disable=SC2064 # expanded now, on purpose
	trap "end_root '$root'; exit 130" INT TERM
	# shellcheck disable=SC2064 # expanded now, on purpose
	trap "end_root '$root'" RETURN
	# The chroot's / a mount point of its own, private: ip netns exec
	# makes / a recursive slave in each node's mount namespace, which
	# fails (EINVAL) on a directory that is not a mount.
	mount --bind "$root" "$root" && mount --make-rprivate "$root"
	tar -C "$root" -xf "$tar"
	mkdir -p "$root/src"
	git ls-files -co --exclude-standard | tar -cf - -T - | tar -C "$root/src" -xf -
	# hwloc reads the machine from /proc and /sys
	mount -t proc proc "$root/proc"
	mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
	v=$(chroot "$root" slurmd -V 2>/dev/null | awk '{ print $2 }')
	tag="[Slurm $v]"
	[[ $v == "$rel".* ]]
	check $? "$tag $suite carries Slurm $rel (slurmd -V: ${v:-nothing})"
	# shellcheck disable=SC2016 # expanded in the chroot
	in_root "$root" 'autoreconf -fi >/dev/null 2>&1 && ./configure --enable-werror >/tmp/configure.log 2>&1 && make -j"$(nproc)" >/tmp/make.log 2>&1 && make -j"$(nproc)" check TESTS= >>/tmp/make.log 2>&1'
	local rc=$?
	check $rc "$tag builds with -Werror against its slurm.h and libslurm"
	if [ $rc -ne 0 ]; then
		grep -E 'error|Error' "$root/tmp/make.log" "$root/tmp/configure.log" 2>/dev/null | head -20 | sed 's/^/# /'
		return
	fi
	in_root "$root" "./distenv --version | grep -qx 'distenv [^ ]* (built against Slurm $v)'"
	check $? "$tag distenv --version names the release it was built against"
	if [ "$what" != cluster ]; then
		# The unit and command tests, each program's results relayed
		# with its plan checked, named with the release.
		local t
		for t in "$root"/src/tests/unit/test_*; do
			case "$t" in *.c | *.h | *.o) continue ;; esac
			[ -x "$t" ] || continue
			tap_relay "$tag ${t##*/}: " < <(in_root "$root" "CMOCKA_MESSAGE_OUTPUT=TAP tests/unit/${t##*/} 2>&1")
		done
		# structure.bats checks the tree (files, layers, layout with
		# Debian 12's clang-format), not the build: this machine's
		# run has it, and a chroot has no clang-format of that version
		# shellcheck disable=SC2016 # expanded in the chroot
		tap_relay "$tag " < <(in_root "$root" 'bats --tap $(ls tests/cmd/*.bats | grep -v /structure.bats) 2>&1')
		echo "# release $rel: unit and command tests after $((SECONDS - t0)) s"
	fi
	if [ "$what" != no-cluster ]; then
		run_cluster "$root" "$tag" "$suite"
		echo "# release $rel: cluster suite after $((SECONDS - t0)) s"
	fi
}

# run_cluster ROOT TAG SUITE: the cluster suite on the chroot's daemons
run_cluster() {
	local root=$1 tag=$2 suite=$3 deb files f lf_asked requeue_asked apptainer_asked
	# tasks need /dev (null, shm for Gloo, pts); ip netns keeps its
	# mounts and munged its socket under /run: a private one
	mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
	mount -t tmpfs -o mode=0755 distenv-release-run "$root/run"
	mkdir -p "$root/run/munge" && chroot "$root" chown munge:munge /run/munge
	# this machine's names: 24.11's slurmctld resolves srun's host name
	# to answer it, and blocks its RPC while the name does not resolve
	cp /etc/hosts "$root/etc/hosts"
	# the package of this release, built from a clean copy of the tree
	# (no build outputs: build-deb.sh packages what it is given)
	mkdir -p "$root/pkgsrc"
	git ls-files -co --exclude-standard | tar -cf - -T - | tar -C "$root/pkgsrc" -xf -
	deb=$(in_root "$root" 'cd /pkgsrc && DEB_BUILD_OPTIONS=nocheck contrib/build-deb.sh /tmp/deb 2>/tmp/deb.log')
	check $? "$tag the Debian package builds against this release (${deb##*/})"
	[ -n "$deb" ] || sed 's/^/# /' "$root/tmp/deb.log" | tail -20
	files='' lf_asked=0 requeue_asked=0 apptainer_asked=0
	for f in ${DISTENV_CLUSTER_FILES:-tests/cluster/*.bats}; do
		case $f in
		tests/cluster/llamafactory.bats) lf_asked=1 ;;
		# the real LLaMA-Factory stack too: bound in below
		tests/cluster/requeue_nodes.bats) requeue_asked=1 ;;
		# the template tools on the real stack: nothing of them
		# depends on the Slurm release (plain sbatch and srun)
		tests/cluster/dpo_sample.bats) ;;
		# ch-run and the image are this machine's (Debian 12), not in
		# the chroots: the container tests run on this machine's Slurm
		tests/cluster/containers.bats | tests/cluster/pyxis.bats) ;;
		# its firewall rules need nft, which is this machine's; the
		# rehearsal's sockets are no release's
		tests/cluster/rehearsal.bats) ;;
		# Apptainer is packaged in sid only: its tests run in the
		# 26.05 chroot, and nowhere else (tests/run leaves them out)
		tests/cluster/apptainer.bats) [ "$suite" = sid ] && apptainer_asked=1 ;;
		*) files="$files $f" ;;
		esac
	done
	# Debian's torch 2.6 is built without libuv, which its TCPStore asks
	# for by default (tests/cluster/torch_no_libuv.py)
	cp tests/cluster/torch_no_libuv.py "$root/usr/lib/python3/dist-packages/distenv_torch_no_libuv.py"
	echo 'import distenv_torch_no_libuv' >"$root/usr/lib/python3/dist-packages/distenv-torch-no-libuv.pth"
	if [ -n "$files" ]; then
		tap_relay "$tag " < <(in_root "$root" "USE_LIBUV=0 DISTENV_TOP=/src DISTENV_DEB='$deb' bats --tap $files 2>&1; tests/cluster/cluster.sh stop >/dev/null 2>&1")
	fi
	if [ "$apptainer_asked" = 1 ]; then
		run_apptainer "$root" "$tag" "$suite"
	fi
	[ "$lf_asked$requeue_asked" != 00 ] || return 0
	# The real LLaMA-Factory stack: requeue_nodes.bats, and the tests of
	# llamafactory.bats that DISTENV_RELEASES_LF_FILTER selects (a bats
	# --filter regex; the whole file takes over 10 minutes on 2 cores,
	# per release)
	if ! lf_stack_into "$root"; then
		tap not-ok "$tag the LLaMA-Factory tests: no LLaMA-Factory venv of Debian 12's Python 3.11 to bind into the chroot (contrib/lfstack/venv.sh)"
		return
	fi
	if [ "$requeue_asked" = 1 ]; then
		tap_relay "$tag " < <(in_root "$root" "DISTENV_TOP=/src bats --tap tests/cluster/requeue_nodes.bats 2>&1; tests/cluster/cluster.sh stop >/dev/null 2>&1")
	fi
	if [ "$lf_asked" = 1 ]; then
		tap_relay "$tag " < <(in_root "$root" "DISTENV_TOP=/src bats --tap --filter '$lf_filter' tests/cluster/llamafactory.bats 2>&1; tests/cluster/cluster.sh stop >/dev/null 2>&1")
	fi
}

# run_apptainer ROOT TAG SUITE: tests/cluster/apptainer.bats, with
# Apptainer installed in the chroot (apptainer_into) and the Debian 12
# image of contrib/containers/image.sh (built on this machine, cached
# outside the checkout) bound read-only at its own path
# (DISTENV_APPTAINER_IMAGE), and the pinned venv with its Python
# (lf_stack_into), in a pivoted namespace (in_root_pivoted)
run_apptainer() {
	local root=$1 tag=$2 suite=$3 img t0=$SECONDS
	if ! apptainer_into "$root" "$suite"; then
		tap not-ok "$tag tests/cluster/apptainer.bats: cannot install Apptainer in the chroot (apptainer_into)"
		return
	fi
	tap ok "$tag Apptainer installs in the chroot ($(chroot "$root" apptainer --version), after $((SECONDS - t0)) s)"
	if ! img=$(contrib/containers/image.sh); then
		tap not-ok "$tag tests/cluster/apptainer.bats: contrib/containers/image.sh cannot build the image"
		return
	fi
	mkdir -p "$root$img" && mount --bind -o ro "$img" "$root$img"
	# the template's test trains with the pinned venv in the image
	lf_stack_into "$root" ||
		tap not-ok "$tag tests/cluster/apptainer.bats: no LLaMA-Factory venv of Debian 12's Python 3.11 to bind into the chroot (contrib/lfstack/venv.sh)"
	echo "# $tag Apptainer and the image ready after $((SECONDS - t0)) s"
	tap_relay "$tag " < <(in_root_pivoted "$root" "USE_LIBUV=0 DISTENV_TOP=/src DISTENV_APPTAINER_IMAGE='$img' bats --tap tests/cluster/apptainer.bats 2>&1; tests/cluster/cluster.sh stop >/dev/null 2>&1")
	echo "# $tag Apptainer: $((SECONDS - t0)) s in all"
}

if [ "$(id -u)" -ne 0 ]; then
	tap ok "tests/releases.sh # skip needs root (debootstrap, chroot)"
	tap_status
	exit
fi
for rel in $releases; do
	run_release "$rel"
done
tap_status
