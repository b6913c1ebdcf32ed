#!/usr/bin/env bats
# Failure modes on a real Slurm 22.05 cluster (cluster.sh, 2 nodes): each
# failure ends the step within seconds with a message that says what to
# do, never hangs, and never drains or downs a node (nodes_idle after
# every test). Times are measured and printed; tests/README.md lists them.

# Commands in single quotes run in the job's shell, not this one.
# shellcheck disable=SC2016
# elapsed_ms: set by timed (helpers.bash)
# shellcheck disable=SC2154

load helpers

# The unprivileged user the tests make: one per run that may run beside
# another (tests/sanitize_cluster.sh names its own)
TEST_USER=${DISTENV_TEST_USER:-distenvtest}

setup_file() { cluster_file_setup 2; }

teardown_file() {
	cluster_file_teardown
	# The test user is made only by the test below, and marked so.
	if [ -f "$BATS_FILE_TMPDIR/made-user" ]; then
		userdel "$TEST_USER" 2>/dev/null || true
	fi
}

setup() { cluster_test_setup; }

@test "MASTER_ADDR exported as a name no node can resolve: the step fails within seconds, naming the host" {
	timed timeout 60 env MASTER_ADDR=no-such-host.invalid srun -N2 --distenv true
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$elapsed_ms" -lt 15000 ]
	[[ "$output" == *"distenv: error: node n1: master host no-such-host.invalid: cannot resolve the name"* ]]
	[[ "$output" == *"distenv: error: node n2: master host no-such-host.invalid: cannot resolve the name"* ]]
	nodes_idle
}

@test "the master's name missing from one node's hosts file: that node fails within seconds, naming the host and the fix" {
	hosts=/etc/netns/${CLUSTER_NS}2/hosts
	saved=$(cat "$hosts")
	# Rewrite in place: ip netns exec bind-mounted this very file.
	grep -v 'n1$' <<<"$saved" >"$hosts"
	timed timeout 60 srun -N2 --distenv true
	printf '%s\n' "$saved" >"$hosts"
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$elapsed_ms" -lt 15000 ]
	[[ "$output" == *"distenv: error: node n2: master host n1: cannot resolve the name"*"Add the master's cluster address to /etc/hosts or DNS on this node"* ]]
	# n1 resolves its own name (skipping 127.0.1.1): no error there.
	[[ "$output" != *"distenv: error: node n1:"* ]]
	nodes_idle
}

@test "the master's name resolving only to loopback fails within seconds (timed)" {
	hosts=/etc/netns/${CLUSTER_NS}1/hosts
	saved=$(cat "$hosts")
	grep -v 'n1$' <<<"$saved" >"$hosts"
	printf '127.0.1.1\tn1\n' >>"$hosts"
	timed timeout 60 srun -N2 --distenv true
	printf '%s\n' "$saved" >"$hosts"
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$elapsed_ms" -lt 15000 ]
	[[ "$output" == *"distenv: error: node n1: master host n1: the name resolves only to the loopback address 127.0.1.1"* ]]
	nodes_idle
}

@test "an interface that exists on one node only: the other node's message names the interfaces it has; where it exists but does not reach the master, that is said" {
	ns2=${CLUSTER_NS}2
	ip netns exec "$ns2" ip link add ens5 type ifb 2>/dev/null ||
		ip netns exec "$ns2" ip link add ens5 type dummy
	ip netns exec "$ns2" ip link set ens5 up
	timed timeout 60 srun -N2 --distenv --distenv-ifname==ens5 true
	ip netns exec "$ns2" ip link del ens5
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$elapsed_ms" -lt 15000 ]
	[[ "$output" == *"distenv: error: node n1: --distenv-ifname: '=ens5' matches no interface of this node (it has: lo, eth1, eth0)"* ]]
	[[ "$output" == *"distenv: error: node n2: --distenv-ifname: you gave --distenv-ifname==ens5, but ens5 does not reach the master $CLUSTER_NET.1 (eth0 does)"* ]]
	nodes_idle
}

