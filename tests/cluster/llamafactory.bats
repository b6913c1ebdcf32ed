#!/usr/bin/env bats
# The DPO job templates with the real LLaMA-Factory 0.9.5 on the namespace
# Slurm cluster: `llamafactory-cli train "$DISTENV_LF_CONFIG"` from the
# pinned venv (contrib/lfstack/venv.sh: llamafactory 0.9.5, transformers
# 5.6.0, trl 0.24.0, peft 0.18.1, torch 2.13.0 CPU, deepspeed 0.19.8),
# 2 nodes x 2 processes on CPU with Gloo, DeepSpeed ZeRO-3 through
# DeepSpeed's CPU accelerator, on a tiny Qwen2 model made at test time
# (contrib/lfstack/tiny_model.py). Each node's slurmd has a private tmpfs
# at $LOCAL (cluster.sh --node-local), a node-local disk.
#
# The templates run unchanged (template_copy); their YAMLs get the test's
# model, data, output_dir and step counts (test_yaml) and the CPU knobs of
# contrib/lfstack/cpu.yaml, nothing else. tests/cluster/lf/probe/ is on
# PYTHONPATH: it prints what the trainer processes were given and can
# pause them after a checkpoint, without changing what they compute.
#
# Launcher versions: these tests cover LLaMA-Factory 0.9.3-0.9.5's
# launcher.py (run for real, 0.9.5); templates.bats and requeue.bats keep a
# stand-in for the launcher of 0.9.1-0.9.2 (tests/cluster/lf/bin/).

load helpers
load lf_helpers
load lf_real

MASTER="$CLUSTER_NET.1"

setup_file() { lf_real_file_setup 2; }
teardown_file() { cluster_file_teardown; }
setup() { lf_real_setup; }

# trainer_log NODE DIR: "step loss" per logged step of LLaMA-Factory's
# trainer_log.jsonl in DIR on NODE
trainer_log() {
	srun -N1 -w "$1" /usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1] + "/trainer_log.jsonl"):
    r = json.loads(line)
    if "loss" in r:
        print(r["current_steps"], r["loss"])' "$2"
}

# falls FILE [MARGIN]: every loss finite, the first log 2 (policy =
# reference), the mean of the last half lower than that by MARGIN (0.1)
falls() {
	awk -v margin="${2:-0.1}" '{ if ($2 != $2 + 0 || $2 ~ /nan|inf/) bad = 1; l[NR] = $2 }
		END {
			if (bad || NR < 4) exit 1
			for (i = int(NR / 2) + 1; i <= NR; i++) { s += l[i]; n++ }
			exit !(l[1] > 0.693 && l[1] < 0.694 && s / n < l[1] - margin)
		}' "$1"
}

@test "the pinned venv: llamafactory 0.9.5, torch 2.13.0 and the versions the lock file names; the tiny model is a Qwen2 that LLaMA-Factory's qwen template tokenizes, under 20 MB" {
	"$TOP/contrib/lfstack/venv.sh" --check
	run "$VENV/bin/python" - "$TOP/contrib/lfstack/requirements.lock" "$TINY" <<'EOF'
import importlib.metadata as md, os, sys
lock, tiny = sys.argv[1:]
pins = dict(l.strip().split("==") for l in open(lock) if "==" in l and not l.startswith("#"))
for name, version in pins.items():
    assert md.version(name) == version, (name, md.version(name), version)
for name in ("llamafactory", "torch", "transformers", "trl", "peft", "datasets", "accelerate", "deepspeed"):
    print(name, md.version(name))
from transformers import AutoConfig, AutoTokenizer
from llamafactory.data import get_template_and_fix_tokenizer
from llamafactory.hparams import DataArguments
config = AutoConfig.from_pretrained(tiny)
assert config.model_type == "qwen2", config.model_type
tok = AutoTokenizer.from_pretrained(tiny)
template = get_template_and_fix_tokenizer(tok, DataArguments(template="qwen"))
ids, _ = template.encode_oneturn(tok, [{"role": "user", "content": "How many bytes?"},
                                       {"role": "assistant", "content": "Two."}])
assert tok.convert_ids_to_tokens(ids[0]) == "<|im_start|>", ids[:3]
size = sum(os.path.getsize(os.path.join(tiny, f)) for f in os.listdir(tiny))
assert size < 20 << 20, size
print("OK", len(pins), "pins", size, "bytes")
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'llamafactory 0.9.5' <<<"$output"
	grep -qx 'torch 2.13.0+cpu' <<<"$output"
	grep -qx 'deepspeed 0.19.8' <<<"$output"
	[[ "${lines[-1]}" == "OK "* ]]
}

