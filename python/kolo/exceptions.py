"""kolo's exception classes, which are Horovod's (``horovod.common.exceptions``).

- ``KoloError`` *is* ``HorovodInternalError``, a ``RuntimeError``: a collective failed between
  ranks (shapes, dtypes, root ranks or splits that differ, an op Horovod refuses while a rank has
  joined, a dead or silent peer, the job shutting down). Horovod's scripts catch it by either
  name, or as ``RuntimeError``; elastic training treats it as recoverable.
- ``KoloValueError`` is a ``ValueError`` (not a KoloError): an argument that is wrong before
  anything is sent (a name already in flight, splits that do not fit the tensor, a process set
  this rank is not in). Horovod raises ``ValueError`` there too; it is not a
  ``HorovodInternalError`` so that elastic training does not retry a programming error forever.
- ``HostsUpdatedInterrupt`` (a ``RuntimeError``) is what elastic
  training raises when the hosts changed; ``skip_sync`` says whether the state needs no resync.
- ``WorkerRemovedError`` (a ``RuntimeError``, not a KoloError): an elastic worker's ``init()``
  found that the new membership round leaves it out (its host was removed); ``elastic.run``
  ends such a worker with exit status 0 rather than retrying.

Every message names the rank, the tensor and what differed.
"""

from __future__ import annotations

from kolo._core import KoloError, KoloValueError

__all__ = ["KoloError", "KoloValueError", "HorovodInternalError", "HostsUpdatedInterrupt",
           "HorovodVersionMismatchError", "WorkerRemovedError", "get_version_mismatch_message"]

HorovodInternalError = KoloError

try:  # raised by the core's elastic init (kolo._core defines it where elastic mode is built)
    from kolo._core import WorkerRemovedError
except ImportError:
    class WorkerRemovedError(RuntimeError):  # type: ignore[no-redef]
        """This elastic worker is not part of the new membership round: its host left."""


class HostsUpdatedInterrupt(RuntimeError):
    """Raised (by elastic training) when the job's hosts changed; ``skip_sync`` says whether the
    state may skip its sync because nothing was lost."""

    def __init__(self, skip_sync):
        super().__init__()
        self.skip_sync = skip_sync


def get_version_mismatch_message(name, version, installed_version):
    """The text Horovod shows when a framework differs from the one it was built against."""
    return (f"Framework {name} installed with version {installed_version} but found version "
            f"{version}. kolo is not compiled against {name}, so this does not stop it; "
            f"reinstall {name} if the two were meant to be the same.")


class HorovodVersionMismatchError(ImportError):
    """A framework's version differs from the one the extension was built against (never raised
    by kolo itself: kolo is not built against any framework)."""

    def __init__(self, name, version, installed_version):
        super().__init__(get_version_mismatch_message(name, version, installed_version))
        self.name = name
        self.version = version
        self.installed_version = installed_version
