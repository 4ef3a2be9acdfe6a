"""Repeated rounds of the same tensors: results identical with the response cache and fusion on or
off; with the cache on, later rounds are agreed through the bit vector alone (fast cycles)."""

import os

import numpy as np

import kolo

ROUNDS = 20
SIZES = [1, 10, 1000, 5000, 300000]


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    for step in range(ROUNDS):
        arrays = [np.arange(n, dtype=np.float32) * (rank + 1) + step for n in SIZES]
        handles = [kolo.allreduce_async_(a, op=kolo.Sum, name=f"layer{i}")
                   for i, a in enumerate(arrays)]
        for handle in handles:
            kolo.synchronize(handle)
        for n, a in zip(SIZES, arrays):
            want = np.arange(n, dtype=np.float32) * sum(r + 1 for r in range(size)) + step * size
            assert np.array_equal(a, want), (n, step)
    stats = kolo._core.stats()
    print(f"rank {rank} stats {stats}")
    capacity = int(os.environ.get("KOLO_CACHE_CAPACITY", "1024"))
    if capacity > 0:
        assert stats["cache_hits"] >= (ROUNDS - 1) * len(SIZES), stats
        assert stats["fast_cycles"] > 0, stats
    else:
        assert stats["cache_hits"] == 0 and stats["fast_cycles"] == 0, stats
    if os.environ.get("KOLO_FUSION_THRESHOLD") == "0":
        assert stats["fused_groups"] == 0, stats
    kolo.shutdown()
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
