"""kolo's per-operation cases, one process per rank under kolorun (started by bench/perop/run.py):

    kolorun -np 2 python3 bench/perop/kolo_cases.py ITERS WARMUP

The same body runs under the real Horovod 0.28.1 (bench/horovod_reference: its venv has no kolo,
so `horovod.torch` is Horovod's own), started by that venv's horovodrun; its cases are then
labelled "Horovod 0.28.1 ..." and the NumPy case (kolo's own API) is left out.

Rank 0 prints one line per case, "case median_us p90_us", where each sample is one blocking call
(or, for the async case, one batch of 100 submissions then 100 synchronize() calls, divided by
100). Every case checks its result, so a fast wrong answer cannot pass for a fast op.
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import torch
from run import HOROVOD_LABEL  # this folder's run.py pairs Horovod's "<label> X" with kolo's "X"

import horovod.torch as hvd

try:
    import kolo
except ImportError:  # the real Horovod's venv: horovod.torch above is Horovod's, not kolo's
    kolo = None

BATCH = 100  # tensors per async sample


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(one, iters: int, warmup: int) -> list[float]:
    """Microseconds per call of one(), each call timed alone; ranks start each case together."""
    for _ in range(warmup):
        one()
    (kolo.barrier if kolo else hvd.barrier)()
    samples = []
    for _ in range(iters):
        start = time.perf_counter_ns()
        one()
        samples.append((time.perf_counter_ns() - start) / 1e3)
    return samples


def main() -> None:
    iters, warmup = int(sys.argv[1]), int(sys.argv[2])
    hvd.init()
    torch.set_num_threads(1)
    size = hvd.size()
    tensor = torch.ones(2, dtype=torch.float32)  # 8 bytes
    array = np.ones(2, dtype=np.float32)

    def torch_blocking():
        out = hvd.allreduce(tensor, name="perop.torch", op=hvd.Sum)
        assert out[0].item() == size

    def torch_unnamed():
        hvd.allreduce(tensor, op=hvd.Sum)

    def numpy_blocking():
        out = kolo.allreduce(array, name="perop.numpy", op=kolo.Sum)
        assert out[0] == size

    batch = [torch.ones(2, dtype=torch.float32) for _ in range(BATCH)]
    names = [f"perop.async.{i}" for i in range(BATCH)]

    def torch_async():
        handles = [hvd.allreduce_async_(t, name=n, op=hvd.Sum) for t, n in zip(batch, names)]
        for h in handles:
            hvd.synchronize(h)

    cases = [("hvd.torch allreduce 8 B (named)", torch_blocking, iters),
             ("hvd.torch allreduce 8 B (unnamed)", torch_unnamed, iters),
             ("kolo numpy allreduce 8 B (named)", numpy_blocking, iters),
             (f"hvd.torch async {BATCH} x 8 B, per tensor", torch_async, max(10, iters // BATCH))]
    if kolo is None:
        cases = [(HOROVOD_LABEL + label, one, n) for label, one, n in cases
                 if "numpy" not in label]
    for label, one, n in cases:
        samples = measure(one, n, max(2, warmup // (BATCH if "async" in label else 1)))
        if "async" in label:
            samples = [s / BATCH for s in samples]
            for t in batch:  # in place, Sum: each round multiplied the values by size
                t.fill_(1.0)
        if hvd.rank() == 0:
            print(f"{label}\t{statistics.median(samples):.2f}\t{percentile(samples, 0.9):.2f}",
                  flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
