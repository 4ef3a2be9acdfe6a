"""Horovod's Keras callbacks for Keras 3 on the JAX and PyTorch backends (``horovod.keras``
there); the learning-rate ones share their logic with TensorFlow's (kolo.common.keras_callbacks).
On JAX, ``model.fit`` keeps the training state outside the variables during an epoch: a callback
that reads or writes variables first writes that state back (``sync_state``), and the next step
then reads the variables again."""

from __future__ import annotations

import keras
import numpy as np

import kolo
from kolo.common import keras_callbacks as shared


def broadcast_variables(variables, root_rank: int, name: str) -> None:
    """Assigns root_rank's values to `variables` (Keras variables) on every rank."""
    variables = list(variables)
    if not variables:
        return
    # Writable host copies (a JAX array's NumPy view is read-only), broadcast in place in the
    # same order on every rank.
    for i, variable in enumerate(variables):
        value = np.array(keras.ops.convert_to_numpy(variable.value), order="C")
        kolo.broadcast_(value, root_rank, name=f"{name}.{i}")
        variable.assign(value)


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Broadcasts the model's and the optimizer's variables from `root_rank` at the end of the
    first batch (after the optimizer built its slots), so every rank trains the same model."""

    def __init__(self, root_rank, device=""):
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.broadcast_done = False

    def on_batch_end(self, batch, logs=None):
        if self.broadcast_done:
            return
        shared.sync_state(self.model)
        broadcast_variables(self.model.variables, self.root_rank, "keras.broadcast.model")
        broadcast_variables(self.model.optimizer.variables, self.root_rank,
                            "keras.broadcast.optimizer")
        self.broadcast_done = True


class MetricAverageCallback(shared.MetricAverageLogic, keras.callbacks.Callback):
    """Averages the epoch's metrics (the logs) over all ranks at the end of every epoch; put it
    before callbacks that read them (checkpoints, early stopping, TensorBoard)."""

    def _average(self, values, name):
        return kolo.allreduce(values, name=f"keras.{name}")


class LearningRateScheduleCallback(shared.LearningRateScheduleLogic,
                                   keras.callbacks.Callback):
    """Sets the learning rate to ``initial_lr * multiplier(epoch)`` from `start_epoch` to
    `end_epoch` (per epoch with ``staircase``, else per batch with fractional epochs)."""


class LearningRateWarmupCallback(shared.LearningRateWarmupLogic, keras.callbacks.Callback):
    """Raises the learning rate gradually from ``initial_lr / size`` to ``initial_lr`` over
    `warmup_epochs` (Goyal et al., "Accurate, Large Minibatch SGD")."""


__all__ = ["BroadcastGlobalVariablesCallback", "MetricAverageCallback",
           "LearningRateScheduleCallback", "LearningRateWarmupCallback"]
