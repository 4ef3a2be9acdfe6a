"""torch.distributed (gloo) allreduce timing in kolo-bench's terms; one process per rank.

Started by bench/compare/compare.py with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set:
    gloo_allreduce.py MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP
Rank 0 prints "bytes time_us" per size (slowest rank's mean per iteration), float32 sum.
"""
import sys
import time

import torch
import torch.distributed as dist


def main() -> None:
    min_bytes, max_bytes, factor, iters, warmup = (int(a) for a in sys.argv[1:6])
    dist.init_process_group("gloo")
    bytes_ = min_bytes
    while bytes_ <= max_bytes:
        data = (torch.arange(bytes_ // 4, dtype=torch.float32) % 4) + 1
        for _ in range(warmup):
            dist.all_reduce(data)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(data)
        mean = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
        dist.all_reduce(mean, op=dist.ReduceOp.MAX)
        if dist.get_rank() == 0:
            print(f"{(bytes_ // 4) * 4} {mean.item() * 1e6:.3f}", flush=True)
        bytes_ = max_bytes + 1 if bytes_ == max_bytes else min(bytes_ * factor, max_bytes)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