@test "real 0.9.5's own parser (hparams/parser.py, unknown keys refused) takes distenv's resolved copy of each template YAML, and refuses the same copy with one unknown key" {
	local y
	for y in qwen2_72b_full_dpo qwen2_72b_full_dpo_offload qwen2_72b_lora_dpo; do
		real_yaml "$TPL/lf/$y.yaml" "$y.yaml" "output_dir=$LOCAL/parse-$y"
		# shellcheck disable=SC2016 # expanded by the task
		run srun -N2 --ntasks-per-node=1 --distenv --distenv-nproc=2 --distenv-lf-config="$y.yaml" python -c '
import os, sys, yaml
from llamafactory.hparams.parser import _parse_train_args
path = os.environ["DISTENV_LF_CONFIG"]
with open(path) as f:
    args = yaml.safe_load(f)
_parse_train_args(dict(args))
print("parsed", path, "save_on_each_node", args["save_on_each_node"])
args["distenv_bogus_key"] = 1
try:
    _parse_train_args(args)
except ValueError as e:
    print("refused:", e)'
		echo "$output"
		[ "$status" -eq 0 ]
		# each node parsed its own copy, with what distenv resolved
		grep -qE "^parsed $LOCAL/distenv-0-[0-9]+\.0-0/lf_config.yaml save_on_each_node True$" <<<"$output"
		grep -qE "^parsed $LOCAL/distenv-0-[0-9]+\.0-1/lf_config.yaml save_on_each_node True$" <<<"$output"
		[ "$(grep -cxF "refused: Some keys are not used by the HfArgumentParser: ['distenv_bogus_key']" <<<"$output")" -eq 2 ]
	done
}

@test "distenv's key table knows every argument real 0.9.5's parser takes, so an unknown key can fail the step by default" {
	"$VENV/bin/python" - "$TPL/lf/qwen2_72b_full_dpo.yaml" all.yaml <<'PY'
import dataclasses, sys, typing, yaml
from llamafactory.hparams.parser import _TRAIN_CLS
args = yaml.safe_load(open(sys.argv[1]))
for cls in typing.get_args(_TRAIN_CLS):
    for f in dataclasses.fields(cls):
        if f.init:
            args.setdefault(f.name, None)
print(len(args), "keys")
yaml.safe_dump(args, open(sys.argv[2], "w"))
PY
	run distenv plan all.yaml --nodes 2 --gpus-per-node 8 --model-params 70B --host-mem 4T
	echo "$output"
	[ "$(wc -l <all.yaml)" -gt 300 ]
	refute grep -q 'unknown LLaMA-Factory key' <<<"$output"
	echo "distenv_bogus_key: 1" >>all.yaml
	run distenv plan all.yaml --nodes 2 --gpus-per-node 8 --model-params 70B --host-mem 4T
	grep -qF "error: all.yaml:" <<<"$output"
	grep -qF "unknown LLaMA-Factory key 'distenv_bogus_key'" <<<"$output"
}

@test "real 0.9.5's launcher, MASTER_PORT unset: each node picks its own free port (find_available_port), so two nodes disagree; with --distenv both get the step's reserved port" {
	# shellcheck disable=SC2016 # expanded on each node
	run srun -N2 --ntasks-per-node=1 --distenv bash -c '
		port=$(env -u MASTER_PORT python -c "from llamafactory.extras.misc import find_available_port as f; print(f())")
		echo "$(hostname) own=$port distenv=$MASTER_PORT"'
	echo "$output"
	[ "$status" -eq 0 ]
	own1=$(sed -n 's/^n1 own=\([0-9]*\) .*/\1/p' <<<"$output")
	own2=$(sed -n 's/^n2 own=\([0-9]*\) .*/\1/p' <<<"$output")
	# bind(port 0) takes a random free port of the kernel's ephemeral
	# range: two nodes agree about once in 28,000 tries
	[ -n "$own1" ]
	[ -n "$own2" ]
	[ "$own1" != "$own2" ]
	[ "$(grep -oE 'distenv=[0-9]+$' <<<"$output" | sort -u | wc -l)" -eq 1 ]
}

