"""The collectives on TensorFlow tensors, as ``horovod.tensorflow.mpi_ops``: same names,
signatures and defaults (``_allreduce`` sums, as Horovod's raw op does; the public ``allreduce``
in ``kolo.tensorflow`` averages), each differentiable with Horovod's gradient:

- allreduce: the same allreduce (op and scale factors) of the output gradient;
- allgather: the rank-averaged output gradient, this rank's rows of it;
- broadcast: the rank-averaged output gradient on the root, zeros elsewhere;
- alltoall: the output gradient sent back with the received splits;
- reducescatter: the allgathered output gradient, times the set's size for Sum and the scales.

Each runs eagerly or as a graph node through ``bridge.collective``.
"""

from __future__ import annotations


import numpy as np
import tensorflow as tf

import kolo
from kolo import _core
from kolo._handles import synchronize
from kolo.common.basics import (  # noqa: F401  (horovod.tensorflow.mpi_ops has them all)
    Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank, cross_size, cuda_built,
    ddl_built, gloo_built, gloo_enabled, handle_average_backwards_compatibility, init,
    is_homogeneous, is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size, start_timeline,
    stop_timeline, sycl_built)
from kolo.exceptions import HorovodInternalError  # noqa: F401
from kolo.horovod_common import num_rank_is_power_2 as check_num_rank_power_of_2  # noqa: F401
from kolo.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, check_process_set, global_process_set, process_set_by_id,
    remove_process_set)
from kolo.tensorflow.bridge import collective, same_shape, set_static_shape
from kolo.tensorflow.rank_ops import (  # noqa: F401  (horovod.tensorflow.mpi_ops has them)
    barrier, join, local_rank_op, local_size_op, process_set_included_op, rank_op, size_op)

try:  # internal, but the cheap way to know no gradient tape is watching (a custom gradient
    # costs about 100 us per eager call)
    from tensorflow.python.eager.record import could_possibly_record as _tape_active
except ImportError:  # pragma: no cover - a TensorFlow that moved it: always record
    def _tape_active() -> bool:
        return True

_FLOAT_KINDS = (tf.float16, tf.float32, tf.float64)


def _differentiable(tensor) -> bool:
    return tensor.dtype in _FLOAT_KINDS


def _set_size(process_set) -> int:
    return size() if check_process_set(process_set) == 0 else process_set.size()


def _rank_in(process_set) -> int:
    return rank() if check_process_set(process_set) == 0 else process_set.rank()


def _with_gradient(forward, gradient, tensors: list) -> list:
    """forward(*tensors) -> list of outputs; gradient(outputs, *dys) -> input gradients. Only
    floating-point inputs record a gradient (integer collectives are not differentiable)."""
    if not all(_differentiable(t) for t in tensors) or (
            tf.executing_eagerly() and not _tape_active()):
        # Graphs always get the gradient: tf.gradients needs no tape (and tracing pays once).
        return forward(*tensors)

    @tf.custom_gradient
    def op(*xs):
        outputs = forward(*xs)

        def grad(*dys):
            return gradient(outputs, *dys)

        return outputs, grad

    return list(op(*tensors))


def as_tensor(value):
    """`value` as a tf.Tensor (a tensor is returned as is: converting it costs microseconds)."""
    return value if isinstance(value, tf.Tensor) else tf.convert_to_tensor(value)


def _as_tensors(tensors) -> list:
    return [as_tensor(t) for t in tensors]


# ---- allreduce ------------------------------------------------------------------------------

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


def _np_grouped(kind, base_name, arrays, set_id, submit_one):
    base = kolo._name(kind, base_name, set_id)
    group = kolo._new_group(base, len(arrays))
    handles = kolo.submit_members(group, arrays, lambda a, i, g: submit_one(a, f"{base}.{i}", g))
    return synchronize(kolo._group_handle(handles))


