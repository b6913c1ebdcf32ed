#!/bin/bash
# dpo_job.bash: what every DPO template does after its parameter block,
# once (templates/README.md, "What a template does"). A template sources
# it and calls dpo_job_start "$0", then dpo_job_train; the lines of the
# template's own (the offload template's allocator setting) go between.
#
# dpo_job_start SCRIPT: the start line; the USR1 trap of long runs (a save
# under way may finish, then the job requeues itself); the check of the
# --signal lead against the time limit and the data check, which read
# SCRIPT's #SBATCH lines (Slurm shows neither option to the job); the
# storage marks; on a restart, the checkpoint every node resumes from.
# dpo_job_train: the training step, in the background so that the trap
# runs at once, then the report of its first steps, and the script's exit
# status from them. A container template sets, before it, the arrays
# dpo_srun_opts (srun options of the training step: pyxis's
# --container-*) and dpo_exec (the words that run the training command:
# apptainer exec ..., distenv check-env --); only the training step runs
# in the container.
#
# Knobs, from the environment of sbatch: DPO_MAX_RESTARTS, DPO_SAVE_GRACE,
# DPO_DATA_CHECK, DPO_MAX_PROMPT_TOKENS, DPO_OFFPOLICY_PAIRS, DPO_PYTHON,
# DPO_FRESH_START.

# The folder of this file: the data check beside it is found from any
# working directory.
DPO_JOB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Long runs (templates/README.md "Requeue and resume"): Slurm sends USR1 to
# the batch script --signal's seconds before the time limit; the trap lets
# a save that is under way finish (up to DPO_SAVE_GRACE seconds:
# the templates save every save_steps, not at the warning, so the steps
# since the last save are done again; Transformers' save on SIGTERM,
# enable_jit_checkpoint, saves ranks uncoordinated and, under DeepSpeed,
# a step ahead of its name: templates/README.md, "Why not
# enable_jit_checkpoint"), then requeues the job. The requeued
# start resumes from the newest checkpoint every node holds complete.
# DPO_MAX_RESTARTS caps the requeues.
# shellcheck disable=SC2317,SC2329 # run by the trap (SC2329: newer shellcheck)
dpo_on_warning() {
	if ((restarts >= max_restarts)); then
		echo "dpo: time limit near, restart cap reached ($restarts of $max_restarts restarts): not requeued; training goes on until the time limit ends the job. Resubmit to continue from the newest checkpoint." >&2
		# 0: a bare return gives the interrupted wait's status, and
		# under set -e a failing trap ends the script and the job
		return 0
	fi
	# Only a training step that still runs needs the next start.
	if [ -z "$step" ] || ! kill -0 "$step" 2>/dev/null; then
		echo "dpo: time limit near (USR1), but the training step is not running: not requeued"
		return 0
	fi
	echo "dpo: time limit near (USR1): waiting up to ${save_grace}s for a save under way, then requeue"
	for ((i = 0; i < save_grace; i++)); do
		kill -0 "$step" 2>/dev/null || break
		sleep 1
	done
	if ! kill -0 "$step" 2>/dev/null; then
		echo "dpo: the training step ended before the time limit: not requeued"
		return 0
	fi
	echo "dpo: requeueing job ${SLURM_JOB_ID} (restart $((restarts + 1)) of at most $max_restarts)"
	scontrol requeue "$SLURM_JOB_ID" ||
		echo "dpo: scontrol requeue failed: not requeued (is JobRequeue=0 or --no-requeue set?)" >&2
	return 0
}

