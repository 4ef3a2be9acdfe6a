"""One Keras 3 script on the backend $KERAS_BACKEND names (jax, torch, tensorflow): horovod.keras's
DistributedOptimizer and callbacks train a small model a few steps with model.fit, each rank on
different data and from a different initialisation. Checks on every rank: the callbacks made
the weights equal at the start (BroadcastGlobalVariablesCallback), the averaged gradients keep
them equal after training (gathered and compared), the warmup callback moved the learning rate,
and the averaged loss is the same on every rank (MetricAverageCallback)."""

import os
import sys

import numpy as np

import horovod.keras as hvd
import keras

BACKEND = os.environ["KERAS_BACKEND"]


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    assert keras.backend.backend() == BACKEND, keras.backend.backend()
    keras.utils.set_random_seed(100 + rank)  # different initial weights and data per rank
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1)])
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.05 * size, momentum=0.9))
    assert isinstance(opt, keras.optimizers.SGD)
    model.compile(loss="mse", optimizer=opt)
    x = np.random.default_rng(rank).normal(size=(64, 8)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    callbacks = [hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                 hvd.callbacks.MetricAverageCallback(),
                 hvd.callbacks.LearningRateWarmupCallback(0.05 * size, warmup_epochs=2)]
    history = model.fit(x, y, batch_size=16, epochs=3, callbacks=callbacks, verbose=0)
    weights = np.concatenate([np.ravel(w) for w in model.get_weights()]).astype(np.float64)
    gathered = hvd.allgather(weights[np.newaxis], name="weights").reshape(size, -1)
    for other in range(size):
        assert np.array_equal(gathered[other], weights), (
            f"rank {rank}: weights differ from rank {other}'s after training on {BACKEND}")
    losses = hvd.allgather(np.array([history.history["loss"][-1]]), name="loss")
    assert np.allclose(losses, losses[0]), f"rank {rank}: averaged losses differ: {losses}"
    assert history.history["loss"][-1] < history.history["loss"][0], history.history["loss"]
    lrs = history.history["lr"]
    assert lrs[0] < lrs[-1] and np.isclose(lrs[-1], 0.05 * size), lrs
    print(f"{BACKEND} losses {history.history['loss']}")
    print(f"rank {rank} OK")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
