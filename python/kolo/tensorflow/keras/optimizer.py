"""``DistributedOptimizer`` for Keras optimizers (Keras 3, and tf-keras with
TF_USE_LEGACY_KERAS=1), as ``horovod.tensorflow.keras.DistributedOptimizer``: the user's
optimizer class, subclassed, so that gradients are reduced over the process set before they are
applied.

Where Horovod reduces, kolo does: in ``compute_gradients`` / ``_compute_gradients`` (which
tf-keras's ``minimize``, and so ``model.fit``, calls) and ``get_gradients``. Gradients that did
not come from there (a custom loop's own tape, or Keras 3's ``model.fit``, which calls ``apply``
with its tape's gradients) are reduced when they reach ``apply_gradients`` (tf-keras) or
``apply`` (Keras 3); the ones ``compute_gradients`` returned are recognised (the same tensor
objects) and not reduced twice.

With ``backward_passes_per_step=k`` (``_agg_helper``, kolo.tensorflow.keras.local_aggregation)
gradients are summed locally over k passes (averaged with ``average_aggregated_gradients=True``)
and reduced on the k-th, which alone applies; the other passes only advance ``iterations``, as
Horovod's."""

from __future__ import annotations

import tensorflow as tf

from kolo.common.keras_optimizer import distributed_copy
from kolo.tensorflow.bridge import variable_key
from kolo.tensorflow.keras.local_aggregation import LocalGradientAggregation
from kolo.tensorflow.local_gradients import reduce_shared


class _LastReduced:
    """The gradients the last reduction returned (a plain holder: Keras would track a list
    attribute of the optimizer)."""

    grads: list | None = None


def _tape_gradients(loss, var_list, tape) -> list:
    """(gradient, variable) pairs of `loss` (a callable, or a tensor recorded on `tape`), for
    Keras 3, whose optimizers have no compute_gradients."""
    if callable(loss):
        with tape:
            if not callable(var_list):
                tape.watch([v for v in var_list if isinstance(v, tf.Variable)])
            loss = loss()
    elif tape is None:
        raise ValueError("kolo: a tensor loss needs the tape that recorded it (tape=)")
    if callable(var_list):
        var_list = var_list()
    var_list = list(var_list)
    return list(zip(tape.gradient(loss, var_list), var_list))


