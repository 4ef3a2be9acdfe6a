"""The collectives that move rows without arithmetic, as ``horovod.tensorflow.mpi_ops`` has
them: allgather (gradient: this rank's rows of the rank-averaged output gradient), broadcast
(gradient: the rank-averaged output gradient on the root, zeros elsewhere), ``broadcast_`` into
variables, and alltoall (gradient: the output gradient sent back with the received splits)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import kolo
from kolo import _core
from kolo._handles import synchronize
from kolo.common.basics import Average, rank
from kolo.process_sets import check_process_set, global_process_set
from kolo.tensorflow.allreduce_ops import _allreduce, _grouped_allreduce
from kolo.tensorflow.bridge import collective, same_shape, set_static_shape
from kolo.tensorflow.op_helpers import (
    _as_moved_bytes, _differentiable, _group_inputs, _grouped_forward, _np_grouped,
    _rank_in_as, _restored, _tape_active, _with_gradient, as_tensor)


def _np_allgather(name, array, set_id):
    array, dtype = _as_moved_bytes(array)
    return _restored(synchronize(kolo._submit(_core.OP_ALLGATHER, "allgather", array, None, name,
                                              process_set=set_id)), dtype)


def _gathered_shape(x):
    return tf.TensorShape([None]).concatenate(x.shape[1:]) if x.shape.rank else None


def _my_rows(reduced_grads: list, inputs: list, process_set) -> list:
    """This rank's rows of each gathered gradient (the first dimensions may differ by rank)."""
    dims = tf.stack([tf.shape(x, out_type=tf.int64)[0] for x in inputs])
    # One row per rank of the set; the rank is read when the graph runs in an elastic job.
    all_dims = tf.reshape(allgather(tf.reshape(dims, [1, -1]), process_set=process_set),
                          [-1, len(inputs)])
    offsets = tf.reduce_sum(all_dims[:_rank_in_as(process_set)], axis=0)
    return [tf.slice(g, tf.concat([[offsets[i]], tf.zeros([tf.rank(g) - 1], tf.int64)], 0),
                     tf.concat([[dims[i]], tf.fill([tf.rank(g) - 1], tf.constant(-1, tf.int64))],
                               0))
            for i, g in enumerate(reduced_grads)]


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Every rank's `tensor` concatenated along dimension 0 (which may differ by rank)."""
    set_id = check_process_set(process_set)
    tensor = tf.convert_to_tensor(tensor)

    def forward(x):
        (y,) = collective("allgather", name, set_id,
                          lambda n, a: [_np_allgather(n, a, set_id)], [x], [x.dtype])
        set_static_shape(y, _gathered_shape(x) if x.shape.rank is not None else None)
        return [y]

    def gradient(outputs, dy):
        reduced = _allreduce(dy, op=Average, process_set=process_set)
        return _my_rows([reduced], [tensor], process_set)[0]

    return _with_gradient(forward, gradient, [tensor])[0]


def grouped_allgather(tensors, name=None, ignore_name_scope=False,
                      process_set=global_process_set):
    """Allgathers `tensors` as one group; returns a list."""
    set_id, tensors = _group_inputs(tensors, process_set)
    forward = _grouped_forward("grouped_allgather", _core.OP_ALLGATHER, name, set_id,
                               lambda x: _gathered_shape(x) if x.shape.rank is not None else None)

    def gradient(outputs, *dys):
        reduced = _grouped_allreduce(list(dys), op=Average, process_set=process_set)
        return _my_rows(reduced, tensors, process_set)

    return _with_gradient(forward, gradient, tensors)


