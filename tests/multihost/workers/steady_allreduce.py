"""Announces itself, then allreduces until the job breaks; reports how fast the break was seen.

The multi-host fault test kills one rank (kill -9 inside its namespace) once every rank has said
it is ready; each survivor must fail with an error naming that rank within seconds."""

import os
import sys
import time

import numpy as np

import kolo


def main() -> None:
    kolo.init()
    rank = kolo.rank()
    data = np.ones(1 << 16, np.float32)
    kolo.allreduce_(data, name="warmup")
    print(f"rank {rank} ready pid {os.getpid()} host {os.environ.get('KOLO_HOSTNAME')}",
          flush=True)
    last_ok = time.monotonic()
    try:
        for step in range(10**9):
            kolo.allreduce_(data, name=f"step.{step}")
            last_ok = time.monotonic()
            time.sleep(0.01)
    except kolo.KoloError as error:
        elapsed = time.monotonic() - last_ok
        print(f"rank {rank} failed {elapsed:.2f}s after its last good step: {error}", flush=True)
        sys.exit(3)


if __name__ == "__main__":
    main()
