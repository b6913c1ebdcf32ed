#!/usr/bin/env bats
# The DPO job templates (templates/) on the namespace Slurm cluster with
# the launcher of LLaMA-Factory 0.9.1-0.9.2: a stand-in for
# `llamafactory-cli train` that builds torchrun's command as those
# versions' cli.py does (one shell string; tests/cluster/lf/bin/), and a
# small real DPO training on CPU in place of LLaMA-Factory's trainer
# (tests/cluster/lf/dpo_train.py, Gloo DDP, 2 nodes x 2 processes). The
# real LLaMA-Factory 0.9.5 runs the templates in llamafactory.bats, which
# also holds the trap of save_on_each_node: false and the preflight that
# stops it.
# Each node's slurmd has a private tmpfs at $LOCAL (cluster.sh
# --node-local), a node-local disk; the rest of the file system is the same
# on every node, a shared disk.
#
# The templates run unchanged: template_copy replaces only the lines of
# their parameter block (node count, GPUs, YAML, ...) and checks that every
# other line is the template's. The YAMLs the jobs read are the templates'
# YAMLs with the test's model, data, output_dir, step counts, learning rate
# and process-group timeout (test_yaml).

load helpers
load lf_helpers

LFBIN="$TOP/tests/cluster/lf/bin"
TINY="$TOP/tests/cluster/lf/tiny_model"
MASTER="$CLUSTER_NET.1"

setup_file() { cluster_file_setup 2 "" --node-local "$DISTENV_CLUSTER_DIR/node-local"; }
teardown_file() { cluster_file_teardown; }

setup() {
	cluster_test_setup
	# The stand-in launcher, for these jobs only. The resolved configs go
	# to the node's own disk, as $TMPDIR on a real node would.
	export PATH="$LFBIN:$PATH" TMPDIR="$LOCAL"
}

# losses FILE: "step loss" lines logged by rank 0
losses() {
	grep -oE 'rank 0/4 node=n1: step [0-9]+/[0-9]+ loss=[0-9.]+' "$1" |
		sed -E 's/.*step ([0-9]+)\/[0-9]+ loss=/\1 /'
}

@test "cluster.sh --node-local: each node has its own tmpfs at the same path, invisible to the other node and to the root namespace" {
	rm -f "$LOCAL/who"
	# shellcheck disable=SC2016 # expanded on the node
	run srun -N2 --ntasks-per-node=1 bash -c 'hostname >"$1/who"; sleep 1; echo "$(hostname) $(cat "$1/who") $(findmnt -n -o SOURCE,FSTYPE "$1" | tr -s " ")"' sh "$LOCAL"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx 'n1 n1 node-local-n1 tmpfs' <<<"$output"
	grep -qx 'n2 n2 node-local-n2 tmpfs' <<<"$output"
	[ ! -e "$LOCAL/who" ]
	refute findmnt "$LOCAL"
}

