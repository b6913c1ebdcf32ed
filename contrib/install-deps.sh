#!/bin/bash
# Install what distenv needs to build and test on Debian 12, from Debian's
# own packages. Skips apt entirely when everything is already there.
set -euo pipefail

packages=(
	build-essential autoconf automake libtool pkg-config
	libslurm-dev slurm-wlm-plugins-dev libhwloc-dev libyaml-dev
	slurmctld slurmd slurm-client munge
	libcmocka-dev bats shellcheck
	clang clang-format libclang-rt-14-dev valgrind # fuzzers (libFuzzer is in libclang-rt-14-dev), tests/sanitize.sh, the layout check
	python3-torch python3-yaml iproute2 util-linux procps git
	nftables # the firewall rules of tests/cluster/rehearsal.bats
	python3-venv python3-dev # contrib/lfstack/venv.sh: the real LLaMA-Factory stack
	debhelper man-db # the Debian package and its test (tests/cluster/package.bats)
	debootstrap # chroots of newer Slurm releases (tests/releases.sh), container images (contrib/containers/image.sh)
	charliecloud-runtime # ch-run, the container runtime of tests/cluster/containers.bats
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# .ci/run updates the package lists once before calling this.
[ "${DISTENV_APT_UPDATED:-0}" = 1 ] || apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
