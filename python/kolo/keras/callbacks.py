"""Horovod's Keras callbacks for Keras 3 on the JAX and PyTorch backends (``horovod.keras``
there); the learning-rate ones share their logic with TensorFlow's (kolo.common.keras_lr_schedule).
On JAX, ``model.fit`` keeps the training state outside the variables during an epoch: a callback
that reads or writes variables first writes that state back (``sync_state``), and the next step
then reads the variables again."""

from __future__ import annotations

import keras
import numpy as np

import kolo
from kolo.common import keras_lr_schedule as lr_schedule


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
        lr_schedule.sync_state(self.model)
        broadcast_variables(self.model.variables, self.root_rank, "keras.broadcast.model")
        broadcast_variables(self.model.optimizer.variables, self.root_rank,
                            "keras.broadcast.optimizer")
        self.broadcast_done = True


class MetricAverageCallback(keras.callbacks.Callback):
    """Averages the epoch's metrics (the logs) over all ranks at the end of every epoch; put it
    before callbacks that read them (checkpoints, early stopping, TensorBoard)."""

    def __init__(self, device=""):
        super().__init__()
        self.device = device

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        names = sorted(k for k, v in logs.items() if np.ndim(v) == 0)
        if names:
            values = np.array([float(logs[k]) for k in names], dtype=np.float64)
            averaged = kolo.allreduce(values, name=f"keras.MetricAverageCallback.{epoch}")
            logs.update(zip(names, (float(v) for v in averaged)))


class LearningRateScheduleCallback(lr_schedule.LearningRateScheduleLogic,
                                   keras.callbacks.Callback):
    """Sets the learning rate to ``initial_lr * multiplier(epoch)`` from `start_epoch` to
    `end_epoch` (per epoch with ``staircase``, else per batch with fractional epochs)."""


class LearningRateWarmupCallback(lr_schedule.LearningRateWarmupLogic, keras.callbacks.Callback):
    """Raises the learning rate gradually from ``initial_lr / size`` to ``initial_lr`` over
    `warmup_epochs` (Goyal et al., "Accurate, Large Minibatch SGD")."""


__all__ = ["BroadcastGlobalVariablesCallback", "MetricAverageCallback",
           "LearningRateScheduleCallback", "LearningRateWarmupCallback"]
