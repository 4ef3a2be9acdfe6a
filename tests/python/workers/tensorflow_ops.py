"""horovod.tensorflow's collectives on kolo, eagerly and inside tf.function, with Horovod's
gradients, process sets, the object helpers, DistributedGradientTape and the errors a mismatch
or XLA gives. Every rank checks exact values it can compute itself; prints "rank R OK"."""

import os
import sys

import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
from kolo.tensorflow.graph_errors import is_collective_failure
from tensorflow_rounding import check_rounding

os.environ["HOROVOD_DYNAMIC_PROCESS_SETS"] = "1"


def close(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-6), (
        f"rank {hvd.rank()}: {what}: got {a!r}, expected {b!r}")


def both_modes(fn):
    """fn run eagerly and as a tf.function (graph mode): both results."""
    return fn(), tf.function(fn)()


def check_allreduce(rank, size):
    x = tf.constant([1.0, 2.0, 3.0]) * (rank + 1)
    total = sum(range(1, size + 1))
    for got in both_modes(lambda: hvd.allreduce(x, op=hvd.Sum)):
        close(got, np.array([1.0, 2.0, 3.0]) * total, "allreduce Sum")
    for got in both_modes(lambda: hvd.allreduce(x)):
        close(got, np.array([1.0, 2.0, 3.0]) * total / size, "allreduce Average (default)")
    close(hvd.allreduce(x, op=hvd.Max), np.array([1.0, 2.0, 3.0]) * size, "allreduce Max")
    close(hvd.allreduce(x, op=hvd.Min), [1.0, 2.0, 3.0], "allreduce Min")
    ints = tf.constant([rank + 2], dtype=tf.int64)
    close(hvd.allreduce(ints, op=hvd.Product), [np.prod([r + 2 for r in range(size)])],
          "allreduce Product int64")
    got = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0)
    close(got, np.array([1.0, 2.0, 3.0]) * total * 1.5, "allreduce scale factors")
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        close(hvd.allreduce(x, average=False), np.array([1.0, 2.0, 3.0]) * total, "average=")
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    half = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert half.dtype == tf.float32
    close(half, np.array([1.0, 2.0, 3.0]) * total, "fp16 compression")
    # Gradient: the same allreduce of the output gradient.
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(hvd.allreduce(v * (rank + 1), op=hvd.Sum))
    close(tape.gradient(y, v), [size * (rank + 1)] * 2, "allreduce gradient")
    grouped = hvd.grouped_allreduce([x, x * 2], op=hvd.Sum)
    close(grouped[1], np.array([2.0, 4.0, 6.0]) * total, "grouped_allreduce")
    grouped = tf.function(lambda: hvd.grouped_allreduce([x, x * 2]))()
    close(grouped[0], np.array([1.0, 2.0, 3.0]) * total / size, "grouped_allreduce graph")
    # IndexedSlices are allgathered, Average divides the values.
    slices = tf.IndexedSlices(tf.constant([[float(rank)]]), tf.constant([rank]),
                              dense_shape=tf.constant([size, 1]))
    reduced = hvd.allreduce(slices)
    assert isinstance(reduced, tf.IndexedSlices)
    close(reduced.indices, list(range(size)), "IndexedSlices indices")
    close(reduced.values, [[r / size] for r in range(size)], "IndexedSlices values")


def check_allgather(rank, size):
    x = tf.fill([rank + 1, 2], float(rank))
    expected = np.concatenate([np.full([r + 1, 2], float(r)) for r in range(size)])
    for got in both_modes(lambda: hvd.allgather(x)):
        close(got, expected, "allgather")
    v = tf.Variable(tf.ones([rank + 1, 2]))
    with tf.GradientTape() as tape:
        y = hvd.allgather(v)
        loss = tf.reduce_sum(y * tf.range(1, tf.shape(y)[0] + 1, dtype=tf.float32)[:, None])
    offset = sum(r + 1 for r in range(rank))
    rows = np.arange(offset + 1, offset + rank + 2, dtype=np.float32)[:, None]
    close(tape.gradient(loss, v), np.repeat(rows, 2, axis=1), "allgather gradient")
    a, b = hvd.grouped_allgather([x, x + 1])
    close(b, expected + 1, "grouped_allgather")
    # uint16 has no arithmetic in the core; the byte-moving ops carry its bits unchanged.
    u = tf.constant([65535 - rank, rank], dtype=tf.uint16)
    got = hvd.allgather(u)
    assert got.dtype == tf.uint16
    close(got, np.ravel([[65535 - r, r] for r in range(size)]), "allgather uint16")
    close(hvd.broadcast(u, 0), [65535, 0], "broadcast uint16")
    gathered, = hvd.grouped_allgather([u])
    close(gathered, np.ravel([[65535 - r, r] for r in range(size)]), "grouped_allgather uint16")


