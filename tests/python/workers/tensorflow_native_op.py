"""kolo's compiled KoloCollective graph op (src/tfop/, native_op.py): inside tf.function an
allreduce or broadcast is that op (the graph's op types say so), gives the numpy_function path's
results, and reports errors with Horovod's classes. With `--unloadable` the op library cannot
load: one warning saying why, numpy_function nodes, the same results. Prints "rank R OK"."""

import sys
import warnings

import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
from kolo.tensorflow import native_op
from kolo.tensorflow.graph_errors import is_collective_failure

UNLOADABLE = "--unloadable" in sys.argv
NUMPY_NODE_TYPES = {"PyFunc", "PyFuncStateless", "EagerPyFunc"}


def op_types(fn, *args):
    return {op.type for op in tf.function(fn).get_concrete_function(*args).graph.get_operations()}


def numpy_path(fn):
    """fn run as a tf.function whose collectives are numpy_function nodes (the op refused)."""
    real = native_op.collective
    native_op.collective = lambda *args, **kwargs: None
    try:
        types = op_types(fn)
        assert "KoloCollective" not in types and types & NUMPY_NODE_TYPES, types
        return tf.function(fn)()
    finally:
        native_op.collective = real


def same(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b), (
        f"rank {hvd.rank()}: {what}: got {a!r}, expected {b!r}")


def bound(collective, value, **options):
    """A function of no arguments (tf.function would turn default arguments into inputs)."""
    return lambda: collective(tf.constant(value), **options)


def cases(rank, size):
    """(what, fn, expected) for allreduce and broadcast over dtypes, shapes, ops and roots."""
    total = sum(range(1, size + 1))
    # Every dtype of the op's list, and a scalar and an empty tensor (kept few: each case traces
    # three functions, and CI time is short).
    shapes = [(np.dtype(d), (3, 2)) for d in (np.float32, np.float64, np.float16, np.int32,
                                              np.int64, np.int8, np.int16, np.uint8)]
    for dtype, shape in shapes + [(np.dtype(np.float32), ()), (np.dtype(np.float32), (0,))]:
        x = np.ones(shape, dtype) * (rank + 1)
        yield (f"Sum {dtype.name} {shape}", bound(hvd.allreduce, x, op=hvd.Sum),
               np.ones(shape, dtype) * total)
    x = np.array([1.0, 4.0], np.float32) * (rank + 1)
    for op, expected in ((hvd.Average, [total / size, 4 * total / size]), (hvd.Min, [1.0, 4.0]),
                         (hvd.Max, [size, 4.0 * size])):
        yield (f"op {op}", bound(hvd.allreduce, x, op=op),
               np.array(expected, np.float32))
    yield ("pre/postscale", bound(hvd.allreduce, x, op=hvd.Sum, prescale_factor=2.0,
                                  postscale_factor=0.5),
           np.array([total, 4.0 * total], np.float32))
    for root, dtype in [(r, np.float32) for r in range(size)] + [(size - 1, np.bool_),
                                                                  (size - 1, np.int64)]:
        value = np.array([rank, rank + 1, 0], dtype)
        yield (f"broadcast {np.dtype(dtype).name} from {root}",
               bound(hvd.broadcast, value, root_rank=root), np.array([root, root + 1, 0], dtype))


def check_results(rank, size):
    # The fallback is the numpy_function path already tested at length: a sample suffices.
    for what, fn, expected in list(cases(rank, size))[::4 if UNLOADABLE else 1]:
        types = op_types(fn)
        if UNLOADABLE:
            assert "KoloCollective" not in types and types & NUMPY_NODE_TYPES, (what, types)
        else:  # the native op, and no numpy_function node (nor its error-status WriteFile)
            assert "KoloCollective" in types and not types & NUMPY_NODE_TYPES, (what, types)
            assert "WriteFile" not in types, (what, types)
        got = tf.function(fn)()
        same(got, expected, what)
        same(got, numpy_path(fn), f"{what}, against the numpy_function path")
    # A chain of collectives in one graph runs in trace order on every rank.
    chained = tf.function(lambda: hvd.allreduce(hvd.broadcast(tf.constant([float(rank)]), 0),
                                                op=hvd.Sum))()
    same(chained, np.array([0.0], np.float32), "broadcast then allreduce")


def check_errors(rank, size):
    try:
        tf.function(lambda: hvd.allreduce(tf.ones([rank + 1]), name="native mismatch"))()
    except tf.errors.FailedPreconditionError as error:
        assert "CollectiveFailed" in str(error) and "native mismatch" in str(error), error
        assert is_collective_failure(error), error
    else:
        raise AssertionError("allreduce of differing shapes succeeded in a tf.function")
    try:
        tf.function(lambda: hvd.broadcast(tf.ones([2]), root_rank=size, name="native bad root"))()
    except (tf.errors.InvalidArgumentError, tf.errors.FailedPreconditionError) as error:
        assert "native bad root" in str(error), error
    else:
        raise AssertionError("broadcast from a rank outside the job succeeded")
    hvd.barrier()


def main():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    if UNLOADABLE:
        native_op.LIBRARY_PATH = "/nonexistent/libkolo_tfop.so"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_results(rank, size)
    notes = [str(w.message) for w in caught if "compiled graph op" in str(w.message)]
    if UNLOADABLE:
        assert len(notes) == 1 and "/nonexistent/libkolo_tfop.so" in notes[0], notes
        assert native_op.why_not_loaded(), "no reason kept for the fallback"
    else:
        assert not notes and native_op.why_not_loaded() is None, notes
    check_errors(rank, size)
    print(f"rank {rank} OK", flush=True)


if __name__ == "__main__":
    main()
