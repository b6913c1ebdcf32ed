#!/usr/bin/env bats
# cluster.sh itself: a cluster whose record went missing (its
# DISTENV_CLUSTER_DIR removed while it ran, as with a chroot removed
# after its run was killed) is stopped by its names, so the next start
# of those names works (a node's namespace known by its addresses or by
# the hosts file start wrote for it); a link of those names that no
# start made is left alone, and start names it with what to do.

load helpers

setup_file() { cluster_file_setup 3; }
teardown_file() { cluster_file_teardown; }
setup() { cluster_test_setup; }

bridge=${DISTENV_CLUSTER_BRIDGE:-dvbr0}
veth=${DISTENV_CLUSTER_VETH:-dvv}

# daemons_of_dir: the pids of the daemons whose command line names the
# cluster's directory
daemons_of_dir() {
	local p
	for p in /proc/[0-9]*; do
		case $(cat "$p/comm" 2>/dev/null) in slurmctld* | slurmd* | munged*) ;; *) continue ;; esac
		if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$DISTENV_CLUSTER_DIR/"; then
			echo "${p#/proc/}"
		fi
	done
}

@test "a running cluster whose directory is gone: stop removes its daemons, namespaces, links and hosts files by name; start works again" {
	[ -n "$(daemons_of_dir)" ]
	run ip link show "$bridge"
	[ "$status" -eq 0 ]
	# node 1's namespace kept by a process but no longer named here, as
	# one named under another chroot's /run: only its veth is seen
	ip netns exec "${CLUSTER_NS}1" sleep 120 &
	holder=$!
	sleep 0.5
	ip netns del "${CLUSTER_NS}1"
	# node 3's namespace without its addresses: known by the hosts file
	# start wrote for it
	ip -n "${CLUSTER_NS}3" addr flush dev eth0
	ip -n "${CLUSTER_NS}3" addr flush dev eth1
	run ip -n "${CLUSTER_NS}3" -4 -o addr show
	[ "$status" -eq 0 ]
	[[ "$output" != *" eth0 "* ]]
	[[ "$output" != *" eth1 "* ]]
	rm -rf -- "$DISTENV_CLUSTER_DIR"
	run "$CLUSTER" stop
	kill "$holder"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"no record of a cluster in $DISTENV_CLUSTER_DIR; removed what one of these names left: daemons "* ]]
	[[ "$output" == *"netns ${CLUSTER_NS}2 "* ]]
	[[ "$output" == *"netns ${CLUSTER_NS}3 "* ]]
	[[ "$output" == *"link ${veth}1 "* ]]
	[[ "$output" == *"bridge $bridge"* ]]
	[[ "$output" == *"/etc/netns/${CLUSTER_NS}2"* ]]
	[ -z "$(daemons_of_dir)" ]
	run ip link show "$bridge"
	[ "$status" -ne 0 ]
	run ip netns list
	[[ "$output" != *"${CLUSTER_NS}2"* ]]
	[[ "$output" != *"${CLUSTER_NS}3"* ]]
	[ ! -e "/etc/netns/${CLUSTER_NS}1" ]
	run ip link show "${veth}1"
	[ "$status" -ne 0 ]
	run cluster_file_setup 2
	[ "$status" -eq 0 ]
	cluster_env
	run srun -N2 hostname
	[ "$status" -eq 0 ]
	[ "$(sort <<<"$output" | tr '\n' ' ')" = "n1 n2 " ]
}

@test "a bridge of the cluster's name that no start made: stop leaves it, start refuses it by name and says what to do" {
	"$CLUSTER" stop
	ip link add "$bridge" type bridge
	run "$CLUSTER" stop
	[ "$status" -eq 0 ]
	[[ "$output" == *"nothing to stop (no record in $DISTENV_CLUSTER_DIR)"* ]]
	run ip link show "$bridge"
	[ "$status" -eq 0 ]
	run "$CLUSTER" start -n 2
	ip link del "$bridge"
	[ "$status" -eq 1 ]
	[[ "$output" == *"error: link $bridge already exists: 'cluster.sh stop' removes it when a cluster of these names made it; if not, give this cluster other names (DISTENV_CLUSTER_BRIDGE, _NS, _VETH, _NET, _DIR)"* ]]
	run cluster_file_setup 2
	[ "$status" -eq 0 ]
}
