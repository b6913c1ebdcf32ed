#!/usr/bin/env bats
# distenv plan / distenv prepare: LLaMA-Factory run preparation
# (plugin/lf/), on the fixtures of tests/lf/ and on real directories
# (tmpfs under /dev/shm, checkpoint trees built here).

bats_require_minimum_version 1.5.0

setup() {
	DISTENV="$BATS_TEST_DIRNAME/../../distenv"
	LF="$BATS_TEST_DIRNAME/../lf"
	W="$BATS_TEST_TMPDIR"
	# node-local storage for output_dir: tmpfs (statfs TMPFS_MAGIC)
	SHM=$(mktemp -d /dev/shm/distenv-lf-bats.XXXXXX)
	unset FORCE_TORCHRUN PYTORCH_CUDA_ALLOC_CONF
	# the stack planned for: the pinned venv's, unless a test says
	# otherwise; no Python is asked (DPO_PYTHON=false: unknown)
	export DPO_PYTHON=false
	STACK=(--lf-version 0.9.5 --transformers-version 5.6.0)
	write_yaml full_dpo.yaml "$LF/qwen2-72b" "$LF/ds_z3_config.json" \
		"$SHM/out" >"$W/dpo.yaml"
}

teardown() {
	rm -rf -- "$SHM"
}

# write_yaml FIXTURE MODEL_DIR DS_PATH OUTPUT_DIR
write_yaml() {
	sed -e "s#MODEL_DIR#$2#" -e "s#DS_PATH#$3#" -e "s#OUTPUT_DIR#$4#" \
		"$LF/$1"
}

@test "plan prints the memory plan of Qwen2-72B full DPO on 2x8 GPUs" {
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 \
		--gpu-mem 80G --host-mem 2T
	[ "$status" -eq 0 ]
	[[ "$output" == *"model: 72.71B parameters, 72.71B trainable"* ]]
	[[ "$output" == *"deepspeed: $LF/ds_z3_config.json (ZeRO stage 3)"* ]]
	# no offload: 4L + 18P/16 = 80.8 GiB, + reference 2P/16 = 8.5 GiB
	[[ "$output" == *"per GPU:            89.3 GiB (model states 80.8 + frozen 8.5) of 80.0 GiB  TOO SMALL"* ]]
	[[ "$output" == *"(+ 135.4 GiB 16-bit gather) of 2048.0 GiB"* ]]
	[[ "$output" == *"model states need 89.3 GiB per GPU, more than the 80.0 GiB"* ]]
}

@test "plan with --offload cpu warns about host memory at save time" {
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 \
		--gpu-mem 80G --host-mem 1T --offload cpu
	[ "$status" -eq 0 ]
	[[ "$output" == *"offload: cpu (decided by distenv)"* ]]
	[[ "$output" == *"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"* ]]
	[[ "$output" == *"distenv: warning: node 0: host memory at checkpoint time: 1151.1 GiB needed"* ]]
	[[ "$output" == *"zero_to_fp32.py"* ]]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 \
		--gpu-mem 80G --host-mem 1T --offload cpu --check strict
	[ "$status" -eq 1 ]
	[[ "$output" == *"distenv: error: node 0: host memory at checkpoint time"* ]]
}

@test "PYTORCH_CUDA_ALLOC_CONF keeps the user's value" {
	PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256 run "$DISTENV" plan \
		"$W/dpo.yaml" --nodes 1 --offload cpu --host-mem 4T
	[ "$status" -eq 0 ]
	[[ "$output" == *"PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:256,expandable_segments:True"* ]]
}

