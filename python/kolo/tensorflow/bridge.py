"""How a TensorFlow tensor reaches kolo's core, eagerly and inside a ``tf.function``.

kolo is never compiled against TensorFlow. In eager code a tensor's value crosses as a NumPy
array (``tensor.numpy()`` shares a CPU tensor's memory; DLPack takes it into the core) and the
result comes back through ``tf.convert_to_tensor``. Inside a ``tf.function`` each collective is a
``tf.numpy_function`` node that runs that same eager code when the graph executes, so graph mode
and eager mode share one implementation (``tf.numpy_function`` is the lighter form of
``tf.py_function``: it hands the function NumPy arrays).

Two things make graph mode safe:

- Names are fixed when the function is traced (every rank traces the same program, so unnamed
  ops get the same counter-based names everywhere), not when the graph runs.
- The collectives of one graph run in the order they were traced: each one carries a control
  dependency on the previous. Independent nodes may otherwise run in different orders on
  different ranks, and such a node blocks one of TensorFlow's few inter-op threads while it
  waits, so two ranks waiting on different collectives first could stall each other.

An error inside a graph reaches the caller as TensorFlow reports any exception of a
``numpy_function``: a ``tf.errors.UnknownError`` whose message carries the original's class
(``CollectiveFailed``) and text; ``kolo.tensorflow.elastic.run`` treats it as a failed
collective.

XLA (``jit_compile=True``) cannot run Python: a collective traced inside XLA-compiled code raises
a ``ValueError`` saying so at trace time, instead of TensorFlow's compile error or a hang.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import tensorflow as tf

import kolo
from kolo.exceptions import KoloError, KoloValueError

try:  # internal, but the only way to know at trace time that XLA will compile the graph
    from tensorflow.python.ops.control_flow_util import GraphOrParentsInXlaContext
except ImportError:  # pragma: no cover - a TensorFlow that moved it: XLA's own error then
    GraphOrParentsInXlaContext = None


class CollectiveFailed(tf.errors.FailedPreconditionError, KoloError):
    """A collective failed between ranks: what Horovod's TensorFlow ops raise
    (``tf.errors.FailedPreconditionError``) and, being a ``KoloError``, a
    ``HorovodInternalError`` that elastic training recovers from."""

    def __init__(self, message: str):
        tf.errors.FailedPreconditionError.__init__(self, None, None, message)


class BadArgument(tf.errors.InvalidArgumentError, KoloValueError):
    """An argument wrong before anything was sent (``tf.errors.InvalidArgumentError``, and a
    ``ValueError`` as kolo's other front ends raise)."""

    def __init__(self, message: str):
        tf.errors.InvalidArgumentError.__init__(self, None, None, message)


def as_numpy(tensor) -> np.ndarray:
    """The tensor's value as a C-contiguous, writable NumPy array (the core's DLPack import
    needs both; a copy only where TensorFlow's own buffer is not)."""
    if tensor.dtype == tf.bfloat16:
        raise TypeError("kolo.tensorflow: bfloat16 tensors are not supported (NumPy has no "
                        "bfloat16 that DLPack can carry); cast to float16 or float32")
    if tensor.dtype == tf.string or tensor.dtype == tf.resource:
        raise TypeError(f"kolo.tensorflow: tensors of dtype {tensor.dtype.name} cannot be "
                        "reduced, gathered or broadcast")
    array = np.asarray(tensor)
    if not array.flags.c_contiguous or not array.flags.writeable:
        array = np.array(array, order="C", copy=True)
    return array


def _run_numpy(run: Callable[..., list], name: str, inputs: Sequence) -> list:
    """Runs `run(name, *arrays)` and maps kolo's errors to TensorFlow's error classes."""
    try:
        return run(name, *[as_numpy(t) for t in inputs])
    except KoloValueError as error:
        if isinstance(error, BadArgument):
            raise
        raise BadArgument(str(error)) from error
    except KoloError as error:
        if isinstance(error, CollectiveFailed):
            raise
        raise CollectiveFailed(str(error)) from error


def check_not_xla(kind: str) -> None:
    graph = tf.compat.v1.get_default_graph()
    if GraphOrParentsInXlaContext is not None and GraphOrParentsInXlaContext(graph):
        raise ValueError(
            f"kolo.tensorflow: {kind} cannot run inside XLA-compiled code (jit_compile=True): "
            "kolo's collectives reach the core through tf.numpy_function, which XLA cannot "
            "compile. Use tf.function without jit_compile, or model.compile(jit_compile=False)")


def collective(kind: str, name, set_id: int, run: Callable[..., list], inputs: Sequence,
               out_dtypes: Sequence) -> list:
    """Runs one collective on `inputs` and returns its outputs as tensors of `out_dtypes`.

    `run(name, *arrays)` does the work on NumPy arrays and returns NumPy arrays. Eagerly it runs
    now; in a graph it becomes a ``tf.numpy_function`` node, named at trace time and ordered after
    the graph's previous collective (see the module's docstring)."""
    if tf.executing_eagerly():
        outputs = _run_numpy(run, name, inputs)
        return [tf.convert_to_tensor(o, dtype=d) for o, d in zip(outputs, out_dtypes)]
    check_not_xla(kind)
    # Graph names come from counters of their own: a trace that differs between ranks (a test
    # that failed on one rank midway) then cannot shift the names of later eager calls.
    fixed_name = kolo._name(f"{kind}.graph", name, set_id)
    graph = tf.compat.v1.get_default_graph()
    previous = getattr(graph, "_kolo_last_collective", None)

    @tf.autograph.experimental.do_not_convert
    def body(*arrays):
        outputs = _run_numpy(run, fixed_name, arrays)
        return [np.asarray(o, dtype=d.as_numpy_dtype) for o, d in zip(outputs, out_dtypes)]

    # numpy_function rather than py_function: it hands over NumPy arrays directly, about 120 us
    # less per call (neither has a gradient of its own: mpi_ops adds Horovod's).
    with tf.control_dependencies([previous] if previous is not None else []):
        outputs = tf.numpy_function(body, list(inputs), list(out_dtypes), stateful=True,
                                    name="KoloCollective")
    graph._kolo_last_collective = outputs[0].op if outputs else None
    return list(outputs)


def variable_key(variable):
    """A hashable key for a tf.Variable (``ref()``) or a Keras 3 variable (itself)."""
    ref = getattr(variable, "ref", None)
    return ref() if callable(ref) else id(variable)
