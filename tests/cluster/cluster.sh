#!/usr/bin/env bash
# cluster.sh - a throw-away multi-node Slurm cluster on one machine, one
# network namespace (plus UTS namespace) per compute node.
#
#   cluster.sh start [-n NODES] [--plugstack FILE] [--resv-ports] [--node-local DIR] [--backfill] [--interactive-step] [--task-affinity]
#   cluster.sh stop
#   cluster.sh status
#
# Everything lives under $DISTENV_CLUSTER_DIR (default /tmp/distenv-cluster).
# `start` writes $DISTENV_CLUSTER_DIR/env.sh (export SLURM_CONF=...) and
# prints the same exports on stdout; all progress goes to stderr, so
# `eval "$(cluster.sh start)"` works.
#
# Topology (see README.md):
#   root ns : bridge dvbr0 10.77.0.254/24, slurmctld, private munged
#   dvn<i>  : hostname n<i>; eth1 10.99.<i>.1/24 (reaches nothing, ifindex
#             before eth0), eth0 10.77.0.<i>/24 (veth to dvbr0), slurmd;
#             /etc/hosts maps n<i> to 127.0.1.1 first (Debian style).
#   --node-local DIR: every slurmd (and so every job step on that node)
#             sees its own private tmpfs at DIR, like a node-local disk;
#             the root namespace and the other nodes see their own DIR.
#   --backfill: SchedulerType=sched/backfill (Slurm's default) instead of
#             sched/builtin; slurmctld refuses heterogeneous jobs without
#             it (its log: "rejected as sched/backfill is not configured";
#             salloc/sbatch: "Requested operation not supported"), and
#             only the backfill cycle starts them: bf_interval=1 (default
#             30 s) keeps the tests fast.
#   --interactive-step: LaunchParameters=use_interactive_step: salloc
#             without a command starts its shell as a step on the first
#             node instead of on the submit host.
#   --task-affinity: TaskPlugin=task/affinity, so that steps' tasks are
#             really bound to CPUs (sched_setaffinity), and each node
#             declares this machine's online CPUs (nproc) instead of 4:
#             task/affinity binds to the node's CPU ids, and a CPU the
#             machine lacks cannot be bound.
#
# DISTENV_CLUSTER_SLURMD_PRELOAD="LIB ...": LD_PRELOAD for the slurmds
#             only (and so their slurmstepds), e.g. the ASan runtime for
#             tests/sanitize_cluster.sh; munged and slurmctld never get it.
#
# Must run as root.  Needs: iproute2, util-linux (unshare, setsid, setpriv),
# slurmctld, slurmd, munged (Slurm 22.05 as packaged by Debian 12).

set -euo pipefail

PROG=${0##*/}
DIR=${DISTENV_CLUSTER_DIR:-/tmp/distenv-cluster}
# A second cluster can run beside the first (e.g. a packaging test while
# the main suite runs) with its own names, network, controller port and
# DISTENV_CLUSTER_DIR.
BRIDGE=${DISTENV_CLUSTER_BRIDGE:-dvbr0}
NET=${DISTENV_CLUSTER_NET:-10.77.0}
CTL_ADDR=$NET.254
NS_PREFIX=${DISTENV_CLUSTER_NS:-dvn}
VETH_PREFIX=${DISTENV_CLUSTER_VETH:-dvv}
CTLD_PORT=${DISTENV_CLUSTER_CTLD_PORT:-6817}
START_TIMEOUT=${DISTENV_CLUSTER_TIMEOUT:-60}

CREATED=$DIR/created.list # resources we made, one per line, in order
PIDS=$DIR/pids            # <what>.pid files for every daemon we started
CONF_DIR=$DIR/etc
CONF=$CONF_DIR/slurm.conf
LOG_DIR=$DIR/log
MUNGE_DIR=$DIR/munge
MUNGE_SOCKET=$MUNGE_DIR/munge.socket

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
	cat >&2 <<EOF
usage: $PROG start [-n NODES] [--plugstack FILE] [--resv-ports] [--node-local DIR] [--backfill] [--interactive-step] [--task-affinity]
       $PROG stop
       $PROG status
NODES is 2..4 (default 2).  Run dir: \$DISTENV_CLUSTER_DIR (now $DIR).
EOF
	exit 2
}

