"""Process sets from mpi4py communicators under mpirun (Horovod's ``hvd.ProcessSet(subcomm)``): each
rank passes its own half of ``MPI.COMM_WORLD.Split``, both halves are registered on every rank
before the sets given as ranks, in Horovod's order, and run collectives; what Horovod refuses is
refused with its exception classes, and ranks that pass different numbers of communicators fail
together instead of hanging."""

import sys

import torch
from mpi4py import MPI

import horovod.torch as hvd
from torch_process_sets import expect_error


def main():
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    halves = world.Split(color=rank % 2, key=rank)
    evens, odds = list(range(0, size, 2)), list(range(1, size, 2))

    expect_error(lambda: hvd.init(process_sets=[hvd.ProcessSet(halves)]),
                 "global MPI communicator", kind=NotImplementedError)
    extra = [hvd.ProcessSet(MPI.COMM_SELF)] if rank == 0 else []
    expect_error(lambda: hvd.init(comm=world, process_sets=[hvd.ProcessSet(halves), *extra]),
                 "different numbers of process sets", "[2, 1", kind=ValueError)
    assert not hvd.is_initialized()

    mine = hvd.ProcessSet(halves)
    assert mine.ranks is None and mine.mpi_comm is halves
    hvd.init(comm=world, process_sets=[mine] + ([hvd.ProcessSet([0])] if size > 2 else []))
    expected = {0: list(range(size)), 1: evens, 2: odds}
    if size > 2:
        expected[3] = [0]
    assert hvd.mpi_ops._basics._get_process_set_ids_and_ranks() == expected
    assert mine.process_set_id == 1 + rank % 2 and mine.ranks == (odds if rank % 2 else evens)
    assert hvd.mpi_ops._basics._comm_process_set_id(halves) == mine.process_set_id
    assert hvd.global_process_set.mpi_comm is world
    assert str(mine).endswith(f"mpi_comm={halves})"), str(mine)
    total = hvd.allreduce(torch.full((4,), rank + 1.0), op=hvd.Sum, name="half",
                          process_set=mine)
    assert torch.equal(total, torch.full((4,), float(sum(r + 1 for r in mine.ranks)))), total
    expect_error(lambda: hvd.add_process_set(hvd.ProcessSet(halves)), "Dynamically adding",
                 kind=NotImplementedError)
    again = hvd.ProcessSet(halves)  # a second init maps a new object to the same id
    hvd.init(comm=world, process_sets=[again])
    assert again.process_set_id == mine.process_set_id and again.ranks == mine.ranks
    hvd.barrier()
    hvd.shutdown()

    # At 2 ranks rank 0's half is [0]: repeating it is a duplicate there only, as in Horovod,
    # and the sets are registered all the same.
    if size == 2:
        sets = [hvd.ProcessSet(halves), hvd.ProcessSet([0])]
        if rank == 0:
            expect_error(lambda: hvd.init(comm=world, process_sets=sets),
                         "entry number 1 is a duplicate", kind=ValueError)
        else:
            hvd.init(comm=world, process_sets=sets)
        assert hvd.mpi_ops._basics._get_process_set_ids_and_ranks() == {0: [0, 1], 1: [0],
                                                                       2: [1]}
        hvd.barrier()
        hvd.shutdown()
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
