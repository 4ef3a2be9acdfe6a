"""Job membership and build facts, as ``horovod.common.basics`` gives them to ``horovod.torch``:
the framework-neutral ones of ``kolo.common.basics`` (kolo.tensorflow has the same objects),
and torch's own ``init`` (which also gives torch the rank's CPU share's thread count) and
``cuda_built`` (which asks torch whether it is a CUDA build)."""

from kolo import _core
from kolo.common import basics as _common
from kolo.common.basics import (  # noqa: F401  (horovod.torch.basics has every one of them)
    Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank, cross_size, ddl_built,
    gloo_built, gloo_enabled, handle_average_backwards_compatibility, is_homogeneous,
    is_initialized, local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported,
    nccl_built, rank, rocm_built, shutdown, size, start_timeline, stop_timeline, sycl_built)
from kolo.torch.thread_count import apply_share_thread_count


def init(comm=None, process_sets=None) -> None:
    """Joins the job (see ``kolo.common.basics.init``: ``comm`` and ``process_sets`` as in
    Horovod), then sets torch's thread count to the rank's CPU share unless the user chose one."""
    _common.init(comm=comm, process_sets=process_sets)
    apply_share_thread_count()


def cuda_built() -> bool:
    """Whether this process can communicate CUDA tensors (in NCCL, kolo.torch.nccl_submit, or
    through host memory without stalling the caller, kolo.torch.staging): torch is a CUDA build,
    a CUDA device is usable and kolo finds the CUDA runtime torch loaded (_core.cuda_status()).
    A CPU build of torch makes no CUDA tensors, whatever runtime the machine has."""
    import torch

    return (torch.version.cuda is not None and torch.cuda.is_available()
            and bool(_core.cuda_status()["loaded"]))
