# Helpers of the cluster tests that run the DPO job templates
# (templates.bats: the stand-in launcher of LLaMA-Factory 0.9.1-0.9.2;
# llamafactory.bats: the real LLaMA-Factory 0.9.5; containers.bats: the
# real one in a Charliecloud image). Loaded after helpers.

# shellcheck disable=SC2034 # used by the .bats files that load this
TPL="$TOP/templates"
# The templates source their shared job script from templates/ under the
# directory sbatch runs in; the tests submit from their own.
export DPO_JOB_SCRIPT="$TPL/dpo_job.bash"
LOCAL="$DISTENV_CLUSTER_DIR/node-local"
# the pinned LLaMA-Factory venv (contrib/lfstack/venv.sh; in the release
# chroots, bound in at its own path by tests/releases.sh)
VENV=$("$TOP/contrib/lfstack/venv.sh" --path)

# lf_yaml SRC OUT [@FILE | KEY=VALUE]...: the YAML SRC with those keys
# set, written to OUT (contrib/lfstack/overlay.py)
lf_yaml() {
	/usr/bin/python3 "$TOP/contrib/lfstack/overlay.py" "$@"
}

# test_yaml SRC OUT KEY=VALUE...: the test's settings on top of a template
# YAML: the model in $TINY, the sample data, a learning rate that moves a
# tiny model, 4 steps an epoch (16 pairs, 4 ranks, batch 1), 2 epochs, a
# checkpoint every 4 steps and a process-group timeout of a minute
# instead of LLaMA-Factory's "forever".
test_yaml() {
	local src=$1 out=$2 ds
	shift 2
	ds=$(/usr/bin/python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["deepspeed"])' "$src")
	lf_yaml "$src" "$out" "model_name_or_path=$TINY" "dataset_dir=$TPL/data" \
		"deepspeed=$TPL/${ds#templates/}" learning_rate=0.02 \
		gradient_accumulation_steps=1 logging_steps=1 save_steps=4 \
		num_train_epochs=2.0 ddp_timeout=60 "$@"
}

# template_copy TEMPLATE OUT LINE...: TEMPLATE with the lines of its
# parameter block replaced by LINEs; fails unless every line outside the
# block is the template's (contrib/lfstack/with_params.sh)
template_copy() {
	"$TOP/contrib/lfstack/with_params.sh" "$@"
}

# test_params YAML [LINE...]: template_params, the parameter block of a
# test run: 2 nodes of the namespace cluster, no GPUs, 2 processes per
# node, YAML as --distenv-lf-config, and the extra LINEs.
test_params() {
	local yaml=$1
	shift
	template_params=(
		"#SBATCH --job-name=dpo-test"
		"#SBATCH --nodes=2"
		"#SBATCH --time=5"
		"#SBATCH --distenv-nproc=2"
		"#SBATCH --distenv-lf-config=$yaml"
		"$@"
	)
}

# loss_summary DIR: of the losses in DIR/trainer_log.jsonl, the count,
# whether all are finite, and the first, to 3 places ("4 True 0.693")
loss_summary() {
	/usr/bin/python3 -c '
import json, math, sys
l = [r["loss"] for r in map(json.loads, open(sys.argv[1])) if "loss" in r]
print(len(l), all(math.isfinite(x) for x in l), round(l[0], 3))' "$1/trainer_log.jsonl"
}

# trained STATE OUT: the job's training ran to its end: the job COMPLETED,
# or FAILED only in torch's teardown after the last step, with
# Transformers' train metrics printed and no Python error before them:
# a trainer process aborted in Gloo's teardown ("terminate called without
# an active exception", exit code -6; a joinable thread of Gloo's at
# exit), or, in elastic mode, a torchrun agent lost the c10d rendezvous
# store of the agent that hosts it, which had already exited
# (RendezvousConnectionError). See tests/README.md. Either case is said
# on fd 3, so it shows in the TAP. The abort is looked for in the whole
# output: the job's output file interleaves the nodes, and a rank on
# another node can abort in its teardown before rank 0 has printed the
# metrics.
trained() {
	local state=$1 out=$2 how
	if [ "$state" = COMPLETED ]; then
		return 0
	fi
	if [ "$state" = FAILED ] && how=$(awk '/\*\*\*\*\* train metrics \*\*\*\*\*/ && !m { m = NR }
		!m && /^[A-Za-z_.]*(Error|Exception)(: |$)/ { early = 1 }
		/terminate called without an active exception/ { abort = 1 }
		/failed \(exitcode: -6\)|Signal 6 \(SIGABRT\)/ { sig = 1 }
		m && /RendezvousConnectionError/ { rdzv = 1 }
		END {
			if (!m || early)
				exit 1
			if (abort && sig)
				print "a trainer aborted in Gloo'"'"'s teardown (exit -6)"
			else if (rdzv)
				print "a torchrun agent lost the rendezvous store at exit (RendezvousConnectionError)"
			else
				exit 1
		}' "$out"); then
		echo "# $out: trained to the end, then $how" >&3
		return 0
	fi
	untrained "$state" "$out"
	return 1
}

# untrained STATE OUT: why the job did not train, on fd 3, so that it
# shows just above the failed test's line even where only the start of
# the test's output is kept: the state, whether the train metrics were
# printed, the first lines of an abort, and the last lines that name an
# error, a signal or an exit
untrained() {
	local state=$1 out=$2
	echo "# $out: job $state; train metrics printed: $(grep -c '\*\*\*\*\* train metrics' "$out")" >&3
	# an abort's own words may come long before the tail below
	grep -nE 'terminate called|what\(\):|Fatal Python error' "$out" |
		head -n 4 | cut -c1-300 | sed 's/^/#   /' >&3
	grep -nE 'Error|Exception|terminate called|exitcode|[Ss]ignal|Killed|CANCELLED|srun: error|slurmstepd|error: ' "$out" |
		tail -n 12 | cut -c1-300 | sed 's/^/#   /' >&3
}

# submit SCRIPT [SBATCH-ARGS...]: job id on stdout; output in SCRIPT.out
submit() {
	local script=$1
	shift
	sbatch --parsable -o "$script.out" -e "$script.out" "$@" "$script"
}

# wait_job ID: waits (<= 5 min) until the job's state is final, and
# prints it
wait_job() {
	local id=$1 state
	for _ in $(seq 1 600); do
		state=$(scontrol -o show job "$id" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2)
		case "$state" in
		PENDING | RUNNING | CONFIGURING | COMPLETING | "") sleep 0.5 ;;
		*) break ;;
		esac
	done
	if [ "$state" != COMPLETED ]; then
		job_diagnostics "$id" "$state" >&2
	fi
	echo "$state"
}

