"""A rank started by mpirun that dies of an uncaught exception ends at once, and so does its job.

When mpirun (or srun) starts a rank without kolorun, kolo initializes MPI to exchange the
rendezvous address and finalizes it only when the process exits (a job may shut kolo down and
initialize it again; MPI cannot be initialized twice). MPI_Finalize waits for every rank: a rank
failing while its peers compute, sleep or write a checkpoint would wait there, alive, and mpirun,
which ends a job as soon as one of its processes exits in failure, would learn of the failure only
once every other rank had finished. Horovod's ranks finalize MPI together at shutdown, so there
mpirun ends such a job at once (Horovod's own test_failed_run expects it within a minute).

kolo's way: the excepthook installed here marks the process as failing, and the core's exit
handler, which runs before MPI_Finalize, ends it with CPython's status for an uncaught exception
without finalizing MPI; mpirun then reports the rank and ends the job. kolo's shutdown still runs
first (Python's atexit), so peers inside a collective fail naming the rank meanwhile. An
interactive session (``python -i``, a REPL) goes on after an exception, so it is left alone.
"""

from __future__ import annotations

import sys

from kolo import _core

_installed = False


def install() -> None:
    """Chains the hook in front of sys.excepthook, once, where kolo initialized MPI."""
    global _installed
    if _installed or not _core.mpi_initialized():
        return
    previous = sys.excepthook

    def failing(kind, value, traceback):
        if not _interactive():
            # CPython ends an uncaught KeyboardInterrupt with SIGINT itself (no exit handlers
            # run then); 130 is the shell's status for it, should that fail.
            exiting_in_failure(130 if issubclass(kind, KeyboardInterrupt) else 1)
        previous(kind, value, traceback)

    sys.excepthook = failing
    _installed = True


def exiting_in_failure(status: int) -> None:
    """This process is ending with `status` after a failure it reported itself (an uncaught
    exception; horovod.run's task after the function raised): its exit skips MPI_Finalize where
    kolo initialized MPI, and does nothing more elsewhere."""
    _core.exit_without_mpi_finalize(status)


def _interactive() -> bool:
    return hasattr(sys, "ps1") or bool(sys.flags.interactive)
