"""Job membership and build facts, as ``horovod.common.basics`` gives them to every framework
(``kolo.torch`` and ``kolo.tensorflow`` re-export these very functions)."""

from __future__ import annotations

from types import SimpleNamespace

import kolo
from kolo import _core
from kolo.common.reduce_ops import get_average_backwards_compatibility_fun
from kolo.process_sets import global_process_set

Average = kolo.Average
Sum = kolo.Sum
Min = kolo.Min
Max = kolo.Max
Product = kolo.Product
Adasum = kolo.Adasum


def init(comm=None, process_sets=None) -> None:
    """Joins the job started by kolorun/horovodrun or mpirun (alone: a job of size 1).

    ``comm``, as in Horovod: an mpi4py communicator or a list of ranks; it must span the whole
    job (``MPI.COMM_WORLD`` or a duplicate of it, or every rank), a smaller one is refused with a
    pointer to process sets. ``process_sets``: a list of ``hvd.ProcessSet`` to register now (ids
    1, 2, ... in list order; every rank passes the same list), or ``"dynamic"`` to allow
    ``hvd.add_process_set()`` and ``hvd.remove_process_set()`` later (as
    HOROVOD_DYNAMIC_PROCESS_SETS=1 does). With an mpi4py ``comm``, a set may also be given as
    ``hvd.ProcessSet(subcomm)``: every rank's communicators are gathered and registered, as
    Horovod does (``kolo.mpi_comm_sets``).
    """
    is_mpi_comm = comm is not None and not isinstance(comm, (list, tuple))
    if is_mpi_comm:
        _check_mpi_comm(comm)
    # Horovod's global_process_set.mpi_comm: the communicator the job was initialized with.
    global_process_set.mpi_comm = comm if is_mpi_comm else None
    kolo.init(process_sets=process_sets)  # the one path into the core, for kolo and kolo.torch
    if isinstance(comm, (list, tuple)) and sorted(comm) != list(range(size())):
        job_size = size()
        kolo.shutdown()
        raise ValueError(
            f"hvd.init(comm={list(comm)}): kolo's global set is all {job_size} ranks of the job; "
            f"for a subset use process sets: hvd.init(process_sets=[hvd.ProcessSet({list(comm)})]) "
            "and process_set= on the operations")


def _check_mpi_comm(comm) -> None:
    """Accepts an mpi4py communicator congruent to MPI.COMM_WORLD; refuses anything else."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise ValueError(
            "hvd.init(comm=...) takes an mpi4py communicator (or a list of ranks), but mpi4py is "
            "not importable") from error
    if not isinstance(comm, MPI.Comm):
        raise ValueError(f"hvd.init(comm=...): {type(comm).__name__} is not an mpi4py communicator "
                         "or a list of ranks")
    if MPI.Comm.Compare(comm, MPI.COMM_WORLD) not in (MPI.IDENT, MPI.CONGRUENT):
        raise ValueError(
            f"hvd.init(comm=...): the communicator has {comm.Get_size()} of the "
            f"{MPI.COMM_WORLD.Get_size()} ranks of MPI.COMM_WORLD, but kolo's global set is the "
            "whole job; for a subset use process sets (hvd.init(process_sets=[hvd.ProcessSet("
            "ranks)]) and process_set= on the operations)")


def shutdown() -> None:
    """Leaves the job; pending operations fail. ``init()`` may be called again afterwards."""
    kolo.shutdown()


def is_initialized() -> bool:
    """Whether ``init()`` has been called (and ``shutdown()`` not since)."""
    return _core.is_initialized()


def size() -> int:
    """Number of ranks in the job."""
    return _core.size()


def rank() -> int:
    """This process's rank in the job, 0 to size() - 1."""
    return _core.rank()


def local_size() -> int:
    """Number of ranks on this host."""
    return _core.local_size()


def local_rank() -> int:
    """This process's index among the ranks on its host."""
    return _core.local_rank()


def cross_size() -> int:
    """Number of hosts that have a rank with this process's local rank."""
    return _core.cross_size()


def cross_rank() -> int:
    """Index of this process's host among those hosts."""
    return _core.cross_rank()


def is_homogeneous() -> bool:
    """Whether every host runs the same number of ranks."""
    return size() == local_size() * cross_size()


def mpi_built() -> bool:
    """Whether kolo's MPI plugin (libkolo_mpi.so, beside libkolo.so) exists and loads."""
    return bool(_core.MPI_BUILT)


def mpi_enabled() -> bool:
    """Whether collectives run on MPI: initialized with HOROVOD_CPU_OPERATIONS=mpi (or
    KOLO_CPU_OPERATIONS=mpi, or under ``kolorun --mpi``)."""
    return _core.is_initialized() and _core.config()["cpu_operations"] == "mpi"


def mpi_threads_supported() -> bool:
    """With MPI enabled: whether MPI provides MPI_THREAD_MULTIPLE (so mpi4py may be used beside
    kolo). Without it False (Horovod raises ValueError there; kolo answers the question)."""
    return mpi_enabled() and _core.mpi_thread_level() == 3


def gloo_built() -> bool:
    """True: kolo's own transports play the role of Horovod's Gloo (HOROVOD_CPU_OPERATIONS=gloo)."""
    return bool(_core.GLOO_BUILT)


def gloo_enabled() -> bool:
    """True once initialized unless MPI runs the collectives: kolo's own (Gloo-equivalent)
    transports do."""
    return _core.is_initialized() and gloo_built() and not mpi_enabled()


def nccl_built() -> bool:
    """Whether CUDA tensors' collectives can run in NCCL in this process: kolo's NCCL backend
    (NCCL_BUILT), a libnccl.so.2 and a CUDA runtime kolo can load (kolo._core.nccl_status() /
    cuda_status() say which, or why not)."""
    return (bool(_core.NCCL_BUILT) and bool(_core.nccl_status()["loaded"])
            and bool(_core.cuda_status()["loaded"]))


def cuda_built() -> bool:
    """False: kolo's framework-free array API takes host memory only (kolo.torch.cuda_built
    answers for torch's CUDA tensors, which kolo.torch communicates)."""
    return bool(_core.CUDA_BUILT)


def rocm_built() -> bool:
    """False."""
    return False


def ddl_built() -> bool:
    """False."""
    return False


def ccl_built() -> bool:
    """False."""
    return False


def sycl_built() -> bool:
    """False: no SYCL (Intel GPU) code in this build (Horovod's Intel GPU builds answer True)."""
    return False


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    """Starts writing a Chrome-trace timeline to file_path (replacing one being written).

    As in Horovod, rank 0 (the coordinator) writes the job's timeline; on other ranks this
    does nothing. mark_cycles adds a CYCLE_START instant event for every background cycle.
    """
    _core.start_timeline(str(file_path), bool(mark_cycles))


def stop_timeline() -> None:
    """Stops the timeline; the file is a complete JSON array when this returns."""
    _core.stop_timeline()


# The reduction for Horovod's (op, legacy average) pair: op wins; average=True/False maps to
# Average/Sum with a DeprecationWarning; neither gives Average (common/reduce_ops.py).
handle_average_backwards_compatibility = get_average_backwards_compatibility_fun(
    SimpleNamespace(Average=Average, Sum=Sum))
