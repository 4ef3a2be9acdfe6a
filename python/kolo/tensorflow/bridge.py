"""How a TensorFlow tensor reaches kolo's core, eagerly and inside a ``tf.function``.

kolo is never compiled against TensorFlow. In eager code a tensor's value crosses as a NumPy
array (``tensor.numpy()`` shares a CPU tensor's memory; the core reads it by address, or through
DLPack where that path does not apply) and the result comes back as an eager tensor made from
the NumPy result (to_tensor). Inside a
``tf.function`` allreduce and broadcast are kolo's compiled ``KoloCollective`` op where it serves
(native_op.py); every other collective is a ``tf.numpy_function`` node that runs that same eager
code when the graph executes, so graph mode and eager mode share one implementation
(``tf.numpy_function`` is the lighter form of ``tf.py_function``: it hands the function NumPy
arrays).

Two things make graph mode safe:

- Names are fixed when the function is traced (every rank traces the same program, so unnamed
  ops get the same counter-based names everywhere), not when the graph runs.
- The collectives of one graph run in the order they were traced: each one carries a control
  dependency on the previous. Independent nodes may otherwise run in different orders on
  different ranks, and such a node blocks one of TensorFlow's few inter-op threads while it
  waits, so two ranks waiting on different collectives first could stall each other.

An error inside a graph reaches the caller with Horovod's class: a collective that failed between
ranks as ``tf.errors.FailedPreconditionError`` whose message holds ``CollectiveFailed:`` and
kolo's text (graph_errors.py says how), a bad argument as ``tf.errors.InvalidArgumentError``
(TensorFlow's class for a ``ValueError`` in a ``numpy_function``); ``kolo.tensorflow.elastic.run``
treats the first as a failed collective.

XLA (``jit_compile=True``) cannot run Python: a collective traced inside XLA-compiled code raises
a ``ValueError`` saying so at trace time, instead of TensorFlow's compile error or a hang.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import numpy as np
import tensorflow as tf

import kolo
from kolo import _core, _handles
from kolo.exceptions import KoloError, KoloValueError
from kolo.tensorflow import graph_errors, native_op

try:  # internal, but the only way to know at trace time that XLA will compile the graph
    from tensorflow.python.ops.control_flow_util import GraphOrParentsInXlaContext
except ImportError:  # pragma: no cover - a TensorFlow that moved it: XLA's own error then
    GraphOrParentsInXlaContext = None

try:  # internal: an eager tensor made straight from a NumPy array, about half the time of
    # tf.convert_to_tensor, which first walks TensorFlow's conversion registry
    from tensorflow.python.eager import context as _context
    from tensorflow.python.framework.ops import EagerTensor as _EagerTensor
except ImportError:  # pragma: no cover - a TensorFlow that moved them: the public way
    _EagerTensor = None

# NumPy dtypes the core takes by address (the pointer path, as kolo.torch's for host tensors).
_POINTER_DTYPES = {np.dtype(numpy_type): code for numpy_type, code in (
    (np.uint8, _core.DTYPE_UINT8), (np.int8, _core.DTYPE_INT8), (np.int16, _core.DTYPE_INT16),
    (np.int32, _core.DTYPE_INT32), (np.int64, _core.DTYPE_INT64),
    (np.float16, _core.DTYPE_FLOAT16), (np.float32, _core.DTYPE_FLOAT32),
    (np.float64, _core.DTYPE_FLOAT64), (np.bool_, _core.DTYPE_BOOL))}
_REFUSED = {tf.bfloat16: "bfloat16", tf.string: "string", tf.resource: "resource",
            tf.variant: "variant"}


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
    refused = _REFUSED.get(tensor.dtype)
    if refused == "bfloat16":
        raise TypeError("kolo.tensorflow: bfloat16 tensors are not supported (NumPy has no "
                        "bfloat16 that DLPack can carry); cast to float16 or float32")
    if refused is not None:
        raise TypeError(f"kolo.tensorflow: tensors of dtype {refused} cannot be "
                        "reduced, gathered or broadcast")
    array = tensor if type(tensor) is np.ndarray else np.asarray(tensor)
    if not array.flags.c_contiguous or not array.flags.writeable:
        array = np.array(array, order="C", copy=True)
    return array


def same_shape(op: int, array: np.ndarray, name: str, reduce_op: int = 0, root: int = 0,
               prescale: float = 1.0, postscale: float = 1.0, set_id: int = 0):
    """An allreduce or broadcast of `array` into a new array of its shape, by address: no
    DLPack import and no options object, the few microseconds that matter for small tensors
    (kolo.torch's pointer path). None where that path does not apply (an empty array, a dtype
    the core has no code for): the caller's general path then handles it, errors included."""
    code = _POINTER_DTYPES.get(array.dtype)
    if code is None or array.size == 0:
        return None
    output = np.empty_like(array)
    handle = _core.enqueue_pointers(op, name, reduce_op, root, prescale, postscale, set_id, 0,
                                    0, code, array.shape, array.ctypes.data, output.ctypes.data,
                                    True)  # synchronized at once: the wait drives the cycles
    _handles.track_direct(handle, array, output)
    return _handles.synchronize(handle)


