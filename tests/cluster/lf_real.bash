# The real LLaMA-Factory 0.9.5 on the namespace cluster, for the cluster
# files that run the DPO templates with it (llamafactory.bats,
# requeue_nodes.bats): the pinned venv (contrib/lfstack/venv.sh), a tiny
# Qwen2 made at test time (contrib/lfstack/tiny_model.py), the CPU knobs
# of contrib/lfstack/cpu.yaml, and tests/cluster/lf/probe/ on PYTHONPATH
# (it prints what the trainer processes were given and can pause them
# after a checkpoint, without changing what they compute). Each node's
# slurmd has a private tmpfs at $LOCAL (cluster.sh --node-local), a
# node-local disk. Loaded after helpers and lf_helpers.

PROBE="$TOP/tests/cluster/lf/probe"
CPU_KNOBS="$TOP/contrib/lfstack/cpu.yaml"

# lf_real_file_setup NODES: the venv, the tiny model, a cluster of NODES
# nodes with node-local disks
lf_real_file_setup() {
	"$TOP/contrib/lfstack/venv.sh" >/dev/null
	"$VENV/bin/python" "$TOP/contrib/lfstack/tiny_model.py" "$TPL/data/dpo_pairs.json" \
		"$BATS_FILE_TMPDIR/tiny" >&2
	cluster_file_setup "$1" "" --node-local "$DISTENV_CLUSTER_DIR/node-local"
	# the templates look for their data check at templates/ under the
	# submit directory, as in a checkout of this repository
	mkdir -p "$BATS_FILE_TMPDIR/templates"
	ln -sf "$TOP/templates/check_data_lengths.py" "$TOP/templates/check_data_units.py" \
		"$BATS_FILE_TMPDIR/templates/"
}

# lf_real_setup: each test's setup
lf_real_setup() {
	cluster_test_setup
	# shellcheck disable=SC2034 # read by test_yaml (lf_helpers.bash)
	TINY=$BATS_FILE_TMPDIR/tiny
	# The venv as a user's `source venv/bin/activate` would put it; the
	# job inherits this environment (sbatch --export=ALL). No hub.
	export PATH="$VENV/bin:$PATH" TMPDIR="$LOCAL" PYTHONPATH="$PROBE" \
		HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
}

# real_yaml TEMPLATE_YAML OUT KEY=VALUE...: the template's YAML with the
# test's settings and the CPU knobs
real_yaml() {
	local src=$1 out=$2
	shift 2
	test_yaml "$src" "$out" "@$CPU_KNOBS" "$@"
}

# real_template TEMPLATE OUT YAML [LINE...]: a copy of the template whose
# parameter block runs YAML on 2 CPU nodes (test_params)
real_template() {
	local tpl=$1 out=$2 yaml=$3
	shift 3
	test_params "$yaml" "$@"
	# shellcheck disable=SC2154 # set by test_params (lf_helpers.bash)
	template_copy "$TPL/$tpl" "$out" "${template_params[@]}"
}