@test "real 0.9.5, template dpo_full_zero3 on node-local disks: LLaMA-Factory's launcher builds torchrun from distenv's variables, its parser takes the resolved copy, ZeRO-3 DPO through DeepSpeed on 2x2, loss finite and falling, each node holds its ranks' DeepSpeed shards" {
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" ref.yaml "output_dir=$LOCAL/ref"
	real_template dpo_full_zero3.sbatch ref.sbatch "$BATS_FILE_TMPDIR/ref.yaml"
	id=$(DISTENV_TEST_ENV_PROBE=MASTER_ADDR,MASTER_PORT,WORLD_SIZE submit ref.sbatch)
	state=$(wait_job "$id")
	cat ref.sbatch.out
	trained "$state" ref.sbatch.out
	# launcher.py's own lines, one address on both nodes
	[ "$(grep -oE 'Initializing 2 distributed tasks at: [0-9.]+:[0-9]+' ref.sbatch.out | sort -u | wc -l)" -eq 1 ]
	grep -qE "Initializing 2 distributed tasks at: $MASTER:[0-9]+" ref.sbatch.out
	grep -q 'Multi-node training enabled: num nodes: 2, node rank: 0' ref.sbatch.out
	grep -q 'Multi-node training enabled: num nodes: 2, node rank: 1' ref.sbatch.out
	grep -q 'Detected DeepSpeed ZeRO-3' ref.sbatch.out
	# every trainer process: the world of 4, the master, and the resolved
	# copy as its configuration (the template's YAML is not read)
	# (step 1: the template marks the storage in step 0)
	for r in 0 1 2 3; do
		grep -qE "^probe: rank $r node=n[12] WORLD_SIZE=4$" ref.sbatch.out
		grep -qE "^probe: rank $r node=n[12] MASTER_ADDR=$MASTER$" ref.sbatch.out
		grep -qE "^probe: rank $r node=n[12] argv=$LOCAL/distenv-0-$id\\.1-[01]/lf_config.yaml$" ref.sbatch.out
	done
	refute grep -q "argv=.*ref.yaml" ref.sbatch.out
	# the data check ran in the job's Python before training, with the
	# model's tokenizer: all 16 sample pairs fit cutoff_len
	grep -qE "^check_data_lengths: .*ref.yaml: 16 pairs, tokens as LLaMA-Factory 0.9.5 encodes them \(template qwen" ref.sbatch.out
	grep -qx 'check_data_lengths: all 16 pairs fit' ref.sbatch.out
	[ "$(grep -n 'all 16 pairs fit' ref.sbatch.out | cut -d: -f1)" -lt "$(grep -n 'Initializing 2 distributed tasks' ref.sbatch.out | head -n 1 | cut -d: -f1)" ]
	trainer_log n1 "$LOCAL/ref" >ref.losses
	cat ref.losses
	[ "$(wc -l <ref.losses)" -eq 8 ]
	falls ref.losses
	node_files "$LOCAL/ref" >files
	cat files
	for f in trainer_state.json latest rng_state_0.pth rng_state_1.pth model.safetensors \
		global_step8/zero_pp_rank_0_mp_rank_00_model_states.pt global_step8/zero_pp_rank_1_mp_rank_00_optim_states.pt; do
		grep -qx "n1 checkpoint-8/$f" files
	done
	# save_on_each_node (the resolved copy's): n2 has its own trainer
	# state and its own ranks' shards, and no other ranks'
	for f in trainer_state.json rng_state_2.pth rng_state_3.pth \
		global_step8/zero_pp_rank_2_mp_rank_00_model_states.pt global_step8/zero_pp_rank_3_mp_rank_00_optim_states.pt; do
		grep -qx "n2 checkpoint-8/$f" files
	done
	refute grep -qE '^n1 .*(rank_[23]_|rng_state_[23])' files
	refute grep -qE '^n2 .*(rank_[01]_|rng_state_[01])' files
	# DeepSpeed 0.19 writes `latest` on global rank 0 only, also with
	# node-local storage (plugin/lf/lf_resume.h)
	refute grep -qx 'n2 checkpoint-8/latest' files
}

@test "real 0.9.5: without distenv's repair a resume on node-local disks fails on n2, whose checkpoint lacks DeepSpeed's latest; with it, cancelled after checkpoint-4 and resubmitted, both nodes resume at step 4 and steps 5-8 match the uninterrupted run" {
	# the uninterrupted run of the test before
	[ -f ref.losses ]
	# The trap: the reference output of the test before, trained on for a
	# third epoch without --distenv-lf-config (so no repair), and
	# save_on_each_node: true as the resolved copy had it.
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" more.yaml "output_dir=$LOCAL/ref" \
		save_on_each_node=true num_train_epochs=3.0
	run batch <<EOF
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 --distenv --distenv-nproc=2
srun --kill-on-bad-exit=1 llamafactory-cli train $BATS_FILE_TMPDIR/more.yaml
EOF
	out=${lines[0]}
	cat "$out"
	[ "$status" -ne 0 ]
	grep -qF "Unable to find latest file at $LOCAL/ref/checkpoint-8/latest" "$out"
	grep -qF "ValueError: [deepspeed] failed to resume from checkpoint $LOCAL/ref/checkpoint-8" "$out"
	refute grep -q "'epoch': '2.25'" "$out"

	# With the template: stopped after its first checkpoint, as a user
	# cancels a job, then submitted again as it is.
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" full.yaml "output_dir=$LOCAL/full"
	real_template dpo_full_zero3.sbatch full.sbatch "$BATS_FILE_TMPDIR/full.yaml"
	id=$(DISTENV_TEST_PAUSE_AFTER=4 submit full.sbatch)
	cancel_paused "$id" full.sbatch.out 4
	node_files "$LOCAL/full" >files
	grep -qx 'n2 checkpoint-4/trainer_state.json' files
	refute grep -qx 'n2 checkpoint-4/latest' files
	refute grep -q 'checkpoint-8' files
	state=$(resubmit full.sbatch)
	cat full.sbatch.out
	trained "$state" full.sbatch.out
	grep -qxF "distenv: n2: wrote $LOCAL/full/checkpoint-4/latest (global_step4): DeepSpeed writes it on node 0 only, and this node's ranks read their own copy" full.sbatch.out
	refute grep -q 'distenv: n1: wrote' full.sbatch.out
	# both nodes' trainers (their local rank 0 logs) resumed at step 4
	[ "$(grep -c "Resuming training from $LOCAL/full/checkpoint-4\\.$" full.sbatch.out)" -eq 2 ]
	[ "$(grep -c 'Resuming training from checkpoint with epoch 1 and global step 4$' full.sbatch.out)" -eq 2 ]
	srun -N1 -w n2 cat "$LOCAL/full/checkpoint-4/latest" >tag
	[ "$(cat tag)" = global_step4 ]
	# steps 1-4 from the first start, 5-8 from the second, as the
	# uninterrupted run within float noise
	trainer_log n1 "$LOCAL/full" >full.losses
	trainer_log n2 "$LOCAL/full" >n2.losses
	cat full.losses
	diff full.losses n2.losses
	[ "$(cut -d' ' -f1 full.losses | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 " ]
	paste ref.losses full.losses | awk '{ d = $2 - $4; if (d < 0) d = -d; if ($1 != $3 || d > 1e-4) bad = 1 } END { exit bad }'
}

