"""Job membership and build facts, as ``horovod.common.basics`` gives them to ``horovod.torch``."""

from __future__ import annotations

import warnings
from typing import Optional

import kolo
from kolo import _core

Average = kolo.Average
Sum = kolo.Sum
Min = kolo.Min
Max = kolo.Max
Product = kolo.Product
Adasum = kolo.Adasum


def init(comm=None, process_sets=None) -> None:
    """Joins the job started by kolorun/horovodrun (alone: a job of size 1).

    ``process_sets``: a list of ``hvd.ProcessSet`` to register now (ids 1, 2, ... in list order;
    every rank passes the same list), or ``"dynamic"`` to allow ``hvd.add_process_set()`` and
    ``hvd.remove_process_set()`` later (as HOROVOD_DYNAMIC_PROCESS_SETS=1 does). ``comm`` (an MPI
    communicator) is accepted for Horovod compatibility; kolo does not use MPI, so leave it unset.
    """
    from kolo.torch import process_sets as sets

    if comm is not None:
        raise NotImplementedError("kolo does not use MPI: hvd.init(comm=...) is not supported")
    wanted = sets._enable_dynamic_from_init(process_sets)
    already = _core.is_initialized()
    kolo.init()
    if not already:
        sets._init_process_sets(wanted)


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
    """False: kolo is built without MPI."""
    return bool(_core.MPI_BUILT)


def mpi_enabled() -> bool:
    """False: collectives never run on MPI in this build."""
    return False


def mpi_threads_supported() -> bool:
    """False: there is no MPI to share with libraries such as mpi4py (Horovod raises ValueError
    when MPI is not enabled; kolo answers the question instead)."""
    return False


def gloo_built() -> bool:
    """True: kolo's own transports play the role of Horovod's Gloo (HOROVOD_CPU_OPERATIONS=gloo)."""
    return bool(_core.GLOO_BUILT)


def gloo_enabled() -> bool:
    """True once initialized: every collective runs on kolo's own (Gloo-equivalent) transports."""
    return _core.is_initialized() and gloo_built()


def nccl_built() -> bool:
    """False: this build has no NCCL (CPU tensors only)."""
    return bool(_core.NCCL_BUILT)


def cuda_built() -> bool:
    """False: this build supports CPU tensors only."""
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


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    """Not supported by this version; warns and does nothing (training goes on)."""
    warnings.warn("kolo: start_timeline() is not supported by this version; ignored")


def stop_timeline() -> None:
    """Counterpart of start_timeline(); does nothing."""


def handle_average_backwards_compatibility(op: Optional[int], average: Optional[bool]) -> int:
    """The reduction for Horovod's (op, legacy average) pair: op wins; average=True/False maps to
    Average/Sum with a DeprecationWarning; neither gives Average."""
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. "
                             "Please provide only one of them.")
        return op
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed in v1.0",
                      DeprecationWarning)
        return Average if average else Sum
    return Average
