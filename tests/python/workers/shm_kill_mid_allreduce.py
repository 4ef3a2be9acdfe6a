"""Same-host ranks on shared memory; the victim kills itself with SIGKILL while allreduces (16 MiB,
or argv[2] floats) are in flight. Every survivor must fail at once (well inside the 30 s peer timeout) with an
error naming the victim."""

import os
import signal
import sys
import threading
import time

import numpy as np

import kolo


def main() -> None:
    victim = int(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 4 << 20  # 16 MiB: a while on shm
    kolo.init()
    rank = kolo.rank()
    data = np.ones(count, np.float32)
    kolo.allreduce_(data, name="warmup")
    if rank == victim:
        threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
    start = time.monotonic()
    try:
        for step in range(100000):
            kolo.allreduce_(data, op=kolo.Sum, name=f"step.{step}")
        raise AssertionError("allreduce kept succeeding without the dead rank")
    except kolo.KoloError as error:
        elapsed = time.monotonic() - start
        print(f"rank {rank} error after {elapsed:.2f}s: {error}")
        assert f"rank {victim}" in str(error), error
        assert elapsed < 10, elapsed
    print(f"rank {rank} OK")
    sys.stdout.flush()
    os._exit(0)  # no shutdown negotiation with a dead peer


if __name__ == "__main__":
    main()
