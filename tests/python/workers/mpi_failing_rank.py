"""Under plain mpirun, rank 1 fails right after a first allreduce (an uncaught exception, or
sys.exit with a status) while every other rank sleeps far longer than the test waits (as a rank
writing a checkpoint would): the failing rank must end without waiting in MPI_Finalize for them,
so that mpirun ends the whole job."""

import sys
import time

import numpy as np

import kolo


def main() -> None:
    how, sleep_s = sys.argv[1], float(sys.argv[2])
    kolo.init()
    rank = kolo.rank()
    kolo.allreduce(np.ones(2, np.float32), name="before")
    print(f"rank {rank} ready", flush=True)
    if rank == 1:
        if how == "raise":
            raise RuntimeError("rank 1 fails outside any collective")
        sys.exit(int(how))
    time.sleep(sleep_s)
    print(f"rank {rank} woke up", flush=True)


if __name__ == "__main__":
    main()
