"""An elastic TensorFlow job that starts with one rank and grows to two: the step is a tf.function
traced at size 1, so it must still reduce its gradients once the job has two ranks (each rank's
gradient is rank + 1; the average is 1.5). Prints each step's size, rank and gradient."""

import time

import tensorflow as tf

import horovod.tensorflow as hvd

hvd.init()
weight = tf.Variable([0.0])


@tf.function
def step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(weight * x)
    return hvd.DistributedGradientTape(tape).gradient(loss, [weight])[0]


state = hvd.elastic.TensorFlowState([weight], steps_at_two=0)


@hvd.elastic.run
def train(state):
    while state.steps_at_two < 5:
        grad = step(tf.constant([float(hvd.rank() + 1)]))
        print(f"size {hvd.size()} rank {hvd.rank()} grad {float(grad.numpy()[0])}", flush=True)
        if hvd.size() == 2:
            state.steps_at_two += 1
        state.commit()  # where a host change is noticed
        time.sleep(0.2)


train(state)
print(f"rank {hvd.rank()} done", flush=True)
