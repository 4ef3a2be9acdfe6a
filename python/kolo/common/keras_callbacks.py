"""The Keras callbacks' logic (Horovod's ``MetricAverageCallback``,
``LearningRateScheduleCallback`` and ``LearningRateWarmupCallback``), framework-free:
``kolo.tensorflow.keras.callbacks`` and ``kolo.keras.callbacks`` (Keras 3 on JAX or PyTorch) mix
it into their Keras ``Callback``.

Learning rates and momenta are read and set through ``get``/``set``, which handle both a Keras
variable (assigned in place, so a compiled ``model.fit`` step sees the change) and a plain
Python number. A momentum that is a plain number is baked into the compiled step, so momentum
correction applies only where it is a variable (tf-keras's legacy optimizers)."""

from __future__ import annotations

import numpy as np

import kolo


def lr_name(optimizer) -> str:
    return "learning_rate" if hasattr(optimizer, "learning_rate") else "lr"


def get(optimizer, attribute: str) -> float:
    value = getattr(optimizer, attribute)
    return float(np.asarray(value.numpy() if hasattr(value, "numpy") else value))


def set(optimizer, attribute: str, value: float) -> None:  # noqa: A001  (get's pair)
    current = getattr(optimizer, attribute)
    if hasattr(current, "assign"):
        current.assign(value)
    else:
        setattr(optimizer, attribute, value)


def sync_state(model) -> None:
    """Keras 3 on JAX keeps the training state outside the variables during an epoch: write it
    back first, and the next step reads the variables again (a no-op on other backends)."""
    if getattr(model, "jax_state_sync", None) is not None:
        model.jax_state_sync()


class MetricAverageLogic:
    """Averages the epoch's metrics (the logs) over all ranks at the end of every epoch; put it
    before callbacks that read them (checkpoints, early stopping, TensorBoard). The framework's
    class supplies ``_average(values, name)`` (float64 NumPy in and out)."""

    def __init__(self, device=""):
        super().__init__()
        self.device = device

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        names = sorted(k for k, v in logs.items() if np.ndim(v) == 0)
        if names:
            values = np.array([float(logs[k]) for k in names], dtype=np.float64)
            averaged = self._average(values, f"MetricAverageCallback.{epoch}")
            logs.update(zip(names, (float(v) for v in averaged)))


class LearningRateScheduleLogic:
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
        sync_state(self.model)
        optimizer = self.model.optimizer
        lr = lr_name(optimizer)
        old_lr = get(optimizer, lr)
        new_lr = self.initial_lr * self.multiplier(epoch)
        set(optimizer, lr, new_lr)
        momentum = getattr(optimizer, "momentum", None)
        if self.momentum_correction and hasattr(momentum, "assign") and old_lr:
            self.restore_momentum = get(optimizer, "momentum")
            set(optimizer, "momentum", self.restore_momentum * new_lr / old_lr)

    def _restore_momentum_if_needed(self):
        if self.restore_momentum:
            sync_state(self.model)
            set(self.model.optimizer, "momentum", self.restore_momentum)
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
            logs["lr"] = get(self.model.optimizer, lr_name(self.model.optimizer))


class LearningRateWarmupLogic(LearningRateScheduleLogic):
    """Raises the learning rate gradually from ``initial_lr / size`` to ``initial_lr`` over
    `warmup_epochs` (Goyal et al., "Accurate, Large Minibatch SGD")."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            epoch += 1.0 / self.steps_per_epoch
            return 1.0 / kolo.size() * (epoch * (kolo.size() - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs,
                         staircase=False, momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0 and kolo.rank() == 0:
            print(f"\nEpoch {epoch + 1}: finished gradual learning rate warmup to "
                  f"{get(self.model.optimizer, lr_name(self.model.optimizer)):g}.")