@test "save_on_each_node: auto is true on tmpfs, false on a mount the site lists as shared" {
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 --host-mem 4T
	[ "$status" -eq 0 ]
	[[ "$output" == *"save_on_each_node: true (decided by distenv)"* ]]
	[[ "$output" == *"output_dir is on node-local storage"* ]]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 \
		--host-mem 4T --storage-policy "shared:$SHM"
	[ "$status" -eq 0 ]
	[[ "$output" == *"save_on_each_node: false (decided by distenv)"* ]]
	# one node: nothing to decide
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 1 --host-mem 4T
	[[ "$output" == *"save_on_each_node: false"* ]]
	[[ "$output" != *"decided by distenv"* ]]
}

@test "the user forcing save_on_each_node: true on shared storage is warned, strict fails" {
	echo "save_on_each_node: true" >>"$W/dpo.yaml"
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 \
		--host-mem 4T --storage-policy "shared:$SHM"
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: $W/dpo.yaml:45:1: save_on_each_node: true with output_dir on shared storage (site policy)"* ]]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 \
		--host-mem 4T --storage-policy "shared:$SHM" --check strict
	[ "$status" -eq 1 ]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 \
		--host-mem 4T --storage-policy "shared:$SHM" --check off
	[ "$status" -eq 0 ]
	[[ "$output" != *warning* ]]
}

@test "a syntax error names file:line:col" {
	printf 'stage: dpo\ncutoff_len: [1, 2\nbf16: true\n' >"$W/bad.yaml"
	run "$DISTENV" plan "$W/bad.yaml" --nodes 1
	[ "$status" -eq 1 ]
	# where the open bracket is, not the line after, where libyaml noticed
	[[ "$output" == "distenv: error: $W/bad.yaml:2:13: YAML/JSON syntax error: "*"that starts here (noticed at 3:5)"* ]]
	printf '{"zero_optimization": {"stage": 3,,}}' >"$W/ds.json"
	write_yaml full_dpo.yaml "$LF/qwen2-72b" "$W/ds.json" "$SHM/out" >"$W/d2.yaml"
	run "$DISTENV" plan "$W/d2.yaml" --nodes 1
	[ "$status" -eq 1 ]
	[[ "$output" == "distenv: error: $W/ds.json:1:"*"syntax error"* ]]
}

@test "unknown keys fail with the nearest known key (off skips the check); wrong types fail" {
	echo "cuttoff_len: 4096" >>"$W/dpo.yaml"
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 1 --host-mem 4T
	[ "$status" -eq 1 ]
	[[ "$output" == *"error: $W/dpo.yaml:45:1: unknown LLaMA-Factory key 'cuttoff_len'"*"Did you mean 'cutoff_len'?"* ]]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 1 --host-mem 4T --check off
	[ "$status" -eq 0 ]
	echo "save_on_each_node: [yes]" >>"$W/dpo.yaml"
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 1
	[ "$status" -eq 1 ]
	[[ "$output" == "distenv: error: $W/dpo.yaml:46:20: save_on_each_node: a list is not true or false"* ]]
}

@test "cutoff_len beyond max_position_embeddings and a missing deepspeed file are reported" {
	write_yaml full_dpo.yaml "$LF/llama3-8b" "$W/none.json" "$SHM/out" |
		sed 's/^cutoff_len: 2048/cutoff_len: 16384/' >"$W/l.yaml"
	run "$DISTENV" plan "$W/l.yaml" --nodes 2 --gpus-per-node 8
	[ "$status" -eq 1 ]
	[[ "$output" == *"cutoff_len 16384 is larger than the model's max_position_embeddings 8192"* ]]
	[[ "$output" == *"deepspeed: $W/none.json cannot be read: No such file or directory"* ]]
}

@test "a symbolic link as the training YAML is refused, the file itself never changes" {
	ln -s "$W/dpo.yaml" "$W/link.yaml"
	run "$DISTENV" plan "$W/link.yaml" --nodes 1
	[ "$status" -eq 1 ]
	[[ "$output" == *"$W/link.yaml: cannot open the training YAML: it is a symbolic link. Name the file itself, not a symbolic link"* ]]
	sum=$(sha256sum "$W/dpo.yaml")
	"$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 --offload cpu \
		--host-mem 4T >/dev/null
	[ "$(sha256sum "$W/dpo.yaml")" = "$sum" ]
}

