#!/usr/bin/env bats
# Transformers' save on SIGTERM (enable_jit_checkpoint) in the pinned
# stack (the venv of contrib/lfstack/venv.sh: transformers 5.6.0,
# accelerate 1.11.0, llamafactory 0.9.5): what templates/README.md ("Why
# not enable_jit_checkpoint") says of it and why the templates leave it
# off. An upgrade that changes one of these facts fails here, so the
# choice is made again. The objects are the stack's own, driven with a
# stand-in trainer and engine; no training, no root, no cluster.

bats_require_minimum_version 1.5.0

load venv
export HF_HUB_OFFLINE=1

setup() {
	need_venv
}

@test "transformers 5.6.0 has enable_jit_checkpoint, off by default, and LLaMA-Factory 0.9.5's own parser takes it from the YAML" {
	run "$PY" - "$BATS_TEST_TMPDIR" <<'EOF'
import sys
import transformers
from llamafactory.hparams.parser import _parse_train_args
print("transformers", transformers.__version__)
print("default", transformers.TrainingArguments(output_dir=sys.argv[1]).enable_jit_checkpoint)
args = _parse_train_args({"model_name_or_path": "m", "stage": "dpo", "output_dir": sys.argv[1],
                          "enable_jit_checkpoint": True})
print("parsed", args[2].enable_jit_checkpoint)
EOF
	[ "$status" -eq 0 ]
	grep -qx "transformers 5.6.0" <<<"$output"
	grep -qx "default False" <<<"$output"
	grep -qx "parsed True" <<<"$output"
}

@test "it catches SIGTERM only, not USR1, and each process sets its own flag 3 s after the signal, on a timer thread" {
	run "$PY" - <<'EOF'
import os, signal, time
from transformers.trainer_jit_checkpoint import CheckpointManager
m = CheckpointManager(trainer=None)
m.setup_signal_handler()
print("usr1 default", signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL)
print("term caught", signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN))
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(1)
print("after 1 s", m.is_checkpoint_requested)
time.sleep(3)
print("after 4 s", m.is_checkpoint_requested)
EOF
	[ "$status" -eq 0 ]
	grep -qx "usr1 default True" <<<"$output"
	grep -qx "term caught True" <<<"$output"
	grep -qx "after 1 s False" <<<"$output"
	grep -qx "after 4 s True" <<<"$output"
}

@test "the flag is acted on just before the optimizer step: the Trainer's own save, named for the current global_step, with no collective between ranks" {
	run "$PY" - "$BATS_TEST_TMPDIR" <<'EOF'
import sys, types
import torch.distributed as dist
from transformers import TrainerControl
from transformers.trainer_jit_checkpoint import JITCheckpointCallback, CheckpointManager
# any collective a coordinated save would need fails loudly
def collective(*a, **k):
    raise AssertionError("collective called")
for name in ("all_reduce", "all_gather", "all_gather_object", "broadcast", "broadcast_object_list", "barrier"):
    setattr(dist, name, collective)
class Trainer:
    # only what a save on one rank reads
    __slots__ = ("state", "model", "saved")
    def __init__(self):
        self.state = types.SimpleNamespace(global_step=27)
        self.model = "model"
        self.saved = []
    def _get_output_dir(self, trial):
        return sys.argv[1]
    def _save_checkpoint(self, model, trial):
        self.saved.append(self.state.global_step)
t = Trainer()
cb = JITCheckpointCallback()
cb.trainer = t
cb.jit_manager = CheckpointManager(trainer=t)
cb.jit_manager.is_checkpoint_requested = True
control = TrainerControl()
cb.on_pre_optimizer_step(None, t.state, control)
print("saved at", t.saved, "stop", control.should_training_stop)
print("flag after", cb.jit_manager.is_checkpoint_requested)
EOF
	[ "$status" -eq 0 ]
	grep -qx "saved at \[27\] stop True" <<<"$output"
	grep -qx "flag after False" <<<"$output"
	[ -d "$BATS_TEST_TMPDIR/checkpoint-27" ]
}

@test "under DeepSpeed the optimizer step is in backward (Accelerate), and the Trainer's loop calls backward before on_pre_optimizer_step: a save there holds step N+1's state as checkpoint-N" {
	run "$PY" - <<'EOF'
import inspect
from accelerate.utils.deepspeed import DeepSpeedEngineWrapper
from transformers import Trainer
class Engine:
    def __init__(self):
        self.calls = []
    def set_gradient_accumulation_boundary(self, is_boundary):
        self.calls.append("boundary")
    def backward(self, loss, **kwargs):
        self.calls.append("backward")
    def step(self):
        self.calls.append("step")
e = Engine()
DeepSpeedEngineWrapper(e).backward(0.0, sync_gradients=True)
print("engine", " ".join(e.calls))
src = inspect.getsource(Trainer._run_epoch)
order = [src.index(s) for s in ("self.training_step(", "on_pre_optimizer_step(", "self.state.global_step += 1")]
print("loop order kept", order == sorted(order))
EOF
	[ "$status" -eq 0 ]
	grep -qx "engine boundary backward step" <<<"$output"
	grep -qx "loop order kept True" <<<"$output"
}

@test "Transformers' newest-checkpoint pick (LLaMA-Factory's auto-resume) takes a folder that holds only the marker of a failed save" {
	mkdir -p "$BATS_TEST_TMPDIR/out/checkpoint-4" "$BATS_TEST_TMPDIR/out/checkpoint-27"
	touch "$BATS_TEST_TMPDIR/out/checkpoint-4/trainer_state.json" "$BATS_TEST_TMPDIR/out/checkpoint-27/checkpoint-is-incomplete.txt"
	run "$PY" -c 'import sys; from transformers.trainer_utils import get_last_checkpoint; print(get_last_checkpoint(sys.argv[1]))' "$BATS_TEST_TMPDIR/out"
	[ "$status" -eq 0 ]
	[ "$output" = "$BATS_TEST_TMPDIR/out/checkpoint-27" ]
}
