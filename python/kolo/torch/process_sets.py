"""Process sets, as ``horovod.common.process_sets``: kolo's core runs the global set only.

Scripts pass ``process_set=hvd.global_process_set`` (the default everywhere); asking for another set
fails at once with a clear message instead of hanging.
"""

from __future__ import annotations

from typing import Optional, Sequence

from kolo import _core


class ProcessSet:
    """A group of ranks that collectives may be limited to (only the global set is supported)."""

    def __init__(self, ranks: Optional[Sequence[int]] = None) -> None:
        self.ranks = list(ranks) if ranks is not None else None
        self.process_set_id: Optional[int] = 0 if ranks is None else None

    def size(self) -> int:
        """Number of ranks in the set."""
        return len(self.ranks) if self.ranks is not None else _core.size()

    def rank(self) -> int:
        """This process's rank within the set."""
        if self.ranks is None:
            return _core.rank()
        return self.ranks.index(_core.rank())

    def included(self) -> bool:
        """Whether this process belongs to the set."""
        return self.ranks is None or _core.rank() in self.ranks

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProcessSet) and self.process_set_id == other.process_set_id \
            and self.ranks == other.ranks

    def __hash__(self) -> int:
        return hash(self.process_set_id)

    def __repr__(self) -> str:
        if self.ranks is None:
            return "ProcessSet(process_set_id=0, ranks=<all>)"
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


global_process_set = ProcessSet()


def _unsupported() -> NotImplementedError:
    return NotImplementedError(
        "kolo runs collectives on the global process set only; process sets other than "
        "hvd.global_process_set are not supported by this version")


def add_process_set(process_set) -> ProcessSet:
    """Not supported: kolo's core has only the global process set."""
    raise _unsupported()


def remove_process_set(process_set: ProcessSet) -> bool:
    """Not supported: kolo's core has only the global process set."""
    raise _unsupported()


def check_process_set(process_set: ProcessSet) -> int:
    """The core's id for `process_set`; raises for any set but the global one."""
    if process_set is None or process_set is global_process_set:
        return 0
    if isinstance(process_set, ProcessSet) and process_set.process_set_id == 0:
        return 0
    raise _unsupported()
