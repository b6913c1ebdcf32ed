"""Test instrumentation of the real trainer processes (cluster tests only).

tests/cluster/llamafactory.bats puts this directory on PYTHONPATH for its
jobs, so Python imports this module at the start of every process of the
job. It only acts in torchrun's workers (LOCAL_RANK set), and only when a
test asks, through the job's environment:

  DISTENV_TEST_ENV_PROBE=VAR,...  print "probe: rank R node=H VAR=value" for
                                  each VAR as the worker sees it (what
                                  llamafactory-cli and torchrun passed on),
                                  and "probe: rank R node=H argv=ARG|ARG"
  DISTENV_TEST_PAUSE_AFTER=N      after Transformers' Trainer has saved
                                  checkpoint-N, print "probe: rank R node=H
                                  paused after checkpoint-N" and wait until
                                  the job is cancelled, so that a test can
                                  stop a run at a known step; on the job's
                                  first start only (SLURM_RESTART_COUNT
                                  unset or 0), since a requeued job starts
                                  again with the same environment

Nothing here changes what the trainer computes or writes.
"""

import importlib.abc
import os
import socket
import sys
import time


def _say(text):
    # one write(2) per line: the node's processes share the task's stderr,
    # and a pipe keeps a write of under PIPE_BUF bytes whole
    line = f"probe: rank {os.environ.get('RANK')} node={socket.gethostname()} {text}\n"
    os.write(2, line.encode())


def _probe_env(names):
    for name in filter(None, names.split(",")):
        _say(f"{name}={os.environ.get(name, '(unset)')}")
    _say("argv=" + "|".join(sys.argv[1:]))


class _PauseAfterSave(importlib.abc.MetaPathFinder):
    """Wraps Trainer._save_checkpoint once transformers.trainer is imported."""

    def __init__(self, step):
        self.step = step

    def find_spec(self, fullname, path, target=None):
        if fullname != "transformers.trainer":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(fullname)
        exec_module = spec.loader.exec_module
        step = self.step

        def exec_and_patch(module):
            exec_module(module)
            save = module.Trainer._save_checkpoint

            def save_then_pause(trainer, *args, **kwargs):
                save(trainer, *args, **kwargs)
                if trainer.state.global_step == step:
                    _say(f"paused after checkpoint-{step}")
                    while True:
                        time.sleep(60)

            module.Trainer._save_checkpoint = save_then_pause

        spec.loader.exec_module = exec_and_patch
        return spec


if os.environ.get("LOCAL_RANK") is not None:
    if os.environ.get("DISTENV_TEST_ENV_PROBE"):
        _probe_env(os.environ["DISTENV_TEST_ENV_PROBE"])
    if os.environ.get("DISTENV_TEST_PAUSE_AFTER") and os.environ.get("SLURM_RESTART_COUNT", "0") == "0":
        sys.meta_path.insert(0, _PauseAfterSave(int(os.environ["DISTENV_TEST_PAUSE_AFTER"])))