# A checkpoint tree as node NODE of a 2-node, 2-GPU ZeRO-3 run holds it:
# rank files of its own ranks; trainer_state.json and `latest` only on
# node 0 unless save_on_each_node (docs/contracts.md 2).
make_ckpt() { # DIR NODE SAVE_ON_EACH_NODE
	local c="$1/checkpoint-500" r
	mkdir -p "$c/global_step500"
	if [ "$2" -eq 0 ] || [ "$3" = yes ]; then
		echo '{}' >"$c/trainer_state.json"
		echo global_step500 >"$c/latest"
	fi
	for r in $((2 * $2)) $((2 * $2 + 1)); do
		: >"$c/global_step500/bf16_zero_pp_rank_${r}_mp_rank_00_optim_states.pt"
		: >"$c/global_step500/zero_pp_rank_${r}_mp_rank_00_model_states.pt"
		: >"$c/rng_state_${r}.pth"
	done
}

@test "resume preflight lists what node 1 lacks without save_on_each_node" {
	make_ckpt "$SHM/n1" 1 no
	write_yaml full_dpo.yaml "$LF/qwen2-72b" "$LF/ds_z3_config.json" "$SHM/n1" |
		sed 's/^overwrite_output_dir: true/overwrite_output_dir: false/' >"$W/r.yaml"
	run "$DISTENV" plan "$W/r.yaml" --nodes 2 --gpus-per-node 2 --node-id 1 --host-mem 8T
	[ "$status" -eq 1 ]
	[[ "$output" == *"resume: checkpoint-500"* ]]
	[[ "$output" == *"distenv: error: node 1: cannot resume from checkpoint-500: 2 file(s) this node's ranks need are missing: checkpoint-500/trainer_state.json, checkpoint-500/latest"* ]]
}

@test "resume preflight passes on node 1 with save_on_each_node, and with an explicit path" {
	make_ckpt "$SHM/n1" 1 yes
	write_yaml full_dpo.yaml "$LF/qwen2-72b" "$LF/ds_z3_config.json" "$SHM/n1" |
		sed 's/^overwrite_output_dir: true/overwrite_output_dir: false/' >"$W/r.yaml"
	run "$DISTENV" plan "$W/r.yaml" --nodes 2 --gpus-per-node 2 --node-id 1 --host-mem 8T
	[ "$status" -eq 0 ]
	[[ "$output" == *"resume: checkpoint-500"* ]]
	# explicit resume_from_checkpoint, seen from node 0: rank 0/1 missing
	write_yaml full_dpo.yaml "$LF/qwen2-72b" "$LF/ds_z3_config.json" "$SHM/o" |
		sed "s#^resume_from_checkpoint: null#resume_from_checkpoint: $SHM/n1/checkpoint-500#" >"$W/e.yaml"
	run "$DISTENV" plan "$W/e.yaml" --nodes 2 --gpus-per-node 2 --node-id 0 --host-mem 8T
	[ "$status" -eq 1 ]
	[[ "$output" == *"overwrite_output_dir: true together with resume_from_checkpoint"* ]]
	[[ "$output" == *"node 0: cannot resume from checkpoint-500: 6 file(s)"*"zero_pp_rank_0_mp_rank_00_model_states.pt"* ]]
}

@test "auto-resume skipped by overwrite_output_dir: true is warned" {
	make_ckpt "$SHM/n0" 0 no
	write_yaml full_dpo.yaml "$LF/qwen2-72b" "$LF/ds_z3_config.json" "$SHM/n0" >"$W/o.yaml"
	run "$DISTENV" plan "$W/o.yaml" --nodes 1 --host-mem 8T
	[ "$status" -eq 0 ]
	[[ "$output" == *"resume: no"* ]]
	[[ "$output" == *"output_dir holds checkpoint-500 but overwrite_output_dir: true starts from scratch"* ]]
}