@test "an NCCL list whose later interface has an IPv6 link-local address only on one node: a warning there naming it; strict fails the step" {
	ns2=${CLUSTER_NS}2
	ip netns exec "$ns2" ip link add ens5 type ifb 2>/dev/null ||
		ip netns exec "$ns2" ip link add ens5 type dummy
	ip netns exec "$ns2" ip link set ens5 up
	ip netns exec "$ns2" ip -6 addr add fe80::5/64 dev ens5 nodad
	timed timeout 60 env NCCL_SOCKET_IFNAME='=eth0,ens5' srun -N2 --distenv bash -c 'echo "RAN $SLURMD_NODENAME"'
	warned=$output warned_status=$status
	timed timeout 60 env NCCL_SOCKET_IFNAME='=eth0,ens5' srun -N2 --distenv --distenv-check=strict bash -c 'echo "RAN $SLURMD_NODENAME"'
	ip netns exec "$ns2" ip link del ens5
	echo "$warned"
	echo "$output"
	# warn (the default): the step runs on both nodes, n2 says why
	[ "$warned_status" -eq 0 ]
	[ "$(grep -c '^RAN n[12]$' <<<"$warned")" -eq 2 ]
	[[ "$warned" =~ "distenv: warning: node n2: NCCL_SOCKET_IFNAME (exported): you exported NCCL_SOCKET_IFNAME==eth0,ens5, which also selects ens5, and NCCL takes ens5's address fe80::"[0-9a-f:]+", which is IPv6 link-local" ]]
	[[ "$warned" == *"Export NCCL_SOCKET_IFNAME==eth0 (the interfaces of the list that other nodes can reach), or unset it and let distenv derive it"* ]]
	# n1 has no ens5: nothing to say there
	[[ "$warned" != *"warning: node n1"* ]]
	# strict: n2 fails the step within seconds, before any task runs
	[ "$status" -ne 0 ]
	[ "$status" -ne 124 ]
	[ "$elapsed_ms" -lt 15000 ]
	[[ "$output" == *"distenv: error: node n2: NCCL_SOCKET_IFNAME (exported): you exported NCCL_SOCKET_IFNAME==eth0,ens5, which also selects ens5"* ]]
	[[ "$output" != *"RAN n2"* ]]
	nodes_idle
}

@test "plugin 'required' with a broken plugstack argument: jobs without --distenv run, with it they fail with the message" {
	plugstack_with_distenv "colour=blue"
	run srun -N2 bash -c 'echo "RAN $SLURMD_NODENAME ${NNODES:-none}"'
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'RAN n1 none' <<<"$output"
	grep -qx 'RAN n2 none' <<<"$output"
	# a job that did not ask for distenv shows nothing of it (slurmd's
	# log has it from its start)
	[[ "$output" != *distenv* ]]
	run sbatch --wait -o /dev/null --wrap true
	[ "$status" -eq 0 ]
	timed srun -N2 --distenv true
	echo "$output"
	[ "$status" -ne 0 ]
	[ "$(grep -cF "distenv: plugstack.conf argument 'colour=blue': unknown argument. Known arguments are" <<<"$output")" -eq 1 ]
	[[ "$output" == *"distenv: the plugin's configuration is broken; ask your admin, or run without --distenv"* ]]
	[[ "$output" == *"required plugin distenv.so: init_post_opt() failed"* ]]
	run sbatch --distenv --wrap true
	[ "$status" -ne 0 ]
	[[ "$output" == *"the plugin's configuration is broken"* ]]
	nodes_idle
}

@test "plugin 'optional' with a broken plugstack argument: Slurm ignores the plugin's failure, so --distenv jobs run without distenv's variables and print the error" {
	echo "optional $PLUGIN colour=blue" >"$PLUGSTACK"
	run srun -N2 bash -c 'echo "RAN $SLURMD_NODENAME ${NNODES:-none}"'
	[ "$status" -eq 0 ]
	[ "$(grep -c '^RAN n[12] none$' <<<"$output")" -eq 2 ]
	# Measured on 22.05: srun prints the error and goes on; each task
	# prints it again from task_init (-1, ignored for an optional
	# plugin) and runs without NNODES, MASTER_ADDR...
	run srun -N2 --distenv bash -c 'echo "RAN $SLURMD_NODENAME ${NNODES:-none} ${MASTER_ADDR:-none}"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^RAN n[12] none none$' <<<"$output")" -eq 2 ]
	[[ "$output" == *"srun: error: distenv: the plugin's configuration is broken; ask your admin, or run without --distenv"* ]]
	[ "$(grep -c "^distenv: error: plugstack.conf argument 'colour=blue': unknown argument" <<<"$output")" -eq 2 ]
	nodes_idle
}

