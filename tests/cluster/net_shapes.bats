#!/usr/bin/env bats
# Network shapes that make NCCL and Gloo pick the wrong interface, built on
# node n2 of the namespace cluster (cluster.sh) and undone after each test:
# - two interfaces in the master's subnet (a second veth, eth2, on the
#   bridge), whose route order decides which one the kernel uses;
# - the node's only routable address as a /32 on lo, reached over an
#   interface (eth0) that holds no IPv4 address, as on BGP-unnumbered
#   nodes.

# Commands in single quotes run in the job's shell, not this one.
# shellcheck disable=SC2016

load helpers

NS1=${DISTENV_CLUSTER_NS:-dvn}1
NS2=${DISTENV_CLUSTER_NS:-dvn}2
BR=${DISTENV_CLUSTER_BRIDGE:-dvbr0}
# the second NIC's end on the bridge: named after the cluster's veths, so
# that clusters running side by side (tests/run) do not share it
X2=${DISTENV_CLUSTER_VETH:-dvv}x2
N2=$CLUSTER_NET.2

setup_file() { cluster_file_setup 2; }
teardown_file() { cluster_file_teardown; }
setup() { cluster_test_setup; }

# Undo whatever a test built on n2, also when it failed half-way.
teardown() {
	ip link del "$X2" 2>/dev/null || true
	ip -n "$NS2" addr del "$N2/32" dev lo 2>/dev/null || true
	ip -n "$NS2" addr del "$N2/32" dev eth0 2>/dev/null || true
	ip -n "$NS2" addr show dev eth0 | grep -qF "inet $N2/24" ||
		ip -n "$NS2" addr add "$N2/24" dev eth0
	ip -n "$NS2" route replace "$CLUSTER_NET.0/24" dev eth0 proto kernel \
		scope link src "$N2"
	# eth2 answered ARP for n2's address too (arp_ignore 0, the default:
	# ip-sysctl.rst), so the neighbours may still point at its MAC
	ip neigh flush dev "$BR" 2>/dev/null || true
	ip -n "$NS1" neigh flush dev eth0 2>/dev/null || true
}

# second_nic: eth2 on n2, on the bridge, in the cluster's subnet
second_nic() {
	ip link add "$X2" type veth peer name eth2 netns "$NS2"
	ip link set "$X2" master "$BR"
	ip link set "$X2" up
	ip -n "$NS2" addr add "$CLUSTER_NET.12/24" dev eth2
	ip -n "$NS2" link set eth2 up
}

@test "two interfaces in the master's subnet: distenv exports the one the kernel routes through, names both and the fix; the route order changes the choice, never silently; strict fails the step" {
	second_nic
	ip -n "$NS2" route get "$CLUSTER_NET.1"
	run srun -N2 --distenv --distenv-show bash -c 'echo "IF $SLURMD_NODENAME $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"; exec /usr/bin/python3 "$0"' "$GLOO"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "IF n2 =eth0 eth0" <<<"$output"
	grep -qF "distenv: warning: node n2: NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME: eth0 ($N2/24) and eth2 ($CLUSTER_NET.12/24) are both in the subnet of the master address $CLUSTER_NET.1: the kernel routes it through eth0, so distenv exports eth0" <<<"$output"
	grep -qF "Put the interfaces on distinct subnets, give the one that should carry the traffic the lower route metric (ip route ... metric N), or name it with --distenv-ifname=NAME" <<<"$output"
	refute grep -q "warning: node n1" <<<"$output"
	grep -qE "RANK 1/2 node=n2 result=3 OK" <<<"$output"
	# eth0's route re-added after eth2's: the kernel now takes eth2, and
	# so does distenv, saying so
	ip -n "$NS2" route del "$CLUSTER_NET.0/24" dev eth0
	ip -n "$NS2" route append "$CLUSTER_NET.0/24" dev eth0 src "$N2"
	ip -n "$NS2" route get "$CLUSTER_NET.1" | grep -q 'dev eth2'
	run srun -N2 --distenv bash -c 'echo "IF $SLURMD_NODENAME $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"; exec /usr/bin/python3 "$0"' "$GLOO"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "IF n2 =eth2 eth2" <<<"$output"
	grep -qF "the kernel routes it through eth2, so distenv exports eth2" <<<"$output"
	grep -qE "RANK 1/2 node=n2 result=3 OK" <<<"$output"
	# under strict the same finding fails the step before launch
	run timeout 60 srun -N2 --distenv --distenv-check=strict bash -c 'echo "LAUNCHED $SLURMD_NODENAME"'
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qF "distenv: error: node n2: NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME: eth0 ($N2/24) and eth2 ($CLUSTER_NET.12/24) are both in the subnet" <<<"$output"
	refute grep -q "LAUNCHED n2" <<<"$output"
	# naming the interface settles it: no warning
	run srun -N2 --distenv --distenv-ifname=eth0 bash -c 'echo "IF $SLURMD_NODENAME $NCCL_SOCKET_IFNAME"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "IF n2 eth0" <<<"$output"
	refute grep -q "are both in the subnet" <<<"$output"
}

@test "the node's only routable address is a /32 on lo: the step fails on that node, naming the address, lo and the fix, never exporting lo; with the /32 on eth0 as well, eth0 is exported and the all_reduce completes" {
	ip -n "$NS2" addr del "$N2/24" dev eth0
	ip -n "$NS2" addr add "$N2/32" dev lo
	ip -n "$NS2" route add "$CLUSTER_NET.0/24" dev eth0 src "$N2"
	ip -n "$NS2" -4 addr show dev eth0
	ip -n "$NS2" route get "$CLUSTER_NET.1"
	run timeout 60 srun -N2 --distenv bash -c 'echo "IF $SLURMD_NODENAME $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"'
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qF "distenv: error: node n2: master host n1: the only address of this node that reaches the master $CLUSTER_NET.1 is $N2 (the kernel's source address for it), and lo holds it: NCCL and Gloo take lo's first address, 127.0.0.1, which other nodes cannot reach" <<<"$output"
	grep -qF "(ip addr add $N2/32 dev IFACE)" <<<"$output"
	refute grep -qE "IF n2 " <<<"$output"
	# the address on eth0 too: eth0 carries it
	ip -n "$NS2" addr add "$N2/32" dev eth0
	run srun -N2 --distenv bash -c 'echo "IF $SLURMD_NODENAME $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME"; exec /usr/bin/python3 "$0"' "$GLOO"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "IF n2 =eth0 eth0" <<<"$output"
	grep -qE "RANK 1/2 node=n2 result=3 OK" <<<"$output"
}