@test "templates: under 70 lines each, strict shell, shellcheck clean, one parameter block, distenv options, the shared job script sourced once; it holds srun --kill-on-bad-exit=1 ... llamafactory-cli train \"\$DISTENV_LF_CONFIG\", no nohup or hand-set rank" {
	local t job=$TPL/dpo_job.bash
	for t in dpo_full_zero3 dpo_full_zero3_offload dpo_lora_zero3 \
		dpo_full_zero3_pyxis dpo_full_zero3_apptainer; do
		t=$TPL/$t.sbatch
		shellcheck -x -P "$TOP" "$t"
		[ "$(wc -l <"$t")" -lt 70 ]
		grep -qx 'set -euo pipefail' "$t"
		# sbatch reads no #SBATCH line after the first command
		first=$(grep -nvE '^[[:space:]]*(#|$)' "$t" | head -n 1 | cut -d: -f1)
		last=$(grep -n '^#SBATCH' "$t" | tail -n 1 | cut -d: -f1)
		[ "$last" -lt "$first" ]
		[ "$(grep -c '^# ---- parameters' "$t")" -eq 1 ]
		[ "$(grep -c '^# ---- end of parameters' "$t")" -eq 1 ]
		grep -qE '^#SBATCH --ntasks-per-node=1 --distenv( |$)' "$t"
		grep -qE '^#SBATCH --distenv-lf-config=templates/lf/qwen2_72b_[a-z_]+\.yaml$' "$t"
		# the shared script, then its two steps, once each and in order
		# shellcheck disable=SC2016 # the literal lines of the template
		grep -nxE 'source "\$\{DPO_JOB_SCRIPT:-templates/dpo_job\.bash\}"|dpo_job_start "\$0"|dpo_job_train' "$t" | cut -d: -f2- >calls
		printf '%s\n' 'source "${DPO_JOB_SCRIPT:-templates/dpo_job.bash}"' 'dpo_job_start "$0"' dpo_job_train | diff - calls
		# no step of its own
		[ "$(grep -c '^[[:space:]]*srun' "$t")" -eq 0 ]
		# commands only (comments may explain why there is no nohup)
		grep -v '^[[:space:]]*#' "$t" >commands
		refute grep -qE 'nohup|(MASTER_ADDR|MASTER_PORT|NODE_RANK|RANK|NNODES|NPROC_PER_NODE)=' commands
		# every YAML a template names exists
		[ -f "$TOP/$(sed -n 's/^#SBATCH --distenv-lf-config=//p' "$t")" ]
	done
	grep -q 'expandable_segments:True' "$TPL/dpo_full_zero3_offload.sbatch"
	grep -qE '^#SBATCH .*--distenv-offload=cpu' "$TPL/dpo_full_zero3_offload.sbatch"
	# the shared script: the launch (DISTENV_LF_CONFIG is the step's,
	# expanded in the task), and one step before it that marks output_dir's
	# storage; the restart's choice is the third srun
	shellcheck "$job"
	# shellcheck disable=SC2016 # the literal lines of the script
	[ "$(grep -cxF '		srun --kill-on-bad-exit=1 ${opts[@]+"${opts[@]}"} ${run[@]+"${run[@]}"} \' "$job")" -eq 1 ]
	# shellcheck disable=SC2016 # the literal lines of the script
	[ "$(grep -cxF "			bash -c 'exec llamafactory-cli train \"\$DISTENV_LF_CONFIG\"'" "$job")" -eq 1 ]
	grep -qxF '	srun --ntasks-per-node=1 --distenv-mark-storage true' "$job"
	[ "$(grep -cE '^[[:space:]]*srun|\$\(srun' "$job")" -eq 3 ]
	grep -v '^[[:space:]]*#' "$job" >commands
	refute grep -qE 'nohup|(MASTER_ADDR|MASTER_PORT|NODE_RANK|RANK|NNODES|NPROC_PER_NODE)=' commands
}

@test "container templates: the job of dpo_full_zero3 (the same #SBATCH lines), only the training step in the container; pyxis: image, mounts, the working directory and --container-env keeping distenv's values; Apptainer: binds, no --cleanenv, check-env first" {
	local full=$TPL/dpo_full_zero3.sbatch t
	for t in pyxis apptainer; do
		t=$TPL/dpo_full_zero3_$t.sbatch
		grep '^#SBATCH' "$full" | grep -v -- --job-name >want
		grep '^#SBATCH' "$t" | grep -v -- --job-name | diff want -
		grep -v '^[[:space:]]*#' "$t" >commands
		# a container array for dpo_job_train, and no step of its own
		grep -qE '^dpo_(srun_opts|exec)=\(' commands
		refute grep -qE '(^|[[:space:]])(srun|sbatch)[[:space:]]' commands
	done
	t=$TPL/dpo_full_zero3_pyxis.sbatch
	# shellcheck disable=SC2016 # the literal words of the template
	grep -qF -- '--container-image="$DPO_IMAGE" --container-mounts="$DPO_MOUNTS"' "$t"
	# shellcheck disable=SC2016 # the literal words of the template
	grep -qF -- '--container-workdir="$PWD" --container-env="$dpo_env")' "$t"
	# the names enroot's PyTorch hook writes, and those distenv derives
	env=$(bash -c "$(grep '^dpo_env' "$t"); echo \"\$dpo_env\"")
	for name in MASTER_ADDR MASTER_PORT NNODES NODE_RANK NPROC_PER_NODE NCCL_SOCKET_IFNAME GLOO_SOCKET_IFNAME DISTENV_LF_CONFIG; do
		grep -qE "(^|,)$name(,|$)" <<<"$env"
	done
	refute grep -qE '(^|,)(RANK|LOCAL_RANK|WORLD_SIZE)(,|$)' <<<"$env"
	t=$TPL/dpo_full_zero3_apptainer.sbatch
	# shellcheck disable=SC2016 # the literal words of the template
	grep -qF 'dpo_exec=(apptainer exec --nv --bind "$DPO_BINDS" --pwd "$PWD" "$DPO_IMAGE"' "$t"
	# shellcheck disable=SC2016 # the literal words of the template
	grep -qxF '	"$DPO_DISTENV" check-env --)' "$t"
	grep -v '^[[:space:]]*#' "$t" >commands
	refute grep -qE -- '--cleanenv|--containall|--contain |(^|[[:space:]])-[ceC]([[:space:]]|$)' commands
}

