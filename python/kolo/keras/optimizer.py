"""``DistributedOptimizer`` for Keras 3 on any backend: a subclass of the user's optimizer class
whose ``apply`` reduces the gradients over all ranks first. Keras 3 funnels every update through
``apply`` (``model.fit``'s step on every backend, ``apply_gradients``, and ``stateless_apply``,
which the JAX trainer calls)."""

from __future__ import annotations

import kolo
from kolo.common.keras_optimizer import distributed_copy
from kolo.keras import backend_arrays


class _DistributedKerasOptimizer:
    """Methods grafted onto a subclass of the user's optimizer class."""

    _kolo_distributed = True

    def _kolo_setup(self, op, prescale_factor, postscale_factor):
        self._kolo_op = op
        self._kolo_scales = (prescale_factor, postscale_factor)

    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        present = [i for i, g in enumerate(grads) if g is not None]
        reduced = backend_arrays.grouped_allreduce(
            [grads[i] for i in present], f"keras.DistributedOptimizer.{self.name}",
            self._kolo_op, *self._kolo_scales)
        for i, g in zip(present, reduced):
            grads[i] = g
        return super(self.__class__, self).apply(grads, trainable_variables)


def wrap(optimizer, name, op=kolo.Average, gradient_predivide_factor=1.0):
    """A new optimizer of a subclass of `optimizer`'s class, with the same configuration."""
    distributed = distributed_copy(optimizer, _DistributedKerasOptimizer, name)
    prescale, postscale = 1.0, 1.0
    if gradient_predivide_factor != 1.0:  # Horovod's split of the average around the sum
        prescale, postscale = 1.0 / gradient_predivide_factor, gradient_predivide_factor
    distributed._kolo_setup(op, prescale, postscale)
    return distributed
