"""The TensorFlow side of kolo.common.local_gradients: reducing a step's gradients except those
of sources registered as local, for DistributedGradientTape and the Keras DistributedOptimizer."""

from __future__ import annotations

import tensorflow as tf

from kolo.common.local_gradients import reduce_all_but_local
from kolo.tensorflow.bridge import variable_key
from kolo.tensorflow.op_helpers import _set_size_as


def _divide(grad, n):
    # n: the set's size, a number, or in an elastic job's graph an int32 tensor read when it runs.
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values / tf.cast(n, grad.values.dtype), grad.indices,
                                grad.dense_shape)
    return grad / tf.cast(n, grad.dtype)


def reduce_shared(grads, sources, local_keys: set, reducer, process_set,
                  scale_local_gradients: bool) -> list:
    """`grads` (of `sources`) reduced by `reducer`, except the local ones, which stay this
    rank's (divided by the set's size with `scale_local_gradients`)."""
    sources = list(sources)
    return reduce_all_but_local(list(grads), [variable_key(s) for s in sources], local_keys,
                                reducer, sources, _divide,
                                lambda: _set_size_as(process_set, tf.int32),
                                scale_local_gradients)
