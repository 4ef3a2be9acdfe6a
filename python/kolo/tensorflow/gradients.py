"""Reducing a step's gradients, for ``DistributedGradientTape`` and the optimizers (TensorFlow
and Keras): Horovod's rules (compression, sparse_as_dense, op, gradient_predivide_factor,
groups, process_set) on top of kolo's one-node batched allreduce."""

from __future__ import annotations

import tensorflow as tf

from kolo.common.grouping import scale_factors, split_list
from kolo.tensorflow.compression import Compression
from kolo.tensorflow.bridge import variable_key as _key
from kolo.tensorflow.mpi_ops import _allreduce_batch, global_process_set
from kolo.tensorflow.op_helpers import _reduces_now
from kolo.tensorflow.reductions import _sparse_allreduce


def _partition(count: int, variables, groups) -> list[list[int]]:
    """Index lists covering range(count): singletons without groups; `groups` parts in order
    for an int; for lists of variables, each list's members together and the rest alone."""
    if groups is None or count == 0:
        return [[i] for i in range(count)]
    if isinstance(groups, int):
        return [part for part in split_list(list(range(count)), groups) if part]
    position = {_key(v): i for i, v in enumerate(variables)} if variables is not None else {}
    parts, taken = [], set()
    for group in groups:
        members = sorted(position[_key(v)] for v in group if _key(v) in position)
        if members:
            parts.append(members)
            taken.update(members)
    parts.extend([i] for i in range(count) if i not in taken)
    return parts


class GradientReducer:
    """Horovod's gradient reduction with one configuration (``allreduce_grads`` in Horovod)."""

    def __init__(self, compression=Compression.none, sparse_as_dense=False, op=None,
                 gradient_predivide_factor=1.0, groups=None, process_set=global_process_set):
        from kolo.tensorflow.mpi_ops import Average
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = Average if op is None else op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.groups = groups
        self.process_set = process_set

    def __call__(self, grads, variables=None) -> list:
        """The reduced gradients, in order; None stays None (as Horovod: such a gradient must be
        None on every rank)."""
        grads = list(grads)
        if self.sparse_as_dense:
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                     for g in grads]
        reduces = _reduces_now(self.process_set)
        if isinstance(reduces, bool):
            return self._reduce(grads, variables) if reduces else grads
        # An elastic job's graph: reduce or not is decided each time it runs.
        present = [i for i, g in enumerate(grads) if g is not None]
        if not present:
            return grads
        def reduced():
            everything = self._reduce(grads, variables)  # once: one batch for all gradients
            return [everything[i] for i in present]

        chosen = tf.cond(reduces, reduced, lambda: [grads[i] for i in present])
        out = list(grads)
        for i, g in zip(present, chosen):
            out[i] = g
        return out

    def _reduce(self, grads: list, variables) -> list:
        out = list(grads)
        dense = [i for i, g in enumerate(grads)
                 if g is not None and not isinstance(g, tf.IndexedSlices)]
        for i, g in enumerate(grads):
            if isinstance(g, tf.IndexedSlices):
                out[i] = _sparse_allreduce(g, self.op, 1.0, 1.0, self.process_set)
        if not dense:
            return out
        dense_vars = None if variables is None else [list(variables)[i] for i in dense]
        partition = _partition(len(dense), dense_vars, self.groups)
        compressed, ctxs = zip(*[self.compression.compress(grads[i]) for i in dense])
        prescale, postscale = scale_factors(self.op, self.gradient_predivide_factor)
        reduced = _allreduce_batch(list(compressed), partition, self.op, prescale, postscale,
                                   self.process_set)
        for i, r, c in zip(dense, reduced, ctxs):
            out[i] = self.compression.decompress(r, c)
        return out
