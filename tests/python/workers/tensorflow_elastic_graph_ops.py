"""Counts the collective nodes of a DistributedGradientTape step traced in a tf.function: with
HOROVOD_ELASTIC=1 the reduction sits in a tf.cond, and its three gradients must still go out as
one batch (one node), as without it. Prints "collectives N"."""

import tensorflow as tf

import horovod.tensorflow as hvd

hvd.init()
weights = [tf.Variable(tf.ones([3])) for _ in range(3)]


@tf.function
def step(x):
    with tf.GradientTape() as tape:
        loss = tf.add_n([tf.reduce_sum(w * x) for w in weights])
    return hvd.DistributedGradientTape(tape).gradient(loss, weights)


def collectives(graph) -> int:
    # kolo's graph collective: its KoloCollective op, or a tf.numpy_function node (PyFunc).
    count = sum(op.type == "PyFunc" or "Kolo" in op.type for op in graph.get_operations())
    return count + sum(collectives(f.graph) for f in graph._functions.values()
                       if hasattr(f, "graph"))


print(f"collectives {collectives(step.get_concrete_function(tf.ones([3])).graph)}", flush=True)