@test "prepare writes the resolved copies once per step into a private directory" {
	export SLURM_JOB_ID=77 SLURM_STEP_ID=3 SLURM_STEP_NUM_NODES=2
	export SLURM_NODEID=0 SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=0
	export SLURM_LOCALID=0 SLURM_STEP_TASKS_PER_NODE="1(x2)"
	export SLURMD_NODENAME=localhost SLURM_STEP_NODELIST=localhost
	export TMPDIR="$W/tmp" CUDA_VISIBLE_DEVICES=0,1
	mkdir -p "$TMPDIR"
	sum=$(sha256sum "$W/dpo.yaml")
	run --separate-stderr "$DISTENV" prepare --lf-config "$W/dpo.yaml" \
		--offload cpu --model-params 8B
	[ "$status" -eq 0 ]
	d="$TMPDIR/distenv-$(id -u)-77.3-0"
	[ "${lines[0]}" = "export DISTENV_LF_CONFIG='$d/lf_config.yaml'" ]
	[ "${lines[1]}" = "export PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True'" ]
	[ "$(stat -c %a "$d")" = 700 ]
	[ "$(stat -c %a "$d/lf_config.yaml")" = 600 ]
	grep -q "^deepspeed: \"$d/ds_config.json\"  # ZeRO-3$" "$d/lf_config.yaml"
	grep -q '^save_on_each_node: true$' "$d/lf_config.yaml"
	grep -q '"device": "cpu"' "$d/ds_config.json"
	[ "$(sha256sum "$W/dpo.yaml")" = "$sum" ]
	# the same step again: the file is kept, not rewritten
	before=$(stat -c %i "$d/lf_config.yaml")
	run "$DISTENV" prepare --lf-config "$W/dpo.yaml" --offload cpu --model-params 8B
	[ "$status" -eq 0 ]
	[ "$(stat -c %i "$d/lf_config.yaml")" = "$before" ]
	# a copy an earlier job with the same job and step id left there
	# (ids start again after a controller's state is reset) is replaced
	printf 'model_name_or_path: /gone\n' >"$d/lf_config.yaml"
	run "$DISTENV" prepare --lf-config "$W/dpo.yaml" --offload cpu --model-params 8B
	[ "$status" -eq 0 ]
	refute_gone=$(grep -c '/gone' "$d/lf_config.yaml" || true)
	[ "$refute_gone" -eq 0 ]
	grep -q '^save_on_each_node: true$' "$d/lf_config.yaml"
	[ "$(stat -c %a "$d/lf_config.yaml")" = 600 ]
	# a directory of that name that is not private is refused
	chmod 755 "$d"
	SLURM_STEP_ID=3 run "$DISTENV" prepare --lf-config "$W/dpo.yaml" --model-params 8B
	[ "$status" -eq 1 ]
	[[ "$output" == *"exists but is not a private directory of this user"* ]]
}

@test "prepare: a TMPDIR with a space is passed over for /tmp (LLaMA-Factory splits torchrun's command on whitespace); a PYTORCH_CUDA_ALLOC_CONF with more than expandable segments turns OPTIM_TORCH off" {
	export SLURM_JOB_ID=78 SLURM_STEP_ID=0 SLURM_STEP_NUM_NODES=2
	export SLURM_NODEID=1 SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=1
	export SLURM_LOCALID=0 SLURM_STEP_TASKS_PER_NODE="1(x2)"
	export SLURMD_NODENAME=localhost SLURM_STEP_NODELIST=localhost
	export TMPDIR="$W/tmp dir" PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64
	mkdir -p "$TMPDIR"
	d="/tmp/distenv-$(id -u)-78.0-1"
	rm -rf "$d"
	run --separate-stderr "$DISTENV" prepare --lf-config "$W/dpo.yaml" \
		--offload cpu --model-params 8B
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "export DISTENV_LF_CONFIG='$d/lf_config.yaml'" ]
	[ "${lines[1]}" = "export PYTORCH_CUDA_ALLOC_CONF='max_split_size_mb:64,expandable_segments:True'" ]
	[ "${lines[2]}" = "export OPTIM_TORCH=0" ]
	[ "${lines[3]}" = "export TORCH_NCCL_AVOID_RECORD_STREAMS=1" ]
	grep -qF "written under /tmp, not TMPDIR=\"$W/tmp dir\": LLaMA-Factory splits torchrun's command line on whitespace" "$d/lf_config.yaml"
	[ -z "$(ls -A "$TMPDIR")" ]
	rm -r "$d"
}

