"""``DistributedGradientTape`` and ``PartialDistributedGradientTape``, as Horovod's: a
``tf.GradientTape`` whose ``gradient()`` returns the gradients reduced over the process set
(all of them in one batched allreduce), except those of sources registered as local, which
stay this rank's own (scaled by 1 / size unless ``scale_local_gradients=False``)."""

from __future__ import annotations

import tensorflow as tf

from kolo.common.grouping import check_reduction_arguments
from kolo.tensorflow.compression import Compression
from kolo.tensorflow.bridge import variable_key as _key
from kolo.tensorflow.gradients import GradientReducer
from kolo.tensorflow.local_gradients import reduce_shared
from kolo.tensorflow.mpi_ops import Average, global_process_set


def _is_variable(v) -> bool:
    # tf.Variable, or a Keras 3 variable (which wraps one).
    return isinstance(v, tf.Variable) or hasattr(v, "assign")


class _DistributedGradientTape(tf.GradientTape):
    """Methods grafted onto a subclass of the user's tape class (see DistributedGradientTape)."""

    def __init__(self, tape, reducer, persistent=False, watch_accessed_variables=True,
                 process_set=global_process_set, scale_local_gradients=True):
        super(self.__class__, self).__init__(persistent, watch_accessed_variables)
        # The recording made by the user's `with tf.GradientTape() as tape:` block.
        self._tape = tape
        self._kolo_reducer = reducer
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self._local_sources = set()

    def register_local_source(self, source) -> None:
        """Keeps the gradient of `source` local: never reduced over the ranks."""
        self._local_sources.add(_key(source))

    def gradient(self, target, sources, output_gradients=None, use_generic_names=False):
        flat_sources = tf.nest.flatten(sources)
        gradients = tf.nest.flatten(super(self.__class__, self).gradient(
            target, flat_sources, output_gradients))
        gradients = reduce_shared(gradients, flat_sources, self._local_sources,
                                  self._kolo_reducer, self.process_set,
                                  self.scale_local_gradients)
        return tf.nest.pack_sequence_as(sources, gradients)

    def get_local_and_global_gradients(self, target, sources, output_gradients=None,
                                       use_generic_names=False):
        """([(local source, gradient)], [(reduced source, gradient)])."""
        gradients = self.gradient(target, sources, output_gradients)
        local, shared = [], []
        for s, g in zip(sources, gradients):
            (local if _key(s) in self._local_sources else shared).append((s, g))
        return local, shared


def DistributedGradientTape(gradtape, device_dense="", device_sparse="",
                            compression=Compression.none, sparse_as_dense=False, op=Average,
                            gradient_predivide_factor=1.0, num_groups=0, groups=None,
                            process_set=global_process_set, scale_local_gradients=True):
    """Wraps a finished ``tf.GradientTape`` so that ``gradient()`` averages (``op``) the
    gradients over the process set. ``groups`` (an int, or lists of variables) fuses them into
    grouped allreduces; ``num_groups`` is its deprecated name; ``gradient_predivide_factor``
    splits the averaging before and after the sum."""
    groups = check_reduction_arguments(op, gradient_predivide_factor, num_groups, groups,
                                       _is_variable, "tf.Variable")
    reducer = GradientReducer(compression, sparse_as_dense, op, gradient_predivide_factor,
                              groups, process_set)
    cls = type(gradtape.__class__.__name__, (gradtape.__class__,),
               dict(_DistributedGradientTape.__dict__))
    return cls(gradtape._tape, reducer, gradtape._persistent,
               getattr(gradtape, "_watch_accessed_variables", True), process_set,
               scale_local_gradients)


def PartialDistributedGradientTape(gradtape, device_dense="", device_sparse="",
                                   compression=Compression.none, sparse_as_dense=False,
                                   op=Average, gradient_predivide_factor=1.0, num_groups=0,
                                   groups=None, process_set=global_process_set,
                                   local_layers=None, scale_local_gradients=True):
    """DistributedGradientTape whose `local_layers` (Keras layers) keep local gradients."""
    # tf.keras's Layer: Keras 3's, or tf-keras's with TF_USE_LEGACY_KERAS=1 (not `import keras`).
    layer_type = tf.keras.layers.Layer
    if local_layers is None:
        local_layers = []
    elif isinstance(local_layers, layer_type):
        local_layers = [local_layers]
    elif not all(isinstance(layer, layer_type) for layer in local_layers):
        raise ValueError("All local layers must be of tf.keras.layers.Layer type.")
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression,
                                   sparse_as_dense, op, gradient_predivide_factor, num_groups,
                                   groups, process_set, scale_local_gradients)
    for layer in local_layers:
        for variable in layer.trainable_weights:
            tape.register_local_source(variable)
    return tape
