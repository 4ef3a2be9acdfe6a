"""``DistributedOptimizer`` for Keras optimizers (Keras 3, and tf-keras with
TF_USE_LEGACY_KERAS=1), as ``horovod.tensorflow.keras.DistributedOptimizer``: the user's
optimizer class, subclassed, so that gradients are reduced over the process set before they are
applied. Keras 3 funnels every update (``model.fit``, ``apply_gradients``, ``apply``) through
``apply``; tf-keras through ``apply_gradients``: the one of the two that exists is wrapped.

With ``backward_passes_per_step=k`` gradients are summed locally over k calls (averaged with
``average_aggregated_gradients=True``, as Horovod's), reduced and applied on the k-th; the other
calls apply nothing. This runs eagerly and inside ``tf.function`` (``model.fit``): the decision
is a ``tf.cond`` on a step counter variable.
"""

from __future__ import annotations

import tensorflow as tf

from kolo.common.keras_optimizer import distributed_copy
from kolo.tensorflow.bridge import variable_key


class _DistributedKerasOptimizer:
    """Methods grafted onto a subclass of the user's optimizer class."""

    _kolo_distributed = True

    def _kolo_setup(self, reducer, process_set, scale_local_gradients, passes, average_passes):
        self._kolo_reducer = reducer
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self._kolo_passes = passes
        self._kolo_average_passes = average_passes
        self._kolo_local_vars = set()
        self._kolo_sums = None
        self._kolo_counter = None

    def register_local_var(self, var) -> None:
        """Keeps `var`'s gradient local: never reduced over the ranks."""
        self._kolo_local_vars.add(variable_key(var))

    def _kolo_reduce(self, grads, variables) -> list:
        grads, variables = list(grads), list(variables)
        shared = [i for i, v in enumerate(variables)
                  if variable_key(v) not in self._kolo_local_vars]
        reduced = self._kolo_reducer([grads[i] for i in shared],
                                     [variables[i] for i in shared])
        out = list(grads)
        for i, g in zip(shared, reduced):
            out[i] = g
        if self.scale_local_gradients and self._kolo_local_vars:
            from kolo.tensorflow.mpi_ops import _set_size
            size = float(_set_size(self.process_set))
            for i, v in enumerate(variables):
                if variable_key(v) in self._kolo_local_vars and out[i] is not None:
                    out[i] = out[i] / size
        return out

    def _kolo_update(self, grads, variables, apply_fn):
        """Reduces (after local aggregation, if any) and applies through `apply_fn`."""
        variables = list(variables)
        if self._kolo_passes == 1:
            return apply_fn(self._kolo_reduce(grads, variables), variables)
        grads = [tf.convert_to_tensor(g) if g is not None else None for g in grads]
        if self._kolo_sums is None:
            with tf.init_scope():
                self._kolo_sums = [tf.Variable(tf.zeros_like(v), trainable=False)
                                   for v in variables]
                self._kolo_counter = tf.Variable(0, dtype=tf.int64, trainable=False)
        for total, g in zip(self._kolo_sums, grads):
            if g is not None:
                total.assign_add(g)
        self._kolo_counter.assign_add(1)
        passes = self._kolo_passes

        def reduce_and_apply():
            sums = [tf.identity(s) for s in self._kolo_sums]
            if self._kolo_average_passes:
                sums = [s / passes for s in sums]
            apply_fn(self._kolo_reduce(sums, variables), variables)
            for s in self._kolo_sums:
                s.assign(tf.zeros_like(s))
            return tf.constant(True)

        return tf.cond(tf.equal(self._kolo_counter % passes, 0), reduce_and_apply,
                       lambda: tf.constant(False))

    # Keras 3: every update goes through apply().
    def apply(self, grads, trainable_variables=None):
        base = super(self.__class__, self)
        if trainable_variables is None:
            trainable_variables = self._trainable_variables
        return self._kolo_update(list(grads), trainable_variables,
                                 lambda g, v: base.apply(g, v))

    # tf-keras: updates go through apply_gradients().
    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        base = super(self.__class__, self)
        if hasattr(base, "apply") and _is_keras3(self):
            return base.apply_gradients(grads_and_vars, *args, **kwargs)  # reaches apply()
        grads_and_vars = list(grads_and_vars)
        grads = [g for g, _ in grads_and_vars]
        variables = [v for _, v in grads_and_vars]
        return self._kolo_update(grads, variables, lambda g, v: base.apply_gradients(
            list(zip(g, v)), *args, **kwargs))


def _is_keras3(optimizer) -> bool:
    # Keras 3's optimizers (BaseOptimizer) have stateless_apply; tf-keras's do not.
    return hasattr(optimizer, "stateless_apply")


def wrap(optimizer, name, reducer, process_set, scale_local_gradients, passes, average_passes):
    """A new optimizer of a subclass of `optimizer`'s class, with the same configuration."""
    drop = () if _is_keras3(optimizer) else ("apply",)
    distributed = distributed_copy(optimizer, _DistributedKerasOptimizer, name, drop)
    distributed._kolo_setup(reducer, process_set, scale_local_gradients, passes, average_passes)
    return distributed
