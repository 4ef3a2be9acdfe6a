"""kolo's exception classes, which are Horovod's (``horovod.common.exceptions``).

- ``KoloError`` *is* ``HorovodInternalError``, a ``RuntimeError``: a collective failed between
  ranks (shapes, dtypes, root ranks or splits that differ, an op Horovod refuses while a rank has
  joined, a dead or silent peer, the job shutting down). Horovod's scripts catch it by either
  name, or as ``RuntimeError``; elastic training treats it as recoverable.
- ``KoloValueError`` is a ``ValueError`` (not a KoloError): an argument that is wrong before
  anything is sent (a name already in flight, splits that do not fit the tensor, a process set
  this rank is not in). Horovod raises ``ValueError`` there too; it is not a
  ``HorovodInternalError`` so that elastic training does not retry a programming error forever.
- ``HostsUpdatedInterrupt`` (a ``RuntimeError``) is what elastic training raises when the hosts
  changed; ``skip_sync`` says whether the state needs no resync.

Every message names the rank, the tensor and what differed.
"""

from __future__ import annotations

from kolo._core import KoloError, KoloValueError

__all__ = ["KoloError", "KoloValueError", "HorovodInternalError", "HostsUpdatedInterrupt",
           "HorovodVersionMismatchError", "get_version_mismatch_message"]

HorovodInternalError = KoloError


class HostsUpdatedInterrupt(RuntimeError):
    """The set of hosts of an elastic job changed; the job resets (without restoring the last
    commit when ``skip_sync`` is true)."""

    def __init__(self, skip_sync: bool) -> None:
        super().__init__(f"the hosts of the job changed (skip_sync={skip_sync})")
        self.skip_sync = skip_sync


def get_version_mismatch_message(name: str, version: str, installed_version: str) -> str:
    return (f"{name} is installed in version {installed_version}, but version {version} was "
            f"found at run time. kolo is built against no framework (tensors cross through "
            f"DLPack), so this only matters to code that checks it.")


class HorovodVersionMismatchError(ImportError):
    """Horovod's error for a framework whose version differs from the one it was built with."""

    def __init__(self, name: str, version: str, installed_version: str) -> None:
        super().__init__(get_version_mismatch_message(name, version, installed_version))
        self.name = name
        self.version = version
        self.installed_version = installed_version