@test "real 0.9.5, the trap: save_on_each_node: false on node-local disks; resuming fails on n2 with Transformers' FileNotFoundError; with --distenv-lf-config the preflight stops the step first, naming n2 and its missing files" {
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" off.yaml "output_dir=$LOCAL/off" save_on_each_node=false max_steps=4
	cat >off1.sh <<EOF
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 --distenv --distenv-nproc=2
srun --kill-on-bad-exit=1 llamafactory-cli train $BATS_FILE_TMPDIR/off.yaml
EOF
	# This first job only lays the trap: checkpoint-4 written with
	# save_on_each_node: false. When distenv's launch reached both nodes'
	# torchrun and the training still did not end (untrained says why, in
	# the TAP output), it is run once more from an empty output_dir.
	for attempt in 1 2; do
		id=$(submit off1.sh)
		state=$(wait_job "$id")
		cat off1.sh.out
		if trained "$state" off1.sh.out; then
			break
		fi
		[ "$attempt" -eq 1 ]
		[ "$(grep -c "Initializing 2 distributed tasks at: $MASTER:" off1.sh.out)" -eq 2 ]
		echo "# attempt $attempt: the launch reached both nodes, the training did not end; once more" >&3
		# one wait_job gave up on must not write beside the rerun (the
		# partition oversubscribes)
		case "$state" in PENDING | RUNNING | CONFIGURING | COMPLETING)
			scancel "$id"
			wait_job "$id" >/dev/null
			;;
		esac
		srun -N2 rm -rf "$LOCAL/off"
	done
	node_files "$LOCAL/off" >files
	cat files
	grep -qx 'n1 checkpoint-4/trainer_state.json' files
	grep -qx 'n2 checkpoint-4/global_step4/zero_pp_rank_2_mp_rank_00_model_states.pt' files
	refute grep -qE '^n2 checkpoint-4/(trainer_state.json|latest)$' files
	# submitted again for the whole 8 steps: n2 cannot resume
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" off.yaml "output_dir=$LOCAL/off" save_on_each_node=false
	run batch <off1.sh
	out=${lines[0]}
	cat "$out"
	[ "$status" -ne 0 ]
	grep -qF "FileNotFoundError: [Errno 2] No such file or directory: '$LOCAL/off/checkpoint-4/trainer_state.json'" "$out"
	refute grep -q "'epoch': '1.25'" "$out"
	# the template with the same setting: distenv's preflight on n2
	real_template dpo_full_zero3.sbatch off.sbatch "$BATS_FILE_TMPDIR/off.yaml" \
		"#SBATCH --distenv-save-on-each-node=no"
	for attempt in 1 2; do
		id=$(submit off.sbatch)
		state=$(wait_job "$id")
		cat off.sbatch.out
		[ "$state" = FAILED ]
		refute grep -q 'Initializing 2 distributed tasks' off.sbatch.out
		# n2's task_init failed the step (slurmd's log on n2)
		grep -qF "[$id.1] error: spank: required plugin distenv.so: task_init() failed" \
			"$DISTENV_CLUSTER_DIR/log/slurmd-n2.log"
		if grep -q '^distenv: error: ' off.sbatch.out; then
			break
		fi
		echo "# attempt $attempt: the step's error message did not reach the output" >&3
	done
	grep -E '^distenv: error: ' off.sbatch.out >errors
	[ "$(wc -l <errors)" -eq 1 ]
	grep -qE '^distenv: error: n2: node 1: cannot resume from checkpoint-4: .*checkpoint-4/trainer_state.json, checkpoint-4/latest' errors
	nodes_idle
}

