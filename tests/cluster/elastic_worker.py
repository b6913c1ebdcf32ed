"""A worker for torchrun's elastic (c10d) launch in the cluster tests.

Every rank joins the Gloo process group torchrun set up (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the agent), all-reduces rank+1
and prints one line:

    ELASTIC attempt A rank R/W node=H group_rank G result=S OK

where A is TORCHELASTIC_RESTART_COUNT (0 on the first attempt). With
ELASTIC_KILL_RANK=R and ELASTIC_KILL_MARK=FILE, rank R kills itself with
SIGKILL once, as a worker that crashes mid-training would: after
ELASTIC_STEPS (default 0) all-reduces, one every 0.2 s, which the other
ranks are still in. It creates FILE first; a worker that finds FILE at
its start belongs to a later round and adds "after_kill" before
"result=". Its agent then restarts its workers in a new rendezvous
round, which makes the other agents restart theirs, when --max-restarts
allows it.

The mark, not A, tells the rounds apart: torch's agent counts a restart
(A + 1) only where it saw a worker fail. An agent whose workers were
still alive when it saw the new round waiting restarts them with A
unchanged (torch/distributed/elastic/agent/server/api.py, _invoke_run:
the HEALTHY branch does not decrement _remaining_restarts), so which
agents count it is a race.
"""

import datetime
import os
import signal
import socket
import sys
import time

import torch
import torch.distributed as dist


def die(mark):
    """Leave the mark for the later rounds, then crash as a worker would."""
    with open(mark, "w", encoding="ascii") as f:
        f.write(f"{socket.gethostname()} rank {os.environ.get('RANK')}\n")
    os.kill(os.getpid(), signal.SIGKILL)


def main():
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    kill = os.environ.get("ELASTIC_KILL_RANK")
    mark = os.environ.get("ELASTIC_KILL_MARK", "")
    if kill is not None and not mark:
        sys.exit("elastic_worker: ELASTIC_KILL_RANK needs ELASTIC_KILL_MARK")
    steps = int(os.environ.get("ELASTIC_STEPS", "0"))
    after_kill = bool(mark) and os.path.exists(mark)
    doomed = kill is not None and not after_kill and os.environ.get("RANK") == kill
    if doomed and steps == 0:
        die(mark)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    for step in range(steps):
        if doomed and step == steps // 2:
            die(mark)
        dist.all_reduce(torch.ones(1))
        time.sleep(0.2)
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    want = world * (world + 1) / 2
    ok = "OK" if t.item() == want else f"FAIL want {want}"
    # one write(2): the node's workers share the task's stdout
    line = (f"ELASTIC attempt {attempt} rank {rank}/{world} node={socket.gethostname()} "
            f"group_rank {os.environ.get('GROUP_RANK')} "
            f"{'after_kill ' if after_kill else ''}result={t.item():g} {ok}\n")
    os.write(1, line.encode())
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok == "OK" else 1


if __name__ == "__main__":
    sys.exit(main())
