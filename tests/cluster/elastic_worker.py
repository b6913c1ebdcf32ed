"""A worker for torchrun's elastic (c10d) launch in the cluster tests.

Every rank joins the Gloo process group torchrun set up (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the agent), all-reduces rank+1
and prints one line:

    ELASTIC attempt A rank R/W node=H group_rank G result=S OK

where A is TORCHELASTIC_RESTART_COUNT (0 on the first attempt). With
ELASTIC_KILL_RANK=R, rank R kills itself with SIGKILL on attempt 0, as a
worker that crashes mid-training would: after ELASTIC_STEPS (default 0)
more all-reduces, one every 0.2 s, which the other ranks are still in.
Its agent then restarts its workers in a new rendezvous round, which
makes the other agents restart theirs, when --max-restarts allows it.
"""

import datetime
import os
import signal
import socket
import sys
import time

import torch
import torch.distributed as dist


def main():
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    kill = os.environ.get("ELASTIC_KILL_RANK")
    steps = int(os.environ.get("ELASTIC_STEPS", "0"))
    doomed = kill is not None and attempt == 0 and os.environ.get("RANK") == kill
    if doomed and steps == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    for step in range(steps):
        if doomed and step == steps // 2:
            os.kill(os.getpid(), signal.SIGKILL)
        dist.all_reduce(torch.ones(1))
        time.sleep(0.2)
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    want = world * (world + 1) / 2
    ok = "OK" if t.item() == want else f"FAIL want {want}"
    # one write(2): the node's workers share the task's stdout
    line = (f"ELASTIC attempt {attempt} rank {rank}/{world} node={socket.gethostname()} "
            f"group_rank {os.environ.get('GROUP_RANK')} result={t.item():g} {ok}\n")
    os.write(1, line.encode())
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok == "OK" else 1


if __name__ == "__main__":
    sys.exit(main())
