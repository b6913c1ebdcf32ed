#!/usr/bin/env bats
# The network rehearsal (plugin/core/distenv_rehearsal.h) on a real
# Slurm cluster (cluster.sh, 2 nodes, reserved ports): a healthy step
# checks in and goes on; a firewall rule in one node's namespace
# (Debian's nftables) that drops the ephemeral range, or the step's
# ports, ends the step within seconds under --distenv-check=strict,
# naming the node, the address, the port and the fix, and only warns
# under the default (warn). Times are measured and printed.

# Commands in single quotes run in the job's shell, not this one.
# shellcheck disable=SC2016
# elapsed_ms: set by timed (helpers.bash)
# shellcheck disable=SC2154

load helpers

TABLE=distenv_rehearsal_test

setup_file() { cluster_file_setup 2; }

teardown_file() { cluster_file_teardown; }

setup() { cluster_test_setup; }

# The rules a test added, removed whatever the test's outcome; n2's MTU
# and ephemeral range set back to n1's (which no test changes).
teardown() {
	local i mtu range
	for i in 1 2; do
		ip netns exec "$CLUSTER_NS$i" nft delete table inet "$TABLE" 2>/dev/null || true
	done
	mtu=$(ip -n "${CLUSTER_NS}1" -o link show dev eth0 | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
	ip -n "${CLUSTER_NS}2" link set dev eth0 mtu "${mtu:-1500}" || true
	range=$(ip netns exec "${CLUSTER_NS}1" cat /proc/sys/net/ipv4/ip_local_port_range)
	ip netns exec "${CLUSTER_NS}2" sysctl -q -w net.ipv4.ip_local_port_range="$range" || true
}

# drop_on NODE DPORTS: in node n<NODE>'s namespace, drop new TCP
# connections to DPORTS (nft syntax: 32768-60999), as a host firewall
# that admits established traffic does.
drop_on() {
	ip netns exec "$CLUSTER_NS$1" nft -f - <<EOF
table inet $TABLE {
	chain input {
		type filter hook input priority 0; policy accept;
		ct state established,related accept
		tcp dport $2 drop
	}
}
EOF
}

# The node's ephemeral range, as nft writes a range: LO-HI.
ephemeral_of() {
	ip netns exec "$CLUSTER_NS$1" cat /proc/sys/net/ipv4/ip_local_port_range | awk '{ print $1 "-" $2 }'
}

@test "nftables is installed (the rules of the tests below)" {
	command -v nft
}

@test "a healthy 2-node step: both nodes check in with the master and reach their ring neighbour, and the step runs" {
	timed timeout 60 srun -N2 --distenv --distenv-show bash -c 'echo "ran on $SLURMD_NODENAME"'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: rehearsal: all 2 nodes checked in with n1 at $CLUSTER_NET.1 port "* ]]
	[[ "$output" == *"(the second port of SLURM_STEP_RESV_PORTS="* ]]
	[[ "$output" == *"distenv: rehearsal: n2 checked in with the master n1 at $CLUSTER_NET.1 port "* ]]
	[[ "$output" == *"ran on n1"* ]]
	[[ "$output" == *"ran on n2"* ]]
	refute grep -q 'warning' <<<"$output"
}

@test "without --distenv-show a healthy step says nothing of the rehearsal" {
	run timeout 60 srun -N2 --distenv true
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "the ephemeral range dropped on n2, strict: the step ends within seconds, naming n2, the port range and the fix" {
	drop_on 2 "$(ephemeral_of 2)"
	timed timeout 60 env DISTENV_REHEARSAL_TIMEOUT=3 srun -N2 --distenv --distenv-check=strict sleep 30
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$elapsed_ms" -lt 15000 ]
	[[ "$output" == *"distenv: error: n1: network rehearsal: n1 cannot reach its ring neighbour n2 at $CLUSTER_NET.2 port "* ]]
	[[ "$output" == *"(ephemeral range, as NCCL and Gloo use) from $CLUSTER_NET.1 over eth0: timed out"* ]]
	[[ "$output" == *"On n2, let TCP from the step's nodes reach the kernel's ephemeral range $(ephemeral_of 2)"* ]]
	[[ "$output" == *"distenv: ending step "* ]]
	nodes_idle
}

@test "the ephemeral range dropped on n2, warn (the default): the finding is printed and the step runs" {
	drop_on 2 "$(ephemeral_of 2)"
	timed timeout 60 env DISTENV_REHEARSAL_TIMEOUT=2 srun -N2 --distenv bash -c 'echo "ran on $SLURMD_NODENAME"'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: n1: network rehearsal: n1 cannot reach its ring neighbour n2 at $CLUSTER_NET.2 port "* ]]
	[[ "$output" == *"ran on n1"* ]]
	[[ "$output" == *"ran on n2"* ]]
	refute grep -q 'ending step' <<<"$output"
}

@test "the step's reserved ports dropped on the master n1, strict: n2 names the master it cannot reach, n1 names n2 as missing" {
	drop_on 1 21000-21999
	timed timeout 60 env DISTENV_REHEARSAL_TIMEOUT=3 srun -N2 --distenv --distenv-check=strict sleep 30
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$elapsed_ms" -lt 15000 ]
	[[ "$output" == *"n2: network rehearsal: n2 cannot reach the master n1 at $CLUSTER_NET.1 port "* ]]
	[[ "$output" == *"(the check-in before MASTER_PORT) from $CLUSTER_NET.2 over eth0: timed out"* ]]
	[[ "$output" == *"n1: network rehearsal: 1 of 2 nodes never checked in with the master n1 at $CLUSTER_NET.1 port "* ]]
	[[ "$output" == *"n2 (node index 1)"* ]]
	nodes_idle
}

@test "--distenv-check=off: no rehearsal, so a dropped ephemeral range neither delays nor fails the step" {
	drop_on 2 "$(ephemeral_of 2)"
	# a rehearsal would wait 30 s for n2; a skipped one nothing, which
	# a loaded machine may still stretch to seconds
	timed timeout 60 env DISTENV_REHEARSAL_TIMEOUT=30 srun -N2 --distenv --distenv-check=off --distenv-show true
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$elapsed_ms" -lt 20000 ]
	refute grep -q 'rehearsal' <<<"$output"
}

@test "DISTENV_REHEARSAL_TIMEOUT=0: no rehearsal; a value that is no number of seconds fails a strict step, naming it" {
	drop_on 2 "$(ephemeral_of 2)"
	timed timeout 60 env DISTENV_REHEARSAL_TIMEOUT=0 srun -N2 --distenv --distenv-check=strict true
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$elapsed_ms" -lt 4000 ]
	run timeout 60 env DISTENV_REHEARSAL_TIMEOUT=5s srun -N2 --distenv --distenv-check=strict true
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"DISTENV_REHEARSAL_TIMEOUT: '5s' is not a number of seconds 0-600"* ]]
}

