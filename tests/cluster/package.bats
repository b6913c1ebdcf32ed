#!/usr/bin/env bats
# The Debian package, used the way an admin uses it: build the .deb
# (contrib/build-deb.sh, or the one named by $DISTENV_DEB), install it
# with dpkg on this machine, enable the plugstack.conf.d snippet, and run
# a 2-node cluster whose plugstack.conf is Debian's own
# "include /etc/slurm/plugstack.conf.d/*.conf", so every job goes
# through the INSTALLED distenv.so. Then roll back with dpkg -r.
#
# The package is purged and the cluster stopped in teardown_file, also
# when a test fails. A machine where a distenv package is already known to
# dpkg (installed, or its conffiles left behind), or where its conffiles
# exist without it, is not touched: every test is skipped.

# shellcheck disable=SC2016 # single-quoted commands expand on the nodes

load helpers

PKG=distenv
SNIPPET=/etc/slurm/plugstack.conf.d/distenv.conf
PLUGINDIR=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)/slurm-wlm
MASTER=${DISTENV_CLUSTER_NET:-10.77.0}.1

# dpkg ARGS...: dpkg, waiting (up to 2 minutes) while apt or another dpkg
# holds its lock.
pkg_dpkg() {
	local out rc
	for _ in $(seq 1 60); do
		rc=0
		out=$(dpkg "$@" 2>&1) || rc=$?
		if [ "$rc" -eq 0 ] || ! grep -qE 'locked by another process|lock-frontend' <<<"$out"; then
			printf '%s\n' "$out"
			return "$rc"
		fi
		sleep 2
	done
	printf '%s\n' "$out"
	return 1
}

# Comment the plugstack line out, as the rollback in docs/admin-guide.md says.
snippet_disable() {
	local tmp
	[ -f "$SNIPPET" ] || return 0
	tmp=$(mktemp)
	sed 's/^required /#required /' "$SNIPPET" >"$tmp"
	install -m 0644 "$tmp" "$SNIPPET"
	rm -f "$tmp"
}

