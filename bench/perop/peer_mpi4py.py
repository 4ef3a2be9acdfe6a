"""OpenMPI through mpi4py: blocking 8-byte MPI_Allreduce on a NumPy array, under mpirun
(bench/perop/run.py):

    peer_mpi4py.py ITERS WARMUP

Rank 0 prints "case median_us p90_us" over calls timed one by one.
"""
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI


def main() -> None:
    iters, warmup = int(sys.argv[1]), int(sys.argv[2])
    comm = MPI.COMM_WORLD
    data = np.ones(2, dtype=np.float32)  # 8 bytes
    for _ in range(warmup):
        comm.Allreduce(MPI.IN_PLACE, data, op=MPI.SUM)
    comm.Barrier()
    samples = []
    for _ in range(iters):
        start = time.perf_counter_ns()
        comm.Allreduce(MPI.IN_PLACE, data, op=MPI.SUM)
        samples.append((time.perf_counter_ns() - start) / 1e3)
    samples.sort()
    if comm.Get_rank() == 0:
        print(f"mpi4py Allreduce 8 B\t{statistics.median(samples):.2f}\t"
              f"{samples[int(0.9 * len(samples))]:.2f}", flush=True)


if __name__ == "__main__":
    main()
