"""Blocking calls drive their own cycles (core/session.h, Session::drive): hvd.allreduce,
allreduce_, broadcast_ through horovod.torch and kolo.allreduce / broadcast on NumPy give the right
results, mixed with async operations that the background thread finishes, and, unless
KOLO_CALLER_DRIVES=0 or over TCP, the cycles ran on this thread (stats' driven_cycles): argv[1]
is "driven" or "not-driven". Prints "DRIVEN <driven cycles> OF <cycles>"."""

import sys

import numpy as np
import torch

import horovod.torch as hvd
import kolo
from kolo import _core

CALLS = 60


def main() -> None:
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    expected_sum = size * (size - 1) / 2
    before = _core.stats()
    for i in range(CALLS):
        out = hvd.allreduce(torch.full((3,), float(rank + i)), op=hvd.Sum, name="drive.torch")
        assert out.tolist() == [size * i + expected_sum] * 3, (i, out)
        array = kolo.allreduce(np.full(5, rank, dtype=np.float32), name="drive.numpy", op=kolo.Sum)
        assert array.tolist() == [expected_sum] * 5, (i, array)
        inplace = torch.full((2,), float(rank))
        hvd.allreduce_(inplace, op=hvd.Sum, name="drive.inplace")
        assert inplace.tolist() == [expected_sum] * 2, (i, inplace)
        root = i % size
        sent = torch.full((4,), float(rank * 10 + i))
        hvd.broadcast_(sent, root_rank=root, name="drive.broadcast")
        assert sent.tolist() == [float(root * 10 + i)] * 4, (i, sent)
        got = kolo.broadcast(np.full(2, rank, dtype=np.int64), root_rank=root, name="drive.nb")
        assert got.tolist() == [root] * 2, (i, got)

    # Async work beside a blocking call: the blocking call completes first or with them, and the
    # background thread finishes what is left once the caller stops driving.
    async_tensors = [torch.full((64,), float(rank)) for _ in range(10)]
    handles = [hvd.allreduce_async_(t, op=hvd.Sum, name=f"async.{j}")
               for j, t in enumerate(async_tensors)]
    blocking = hvd.allreduce(torch.ones(1), op=hvd.Sum, name="beside.async")
    assert blocking.item() == size, blocking
    for handle, tensor in zip(handles, async_tensors):
        hvd.synchronize(handle)
        assert tensor[0].item() == expected_sum, tensor

    after = _core.stats()
    driven = after["driven_cycles"] - before["driven_cycles"]
    cycles = after["cycles"] - before["cycles"]
    print(f"DRIVEN {driven} OF {cycles}", flush=True)
    if sys.argv[1] == "not-driven":
        assert driven == 0, driven
    else:
        # Every blocking call completed through at least one cycle of its own caller's.
        assert driven >= 5 * CALLS, (driven, cycles)
    print(f"rank {rank} OK", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
