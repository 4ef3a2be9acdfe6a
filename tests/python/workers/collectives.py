"""Every collective and dtype, checked against values computed locally."""

import sys

import numpy as np

import kolo

DTYPES = [np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32, np.float64]
COUNTS = [0, 1, 3, 1000, 70001]


def values(rank: int, count: int, dtype) -> np.ndarray:
    # Small non-negative integers: exact in every dtype, and their sum/product stay in range.
    return ((np.arange(count) + rank) % 3 + 1).astype(dtype)


def check_allreduce(rank: int, size: int) -> None:
    for dtype in DTYPES:
        for count in COUNTS:
            inputs = [values(r, count, dtype) for r in range(size)]
            stacked = np.stack(inputs).astype(np.float64)
            expected = {
                kolo.Sum: stacked.sum(0),
                kolo.Min: stacked.min(0),
                kolo.Max: stacked.max(0),
                kolo.Product: stacked.prod(0),
            }
            for op, want in expected.items():
                got = kolo.allreduce(inputs[rank], op=op, name=f"ar.{dtype.__name__}.{count}.{op}")
                assert got.dtype == dtype and got.shape == (count,)
                assert np.array_equal(got.astype(np.float64), want), (dtype, count, op, got[:5])
                # Out of place: the input is read, never written (the host arena reads it
                # directly and folds into the output).
                assert np.array_equal(inputs[rank], values(rank, count, dtype)), (dtype, count, op)
            if np.issubdtype(dtype, np.floating):
                got = kolo.allreduce(inputs[rank], op=kolo.Average,
                                     name=f"avg.{dtype.__name__}.{count}")
                assert np.allclose(got.astype(np.float64), stacked.mean(0),
                                   rtol=2e-3), (dtype, count)
                got = kolo.allreduce(inputs[rank], op=kolo.Sum, prescale_factor=0.5,
                                     postscale_factor=4.0, name=f"scaled.{dtype.__name__}.{count}")
                assert np.allclose(got.astype(np.float64), stacked.sum(0) * 2.0, rtol=1e-3)


def check_in_place_and_async(rank: int, size: int) -> None:
    buffers = [np.full(17 * (i + 1), rank + i, dtype=np.float32) for i in range(5)]
    handles = [kolo.allreduce_async_(b, op=kolo.Sum, name=f"inplace.{i}")
               for i, b in enumerate(buffers)]
    for i, handle in enumerate(handles):
        result = kolo.synchronize(handle)
        assert result is buffers[i]
        assert np.all(buffers[i] == sum(r + i for r in range(size)))
    handle = kolo.allreduce_async(np.ones(8, np.float64), op=kolo.Sum, name="polled")
    while not kolo.poll(handle):
        pass
    assert np.all(kolo.synchronize(handle) == size)


def check_allgather(rank: int, size: int) -> None:
    for dtype in DTYPES:
        # First dimension differs per rank (rank 0 gives none); the rest must match.
        mine = np.full((rank, 3), rank, dtype=dtype)
        got = kolo.allgather(mine, name=f"ag.{dtype.__name__}")
        want = np.concatenate([np.full((r, 3), r, dtype=dtype) for r in range(size)])
        assert got.dtype == dtype and got.shape == want.shape and np.array_equal(got, want)
    scalar_rows = kolo.allgather(np.array([rank * 10], np.int64), name="ag.vector")
    assert scalar_rows.tolist() == [r * 10 for r in range(size)]


def check_broadcast(rank: int, size: int) -> None:
    for root in range(size):
        for dtype in DTYPES:
            data = np.full((4, 5), rank + 1, dtype=dtype)
            got = kolo.broadcast(data, root_rank=root, name=f"bc.{root}.{dtype.__name__}")
            assert np.all(got == root + 1) and np.all(data == rank + 1)
        big = np.full(300001, rank, np.float32)
        kolo.broadcast_(big, root_rank=root, name=f"bc.big.{root}")
        assert np.all(big == root)
    empty = kolo.broadcast(np.zeros(0, np.float32), root_rank=0, name="bc.empty")
    assert empty.shape == (0,)


def check_barrier(rank: int, size: int) -> None:
    for _ in range(3):
        kolo.barrier()


def main() -> None:
    kolo.init()
    rank, size = kolo.rank(), kolo.size()
    assert size == int(sys.argv[1]), (size, sys.argv)
    check_allreduce(rank, size)
    check_in_place_and_async(rank, size)
    check_allgather(rank, size)
    check_broadcast(rank, size)
    check_barrier(rank, size)
    stats = kolo._core.stats()
    print(f"rank {rank} stats {stats}")
    kolo.shutdown()
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