def _np_broadcast(name, array, root_rank, set_id):
    name = kolo._name("broadcast", name, set_id)
    fast = same_shape(_core.OP_BROADCAST, array, name, root=root_rank, set_id=set_id)
    if fast is not None:
        return fast
    array, dtype = _as_moved_bytes(array)
    output = np.empty_like(array)
    return _restored(synchronize(kolo._submit(_core.OP_BROADCAST, "broadcast", array, output,
                                              name, root=root_rank, process_set=set_id,
                                              drive=True)), dtype)


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """root_rank's `tensor` on every rank of the process set."""
    set_id = check_process_set(process_set)
    tensor = as_tensor(tensor)

    def forward(x):
        (y,) = collective("broadcast", name, set_id,
                          lambda n, a: [_np_broadcast(n, a, root_rank, set_id)], [x], [x.dtype],
                          native=dict(op=_core.OP_BROADCAST, root=root_rank))
        set_static_shape(y, x.shape)
        return [y]

    def gradient(outputs, dy):
        reduced = _allreduce(dy, op=Average, process_set=process_set)
        return reduced if rank() == root_rank else reduced * 0

    return _with_gradient(forward, gradient, [tensor])[0]


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Overwrites `variables` (a tf.Variable or a list of them) with root_rank's values, in
    place, as one grouped broadcast; returns what it was given (in a graph: the assignments,
    which run when fetched)."""
    single = isinstance(variables, tf.Variable)
    targets = [variables] if single else list(variables)
    if targets:
        set_id = check_process_set(process_set)
        values = [tf.convert_to_tensor(v) for v in targets]

        # Into fresh arrays, never the ones TensorFlow hands over: a graph's constant-folded
        # initial values may share one buffer between variables, and an in-place write through
        # one read clobbered the others (Horovod's graph-mode test_horovod_broadcast_inplace).
        def run(n, *arrays):
            return _np_grouped("broadcast_", n, list(arrays), set_id, lambda a, nm, g:
                               kolo._submit(_core.OP_BROADCAST, "broadcast", a,
                                            np.empty_like(a), nm, root=root_rank,
                                            process_set=set_id, group=g))

        results = collective("broadcast_", name, set_id, run, values, [v.dtype for v in values])
        assigned = [variable.assign(tf.reshape(value, tf.shape(variable)))
                    for variable, value in zip(targets, results)]
        if not tf.executing_eagerly():
            # In a graph the assignments run only when fetched: return them, as Horovod does.
            return assigned[0] if single else assigned
    return variables


# ---- alltoall -------------------------------------------------------------------------------

def _np_alltoall(name, array, splits, set_id):
    array, dtype = _as_moved_bytes(array)
    split_list, invalid = kolo._alltoall_splits(splits, name)
    received, received_splits = synchronize(kolo._submit(
        _core.OP_ALLTOALL, "alltoall", array, None, name, splits=split_list,
        process_set=set_id, invalid=invalid))
    return [_restored(received, dtype), np.asarray(received_splits, dtype=np.int32)]


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Rows splits[r] of `tensor` (in order) go to rank r (without splits, the first dimension
    is divided evenly); returns the received rows, and with `splits` also the received splits."""
    set_id = check_process_set(process_set)
    tensor = tf.convert_to_tensor(tensor)
    has_splits = splits is not None
    splits_tensor = (tf.convert_to_tensor(splits) if has_splits
                     else tf.constant([], dtype=tf.int32))
    received_splits_holder = []

    def forward(x):
        y, received = collective(
            "alltoall", name, set_id,
            lambda n, a, s: _np_alltoall(n, a, s if has_splits else None, set_id),
            [x, splits_tensor], [x.dtype, tf.int32])
        if x.shape.rank is not None:
            y.set_shape(_gathered_shape(x))
        received.set_shape([None])
        received_splits_holder.append(received)
        return [y, received]

    if not _differentiable(tensor) or (tf.executing_eagerly() and not _tape_active()):
        output, received = forward(tensor)
    else:
        @tf.custom_gradient
        def op(x):
            y, received = forward(x)

            def grad(dy):
                back, _ = alltoall(dy, splits=received, process_set=process_set)
                return back

            return y, grad

        output = op(tensor)
        received = received_splits_holder[-1]
    return (output, received) if has_splits else output
