"""Under mpirun: rank, size and local rank come from Open MPI's variables, and every collective
on every element type matches NumPy, on kolo's transports or (argv[2] == "mpi") on the MPI
backend (HOROVOD_CPU_OPERATIONS=mpi)."""

import os
import sys

import numpy as np
import torch

import horovod.torch as hvd
import kolo

# torch for the types NumPy lacks (bfloat16); expected values are computed in NumPy.
DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.bool]
COUNTS = [0, 1, 1000, 70001]


def values(rank: int, count: int, dtype) -> np.ndarray:
    if dtype == torch.bool:
        return (np.arange(count) + rank) % 3 != 0
    # Small positive integers: exact in every type, products stay in range for 3 ranks.
    return ((np.arange(count) + rank) % 3 + 1).astype(np.float64)


def as_torch(array: np.ndarray, dtype) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array)).to(dtype)


def as_numpy(tensor: torch.Tensor) -> np.ndarray:
    if tensor.dtype == torch.bool:
        return tensor.numpy()
    return tensor.to(torch.float64).numpy()


def check_allreduce(rank: int, size: int) -> None:
    for dtype in DTYPES:
        for count in COUNTS:
            inputs = [values(r, count, dtype) for r in range(size)]
            stacked = np.stack(inputs)
            if dtype == torch.bool:
                expected = {kolo.Sum: stacked.any(0), kolo.Max: stacked.any(0),
                            kolo.Min: stacked.all(0), kolo.Product: stacked.all(0)}
            else:
                expected = {kolo.Sum: stacked.sum(0), kolo.Min: stacked.min(0),
                            kolo.Max: stacked.max(0), kolo.Product: stacked.prod(0)}
            for op, want in expected.items():
                got = kolo.allreduce(as_torch(inputs[rank], dtype), op=op,
                                     name=f"ar.{dtype}.{count}.{op}")
                assert got.dtype == dtype and tuple(got.shape) == (count,)
                assert np.array_equal(as_numpy(got), want), (dtype, count, op, got[:5])
            if dtype.is_floating_point:
                got = hvd.allreduce(as_torch(inputs[rank], dtype), name=f"avg.{dtype}.{count}")
                assert np.allclose(as_numpy(got), stacked.mean(0), rtol=1e-2), (dtype, count)
    # Integer sums wrap around as in NumPy (Open MPI 4.1's vectorized MPI_SUM saturates instead).
    for np_type, dtype in ((np.uint8, torch.uint8), (np.int8, torch.int8),
                           (np.int16, torch.int16)):
        top = np.iinfo(np_type).max
        mine = np.full(4096, top - rank, dtype=np_type)
        want = np.sum(np.stack([np.full(4096, top - r, dtype=np_type) for r in range(size)]),
                      axis=0, dtype=np_type)
        got = kolo.allreduce(torch.from_numpy(mine), op=kolo.Sum, name=f"wrap.{dtype}")
        assert np.array_equal(got.numpy(), want), (dtype, got[:3], want[:3])


def check_allgather_broadcast_barrier(rank: int, size: int) -> None:
    for dtype in DTYPES:
        mine = as_torch(np.full((rank + 1, 3), rank % 2 if dtype == torch.bool else rank + 1),
                        dtype)
        got = hvd.allgather(mine, name=f"ag.{dtype}")
        want = np.concatenate([np.full((r + 1, 3), r % 2 if dtype == torch.bool else r + 1)
                               for r in range(size)])
        assert got.dtype == dtype
        assert np.array_equal(as_numpy(got), want.astype(as_numpy(got).dtype)), (dtype, got)
        for root in range(size):
            data = as_torch(np.full(777, root % 2 if dtype == torch.bool else root + 5), dtype)
            if rank != root:
                data = torch.zeros_like(data)
            got = hvd.broadcast(data, root_rank=root, name=f"bc.{dtype}.{root}")
            assert np.array_equal(as_numpy(got), as_numpy(as_torch(
                np.full(777, root % 2 if dtype == torch.bool else root + 5), dtype)))
    for _ in range(3):
        hvd.barrier()


def check_adasum(rank: int, size: int) -> None:
    """Adasum on either backend (on MPI: kolo's Adasum tree over an MPI allgather) against the NumPy
    reference of the same recursion (ranks folded first when the size is not a power of two);
    an integer tensor fails on every rank, naming the tensor, and the runtime goes on."""
    from adasum import close, inputs, reference

    for seed, dtype in enumerate((np.float64, np.float32, np.float16)):
        for length in (1, 37, 1000):
            xs = inputs(size, length, dtype, seed * 10 + length)
            got = hvd.allreduce(torch.from_numpy(xs[rank]), op=hvd.Adasum,
                                name=f"adasum.mpi.{dtype.__name__}.{length}").numpy()
            assert close(got, reference(xs), dtype), (dtype, length, got, reference(xs))
            if length >= 37 and dtype != np.float16:  # neither the sum nor the average
                total = sum(x.astype(np.float64) for x in xs)
                assert not close(got, total.astype(dtype), dtype)
                assert not close(got, (total / size).astype(dtype), dtype)
    try:
        hvd.allreduce(torch.ones(4, dtype=torch.int32), op=hvd.Adasum, name="adasum.mpi.int")
    except RuntimeError as error:
        assert "adasum.mpi.int" in str(error) and "int32" in str(error), str(error)
    else:
        raise AssertionError("Adasum of int32 on the MPI backend should fail")
    got = kolo.allreduce(np.full(2, rank + 1.0), op=kolo.Sum, name="after.adasum.int")
    assert np.all(got == size * (size + 1) / 2), got


def main() -> None:
    expected_size, backend = int(sys.argv[1]), sys.argv[2]
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    assert size == expected_size == int(os.environ["OMPI_COMM_WORLD_SIZE"]), size
    assert rank == int(os.environ["OMPI_COMM_WORLD_RANK"])
    assert hvd.local_rank() == int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"])
    assert "KOLO_RENDEZVOUS_ADDR" not in os.environ  # no kolorun: the address came over MPI
    assert hvd.mpi_built() is True
    assert hvd.mpi_enabled() is (backend == "mpi"), hvd.mpi_enabled()
    assert hvd.gloo_enabled() is (backend != "mpi")
    assert hvd.mpi_threads_supported() is (backend == "mpi")  # Open MPI 4.1 gives MULTIPLE
    check_allreduce(rank, size)
    check_allgather_broadcast_barrier(rank, size)
    check_adasum(rank, size)
    # init() again after shutdown(): a fresh rendezvous over MPI; MPI itself stays initialized.
    # With 3 ranks, a process set of ranks 0 and 1 beside the global set (with MPI chosen, it
    # runs on kolo's transports while the global set stays on MPI).
    hvd.shutdown()
    pair = hvd.ProcessSet([0, 1]) if size >= 3 else None
    hvd.init(process_sets=[pair] if pair else None)
    assert hvd.size() == size and hvd.mpi_enabled() is (backend == "mpi")
    got = kolo.allreduce(np.full(3, rank + 1.0), op=kolo.Sum, name="after.reinit")
    assert np.all(got == size * (size + 1) / 2), got
    if pair is not None and pair.included():
        got = hvd.allreduce(torch.full((5,), rank + 1.0), op=hvd.Sum, name="pair",
                            process_set=pair)
        assert torch.all(got == 3.0), got
    hvd.barrier()  # shutdown() ends the job for every set: rank 2 waits for the pair's op
    hvd.shutdown()
    print(f"rank {rank} OK")


if __name__ == "__main__":
    main()