# The warning must come while training runs: a --signal lead as long as
# the time limit sends USR1 at the start. Slurm shows neither to the job,
# so the lead is read from the script's #SBATCH lines (an sbatch --signal
# on the command line is not seen) and the limit from squeue's %l
# ([D-]H:MM:SS, M:SS or UNLIMITED).
dpo_seconds_of() {
	local t=$1 d=0 a b c
	if [[ $t == *-* ]]; then d=${t%%-*} t=${t#*-}; fi
	IFS=: read -r a b c <<<"$t"
	if [ -n "$c" ]; then echo $(((10#$d * 24 + 10#$a) * 3600 + 10#$b * 60 + 10#$c))
	elif [ -n "$b" ]; then echo $((10#$d * 86400 + 10#$a * 60 + 10#$b))
	else echo $((10#$d * 86400 + 10#$a * 60)); fi
}

dpo_check_signal_lead() {
	local script=$1 signal limit lead
	signal=$(sed -n 's/^#SBATCH.*--signal=\([^ ]*\).*/\1/p' "$script" | tail -n 1)
	limit=$(squeue -h -j "$SLURM_JOB_ID" -o %l 2>/dev/null || true)
	if [ -n "$signal" ] && [[ $limit =~ ^[0-9:-]+$ ]]; then
		lead=60
		[[ $signal == *@* ]] && lead=${signal##*@}
		if [[ $lead =~ ^[0-9]+$ ]] && ((lead >= $(dpo_seconds_of "$limit"))); then
			echo "dpo: warning: --signal=$signal sends USR1 ${lead}s before the time limit, but the time limit is $limit: the warning comes at the start, not before the end. Give --signal a lead below the time limit (a tenth of it, for example), or a longer --time." >&2
		fi
	fi
}

# Token lengths of the data (templates/README.md "Data lengths"), on the
# first start: pairs over cutoff_len are cut by LLaMA-Factory, and long
# prompts or answers run out of GPU memory, or of host memory at a save.
# DPO_DATA_CHECK=warn (default) goes on after a report; strict stops the
# job when a pair is over or the check cannot run; off skips it.
# DPO_MAX_PROMPT_TOKENS: the longest prompt the memory plan allows.
# DPO_OFFPOLICY_PAIRS=N (unset: not run): also measure N pairs under the
# starting model, loaded on this node's GPUs, against its own samples
# (check_dpo_offpolicy.py; templates/README.md "DPO pairs that work").
# DPO_PYTHON: the Python that runs LLaMA-Factory (default python3).
dpo_check_data() {
	local script=$1 lf_config
	case ${DPO_DATA_CHECK:=warn} in
	warn | strict | off) ;;
	*) echo "dpo: DPO_DATA_CHECK=$DPO_DATA_CHECK: use warn, strict or off" >&2; exit 2 ;;
	esac
	lf_config=$(sed -n 's/^#SBATCH.*--distenv-lf-config=\([^ ]*\).*/\1/p' "$script" | tail -n 1)
	dpo_lf_config=$lf_config
	if [ "$DPO_DATA_CHECK" != off ] && ((restarts == 0)); then
		dpo_data_verdict "the data check" "${DPO_PYTHON:-python3}" "$DPO_JOB_DIR/check_data_lengths.py" \
			${DPO_MAX_PROMPT_TOKENS:+--max-prompt-tokens "$DPO_MAX_PROMPT_TOKENS"} "$lf_config"
		if [ -n "${DPO_OFFPOLICY_PAIRS:-}" ]; then
			dpo_data_verdict "the off-policy check" "${DPO_PYTHON:-python3}" "$DPO_JOB_DIR/check_dpo_offpolicy.py" \
				--pairs "$DPO_OFFPOLICY_PAIRS" "$lf_config"
		fi
	fi
}

# dpo_data_verdict WHAT COMMAND...: runs a data check; under
# DPO_DATA_CHECK=strict a failure stops the job with its exit status,
# else it is a warning and training goes on.
dpo_data_verdict() {
	local what=$1 check=0
	shift
	"$@" || check=$?
	if ((check != 0)) && [ "$DPO_DATA_CHECK" = strict ]; then
		echo "dpo: $what did not pass (exit $check, see above) and DPO_DATA_CHECK=strict: not training" >&2
		exit "$check"
	elif ((check != 0)); then
		echo "dpo: warning: $what did not pass (exit $check, see above); training anyway. DPO_DATA_CHECK=strict stops the job instead." >&2
	fi
}

# On a restart each node names the newest checkpoint complete on its own
# disk (--distenv-resume=auto prints why newer ones were skipped and
# exports DISTENV_LF_RESUME); a node-local disk may hold less than another,
# so all nodes resume from the oldest of these, the newest every node has,
# given to the training step as DISTENV_RESUME (each node's preflight then
# checks it holds it). A node with none stops the job (below).
dpo_choose_resume() {
	local choices holding lacking

	# shellcheck disable=SC2016 # expanded by the task
	choices=$(srun --ntasks-per-node=1 --distenv-resume=auto bash -c 'echo "$SLURMD_NODENAME $DISTENV_LF_RESUME"' | sort)
	holding=$(awk '$2 != "none" { print $1 }' <<<"$choices" | paste -sd, -)
	lacking=$(awk '$2 == "none" { print $1 }' <<<"$choices" | paste -sd, -)
	echo "dpo: nodes' newest complete checkpoints: $(paste -sd, - <<<"$choices")"
	# A requeued job may start on other nodes, whose disks lack the run's
	# checkpoints: it never starts over silently (DPO_FRESH_START=1 does
	# it knowingly). templates/README.md, "Requeue and resume".
	if [ -n "$lacking" ] && [ "${DPO_FRESH_START:-0}" != 1 ]; then
		if [ -n "$holding" ]; then
			echo "dpo: restart $restarts: $lacking of this allocation hold no complete checkpoint in output_dir, $holding do: training would start over from step 0 on a partial copy. Not training. Resubmit on the nodes the run saved on (sbatch --nodelist=..., this log names them at each start), or copy the newest checkpoint to $lacking (its folder from a node that holds it, plus each rank's own ZeRO shards from the node that wrote them); DPO_FRESH_START=1 starts over knowingly." >&2
		else
			echo "dpo: restart $restarts: no node of this allocation ($SLURM_JOB_NODELIST) holds a complete checkpoint in output_dir: training would start over from step 0. Not training. Resubmit on the nodes the run saved on (sbatch --nodelist=..., this log names them at each start), or put output_dir on shared storage; DPO_FRESH_START=1 starts over knowingly." >&2
		fi
		exit 1
	fi
	if [ -n "$lacking" ]; then
		echo "dpo: DPO_FRESH_START=1: $lacking hold no checkpoint; starting over from step 0 on every node"
		export DISTENV_RESUME=off
	else
		DISTENV_RESUME=$(awk '{ print $2 }' <<<"$choices" | awk -F'checkpoint-' '{ print $NF "\t" $0 }' | sort -n | head -n 1 | cut -f 2-)
		export DISTENV_RESUME
	fi
	echo "dpo: resume: $DISTENV_RESUME (the newest checkpoint every node holds)"
}

# The first logged steps (templates/README.md "DPO pairs that work"):
# accuracy near 1.0 within them while the rejected answers' log-probability
# collapses means the model tells the pairs apart by their source, and DPO
# gains little. Read from output_dir after the training step, on node 0
# (the batch script's node: LLaMA-Factory's rank 0 writes its logs there).
# A warning by default; DPO_DATA_CHECK=strict fails a job whose training
# succeeded (exit 3); off skips it. YAML_KEY FILE: a top-level scalar.
dpo_yaml_value() {
	sed -n "s/^$1:[[:space:]]*\([^#]*\).*/\1/p" "$2" | tail -n 1 | sed "s/[[:space:]]*\$//; s/^[\"']//; s/[\"']\$//"
}

dpo_check_steps() {
	local rc=$1 out beta check=0
	[ "${DPO_DATA_CHECK:-warn}" != off ] && [ -n "${dpo_lf_config:-}" ] && [ -f "$dpo_lf_config" ] || return 0
	out=$(dpo_yaml_value output_dir "$dpo_lf_config")
	beta=$(dpo_yaml_value pref_beta "$dpo_lf_config")
	[ -n "$out" ] && [ -d "$out" ] || return 0
	"${DPO_PYTHON:-python3}" "$DPO_JOB_DIR/check_dpo_steps.py" ${beta:+--beta "$beta"} "$out" || check=$?
	if ((check == 3)) && ((rc == 0)) && [ "${DPO_DATA_CHECK:-warn}" = strict ]; then
		echo "dpo: the first steps show pairs separated by their source (see above) and DPO_DATA_CHECK=strict: failing the job (exit 3)" >&2
		exit 3
	elif ((check == 3)); then
		echo "dpo: warning: the first steps show pairs separated by their source (see above); DPO_DATA_CHECK=strict fails the job instead." >&2
	fi
}

dpo_job_start() {
	local script=$1
	echo "dpo: job ${SLURM_JOB_ID} on ${SLURM_JOB_NUM_NODES} nodes (${SLURM_JOB_NODELIST})"
	max_restarts=${DPO_MAX_RESTARTS:-5}
	save_grace=${DPO_SAVE_GRACE:-600}
	restarts=${SLURM_RESTART_COUNT:-0}
	echo "dpo: start $((restarts + 1)) (restart $restarts of at most $max_restarts)"
	# The trap comes before anything that takes time: USR1 may arrive at
	# once (a --signal lead longer than the time left), and a shell
	# without the trap dies of it, failing the job.
	step=
	trap dpo_on_warning USR1
	dpo_check_signal_lead "$script"
	dpo_check_data "$script"
	# Whether the nodes share output_dir, seen rather than guessed from its
	# file system type: each node writes a mark there, and the steps below
	# look for another node's (--distenv-mark-storage, on srun only);
	# save_on_each_node follows from what they see.
	srun --ntasks-per-node=1 --distenv-mark-storage true
	if ((restarts > 0)); then
		dpo_choose_resume
	fi
}

# One llamafactory-cli per node; it starts one process per GPU through
# torchrun. --kill-on-bad-exit=1: when one node fails, Slurm ends the others
# at once instead of leaving them blocked in a collective until the timeout.
# DISTENV_LF_CONFIG names the resolved copy distenv wrote for this step on
# each node (in $TMPDIR), so the task's shell expands it, not this script.
# The step runs in the background and the script waits for it: bash runs
# the USR1 trap only between commands, so a foreground srun would hold it
# until training ended.
dpo_job_train() {
	local rc=0
	# set, or not, by a container template before this call
	# shellcheck disable=SC2154
	local -a opts=(${dpo_srun_opts[@]+"${dpo_srun_opts[@]}"})
	# shellcheck disable=SC2154
	local -a run=(${dpo_exec[@]+"${dpo_exec[@]}"})
	{
		# shellcheck disable=SC2016
		srun --kill-on-bad-exit=1 ${opts[@]+"${opts[@]}"} ${run[@]+"${run[@]}"} \
			bash -c 'exec llamafactory-cli train "$DISTENV_LF_CONFIG"'
	} &
	step=$!
	# A trap that ran interrupts wait (status 128+signal) while the step
	# may still run; wait again until it is gone, then take its own status
	# (bash keeps it for a second wait).
	while kill -0 "$step" 2>/dev/null; do
		wait "$step" 2>/dev/null || true
	done
	wait "$step" || rc=$?
	dpo_check_steps "$rc"
	exit "$rc"
}
