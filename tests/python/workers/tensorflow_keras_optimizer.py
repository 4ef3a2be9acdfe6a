"""The Keras DistributedOptimizer's Horovod internals on kolo (Keras 3, or tf-keras with
TF_USE_LEGACY_KERAS=1): compute_gradients / _compute_gradients reduce, and apply_gradients
does not reduce those gradients again; backward_passes_per_step through _agg_helper (its counter,
the iterations every pass, the local sums reduced and applied on the k-th pass, inside a
tf.function, with local variables); a sparse gradient needs sparse_as_dense there; Keras 2's
apply_gradients arguments. tensorflow_keras.py runs them."""

import numpy as np
import tensorflow as tf

import horovod.tensorflow.keras as hvd


def rank_sum(k=1.0):
    # The sum over ranks of k * (rank + 1).
    return k * hvd.size() * (hvd.size() + 1) / 2


def check_compute_then_apply_reduces_once():
    """op=Sum makes a second reduction visible (a factor of size)."""
    v = tf.Variable([0.0, 0.0])
    opt = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(1.0), op=hvd.Sum)
    scale = float(hvd.rank() + 1)

    def loss():
        return scale * (v[0] + 2.0 * v[1])

    pairs = opt._compute_gradients(loss, var_list=[v])
    assert np.allclose(pairs[0][0], [rank_sum(), rank_sum(2.0)]), \
        f"rank {hvd.rank()}: _compute_gradients did not sum over ranks: {pairs[0][0]}"
    opt.apply_gradients(pairs, experimental_aggregate_gradients=False)
    assert np.allclose(v.numpy(), [-rank_sum(), -rank_sum(2.0)]), \
        f"rank {hvd.rank()}: the gradients were reduced twice: {v.numpy()}"
    # A tensor loss needs its tape; compute_gradients is the public name.
    with tf.GradientTape() as tape:
        value = loss()
    pairs = opt.compute_gradients(value, [v], tape=tape)
    assert np.allclose(pairs[0][0], [rank_sum(), rank_sum(2.0)])
    # Gradients from the user's own tape are reduced when applied.
    opt.apply_gradients([(tf.constant([scale, 0.0]), v)])
    assert np.allclose(v.numpy(), [-2 * rank_sum(), -rank_sum(2.0)]), v.numpy()


def check_aggregation_in_tf_function(average):
    passes = 3
    x, local = tf.Variable([0.0]), tf.Variable([0.0])
    opt = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(1.0), backward_passes_per_step=passes,
                                   average_aggregated_gradients=average, sparse_as_dense=True)
    opt.register_local_var(local)
    scale = float(hvd.rank() + 1)

    @tf.function
    def step():
        pairs = opt._compute_gradients(lambda: scale * (x[0] + local[0]), var_list=[x, local])
        opt.apply_gradients(pairs)

    for i in range(2 * passes + 1):
        step()
        applied = (i + 1) // passes
        per_pass = 1.0 if average else float(passes)
        # x: the ranks' average gradient; local: this rank's own, divided by the size.
        want_x = -applied * per_pass * rank_sum() / hvd.size()
        want_local = -applied * per_pass * scale / hvd.size()
        assert np.allclose(x.numpy(), [want_x]) and np.allclose(local.numpy(), [want_local]), \
            f"rank {hvd.rank()} pass {i}: x {x.numpy()} (want {want_x}), local " \
            f"{local.numpy()} (want {want_local})"
        assert int(opt.iterations.numpy()) == i + 1, "iterations must advance every pass"
        assert int(opt._agg_helper.counter.numpy()) == (i + 1) % passes


def check_sparse_needs_sparse_as_dense():
    table = tf.Variable(tf.ones([4, 2]))
    opt = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(1.0), backward_passes_per_step=2)
    try:
        opt._compute_gradients(lambda: tf.reduce_sum(tf.gather(table, [1])), var_list=[table])
    except ValueError as e:
        assert "sparse_as_dense" in str(e), e
    else:
        raise AssertionError("an IndexedSlices gradient with backward_passes_per_step > 1 "
                             "and sparse_as_dense=False must raise")


def check_backward_passes_must_be_positive():
    try:
        hvd.DistributedOptimizer(tf.keras.optimizers.SGD(1.0), backward_passes_per_step=0)
    except ValueError as e:
        assert "backward_passes_per_step" in str(e), e
    else:
        raise AssertionError("backward_passes_per_step=0 must raise")


def check_legacy_optimizer():
    """tf-keras's legacy (OptimizerV2) optimizers: minimize() goes through _compute_gradients."""
    if not hasattr(tf.keras.optimizers, "legacy") or hasattr(tf.keras.optimizers.SGD(),
                                                               "stateless_apply"):
        return  # Keras 3 has no legacy optimizers
    v = tf.Variable([0.0])
    opt = hvd.DistributedOptimizer(tf.keras.optimizers.legacy.SGD(1.0), op=hvd.Sum)
    opt.minimize(lambda: float(hvd.rank() + 1) * v[0], var_list=[v])
    assert np.allclose(v.numpy(), [-rank_sum()]), f"legacy minimize: {v.numpy()}"


def run_checks():
    """All of the above (tensorflow_keras.py runs them inside its jobs)."""
    check_compute_then_apply_reduces_once()
    check_aggregation_in_tf_function(average=True)
    check_aggregation_in_tf_function(average=False)
    check_sparse_needs_sparse_as_dense()
    check_backward_passes_must_be_positive()
    check_legacy_optimizer()
