"""Horovod's Keras callbacks (``horovod.tensorflow.keras.callbacks``) for Keras 3 and tf-keras.

Learning rates and momenta are read and set through ``_get``/``_set``, which handle both a Keras
variable (assigned in place, so a compiled ``model.fit`` step sees the change) and a plain
Python number. A momentum that is a plain number is baked into the compiled step, so momentum
correction applies only where it is a variable (tf-keras's legacy optimizers)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import kolo.tensorflow as hvd

Callback = tf.keras.callbacks.Callback


def _optimizer_variables(optimizer) -> list:
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def _lr_name(optimizer) -> str:
    return "learning_rate" if hasattr(optimizer, "learning_rate") else "lr"


def _get(optimizer, attribute: str) -> float:
    value = getattr(optimizer, attribute)
    return float(np.asarray(value.numpy() if hasattr(value, "numpy") else value))


def _set(optimizer, attribute: str, value: float) -> None:
    current = getattr(optimizer, attribute)
    if hasattr(current, "assign"):
        current.assign(value)
    else:
        setattr(optimizer, attribute, value)


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


class MetricAverageCallback(Callback):
    """Averages the epoch's metrics (the logs) over all ranks at the end of every epoch; put it
    before callbacks that read them (checkpoints, early stopping, TensorBoard)."""

    def __init__(self, device=""):
        super().__init__()
        self.device = device

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        names = sorted(k for k, v in logs.items() if np.ndim(v) == 0)
        if not names:
            return
        values = tf.constant([float(logs[k]) for k in names], dtype=tf.float64)
        averaged = hvd.allreduce(values, name=f"MetricAverageCallback.{epoch}").numpy()
        for name, value in zip(names, averaged):
            logs[name] = float(value)


class LearningRateScheduleCallback(Callback):
    """Sets the learning rate to ``initial_lr * multiplier(epoch)`` from `start_epoch` to
    `end_epoch` (per epoch with ``staircase``, else per batch with fractional epochs)."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        if initial_lr is None:
            raise ValueError("Parameter `initial_lr` is required")
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.restore_momentum = None
        self.current_epoch = None
        if callable(multiplier):
            self.multiplier = multiplier
        else:
            self.multiplier = lambda epoch: multiplier ** (epoch - start_epoch)

    def _autodetect_steps_per_epoch(self):
        if self.params.get("steps"):
            return self.params["steps"]
        if self.params.get("samples") and self.params.get("batch_size"):
            return self.params["samples"] // self.params["batch_size"]
        raise ValueError("Could not autodetect the number of steps per epoch. Please specify the "
                         f"steps_per_epoch parameter to the {type(self).__name__}() or upgrade "
                         "to the latest version of Keras.")

    def _adjust_learning_rate(self, epoch):
        optimizer = self.model.optimizer
        lr = _lr_name(optimizer)
        old_lr = _get(optimizer, lr)
        new_lr = self.initial_lr * self.multiplier(epoch)
        _set(optimizer, lr, new_lr)
        momentum = getattr(optimizer, "momentum", None)
        if self.momentum_correction and hasattr(momentum, "assign") and old_lr:
            self.restore_momentum = _get(optimizer, "momentum")
            _set(optimizer, "momentum", self.restore_momentum * new_lr / old_lr)

    def _restore_momentum_if_needed(self):
        if self.restore_momentum:
            _set(self.model.optimizer, "momentum", self.restore_momentum)
            self.restore_momentum = None

    def on_train_begin(self, logs=None):
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self._autodetect_steps_per_epoch()

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_batch_begin(self, batch, logs=None):
        if (self.current_epoch < self.start_epoch
                or (self.end_epoch is not None and self.current_epoch >= self.end_epoch)):
            return
        if self.staircase and batch == 0:
            self._adjust_learning_rate(self.current_epoch)
        elif not self.staircase:
            self._adjust_learning_rate(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_batch_end(self, batch, logs=None):
        self._restore_momentum_if_needed()

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _get(self.model.optimizer, _lr_name(self.model.optimizer))


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Raises the learning rate gradually from ``initial_lr / size`` to ``initial_lr`` over
    `warmup_epochs` (Goyal et al., "Accurate, Large Minibatch SGD")."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            epoch += 1.0 / self.steps_per_epoch
            return 1.0 / hvd.size() * (epoch * (hvd.size() - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs,
                         staircase=False, momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0 and hvd.rank() == 0:
            print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to "
                  f"{_get(self.model.optimizer, _lr_name(self.model.optimizer)):g}.")


class BestModelCheckpoint(tf.keras.callbacks.ModelCheckpoint):
    """ModelCheckpoint that keeps only the best model (by `monitor`); rank 0 should save."""

    def __init__(self, filepath, monitor="val_loss", verbose=0, mode="auto", save_freq="epoch"):
        super().__init__(filepath=filepath, monitor=monitor, verbose=verbose,
                         save_best_only=True, save_weights_only=False, mode=mode,
                         save_freq=save_freq)