@test "an unprivileged user's step gets the variables; --distenv-lf-config refuses a root-only file and a symlink to one" {
	if ! id "$TEST_USER" >/dev/null 2>&1; then
		useradd -M -s /bin/bash "$TEST_USER"
		touch "$BATS_FILE_TMPDIR/made-user"
	fi
	cd /tmp || return 1
	run runuser -u "$TEST_USER" -- env SLURM_CONF="$SLURM_CONF" \
		srun -N2 --distenv=tasks bash -c 'echo "U $(id -un) $NODE_RANK $NNODES $MASTER_ADDR $GLOO_SOCKET_IFNAME"; exec /usr/bin/python3 "$0"' "$GLOO"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx "U $TEST_USER 0 2 $CLUSTER_NET.1 eth0" <<<"$output"
	grep -qx "U $TEST_USER 1 2 $CLUSTER_NET.1 eth0" <<<"$output"
	grep -qE "RANK 0/2 node=n[12] result=3 OK" <<<"$output"
	grep -qE "RANK 1/2 node=n[12] result=3 OK" <<<"$output"
	nodes_idle

	secret=$DISTENV_CLUSTER_DIR/root-only.yaml
	printf 'model_name_or_path: SECRET-%s\n' "$RANDOM" >"$secret"
	chmod 600 "$secret"
	userdir=$DISTENV_CLUSTER_DIR/jobs/$TEST_USER
	mkdir -p "$userdir"
	chown "$TEST_USER" "$userdir"
	ln -sf "$secret" "$userdir/link.yaml"
	for cfg in "$secret" "$userdir/link.yaml"; do
		run runuser -u "$TEST_USER" -- env SLURM_CONF="$SLURM_CONF" \
			srun -N1 --distenv --distenv-lf-config="$cfg" true
		echo "$output"
		[ "$status" -ne 0 ]
		[[ "$output" == *"distenv"*"$cfg"* ]]
		# Nothing of the file reached the user.
		[[ "$output" != *SECRET-* ]]
	done
	rm -rf "$secret" "$userdir"
	nodes_idle
}

@test "the resolved copies of a step are removed on every node when the step ends, also for an unprivileged user; a symlink put in their place is left alone" {
	if ! id "$TEST_USER" >/dev/null 2>&1; then
		useradd -M -s /bin/bash "$TEST_USER"
		touch "$BATS_FILE_TMPDIR/made-user"
	fi
	userdir=$DISTENV_CLUSTER_DIR/jobs/$TEST_USER
	mkdir -p "$userdir"
	chown "$TEST_USER" "$userdir"
	printf 'stage: dpo\nfinetuning_type: lora\noutput_dir: %s/out\n' "$userdir" >"$userdir/dpo.yaml"
	chmod 644 "$userdir/dpo.yaml"
	cd "$userdir" || return 1
	for who in root "$TEST_USER"; do
		# shellcheck disable=SC2016 # expanded by the task
		run runuser -u "$who" -- env SLURM_CONF="$SLURM_CONF" srun -N2 --distenv \
			--distenv-lf-config=dpo.yaml bash -c 'd=$(dirname "$DISTENV_LF_CONFIG"); echo "DIR $d $(stat -c %U "$d") $(ls "$d")"'
		echo "$output"
		[ "$status" -eq 0 ]
		[ "$(grep -cE "^DIR /tmp/distenv-$(id -u "$who")-[0-9]+\.0-[01] $who lf_config.yaml$" <<<"$output")" -eq 2 ]
		# shellcheck disable=SC2046 # one path per line, no spaces
		gone_within 10 $(sed -n 's/^DIR \([^ ]*\) .*/\1/p' <<<"$output")
	done
	# A user who swaps the directory for a symbolic link to a root
	# file's directory loses nothing but the link's target stays.
	mkdir -p "$BATS_FILE_TMPDIR/victim"
	echo keep >"$BATS_FILE_TMPDIR/victim/lf_config.yaml"
	run runuser -u "$TEST_USER" -- env SLURM_CONF="$SLURM_CONF" srun -N1 --distenv \
		--distenv-lf-config=dpo.yaml bash -c 'd=$(dirname "$DISTENV_LF_CONFIG"); rm -r "$d"; ln -s '"$BATS_FILE_TMPDIR/victim"' "$d"; echo "DIR $d"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(cat "$BATS_FILE_TMPDIR/victim/lf_config.yaml")" = keep ]
	rm -f "$(sed -n 's/^DIR //p' <<<"$output")"
	cd /tmp
	rm -rf "$userdir"
	nodes_idle
}