def to_tensor(array: np.ndarray, dtype):
    """An eager tensor of `dtype` holding `array`'s values."""
    if _EagerTensor is not None and array.dtype == dtype.as_numpy_dtype:
        return _EagerTensor(array, _context.context().device_name, None)
    return tf.convert_to_tensor(array, dtype=dtype)


def set_static_shape(tensor, shape) -> None:
    """What a graph knows of an output's shape; nothing to do for an eager tensor (whose
    set_shape only checks, at about 10 us)."""
    if shape is not None and not tf.executing_eagerly():
        tensor.set_shape(shape)


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
            "kolo's graph collectives (its KoloCollective op or tf.numpy_function) have no XLA "
            "kernel. Use tf.function without jit_compile, or model.compile(jit_compile=False)")


def collective(kind: str, name, set_id: int, run: Callable[..., list], inputs: Sequence,
               out_dtypes: Sequence, native: Optional[dict] = None) -> list:
    """Runs one collective on `inputs` and returns its outputs as tensors of `out_dtypes`.

    `run(name, *arrays)` does the work on NumPy arrays and returns NumPy arrays. Eagerly it runs
    now; in a graph it becomes a node, named at trace time and ordered after the graph's previous
    collective (see the module's docstring): the compiled ``KoloCollective`` op where `native`
    (its attributes: op, reduce_op, root, prescale, postscale) is given and the op can serve
    (native_op.py), a ``tf.numpy_function`` node otherwise."""
    if tf.executing_eagerly():
        outputs = _run_numpy(run, name, inputs)
        return [to_tensor(o, d) for o, d in zip(outputs, out_dtypes)]
    check_not_xla(kind)
    # Graph names come from counters of their own: a trace that differs between ranks (a test
    # that failed on one rank midway) then cannot shift the names of later eager calls.
    fixed_name = kolo._name(f"{kind}.graph", name, set_id)
    graph = tf.compat.v1.get_default_graph()
    previous = getattr(graph, "_kolo_last_collective", None)

    if native is not None and len(inputs) == 1:
        with tf.control_dependencies([previous] if previous is not None else []):
            output = native_op.collective(fixed_name=fixed_name, tensor=inputs[0],
                                          set_id=set_id, **native)
        if output is not None:
            graph._kolo_last_collective = output.op
            return [output]

    numpy_dtypes = [d.as_numpy_dtype for d in out_dtypes]

    @tf.autograph.experimental.do_not_convert
    def body(*arrays):
        try:
            outputs = _run_numpy(run, fixed_name, arrays)
        except CollectiveFailed as error:
            # Not raised: TensorFlow would make it an UnknownError (graph_errors.py).
            return [np.zeros(0, d) for d in numpy_dtypes] + [graph_errors.failed(str(error))]
        return [o if o.dtype == d else np.asarray(o, dtype=d)
                for o, d in zip(outputs, numpy_dtypes)] + [graph_errors.SUCCEEDED]

    # numpy_function rather than py_function: it hands over NumPy arrays directly, about 120 us
    # less per call (neither has a gradient of its own: mpi_ops adds Horovod's).
    with tf.control_dependencies([previous] if previous is not None else []):
        *outputs, status = tf.numpy_function(body, list(inputs), list(out_dtypes) + [tf.string],
                                             stateful=True, name="KoloCollective")
    graph._kolo_last_collective = status.op
    return graph_errors.checked(outputs, status)


def variable_key(variable):
    """A hashable key for a tf.Variable (``ref()``) or a Keras 3 variable (itself)."""
    ref = getattr(variable, "ref", None)
    return ref() if callable(ref) else id(variable)
