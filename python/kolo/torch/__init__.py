"""kolo.torch: the ``horovod.torch`` API on kolo (``import horovod.torch as hvd`` resolves here).

    import kolo.torch as hvd
    hvd.init()
    model = ...
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

Tensors cross into kolo's C++ core through DLPack; kolo is not compiled against torch, so one
build serves every torch version. CUDA collectives run in NCCL where it loads and each rank has
its own GPU (nccl_submit.py); ranks sharing one GPU sum allreduce on it (shared_gpu.py); other
CUDA tensors take the asynchronous host path and other devices (xpu, mps, xla) blocking staging
(staging.py).
"""

from kolo.horovod_common import check_extension  # noqa: F401  (horovod.torch has it)
from kolo.torch.compression import Compression
from kolo.torch.functions import (
    allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters)
from kolo.torch.mpi_ops import (
    Adasum, Average, HorovodInternalError, Max, Min, Product, ProcessSet, Sum, add_process_set,
    allgather, allgather_async, allreduce, allreduce_, allreduce_async, allreduce_async_,
    alltoall, alltoall_async, barrier, grouped_allgather, grouped_allgather_async,
    grouped_reducescatter, grouped_reducescatter_async, reducescatter, reducescatter_async,
    broadcast, broadcast_, broadcast_async, broadcast_async_, ccl_built, cross_rank, cross_size,
    cuda_built, ddl_built, global_process_set, gloo_built, gloo_enabled, grouped_allreduce,
    grouped_allreduce_, grouped_allreduce_async, grouped_allreduce_async_, init, is_homogeneous,
    is_initialized, join, local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported,
    nccl_built, poll, rank, remove_process_set, rocm_built, shutdown, size, start_timeline,
    sparse_allreduce_async, stop_timeline, sycl_built, synchronize)
from kolo.torch.optimizer import DistributedOptimizer
from kolo.torch.sync_batch_norm import SyncBatchNorm
from kolo.torch import elastic  # noqa: E402  (hvd.elastic: needs the modules above)

__all__ = [
    "Compression", "allgather_object", "broadcast_object", "broadcast_optimizer_state",
    "broadcast_parameters", "Adasum", "Average", "HorovodInternalError", "Max", "Min", "Product",
    "ProcessSet", "Sum", "add_process_set", "allgather", "allgather_async", "allreduce",
    "allreduce_", "allreduce_async", "allreduce_async_", "barrier", "broadcast", "broadcast_",
    "broadcast_async", "broadcast_async_", "ccl_built", "cross_rank", "cross_size", "cuda_built",
    "ddl_built", "global_process_set", "gloo_built", "gloo_enabled", "grouped_allreduce",
    "grouped_allreduce_", "grouped_allreduce_async", "grouped_allreduce_async_", "init",
    "is_homogeneous", "is_initialized", "join", "local_rank", "local_size", "mpi_built",
    "mpi_enabled", "mpi_threads_supported", "nccl_built", "poll", "rank", "remove_process_set",
    "rocm_built", "shutdown", "size", "start_timeline", "stop_timeline", "sycl_built",
    "synchronize",
    "DistributedOptimizer", "alltoall", "alltoall_async", "grouped_allgather",
    "grouped_allgather_async", "grouped_reducescatter", "grouped_reducescatter_async",
    "reducescatter", "reducescatter_async", "SyncBatchNorm", "sparse_allreduce_async", "elastic",
]
