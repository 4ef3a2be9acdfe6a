"""Allreduce on TensorFlow tensors as ``horovod.tensorflow.mpi_ops`` has it (``_allreduce``
sums, as Horovod's raw op does), grouped, and many gradients in one node; the gradient of each
is the same allreduce of the output gradient."""

from __future__ import annotations

import numpy as np

import kolo
from kolo import _core
from kolo._handles import synchronize
from kolo.common.basics import Sum
from kolo.process_sets import check_process_set, global_process_set
from kolo.tensorflow.bridge import collective, same_shape, set_static_shape
from kolo.tensorflow.op_helpers import (
    _as_tensors, _group_inputs, _grouped_forward, _with_gradient, as_tensor)


def _np_allreduce(name, array, op, prescale, postscale, set_id):
    name = kolo._name("allreduce", name, set_id)
    fast = same_shape(_core.OP_ALLREDUCE, array, name, op, 0, prescale, postscale, set_id)
    if fast is not None:
        return fast
    output = np.empty_like(array)
    return synchronize(kolo._submit(_core.OP_ALLREDUCE, "allreduce", array, output, name,
                                    reduce_op=op, prescale=prescale, postscale=postscale,
                                    process_set=set_id, drive=True))


def _allreduce(tensor, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
               ignore_name_scope=False, process_set=global_process_set):
    """Reduces `tensor` over the process set with `op` (Sum by default, as Horovod's raw op)."""
    set_id = check_process_set(process_set)
    tensor = as_tensor(tensor)

    def forward(x):
        (y,) = collective("allreduce", name, set_id, lambda n, a: [_np_allreduce(
            n, a, op, prescale_factor, postscale_factor, set_id)], [x], [x.dtype],
            native=dict(op=_core.OP_ALLREDUCE, reduce_op=op, prescale=prescale_factor,
                        postscale=postscale_factor))
        set_static_shape(y, x.shape)
        return [y]

    def gradient(outputs, dy):
        return _allreduce(dy, op=op, prescale_factor=prescale_factor,
                          postscale_factor=postscale_factor, process_set=process_set)

    return _with_gradient(forward, gradient, [tensor])[0]


def _grouped_allreduce(tensors, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
                       ignore_name_scope=False, process_set=global_process_set):
    """Reduces `tensors` as one group (all or nothing, fused); returns a list."""
    set_id, tensors = _group_inputs(tensors, process_set)
    forward = _grouped_forward("grouped_allreduce", _core.OP_ALLREDUCE, name, set_id,
                               lambda x: x.shape, fresh_output=True, reduce_op=op,
                               prescale=prescale_factor, postscale=postscale_factor)

    def gradient(outputs, *dys):
        return _grouped_allreduce(list(dys), op=op, prescale_factor=prescale_factor,
                                  postscale_factor=postscale_factor, process_set=process_set)

    return _with_gradient(forward, gradient, tensors)


def _allreduce_batch(tensors, partition, op, prescale_factor, postscale_factor,
                     process_set=global_process_set, name=None):
    """Reduces every tensor of `tensors` in one eager call or one graph node: each part of
    `partition` (lists of indices covering every tensor once) is a single allreduce or, with
    several members, one grouped allreduce. One node for all the gradients of a step keeps a
    graph's collectives in one order on every rank and costs one Python crossing, not one per
    gradient. Differentiable like allreduce."""
    set_id = check_process_set(process_set)
    tensors = _as_tensors(tensors)

    def run(n, *arrays):
        base = kolo._name("gradients", n, set_id)
        handles = []
        for part, members in enumerate(partition):
            def submit_one(a, member_name, group=(0, 0)):
                return kolo._submit(_core.OP_ALLREDUCE, "allreduce", a, np.empty_like(a),
                                    member_name, reduce_op=op, prescale=prescale_factor,
                                    postscale=postscale_factor, process_set=set_id,
                                    group=group)
            if len(members) == 1:
                handles.append(submit_one(arrays[members[0]], f"{base}.{members[0]}"))
            else:
                group_name = f"{base}.group{part}"
                group = kolo._new_group(group_name, len(members))
                handles.append(kolo._group_handle(kolo.submit_members(
                    group, [arrays[i] for i in members],
                    lambda a, k, g, gn=group_name: submit_one(a, f"{gn}.{k}", g))))
        outputs = [None] * len(arrays)
        for members, handle in zip(partition, handles):
            results = synchronize(handle)
            for i, result in zip(members, results if len(members) > 1 else [results]):
                outputs[i] = result
        return outputs

    def forward(*xs):
        ys = collective("gradients", name, set_id, run, xs, [x.dtype for x in xs])
        for x, y in zip(xs, ys):
            set_static_shape(y, x.shape)
        return ys

    def gradient(outputs, *dys):
        return _allreduce_batch(list(dys), partition, op, prescale_factor, postscale_factor,
                                process_set)

    return _with_gradient(forward, gradient, tensors)
