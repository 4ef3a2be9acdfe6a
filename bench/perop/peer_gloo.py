"""torch.distributed (gloo) blocking 8-byte all_reduce, one process per rank (bench/perop/run.py
starts them with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set):

    peer_gloo.py ITERS WARMUP

Rank 0 prints "case median_us p90_us" over calls timed one by one.
"""
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main() -> None:
    iters, warmup = int(sys.argv[1]), int(sys.argv[2])
    dist.init_process_group("gloo")
    torch.set_num_threads(1)
    data = torch.ones(2, dtype=torch.float32)  # 8 bytes
    for _ in range(warmup):
        dist.all_reduce(data)
    dist.barrier()
    samples = []
    for _ in range(iters):
        start = time.perf_counter_ns()
        dist.all_reduce(data)
        samples.append((time.perf_counter_ns() - start) / 1e3)
    samples.sort()
    if dist.get_rank() == 0:
        print(f"gloo all_reduce 8 B\t{statistics.median(samples):.2f}\t"
              f"{samples[int(0.9 * len(samples))]:.2f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
