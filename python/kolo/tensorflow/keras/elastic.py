"""Elastic Keras training (``horovod.tensorflow.keras.elastic``): ``KerasState`` and the
callbacks that keep it current while ``model.fit`` runs inside ``hvd.elastic.run``."""

from __future__ import annotations

import tensorflow as tf

from kolo.tensorflow.elastic import TensorFlowKerasState, run  # noqa: F401

__all__ = ["CommitStateCallback", "KerasState", "UpdateBatchStateCallback",
           "UpdateEpochStateCallback", "run"]


class KerasState(TensorFlowKerasState):
    """A Keras model and its optimizer (or the model's compiled one), plus picklable
    attributes given as keyword arguments."""

    def __init__(self, model, optimizer=None, **kwargs):
        super().__init__(model, optimizer=optimizer, backend=None, **kwargs)


class CommitStateCallback(tf.keras.callbacks.Callback):
    """Commits `state` every `batches_per_commit` batches and at the end of every epoch."""

    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_batch_end(self, batch, logs=None):
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.state.commit()
            self.batches_remaining = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.state.commit()


class UpdateBatchStateCallback(tf.keras.callbacks.Callback):
    """Keeps ``state.batch`` at the batch just finished (0 after each epoch); with a known
    number of steps, the first epoch after a reset is shortened by the batches already done."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.steps_per_epoch = None

    def on_train_begin(self, logs=None):
        self.steps_per_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.params.get("steps"):
            if self.steps_per_epoch is None:
                self.steps_per_epoch = self.params.get("steps")
            self.params["steps"] = self.steps_per_epoch - self.state.batch

    def on_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(tf.keras.callbacks.Callback):
    """Keeps ``state.epoch`` at the number of epochs finished."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.initial_epoch = self.state.epoch

    def on_train_begin(self, logs=None):
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        self.state.epoch = self.initial_epoch + epoch + 1