@test "template YAMLs and DeepSpeed files: DPO keys, ZeRO-3, offload only in the offload config, the sample dataset registered" {
	run /usr/bin/python3 - "$TPL" <<'EOF'
import json, os, sys, yaml
tpl = sys.argv[1]
top = os.path.dirname(tpl)
def ds(name):
    with open(os.path.join(tpl, "deepspeed", name)) as f:
        return json.load(f)
z3, z3o = ds("ds_z3.json"), ds("ds_z3_offload.json")
for d in (z3, z3o):
    z = d["zero_optimization"]
    assert z["stage"] == 3 and z["stage3_gather_16bit_weights_on_model_save"] is True
    assert d["bf16"]["enabled"] == "auto"
assert "offload_param" not in z3["zero_optimization"] and "offload_optimizer" not in z3["zero_optimization"]
for k in ("offload_param", "offload_optimizer"):
    assert z3o["zero_optimization"][k] == {"device": "cpu", "pin_memory": True}, k
want = {"stage": "dpo", "pref_loss": "sigmoid", "bf16": True, "overwrite_output_dir": False,
        "resume_from_checkpoint": None, "per_device_train_batch_size": 1, "dataset": "distenv_dpo_demo"}
cases = {"qwen2_72b_full_dpo.yaml": ("full", "ds_z3.json", 9216),
         "qwen2_72b_full_dpo_offload.yaml": ("full", "ds_z3_offload.json", 13824),
         "qwen2_72b_lora_dpo.yaml": ("lora", "ds_z3.json", 9216)}
for name, (ft, dsname, cutoff) in cases.items():
    with open(os.path.join(tpl, "lf", name)) as f:
        y = yaml.safe_load(f)
    for k, v in want.items():
        assert y[k] == v, (name, k, y.get(k))
    assert y["finetuning_type"] == ft and y["cutoff_len"] == cutoff, name
    assert y["deepspeed"] == "templates/deepspeed/" + dsname, name
    assert 0 < y["pref_beta"] <= 1 and y["save_steps"] > 0 and "save_on_each_node" not in y, name
    assert "Qwen2-72B-Instruct" in y["model_name_or_path"], name
    assert os.path.isfile(os.path.join(top, y["deepspeed"])), name
with open(os.path.join(tpl, "lf", "qwen2_72b_full_dpo_offload.yaml")) as f:
    y = yaml.safe_load(f)
assert y["gradient_checkpointing"] and y["enable_liger_kernel"] and y["use_unsloth_gc"]
with open(os.path.join(tpl, "data", "dataset_info.json")) as f:
    e = json.load(f)["distenv_dpo_demo"]
assert e["ranking"] is True
with open(os.path.join(tpl, "data", e["file_name"])) as f:
    rows = json.load(f)
assert len(rows) >= 8
for r in rows:
    assert r[e["columns"]["chosen"]] != r[e["columns"]["rejected"]]
print("OK", len(rows), "pairs")
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "OK 16 pairs" ]
}

