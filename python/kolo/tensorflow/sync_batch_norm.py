"""``SyncBatchNormalization``, as Horovod's: batch statistics averaged over every rank during
training (Var[X] = E[X^2] - E[X]^2, one allreduce of both moments). It extends the
BatchNormalization of whichever Keras ``tf.keras`` is (Keras 3, or tf-keras with
TF_USE_LEGACY_KERAS=1), overriding its ``_moments`` in either's signature."""

from __future__ import annotations

import tensorflow as tf

from kolo.tensorflow.mpi_ops import Sum, _allreduce, size

_LEGACY_KERAS = "_keras" in tf.keras.__name__ or hasattr(tf.keras.layers.BatchNormalization,
                                                          "_calculate_mean_and_var")


class SyncBatchNormalization(tf.keras.layers.BatchNormalization):
    """Synchronous batch normalization: statistics are synchronized across all workers."""

    def __init__(self, fused=False, **kwargs):
        if fused in (True, None):
            raise ValueError("SyncBatchNormalization does not support fused=True.")
        if not kwargs.get("name", None):
            kwargs["name"] = "sync_batch_normalization"
        if _LEGACY_KERAS:
            kwargs["fused"] = fused  # Keras 3 has no fused kernel and no such argument
        super().__init__(**kwargs)

    def _moments(self, *args, **kwargs):
        worker_mean, worker_variance = super()._moments(*args, **kwargs)
        if size() <= 1:
            return worker_mean, worker_variance
        worker_mean_of_square = worker_variance + tf.math.square(worker_mean)
        group = _allreduce(tf.stack([worker_mean, worker_mean_of_square]), op=Sum) / size()
        group_mean, group_mean_of_square = tf.unstack(group)
        return group_mean, group_mean_of_square - tf.math.square(group_mean)