setup_file() {
	if dpkg-query -W -f='${db:Status-Status}' "$PKG" >/dev/null 2>&1 &&
		[ "$(dpkg-query -W -f='${db:Status-Status}' "$PKG")" != not-installed ]; then
		echo "dpkg already knows a $PKG package; not touching it" >"$BATS_FILE_TMPDIR/preinstalled"
		return 0
	fi
	local f
	for f in "$SNIPPET" /etc/slurm/distenv.yaml; do
		if [ -e "$f" ]; then
			echo "$f exists and would become the package's; not touching it" >"$BATS_FILE_TMPDIR/preinstalled"
			return 0
		fi
	done
	local deb=${DISTENV_DEB:-}
	if [ -z "$deb" ]; then
		# The unit tests ran before this file (tests/run); skip them
		# inside the package build.
		deb=$(DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" \
			"$TOP/contrib/build-deb.sh" "$BATS_FILE_TMPDIR/deb")
	fi
	echo "$deb" >"$BATS_FILE_TMPDIR/deb.path"
	: >"$BATS_FILE_TMPDIR/installed" # from here on teardown_file purges
	pkg_dpkg -i "$deb" >&2
	# Enable it as an admin would: the shipped snippet with its
	# "required" line uncommented, in place of the commented one.
	local tmp
	tmp=$(mktemp)
	sed 's/^#required /required /' "$SNIPPET" >"$tmp"
	install -m 0644 "$tmp" "$SNIPPET"
	rm -f "$tmp"
	cluster_start 2 "include /etc/slurm/plugstack.conf.d/*.conf"
}

teardown_file() {
	cluster_file_teardown
	if [ -f "$BATS_FILE_TMPDIR/installed" ]; then
		snippet_disable
		pkg_dpkg --purge "$PKG" >&2
	fi
}

setup() {
	[ ! -f "$BATS_FILE_TMPDIR/preinstalled" ] || skip "$(cat "$BATS_FILE_TMPDIR/preinstalled")"
	cluster_test_setup --keep-plugstack
}

@test "package: plugin, command, man pages, snippet (commented as shipped) and a dependency on this Slurm release" {
	deb=$(cat "$BATS_FILE_TMPDIR/deb.path")
	run dpkg -L "$PKG"
	echo "$output"
	grep -qx "$PLUGINDIR/distenv.so" <<<"$output"
	[ "$(grep -c '\.la$' <<<"$output")" -eq 0 ]
	grep -qx /usr/bin/distenv <<<"$output"
	grep -qx /usr/share/man/man1/distenv.1.gz <<<"$output"
	grep -qx /usr/share/man/man8/distenv.8.gz <<<"$output"
	grep -qx "$SNIPPET" <<<"$output"
	# As shipped, the snippet loads nothing.
	dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ".$SNIPPET" >shipped.conf
	grep -qE '^#required distenv\.so' shipped.conf
	[ "$(grep -cvE '^(#|[[:space:]]*$)' shipped.conf)" -eq 0 ]
	# Pinned to the Slurm major.minor installed here (22.05.8 -> 22.05).
	mm=$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins | cut -d. -f1,2)
	next=$(printf '%s.%02d' "${mm%%.*}" $((10#${mm#*.} + 1)))
	run dpkg-deb -f "$deb" Depends
	echo "$output"
	[[ "$output" == *"slurm-wlm-basic-plugins (>= $mm), slurm-wlm-basic-plugins (<< $next)"* ]]
	run /usr/bin/distenv --version
	[[ "$output" == "distenv "*" (built against Slurm $mm."* ]]
	# and its version says so, so that builds for two releases can sit
	# in one repository
	[[ "$(dpkg-query -W -f='${Version}' "$PKG")" == *"+slurm$mm" ]]
	[[ "$(basename "$deb")" == *"+slurm${mm}_"*.deb ]]
}

@test "package: the example site file and the job templates are installed, and the example passes check-config" {
	run dpkg -L "$PKG"
	n=0
	for t in "$TOP"/templates/*.sbatch; do
		[ -e "$t" ] || continue
		grep -qx "/usr/share/distenv/${t##*/}" <<<"$output"
		n=$((n + 1))
	done
	echo "$n sbatch templates"
	[ "$n" -ge 3 ]
	# and the job script they share, beside them
	grep -qx /usr/share/distenv/dpo_job.bash <<<"$output"
	if [ -f "$TOP/contrib/distenv.yaml" ]; then
		grep -qx /etc/slurm/distenv.yaml <<<"$output"
		cmp "$TOP/contrib/distenv.yaml" /etc/slurm/distenv.yaml
		[ "$(stat -c '%U %a' /etc/slurm/distenv.yaml)" = "root 644" ]
		if /usr/bin/distenv --help | grep -q check-config; then
			run /usr/bin/distenv check-config /etc/slurm/distenv.yaml
			echo "$output"
			[ "$status" -eq 0 ]
		fi
	fi
}

@test "package: srun --help and sbatch --help list the options of the installed plugin" {
	run srun --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--distenv=[torchrun|elastic|tasks|off]"* ]]
	[[ "$output" == *"--distenv-show"* ]]
	run sbatch --help
	[[ "$output" == *"--distenv=[torchrun|elastic|tasks|off]"* ]]
	[[ "$output" == *"--distenv-port=PORT"* ]]
}

@test "package: a 2-node --distenv step gets its variables from the installed distenv.so" {
	# $PPID of the task is its slurmstepd: its maps show which
	# distenv.so it loaded.
	run srun -N2 --ntasks-per-node=1 --distenv bash -c \
		'echo "VARS $SLURM_NODEID $NODE_RANK $NNODES $MASTER_ADDR $GLOO_SOCKET_IFNAME $(grep -o "/[^ ]*/distenv.so" /proc/$PPID/maps | sort -u)"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "VARS 0 0 2 $MASTER eth0 $PLUGINDIR/distenv.so" <<<"$output"
	grep -qx "VARS 1 1 2 $MASTER eth0 $PLUGINDIR/distenv.so" <<<"$output"
}

@test "package: man distenv renders, both pages, without groff warnings" {
	export MANPAGER=cat MANWIDTH=80 LC_ALL=C.UTF-8
	run man 1 distenv
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv env"* ]]
	run man 8 distenv
	[ "$status" -eq 0 ]
	[[ "$output" == *"PLUGSTACK ARGUMENTS"* ]]
	[[ "$output" == *"port_range=LO-HI"* ]]
	[[ "$output" == *"SLURM_STEP_RESV_PORTS"* ]]
	run bash -c 'man --warnings 8 distenv 2>&1 >/dev/null; man --warnings 1 distenv 2>&1 >/dev/null'
	echo "$output"
	[ -z "$output" ]
}

@test "package: a distenv.so built for another Slurm release is refused by Slurm, naming the release it was built for" {
	# The installed plugin with plugin_version (the symbol Slurm checks,
	# src/common/plugin.c) set to 23.11.0, as a build against 23.11's
	# headers has it.
	so=$BATS_FILE_TMPDIR/distenv-23.11.so
	python3 - "$PLUGINDIR/distenv.so" "$so" <<'PY'
import subprocess, sys
src, dst = sys.argv[1], sys.argv[2]
def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
addr = next(int(l.split()[0], 16) for l in run("nm", "-D", "--defined-only", src).splitlines()
            if l.split()[-1] == "plugin_version")
for l in run("readelf", "-SW", src).splitlines():
    f = l.replace("[ ", "[").split()
    try:
        vaddr, off, size = int(f[3], 16), int(f[4], 16), int(f[5], 16)
    except (IndexError, ValueError):
        continue
    if f[2] != "NOBITS" and vaddr <= addr < vaddr + size:
        data = bytearray(open(src, "rb").read())
        pos = off + addr - vaddr
        data[pos:pos + 4] = (0x170B00).to_bytes(4, "little")
        open(dst, "wb").write(data)
        sys.exit(0)
sys.exit("plugin_version not found in " + src)
PY
	cp "$PLUGSTACK" "$BATS_FILE_TMPDIR/plugstack.saved"
	echo "required $so" >"$PLUGSTACK"
	run srun -N2 hostname
	echo "$output"
	cp "$BATS_FILE_TMPDIR/plugstack.saved" "$PLUGSTACK"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Incompatible Slurm plugin $so version (23.11.0)"* ]]
	[[ "$output" == *"Failed to load plugin $so. Aborting."* ]]
	run srun -N2 hostname
	[ "$status" -eq 0 ]
}

@test "package: dpkg -r refuses while the snippet still loads the plugin, and Slurm keeps working" {
	run pkg_dpkg -r "$PKG"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"comment that line out"* ]]
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$PKG")" = installed ]
	[ -f "$PLUGINDIR/distenv.so" ]
	run srun -N2 --distenv bash -c 'echo "RANK $NODE_RANK"'
	[ "$status" -eq 0 ]
	[ "$(grep -c '^RANK [01]$' <<<"$output")" -eq 2 ]
}