def check_broadcast(rank, size):
    x = tf.constant([float(rank), 7.0])
    for got in both_modes(lambda: hvd.broadcast(x, size - 1)):
        close(got, [size - 1, 7.0], "broadcast")
    v = tf.Variable([float(rank), 1.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(hvd.broadcast(v, 0) * 3.0)
    close(tape.gradient(loss, v), [3.0, 3.0] if rank == 0 else [0.0, 0.0], "broadcast gradient")
    variables = [tf.Variable([float(rank)] * 3), tf.Variable(rank, dtype=tf.int32)]
    hvd.broadcast_variables(variables, root_rank=1)
    close(variables[0], [1.0] * 3, "broadcast_variables float")
    assert int(variables[1].numpy()) == 1
    assert hvd.broadcast_object({"r": rank} if rank == 0 else None, 0) == {"r": 0}
    assert hvd.allgather_object(rank * 10) == [r * 10 for r in range(size)]
    assert hvd.broadcast_object_fn(root_rank=0)(rank) == 0


def check_alltoall(rank, size):
    # Rank r sends r + 1 rows of value 100 * r + dest to each dest.
    splits = tf.constant([rank + 1] * size, dtype=tf.int32)
    rows = np.concatenate([np.full([rank + 1], 100.0 * rank + d) for d in range(size)])
    expected = np.concatenate([np.full([r + 1], 100.0 * r + rank) for r in range(size)])
    for got, received in both_modes(lambda: hvd.alltoall(tf.constant(rows), splits=splits)):
        close(got, expected, "alltoall")
        close(received, [r + 1 for r in range(size)], "alltoall received splits")
    even = hvd.alltoall(tf.constant(np.arange(size, dtype=np.float32) + 10 * rank))
    close(even, [10.0 * r + rank for r in range(size)], "alltoall without splits")
    v = tf.Variable(tf.constant(rows, dtype=tf.float32))
    with tf.GradientTape() as tape:
        out, _ = hvd.alltoall(v, splits=splits)
        loss = tf.reduce_sum(out * out)
    close(tape.gradient(loss, v), 2 * rows, "alltoall gradient")


def check_reducescatter(rank, size):
    x = tf.constant(np.arange(2 * size, dtype=np.float32) * (rank + 1))
    total = sum(range(1, size + 1))
    for got in both_modes(lambda: hvd.reducescatter(x, op=hvd.Sum)):
        close(got, np.arange(2 * rank, 2 * rank + 2) * total, "reducescatter Sum")
    close(hvd.reducescatter(x), np.arange(2 * rank, 2 * rank + 2) * total / size,
          "reducescatter Average")
    v = tf.Variable(tf.ones([2 * size]))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(hvd.reducescatter(v, op=hvd.Sum) * (rank + 1))
    # Horovod: the allgathered output gradient, times the size for Sum.
    grad = np.concatenate([np.full(2, float(r + 1)) for r in range(size)]) * size
    close(tape.gradient(loss, v), grad, "reducescatter gradient")
    a, b = hvd.grouped_reducescatter([x, x * 2], op=hvd.Sum)
    close(b, np.arange(2 * rank, 2 * rank + 2) * total * 2, "grouped_reducescatter")


def check_process_sets(rank, size):
    evens = hvd.add_process_set([r for r in range(size) if r % 2 == 0])
    if evens.included():
        got = hvd.allreduce(tf.constant([1.0]), op=hvd.Sum, process_set=evens)
        close(got, [float(evens.size())], "allreduce on a process set")
        got = tf.function(lambda: hvd.allgather(tf.constant([rank]), process_set=evens))()
        close(got, [r for r in range(size) if r % 2 == 0], "allgather on a process set graph")
    hvd.barrier()
    hvd.remove_process_set(evens)
    check_unregistered_set_id()


def check_unregistered_set_id():
    """An id no set was registered under is a ValueError when the op is made, in a graph too
    (the core's refusal at run time would be InvalidArgumentError; Horovod's
    test_horovod_allreduce_process_set_id_error asks for ValueError in both modes)."""
    fake = hvd.ProcessSet([0])
    fake.process_set_id = 10
    for mode, build in (("eager", lambda: hvd.allreduce(tf.ones(4), process_set=fake)),
                        ("graph", lambda: in_session(
                            lambda: hvd.allreduce(tf.ones(4), process_set=fake)))):
        try:
            build()
        except ValueError as error:
            assert "10" in str(error), f"{mode}: the error does not name the id: {error}"
        else:
            raise AssertionError(f"{mode}: an unregistered process set id was accepted")


def check_tape(rank, size):
    w = tf.Variable([1.0, 1.0])
    b = tf.Variable(0.5)
    local = tf.Variable(2.0)

    def loss_fn():
        return tf.reduce_sum(w * (rank + 1)) + b * (rank + 1) + local * (rank + 1)

    mean = sum(range(1, size + 1)) / size
    for groups in (None, 1, [[w, b]]):
        with tf.GradientTape() as tape:
            loss = loss_fn()
        dtape = hvd.DistributedGradientTape(tape, groups=groups)
        dtape.register_local_source(local)
        gw, gb, gl = dtape.gradient(loss, [w, b, local])
        close(gw, [mean, mean], f"tape gradient (groups={groups})")
        close(gb, mean, "tape gradient of a scalar")
        close(gl, (rank + 1) / size, "local source: own gradient over size")

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn()
        tape = hvd.DistributedGradientTape(tape, op=hvd.Sum, compression=hvd.Compression.fp16)
        return tape.gradient(loss, [w, b])

    gw, gb = step()
    close(gw, [mean * size] * 2, "tape in tf.function, Sum, fp16")
    with tf.GradientTape() as tape:
        loss = loss_fn()
    gw, = hvd.DistributedGradientTape(tape, gradient_predivide_factor=2.0).gradient(loss, [w])
    close(gw, [mean, mean], "gradient_predivide_factor keeps the average")
    emb = tf.Variable(tf.ones([size, 2]))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(emb, [rank]))
    sparse, = hvd.DistributedGradientTape(tape).gradient(loss, [emb])
    assert isinstance(sparse, tf.IndexedSlices)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(emb, [rank]))
    dense, = hvd.DistributedGradientTape(tape, sparse_as_dense=True).gradient(loss, [emb])
    close(dense, np.ones([size, 2]) / size, "sparse_as_dense")
    try:
        hvd.DistributedGradientTape(tape, op=hvd.Sum, gradient_predivide_factor=2.0)
    except ValueError as error:
        assert "gradient_predivide_factor" in str(error)
    else:
        raise AssertionError("predivide with Sum was accepted")


