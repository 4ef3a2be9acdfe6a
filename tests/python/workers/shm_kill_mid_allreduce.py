"""Same-host ranks on shared memory; the victim kills itself with SIGKILL while allreduces (16 MiB,
or argv[2] floats) are in flight. Every survivor must fail at once (well inside the 30 s peer
timeout) with an error naming the victim."""

import os
import signal
import sys
import threading

import numpy as np

import kolo
from survivor import expect_dead_peer  # tests/python/workers/survivor.py


def main() -> None:
    victim = int(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 4 << 20  # 16 MiB: a while on shm
    kolo.init()
    rank = kolo.rank()
    data = np.ones(count, np.float32)
    kolo.allreduce_(data, name="warmup")
    if rank == victim:
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
    expect_dead_peer(lambda step: kolo.allreduce_(data, op=kolo.Sum, name=f"step.{step}"),
                     victim, 100000, rank)
    print(f"rank {rank} OK")
    sys.stdout.flush()
    os._exit(0)  # no shutdown negotiation with a dead peer


if __name__ == "__main__":
    main()