# ---------------------------------------------------------------------------
# bookkeeping

# record KIND NAME: remember a resource *before* creating it, so that a
# start that dies half-way still gets it cleaned up.
record() { printf '%s %s\n' "$1" "$2" >>"$CREATED"; }

# pid_alive PIDFILE COMM: true if the pid in PIDFILE runs a process called COMM
# (guards against killing a recycled pid).
pid_of() {
	local f=$1 comm=$2 pid
	[[ -s $f ]] || return 1
	pid=$(<"$f")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/comm ]] || return 1
	# Debian installs the daemons as COMM-wlm behind COMM; a daemon that
	# re-executes itself (slurmctld on `scontrol reconfigure`, from 23.11
	# on) does so by its real name
	[[ $(<"/proc/$pid/comm") == "$comm" || $(<"/proc/$pid/comm") == "$comm-wlm" ]] || return 1
	printf '%s\n' "$pid"
}

KILLED=() # every pid kill_pids signalled

# kill_pids SECONDS PID...: SIGTERM, wait up to SECONDS, then SIGKILL.
kill_pids() {
	local wait=$1 p left i
	shift
	[[ $# -gt 0 ]] || return 0
	KILLED+=("$@")
	kill -TERM "$@" 2>/dev/null || true
	for ((i = 0; i < wait * 10; i++)); do
		left=()
		for p in "$@"; do
			if [[ -d /proc/$p ]] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; then
				left+=("$p")
			fi
		done
		[[ ${#left[@]} -gt 0 ]] || break
		sleep 0.1
	done
	# dead (a zombie waiting for init to reap it counts as dead)
	[[ ${#left[@]} -gt 0 ]] || return 0
	log "SIGKILL ${left[*]}"
	kill -KILL "${left[@]}" 2>/dev/null || true
	sleep 0.2
}

# children_of PID: direct children (e.g. slurmctld's slurmscriptd)
children_of() {
	ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' ' || true
}

# spawn COMM PIDFILE LOGFILE CMD...: run CMD (which must exec into a
# foreground daemon called COMM) detached in its own session, record its pid.
spawn() {
	local comm=$1 pidfile=$2 logfile=$3 pid fd
	shift 3
	(
		# do not hold our caller's pipes open (bats waits for fd 3)
		for fd in "/proc/$BASHPID/fd/"*; do
			fd=${fd##*/}
			if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
		done
		# written by the child itself before exec: no window in which a
		# killed `start` leaves a daemon without a pid file
		printf '%s\n' "$BASHPID" >"$pidfile"
		exec setsid "$@" </dev/null >>"$logfile" 2>&1
	) &
	pid=$!
	# setsid/ip netns exec/unshare/sh all exec, so $! becomes the daemon
	for _ in $(seq 50); do
		[[ -r /proc/$pid/comm && $(<"/proc/$pid/comm") == "$comm" ]] && return 0
		[[ -d /proc/$pid ]] || break
		sleep 0.1
	done
	log "$comm did not start (pid $pid); $logfile:"
	tail -n 30 "$logfile" >&2 || true
	return 1
}

# ---------------------------------------------------------------------------
# stop

# stop_daemon PIDFILE COMM: stop the daemon PIDFILE names, if it runs
# COMM, and any child that outlives it (normally none)
stop_daemon() {
	local p c pids
	p=$(pid_of "$1" "$2") || return 0
	mapfile -t pids < <(children_of "$p")
	log "stopping $2 $p"
	kill_pids 10 "$p"
	for c in "${pids[@]}"; do
		[[ -d /proc/$c ]] && kill_pids 5 "$c"
	done
	return 0
}

# node_hosts_file FILE I: FILE is the hosts file start writes for node I
# of this cluster (it maps the node's address to nI)
node_hosts_file() {
	[[ -f $1 ]] && grep -qFx "$(printf '%s.%s\tn%s' "$NET" "$2" "$2")" "$1"
}

# stop_orphans: what a cluster of these names left behind when its list
# of what it made ($CREATED) went missing, e.g. with a chroot removed after
# its run was killed. Links and namespaces live in the kernel, not in
# $DIR, and outlive it: the next start would refuse their names. Each is
# taken for this cluster's only by its name and what start gave it (the
# daemons' command lines name $DIR, the bridge holds $CTL_ADDR, a node's
# namespace has eth0 on $NET.<i> or eth1 on 10.99.<i>.1 or the hosts file
# that maps n<i> to $NET.<i>), so a link of the same name that start did
# not make stays, and start names it.
stop_orphans() {
	local p pids=() ns i err found=()
	for p in /proc/[0-9]*; do
		case $(cat "$p/comm" 2>/dev/null) in slurmctld* | slurmd* | munged*) ;; *) continue ;; esac
		tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$DIR/" && pids+=("${p#/proc/}")
	done
	if ((${#pids[@]} > 0)); then
		found+=("daemons ${pids[*]}")
		kill_pids 5 "${pids[@]}"
	fi
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' | grep -x "${NS_PREFIX}[0-9]\+"); do
		i=${ns#"$NS_PREFIX"}
		# this cluster's node: its addresses (eth0 goes with its veth;
		# eth1 stays while the namespace does), or the hosts file start
		# wrote for it (a whole run once saw neither address matched
		# on a node whose hosts file did)
		if ! ip -n "$ns" -4 -o addr show 2>/dev/null |
			grep -qE " eth0 +inet ${NET//./\\.}\.$i/24 | eth1 +inet 10\.99\.$i\.1/24 " &&
			! node_hosts_file "/etc/netns/$ns/hosts" "$i"; then
			log "left netns $ns: neither its addresses nor /etc/netns/$ns/hosts are this cluster's node $i's"
			continue
		fi
		mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null || true)
		kill_pids 3 "${pids[@]}"
		if err=$(ip netns del "$ns" 2>&1); then
			found+=("netns $ns")
		else
			log "cannot delete netns $ns: $err"
		fi
	done
	# a node's veth whose namespace this root cannot name (another
	# chroot's /run held it): deleting this end deletes the pair
	for p in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{ print $2 }' | sed 's/@.*//' | grep -x "${VETH_PREFIX}[0-9]\+"); do
		ip link del "$p" 2>/dev/null && found+=("link $p")
	done
	if ip -4 -o addr show dev "$BRIDGE" 2>/dev/null | grep -qF " $CTL_ADDR/24 "; then
		ip link del "$BRIDGE" 2>/dev/null && found+=("bridge $BRIDGE")
	fi
	for p in /etc/netns/"$NS_PREFIX"*; do
		i=${p##*/"$NS_PREFIX"}
		[[ $i =~ ^[0-9]+$ ]] || continue
		node_hosts_file "$p/hosts" "$i" || continue
		rm -rf -- "$p" && found+=("$p")
	done
	if ((${#found[@]} > 0)); then
		log "no record of a cluster in $DIR; removed what one of these names left: ${found[*]}"
	else
		log "nothing to stop (no record in $DIR)"
	fi
}

do_stop() {
	local f p kind name pids=()
	[[ -s $CREATED ]] || stop_orphans
	[[ -d $DIR ]] || {
		wait_reaped
		return 0
	}

	# 1. slurmd daemons
	for f in "$PIDS"/slurmd-*.pid; do
		[[ -e $f ]] || continue
		p=$(pid_of "$f" slurmd) && pids+=("$p")
	done
	((${#pids[@]} == 0)) || log "stopping slurmd ${pids[*]}"
	kill_pids 10 "${pids[@]}"

	# 2. anything still inside our namespaces (slurmstepd, job tasks):
	#    only pids whose network namespace is one we created.
	pids=()
	if [[ -s $CREATED ]]; then
		while read -r kind name; do
			[[ $kind == ns ]] || continue
			ip netns list 2>/dev/null | grep -qx "$name\( .*\)\?" || continue
			mapfile -t -O "${#pids[@]}" pids < <(ip netns pids "$name" 2>/dev/null || true)
		done <"$CREATED"
	fi
	if ((${#pids[@]} > 0)); then
		log "killing leftover processes in our namespaces: ${pids[*]}"
		kill_pids 3 "${pids[@]}"
	fi

	# 3. slurmctld, 4. munged (only ours: we never touch a system munged).
	# The pid in its SlurmctldPidFile too, should slurmctld have moved.
	stop_daemon "$DIR/run/slurmctld.pid" slurmctld
	stop_daemon "$PIDS/slurmctld.pid" slurmctld
	stop_daemon "$PIDS/munged.pid" munged
	rm -f "$PIDS"/*.pid

	# 5. network/filesystem resources, newest first
	if [[ -s $CREATED ]]; then
		while read -r kind name; do
			case $kind in
			ns) ip netns del "$name" 2>/dev/null || true ;;
			link) ip link del "$name" 2>/dev/null || true ;;
			etcdir) rm -rf -- "$name" ;;
			emptydir) rmdir -- "$name" 2>/dev/null || true ;;
			*) log "unknown resource '$kind $name'" ;;
			esac
		done < <(tac "$CREATED")
		log "removed $(wc -l <"$CREATED") network/filesystem resources"
	fi
	rm -f "$CREATED" "$DIR/env.sh"
	wait_reaped
}

# wait_reaped: the daemons' parent is PID 1, which reaps zombies lazily
# (~1-2 s here). Wait (bounded) so that `pgrep slurmd` right after stop
# is empty.
wait_reaped() {
	local i p left
	for ((i = 0; i < 50; i++)); do
		left=0
		for p in "${KILLED[@]}"; do [[ -d /proc/$p ]] && left=1 && break; done
		((left)) || break
		sleep 0.1
	done
	return 0
}

# ---------------------------------------------------------------------------
# status

do_status() {
	local f n ok=0 p
	if [[ ! -s $CREATED ]]; then
		echo "not running ($DIR)"
		return 1
	fi
	for f in "$PIDS"/*.pid; do
		[[ -e $f ]] || continue
		n=${f##*/}
		n=${n%.pid}
		if p=$(pid_of "$f" "${n%%-*}"); then
			echo "$n: running (pid $p)"
		else
			echo "$n: NOT running"
			ok=1
		fi
	done
	echo "namespaces: $(ip netns list 2>/dev/null | awk -v p="^$NS_PREFIX" '$1 ~ p {printf "%s ", $1}')"
	if [[ -r $CONF ]]; then
		SLURM_CONF=$CONF sinfo -N -o '%N %T %c %O' 2>&1 || ok=1
	fi
	return "$ok"
}

# ---------------------------------------------------------------------------
# start

dump_logs() {
	local f
	for f in "$LOG_DIR"/*.log "$LOG_DIR"/*.out "$MUNGE_DIR"/munged.log; do
		[[ -s $f ]] || continue
		printf '==== %s (last 25 lines)\n' "$f" >&2
		tail -n 25 "$f" >&2
	done
}

on_start_exit() {
	local rc=$?
	trap - EXIT INT TERM
	if ((rc != 0)); then
		log "start FAILED (rc=$rc); logs:"
		dump_logs
		log "cleaning up"
		do_stop || true
	fi
	exit "$rc"
}

write_conf() {
	local nodes=$1 resv=$2 ctl_host=$3 sched=$4 interactive=$5 affinity=$6 i
	local cpus=4 task=task/none
	if [[ $affinity == 1 ]]; then
		cpus=$(nproc --all)
		task=task/affinity
	fi
	{
		cat <<EOF
# generated by $PROG start; do not edit (regenerated on every start)
ClusterName=distenv
SlurmctldHost=$ctl_host($CTL_ADDR)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=6818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdSpoolDir=$DIR/spool/%n
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmdLogFile=$LOG_DIR/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
PlugStackConfig=$DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=$task
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/$sched
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
TCPTimeout=5
BatchStartTimeout=20
InactiveLimit=0
KillWait=5
MinJobAge=120
Waittime=0
UnkillableStepTimeout=60
EOF
		if [[ $resv == 1 ]]; then
			echo "MpiParams=ports=21000-21999"
		fi
		if [[ $sched == backfill ]]; then
			echo "SchedulerParameters=bf_interval=1"
		fi
		if [[ $interactive == 1 ]]; then
			echo "LaunchParameters=use_interactive_step"
		fi
		for ((i = 1; i <= nodes; i++)); do
			echo "NodeName=n$i NodeAddr=$NET.$i NodeHostname=n$i CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=1024 State=UNKNOWN"
		done
		echo "PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8"
	} >"$CONF"
	# Without cgroup.conf slurmd autodetects the cgroup version and dies:
	# "No filesystem mounted on /sys/fs/cgroup" (ip netns exec remounts /sys).
	# cgroup/v1 loads fine and linuxproc/task none never use it.
	# (CgroupAutomount, "no" by default, is defunct from 24.11 on.)
	cat >"$CONF_DIR/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
EOF
	chmod 0644 "$CONF" "$CONF_DIR/cgroup.conf"
}

start_munged() {
	local key=/etc/munge/munge.key
	install -d -m 0755 -o munge -g munge "$MUNGE_DIR"
	if [[ ! -s $key ]]; then
		key=$MUNGE_DIR/munge.key
		log "no /etc/munge/munge.key; creating a private key $key"
		mungekey --create --keyfile="$key" 2>/dev/null ||
			dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
		chown munge:munge "$key"
		chmod 0600 "$key"
	fi
	log "starting private munged (socket $MUNGE_SOCKET)"
	spawn munged "$PIDS/munged.pid" "$LOG_DIR/munged.out" \
		setpriv --reuid=munge --regid=munge --init-groups \
		munged --foreground --socket="$MUNGE_SOCKET" --key-file="$key" \
		--pid-file="$MUNGE_DIR/munged.pid" --log-file="$MUNGE_DIR/munged.log" \
		--seed-file="$MUNGE_DIR/munged.seed"
	for _ in $(seq 50); do
		[[ -S $MUNGE_SOCKET ]] && return 0
		sleep 0.1
	done
	die "munged socket $MUNGE_SOCKET did not appear"
}

setup_node_net() {
	local i=$1 nodes=$2 ctl_host=$3 ns=$NS_PREFIX$1 j
	record ns "$ns"
	ip netns add "$ns"
	# eth1 first, so it gets the lower ifindex and comes first in getifaddrs()
	# (like a real node whose first NIC is not the one other nodes can reach).
	# Prefer a dummy; this kernel may lack it, ifb behaves the same for us.
	ip -n "$ns" link add eth1 type dummy 2>/dev/null ||
		ip -n "$ns" link add eth1 type ifb
	record link "$VETH_PREFIX$i"
	ip link add "$VETH_PREFIX$i" type veth peer name eth0 netns "$ns"
	ip link set "$VETH_PREFIX$i" master "$BRIDGE"
	ip link set "$VETH_PREFIX$i" up
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "10.99.$i.1/24" dev eth1
	ip -n "$ns" link set eth1 up
	ip -n "$ns" addr add "$NET.$i/24" dev eth0
	ip -n "$ns" link set eth0 up

	record etcdir "/etc/netns/$ns"
	mkdir -p "/etc/netns/$ns"
	{
		printf '127.0.0.1\tlocalhost\n'
		printf '127.0.1.1\tn%s\n' "$i"
		for ((j = 1; j <= nodes; j++)); do
			printf '%s.%s\tn%s\n' "$NET" "$j" "$j"
		done
		printf '%s\t%s\n' "$CTL_ADDR" "$ctl_host"
		printf '::1\tlocalhost ip6-localhost ip6-loopback\n'
	} >"/etc/netns/$ns/hosts"
	printf 'n%s\n' "$i" >"/etc/netns/$ns/hostname"
	chmod 0644 "/etc/netns/$ns/hosts" "/etc/netns/$ns/hostname"
}

do_start() {
	local nodes=2 plugstack="" resv=0 i ctl_host t0 deadline idle local_dir=""
	local sched=builtin interactive=0 affinity=0

	while (($# > 0)); do
		case $1 in
		-n | --nodes)
			[[ $# -ge 2 ]] || usage
			nodes=$2
			shift 2
			;;
		--plugstack)
			[[ $# -ge 2 ]] || usage
			plugstack=$2
			shift 2
			;;
		--resv-ports)
			resv=1
			shift
			;;
		--node-local)
			[[ $# -ge 2 ]] || usage
			local_dir=$2
			shift 2
			;;
		--backfill)
			sched=backfill
			shift
			;;
		--interactive-step)
			interactive=1
			shift
			;;
		--task-affinity)
			affinity=1
			shift
			;;
		*) usage ;;
		esac
	done
	[[ $nodes =~ ^[2-4]$ ]] || die "NODES must be 2..4 (got '$nodes')"
	[[ -z $plugstack || -r $plugstack ]] || die "cannot read plugstack file '$plugstack'"
	[[ -z $local_dir || $local_dir == /* ]] || die "--node-local needs an absolute path (got '$local_dir')"
	[[ $(id -u) -eq 0 ]] || die "must run as root"
	[[ ! -s $CREATED ]] || die "$DIR holds a cluster (or leftovers of one): run '$PROG stop' first"
	# refuse to clobber things that are not ours
	local taken="'$PROG stop' removes it when a cluster of these names made it; if not, give this cluster other names (DISTENV_CLUSTER_BRIDGE, _NS, _VETH, _NET, _DIR)"
	! ip link show "$BRIDGE" >/dev/null 2>&1 || die "link $BRIDGE already exists: $taken"
	for ((i = 1; i <= nodes; i++)); do
		! ip netns list | grep -q "^$NS_PREFIX$i\b" || die "netns $NS_PREFIX$i already exists: $taken"
		! ip link show "$VETH_PREFIX$i" >/dev/null 2>&1 || die "link $VETH_PREFIX$i already exists: $taken"
		[[ ! -e /etc/netns/$NS_PREFIX$i ]] || die "/etc/netns/$NS_PREFIX$i already exists: $taken"
	done
	# unix socket paths (munge, slurmstepd) must fit in sun_path (108 bytes)
	((${#DIR} <= 60)) || die "DISTENV_CLUSTER_DIR too long (${#DIR} > 60 chars)"

	t0=$(date +%s%N)
	trap on_start_exit EXIT
	trap 'exit 130' INT TERM

	# fresh run dir (only our own sub-directories; keep nothing from before)
	mkdir -p "$DIR"
	chmod 0755 "$DIR"
	# munged runs as user munge and keeps its socket under $DIR; job users
	# need the same access.  A mktemp -d parent (mode 0700) breaks that.
	setpriv --reuid=munge --regid=munge --clear-groups test -x "$DIR" ||
		die "$DIR is not reachable by user munge: make its parent directories world-searchable (o+x), e.g. use a dir under /tmp"
	rm -rf -- "$CONF_DIR" "$LOG_DIR" "$MUNGE_DIR" "$PIDS" "$DIR/run" \
		"$DIR/state" "$DIR/spool" "$DIR/env.sh"
	: >"$CREATED"
	mkdir -p "$CONF_DIR" "$LOG_DIR" "$PIDS" "$DIR/run" "$DIR/state"
	install -d -m 1777 "$DIR/jobs" # job output, usable by any user
	for ((i = 1; i <= nodes; i++)); do mkdir -p "$DIR/spool/n$i"; done

	ctl_host=$(hostname -s)
	[[ ! $ctl_host =~ ^n[0-9]+$ ]] || die "this machine's hostname '$ctl_host' clashes with the node names"
	write_conf "$nodes" "$resv" "$ctl_host" "$sched" "$interactive" "$affinity"
	if [[ -n $plugstack ]]; then
		cp -- "$plugstack" "$DIR/plugstack.conf"
	else
		: >"$DIR/plugstack.conf"
	fi
	chmod 0644 "$DIR/plugstack.conf"

	start_munged

	# network
	log "creating bridge $BRIDGE and $nodes node namespaces"
	if [[ ! -d /etc/netns ]]; then
		record emptydir /etc/netns
		mkdir -p /etc/netns
	fi
	record link "$BRIDGE"
	ip link add "$BRIDGE" type bridge
	ip addr add "$CTL_ADDR/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up
	for ((i = 1; i <= nodes; i++)); do
		setup_node_net "$i" "$nodes" "$ctl_host"
	done

	# controller (root namespace)
	log "starting slurmctld"
	spawn slurmctld "$PIDS/slurmctld.pid" "$LOG_DIR/slurmctld.out" \
		slurmctld -D -i -f "$CONF"
	deadline=$(($(date +%s) + START_TIMEOUT))
	until SLURM_CONF=$CONF scontrol ping 2>/dev/null | grep -q 'is UP'; do
		(($(date +%s) < deadline)) || die "slurmctld not answering after ${START_TIMEOUT}s"
		[[ -n $(pid_of "$PIDS/slurmctld.pid" slurmctld) ]] || die "slurmctld died"
		sleep 0.3
	done

	# compute nodes: own netns (ip netns exec also bind-mounts
	# /etc/netns/<ns>/hosts over /etc/hosts) and own UTS namespace.
	# ip netns exec also gives each node its own mount namespace, with /
	# made a recursive slave (iproute2 netns_switch), so a tmpfs mounted
	# there is seen by that slurmd and its jobs only: a node-local disk.
	if [[ -n $local_dir && ! -d $local_dir ]]; then
		record emptydir "$local_dir"
		mkdir -p "$local_dir"
	fi
	for ((i = 1; i <= nodes; i++)); do
		log "starting slurmd n$i in $NS_PREFIX$i${local_dir:+ (node-local tmpfs at $local_dir)}"
		# shellcheck disable=SC2016 # $1/$2/$3 are expanded by that sh
		spawn slurmd "$PIDS/slurmd-n$i.pid" "$LOG_DIR/slurmd-n$i.out" \
			ip netns exec "$NS_PREFIX$i" unshare --uts \
			sh -c 'if [ -n "$3" ]; then mount -t tmpfs -o size=64m,mode=1777 "node-local-$1" "$3" || exit 1; fi
				hostname "$1" || exit 1
				if [ -n "$4" ]; then export LD_PRELOAD="$4"; fi
				exec slurmd -D -f "$2" -N "$1"' sh "n$i" "$CONF" "$local_dir" "${DISTENV_CLUSTER_SLURMD_PRELOAD:-}"
	done

	log "waiting (<= ${START_TIMEOUT}s) for $nodes idle nodes"
	while :; do
		idle=$(SLURM_CONF=$CONF sinfo -h -N -t idle -o '%N' 2>/dev/null | sort -u | wc -l)
		((idle == nodes)) && break
		for ((i = 1; i <= nodes; i++)); do
			[[ -n $(pid_of "$PIDS/slurmd-n$i.pid" slurmd) ]] || die "slurmd n$i died"
		done
		if (($(date +%s) >= deadline)); then
			SLURM_CONF=$CONF sinfo -N >&2 || true
			die "only $idle of $nodes nodes idle after ${START_TIMEOUT}s"
		fi
		sleep 0.3
	done

	cat >"$DIR/env.sh" <<EOF
export DISTENV_CLUSTER_DIR=$DIR
export SLURM_CONF=$CONF
EOF
	chmod 0644 "$DIR/env.sh"
	trap - EXIT INT TERM
	t0=$((($(date +%s%N) - t0) / 1000000))
	log "cluster up: $nodes nodes in $((t0 / 1000)).$((t0 % 1000 / 100))s; source $DIR/env.sh"
	cat "$DIR/env.sh"
}

# ---------------------------------------------------------------------------

cmd=${1:-}
[[ -n $cmd ]] || usage
shift
case $cmd in
start) do_start "$@" ;;
stop)
	[[ $(id -u) -eq 0 ]] || die "must run as root"
	do_stop
	;;
status) do_status ;;
-h | --help | help) usage ;;
*) usage ;;
esac
