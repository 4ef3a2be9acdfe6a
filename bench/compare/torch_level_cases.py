"""One rank of bench/compare/torch_level.py: blocking horovod.torch collectives at a few sizes,
each call timed alone. Under kolorun `horovod.torch` is kolo's; in bench/horovod_reference's
venv under its horovodrun it is the real Horovod 0.28.1: the same body measures both.

    torch_level_cases.py COLLECTIVES SIZES   (comma lists: allreduce,allgather,broadcast; bytes)

Rank 0 prints "collective<TAB>bytes<TAB>median_us" per case. Sizes as bench/compare's: the
buffer (allreduce, broadcast) or the gathered output (allgather), float32. The first call of
every case is checked against the expected result, so a fast wrong answer cannot pass.
"""
from __future__ import annotations

import statistics
import sys
import time

import torch

import horovod.torch as hvd


def iterations(size: int) -> tuple[int, int]:
    """(timed calls, warm-up calls): enough for a stable median, 16 MiB still affordable."""
    if size <= 64 << 10:
        return 400, 40
    if size <= 2 << 20:
        return 100, 10
    return 20, 3


def case(collective: str, size: int, rank: int, ranks: int):
    """The call to time and its expected first result."""
    name = f"torch_level.{collective}.{size}"
    if collective == "allreduce":
        data = torch.full((max(1, size // 4),), float(rank + 1))
        return (lambda: hvd.allreduce(data, name=name, op=hvd.Sum),
                torch.full_like(data, ranks * (ranks + 1) / 2))
    if collective == "allgather":
        per_rank = max(1, size // 4 // ranks)
        data = torch.full((per_rank,), float(rank))
        expected = torch.arange(ranks, dtype=torch.float32).repeat_interleave(per_rank)
        return lambda: hvd.allgather(data, name=name), expected
    if collective == "broadcast":
        data = torch.full((max(1, size // 4),), float(rank + 7))
        return lambda: hvd.broadcast(data, root_rank=0, name=name), torch.full_like(data, 7.0)
    raise SystemExit(f"torch_level_cases: unknown collective '{collective}'")


def main() -> None:
    collectives, sizes = sys.argv[1].split(","), [int(s) for s in sys.argv[2].split(",")]
    hvd.init()
    torch.set_num_threads(1)
    for collective in collectives:
        for size in sizes:
            call, expected = case(collective, size, hvd.rank(), hvd.size())
            if not torch.equal(call(), expected):
                raise SystemExit(f"rank {hvd.rank()}: {collective} of {size} B gave a wrong "
                                 "result")
            iters, warmup = iterations(size)
            for _ in range(warmup):
                call()
            hvd.barrier()
            samples = []
            for _ in range(iters):
                start = time.perf_counter_ns()
                call()
                samples.append((time.perf_counter_ns() - start) / 1e3)
            if hvd.rank() == 0:
                print(f"{collective}\t{size}\t{statistics.median(samples):.2f}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
