"""hvd.init(comm=...) under mpirun: a list of every rank (or, with mpi4py, MPI.COMM_WORLD or a
duplicate) is the whole job; a subset is refused with a pointer to process sets."""

import os
import sys

import numpy as np

import horovod.torch as hvd
import kolo


def main() -> None:
    size = int(sys.argv[1])
    try:
        hvd.init(comm=[0])
        raise AssertionError("a subset of ranks was accepted")
    except ValueError as error:
        assert "process sets" in str(error), error
    assert not hvd.is_initialized()
    hvd.init(comm=list(reversed(range(size))))
    assert hvd.size() == size
    got = kolo.allreduce(np.ones(4), op=kolo.Sum, name="list")
    assert np.all(got == size)
    hvd.shutdown()
    if len(sys.argv) > 2 and sys.argv[2] == "mpi4py":
        from mpi4py import MPI

        hvd.init(comm=MPI.COMM_WORLD.Dup())
        assert hvd.size() == MPI.COMM_WORLD.Get_size() and hvd.rank() == MPI.COMM_WORLD.Get_rank()
        hvd.shutdown()
        half = MPI.COMM_WORLD.Split(color=MPI.COMM_WORLD.Get_rank() % 2)
        try:
            hvd.init(comm=half)
            raise AssertionError("a sub-communicator was accepted")
        except ValueError as error:
            assert "process sets" in str(error), error
    print(f"rank {os.environ['OMPI_COMM_WORLD_RANK']} OK")


if __name__ == "__main__":
    main()
