"""``hvd.DistributedOptimizer`` of ``horovod.tensorflow``: a Keras optimizer goes to
``kolo.tensorflow.keras.DistributedOptimizer``; a TF1-style ``tf.compat.v1.train.Optimizer``
gets its ``compute_gradients`` reduced over the ranks (TensorFlow 2 still has these, eagerly
usable through ``minimize`` with a callable loss)."""

from __future__ import annotations

import tensorflow as tf

from kolo.common.grouping import check_reduction_arguments
from kolo.tensorflow.compression import Compression
from kolo.tensorflow.gradients import GradientReducer
from kolo.tensorflow.mpi_ops import Average, global_process_set


class _DistributedLegacyOptimizer(tf.compat.v1.train.Optimizer):
    """Wraps a tf.compat.v1.train.Optimizer: gradients are reduced before they are applied."""

    def __init__(self, optimizer, name, use_locking, reducer, backward_passes_per_step):
        if name is None:
            name = f"Distributed{type(optimizer).__name__}"
        super().__init__(name=name, use_locking=use_locking)
        self._optimizer = optimizer
        self._reducer = reducer
        if backward_passes_per_step != 1:
            raise ValueError("kolo.tensorflow: backward_passes_per_step > 1 is supported for Keras "
                             "optimizers only, not for tf.compat.v1.train optimizers")

    def compute_gradients(self, *args, **kwargs):
        grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
        grads, variables = zip(*grads_and_vars) if grads_and_vars else ((), ())
        return list(zip(self._reducer(grads, variables), variables))

    def apply_gradients(self, *args, **kwargs):
        return self._optimizer.apply_gradients(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="",
                         device_sparse="", compression=Compression.none, sparse_as_dense=False,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set, scale_local_gradients=True):
    """An optimizer that averages (``op``) gradients over the process set before applying
    them: Keras optimizers (``keras.optimizers.*``) and ``tf.compat.v1.train`` optimizers."""
    groups = check_reduction_arguments(op, gradient_predivide_factor, num_groups, groups,
                                       lambda v: hasattr(v, "assign"), "tf.Variable")
    if isinstance(optimizer, tf.compat.v1.train.Optimizer):
        reducer = GradientReducer(compression, sparse_as_dense, op, gradient_predivide_factor,
                                  groups, process_set)
        return _DistributedLegacyOptimizer(optimizer, name, use_locking, reducer,
                                           backward_passes_per_step)
    from kolo.tensorflow import keras as hvd_keras
    return hvd_keras.DistributedOptimizer(
        optimizer, name=name, compression=compression, sparse_as_dense=sparse_as_dense,
        backward_passes_per_step=backward_passes_per_step, op=op,
        gradient_predivide_factor=gradient_predivide_factor,
        average_aggregated_gradients=average_aggregated_gradients, groups=groups,
        process_set=process_set, scale_local_gradients=scale_local_gradients)
