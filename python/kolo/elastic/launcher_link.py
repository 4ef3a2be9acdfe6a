"""What an elastic worker learns from and tells kolorun, through the rendezvous store that the
C++ core already talks to: whether the hosts changed (the launcher's ``kolo/elastic/hosts_updated``
key) and the number of the last commit (``kolo/elastic/commit``, printed by kolorun when it
reports a membership change).

Outside elastic mode (no ``KOLO_ELASTIC=1``, e.g. ``kolorun -np 2`` or a single process) there is
no launcher to ask: hosts never change and commits are not published.
"""

from __future__ import annotations

import enum
import os

from kolo import _core


class HostUpdateResult(enum.IntFlag):
    """What changed in the job's hosts (Horovod's ``horovod.runner.elastic.worker`` flags)."""

    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


_KIND_TO_RESULT = {"": HostUpdateResult.no_update, "removed": HostUpdateResult.removed,
                   "added": HostUpdateResult.added, "mixed": HostUpdateResult.mixed}


def elastic_mode() -> bool:
    """Whether kolorun started this process as an elastic worker."""
    return os.environ.get("KOLO_ELASTIC") == "1" and hasattr(_core, "elastic_hosts_updated")


def hosts_updated() -> tuple[int, HostUpdateResult]:
    """(stamp, what changed) of the launcher's latest host change; (0, no_update) if none or
    outside elastic mode. The stamp only grows, so a larger one means news."""
    if not elastic_mode():
        return 0, HostUpdateResult.no_update
    stamp, kind = _core.elastic_hosts_updated()
    if kind not in _KIND_TO_RESULT:
        raise ValueError(f"kolo elastic: the launcher reported a host change of unknown kind "
                         f"{kind!r} (stamp {stamp}); expected added, removed or mixed")
    return int(stamp), _KIND_TO_RESULT[kind]


def publish_commit(number: int) -> None:
    """Tells kolorun that commit `number` is the one a reset now rolls back to (rank 0 only)."""
    if elastic_mode() and hasattr(_core, "elastic_commit"):
        _core.elastic_commit(int(number))


def reset_limit() -> int | None:
    """The most resets this worker accepts (kolorun's --reset-limit, passed as KOLO_RESET_LIMIT,
    or HOROVOD_RESET_LIMIT); None: no limit."""
    for name in ("KOLO_RESET_LIMIT", "HOROVOD_RESET_LIMIT"):
        text = os.environ.get(name)
        if text:
            try:
                limit = int(text)
            except ValueError:
                raise ValueError(f"kolo elastic: {name}={text!r} is not a whole number") from None
            if limit < 0:
                raise ValueError(f"kolo elastic: {name}={limit} is negative")
            return limit
    return None
