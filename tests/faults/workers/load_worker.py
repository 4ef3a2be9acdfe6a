"""Load: STEPS steps of TENSORS tiny allreduces each (a large transformer's parameter list:
sizes from 1 to 1,024 floats), all started before any is waited for, as DistributedOptimizer's
hooks do. Checks every value of every step; prints one line per step with its wall time and the
negotiation time the background thread spent on it (stats()["negotiation_us"]).

    load_worker.py STEPS TENSORS
"""

import sys
import time

import numpy as np

import kolo


def main() -> None:
    steps, count = int(sys.argv[1]), int(sys.argv[2])
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    sizes = [1 + (i * 37) % 1024 for i in range(count)]
    params = [np.empty(n, np.float32) for n in sizes]
    for step in range(steps):
        for i, p in enumerate(params):
            p.fill(rank + i % 7 + step)
        before = kolo._core.stats()["negotiation_us"]
        start = time.perf_counter()
        handles = [kolo.allreduce_async_(p, op=kolo.Sum, name=f"layer{i}.weight")
                   for i, p in enumerate(params)]
        for h in handles:
            kolo.synchronize(h)
        elapsed = time.perf_counter() - start
        negotiation = kolo._core.stats()["negotiation_us"] - before
        for i, p in enumerate(params):
            want = sum(r + i % 7 + step for r in range(size))
            if not np.all(p == want):
                raise AssertionError(f"rank {rank} step {step} tensor layer{i}.weight: "
                                     f"got {p[:3]}, want {want}")
        print(f"STEP {step} ms={elapsed * 1e3:.2f} negotiation_ms={negotiation / 1e3:.2f}")
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
