"""Elastic training for TensorFlow 2 (``horovod.tensorflow.elastic``, also ``hvd.elastic``):
``run``, ``TensorFlowState`` (a list of variables) and ``TensorFlowKerasState`` (a Keras model
and its optimizer) on kolo's framework-neutral state and run loop (kolo/elastic)."""

from __future__ import annotations

import functools

import tensorflow as tf

from kolo.elastic.run_loop import run_fn
from kolo.exceptions import HorovodInternalError
from kolo.elastic.state import ObjectState
from kolo.tensorflow.functions import broadcast_object, broadcast_variables
from kolo.tensorflow.graph_errors import is_collective_failure
from kolo.tensorflow.mpi_ops import init, rank, shutdown

__all__ = ["TensorFlowKerasState", "TensorFlowState", "run"]


def run(func):
    """Decorator running ``func(state, ...)`` elastically (see kolo/elastic/run_loop.py): a
    failed collective (a ``HorovodInternalError``, which kolo's TensorFlow errors are) rolls the
    state back to its last commit, changed hosts keep it; the job is re-formed and func runs
    again after the state is synced from rank 0."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        try:
            return func(state, *args, **kwargs)
        except tf.errors.FailedPreconditionError as error:
            # A collective that failed inside a tf.function (graph_errors.py) arrives this way.
            if is_collective_failure(error) and not isinstance(error, HorovodInternalError):
                raise HorovodInternalError(str(error)) from error
            raise

    return run_fn(wrapper, _reset)


def _reset() -> None:
    shutdown()
    init()


def _optimizer_variables(optimizer) -> list:
    # tf-keras and TF1 optimizers have variables(); Keras 3 has a property.
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


class TensorFlowKerasState(ObjectState):
    """A Keras model and its optimizer (``optimizer`` or the model's compiled one), plus any
    picklable attributes given as keyword arguments. ``backend`` (TF1 sessions) is accepted for
    Horovod's signature and ignored."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        self.model = model
        if hasattr(model, "build") and not model.built:
            raise ValueError("Model must be built first. Run `model.build(input_shape)`.")
        self.optimizer = optimizer or model.optimizer
        self.backend = backend
        self._save_model()
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def _variables(self) -> list:
        return list(self.model.variables) + _optimizer_variables(self.optimizer)

    def save(self) -> None:
        self._save_model()
        super().save()

    def restore(self) -> None:
        for variable, value in zip(self._variables(), self._saved):
            variable.assign(value)
        super().restore()

    def sync(self) -> None:
        broadcast_variables(self._variables(), root_rank=0)
        self._save_model()
        super().sync()

    def _save_model(self) -> None:
        self._saved = [tf.identity(v).numpy() for v in self._variables()]


class TensorFlowState(ObjectState):
    """A list of tf.Variables (eager TensorFlow 2), plus picklable attributes. ``session`` is
    accepted for Horovod's signature and must be None."""

    def __init__(self, variables=None, session=None, **kwargs):
        if session is not None:
            raise ValueError("kolo.tensorflow runs on TensorFlow 2: session= must be None")
        if variables is None:
            raise ValueError("TensorFlowState needs its variables (TensorFlow 2 has no global "
                             "variable collection in eager code)")
        self.variables = list(variables)
        self.session = None
        self._save_model()
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def save(self) -> None:
        self._save_model()
        super().save()

    def restore(self) -> None:
        for variable, value in zip(self.variables, self._values):
            variable.assign(value)
        super().restore()

    def sync(self) -> None:
        broadcast_variables(self.variables, root_rank=0)
        self._save_model()
        super().sync()

    def _save_model(self) -> None:
        self._values = [v.numpy() for v in self.variables]
