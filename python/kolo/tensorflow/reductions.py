"""The public reductions of ``horovod.tensorflow``: ``allreduce`` and ``grouped_allreduce``
(Average by default, the legacy ``average=``, compression, ``tf.IndexedSlices``),
``reducescatter`` and ``grouped_reducescatter``. The ``device_*`` arguments are accepted for
Horovod's signatures; kolo reduces in host memory."""

from __future__ import annotations

import tensorflow as tf

from kolo.tensorflow.compression import Compression
from kolo.tensorflow.mpi_ops import (
    Adasum, Average, Sum, _allreduce, _grouped_allreduce, _grouped_reducescatter,
    _reducescatter, allgather, as_tensor, global_process_set,
    handle_average_backwards_compatibility)
from kolo.tensorflow.op_helpers import _set_size_as


def _sparse_allreduce(slices: tf.IndexedSlices, op, prescale_factor, postscale_factor,
                      process_set, name=None):
    # As Horovod: the values and indices are allgathered (their counts may differ by rank);
    # for Average the values are divided by the set's size.
    if op == Adasum:
        raise NotImplementedError("The Adasum reduction does not currently support sparse "
                                  "tensors. As a workaround please pass sparse_as_dense=True "
                                  "to DistributedOptimizer")
    if op not in (Sum, Average):
        raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")
    values = allgather(slices.values, name=None if name is None else f"{name}.values",
                       process_set=process_set)
    indices = allgather(slices.indices, name=None if name is None else f"{name}.indices",
                        process_set=process_set)
    if op == Average:
        values = values / _set_size_as(process_set, values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=slices.dense_shape)


def allreduce(tensor, average=None, device_dense="", device_sparse="",
              compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, name=None, process_set=global_process_set,
              ignore_name_scope=False):
    """Averages (default) or op-reduces a tf.Tensor, tf.Variable or tf.IndexedSlices over the
    process set; differentiable. An IndexedSlices is allgathered (values and indices), as
    Horovod does."""
    op = handle_average_backwards_compatibility(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        return _sparse_allreduce(tensor, op, prescale_factor, postscale_factor, process_set, name)
    compressed, ctx = compression.compress(as_tensor(tensor))
    reduced = _allreduce(compressed, name=name, op=op, prescale_factor=prescale_factor,
                         postscale_factor=postscale_factor, process_set=process_set)
    return compression.decompress(reduced, ctx)


def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="",
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set, name=None,
                      ignore_name_scope=False):
    """Reduces a list of tensors as one group (fused, all or nothing); IndexedSlices among them
    are allgathered one by one. Returns a list in the input's order."""
    op = handle_average_backwards_compatibility(op, average)
    tensors = list(tensors)
    if not tensors:
        return []
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    results = list(tensors)
    for i, t in enumerate(tensors):
        if isinstance(t, tf.IndexedSlices):
            results[i] = _sparse_allreduce(t, op, prescale_factor, postscale_factor,
                                           process_set)
    if dense:
        compressed, ctxs = zip(*[compression.compress(tf.convert_to_tensor(tensors[i]))
                                 for i in dense])
        reduced = _grouped_allreduce(list(compressed), name=name, op=op,
                                     prescale_factor=prescale_factor,
                                     postscale_factor=postscale_factor, process_set=process_set)
        for i, r, c in zip(dense, reduced, ctxs):
            results[i] = compression.decompress(r, c)
    return results


def reducescatter(tensor, device_dense="", compression=Compression.none, op=Average, name=None,
                  process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """This rank's share of the first dimension (the first rows % size ranks get one row more)
    of the Average (default) or Sum over the process set; differentiable."""
    compressed, ctx = compression.compress(as_tensor(tensor))
    reduced = _reducescatter(compressed, name=name, op=op, process_set=process_set,
                             prescale_factor=prescale_factor, postscale_factor=postscale_factor)
    return compression.decompress(reduced, ctx)


def grouped_reducescatter(tensors, device_dense="", compression=Compression.none, op=Average,
                          name=None, process_set=global_process_set, ignore_name_scope=False,
                          prescale_factor=1.0, postscale_factor=1.0):
    """Reducescatters a list of tensors as one group; returns a list."""
    tensors = list(tensors)
    if not tensors:
        return []
    compressed, ctxs = zip(*[compression.compress(tf.convert_to_tensor(t)) for t in tensors])
    reduced = _grouped_reducescatter(list(compressed), name=name, op=op,
                                     process_set=process_set, prescale_factor=prescale_factor,
                                     postscale_factor=postscale_factor)
    return [compression.decompress(r, c) for r, c in zip(reduced, ctxs)]
