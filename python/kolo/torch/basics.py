"""Job membership and build facts, as ``horovod.common.basics`` gives them to ``horovod.torch``:
the framework-neutral ones of ``kolo.common.basics`` (kolo.tensorflow has the same objects)."""

from kolo.common.basics import (  # noqa: F401  (horovod.torch.basics has every one of them)
    Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank, cross_size, cuda_built,
    ddl_built, gloo_built, gloo_enabled, handle_average_backwards_compatibility, init,
    is_homogeneous, is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size, start_timeline,
    stop_timeline, sycl_built)
