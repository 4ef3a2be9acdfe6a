"""kolo.keras: ``horovod.keras`` for Keras 3 on the JAX and PyTorch backends (``KERAS_BACKEND``);
on the TensorFlow backend ``horovod.keras`` is ``kolo.tensorflow.keras``. The same script trains
on each: ``DistributedOptimizer`` around any Keras optimizer, the callbacks, ``load_model``, and
the collectives on values. Elastic Keras training needs the TensorFlow backend."""

from __future__ import annotations

import keras
import numpy as np

import kolo
from kolo import (  # noqa: F401  (horovod.keras has them)
    Average, Sum, cross_rank, cross_size, init, is_initialized, local_rank, local_size, rank,
    shutdown, size)
from kolo.common.compression import NoneCompressor
from kolo.keras import callbacks  # noqa: F401  (hvd.callbacks)
from kolo.keras import optimizer as _optimizer


class Compression:
    """Gradient compression on these backends: ``none`` only (fp16 needs TensorFlow's)."""
    none = NoneCompressor


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False,
                         gradient_predivide_factor=1.0,
                         op=Average, backward_passes_per_step=1,
                         average_aggregated_gradients=False):
    """A copy of `optimizer` (same class and configuration) whose updates first average
    (``op``) the gradients over all ranks."""
    if backward_passes_per_step != 1:
        raise ValueError(f"backward_passes_per_step={backward_passes_per_step}: local gradient "
                         "aggregation needs the TensorFlow backend (KERAS_BACKEND=tensorflow)")
    if compression not in (None, NoneCompressor):
        raise ValueError("compression needs the TensorFlow backend (KERAS_BACKEND=tensorflow)")
    return _optimizer.wrap(optimizer, name, op, gradient_predivide_factor)


def _numpy(value):
    return np.ascontiguousarray(keras.ops.convert_to_numpy(value))


def allreduce(value, name=None, average=None, op=None):
    """The reduction of a tensor or NumPy value over all ranks (Average by default), as NumPy."""
    op = op if op is not None else (Sum if average is False else Average)
    return kolo.allreduce(_numpy(value), op=op, name=name)


def allgather(value, name=None):
    """Every rank's value concatenated along the first dimension, as NumPy."""
    return kolo.allgather(_numpy(value), name=name)


def broadcast(value, root_rank, name=None):
    """root_rank's value on every rank, as NumPy."""
    return kolo.broadcast(_numpy(value), root_rank, name=name)


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none):
    """Loads a saved Keras model and wraps its optimizer in DistributedOptimizer."""
    objects = dict(custom_objects or {})
    for cls in custom_optimizers or []:
        objects.setdefault(cls.__name__, cls)
    model = keras.saving.load_model(filepath, custom_objects=objects)
    if getattr(model, "optimizer", None) is not None:
        saved = model.optimizer
        distributed = DistributedOptimizer(saved, compression=compression)
        if saved.variables:
            distributed.build(model.trainable_variables)
            for target, value in zip(distributed.variables, saved.variables):
                target.assign(value)
        model.optimizer = distributed
    return model