@test "prepare --lf-dir DIR: the copies go under DIR, not TMPDIR, the copy's deepspeed: too, and its header says which directory and why; a relative or blank DIR is refused naming the option and the fix" {
	export SLURM_JOB_ID=79 SLURM_STEP_ID=2 SLURM_STEP_NUM_NODES=2
	export SLURM_NODEID=1 SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=1
	export SLURM_LOCALID=0 SLURM_STEP_TASKS_PER_NODE="1(x2)"
	export SLURMD_NODENAME=localhost SLURM_STEP_NODELIST=localhost
	export TMPDIR="$W/tmp"
	mkdir -p "$TMPDIR" "$W/lfdir"
	run --separate-stderr "$DISTENV" prepare --lf-config "$W/dpo.yaml" \
		--lf-dir "$W/lfdir" --offload cpu --model-params 8B
	[ "$status" -eq 0 ]
	d="$W/lfdir/distenv-$(id -u)-79.2-1"
	[ "${lines[0]}" = "export DISTENV_LF_CONFIG='$d/lf_config.yaml'" ]
	[ "$(stat -c %a "$d")" = 700 ]
	grep -q "^deepspeed: \"$d/ds_config.json\"  # ZeRO-3$" "$d/lf_config.yaml"
	grep -q '"device": "cpu"' "$d/ds_config.json"
	grep -qF "Written in $d, under the directory of --distenv-lf-dir." "$d/lf_config.yaml"
	[ -z "$(ls -A "$TMPDIR")" ]
	# without it: TMPDIR, and the header says so
	run --separate-stderr "$DISTENV" prepare --lf-config "$W/dpo.yaml" \
		--model-params 8B
	[ "$status" -eq 0 ]
	t="$TMPDIR/distenv-$(id -u)-79.2-1"
	[ "${lines[0]}" = "export DISTENV_LF_CONFIG='$t/lf_config.yaml'" ]
	grep -qF "Written in $t, under the directory of TMPDIR." "$t/lf_config.yaml"
	# nor TMPDIR: /tmp, said so
	SLURM_JOB_ID=80 run --separate-stderr env -u TMPDIR "$DISTENV" prepare \
		--lf-config "$W/dpo.yaml" --model-params 8B
	[ "$status" -eq 0 ]
	u="/tmp/distenv-$(id -u)-80.2-1"
	[ "${lines[0]}" = "export DISTENV_LF_CONFIG='$u/lf_config.yaml'" ]
	grep -qF "Written in $u, under the directory of the default /tmp (TMPDIR is not set)." "$u/lf_config.yaml"
	rm -r "$u"
	run "$DISTENV" prepare --lf-config "$W/dpo.yaml" --lf-dir lfdir
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: --lf-dir: 'lfdir' is not an absolute path. Give an absolute directory that exists on every node and that the job's container, if any, mounts at the same path (e.g. beside output_dir)" ]
	run "$DISTENV" prepare --lf-config "$W/dpo.yaml" --lf-dir "$W/a b"
	[ "$status" -eq 2 ]
	[[ "$output" == "distenv: error: --lf-dir: '$W/a b' has the character ' ' (0x20), which the shell treats specially"* ]]
	# a DIR that does not exist: the step's folder cannot be made there
	run "$DISTENV" prepare --lf-config "$W/dpo.yaml" --lf-dir "$W/none" --model-params 8B
	[ "$status" -eq 1 ]
	[[ "$output" == *"$W/none/distenv-$(id -u)-79.2-1: cannot create: No such file or directory. Give --distenv-lf-dir (or TMPDIR) an existing, writable directory"* ]]
}

