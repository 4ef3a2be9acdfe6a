"""What one 8-byte ``hvd.allreduce`` costs through kolo.tensorflow, eagerly and inside a
``tf.function``, beside the baselines that show whose cost is whose (issue 24, point 8):

    kolorun -np 2 python3 bench/tensorflow/perop.py [--calls 1000] [--rounds 7]

- ``kolo NumPy API``: ``kolo.allreduce`` on a NumPy array, the core's own per-call cost;
- ``tf eager``: ``hvd.allreduce(tensor)`` in eager code;
- ``tf.function, 1 allreduce`` / ``1 no-op numpy_function``: a whole ``tf.function`` call
  holding one allreduce, and the same with a ``tf.numpy_function`` that does nothing (the floor
  of TensorFlow's own machinery: the function call and the Python re-entry);
- ``tf.function, no collective``: the same function without the allreduce, the floor of a
  ``tf.function`` call itself (the goal of issue 24 point 8 is the whole call with one
  allreduce: <= 50 us);
- ``per allreduce in a graph``: (one call with 11 chained allreduces - one with 1) / 10, what an
  allreduce adds inside a graph once the ``tf.function`` call is paid; ``per no-op
  numpy_function in a graph`` is the same for the no-op, TensorFlow's share of that figure.

Rank 0 prints, per path, the median over the rounds of the mean wall time per call and of the
process CPU time per call (``time.process_time``: all of the process's threads, the core's
included; less sensitive than wall time to other processes on a busy machine). The rounds of
all paths are interleaved, so a busy machine slows all of them alike.
"""

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
import kolo

CHAIN = 11


def per_call_us(fn, calls: int) -> tuple:
    fn()  # warm-up: tracing, the first negotiation of the names
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn()
    return ((time.perf_counter() - wall) * 1e6 / calls,
            (time.process_time() - cpu) * 1e6 / calls)


def _noop(array):
    return array


def _chain(x, step, count):
    def body():
        y = x
        for _ in range(count):
            y = step(y)
        return y
    return tf.function(body)


def _allreduce_step(y):
    return hvd.allreduce(y, op=hvd.Sum) * 0.5


def _noop_step(y):
    (z,) = tf.numpy_function(_noop, [y], [tf.float32], stateful=True)
    return z * 0.5


def _multiply_step(y):
    return y * 0.5


def cases(x: tf.Tensor, array: np.ndarray) -> dict:
    return {
        "kolo NumPy API": lambda: kolo.allreduce(array, name="numpy8"),
        "tf eager": lambda: hvd.allreduce(x, name="eager8"),
        "tf.function, 1 allreduce": _chain(x, _allreduce_step, 1),
        "tf.function, 1 no-op numpy_function": _chain(x, _noop_step, 1),
        "tf.function, no collective": _chain(x, _multiply_step, 1),
        f"tf.function, {CHAIN} allreduces": _chain(x, _allreduce_step, CHAIN),
        f"tf.function, {CHAIN} no-op numpy_functions": _chain(x, _noop_step, CHAIN),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    hvd.init()
    array = np.ones(2, np.float32)  # 8 bytes
    paths = cases(tf.constant(array), array)
    wall = {name: [] for name in paths}
    cpu = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, fn in paths.items():
            w, c = per_call_us(fn, args.calls)
            wall[name].append(w)
            cpu[name].append(c)
    if hvd.rank() != 0:
        return
    wall = {name: statistics.median(v) for name, v in wall.items()}
    cpu = {name: statistics.median(v) for name, v in cpu.items()}
    for kind, one, many in (
            ("allreduce", "tf.function, 1 allreduce", f"tf.function, {CHAIN} allreduces"),
            ("no-op numpy_function", "tf.function, 1 no-op numpy_function",
             f"tf.function, {CHAIN} no-op numpy_functions")):
        wall[f"per {kind} in a graph"] = (wall[many] - wall[one]) / (CHAIN - 1)
        cpu[f"per {kind} in a graph"] = (cpu[many] - cpu[one]) / (CHAIN - 1)
    from kolo.tensorflow import native_op
    graph_path = ("kolo's KoloCollective op" if native_op.why_not_loaded() is None
                  else f"tf.numpy_function ({native_op.why_not_loaded()})")
    print(f"8-byte allreduce, np {hvd.size()}: {args.calls} calls x {args.rounds} rounds, "
          f"median of the rounds' mean per call; graph allreduce: {graph_path}")
    print(f"  {'path':44s} {'wall us':>9s} {'cpu us':>9s}")
    for name in wall:
        print(f"  {name:44s} {wall[name]:9.1f} {cpu[name]:9.1f}")


if __name__ == "__main__":
    main()