@test "real 0.9.5, the templates' requeue: USR1 before the time limit requeues the job; checkpoint-8 cut on n2, so both nodes resume from checkpoint-4 (--distenv-resume=auto) and finish the 12 planned steps, the repeated steps matching the first start's" {
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" rq.yaml "output_dir=$LOCAL/rq" num_train_epochs=3.0
	real_template dpo_full_zero3.sbatch rq.sbatch "$BATS_FILE_TMPDIR/rq.yaml" \
		"#SBATCH --signal=B:USR1@60" "#SBATCH --open-mode=append"
	# first start: pause after checkpoint-8 (the probe pauses on the first
	# start only), then "the time limit nears": the signal slurmctld sends
	id=$(DISTENV_TEST_PAUSE_AFTER=8 DPO_SAVE_GRACE=1 DPO_MAX_RESTARTS=2 submit rq.sbatch)
	wait_line rq.sbatch.out 'paused after checkpoint-8' "$id"
	scancel --batch --signal=USR1 "$id"
	wait_line rq.sbatch.out "dpo: requeueing job $id \(restart 1 of at most 2\)" "$id"
	wait_state "$id" PENDING rq.sbatch.out
	# the save of checkpoint-8 was cut on n2: rank 3's optimizer state
	# never reached the disk
	srun -w n2 -N1 rm "$LOCAL/rq/checkpoint-8/global_step8/zero_pp_rank_3_mp_rank_00_optim_states.pt"
	wait_requeued "$id"
	state=$(wait_job "$id")
	cat rq.sbatch.out
	trained "$state" rq.sbatch.out
	[ "$(job_field "$id" Restarts)" = 1 ]
	grep -q '^dpo: start 2 (restart 1 of at most 2)' rq.sbatch.out
	grep -qE "^distenv: n1: resume from checkpoint-8 \(newest complete on this node of 2\)$" rq.sbatch.out
	grep -qE "^distenv: n2: resume from checkpoint-4 \(newest complete on this node of 2\); skipped checkpoint-8: partial, 2 file\(s\) missing here, first checkpoint-8/global_step8/zero_pp_rank_3_mp_rank_00_optim_states.pt$" rq.sbatch.out
	grep -qxF "dpo: resume: $LOCAL/rq/checkpoint-4 (the newest checkpoint every node holds)" rq.sbatch.out
	# n2's copy of checkpoint-4 lacked only DeepSpeed's latest
	[ "$(grep -c "^distenv: n2: wrote $LOCAL/rq/checkpoint-4/latest (global_step4)" rq.sbatch.out)" -eq 1 ]
	[ "$(grep -c "Resuming training from checkpoint with epoch 1 and global step 4$" rq.sbatch.out)" -eq 2 ]
	# the loss curve: steps 1-8, then 5-12 again from checkpoint-4, the
	# repeated steps as the first start's within float noise
	trainer_log n1 "$LOCAL/rq" >rq.losses
	cat rq.losses
	[ "$(cut -d' ' -f1 rq.losses | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 5 6 7 8 9 10 11 12 " ]
	paste <(sed -n '5,8p' rq.losses) <(sed -n '9,12p' rq.losses) |
		awk '{ d = $2 - $4; if (d < 0) d = -d; if (d > 1e-4) bad = 1 } END { exit bad }'
	falls <(sed -n '1,4p;9,16p' rq.losses)
}

@test "real 0.9.5, template dpo_full_zero3_offload: ZeRO-3 with parameters and optimizer offloaded to CPU trains; a PYTORCH_CUDA_ALLOC_CONF of the user's reaches the trainers merged, because distenv turns LLaMA-Factory's OPTIM_TORCH off" {
	real_yaml "$TPL/lf/qwen2_72b_full_dpo_offload.yaml" offload.yaml "output_dir=$LOCAL/offload"
	real_template dpo_full_zero3_offload.sbatch offload.sbatch "$BATS_FILE_TMPDIR/offload.yaml"
	id=$(PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 \
		DISTENV_TEST_ENV_PROBE=PYTORCH_CUDA_ALLOC_CONF,OPTIM_TORCH,TORCH_NCCL_AVOID_RECORD_STREAMS \
		submit offload.sbatch)
	state=$(wait_job "$id")
	cat offload.sbatch.out
	trained "$state" offload.sbatch.out
	grep -q 'Detected DeepSpeed ZeRO-3' offload.sbatch.out
	# DeepSpeed's CPU Adam (csrc/adam/cpu_adam_impl.cpp) for the
	# offloaded optimizer
	grep -q 'Adam Optimizer #0 is created with ' offload.sbatch.out
	for r in 0 1 2 3; do
		grep -qE "^probe: rank $r node=n[12] PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64,expandable_segments:True$" offload.sbatch.out
		grep -qE "^probe: rank $r node=n[12] OPTIM_TORCH=0$" offload.sbatch.out
		grep -qE "^probe: rank $r node=n[12] TORCH_NCCL_AVOID_RECORD_STREAMS=1$" offload.sbatch.out
	done
	trainer_log n1 "$LOCAL/offload" >offload.losses
	cat offload.losses
	[ "$(wc -l <offload.losses)" -eq 8 ]
	falls offload.losses
}

