"""Under plain mpirun, rank 1 raises an uncaught exception right after a first allreduce while
every other rank sleeps far longer than the test waits (as a rank writing a checkpoint would):
the failing rank must end without waiting in MPI_Finalize, so that mpirun ends the whole job."""

import sys
import time

import numpy as np

import kolo


def main() -> None:
    kolo.init()
    rank = kolo.rank()
    kolo.allreduce(np.ones(2, np.float32), name="before")
    assert sys.excepthook is not sys.__excepthook__, "kolo did not chain its excepthook"
    print(f"rank {rank} ready", flush=True)
    if rank == 1:
        raise RuntimeError("rank 1 fails outside any collective")
    time.sleep(float(sys.argv[1]))
    print(f"rank {rank} woke up: the job was not ended", flush=True)


if __name__ == "__main__":
    main()