class _DistributedKerasOptimizer:
    """Methods grafted onto a subclass of the user's optimizer class."""

    _kolo_distributed = True
    # tf-keras: gradients are aggregated (reduced) before apply_gradients.
    _HAS_AGGREGATE_GRAD = True

    def _kolo_setup(self, reducer, process_set, scale_local_gradients, passes, average_passes):
        self._kolo_reducer = reducer
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self._kolo_local_vars = set()
        self._kolo_last = _LastReduced()
        self._agg_helper = None
        if passes != 1:
            self._agg_helper = LocalGradientAggregation(passes, average_passes,
                                                        reducer.sparse_as_dense, self._kolo_reduce)

    def register_local_var(self, var) -> None:
        """Keeps `var`'s gradient local: never reduced over the ranks."""
        self._kolo_local_vars.add(variable_key(var))

    def _kolo_reduce(self, grads, variables) -> list:
        return reduce_shared(grads, variables, self._kolo_local_vars, self._kolo_reducer,
                             self.process_set, self.scale_local_gradients)

    def _allreduce(self, grads, variables) -> list:
        """Horovod's name: the gradients reduced over the process set (local ones kept), or,
        with backward_passes_per_step > 1, aggregated (and reduced on the k-th pass)."""
        if self._agg_helper is not None:
            reduced = self._agg_helper.compute_gradients(grads, variables)
        else:
            reduced = self._kolo_reduce(grads, variables)
        self._kolo_last.grads = list(reduced)
        return list(reduced)

    def _kolo_reduced_already(self, grads) -> bool:
        last, self._kolo_last.grads = self._kolo_last.grads, None
        return last is not None and len(last) == len(grads) and all(
            g is r for g, r in zip(grads, last))

    def compute_gradients(self, loss, var_list, tape=None):
        return self._compute_gradients(loss, var_list, None, tape)

    def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
        """The optimizer's own gradients of `loss`, reduced over the process set."""
        base = super(self.__class__, self)
        tape = tf.GradientTape() if tape is None else tape
        if hasattr(base, "_compute_gradients"):  # tf-keras's legacy (OptimizerV2) optimizers
            pairs = base._compute_gradients(loss, var_list, grad_loss, tape=tape)
        elif hasattr(base, "compute_gradients"):  # tf-keras's optimizers
            pairs = base.compute_gradients(loss, var_list, tape=tape)
        else:  # Keras 3
            pairs = _tape_gradients(loss, var_list, tape)
        grads, variables = zip(*pairs) if pairs else ((), ())
        return list(zip(self._allreduce(grads, variables), variables))

    def get_gradients(self, loss, params):
        """tf-keras legacy optimizers (graph mode): the gradients, reduced."""
        grads = super(self.__class__, self).get_gradients(loss, params)
        return self._allreduce(grads, params)

    def _aggregate_gradients(self, grads_and_vars):
        """tf-keras's cross-replica aggregation, unchanged (kolo reduces before it)."""
        base = super(self.__class__, self)
        if hasattr(base, "_aggregate_gradients"):
            return base._aggregate_gradients(grads_and_vars)
        return base.aggregate_gradients(grads_and_vars)

    def _kolo_apply(self, grads, variables, apply_fn):
        """Reduces `grads` unless _allreduce returned them, then applies them through
        `apply_fn(grads)`, on a pass that reduced only (backward_passes_per_step)."""
        grads = list(grads)
        if not self._kolo_reduced_already(grads):
            grads = self._allreduce(grads, variables)
            self._kolo_last.grads = None
        if self._agg_helper is None:
            return apply_fn(grads)
        return self._agg_helper.apply_when_due(lambda: apply_fn(grads),
                                               lambda: self.iterations.assign_add(1))

    # Keras 3: every update goes through apply().
    def apply(self, grads, trainable_variables=None):
        base = super(self.__class__, self)
        if trainable_variables is None:
            trainable_variables = self._trainable_variables
        variables = list(trainable_variables)
        return self._kolo_apply(grads, variables, lambda g: base.apply(g, variables))

    # tf-keras: updates go through apply_gradients().
    def apply_gradients(self, grads_and_vars, *args, **kwargs):
        base = super(self.__class__, self)
        if hasattr(base, "apply") and _is_keras3(self):
            # tf-keras's arguments, which Horovod's scripts pass: name only scoped the update,
            # and Keras 3 has no cross-replica aggregation to skip.
            for keras2_only in _KERAS2_APPLY_ARGUMENTS:
                kwargs.pop(keras2_only, None)
            return base.apply_gradients(grads_and_vars, *args, **kwargs)  # reaches apply()
        pairs = list(grads_and_vars)
        variables = [v for _, v in pairs]
        return self._kolo_apply([g for g, _ in pairs], variables, lambda g: base.apply_gradients(
            list(zip(g, variables)), *args, **kwargs))


_KERAS2_APPLY_ARGUMENTS = ("name", "experimental_aggregate_gradients",
                           "skip_gradients_aggregation")


def _is_keras3(optimizer) -> bool:
    # Keras 3's optimizers (BaseOptimizer) have stateless_apply; tf-keras's do not.
    return hasattr(optimizer, "stateless_apply")


def wrap(optimizer, name, reducer, process_set, scale_local_gradients, passes, average_passes):
    """A new optimizer of a subclass of `optimizer`'s class, with the same configuration."""
    keras3 = _is_keras3(optimizer)
    # Keras 3 has no get_gradients/_aggregate_gradients to extend; tf-keras no apply().
    drop = ("get_gradients", "_aggregate_gradients") if keras3 else ("apply",)
    distributed = distributed_copy(optimizer, _DistributedKerasOptimizer, name, drop)
    distributed._kolo_setup(reducer, process_set, scale_local_gradients, passes, average_passes)
    return distributed
