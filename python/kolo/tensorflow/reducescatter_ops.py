"""Reducescatter on TensorFlow tensors as ``horovod.tensorflow.mpi_ops`` has it, single and
grouped; the gradient is the allgathered output gradient, times the set's size for Sum and the
scale factors."""

from __future__ import annotations

import tensorflow as tf

import kolo
from kolo import _core
from kolo._handles import synchronize
from kolo.common.basics import Sum
from kolo.process_sets import check_process_set, global_process_set
from kolo.tensorflow.bridge import collective, set_static_shape
from kolo.tensorflow.moving_ops import allgather, grouped_allgather
from kolo.tensorflow.op_helpers import (
    _group_inputs, _grouped_forward, _set_size_as, _with_gradient)


def _np_reducescatter(name, array, op, prescale, postscale, set_id, group=(0, 0)):
    return synchronize(kolo._submit(_core.OP_REDUCESCATTER, "reducescatter", array, None, name,
                                    reduce_op=op, prescale=prescale, postscale=postscale,
                                    process_set=set_id, group=group))


def _scaled_gradient(dy, op, prescale, postscale, process_set):
    """dy times what the forward multiplied each rank's input by (the set's size for Sum, read
    when the graph runs in an elastic job)."""
    scale = prescale * postscale
    if op == Sum:
        return dy * (tf.cast(scale, dy.dtype) * _set_size_as(process_set, dy.dtype))
    return dy * scale if scale != 1.0 else dy


def _scattered_shape(x, process_set):
    if x.shape.rank is None:
        return None
    return tf.TensorShape([None]).concatenate(x.shape[1:])


def _reducescatter(tensor, name=None, op=Sum, ignore_name_scope=False,
                   process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """This rank's share (Horovod's split of the first dimension) of the op-reduction."""
    set_id = check_process_set(process_set)
    tensor = tf.convert_to_tensor(tensor)

    def forward(x):
        (y,) = collective("reducescatter", name, set_id, lambda n, a: [_np_reducescatter(
            n, a, op, prescale_factor, postscale_factor, set_id)], [x], [x.dtype])
        set_static_shape(y, _scattered_shape(x, process_set))
        return [y]

    def gradient(outputs, dy):
        return allgather(_scaled_gradient(dy, op, prescale_factor, postscale_factor,
                                          process_set), process_set=process_set)

    return _with_gradient(forward, gradient, [tensor])[0]


def _grouped_reducescatter(tensors, name=None, op=Sum, ignore_name_scope=False,
                           process_set=global_process_set, prescale_factor=1.0,
                           postscale_factor=1.0):
    """Reducescatters `tensors` as one group; returns a list."""
    set_id, tensors = _group_inputs(tensors, process_set)
    forward = _grouped_forward("grouped_reducescatter", _core.OP_REDUCESCATTER, name, set_id,
                               lambda x: _scattered_shape(x, process_set), reduce_op=op,
                               prescale=prescale_factor, postscale=postscale_factor)

    def gradient(outputs, *dys):
        return grouped_allgather([_scaled_gradient(d, op, prescale_factor, postscale_factor,
                                                   process_set) for d in dys],
                                 process_set=process_set)

    return _with_gradient(forward, gradient, tensors)
