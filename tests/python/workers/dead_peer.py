"""One rank is killed with SIGKILL mid-job (or, with "stop", freezes under SIGSTOP); every
survivor's pending and later ops fail within KOLO_PEER_TIMEOUT with an error naming that rank."""

import os
import signal
import sys

import numpy as np

import kolo
# tests/python/workers/survivor.py
from survivor import expect_dead_peer, wait_for_survivors_warmup


def main() -> None:
    victim = int(sys.argv[1])
    freeze = len(sys.argv) > 2 and sys.argv[2] == "stop"
    kolo.init()
    rank = kolo.rank()
    data = np.ones(1 << 20, np.float32)
    kolo.allreduce_(data, name="warmup")
    wait_for_survivors_warmup(rank, victim, kolo.size())
    if rank == victim:
        os.kill(os.getpid(), signal.SIGSTOP if freeze else signal.SIGKILL)
    # The victim never submits these: ops must fail, not hang.
    expect_dead_peer(lambda step: kolo.allreduce_(data, name=f"step.{step}"), victim, 1000, rank)
    # Later operations fail at once with the same diagnosis.
    try:
        kolo.allreduce(np.ones(2, np.float32), name="later")
        raise AssertionError("later op succeeded")
    except kolo.KoloError as error:
        assert f"rank {victim}" in str(error), error
    print(f"rank {rank} OK")
    sys.stdout.flush()
    # Skip shutdown negotiation with a dead peer. A frozen peer never exits by itself: failing
    # here makes the launcher stop it.
    os._exit(3 if freeze else 0)


if __name__ == "__main__":
    main()
