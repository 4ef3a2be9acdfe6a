"""kolo.tensorflow.keras: ``horovod.tensorflow.keras`` (and ``horovod.keras``) on Keras 3, or on
tf-keras with TF_USE_LEGACY_KERAS=1: DistributedOptimizer around any Keras optimizer, the
callbacks, elastic training, load_model and broadcast_global_variables.

Keras 3 compiles ``model.fit``'s step with XLA by default (``jit_compile="auto"``), which cannot
run kolo's collectives: a model compiled with kolo's DistributedOptimizer resolves "auto" to
False instead (an explicit ``jit_compile=True`` gets kolo's clear error)."""

from __future__ import annotations

import tensorflow as tf

import kolo.tensorflow as hvd
from kolo.common.grouping import check_reduction_arguments
from kolo.tensorflow import (  # noqa: F401  (horovod.tensorflow.keras has them)
    Average, Compression, ProcessSet, Sum, add_process_set, ccl_built, cross_rank, cross_size,
    cuda_built, ddl_built, global_process_set, gloo_built, gloo_enabled, init, is_initialized,
    local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank,
    remove_process_set, rocm_built, shutdown, size, start_timeline, stop_timeline)
from kolo.tensorflow.gradients import GradientReducer
from kolo.tensorflow.keras import optimizer as _optimizer
from kolo.tensorflow.keras.xla import resolve_auto_jit_compile_without_xla

resolve_auto_jit_compile_without_xla()


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False,
                         gradient_predivide_factor=1.0, op=Average, backward_passes_per_step=1,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set, scale_local_gradients=True):
    """A copy of `optimizer` (same class and configuration) whose updates first average
    (``op``) the gradients over the process set."""
    groups = check_reduction_arguments(op, gradient_predivide_factor, num_groups, groups,
                                       lambda v: hasattr(v, "assign"), "tf.Variable")
    reducer = GradientReducer(compression, sparse_as_dense, op, gradient_predivide_factor,
                              groups, process_set)
    return _optimizer.wrap(optimizer, name, reducer, process_set, scale_local_gradients,
                           backward_passes_per_step, average_aggregated_gradients)


def PartialDistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                                compression=Compression.none, sparse_as_dense=False,
                                gradient_predivide_factor=1.0, op=Average,
                                backward_passes_per_step=1, average_aggregated_gradients=False,
                                groups=None, process_set=global_process_set, local_layers=None,
                                scale_local_gradients=True):
    """DistributedOptimizer whose `local_layers`' gradients stay local."""
    distributed = DistributedOptimizer(
        optimizer, name, device_dense, device_sparse, compression, sparse_as_dense,
        gradient_predivide_factor, op, backward_passes_per_step, average_aggregated_gradients,
        0, groups, process_set, scale_local_gradients)
    layers = [] if local_layers is None else (
        local_layers if isinstance(local_layers, (list, tuple)) else [local_layers])
    for layer in layers:
        for variable in layer.trainable_weights:
            distributed.register_local_var(variable)
    return distributed


def _optimizer_variables(optimizer) -> list:
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def broadcast_global_variables(root_rank):
    """TF1's global-variable broadcast; in TensorFlow 2 use the callback or broadcast_variables
    (raises, as Horovod's does in eager code)."""
    return hvd.broadcast_global_variables(root_rank)


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0, op=None,
              compression=Compression.none):
    """The reduction of a tensor or NumPy value over all ranks (Average by default)."""
    return hvd.allreduce(tf.constant(value, name=name) if not tf.is_tensor(value) else value,
                         average=average, name=name, op=op, prescale_factor=prescale_factor,
                         postscale_factor=postscale_factor, compression=compression)


def allgather(value, name=None):
    """Every rank's value concatenated along the first dimension."""
    return hvd.allgather(tf.constant(value) if not tf.is_tensor(value) else value, name=name)


def broadcast(value, root_rank, name=None):
    """root_rank's value on every rank."""
    return hvd.broadcast(tf.constant(value) if not tf.is_tensor(value) else value, root_rank,
                         name=name)


def reducescatter(value, name=None, op=Average):
    """This rank's share of the reduction over all ranks."""
    return hvd.reducescatter(tf.constant(value) if not tf.is_tensor(value) else value,
                             name=name, op=op)


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none, legacy_opts=False):
    """Loads a saved Keras model and wraps its optimizer (state included) in
    DistributedOptimizer. ``custom_optimizers`` are registered as custom objects (Keras
    deserializes them by class name); ``legacy_opts`` is accepted for Horovod's signature."""
    objects = dict(custom_objects or {})
    for cls in custom_optimizers or []:
        objects.setdefault(cls.__name__, cls)
    model = tf.keras.models.load_model(filepath, custom_objects=objects)
    saved = getattr(model, "optimizer", None)
    if saved is None:
        return model
    distributed = DistributedOptimizer(saved, compression=compression)
    saved_variables = _optimizer_variables(saved)
    if saved_variables and hasattr(distributed, "build"):
        distributed.build(model.trainable_variables)
        for target, value in zip(_optimizer_variables(distributed), saved_variables):
            target.assign(value)
    model.optimizer = distributed
    return model


from kolo.tensorflow.keras import callbacks, elastic  # noqa: E402,F401  (need the names above)