def _group_inputs(tensors, process_set) -> tuple:
    """(the set's id, the tensors as a non-empty list of tensors)."""
    tensors = _as_tensors(tensors)
    if not tensors:
        raise ValueError("a grouped operation needs at least one tensor")
    return check_process_set(process_set), tensors


def _grouped_forward(kind, core_op, name, set_id, shape_of, fresh_output=False, **options):
    """forward(*xs) of a grouped collective: one call (or graph node) submitting every member
    of one group; `shape_of(x)` is what is known of a member's result shape (or None)."""
    member_kind = kind.split("_", 1)[1]  # "grouped_allreduce" -> "allreduce"

    def run(n, *arrays):
        moved = [_as_moved_bytes(a) if core_op == _core.OP_ALLGATHER else (a, None)
                 for a in arrays]
        results = _np_grouped(kind, n, [a for a, _ in moved], set_id, lambda a, nm, g:
                              kolo._submit(core_op, member_kind, a,
                                           np.empty_like(a) if fresh_output else None, nm,
                                           process_set=set_id, group=g, **options))
        return [_restored(r, dtype) for r, (_, dtype) in zip(results, moved)]

    def forward(*xs):
        ys = collective(kind, name, set_id, run, xs, [x.dtype for x in xs])
        for x, y in zip(xs, ys):
            set_static_shape(y, shape_of(x))
        return ys

    return forward


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


# ---- allgather ------------------------------------------------------------------------------

# Unsigned types the core has no arithmetic for travel as the signed type of the same width
# through the ops that only move bytes (allgather, broadcast, alltoall): the bits are unchanged.
_SAME_BITS = {np.dtype(np.uint16): np.int16, np.dtype(np.uint32): np.int32,
              np.dtype(np.uint64): np.int64}


def _as_moved_bytes(array):
    signed = _SAME_BITS.get(array.dtype)
    return (array, None) if signed is None else (array.view(signed), array.dtype)


def _restored(array, dtype):
    return array if dtype is None else array.view(dtype)


def _np_allgather(name, array, set_id):
    array, dtype = _as_moved_bytes(array)
    return _restored(synchronize(kolo._submit(_core.OP_ALLGATHER, "allgather", array, None, name,
                                              process_set=set_id)), dtype)


def _gathered_shape(x):
    return tf.TensorShape([None]).concatenate(x.shape[1:]) if x.shape.rank else None


def _my_rows(reduced_grads: list, inputs: list, process_set) -> list:
    """This rank's rows of each gathered gradient (the first dimensions may differ by rank)."""
    dims = tf.stack([tf.shape(x, out_type=tf.int64)[0] for x in inputs])
    all_dims = tf.reshape(allgather(tf.reshape(dims, [1, -1]), process_set=process_set),
                          [_set_size(process_set), len(inputs)])
    offsets = tf.reduce_sum(all_dims[:_rank_in(process_set)], axis=0)
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


# ---- broadcast ------------------------------------------------------------------------------

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


# ---- reducescatter --------------------------------------------------------------------------

def _np_reducescatter(name, array, op, prescale, postscale, set_id, group=(0, 0)):
    return synchronize(kolo._submit(_core.OP_REDUCESCATTER, "reducescatter", array, None, name,
                                    reduce_op=op, prescale=prescale, postscale=postscale,
                                    process_set=set_id, group=group))


def _reducescatter_grad_scale(op, prescale, postscale, process_set) -> float:
    scale = prescale * postscale
    return scale * _set_size(process_set) if op == Sum else scale


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
        scale = _reducescatter_grad_scale(op, prescale_factor, postscale_factor, process_set)
        return allgather(dy * scale if scale != 1.0 else dy, process_set=process_set)

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
        scale = _reducescatter_grad_scale(op, prescale_factor, postscale_factor, process_set)
        return grouped_allgather([d * scale if scale != 1.0 else d for d in dys],
                                 process_set=process_set)

    return _with_gradient(forward, gradient, tensors)


# ---- many gradients in one node ---------------------------------------------------------------

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
