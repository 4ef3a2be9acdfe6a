"""Process sets defined by mpi4py communicators, as Horovod's ``hvd.ProcessSet(subcomm)``.

Only with ``hvd.init(comm=<an mpi4py communicator>)``, as in Horovod: at each init, every rank
passes its communicators (one per process-set entry that holds one, the same number on every
rank), each is translated into ranks of the global communicator, and the ranks' lists are
gathered over it, so that the sets of all ranks are registered (rank 0's ``Split`` color and
rank 1's alike), in Horovod's order: entry by entry, each entry's distinct lists in ascending
order, before the sets given as lists of ranks. The gathering is mpi4py's own (the job was
started by mpirun, which is what made those communicators); kolo's collectives are not involved.

mpi4py is imported only when a communicator is seen: importing it initializes MPI.
"""

from __future__ import annotations

import sys
from typing import List, Sequence


def is_mpi_comm(value) -> bool:
    """Whether `value` is an mpi4py communicator (without importing mpi4py)."""
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi is not None and isinstance(value, mpi.Comm)


def world_ranks(comm, global_comm, what: str) -> List[int]:
    """The ranks of `comm`'s members in `global_comm`, ascending; ValueError naming `what` when
    a member is not in `global_comm`."""
    from mpi4py import MPI

    translated = MPI.Group.Translate_ranks(comm.Get_group(), list(range(comm.Get_size())),
                                           global_comm.Get_group())
    if any(rank == MPI.UNDEFINED for rank in translated):
        raise ValueError(f"{what}: its MPI communicator is not a subset of the communicator "
                         f"given to hvd.init(comm=...) ({global_comm.Get_size()} ranks)")
    return sorted(translated)


def gather_comm_sets(global_comm, comms: Sequence) -> List[List[int]]:
    """Every rank's communicators, entry by entry, as lists of global ranks to register in this
    order (Horovod's ``horovod_init_multi_comm``). Collective over `global_comm`: every rank
    calls it with as many communicators."""
    counts = global_comm.allgather(len(comms))
    if len(set(counts)) != 1:
        raise ValueError("hvd.init(process_sets=...): the ranks pass different numbers of process "
                         f"sets defined by MPI communicators (by rank: {counts}); each rank must "
                         "pass one communicator per entry, in the same order")
    order: List[List[int]] = []
    for index, comm in enumerate(comms):
        mine = world_ranks(comm, global_comm, f"process_sets entry {index} (MPI communicator)")
        everyone = global_comm.allgather(mine)
        order.extend(list(ranks) for ranks in sorted({tuple(ranks) for ranks in everyone}))
    return order
