"""kolo's compiled TensorFlow graph op, ``KoloCollective``: an allreduce or broadcast inside a
``tf.function`` without Python.

``libkolo_tfop.so`` (src/tfop/) registers the op and its CPU kernel through TensorFlow's stable
C API for ops and kernels, whose functions it looks up at run time in the TensorFlow that loads
it: kolo is still built without TensorFlow. Its kernel runs the collective on TensorFlow's own
thread through libkolo's C entry point ``kolo_tf_run`` (no GIL, no ``numpy_function``, no
error-status node) and reports a failure between ranks as ``FailedPreconditionError``
(``CollectiveFailed: <kolo's message>``), a bad argument as ``InvalidArgumentError``.

The library is loaded at the first graph collective. When it cannot be (a TensorFlow without
those C functions, a wheel without the library) kolo warns once, saying why, and every graph
collective stays a ``tf.numpy_function`` node (bridge.py), with the same results.
"""

from __future__ import annotations

import ctypes
import os
import warnings
from typing import Optional

import tensorflow as tf

import kolo
from kolo import _core

# Where the op library lives (beside libkolo.so); a test points it elsewhere to force the fallback.
LIBRARY_PATH = os.path.join(os.path.dirname(os.path.realpath(kolo._core.__file__)),
                            "libkolo_tfop.so")

# The op's type list (src/tfop/collective_op.cc) with kolo's code for each dtype.
_KOLO_DTYPES = {
    tf.uint8: _core.DTYPE_UINT8, tf.int8: _core.DTYPE_INT8, tf.int16: _core.DTYPE_INT16,
    tf.int32: _core.DTYPE_INT32, tf.int64: _core.DTYPE_INT64, tf.float16: _core.DTYPE_FLOAT16,
    tf.float32: _core.DTYPE_FLOAT32, tf.float64: _core.DTYPE_FLOAT64, tf.bool: _core.DTYPE_BOOL}

_module = None
_why_not: Optional[str] = None  # set once the load was tried and failed


def _load():
    """The op's Python module, or None (warned once) when the library cannot serve."""
    global _module, _why_not
    if _module is not None or _why_not is not None:
        return _module
    try:
        module = tf.load_op_library(LIBRARY_PATH)
        if not hasattr(module, "kolo_collective"):
            error = ctypes.CDLL(LIBRARY_PATH).kolo_tfop_load_error
            error.restype = ctypes.c_char_p
            raise RuntimeError(error().decode(errors="replace") or "no KoloCollective op")
        _module = module
    except Exception as error:  # any reason at all: the numpy_function path always works
        _why_not = f"{type(error).__name__}: {error}"
        warnings.warn("kolo.tensorflow: the compiled graph op could not be loaded from "
                      f"{LIBRARY_PATH} ({_why_not}); collectives inside tf.function run as "
                      "tf.numpy_function nodes instead (same results, slower)", RuntimeWarning,
                      stacklevel=3)
    return _module


def why_not_loaded() -> Optional[str]:
    """Why the op library failed to load (None: loaded, or not tried yet)."""
    return _why_not


def collective(op: int, fixed_name: str, tensor, reduce_op: int = 0, root: int = 0,
               prescale: float = 1.0, postscale: float = 1.0, set_id: int = 0):
    """One KoloCollective node computing an allreduce or broadcast of `tensor`, or None where
    the op cannot serve (the library did not load, a dtype outside its list): the caller then
    builds the numpy_function node."""
    code = _KOLO_DTYPES.get(tensor.dtype)
    if code is None:
        return None
    module = _load()
    if module is None:
        return None
    return module.kolo_collective(tensor, kolo_name=fixed_name, kolo_op=op, reduce_op=reduce_op,
                                  root=root, prescale=float(prescale),
                                  postscale=float(postscale), process_set=set_id,
                                  kolo_dtype=code, name="KoloCollective")