@test "bad option values fail with the accepted values" {
	run "$DISTENV" plan "$W/dpo.yaml" --offload nvme
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: --offload: 'nvme' is not accepted. Use none, cpu or auto" ]
	run "$DISTENV" plan "$W/dpo.yaml" --gpu-mem 80X
	[ "$status" -eq 2 ]
	[[ "$output" == *"'80X' is not a memory size"* ]]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --node-id 2
	[ "$status" -eq 2 ]
	run "$DISTENV" plan
	[ "$status" -eq 2 ]
}

@test "sizes need a unit: a bare 80 or 72 is refused with the fix, not planned as 80 MiB or 72 parameters" {
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 --gpu-mem 80
	[ "$status" -eq 2 ]
	[ "$output" = "distenv: error: --gpu-mem: '80' is not a memory size with a unit. Write the size with its unit: 80G, 141GB, 512M, 2T (from 1M to 1P)" ]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 --model-params 72
	[ "$status" -eq 2 ]
	[[ "$output" == *"--model-params: '72' is not a parameter count with a unit. Write the count with its unit: 70B"* ]]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --gpus-per-node 8 --gpu-mem 80GB --host-mem 4T
	[ "$status" -eq 0 ]
	grep -qF "resolved settings for $W/dpo.yaml (2 nodes x 8 GPUs, node 0)" <<<"$output"
}

@test "plan without --nodes or --gpus-per-node says in its first line what it assumed" {
	run "$DISTENV" plan "$W/dpo.yaml" --host-mem 4T
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "resolved settings for $W/dpo.yaml (1 node x 1 GPU, node 0); assumed --nodes 1 --gpus-per-node 1 (not given: give both for the real step)" ]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 2 --host-mem 4T
	[[ "${lines[0]}" == *"(2 nodes x 1 GPU, node 0); assumed --gpus-per-node 1 (not given"* ]]
}

@test "plan prints the longest DPO prompt of Qwen2-72B on 8x8 GPUs of 80G, per term and per switch" {
	unset OPTIM_TORCH
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 8 --gpus-per-node 8 \
		--gpu-mem 80G "${STACK[@]}" --host-mem 2T
	[ "$status" -eq 0 ]
	# LLaMA-Factory 0.9.5's launcher turns expandable segments on
	[[ "$output" == *"prompt up to 4886 tokens with 1024-token answers (band 4692-5080: fragmentation, expandable_segments on); row (cutoff_len) up to 5910"* ]]
	[[ "$output" == *"step: 1 example(s) x 2 rows, reference model yes, gradient checkpointing on, liger off, unsloth_gc off, attention sdpa"* ]]
	# at the YAML's cutoff_len 2048: 2 x 2048 tokens x 152064 x 20 bytes
	[[ "$output" == *"logits            11.6 GiB"* ]]
	[[ "$output" == *"buys the most: offload"* ]]
	[[ "$output" != *"cutoff_len 2048"* ]]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 8 --gpus-per-node 8 \
		--gpu-mem 80G "${STACK[@]}" --host-mem 2T --answer-tokens 2048
	[[ "$output" == *"prompt up to 3862 tokens with 2048-token answers"* ]]
	# without expandable segments the band widens
	OPTIM_TORCH=0 run "$DISTENV" plan "$W/dpo.yaml" --nodes 8 \
		--gpus-per-node 8 --gpu-mem 80G "${STACK[@]}" --host-mem 2T
	[[ "$output" == *"prompt up to 3965 tokens with 1024-token answers (band 3237-4692: fragmentation, expandable_segments off)"* ]]
}

