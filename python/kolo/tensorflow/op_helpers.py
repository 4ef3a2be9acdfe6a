"""What every TensorFlow collective shares: Horovod's gradient attached only when a tape or a
graph can use it, tensor conversion, the process set's size and rank, and the grouped
submission (one call or graph node for a whole group) with its byte-moving dtype mapping."""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

import kolo
from kolo import _core
from kolo._handles import synchronize
from kolo.common.basics import rank, size
from kolo.process_sets import check_process_set
from kolo.tensorflow.bridge import collective, set_static_shape
from kolo.tensorflow.rank_ops import int_op, process_set_included_op, size_op

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


def _elastic_graph() -> bool:
    """Whether a graph is being traced in an elastic job (kolorun sets HOROVOD_ELASTIC=1 for its
    workers, as horovodrun does): the graph (a tf.function, Keras's train_function) outlives
    resets, so what depends on the job's size is read when it runs, as Horovod does there."""
    return os.environ.get("HOROVOD_ELASTIC") == "1" and not tf.executing_eagerly()


def _set_size_as(process_set, dtype):
    """The set's size as a `dtype` tensor; read when the graph runs in an elastic job."""
    if _elastic_graph():
        return tf.cast(size_op(check_process_set(process_set)), dtype)
    return tf.cast(_set_size(process_set), dtype)


def _rank_in_as(process_set):
    """This rank's rank in the set; in an elastic job's graph an int32 tensor read when it runs."""
    if _elastic_graph():
        return int_op(lambda: _rank_in(process_set))
    return _rank_in(process_set)


def _reduces_now(process_set):
    """Whether this rank reduces in the set (a member, with a peer): a bool, or in an elastic
    job's graph a bool tensor read when it runs. A graph traced while the job had one rank must
    still reduce once the job grew (Horovod's ``_allreduce_cond``)."""
    if not _elastic_graph():
        return bool(process_set.included()) and _set_size(process_set) > 1
    set_id = check_process_set(process_set)
    with tf.device("cpu"):
        return tf.logical_and(tf.equal(process_set_included_op(set_id), 1),
                              tf.greater(size_op(set_id), 1))


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


# Unsigned types the core has no arithmetic for travel as the signed type of the same width
# through the ops that only move bytes (allgather, broadcast, alltoall): the bits are unchanged.
_SAME_BITS = {np.dtype(np.uint16): np.int16, np.dtype(np.uint32): np.int32,
              np.dtype(np.uint64): np.int64}


def _as_moved_bytes(array):
    signed = _SAME_BITS.get(array.dtype)
    return (array, None) if signed is None else (array.view(signed), array.dtype)


def _restored(array, dtype):
    return array if dtype is None else array.view(dtype)