@test "stand-in llamafactory-cli: without FORCE_TORCHRUN a DeepSpeed run is refused, as LLaMA-Factory's parser does" {
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" "$BATS_TEST_TMPDIR/x.yaml" "output_dir=$BATS_TEST_TMPDIR/out"
	run env -u FORCE_TORCHRUN "$LFBIN/llamafactory-cli" train "$BATS_TEST_TMPDIR/x.yaml"
	echo "$output"
	[ "$status" -eq 1 ]
	# shellcheck disable=SC2016 # LLaMA-Factory's message, backquotes and all
	[[ "$output" == *'Please use `FORCE_TORCHRUN=1` to launch DeepSpeed training.'* ]]
	[ ! -e "$BATS_TEST_TMPDIR/out" ]
}

@test "node-local disks, save_on_each_node: true: LLaMA-Factory's torchrun command from distenv's variables, 2x2 DPO whose loss falls, each node's checkpoint as Transformers + DeepSpeed write it" {
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" ref.yaml "output_dir=$LOCAL/ref" save_on_each_node=true
	run batch <<EOF
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=1 --distenv --distenv-nproc=2
srun --kill-on-bad-exit=1 llamafactory-cli train $BATS_FILE_TMPDIR/ref.yaml
EOF
	echo "$output"
	out=${lines[0]}
	cat "$out"
	[ "$status" -eq 0 ]
	# the command LLaMA-Factory builds, from what distenv exported per node
	port=$(grep -oE 'Initializing distributed tasks at: [0-9.]+:[0-9]+' "$out" | sort -u)
	[ "$(wc -l <<<"$port")" -eq 1 ]
	[[ "$port" == *" $MASTER:"* ]]
	for r in 0 1; do
		grep -qE "^llamafactory-cli: /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 --nnodes 2 --node_rank $r --nproc_per_node 2 --master_addr $MASTER --master_port ${port##*:} .*/dpo_train.py $BATS_FILE_TMPDIR/ref.yaml$" "$out"
	done
	grep -q 'rank 0/4 node=n1: local_rank 0 node_rank 0 should_save=True' "$out"
	grep -q 'rank 2/4 node=n2: local_rank 0 node_rank 1 should_save=True' "$out"
	grep -q 'rank 3/4 node=n2: local_rank 1 node_rank 1 should_save=False' "$out"
	# DPO's sigmoid loss starts at log 2 (policy = reference) and falls
	losses "$out" >ref.losses
	cat ref.losses
	[ "$(wc -l <ref.losses)" -eq 8 ]
	[ "$(head -1 ref.losses)" = "1 0.693147" ]
	awk 'NR==1{first=$2} END{exit !($2 < first - 0.2)}' ref.losses
	# node-local: each node holds its own ranks' files, and with
	# save_on_each_node its own trainer_state.json; DeepSpeed's latest is
	# global rank 0's only
	node_files "$LOCAL/ref" >files
	cat files
	for f in trainer_state.json latest training_args.bin rng_state_0.pth rng_state_1.pth pytorch_model.bin \
		global_step8/zero_pp_rank_0_mp_rank_00_model_states.pt global_step8/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt; do
		grep -qx "n1 checkpoint-8/$f" files
	done
	refute grep -qx 'n2 checkpoint-8/latest' files
	for f in trainer_state.json rng_state_2.pth rng_state_3.pth \
		global_step8/zero_pp_rank_2_mp_rank_00_model_states.pt global_step8/bf16_zero_pp_rank_3_mp_rank_00_optim_states.pt; do
		grep -qx "n2 checkpoint-8/$f" files
	done
	refute grep -qE '^n1 .*(rank_[23]_|rng_state_[23])' files
	refute grep -qE '^n2 .*(rank_[01]_|rng_state_[01]|pytorch_model.bin)' files
	[ "$(grep -c ' checkpoint-4/' files)" -eq "$(grep -c ' checkpoint-8/' files)" ]
}