@test "a cutoff_len longer than the longest row that fits is a warning, an error under strict" {
	unset OPTIM_TORCH
	sed -i 's/^cutoff_len: 2048/cutoff_len: 9216/' "$W/dpo.yaml"
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 8 --gpus-per-node 8 \
		--gpu-mem 80G "${STACK[@]}" --host-mem 2T
	[ "$status" -eq 0 ]
	[[ "$output" == *"distenv: warning: $W/dpo.yaml:20:1: cutoff_len 9216: a DPO step of that length needs 104.9 GiB per GPU; the longest row that fits is 5910 tokens"* ]]
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 8 --gpus-per-node 8 \
		--gpu-mem 80G "${STACK[@]}" --host-mem 2T --check strict
	[ "$status" -eq 1 ]
	[[ "$output" == *"distenv: error: $W/dpo.yaml:20:1: cutoff_len 9216"* ]]
	# with offload a row of 8192 fits (up to 8473)
	sed -i 's/^cutoff_len: 9216/cutoff_len: 8192/' "$W/dpo.yaml"
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 8 --gpus-per-node 8 \
		--gpu-mem 80G "${STACK[@]}" --host-mem 2T --offload cpu --check strict
	[ "$status" -eq 0 ]
}

@test "plan --json prints one object with the longest prompt, the terms and host memory at save" {
	unset OPTIM_TORCH
	run --separate-stderr "$DISTENV" plan "$W/dpo.yaml" --nodes 8 \
		--gpus-per-node 8 --gpu-mem 80G "${STACK[@]}" --host-mem 2T --json
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
o = json.loads(sys.argv[1])
assert o["max_prompt_tokens"] == 4886, o
assert o["max_prompt_tokens_band"] == [4692, 5080]
assert o["gpu_bytes_per_term"]["logits"] == 20 * 2 * 2048 * 152064
assert o["gpu_bytes_per_term"]["ckpt_inputs"] == 2 * 8192 * 80 * 2 * 2048
assert o["host_bytes_at_save"] > 2 * 72.7e9
assert o["best_switch"] == "offload"
assert o["switch_max_prompt_tokens"]["expandable_segments"] is None
' "$output"
	# no model shape: null, and still one object
	run --separate-stderr "$DISTENV" plan "$W/dpo.yaml" --nodes 8 \
		--gpus-per-node 8 --json
	python3 -c 'import json, sys; assert json.loads(sys.argv[1])["max_prompt_tokens"] is None' "$output"
	run "$DISTENV" plan "$W/dpo.yaml" --answer-tokens 0
	[ "$status" -eq 2 ]
	[[ "$output" == *"--answer-tokens: '0' is not a token count"* ]]
}

@test "plan for LLaMA-Factory 0.9.3 with transformers 4.46.1: 22 bytes of logits, a shorter longest row than 0.9.5's" {
	run --separate-stderr "$DISTENV" plan "$W/dpo.yaml" --nodes 8 \
		--gpus-per-node 8 --gpu-mem 80G --host-mem 2T \
		--lf-version 0.9.3 --transformers-version 4.46.1 --json
	[ "$status" -eq 0 ]
	local old=$output
	run --separate-stderr "$DISTENV" plan "$W/dpo.yaml" --nodes 8 \
		--gpus-per-node 8 --gpu-mem 80G --host-mem 2T "${STACK[@]}" --json
	[ "$status" -eq 0 ]
	python3 -c '
import json, sys
old, new = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert old["logit_bytes_per_token_vocab"] == 22, old
assert new["logit_bytes_per_token_vocab"] == 20, new
assert old["stack"] == {"llamafactory": "0.9.3", "llamafactory_from": "--lf-version",
    "transformers": "4.46.1", "transformers_from": "--transformers-version",
    "model_cross_entropy": True}, old["stack"]
assert old["max_seq_tokens"] == 5530, old["max_seq_tokens"]
assert new["max_seq_tokens"] == 5910, new["max_seq_tokens"]
assert old["gpu_bytes_per_term"]["logits"] == 22 * 2 * 2048 * 152064
' "$old" "$output"
	# the text says the same
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 8 --gpus-per-node 8 \
		--gpu-mem 80G --host-mem 2T --lf-version 0.9.3 \
		--transformers-version 4.46.1
	[[ "$output" == *"row (cutoff_len) up to 5530"* ]]
	[[ "$output" == *"stack: LLaMA-Factory 0.9.3 (--lf-version), transformers 4.46.1 (--transformers-version): logits 22 bytes per token and vocabulary entry (the model's own cross-entropy"* ]]
}