@test "a step that did not ask for distenv (the site default torchrun) is never rehearsed, even behind a firewall" {
	plugstack_with_distenv default=torchrun
	drop_on 2 "$(ephemeral_of 2)"
	timed timeout 60 env DISTENV_REHEARSAL_TIMEOUT=30 srun -N2 --distenv-check=strict true
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$elapsed_ms" -lt 20000 ]
	refute grep -q 'rehearsal' <<<"$output"
}

# late_plugstack: plugstack.conf with tests/cluster/late_task.c before
# distenv; the step's tasks on NODE reach distenv MS ms late when the
# job exports DISTENV_TEST_LATE_NODE=NODE DISTENV_TEST_LATE_MS=MS.
late_plugstack() {
	gcc -Wall -Wextra -Werror -shared -fPIC -o "$BATS_FILE_TMPDIR/late_task.so" "$TOP/tests/cluster/late_task.c"
	printf 'required %s\nrequired %s\n' "$BATS_FILE_TMPDIR/late_task.so" "$PLUGIN" >"$PLUGSTACK"
}

@test "n2's task reaches distenv 4 s late, strict with a 2 s wait: the master names n2 as never checked in, within seconds" {
	late_plugstack
	timed timeout 60 env DISTENV_TEST_LATE_NODE=n2 DISTENV_TEST_LATE_MS=4000 DISTENV_REHEARSAL_TIMEOUT=2 \
		srun -N2 --distenv --distenv-check=strict sleep 30
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$elapsed_ms" -lt 15000 ]
	[[ "$output" == *"n1: network rehearsal: 1 of 2 nodes never checked in with the master n1 at $CLUSTER_NET.1 port "* ]]
	[[ "$output" == *"within 2000 ms: n2 (node index 1)"* ]]
	[[ "$output" == *"its task reached distenv later than the wait"* ]]
	[[ "$output" == *"distenv: ending step "* ]]
	nodes_idle
}

