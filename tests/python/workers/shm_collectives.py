"""A few collectives at sizes 0, 1, odd and large, checked against locally computed values
(run with shared memory on, off, or falling back)."""

import numpy as np

import kolo


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    for count in [0, 1, 7, 100003, 3 << 20]:
        data = ((np.arange(count) + rank) % 3 + 1).astype(np.float32)
        want = sum(((np.arange(count) + r) % 3 + 1).astype(np.float64) for r in range(size))
        got = kolo.allreduce(data, op=kolo.Sum, name=f"sum.{count}")
        assert np.array_equal(got.astype(np.float64), want), (count, got[:5])
        gathered = kolo.allgather(np.full(count % 5 + rank, rank, np.int32), name=f"ag.{count}")
        assert np.array_equal(gathered, np.concatenate(
            [np.full(count % 5 + r, r, np.int32) for r in range(size)])), count
        root = size - 1
        got = kolo.broadcast(np.full(count, rank, np.int64), root_rank=root, name=f"bc.{count}")
        assert np.all(got == root), count
    kolo.shutdown()
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