# job_diagnostics ID STATE: what Slurm knows of a job that did not
# complete, for the failing test's output (wait_job's caller asserts)
job_diagnostics() {
	local log
	echo "# job $1 ended in state '${2:-unknown}' (or was not seen ending)"
	scontrol -o show job "$1" 2>&1 | tr ' ' '\n' | grep -E '^(JobState|Reason|ExitCode|RunTime|TimeLimit|NodeList|Restarts)=' | sed 's/^/#   /'
	for log in "$DISTENV_CLUSTER_DIR"/log/*.log; do
		[ -f "$log" ] || continue
		grep -E "JobId=$1[ .]|job_id:$1[ ]|StepId=$1[.]|step $1[.]|job $1[ .,:]" "$log" | tail -n 20 | sed "s|^|# ${log##*/}: |"
	done
}

# wait_line FILE REGEX JOBID: until a line of FILE matches (<= 4 min);
# fails at once when the job ends first
wait_line() {
	local state
	for _ in $(seq 1 480); do
		if grep -qE "$2" "$1" 2>/dev/null; then
			return 0
		fi
		state=$(scontrol -o show job "$3" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2)
		case "$state" in
		PENDING | RUNNING | CONFIGURING | COMPLETING | REQUEUE* | "") ;;
		*)
			echo "job $3 ended ($state) before /$2/ in $1" >&2
			cat "$1" >&2
			return 1
			;;
		esac
		sleep 0.5
	done
	echo "timed out waiting for /$2/ in $1" >&2
	return 1
}

# cancel_paused ID OUT STEP: once every rank of job ID wrote "paused
# after checkpoint-STEP" to OUT (4 ranks; the pause hook of the stand-in
# and of the real stack's probe prints one line a rank, after the save),
# cancels the job as a user does and checks that it ended CANCELLED
cancel_paused() {
	local id=$1 out=$2 state
	wait_line "$out" "paused after checkpoint-$3" "$id"
	for _ in $(seq 1 20); do
		if [ "$(grep -c "paused after checkpoint-$3" "$out")" -eq 4 ]; then
			break
		fi
		sleep 0.5
	done
	scancel "$id"
	state=$(wait_job "$id")
	cat "$out"
	[ "$state" = CANCELLED ]
}

# resubmit SCRIPT: SCRIPT submitted again as it is, once the nodes are
# done with the job before (the partition oversubscribes, so the new one
# could start beside that one's end); prints the new job's final state
resubmit() {
	local id
	nodes_idle 2>/dev/null || return 1
	id=$(submit "$1") || return 1
	wait_job "$id"
}

# node_files DIR: "<node> <path>" for every file under DIR on each node
node_files() {
	# shellcheck disable=SC2016 # expanded on the node
	srun -N2 --ntasks-per-node=1 bash -c 'cd "$1" 2>/dev/null && find . -type f | sed "s|^\./|$(hostname) |"' sh "$1" | sort
}

# job_field ID FIELD: FIELD of scontrol show job ID
job_field() {
	scontrol -o show job "$1" 2>/dev/null | grep -oE "(^| )$2=[^ ]*" | cut -d= -f2
}

# wait_state ID REGEX [OUT]: until the job's state matches (<= 2 min);
# when it does not, what Slurm knows of the job and the end of its
# output file OUT, since the test stops here
wait_state() {
	local s
	for _ in $(seq 1 240); do
		s=$(job_field "$1" JobState)
		if [[ $s =~ ^($2)$ ]]; then
			return 0
		fi
		sleep 0.5
	done
	echo "job $1: state $s, wanted $2" >&2
	job_diagnostics "$1" "$s" >&2
	if [ -n "${3:-}" ]; then
		echo "# the end of $3:" >&2
		tail -n 40 "$3" >&2
	fi
	return 1
}

# wait_requeued ID: the requeued job is pending again; start it now
# instead of at its BeginTime: Slurm 22.05 gives a requeued job one about
# two minutes ahead (the credential lifetime, cred_expire, 120 s), so that
# the old steps' credentials expire first
wait_requeued() {
	wait_state "$1" PENDING
	job_field "$1" Reason >&2
	scontrol update JobId="$1" StartTime=now
}