def in_session(build):
    """Runs build()'s tensor in a TF1 graph and session, as Horovod's graph-mode tests do."""
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        return session.run(build())


def check_broadcast_inplace_in_a_graph(rank, size):
    """broadcast_ in a TF1 graph, from every root in turn, each to a new variable made from the
    same constant: the graph's earlier broadcasts run again before each new one (their chain),
    and they once wrote into the buffer those variables shared, so the last root's value was
    the first root's (Horovod's graph-mode test_horovod_broadcast_inplace)."""
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        for root in range(size):
            variable = tf.Variable(tf.ones([5]) * rank)
            session.run(tf.compat.v1.global_variables_initializer())
            assigned = hvd.broadcast_(variable, root)
            session.run(assigned)
            close(session.run(variable), [root] * 5, f"graph broadcast_ from root {root}")


def check_repeated_mixed_group(rank, size):
    """A grouped allreduce of float32 and two float64 tensors, twice with the same names: the
    second round used to hang (the core cached one member of the group; issue 24's hang of
    Horovod's TF1 grouped allgather gradient test)."""
    for _ in range(2):
        out = hvd.grouped_allreduce([tf.ones([3], tf.float32), tf.ones([3], tf.float64),
                                     tf.ones([2], tf.float64)], op=hvd.Sum, name="mixed group")
        for tensor in out:
            close(tensor, np.full(tensor.shape, size), "mixed-dtype grouped allreduce")


def check_errors(rank, size):
    bad = tf.ones([rank + 1])
    try:
        hvd.allreduce(bad, name="mismatched")
    except tf.errors.FailedPreconditionError as error:
        assert isinstance(error, hvd.HorovodInternalError)
        assert "mismatched" in str(error), error
    else:
        raise AssertionError("allreduce of differing shapes succeeded")
    for mode, run in (("tf.function", lambda fn: tf.function(fn)()), ("TF1 session", in_session)):
        try:
            run(lambda name=f"mismatched {mode}": hvd.allreduce(tf.ones([rank + 1]), name=name))
        except tf.errors.FailedPreconditionError as error:
            # Horovod's class from a graph too (graph_errors.py), with kolo's message, and what
            # kolo.tensorflow.elastic.run recovers from.
            assert "CollectiveFailed" in str(error) and f"mismatched {mode}" in str(error), error
            assert is_collective_failure(error), error
        else:
            raise AssertionError(f"{mode}: allreduce of differing shapes succeeded")
    # A graph whose collectives succeed still gives their values (the status read is a no-op).
    total = in_session(lambda: hvd.allreduce(tf.ones([2]), op=hvd.Sum, name="session ok"))
    assert np.allclose(total, size), total
    try:
        tf.function(lambda: hvd.allreduce(tf.ones([2])), jit_compile=True)()
    except ValueError as error:
        assert "jit_compile" in str(error), error
    else:
        raise AssertionError("allreduce under XLA did not raise")
    hvd.barrier()


def main():
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    for check in (check_allreduce, check_rounding, check_allgather, check_broadcast, check_alltoall,
                  check_reducescatter, check_process_sets, check_tape, check_repeated_mixed_group,
                  check_broadcast_inplace_in_a_graph, check_errors):
        check(rank, size)
    last = hvd.join()
    assert 0 <= int(last) < size
    print(f"rank {rank} OK", flush=True)


if __name__ == "__main__":
    sys.exit(main())