@test "plan reads the versions from DPO_PYTHON; none found plans the safer case" {
	unset OPTIM_TORCH
	# a Python whose metadata says LLaMA-Factory 0.9.1, transformers 4.46.1
	printf '#!/bin/sh\nprintf "0.9.1\\n4.46.1\\n"\n' >"$W/python"
	chmod +x "$W/python"
	DPO_PYTHON=$W/python run "$DISTENV" plan "$W/dpo.yaml" --nodes 8 \
		--gpus-per-node 8 --gpu-mem 80G --host-mem 2T
	[ "$status" -eq 0 ]
	[[ "$output" == *"stack: LLaMA-Factory 0.9.1 ($W/python), transformers 4.46.1 ($W/python): logits 22 bytes"* ]]
	# 0.9.1 sets no expandable segments: the wide band
	[[ "$output" == *"(band 2963-4325: fragmentation, expandable_segments off); row (cutoff_len) up to 4668"* ]]
	# an option wins over the Python
	DPO_PYTHON=$W/python run "$DISTENV" plan "$W/dpo.yaml" --nodes 8 \
		--gpus-per-node 8 --gpu-mem 80G --host-mem 2T --lf-version 0.9.5
	[[ "$output" == *"stack: LLaMA-Factory 0.9.5 (--lf-version), transformers 4.46.1 ($W/python): logits 20 bytes"* ]]
	# a Python that does not run: unknown, 22 bytes, expandable off
	run "$DISTENV" plan "$W/dpo.yaml" --nodes 8 --gpus-per-node 8 \
		--gpu-mem 80G --host-mem 2T
	[[ "$output" == *"stack: LLaMA-Factory unknown (false did not run: unknown), transformers unknown (false did not run: unknown): logits 22 bytes"* ]]
	[[ "$output" == *"expandable_segments off); row (cutoff_len) up to 4668"* ]]
	# a DPO_PYTHON that is not there: unknown, no wait
	DPO_PYTHON=$W/none run timeout 20 "$DISTENV" plan "$W/dpo.yaml" \
		--nodes 8 --gpus-per-node 8 --gpu-mem 80G --host-mem 2T
	[ "$status" -eq 0 ]
	[[ "$output" == *"stack: LLaMA-Factory unknown ($W/none did not run: unknown)"* ]]
}

@test "an invalid version is refused, naming the option and the form" {
	run "$DISTENV" plan "$W/dpo.yaml" --lf-version 0.9.x
	[ "$status" -eq 2 ]
	[[ "$output" == *"--lf-version: '0.9.x' is not a version: give it as pip shows it, MAJOR.MINOR[.PATCH] (0.9.5, 4.46.1), or unknown"* ]]
	run "$DISTENV" plan "$W/dpo.yaml" --transformers-version v4.46
	[ "$status" -eq 2 ]
	[[ "$output" == *"--transformers-version: 'v4.46' is not a version"* ]]
	run "$DISTENV" plan "$W/dpo.yaml" --lf-version ''
	[ "$status" -eq 2 ]
	[[ "$output" == *"--lf-version: '' is not a version"* ]]
}
