#!/usr/bin/env bats
# The main job: the README's first command, read from README.md and run
# as a new user runs it (as root, from the top of the checkout), so that a
# change that breaks it fails the tests. It installs what is missing,
# builds, makes or reuses the LLaMA-Factory venv, starts its own 2-node
# cluster and trains the ZeRO-3 DPO template on it (contrib/demo.sh).
# Run by tests/run on this machine's Slurm after the cluster suite, whose
# cluster has the same names.

setup_file() {
	TOP=${DISTENV_TOP:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)}
	export TOP
	# The first indented line of README.md: the first command
	FIRST=$(awk '/^    [^ ]/ { sub(/^    /, ""); print; exit }' "$TOP/README.md")
	export FIRST
	cd "$TOP" || return 1
	# Run once for all the tests below; its output is their input.
	bash -c "$FIRST" >"$BATS_FILE_TMPDIR/out" 2>&1
	echo $? >"$BATS_FILE_TMPDIR/status"
}

setup() {
	OUT=$BATS_FILE_TMPDIR/out
}

@test "main job: the README's first command is contrib/demo.sh" {
	[ "$FIRST" = contrib/demo.sh ]
}

@test "main job: the README's first command exits 0 and the job did" {
	cat "$OUT"
	[ "$(cat "$BATS_FILE_TMPDIR/status")" -eq 0 ]
	grep -qx 'demo: job exit code 0 (full log: .*)' "$OUT"
}

@test "main job: the real LLaMA-Factory 0.9.5 ran" {
	grep -q '^demo: LLaMA-Factory 0\.9\.5, from ' "$OUT"
}

@test "main job: distenv derived one master and a rank for each node" {
	grep '^distenv: ' "$OUT"
	run grep -cE '^distenv: .*NODE_RANK=0' "$OUT"
	[ "$output" -ge 1 ]
	run grep -cE '^distenv: .*NODE_RANK=1' "$OUT"
	[ "$output" -ge 1 ]
	# In each step, both nodes got the same MASTER_ADDR and MASTER_PORT
	# ("STEP KEY VALUE" once per node and key: no STEP KEY twice)
	grep '^distenv: ' "$OUT" >"$BATS_TEST_TMPDIR/derived"
	run awk '/^distenv: n[0-9]+: node [0-9]+ of 2 in step / {
			for (i = 1; i <= NF; i++) if ($i == "step") step[$2] = $(i + 1)
		}
		/^distenv: n[0-9]+: +MASTER_(ADDR|PORT)=/ && ($2 in step) {
			split($3, kv, "="); print step[$2], kv[1], kv[2], $2
		}' "$BATS_TEST_TMPDIR/derived"
	printf '%s\n' "${lines[@]}"
	[ "${#lines[@]}" -ge 4 ]
	run bash -c 'cut -d" " -f1-3 "$1" | sort -u | cut -d" " -f1,2 | uniq -d' sh <(printf '%s\n' "${lines[@]}")
	[ -z "$output" ]
}

@test "main job: both nodes logged all 8 steps and hold their ranks' shards of both checkpoints" {
	grep -E '^n[12]: ' "$OUT"
	run grep -cE '^n1: step [0-9]/8 loss [0-9.]+$' "$OUT"
	[ "$output" -eq 8 ]
	run grep -cE '^n2: step [0-9]/8 loss [0-9.]+$' "$OUT"
	[ "$output" -eq 8 ]
	# DeepSpeed's tag file: written by global rank 0 (n1) only
	grep -qx 'n1: checkpoint-8/latest' "$OUT"
	for step in 4 8; do
		grep -qx "n1: checkpoint-$step/trainer_state.json" "$OUT"
		grep -qx "n2: checkpoint-$step/trainer_state.json" "$OUT"
		for rank in 0 1; do
			grep -qx "n1: checkpoint-$step/global_step$step/zero_pp_rank_${rank}_mp_rank_00_optim_states.pt" "$OUT"
		done
		for rank in 2 3; do
			grep -qx "n2: checkpoint-$step/global_step$step/zero_pp_rank_${rank}_mp_rank_00_optim_states.pt" "$OUT"
		done
	done
}
