"""np 3: rank 1 is killed while rank 0 waits on an op of process set {0, 1} and rank 2 on global
ops; both survivors fail within seconds with an error naming rank 1 (the set's ops are failed
like every other pending op)."""

import os
import signal
import sys

import torch

import horovod.torch as hvd
# tests/python/workers/survivor.py
from survivor import expect_dead_peer, wait_for_survivors_warmup


def main() -> None:
    hvd.init(process_sets="dynamic")
    rank = hvd.rank()
    pair = hvd.add_process_set([0, 1])
    hvd.allreduce(torch.ones(8), name="warmup")
    wait_for_survivors_warmup(rank, 1, hvd.size())
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)

    def step_on_my_set(step):
        if rank == 0:
            hvd.allreduce(torch.ones(8), name=f"pair.{step}", process_set=pair)
        else:
            hvd.allreduce(torch.ones(8), name=f"global.{step}")

    expect_dead_peer(step_on_my_set, 1, 1000, rank)
    print(f"rank {rank} OK")
    sys.stdout.flush()
    os._exit(0)  # no shutdown negotiation with a dead peer


if __name__ == "__main__":
    main()
