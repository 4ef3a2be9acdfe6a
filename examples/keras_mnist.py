"""Horovod's TensorFlow 2 Keras MNIST example (tensorflow2_keras_mnist.py) on kolo, on Keras 3,
unchanged but for the data loading:

    kolorun -np 2 python3 examples/keras_mnist.py --epochs 1
    horovodrun -np 2 python3 examples/keras_mnist.py --epochs 1      # same thing

Reads MNIST-format IDX files from --data-dir (by default Debian's Fashion-MNIST, see
mnist_idx.py); never downloads anything. Each rank trains on its own shard; rank 0 prints the
test accuracy of the trained model.
"""

import argparse

import numpy as np
import tensorflow as tf

import horovod.tensorflow.keras as hvd
from mnist_idx import DEFAULT_DATA_DIR, load_split

parser = argparse.ArgumentParser(description="Keras MNIST Example")
parser.add_argument("--data-dir", default=DEFAULT_DATA_DIR)
parser.add_argument("--batch-size", type=int, default=128)
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--steps-per-epoch", type=int, default=200,
                    help="steps per epoch on each rank (Horovod's example: 500 // size)")
parser.add_argument("--lr", type=float, default=0.001)
args = parser.parse_args()

hvd.init()

images, labels = load_split(args.data_dir, train=True)
images, labels = images[hvd.rank()::hvd.size()], labels[hvd.rank()::hvd.size()]
dataset = tf.data.Dataset.from_tensor_slices(
    (tf.cast(images[..., tf.newaxis] / 255.0, tf.float32), tf.cast(labels, tf.int64)))
dataset = dataset.repeat().shuffle(10000, seed=hvd.rank()).batch(args.batch_size)

model = tf.keras.Sequential([
    tf.keras.Input((28, 28, 1)),
    tf.keras.layers.Conv2D(32, [3, 3], activation="relu"),
    tf.keras.layers.Conv2D(64, [3, 3], activation="relu"),
    tf.keras.layers.MaxPooling2D(pool_size=(2, 2)),
    tf.keras.layers.Dropout(0.25),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(128, activation="relu"),
    tf.keras.layers.Dropout(0.5),
    tf.keras.layers.Dense(10, activation="softmax"),
])

# Horovod: scale the learning rate by the number of workers, wrap the optimizer.
scaled_lr = args.lr * hvd.size()
opt = hvd.DistributedOptimizer(tf.keras.optimizers.Adam(scaled_lr))
model.compile(loss=tf.losses.SparseCategoricalCrossentropy(), optimizer=opt,
              metrics=["accuracy"])

callbacks = [
    # Horovod: every rank starts from rank 0's weights, metrics are averaged over the ranks,
    # and the rate warms up from lr to lr * size over the first epoch.
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),
    hvd.callbacks.MetricAverageCallback(),
    hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=1, verbose=1),
]

model.fit(dataset, steps_per_epoch=args.steps_per_epoch, callbacks=callbacks,
          epochs=args.epochs, verbose=2 if hvd.rank() == 0 else 0)

if hvd.rank() == 0:
    test_images, test_labels = load_split(args.data_dir, train=False)
    _, accuracy = model.evaluate(test_images[..., np.newaxis] / 255.0, test_labels, verbose=0)
    print(f"test accuracy: {accuracy:.4f}")
