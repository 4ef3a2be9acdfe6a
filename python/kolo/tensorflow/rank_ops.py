"""join, barrier and the ops that give the rank, size and set membership as int32 tensors, as
``horovod.tensorflow.mpi_ops`` has them (re-exported there): the collectives that carry no
tensor of the caller's."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import kolo
from kolo.common.basics import local_rank, local_size, rank, size
from kolo.process_sets import check_process_set, global_process_set, process_set_by_id
from kolo.tensorflow.bridge import collective


def join():
    """Declares that this rank has no more data (it contributes zeros to the allreduces the
    others still run); blocks until every rank joined and returns the last one's rank."""
    if tf.executing_eagerly():
        return tf.constant(int(kolo.join()), dtype=tf.int32)
    return tf.py_function(lambda: tf.constant(int(kolo.join()), dtype=tf.int32), [], tf.int32)


def barrier(process_set=global_process_set):
    """Returns once every rank of the process set has called barrier()."""
    set_id = check_process_set(process_set)

    def run(name):
        kolo.barrier(set_id)
        return [np.zeros(0, np.uint8)]

    collective("barrier", None, set_id, run, [], [tf.uint8])


def int_op(value_fn, name=None):
    # Evaluated when the graph runs (as Horovod's ops are): an elastic reset changes the values.
    if tf.executing_eagerly():
        return tf.constant(value_fn(), dtype=tf.int32)
    return tf.py_function(lambda: tf.constant(value_fn(), dtype=tf.int32), [], tf.int32,
                          name=name)


def size_op(process_set_id=0, name=None):
    """The process set's size, as an int32 tensor evaluated when it runs."""
    return int_op(lambda: size() if process_set_id == 0
                   else process_set_by_id(process_set_id).size(), name)


def process_set_included_op(process_set_id=0, name=None):
    """1 if this rank belongs to the process set, else 0."""
    return int_op(lambda: 1 if process_set_id == 0
                   else int(process_set_by_id(process_set_id).included()), name)


def local_size_op(name=None):
    return int_op(local_size, name)


def rank_op(name=None):
    return int_op(rank, name)


def local_rank_op(name=None):
    return int_op(local_rank, name)