@test "real 0.9.5, template dpo_lora_zero3: LoRA DPO trains and saves adapters; FORCE_TORCHRUN=y is kept and starts torchrun; a TMPDIR with a space moves the resolved copy to /tmp, since the launcher splits torchrun's command on whitespace" {
	# adapters learn slower than the full model: half the full runs' rate,
	# a smaller fall in 8 steps (0.065 measured)
	real_yaml "$TPL/lf/qwen2_72b_lora_dpo.yaml" lora.yaml "output_dir=$LOCAL/lora" learning_rate=0.01
	real_template dpo_lora_zero3.sbatch lora.sbatch "$BATS_FILE_TMPDIR/lora.yaml"
	srun -N2 --ntasks-per-node=1 mkdir -p "$LOCAL/tmp dir"
	id=$(FORCE_TORCHRUN=y TMPDIR="$LOCAL/tmp dir" DISTENV_TEST_ENV_PROBE=FORCE_TORCHRUN submit lora.sbatch)
	state=$(wait_job "$id")
	cat lora.sbatch.out
	trained "$state" lora.sbatch.out
	grep -qE '^distenv: n1:   FORCE_TORCHRUN=y  \[kept\]' lora.sbatch.out
	grep -q 'Initializing 2 distributed tasks at: ' lora.sbatch.out
	for r in 0 1 2 3; do
		grep -qE "^probe: rank $r node=n[12] argv=/tmp/distenv-0-$id\\.1-[01]/lf_config.yaml$" lora.sbatch.out
	done
	# the step's copies went with it (spank_exit.c); a step with the same
	# TMPDIR shows the copy's header
	gone_within 10 "/tmp/distenv-0-$id.1-0" "/tmp/distenv-0-$id.1-1"
	# shellcheck disable=SC2016 # expanded by the task
	TMPDIR="$LOCAL/tmp dir" srun -N1 -w n1 --distenv --distenv-nproc=2 --distenv-lf-config="$BATS_FILE_TMPDIR/lora.yaml" \
		bash -c 'cat "$DISTENV_LF_CONFIG"' >resolved.yaml
	grep -qF "written under /tmp, not TMPDIR=\"$LOCAL/tmp dir\"" resolved.yaml
	trainer_log n1 "$LOCAL/lora" >lora.losses
	cat lora.losses
	falls lora.losses 0.03
	node_files "$LOCAL/lora" >files
	grep -qx 'n1 checkpoint-8/adapter_model.safetensors' files
	grep -qx 'n2 checkpoint-8/adapter_model.safetensors' files
	refute grep -q 'checkpoint-8/model.safetensors' files
}

@test "elastic mode, bare torchrun (PET_* only): a 2x2 c10d launch reduces on every rank; one RDZV_ID for the step (job.step.start), node 0 hosts the store, each agent advertises its eth0 address" {
	# shellcheck disable=SC2016 # expanded by the task
	run timeout 120 srun -N2 --ntasks-per-node=1 --distenv=elastic --distenv-nproc=2 bash -c '
		echo "$(hostname) RDZV_ID=$RDZV_ID conf=$PET_RDZV_CONF local=$PET_LOCAL_ADDR endpoint=$PET_RDZV_ENDPOINT nnodes=$PET_NNODES"
		exec torchrun "$1"' sh "$TOP/tests/cluster/elastic_worker.py"
	echo "$output"
	[ "$status" -eq 0 ]
	id=$(sed -n 's/^n1 RDZV_ID=\([^ ]*\) .*/\1/p' <<<"$output")
	[[ "$id" =~ ^[0-9]+\.0\.0$ ]]
	grep -qE "^n1 RDZV_ID=$id conf=is_host=1 local=$MASTER endpoint=$MASTER:[0-9]+ nnodes=2:2$" <<<"$output"
	grep -qE "^n2 RDZV_ID=$id conf=is_host=0 local=$CLUSTER_NET.2 endpoint=$MASTER:[0-9]+ nnodes=2:2$" <<<"$output"
	[ "$(grep -cE '^ELASTIC attempt 0 rank [0-3]/4 node=n[12] group_rank [01] result=10 OK$' <<<"$output")" -eq 4 ]
	# c10d gave the node ranks: one per node
	[ "$(grep -oE 'node=n1 group_rank [01]' <<<"$output" | sort -u | wc -l)" -eq 1 ]
	[ "$(grep -oE 'node=n2 group_rank [01]' <<<"$output" | sort -u | wc -l)" -eq 1 ]
}

