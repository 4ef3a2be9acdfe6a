"""One rank of bench/tensorflow/keras_vs_mwms.py: the same Keras CNN on Fashion-MNIST, trained
either with kolo (``--mode kolo``, under kolorun) or with TensorFlow's own
``MultiWorkerMirroredStrategy`` (``--mode mwms``, TF_CONFIG set by the driver), or with no
communication at all (``--mode local``, under kolorun: placed as kolo's ranks are, each rank
training its own copy: the ceiling either could reach). Each rank takes
every size-th training image, per-rank batch ``--batch``; both on tf-keras (the driver sets
TF_USE_LEGACY_KERAS=1: Keras 3.15's ``model.fit`` fails under MWMS here, converting the
distributed batch to one tensor), both compiled without XLA
(``jit_compile=False``: kolo's collectives cannot run in XLA, and the comparison is of the
collectives, not of the compiler). Rank 0 prints one JSON line; every rank its peak RSS."""

import argparse
import contextlib
import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from mnist_idx import DEFAULT_DATA_DIR, load_split  # noqa: E402


def build_model(tf):
    return tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.Conv2D(64, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax")])


class StepTimer:
    """Wall time from the end of step `warmup` to the end of training."""

    def __init__(self, tf, warmup):
        class Timer(tf.keras.callbacks.Callback):
            def on_train_batch_end(cb, batch, logs=None):
                cb.steps += 1
                if cb.steps == warmup:
                    cb.start = time.perf_counter()

            def on_train_begin(cb, logs=None):
                cb.steps, cb.start = 0, None

            def on_train_end(cb, logs=None):
                cb.end = time.perf_counter()
        self.callback = Timer()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["kolo", "mwms", "local"], required=True)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
    args = parser.parse_args()
    import tensorflow as tf
    tf.keras.utils.set_random_seed(1)
    if args.mode in ("kolo", "local"):
        import horovod.tensorflow.keras as hvd
        hvd.init()  # local too: the same placement of the ranks on the cores
        rank, size = hvd.rank(), hvd.size()
    else:
        config = json.loads(os.environ["TF_CONFIG"])
        rank, size = config["task"]["index"], len(config["cluster"]["worker"])
        strategy = tf.distribute.MultiWorkerMirroredStrategy(
            communication_options=tf.distribute.experimental.CommunicationOptions(
                implementation=tf.distribute.experimental.CommunicationImplementation.RING))
    images, labels = load_split(args.data_dir, True)
    x = (images[rank::size, :, :, None] / 255.0).astype("float32")
    y = labels[rank::size].astype("int64")
    data = tf.data.Dataset.from_tensor_slices((x, y)).repeat().shuffle(10000, seed=rank)
    timer = StepTimer(tf, args.warmup).callback
    if args.mode in ("kolo", "local"):
        model = build_model(tf)
        optimizer = tf.keras.optimizers.Adam(1e-3)
        if args.mode == "kolo":
            optimizer = hvd.DistributedOptimizer(optimizer)
        model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"], jit_compile=False)
        callbacks = [timer]
        if args.mode == "kolo":
            callbacks.insert(0, hvd.callbacks.BroadcastGlobalVariablesCallback(0))
        data = data.batch(args.batch)
    else:
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        # MWMS splits each worker's batch among the replicas in sync: give it the global batch.
        data = data.batch(args.batch * size).with_options(options)
        with strategy.scope():
            model = build_model(tf)
            model.compile(optimizer=tf.keras.optimizers.Adam(1e-3),
                          loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                          jit_compile=False)
        callbacks = [timer]
    def scope():
        return strategy.scope() if args.mode == "mwms" else contextlib.nullcontext()

    with scope():
        model.fit(data, steps_per_epoch=args.steps, epochs=1, callbacks=callbacks, verbose=0)
    elapsed = timer.end - timer.start
    test_images, test_labels = load_split(args.data_dir, False)
    test = tf.data.Dataset.from_tensor_slices((
        (test_images[..., None] / 255.0).astype("float32"), test_labels.astype("int64")))
    if args.mode == "mwms":
        test = test.batch(500 * size).with_options(options)
    else:
        test = test.batch(500)
    with scope():
        _, accuracy = model.evaluate(test, verbose=0)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"mode": args.mode, "rank": rank, "peak_rss_mib": round(peak_mib, 1),
                      "samples_per_s": args.batch * size * (args.steps - args.warmup) / elapsed,
                      "accuracy": float(accuracy)}), flush=True)


if __name__ == "__main__":
    main()
