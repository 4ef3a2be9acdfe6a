"""Horovod's Keras callbacks (``horovod.tensorflow.keras.callbacks``) for Keras 3 and tf-keras;
the metric and learning-rate ones share their logic with every Keras backend
(kolo.common.keras_callbacks)."""

from __future__ import annotations

import tensorflow as tf

import kolo.tensorflow as hvd
from kolo.common import keras_callbacks as shared

Callback = tf.keras.callbacks.Callback


def _optimizer_variables(optimizer) -> list:
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


class BroadcastGlobalVariablesCallback(Callback):
    """Broadcasts the model's and the optimizer's variables from `root_rank` at the end of the
    first batch (after the optimizer built its slots), so every rank trains the same model."""

    def __init__(self, root_rank, device="", local_variables=None):
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.broadcast_done = False
        self._local_vars = set()
        for variable in local_variables or []:
            self.register_local_var(variable)

    def register_local_var(self, var) -> None:
        """Leaves `var` out of the broadcast (a worker-local variable)."""
        from kolo.tensorflow.bridge import variable_key
        self._local_vars.add(variable_key(var))

    def on_batch_end(self, batch, logs=None):
        if self.broadcast_done:
            return
        from kolo.tensorflow.bridge import variable_key
        variables = [v for v in self.model.variables if variable_key(v) not in self._local_vars]
        hvd.broadcast_variables(variables, root_rank=self.root_rank)
        hvd.broadcast_variables(_optimizer_variables(self.model.optimizer),
                                root_rank=self.root_rank)
        self.broadcast_done = True


class MetricAverageCallback(shared.MetricAverageLogic, Callback):
    """Averages the epoch's metrics (the logs) over all ranks at the end of every epoch; put it
    before callbacks that read them (checkpoints, early stopping, TensorBoard)."""

    def _average(self, values, name):
        return hvd.allreduce(tf.constant(values), name=name).numpy()


class LearningRateScheduleCallback(shared.LearningRateScheduleLogic, Callback):
    """Sets the learning rate to ``initial_lr * multiplier(epoch)`` from `start_epoch` to
    `end_epoch` (per epoch with ``staircase``, else per batch with fractional epochs)."""


class LearningRateWarmupCallback(shared.LearningRateWarmupLogic, Callback):
    """Raises the learning rate gradually from ``initial_lr / size`` to ``initial_lr`` over
    `warmup_epochs` (Goyal et al., "Accurate, Large Minibatch SGD")."""


class BestModelCheckpoint(tf.keras.callbacks.ModelCheckpoint):
    """ModelCheckpoint that keeps only the best model (by `monitor`); rank 0 should save."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, mode="auto", save_freq="epoch"):
        super().__init__(filepath=filepath, monitor=monitor, verbose=verbose,
                         save_best_only=True, save_weights_only=False, mode=mode,
                         save_freq=save_freq)
