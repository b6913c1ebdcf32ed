/*
 * distenv_option_table.c: the rows of distenv_option_table.h. A usage
 * line is shown by srun --help (after the option and its arginfo) and by
 * distenv SUB --help, so it reads right in both; the man pages say more.
 */
#include "distenv_option_table.h"

#define LF_ONLY (DISTENV_IN_PLAN | DISTENV_IN_PREPARE)
#define ENV_SHOW (DISTENV_IN_ENV | DISTENV_IN_SHOW)

const struct distenv_option_row distenv_option_table[DISTENV_OPT_COUNT] = {
	[DISTENV_OPT_MODE] = { "distenv", NULL, 0, 2,
			       "[torchrun|elastic|tasks|off]",
			       "Derive NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT, "
			       "NPROC_PER_NODE, NCCL/GLOO_SOCKET_IFNAME for torchrun or "
			       "LLaMA-Factory (torchrun: one task per node; elastic: the same "
			       "with c10d rendezvous; tasks: one task per rank)",
			       DISTENV_PARSE_REQUEST, 0 },
	[DISTENV_OPT_CMD_MODE] = { NULL, "mode", ENV_SHOW, 1,
				   "torchrun|elastic|tasks",
				   "torchrun (default): one task per node; elastic: the same with "
				   "c10d rendezvous; tasks: one task per rank",
				   DISTENV_PARSE_REQUEST, 0 },
	[DISTENV_OPT_NODE_RANGE] = { "distenv-nodes", "nodes", ENV_SHOW, 1,
				     "MIN:MAX",
				     "Node counts an elastic launch accepts (MIN_NNODES, "
				     "MAX_NNODES); default: the step's",
				     DISTENV_PARSE_REQUEST, 0 },
	[DISTENV_OPT_MAX_RESTARTS] = { "distenv-max-restarts", "max-restarts",
				       ENV_SHOW, 1, "N",
				       "Worker restarts of an elastic launch (MAX_RESTARTS); default 0",
				       DISTENV_PARSE_REQUEST, 0 },
	[DISTENV_OPT_PORT] = { "distenv-port", "port", ENV_SHOW, 1, "PORT",
			       "MASTER_PORT (1024-65535) when Slurm reserved no ports for the "
			       "step",
			       DISTENV_PARSE_REQUEST, 0 },
	[DISTENV_OPT_IFNAME] = { "distenv-ifname", "ifname", ENV_SHOW, 1,
				 "NAME",
				 "Interface for NCCL/Gloo (a name, or NCCL's =name / ^name list)",
				 DISTENV_PARSE_REQUEST, 0 },
	[DISTENV_OPT_NPROC] = { "distenv-nproc", "nproc", ENV_SHOW, 1, "N",
				"Processes per node (NPROC_PER_NODE); default: the step's GPUs "
				"on the node, else 1",
				DISTENV_PARSE_REQUEST, 0 },
	[DISTENV_OPT_SHOW] = { "distenv-show", NULL, 0, 0, NULL,
			       "Print each node's derived variables and their sources to "
			       "stderr",
			       DISTENV_PARSE_REQUEST, 0 },
	[DISTENV_OPT_LF_CONFIG] = { "distenv-lf-config", "lf-config",
				    DISTENV_IN_PREPARE, 1, "FILE",
				    "LLaMA-Factory training YAML: write a resolved copy per node "
				    "(DISTENV_LF_CONFIG) and check the run before launch",
				    DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_LF_DIR] = { "distenv-lf-dir", "lf-dir", DISTENV_IN_PREPARE,
				 1, "DIR",
				 "Absolute directory for the resolved copies (default: the site's "
				 "lf_dir, else TMPDIR, else /tmp); one a container mounts at the "
				 "same path",
				 DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_STEP_NODES] = { NULL, "nodes", LF_ONLY, 1, "N",
				     "Nodes of the step (plan: default 1; prepare: the step's)",
				     DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_GPUS_PER_NODE] = { NULL, "gpus-per-node", LF_ONLY, 1, "G",
					"GPUs of the step on each node (plan: default 1; prepare: the "
					"step's)",
					DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_NODE_ID] = { NULL, "node-id", LF_ONLY, 1, "I",
				  "This node's index in the step (plan: default 0; prepare: the "
				  "step's)",
				  DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_GPU_MEM] = { "distenv-gpu-mem", "gpu-mem", LF_ONLY, 1,
				  "SIZE",
				  "Memory of one GPU for the memory plan, with its unit (80G)",
				  DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_HOST_MEM] = { NULL, "host-mem", LF_ONLY, 1, "SIZE",
				   "Memory of one node, with its unit (1T); default: the job's "
				   "--mem, else this machine's",
				   DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_MODEL_PARAMS] = { "distenv-model-params", "model-params",
				       LF_ONLY, 1, "COUNT",
				       "Model size for the memory plan when config.json is not local, "
				       "with its unit (70B, 7.6B)",
				       DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_ANSWER_TOKENS] = { NULL, "answer-tokens", LF_ONLY, 1, "N", "Longest chosen or rejected answer in tokens (default 1024)",
					DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_LF_VERSION] = { NULL, "lf-version", LF_ONLY, 1, "VERSION",
				     "LLaMA-Factory version the job runs (0.9.5; default: that of "
				     "DPO_PYTHON, else python3; unknown plans the safer case)",
				     DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_TF_VERSION] = { NULL, "transformers-version", LF_ONLY, 1,
				     "VERSION",
				     "transformers version the job runs (4.46.1; default: as "
				     "--lf-version)",
				     DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_OFFLOAD] = { "distenv-offload", "offload", LF_ONLY, 1,
				  "none|cpu|auto",
				  "ZeRO-3 CPU offload in the resolved DeepSpeed config (default: "
				  "as the config says)",
				  DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_SAVE_ON_EACH_NODE] = { "distenv-save-on-each-node",
					    "save-on-each-node", LF_ONLY, 1,
					    "auto|yes|no",
					    "save_on_each_node of the resolved copy (auto: by output_dir's "
					    "storage, node-local or shared)",
					    DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_CHECK] = { "distenv-check", "check", LF_ONLY, 1,
				"warn|strict|off",
				"LLaMA-Factory and network preflight checks: warn (default), "
				"strict (fail the step), off",
				DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_STORAGE_POLICY] = { NULL, "storage-policy", LF_ONLY, 1,
					 "SPEC",
					 "The site's storage policy (shared:/gpfs,local:/scratch)",
					 DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_RESUME] = { "distenv-resume", NULL, 0, 1, "auto|off|PATH",
				 "Checkpoint to resume from with --distenv-lf-config: auto (the "
				 "newest complete on the node; default on a requeued job), off, "
				 "or a checkpoint directory",
				 DISTENV_PARSE_LF, 0 },
	[DISTENV_OPT_MARK_STORAGE] = { "distenv-mark-storage", NULL, 0, 0, NULL,
				       "Only mark output_dir of --distenv-lf-config on each node, so "
				       "that later steps of the job see whether the nodes share it "
				       "(srun, one task per node)",
				       DISTENV_PARSE_REQUEST, 0 },
	[DISTENV_OPT_PRINT_YAML] = { NULL, "print-yaml", DISTENV_IN_PLAN, 0,
				     NULL, "Also print the resolved YAML",
				     DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_JSON] = { NULL, "json", DISTENV_IN_PLAN, 0, NULL,
			       "Print the plan as one JSON object instead",
			       DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_XML] = { NULL, "xml", DISTENV_IN_TOPO, 1, "FILE",
			      "An hwloc XML topology instead of this node's",
			      DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_GPUS] = { NULL, "gpus", DISTENV_IN_TOPO, 1, "LIST",
			       "GPU indices or UUIDs, as CUDA_VISIBLE_DEVICES takes them; "
			       "default: the step's GPUs on the node, else all",
			       DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_NVIDIA_DIR] = { NULL, "nvidia-dir", DISTENV_IN_TOPO, 1,
				     "DIR",
				     "The NVIDIA driver's per-GPU information (default "
				     "/proc/driver/nvidia/gpus)",
				     DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_PARTITION] = { NULL, "partition", DISTENV_IN_CHECK_CONFIG,
				    1, "NAME",
				    "Print only this partition's policy (with FILE)",
				    DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_TRUST_OWNER] = { NULL, "trust-owner",
				      DISTENV_IN_CHECK_CONFIG, 0, NULL,
				      "Also accept a FILE you own (a draft; the plugin accepts root's "
				      "only)",
				      DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_SLURM_CONF] = { NULL, "slurm-conf",
				     DISTENV_IN_CHECK_CONFIG, 1, "PATH",
				     "slurm.conf to start from (without FILE; default $SLURM_CONF, "
				     "else /etc/slurm/slurm.conf)",
				     DISTENV_PARSE_COMMAND, 0 },
	[DISTENV_OPT_HELP] = { NULL, "help", DISTENV_IN_EVERY, 0, NULL,
			       "Print this help and exit",
			       DISTENV_PARSE_COMMAND, 'h' },
	[DISTENV_OPT_VERSION] = { NULL, "version", DISTENV_IN_MAIN, 0, NULL, "Print the version and the Slurm release it was built against",
				  DISTENV_PARSE_COMMAND, 0 },
};