@test "template dpo_full_zero3 on node-local disks: save_on_each_node resolved true; cancelled after checkpoint-4 and resubmitted, both nodes resume at step 4 and match an uninterrupted run" {
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" full.yaml "output_dir=$LOCAL/full"
	test_params "$BATS_FILE_TMPDIR/full.yaml"
	template_copy "$TPL/dpo_full_zero3.sbatch" full.sbatch "${template_params[@]}"
	# first run: stop it after its first checkpoint, the way a user does
	id=$(DPO_TEST_PAUSE_AFTER=4 submit full.sbatch)
	cancel_paused "$id" full.sbatch.out 4
	grep -q 'save_on_each_node=True' full.sbatch.out
	# decided by the nodes' storage marks, not the file system type
	grep -qE '^distenv: n2: storage mark of job [0-9]+ start 0 written in ' full.sbatch.out
	# the trainer read distenv's resolved copy, not the YAML given
	grep -q 'rank 0/4 node=n1: config /' full.sbatch.out
	refute grep -q "rank 0/4 node=n1: config $BATS_FILE_TMPDIR/full.yaml" full.sbatch.out
	node_files "$LOCAL/full" >files
	grep -qx 'n2 checkpoint-4/trainer_state.json' files
	refute grep -qx 'n2 checkpoint-4/latest' files
	refute grep -q 'checkpoint-8' files
	# resubmitted as it is
	state=$(resubmit full.sbatch)
	cat full.sbatch.out
	[ "$state" = COMPLETED ]
	for r in 0 1 2 3; do
		grep -qE "rank $r/4 node=n[12]: resumed from checkpoint-4 at step 4 of 8" full.sbatch.out
	done
	[ "$(grep -cE 'rank [0-3]/4 node=n1: resumed' full.sbatch.out)" -eq 2 ]
	grep -q 'done step 8' full.sbatch.out
	# steps 5-8 are the uninterrupted run's, to the last digit
	losses full.sbatch.out >resumed.losses
	cat resumed.losses
	[ "$(cut -d' ' -f1 resumed.losses | tr '\n' ' ')" = "5 6 7 8 " ]
	diff resumed.losses <(sed -n '5,8p' ref.losses)
}

@test "template dpo_full_zero3 on shared storage declared shared in the site file: save_on_each_node resolved false, one trainer_state.json, resume works; forcing it true warns" {
	# $shared is on this machine's root file system (ext4, node-local by
	# its statfs type): only the site file makes distenv treat it as shared.
	local shared=$BATS_FILE_TMPDIR/shared site=$DISTENV_CLUSTER_DIR/etc/distenv-site.yaml
	mkdir -p "$shared"
	printf 'version: 1\nstorage:\n  - {path: %s, type: shared}\n' "$shared" >"$site"
	chmod 0644 "$site"
	plugstack_with_distenv "config=$site"
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" sh.yaml "output_dir=$shared/out" max_steps=4
	test_params "$BATS_FILE_TMPDIR/sh.yaml"
	template_copy "$TPL/dpo_full_zero3.sbatch" sh.sbatch "${template_params[@]}"
	id=$(submit sh.sbatch)
	state=$(wait_job "$id")
	cat sh.sbatch.out
	[ "$state" = COMPLETED ]
	grep -q 'save_on_each_node=False' sh.sbatch.out
	grep -q 'zero_stage=3' sh.sbatch.out
	# one copy of everything, each rank's shard once
	[ -f "$shared/out/checkpoint-4/trainer_state.json" ]
	[ -f "$shared/out/checkpoint-4/latest" ]
	for r in 0 1 2 3; do
		[ -f "$shared/out/checkpoint-4/global_step4/zero_pp_rank_${r}_mp_rank_00_model_states.pt" ]
	done
	grep -q '"is_world_process_zero": true' "$shared/out/checkpoint-4/trainer_state.json"
	# resubmitted for 2 epochs: every rank resumes from the shared copy
	test_yaml "$TPL/lf/qwen2_72b_full_dpo.yaml" sh.yaml "output_dir=$shared/out"
	id=$(submit sh.sbatch)
	state=$(wait_job "$id")
	cat sh.sbatch.out
	[ "$state" = COMPLETED ]
	for r in 0 1 2 3; do
		grep -qE "rank $r/4 node=n[12]: resumed from checkpoint-4 at step 4 of 8" sh.sbatch.out
	done
	[ -f "$shared/out/checkpoint-8/trainer_state.json" ]
	# save_on_each_node forced true there is a warning, and under
	# --distenv-check=strict an error before launch
	lf_yaml sh.yaml c6.yaml save_on_each_node=true
	run srun -N2 --distenv --distenv-nproc=2 --distenv-lf-config=c6.yaml true
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qE '^distenv: warning: n2: .*save_on_each_node: true with output_dir on shared storage' <<<"$output"
	run srun -N2 --distenv --distenv-nproc=2 --distenv-check=strict --distenv-lf-config=c6.yaml true
	echo "$output"
	[ "$status" -ne 0 ]
	grep -qE '^distenv: error: n[12]: .*save_on_each_node: true with output_dir on shared storage' <<<"$output"
}