@test "elastic mode, the trap: the master given as its address while its host name resolves to 127.0.1.1 only on itself (Debian's /etc/hosts): from torchrun mode's variables no agent hosts the c10d store and the launch hangs; with --distenv=elastic node 0 hosts it and the launch reduces" {
	local hosts=/etc/netns/${CLUSTER_NS}1/hosts saved
	saved=$(cat "$hosts")
	grep -v 'n1$' <<<"$saved" >"$hosts"
	printf '127.0.1.1\tn1\n' >>"$hosts"
	# torchrun's own c10d arguments, as a user writes them
	# shellcheck disable=SC2016 # expanded by the task
	launch='exec torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "$MASTER_ADDR:$MASTER_PORT" --rdzv-id "job$SLURM_JOB_ID" "$1"'
	# Both agents connect as clients to a store nobody hosts; torch 2.13
	# gives up on a connection after 60 s and retries: 65 s show it.
	run timeout 65 env MASTER_ADDR="$MASTER" srun -N2 --ntasks-per-node=1 --distenv --distenv-nproc=2 \
		bash -c "$launch" sh "$TOP/tests/cluster/elastic_worker.py"
	trap_status=$status trap_output=$output
	run timeout 90 env MASTER_ADDR="$MASTER" srun -N2 --ntasks-per-node=1 --distenv=elastic --distenv-nproc=2 \
		bash -c "$launch" sh "$TOP/tests/cluster/elastic_worker.py"
	printf '%s\n' "$saved" >"$hosts"
	echo "$trap_output"
	echo "$output"
	[ "$trap_status" -ne 0 ]
	grep -qF "TCP client failed to connect/validate to host $MASTER:" <<<"$trap_output"
	refute grep -q '^ELASTIC ' <<<"$trap_output"
	[ "$status" -eq 0 ]
	[ "$(grep -cE '^ELASTIC attempt 0 rank [0-3]/4 .* result=10 OK$' <<<"$output")" -eq 4 ]
}

@test "torchrun mode with RDZV_ID exported: --distenv-show says c10d hands out the node ranks, the user's id is kept and the rendezvous parts are set, so the launch reduces" {
	# shellcheck disable=SC2016 # expanded by the task
	run timeout 120 env RDZV_ID=myrun srun -N2 --ntasks-per-node=1 --distenv --distenv-nproc=2 --distenv-show \
		bash -c 'exec torchrun "$1"' sh "$TOP/tests/cluster/elastic_worker.py"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^distenv: n2:   RDZV_ID=myrun  \[kept\]' <<<"$output"
	grep -q '^distenv: n1:   PET_RDZV_BACKEND=c10d  \[set\] RDZV_ID is set: LLaMA-Factory >= 0.9.3 launches with c10d rendezvous, which hands out the node ranks (NODE_RANK is not used)' <<<"$output"
	grep -q '^distenv: n2:   PET_RDZV_ID=myrun  \[set\]' <<<"$output"
	[ "$(grep -cE '^ELASTIC attempt 0 rank [0-3]/4 .* result=10 OK$' <<<"$output")" -eq 4 ]
}

@test "elastic mode, --distenv-max-restarts=1: a worker killed mid-run makes every agent restart its workers, and the second round reduces on every rank" {
	# shellcheck disable=SC2016 # expanded by the task
	launch='echo "$(hostname) share=$TORCH_DISABLE_SHARE_RDZV_TCP_STORE max=$PET_MAX_RESTARTS"; exec torchrun "$1"'
	rm -f "$PWD/kill1.mark"
	run timeout 120 env ELASTIC_KILL_RANK=3 ELASTIC_KILL_MARK="$PWD/kill1.mark" ELASTIC_STEPS=20 \
		srun -N2 --ntasks-per-node=1 --distenv=elastic --distenv-nproc=2 --distenv-max-restarts=1 --distenv-show \
		bash -c "$launch" sh "$TOP/tests/cluster/elastic_worker.py"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'n1 share=1 max=1' <<<"$output"
	grep -qF 'distenv: n2:   TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1  [set] workers may restart (MAX_RESTARTS=1, nodes 2:2)' <<<"$output"
	# rank 3 died in the first round (SIGKILL), and both nodes restarted
	grep -qE '^n[12] rank 3$' "$PWD/kill1.mark"
	grep -qE 'failed \(exitcode: -9\) local_rank: 1' <<<"$output"
	[ "$(grep -cE '^ELASTIC attempt [01] rank [0-3]/4 node=n[12] group_rank [01] after_kill result=10 OK$' <<<"$output")" -eq 4 ]
	# the agent that saw its worker die counted the restart
	[ "$(grep -cE '^ELASTIC attempt 1 ' <<<"$output")" -ge 2 ]
	refute grep -qE '^ELASTIC .* group_rank [01] result=' <<<"$output"
	# Not asserted: that the same launch fails with the store shared
	# (TORCH_DISABLE_SHARE_RDZV_TCP_STORE=0). Earlier runs here saw the
	# restarted workers refused ("Connection refused") where one agent
	# restarted without counting; on a loaded machine both agents saw a
	# failure, restarted in step and the round completed. It is a race.
	nodes_idle
}

