"""torch.distributed (gloo) collectives timed in kolo-bench's terms; one process per rank.

Started by bench/compare/compare.py with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set:
    gloo_collectives.py COLLECTIVES MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP
COLLECTIVES, a comma list: allreduce (all_reduce, in place), allgather (all_gather_single;
before torch 2.13 all_gather_into_tensor), broadcast (from rank 0), reducescatter
(reduce_scatter_single; before, reduce_scatter_tensor), alltoall (all_to_all_single); float32,
sum. gloo on CPU has all five in torch 2.13.
Rank 0 prints "collective bytes time_us wrong" per size: the slowest rank's mean per iteration,
and the elements (over all ranks) of a first, checked run that differ from the expected result.
Sizes and inputs as mpi_collectives.c: the size is the whole buffer (allgather: the gathered
output; reducescatter: the input; alltoall: one rank's send buffer), rounded down to whole
elements per rank, at least one. A collective this torch's gloo lacks prints "collective
unsupported: <why>" and is skipped.
"""
import sys
import time

import torch
import torch.distributed as dist

# torch 2.13 renamed the tensor forms (the old names warn); older torch has only the old names.
all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor

def value(seed: torch.Tensor | int, i: torch.Tensor) -> torch.Tensor:
    return ((seed + i) % 4 + 1).to(torch.float32)


def time_collective(collective: str, min_bytes: int, max_bytes: int, factor: int, iters: int,
                    warmup: int) -> None:
    rank, ranks = dist.get_rank(), dist.get_world_size()
    whole = collective in ("allreduce", "broadcast")

    def case(bytes_: int):
        """(run, check, size in bytes) for one size."""
        per = max(1, bytes_ // 4 // (1 if whole else ranks))
        total = per if whole else per * ranks
        i = torch.arange(total, dtype=torch.int32)
        if collective == "allreduce":
            data = value(rank, i)

            def check() -> int:
                want = sum(value(r, i) for r in range(ranks))
                return int((data != want).sum())
            return (lambda: dist.all_reduce(data)), check, total * 4
        if collective == "broadcast":
            data = value(rank, i)
            return (lambda: dist.broadcast(data, 0)), \
                (lambda: int((data != value(0, i)).sum())), total * 4
        if collective == "allgather":
            mine, out = value(rank, torch.arange(per, dtype=torch.int32)), torch.empty(total)
            return (lambda: all_gather(out, mine)), \
                (lambda: int((out != value(i // per, i % per)).sum())), total * 4
        if collective == "reducescatter":
            data, out = value(rank, i), torch.empty(per)
            j = torch.arange(per, dtype=torch.int32) + rank * per

            def check() -> int:
                return int((out != sum(value(r, j) for r in range(ranks))).sum())
            return (lambda: reduce_scatter(out, data)), check, total * 4
        if collective == "alltoall":
            data, out = value(rank * ranks + i // per, i % per), torch.empty(total)
            return (lambda: dist.all_to_all_single(out, data)), \
                (lambda: int((out != value(i // per * ranks + rank, i % per)).sum())), total * 4
        raise SystemExit(f"gloo_collectives: unknown collective {collective}")

    bytes_ = min_bytes
    while bytes_ <= max_bytes:
        run, check, size = case(bytes_)
        try:
            run()
        except RuntimeError as e:  # e.g. an older torch whose gloo lacks the collective
            if rank == 0:
                print(f"{collective} unsupported: {str(e).splitlines()[0]}", flush=True)
            return
        wrong = torch.tensor([check()], dtype=torch.int64)
        dist.all_reduce(wrong)
        for _ in range(warmup):
            run()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            run()
        mean = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
        dist.all_reduce(mean, op=dist.ReduceOp.MAX)
        if rank == 0:
            print(f"{collective} {size} {mean.item() * 1e6:.3f} {wrong.item()}", flush=True)
        bytes_ = max_bytes + 1 if bytes_ == max_bytes else min(bytes_ * factor, max_bytes)


def main() -> None:
    collectives = sys.argv[1].split(",")
    sizes = [int(a) for a in sys.argv[2:7]]
    dist.init_process_group("gloo")
    for collective in collectives:
        time_collective(collective, *sizes)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