@test "the job survives its submitting shell: template dpo_lora_zero3 submitted from a session that gets SIGHUP and exits keeps training" {
	test_yaml "$TPL/lf/qwen2_72b_lora_dpo.yaml" lora.yaml "output_dir=$LOCAL/lora"
	test_params "$BATS_FILE_TMPDIR/lora.yaml"
	template_copy "$TPL/dpo_lora_zero3.sbatch" lora.sbatch "${template_params[@]}"
	# A terminal's session: sbatch, then the shell waits as a user would.
	# Its SIGHUP at the default action, as in a terminal, even where this
	# run ignores it (under nohup every child inherits the ignoring).
	# shellcheck disable=SC2016 # expanded by that shell
	env --default-signal=HUP setsid bash -c 'sbatch --parsable -o lora.sbatch.out -e lora.sbatch.out lora.sbatch >lora.id; sleep 300' \
		</dev/null >/dev/null 2>&1 3>&- &
	sid=$!
	for _ in $(seq 1 40); do
		if [ -s lora.id ]; then
			break
		fi
		sleep 0.5
	done
	wait_line lora.sbatch.out 'rank 0/4 node=n1: step 1/' "$(cat lora.id)"
	# the terminal closes: SIGHUP to the whole session, which exits
	kill -HUP -- "-$sid"
	wait "$sid" || true
	[ ! -d "/proc/$sid" ]
	state=$(wait_job "$(cat lora.id)")
	cat lora.sbatch.out
	[ "$state" = COMPLETED ]
	grep -q 'finetuning_type=lora' lora.sbatch.out
	grep -q 'done step 8' lora.sbatch.out
	refute grep -qi 'death signal\|SIGHUP' lora.sbatch.out
	losses lora.sbatch.out >lora.losses
	awk 'NR==1{first=$2} END{exit !(NR == 8 && $2 < first)}' lora.losses
	node_files "$LOCAL/lora" >files
	grep -qx 'n1 checkpoint-8/adapter_model.bin' files
	refute grep -q 'pytorch_model.bin' files
}

@test "interactive recipe (templates/README.md): salloc --distenv, srun --distenv-show, then a training step, no nohup" {
	test_yaml "$TPL/lf/qwen2_72b_lora_dpo.yaml" i.yaml "output_dir=$LOCAL/interactive" max_steps=2 save_steps=2
	# shellcheck disable=SC2016 # expanded by the step's shell
	run timeout 120 salloc -N2 --ntasks-per-node=1 --distenv --distenv-nproc=2 bash -c '
		srun --distenv-show true &&
		srun --kill-on-bad-exit=1 --distenv-lf-config="$1" \
			bash -c '\''exec llamafactory-cli train "$DISTENV_LF_CONFIG"'\''' sh "$BATS_FILE_TMPDIR/i.yaml"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^distenv: n2:   NODE_RANK=1  \[set\]' <<<"$output"
	[[ "$output" == *"rank 0/4 node=n1: config /"*"lf_config.yaml: output_dir=$LOCAL/interactive save_on_each_node=True finetuning_type=lora"* ]]
	grep -q 'rank 0/4 node=n1: done step 2' <<<"$output"
}
