"""horovod.tensorflow.keras on kolo: model.fit with DistributedOptimizer and Horovod's callbacks
keeps every rank's weights identical and lowers the loss; local aggregation
(backward_passes_per_step) applies every k-th step; the LR warmup and metric averaging
callbacks; load_model; elastic KerasState commit/restore/sync; the optimizer's Horovod
internals (tensorflow_keras_optimizer.py). Prints "rank R OK"."""

import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

import horovod.tensorflow.keras as hvd
import tensorflow_keras_optimizer  # this folder: the optimizer's Horovod internals


def same_on_every_rank(values, what):
    flat = np.concatenate([np.ravel(np.asarray(v, dtype=np.float64)) for v in values])
    gathered = hvd.allgather_object(flat) if hasattr(hvd, "allgather_object") else None
    if gathered is None:
        import horovod.tensorflow as htf
        gathered = htf.allgather_object(flat)
    for other in gathered:
        assert np.array_equal(other, flat), f"rank {hvd.rank()}: {what} differ between ranks"


def make_model():
    tf.keras.utils.set_random_seed(1234 + hvd.rank())  # different initial weights per rank
    return tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, "relu"),
                                tf.keras.layers.Dense(1)])


def data():
    rng = np.random.default_rng(7 + hvd.rank())  # each rank its own shard
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)
    return x, y


def check_fit():
    import horovod.tensorflow as htf
    model = make_model()
    opt = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01 * hvd.size()))
    model.compile(optimizer=opt, loss="mse")
    assert not model.jit_compile, "kolo's optimizer must keep model.fit out of XLA"
    x, y = data()
    callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                 hvd.callbacks.MetricAverageCallback(),
                 hvd.callbacks.LearningRateWarmupCallback(initial_lr=0.01 * hvd.size(),
                                                          warmup_epochs=2)]
    history = model.fit(x, y, batch_size=16, epochs=4, callbacks=callbacks, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0], f"loss did not fall: {losses}"
    same_on_every_rank(model.get_weights(), "weights after fit")
    # MetricAverageCallback: the logged loss is the average, the same on every rank.
    same_on_every_rank([losses[-1]], "averaged epoch loss")
    lr = float(np.asarray(model.optimizer.learning_rate))
    assert abs(lr - 0.01 * hvd.size()) < 1e-6, f"warmup did not end at the full rate: {lr}"
    return model, htf


def check_aggregation():
    v = tf.Variable([0.0, 0.0])
    opt = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(1.0), backward_passes_per_step=2,
                                   average_aggregated_gradients=True)
    g = tf.constant([1.0, 2.0]) * (hvd.rank() + 1)
    mean = sum(range(1, hvd.size() + 1)) / hvd.size()
    opt.apply_gradients([(g, v)])
    assert np.allclose(v.numpy(), [0.0, 0.0]), "first pass of two applied already"
    opt.apply_gradients([(g, v)])
    assert np.allclose(v.numpy(), [-mean, -2 * mean]), f"aggregated step wrong: {v.numpy()}"


def check_load_model(model):
    path = os.path.join(tempfile.mkdtemp(), f"model{hvd.rank()}.keras")
    model.save(path)
    loaded = hvd.load_model(path)
    assert getattr(loaded.optimizer, "_kolo_distributed", False)
    x, y = data()
    loaded.fit(x, y, batch_size=16, epochs=1, verbose=0)
    same_on_every_rank(loaded.get_weights(), "weights after training a loaded model")


def check_elastic_state(model):
    state = hvd.elastic.KerasState(model, batch=3, epoch=1)
    before = [w.copy() for w in model.get_weights()]
    state.commit()
    model.set_weights([w + 1 for w in before])
    state.batch = 99
    state.restore()
    assert state.batch == 3
    for a, b in zip(model.get_weights(), before):
        assert np.array_equal(a, b), "restore did not bring the weights back"
    if hvd.rank() != 0:
        model.set_weights([w * 0 for w in before])
        state.epoch = 42
    state.sync()
    same_on_every_rank(model.get_weights(), "weights after sync")
    assert state.epoch == 1


def check_partial_tape():
    """PartialDistributedGradientTape accepts the layers of whichever Keras tf.keras is (tf-keras
    with TF_USE_LEGACY_KERAS=1: Horovod's test_partial_distributed_gradient_tape was refused),
    keeps the local layer's gradient local and averages the others."""
    import horovod.tensorflow as htf
    model = make_model()
    x, y = data()
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    local = tape.gradient(loss, model.trainable_weights)
    # Unscaled: by default Horovod divides a local gradient by the set's size.
    distributed = htf.PartialDistributedGradientTape(tape, local_layers=[model.layers[0]],
                                                     scale_local_gradients=False)
    grads = distributed.gradient(loss, model.trainable_weights)
    n_local = len(model.layers[0].trainable_weights)
    for g, mine in zip(grads[:n_local], local[:n_local]):
        assert np.allclose(g, mine), f"rank {hvd.rank()}: a local layer's gradient was reduced"
    for g, mine in zip(grads[n_local:], local[n_local:]):
        average = np.mean(htf.allgather_object(np.asarray(mine)), axis=0)
        assert np.allclose(g, average, rtol=1e-5, atol=1e-6), \
            f"rank {hvd.rank()}: a shared layer's gradient is not the ranks' average"


def main():
    hvd.init()
    check_partial_tape()
    model, _ = check_fit()
    check_aggregation()
    check_load_model(model)
    check_elastic_state(model)
    tensorflow_keras_optimizer.run_checks()
    print(f"rank {hvd.rank()} OK", flush=True)


if __name__ == "__main__":
    sys.exit(main())