@test "elastic mode: a requeued job's steps get a new RDZV_ID (job.step.start), so no agent joins the first start's round" {
	cat >rq.sbatch <<-'EOF'
	#!/bin/bash
	#SBATCH -N2 --ntasks-per-node=1 --distenv=elastic --requeue --open-mode=append
	srun bash -c 'echo "START ${SLURM_RESTART_COUNT:-0} $(hostname) RDZV_ID=$RDZV_ID PET_RDZV_ID=$PET_RDZV_ID"'
	[ "${SLURM_RESTART_COUNT:-0}" -gt 0 ] || sleep 300
	EOF
	id=$(sbatch --parsable -o rq.out -e rq.out rq.sbatch)
	wait_line rq.out '^START 0 n2 ' "$id"
	scontrol requeue "$id"
	wait_requeued "$id"
	state=$(wait_job "$id")
	cat rq.out
	[ "$state" = COMPLETED ]
	grep -qx "START 0 n1 RDZV_ID=$id.0.0 PET_RDZV_ID=$id.0.0" rq.out
	grep -qx "START 0 n2 RDZV_ID=$id.0.0 PET_RDZV_ID=$id.0.0" rq.out
	grep -qx "START 1 n1 RDZV_ID=$id.0.1 PET_RDZV_ID=$id.0.1" rq.out
	grep -qx "START 1 n2 RDZV_ID=$id.0.1 PET_RDZV_ID=$id.0.1" rq.out
}

@test "elastic mode: a node range the step is outside of fails the step with the fix; a malformed one fails srun at once" {
	run timeout 60 srun -N2 --distenv=elastic --distenv-nodes=3:4 true
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qF -- '--distenv-nodes=3:4: the step has 2 nodes: the rendezvous would wait for nodes that never come. Ask for a node count in that range (srun -N), or widen --distenv-nodes' <<<"$output"
	run timeout 30 srun -N2 --distenv=elastic --distenv-nodes=4:2 true
	echo "$output"
	[ "$status" -ne 0 ]
	grep -q -- '--distenv-nodes: MIN 4 is larger than MAX 2' <<<"$output"
	nodes_idle
}

@test "real 0.9.5 in elastic mode: template dpo_full_zero3 submitted with --distenv=elastic takes LLaMA-Factory's RDZV_ID launch (the trainers' TORCHELASTIC_RUN_ID is distenv's RDZV_ID) and trains" {
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" el.yaml "output_dir=$LOCAL/el"
	real_template dpo_full_zero3.sbatch el.sbatch "$BATS_FILE_TMPDIR/el.yaml"
	id=$(DISTENV_TEST_ENV_PROBE=TORCHELASTIC_RUN_ID,RDZV_ID submit el.sbatch --distenv=elastic)
	state=$(wait_job "$id")
	cat el.sbatch.out
	trained "$state" el.sbatch.out
	for r in 0 1 2 3; do
		grep -qE "^probe: rank $r node=n[12] TORCHELASTIC_RUN_ID=$id\\.1\\.0$" el.sbatch.out
	done
	trainer_log n1 "$LOCAL/el" >el.losses
	cat el.losses
	[ "$(wc -l <el.losses)" -eq 8 ]
	falls el.losses
}

@test "real 0.9.5, the templates' data check: a pair longer than cutoff_len is listed with its token counts; DPO_DATA_CHECK=strict stops the job before any step, the default trains anyway" {
	real_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" dc.yaml "output_dir=$LOCAL/dc" cutoff_len=100 max_steps=1
	real_template dpo_full_zero3.sbatch dc.sbatch "$BATS_FILE_TMPDIR/dc.yaml"
	id=$(DPO_DATA_CHECK=strict submit dc.sbatch)
	state=$(wait_job "$id")
	cat dc.sbatch.out
	[ "$state" = FAILED ]
	grep -qx 'check_data_lengths: 7 of 16 pairs are over cutoff_len 100:' dc.sbatch.out
	grep -qF 'dpo_pairs.json:74): prompt 86, chosen 18, rejected 8: prompt+answer 104 > cutoff_len 100: LLaMA-Factory keeps prompt 82 + answer 18' dc.sbatch.out
	grep -qF 'dpo: the data check did not pass (exit 3, see above) and DPO_DATA_CHECK=strict: not training' dc.sbatch.out
	refute grep -q 'Initializing 2 distributed tasks' dc.sbatch.out
	# no step ran: not even the storage marks
	refute grep -q 'storage mark of job' dc.sbatch.out
	rm -f dc.sbatch.out
	id=$(submit dc.sbatch)
	state=$(wait_job "$id")
	cat dc.sbatch.out
	grep -q 'Initializing 2 distributed tasks' dc.sbatch.out
	grep -qF 'dpo: warning: the data check did not pass (exit 3, see above); training anyway. DPO_DATA_CHECK=strict stops the job instead.' dc.sbatch.out
}
