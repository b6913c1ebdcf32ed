#!/usr/bin/python3
"""Gloo all_reduce smoke test for a multi-node torch.distributed setup.

Every rank contributes rank+1; SUM over W ranks must be W*(W+1)/2.
Prints exactly one line per rank on stdout:

    RANK r/W node=<hostname> result=<value> OK
    RANK r/W node=<hostname> FAIL <reason>          (exit 1)

Two ways to run it:
  * under torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set by it):
      /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 \
          --nnodes 2 --node_rank $SLURM_NODEID --nproc_per_node 1 \
          --master_addr n1 --master_port 29500 gloo_allreduce.py
  * "tasks mode", one srun task per rank: MASTER_ADDR / MASTER_PORT from the
    environment; RANK / WORLD_SIZE from the environment, else from
    SLURM_PROCID / SLURM_NTASKS.

Timeouts, so that broken network setups fail quickly instead of hanging:
  DISTENV_TEST_TIMEOUT   torch.distributed timeout in seconds (default 10).
                         Measured with torch 1.13 / Gloo: a rank whose peer
                         never connects fails with "Connect timeout" after
                         about 5x this value (10 -> ~52 s).
  DISTENV_TEST_DEADLINE  hard watchdog in seconds (default 6x the timeout):
                         prints FAIL and exits 1 whatever torch is doing.
"""

import datetime
import os
import socket
import sys
import threading
import time


def env_int(*names):
    for name in names:
        val = os.environ.get(name)
        if val not in (None, ""):
            return int(val)
    raise KeyError("none of %s set" % "/".join(names))


def main():
    host = socket.gethostname()
    timeout = float(os.environ.get("DISTENV_TEST_TIMEOUT", "10"))
    deadline = float(os.environ.get("DISTENV_TEST_DEADLINE", str(6 * timeout)))
    try:
        rank = env_int("RANK", "SLURM_PROCID")
        world = env_int("WORLD_SIZE", "SLURM_NTASKS")
    except (KeyError, ValueError) as exc:
        print("RANK ?/? node=%s FAIL %s" % (host, exc), flush=True)
        return 1
    # init_method="env://" reads these; fill them in for tasks mode.
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(world)

    tag = "RANK %d/%d node=%s" % (rank, world, host)
    t0 = time.monotonic()

    def watchdog():
        print("%s FAIL watchdog: no result after %gs" % (tag, deadline), flush=True)
        os._exit(1)  # pylint: disable=protected-access

    timer = threading.Timer(deadline, watchdog)
    timer.daemon = True
    timer.start()
    try:
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            if not os.environ.get(name):
                raise RuntimeError("%s not set" % name)
        # import late: torch takes seconds to import on small machines and a
        # missing env var should fail fast.
        import torch
        import torch.distributed as dist

        dist.init_process_group(
            "gloo",
            init_method="env://",
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=timeout),
        )
        t = torch.tensor([float(rank + 1)])
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        value = t.item()
        expect = world * (world + 1) / 2
        dist.destroy_process_group()
    except Exception as exc:  # pylint: disable=broad-except
        timer.cancel()
        msg = " ".join(str(exc).split())
        print(
            "%s FAIL after %.1fs: %s: %s" % (tag, time.monotonic() - t0, type(exc).__name__, msg),
            flush=True,
        )
        return 1
    timer.cancel()
    if value != expect:
        print("%s result=%g FAIL expected %g" % (tag, value, expect), flush=True)
        return 1
    print("%s result=%g OK" % (tag, value), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
