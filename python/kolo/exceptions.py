"""kolo's exception classes, which are Horovod's (``horovod.common.exceptions``).

- ``KoloError`` *is* ``HorovodInternalError``, a ``RuntimeError``: a collective failed between
  ranks (shapes, dtypes, root ranks or splits that differ, an op Horovod refuses while a rank has
  joined, a dead or silent peer, the job shutting down). Horovod's scripts catch it by either
  name, or as ``RuntimeError``; elastic training treats it as recoverable.
- ``KoloValueError`` is a ``ValueError`` (not a KoloError): an argument that is wrong before
  anything is sent (a name already in flight, splits that do not fit the tensor, a process set
  this rank is not in). Horovod raises ``ValueError`` there too; it is not a
  ``HorovodInternalError`` so that elastic training does not retry a programming error forever.
- ``HostsUpdatedInterrupt`` (a ``RuntimeError``, from ``kolo.horovod_common``) is what elastic
  training raises when the hosts changed; ``skip_sync`` says whether the state needs no resync.
- ``WorkerRemovedError`` (a ``RuntimeError``, not a KoloError): an elastic worker's ``init()``
  found that the new membership round leaves it out (its host was removed); ``elastic.run``
  ends such a worker with exit status 0 rather than retrying.

Every message names the rank, the tensor and what differed.
"""

from __future__ import annotations

from kolo._core import KoloError, KoloValueError
from kolo.horovod_common import (  # noqa: F401  (defined with horovod.common's other names)
    HorovodVersionMismatchError, HostsUpdatedInterrupt, get_version_mismatch_message)

__all__ = ["KoloError", "KoloValueError", "HorovodInternalError", "HostsUpdatedInterrupt",
           "HorovodVersionMismatchError", "WorkerRemovedError", "get_version_mismatch_message"]

HorovodInternalError = KoloError

try:  # raised by the core's elastic init (kolo._core defines it where elastic mode is built)
    from kolo._core import WorkerRemovedError
except ImportError:
    class WorkerRemovedError(RuntimeError):  # type: ignore[no-redef]
        """This elastic worker is not part of the new membership round: its host left."""
