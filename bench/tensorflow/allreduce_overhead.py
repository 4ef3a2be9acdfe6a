"""The per-call cost of an 8-byte ``hvd.allreduce`` through kolo.tensorflow, eagerly and inside a
``tf.function`` (a ``tf.py_function`` node), beside kolo.torch's on the same job:

    kolorun -np 2 python bench/tensorflow/allreduce_overhead.py [--calls 2000]

Rank 0 prints the median over 5 rounds of the mean time per call, in microseconds. The rounds
of the three paths are interleaved, so a busy machine slows all of them alike.
"""

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf
import torch

import horovod.tensorflow as hvd
import horovod.torch as hvd_torch


def per_call_us(fn, calls: int) -> float:
    fn()  # warm-up: tracing, first negotiation of the name
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    hvd.init()
    x = tf.constant(np.ones(2, np.float32))  # 8 bytes
    t = torch.ones(2)

    graph_step = tf.function(lambda: hvd.allreduce(x, name="graph8"))
    paths = {
        "tensorflow eager": lambda: hvd.allreduce(x, name="eager8"),
        "tensorflow tf.function": graph_step,
        "torch (kolo.torch)": lambda: hvd_torch.allreduce(t, name="torch8"),
    }
    times = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, fn in paths.items():
            times[name].append(per_call_us(fn, args.calls))
    if hvd.rank() == 0:
        print(f"8-byte allreduce, np {hvd.size()}, {args.calls} calls x {args.rounds} rounds "
              "(median of the rounds' mean per call)")
        for name, values in times.items():
            print(f"  {name:24s} {statistics.median(values):8.1f} us")


if __name__ == "__main__":
    main()
