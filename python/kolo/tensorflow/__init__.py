"""kolo.tensorflow: the ``horovod.tensorflow`` API on kolo (``import horovod.tensorflow as hvd``
resolves here), for TensorFlow 2 in eager code and inside ``tf.function``.

    import kolo.tensorflow as hvd
    hvd.init()
    with tf.GradientTape() as tape:
        loss = ...
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)

kolo is not compiled against TensorFlow: tensors reach the core as NumPy arrays (through
DLPack); in graph mode allreduce and broadcast are kolo's compiled ``KoloCollective`` op
(native_op.py) and the other collectives run the same code in ``tf.numpy_function`` nodes
(bridge.py). XLA (``jit_compile=True``) cannot run them and says so.
"""

from kolo.common.grouping import split_list  # noqa: F401
from kolo.horovod_common import check_extension, gpu_available  # noqa: F401
from kolo.tensorflow.compression import Compression
from kolo.tensorflow.functions import (
    allgather_object, broadcast_object, broadcast_object_fn, broadcast_variables)
from kolo.tensorflow.gradient_tape import (
    DistributedGradientTape, PartialDistributedGradientTape)
from kolo.tensorflow.mpi_ops import (  # noqa: F401
    Adasum, Average, HorovodInternalError, Max, Min, Product, ProcessSet, Sum, _allreduce,
    _grouped_allreduce, _grouped_reducescatter, _reducescatter, add_process_set, allgather,
    alltoall, barrier, broadcast, broadcast_, ccl_built, check_num_rank_power_of_2, cross_rank,
    cross_size, cuda_built, ddl_built, global_process_set, gloo_built, gloo_enabled,
    grouped_allgather, handle_average_backwards_compatibility, init, is_homogeneous,
    is_initialized, join, local_rank, local_rank_op, local_size, local_size_op, mpi_built,
    mpi_enabled, mpi_threads_supported, nccl_built, process_set_included_op, rank, rank_op,
    remove_process_set, rocm_built, shutdown, size, size_op, start_timeline, stop_timeline,
    sycl_built)
from kolo.tensorflow.optimizer import DistributedOptimizer
from kolo.tensorflow.reductions import (
    allreduce, grouped_allreduce, grouped_reducescatter, reducescatter)
from kolo.tensorflow.sync_batch_norm import SyncBatchNormalization
from kolo.tensorflow import elastic, util  # noqa: E402,F401  (hvd.elastic needs the above)
from kolo.tensorflow.util import _executing_eagerly  # noqa: E402,F401


def broadcast_global_variables(root_rank):
    """TF1's global-variable broadcast: TensorFlow 2 has no global variable collection in eager
    code, so, as Horovod on TF2, this asks for ``broadcast_variables`` instead."""
    import tensorflow as tf
    if tf.executing_eagerly():
        raise RuntimeError(
            "hvd.broadcast_global_variables() does not support eager execution. "
            "Please use `hvd.broadcast_variables(<model/optimizer variables>)` instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


__all__ = [
    "Adasum", "Average", "Compression", "DistributedGradientTape", "DistributedOptimizer",
    "HorovodInternalError", "Max", "Min", "PartialDistributedGradientTape", "Product",
    "ProcessSet", "Sum", "SyncBatchNormalization", "add_process_set", "allgather",
    "allgather_object", "allreduce", "alltoall", "barrier", "broadcast", "broadcast_",
    "broadcast_global_variables", "broadcast_object", "broadcast_object_fn",
    "broadcast_variables", "ccl_built", "cross_rank", "cross_size", "cuda_built", "ddl_built",
    "elastic", "global_process_set", "gloo_built", "gloo_enabled", "grouped_allgather",
    "grouped_allreduce", "grouped_reducescatter", "init", "is_homogeneous", "is_initialized",
    "join", "local_rank", "local_rank_op", "local_size", "local_size_op", "mpi_built",
    "mpi_enabled", "mpi_threads_supported", "nccl_built", "process_set_included_op", "rank",
    "rank_op", "reducescatter", "remove_process_set", "rocm_built", "shutdown", "size",
    "size_op", "start_timeline", "stop_timeline", "sycl_built",
]