@test "n2's task reaches distenv 1 s late, within the default wait: the step passes, after the later node checked in" {
	late_plugstack
	timed timeout 60 env DISTENV_TEST_LATE_NODE=n2 DISTENV_TEST_LATE_MS=1000 \
		srun -N2 --distenv --distenv-check=strict --distenv-show true
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$elapsed_ms" -ge 1000 ]
	[[ "$output" == *"distenv: rehearsal: all 2 nodes checked in with n1"* ]]
}

# Facts compared across nodes (distenv_rehearsal_facts.h): n2's socket
# interface at 1400 bytes, n1's at its default.
@test "n2's interface has another MTU, strict: the step ends before launch, naming both nodes and both MTUs" {
	ip -n "${CLUSTER_NS}2" link set dev eth0 mtu 1400
	timed timeout 60 srun -N2 --distenv --distenv-check=strict bash -c 'echo "ran on $SLURMD_NODENAME"'
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$elapsed_ms" -lt 15000 ]
	[[ "$output" == *"distenv: error: n1: network rehearsal: n2's socket interface eth0 has MTU 1400, the master n1's eth0 has MTU 1500"* ]]
	[[ "$output" == *"distenv: error: n2: network rehearsal: n2's socket interface eth0 has MTU 1400, the master n1's eth0 has MTU 1500"* ]]
	[[ "$output" == *"ip link set dev IF mtu N"* ]]
	refute grep -q 'ran on' <<<"$output"
	nodes_idle
}

@test "n2's interface has another MTU, warn (the default): both nodes warn and the step runs" {
	ip -n "${CLUSTER_NS}2" link set dev eth0 mtu 1400
	timed timeout 60 srun -N2 --distenv bash -c 'echo "ran on $SLURMD_NODENAME"'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: n1: network rehearsal: n2's socket interface eth0 has MTU 1400, the master n1's eth0 has MTU 1500"* ]]
	[[ "$output" == *"distenv: warning: n2: network rehearsal: n2's socket interface eth0 has MTU 1400"* ]]
	[[ "$output" == *"ran on n1"* ]]
	[[ "$output" == *"ran on n2"* ]]
}

@test "n2's ip_local_port_range differs from n1's, warn: both ranges are named and the step runs" {
	range1=$(ephemeral_of 1)
	ip netns exec "${CLUSTER_NS}2" sysctl -q -w net.ipv4.ip_local_port_range="40000 50000"
	timed timeout 60 env DISTENV_REHEARSAL_TIMEOUT=2 srun -N2 --distenv bash -c 'echo "ran on $SLURMD_NODENAME"'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: n1: network rehearsal: n2's ephemeral port range (ip_local_port_range) is 40000-50000, the master n1's $range1"* ]]
	[[ "$output" == *"net.ipv4.ip_local_port_range the same on every node"* ]]
	[[ "$output" == *"ran on n2"* ]]
}
