"""Local gradient aggregation for the Keras DistributedOptimizer (``backward_passes_per_step``),
as Horovod's ``LocalGradientAggregationHelperEager`` behaves (its tests read ``counter``): each
pass adds its gradients into per-gradient sum variables and counts; the pass that brings the
count to ``backward_passes_per_step`` reduces the sums over the ranks, returns them and clears
sums and count; the others return the local sums so far. The optimizer then applies only when
the count is back at 0 and otherwise just counts the iteration. Variables and ``tf.cond`` make
it run the same eagerly and inside ``tf.function`` (``model.fit``)."""

from __future__ import annotations

import tensorflow as tf

from kolo.common.local_gradients import aggregated_divisor, check_backward_passes


class LocalGradientAggregation:
    def __init__(self, backward_passes_per_step: int, average_aggregated_gradients: bool,
                 sparse_as_dense: bool, reduce):
        self.backward_passes_per_step = check_backward_passes(backward_passes_per_step)
        self.average_aggregated_gradients = average_aggregated_gradients
        self.sparse_as_dense = sparse_as_dense
        self._reduce = reduce  # (grads, variables) -> reduced grads, local ones kept
        self._sums: dict[int, tf.Variable] = {}
        with tf.init_scope():
            self.counter = tf.Variable(0, trainable=False, name="kolo_local_passes")

    def _sum_for(self, index: int, grad, variable) -> tf.Variable:
        if index not in self._sums:
            # Lifted out of any tf.function: made once, at the first (traced) pass.
            with tf.init_scope():
                shape = grad.shape if grad.shape.is_fully_defined() else variable.shape
                self._sums[index] = tf.Variable(tf.zeros(shape, grad.dtype), trainable=False,
                                                name=f"kolo_local_sum_{index}")
        return self._sums[index]

    def compute_gradients(self, grads, variables) -> list:
        """This pass's gradients added to the local sums: the sums reduced over the ranks on the
        k-th pass, else the local sums (callers apply only when `counter` is 0)."""
        grads, variables = list(grads), list(variables)
        totals = []
        for i, (g, v) in enumerate(zip(grads, variables)):
            if isinstance(g, tf.IndexedSlices):
                if not self.sparse_as_dense:
                    raise ValueError(f"kolo: the gradient of {getattr(v, 'name', v)} is a "
                                     "tf.IndexedSlices; backward_passes_per_step > 1 sums "
                                     "dense gradients only: pass sparse_as_dense=True")
                g = tf.convert_to_tensor(g)
            if g is None:
                totals.append(None)
                continue
            total = self._sum_for(i, g, v)
            total.assign_add(g)
            totals.append(total.read_value())
        self.counter.assign_add(1)
        divisor = aggregated_divisor(self.backward_passes_per_step,
                                     self.average_aggregated_gradients)

        def reduce_and_clear():
            reduced = self._reduce(totals, variables)
            if divisor != 1:
                reduced = [None if r is None else r / tf.cast(divisor, r.dtype) for r in reduced]
            # The reduced values are read before the sums are cleared (automatic control
            # dependencies keep this order inside tf.function).
            reduced = [None if r is None else tf.identity(r) for r in reduced]
            self.counter.assign(0)
            for total in self._sums.values():
                total.assign(tf.zeros_like(total))
            return reduced

        return list(tf.cond(tf.equal(self.counter, self.backward_passes_per_step),
                            reduce_and_clear, lambda: list(totals)))

    def apply_when_due(self, apply, count_iteration):
        """Runs `apply()` on the pass that reduced (counter back at 0), else
        `count_iteration()` (the optimizer's step counter still advances every pass)."""
        def applied():
            apply()
            return tf.constant(True)

        def skipped():
            count_iteration()
            return tf.constant(False)

        return tf.cond(tf.equal(self.counter, 0), applied, skipped)
