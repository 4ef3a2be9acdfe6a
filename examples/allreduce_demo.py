"""A first kolo job: every rank contributes, every rank gets the same answer.

    kolorun -np 2 python examples/allreduce_demo.py

Prints, on rank 0, the sum of the ranks, a gathered vector, and the time of a 64 MiB allreduce.
"""

import time

import numpy as np

import kolo


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()

    total = kolo.allreduce(np.array([rank], dtype=np.int64), op=kolo.Sum, name="rank_sum")
    assert int(total[0]) == size * (size - 1) // 2, total

    gathered = kolo.allgather(np.full(rank + 1, rank, dtype=np.int32), name="gather")
    expected = np.concatenate([np.full(r + 1, r, dtype=np.int32) for r in range(size)])
    assert np.array_equal(gathered, expected), gathered

    big = np.full(16 * 1024 * 1024, 1.0, dtype=np.float32)  # 64 MiB
    kolo.allreduce_(big, op=kolo.Sum, name="warmup")
    times = []
    for _ in range(5):
        big.fill(1.0)
        kolo.barrier()
        start = time.perf_counter()
        kolo.allreduce_(big, op=kolo.Sum, name="big")
        times.append(time.perf_counter() - start)
    assert np.all(big == size), big[:4]

    if rank == 0:
        median = sorted(times)[len(times) // 2]
        print(f"kolo {size} ranks: sum of ranks = {int(total[0])}, allgather = {gathered.tolist()}")
        print(f"allreduce 64 MiB float32: median {median * 1e3:.1f} ms "
              f"({64 / 1024 / median:.2f} GiB/s algorithm bandwidth)")
    kolo.shutdown()


if __name__ == "__main__":
    main()
