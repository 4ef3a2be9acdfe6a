"""The framework-free kolo API on NumPy arrays: alltoall, reducescatter and grouped operations."""

import sys

import numpy as np

import kolo


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    # alltoall: rank r sends d + 1 rows holding 10 r + d to rank d.
    splits = [d + 1 for d in range(size)]
    x = np.concatenate([np.full((d + 1, 2), 10 * rank + d, np.int32) for d in range(size)])
    out, received = kolo.alltoall(x, splits=splits, name="np.a2a")
    assert received.tolist() == [rank + 1] * size and received.dtype == np.int32
    assert np.array_equal(out, np.concatenate([np.full((rank + 1, 2), 10 * s + rank, np.int32)
                                               for s in range(size)]))
    even = kolo.alltoall(np.arange(size, dtype=np.float64) + 100 * rank)
    assert np.array_equal(even, np.arange(size) * 100.0 + rank)
    # reducescatter: 2 * size + 1 rows, the first rank gets the extra one.
    rows = 2 * size + 1
    data = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2) * (rank + 1)
    start = rank * 2 + min(rank, 1)
    mine = slice(start, start + 2 + (1 if rank == 0 else 0))
    total = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2) * (size * (size + 1) / 2)
    assert np.array_equal(kolo.reducescatter(data, op=kolo.Sum, name="np.rs"), total[mine])
    assert np.allclose(kolo.reducescatter(data), total[mine] / size)
    # grouped forms return lists in order.
    g = kolo.grouped_allgather([np.full((1, 1), rank), np.full((rank + 1,), 1.5)])
    assert g[0].ravel().tolist() == list(range(size)) and g[1].shape == (size * (size + 1) // 2,)
    rs = kolo.grouped_reducescatter([data, 2 * data], op=kolo.Sum)
    assert np.array_equal(rs[0], total[mine]) and np.array_equal(rs[1], 2 * total[mine])
    ar = kolo.grouped_allreduce([np.ones(3), np.ones(2, np.float32)], op=kolo.Sum)
    assert [a.tolist() for a in ar] == [[size] * 3, [size] * 2]
    handle = kolo.grouped_allreduce_async([np.ones(2)], op=kolo.Max)
    while not kolo.poll(handle):
        pass
    assert kolo.synchronize(handle)[0].tolist() == [1.0, 1.0]
    kolo.barrier()
    kolo.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