@test "package: the removal guard reads the plugstack configuration slurm.conf names, and the files it includes" {
	snippet_disable
	alt=$DISTENV_CLUSTER_DIR/alt
	mkdir -p "$alt/plugstack.d"
	sed "s|^PlugStackConfig=.*|PlugStackConfig=$alt/plugstack.conf|" "$SLURM_CONF" >"$alt/slurm.conf"
	# directly in PlugStackConfig
	echo "required $PLUGINDIR/distenv.so" >"$alt/plugstack.conf"
	SLURM_CONF="$alt/slurm.conf" run pkg_dpkg -r "$PKG"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"not removed: $alt/plugstack.conf loads distenv.so as required"* ]]
	# through an include
	echo "include $alt/plugstack.d/*.conf" >"$alt/plugstack.conf"
	echo "required distenv.so" >"$alt/plugstack.d/50-distenv.conf"
	SLURM_CONF="$alt/slurm.conf" run pkg_dpkg -r "$PKG"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"not removed: $alt/plugstack.d/50-distenv.conf loads distenv.so"* ]]
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$PKG")" = installed ]
	rm -rf "$alt"
}

@test "package: rollback (comment the line out, dpkg -r) leaves Slurm working without the plugin" {
	snippet_disable
	run pkg_dpkg -r "$PKG"
	echo "$output"
	[ "$status" -eq 0 ]
	[ ! -e "$PLUGINDIR/distenv.so" ]
	[ ! -e /usr/bin/distenv ]
	run srun -N2 hostname
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(sort <<<"$output" | tr '\n' ' ')" = "n1 n2 " ]
	# The plugin is really gone: its option is unknown now.
	run srun -N2 --distenv hostname
	[ "$status" -ne 0 ]
	[[ "$output" == *"unrecognized option '--distenv'"* ]]
	nodes_idle
}
