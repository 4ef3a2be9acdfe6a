"""``horovod.tensorflow.util``'s helpers, which Horovod's own TensorFlow tests import."""

from __future__ import annotations

import tensorflow as tf


def _executing_eagerly() -> bool:
    """Whether TensorFlow runs eagerly here (False while a tf.function is traced)."""
    return tf.executing_eagerly()


def _make_subgraph(f):
    return tf.function(f)


def _cache(f):
    """Memoises f by its arguments and the execution mode."""
    cache = {}

    def wrapper(*args):
        key = (args, _executing_eagerly())
        if key not in cache:
            cache[key] = f(*args)
        return cache[key]

    return wrapper


def vars_to_refs(variables):
    """Hashable references of a (nested list of) variable(s)."""
    if isinstance(variables, list):
        return tuple(vars_to_refs(v) for v in variables)
    return variables.ref()


def refs_to_vars(refs):
    """The variables behind vars_to_refs' result."""
    if isinstance(refs, tuple):
        return [refs_to_vars(r) for r in refs]
    return refs.deref()
