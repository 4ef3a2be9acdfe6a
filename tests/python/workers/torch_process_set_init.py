"""hvd.init(process_sets=...) as Horovod's, on 2 or 3 ranks: the distinct sets are registered even
when an entry repeats another (the repeat loses its id and ValueError names it afterwards), a
second init() while initialized maps its sets to the registered ids, Horovod's internal
``mpi_ops._basics`` answers its own tests' questions, a removed set keeps its ranks and can be
added again, and removed ids are handed out again oldest first."""

import os
import sys

import torch

import horovod.torch as hvd
from torch_process_sets import expect_error


def check_duplicates_registered_then_refused(rank, size):
    everyone = list(range(size))
    # Permuted on rank 0: the order of a set's ranks does not matter.
    upper = hvd.ProcessSet(range(1, size) if rank == 0 else reversed(range(1, size)))
    zero, copy_of_global, zero_again = (hvd.ProcessSet([0]), hvd.ProcessSet(everyone[::-1]),
                                        hvd.ProcessSet([0]))
    expect_error(lambda: hvd.init(process_sets=[zero, upper, copy_of_global, zero_again]),
                 "process_sets entry number 2 is a duplicate", kind=ValueError)
    assert hvd.is_initialized()
    basics = hvd.mpi_ops._basics
    assert basics._get_process_set_ids_and_ranks() == {0: everyone, 1: [0],
                                                       2: list(range(1, size))}
    assert [ps.process_set_id for ps in (zero, upper, copy_of_global, zero_again)] == \
        [1, 2, None, None]
    return basics


def check_second_init_maps(rank, size, basics):
    fresh = [hvd.ProcessSet(range(1, size)), hvd.ProcessSet([0])]
    hvd.init(process_sets=fresh)
    assert [ps.process_set_id for ps in fresh] == [2, 1]
    if size == 3:
        expect_error(lambda: hvd.init(process_sets=[hvd.ProcessSet([0, 2])]),
                     "entry number 0", "not a registered process set", kind=ValueError)
    upper = fresh[0]
    assert basics._process_set_size(upper.process_set_id) == size - 1
    if rank in upper.ranks:
        assert basics._process_set_rank(upper.process_set_id) == rank - 1
        total = hvd.allreduce(torch.full((3,), float(rank)), op=hvd.Sum, name="upper",
                              process_set=upper)
        assert torch.equal(total, torch.full((3,), float(sum(upper.ranks)))), total
    hvd.barrier()
    hvd.shutdown()


def check_removed_ids_come_back(size):
    hvd.init(process_sets="dynamic")
    zero, upper = hvd.add_process_set([0]), hvd.add_process_set(range(1, size))
    assert (zero.process_set_id, upper.process_set_id) == (1, 2)
    assert hvd.remove_process_set(zero) is True
    assert zero.process_set_id is None and zero.ranks == [0]  # kept, as Horovod
    assert hvd.add_process_set(zero) is zero and zero.process_set_id == 1
    assert hvd.remove_process_set(upper) and hvd.remove_process_set(zero)  # 2 freed, then 1
    last = hvd.add_process_set([size - 1])
    first = hvd.add_process_set([0])
    assert (last.process_set_id, first.process_set_id) == (2, 1), (last, first)
    if size == 3:
        assert hvd.add_process_set([0, 2]).process_set_id == 3
    assert hvd.mpi_ops._basics._get_process_set_ids_and_ranks()[2] == [size - 1]
    hvd.barrier()
    hvd.shutdown()


def main():
    rank, size = int(os.environ["HOROVOD_RANK"]), int(os.environ["HOROVOD_SIZE"])
    basics = check_duplicates_registered_then_refused(rank, size)
    check_second_init_maps(rank, size, basics)
    check_removed_ids_come_back(size)
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
