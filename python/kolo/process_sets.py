"""Process sets, as ``horovod.common.process_sets``: groups of ranks that run collectives together.

Framework-free (no torch import): ``horovod.common.process_sets`` and ``kolo.torch`` share these
very objects.

    even = hvd.ProcessSet([0, 2])
    hvd.init(process_sets=[even])             # or hvd.init(process_sets="dynamic") and later
    odd = hvd.add_process_set([1, 3])         # (needs HOROVOD_DYNAMIC_PROCESS_SETS=1)
    hvd.allreduce(t, process_set=even)        # only ranks 0 and 2 call it

The core gives each set its own communicator and negotiation, so a set's operations never wait
for another set's. Adding and removing sets is collective over all ranks (every rank calls it, in
the same order); ids are assigned in that order, the same on every rank.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from kolo import _core
from kolo.mpi_comm_sets import gather_comm_sets, is_mpi_comm as _is_mpi_comm, world_ranks


class ProcessSet:
    """A group of ranks (sorted world ranks) that collectives may be limited to.

    Pass it to ``hvd.init(process_sets=[...])`` or ``hvd.add_process_set()``; until then it has
    no ``process_set_id`` and ``size()``, ``rank()`` and ``included()`` return None.
    """

    process_set_id: Optional[int] = None
    ranks: Optional[List[int]] = None
    mpi_comm = None

    def __init__(self, ranks_or_comm) -> None:
        if _is_mpi_comm(ranks_or_comm):
            # Its ranks are known once hvd.init(comm=...) has gathered every rank's communicators.
            self.mpi_comm = ranks_or_comm
            return
        try:
            ranks = sorted(ranks_or_comm)
        except TypeError:
            raise ValueError("ProcessSet should be initialized with a list of process ranks or an "
                             f"mpi4py Comm object, got {type(ranks_or_comm).__name__}") from None
        if any(not isinstance(r, int) for r in ranks):
            raise ValueError("ProcessSet should be initialized with a list of process ranks")
        self.ranks = ranks

    def _core_ranks(self) -> Optional[List[int]]:
        if self.process_set_id is None or not _core.is_initialized():
            return None
        return list(_core.process_set_ranks(self.process_set_id))

    def size(self) -> Optional[int]:
        """Number of ranks in the set (None if not registered)."""
        ranks = self._core_ranks()
        return None if ranks is None else len(ranks)

    def rank(self) -> Optional[int]:
        """This process's rank within the set, 0 to size() - 1 (None if not registered); raises
        ValueError if this process is not in the set."""
        ranks = self._core_ranks()
        if ranks is None:
            return None
        me = _core.rank()
        if me not in ranks:
            raise ValueError(f"Process is not part of provided process set: rank {me} is not in "
                             f"process set {self.process_set_id} (ranks {ranks})")
        return ranks.index(me)

    def included(self) -> Optional[bool]:
        """Whether this process belongs to the set (None if not registered)."""
        ranks = self._core_ranks()
        return None if ranks is None else _core.rank() in ranks

    def invalidate(self) -> None:
        """Forgets the registration (after remove_process_set); the ranks stay, as Horovod's, so
        the set can be added again."""
        self.process_set_id = None

    def __str__(self) -> str:
        return (f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, "
                f"mpi_comm={self.mpi_comm})")

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0

# Every registered id -> the ProcessSet objects standing for it (the first one is canonical).
_id_to_process_sets: Dict[int, List[ProcessSet]] = {0: [global_process_set]}


def init_argument(process_sets) -> tuple[list, Optional[bool], List[List[int]]]:
    """What ``init(process_sets=...)`` asks for: (the sets to register at init, whether adding
    and removing sets later is allowed, or None to leave that to HOROVOD_DYNAMIC_PROCESS_SETS,
    and the rank lists gathered from every rank's MPI communicators, to register first).
    ``"dynamic"`` means no sets now and adding later allowed, as Horovod; the core is told so
    directly, whatever the environment says. Sets defined by communicators need the global one
    (``hvd.init(comm=MPI_comm)`` sets ``global_process_set.mpi_comm``); gathering them is
    collective over it, so it runs at every init, as Horovod's."""
    if isinstance(process_sets, str):
        if process_sets.lower() != "dynamic":
            raise ValueError(f"process_sets must be a list of hvd.ProcessSet or \"dynamic\", "
                             f"got {process_sets!r}")
        return [], True, []
    wanted = list(process_sets or [])
    for index, ps in enumerate(wanted):
        if not isinstance(ps, ProcessSet):
            raise ValueError(f"process_sets entry number {index} is not a hvd.ProcessSet: {ps!r}")
    by_comm = [ps.mpi_comm for ps in wanted if ps.ranks is None and ps.mpi_comm is not None]
    if not by_comm:
        return wanted, None, []
    if global_process_set.mpi_comm is None:
        raise NotImplementedError(
            "At this time process sets defined via MPI communicators are only supported when "
            "calling hvd.init() with comm set to a global MPI communicator.")
    return wanted, None, gather_comm_sets(global_process_set.mpi_comm, by_comm)


def register_at_init(process_sets: Sequence[ProcessSet], gathered: Sequence[List[int]]) -> None:
    """Called by init() once the core runs a new session: registers the distinct rank lists of
    `gathered` (from MPI communicators) and then of `process_sets`, ids 1, 2, ... in that order,
    the same on every rank, whatever HOROVOD_DYNAMIC_PROCESS_SETS says; then gives each entry
    its id (``map_to_registered``)."""
    if gathered:
        _check_comm_matches_job()
    _id_to_process_sets.clear()
    _id_to_process_sets[0] = [global_process_set]
    global_process_set.ranks = list(range(_core.size()))
    registered = {tuple(global_process_set.ranks)}
    for ranks in [*gathered, *(ps.ranks for ps in process_sets if ps.ranks is not None)]:
        key = tuple(sorted(ranks))
        if key in registered:
            continue
        registered.add(key)
        canonical = ProcessSet(list(key))
        canonical.process_set_id = int(_core.add_process_set(list(key), during_init=True))
        _id_to_process_sets[canonical.process_set_id] = [canonical]
    map_to_registered(process_sets)


def _check_comm_matches_job() -> None:
    """Sets from communicators name ranks of hvd.init's comm: they must be the job's ranks."""
    comm = global_process_set.mpi_comm
    if (comm.Get_rank(), comm.Get_size()) != (_core.rank(), _core.size()):
        raise ValueError(
            "process sets defined by MPI communicators: this process is rank "
            f"{comm.Get_rank()} of {comm.Get_size()} in hvd.init's comm but rank {_core.rank()} "
            f"of {_core.size()} in the job; launch the job with mpirun (or kolorun --mpi) so that "
            "the two agree")


def _entry_ranks(index: int, ps: ProcessSet) -> List[int]:
    if ps.ranks is not None or ps.mpi_comm is None:
        return list(ps.ranks or ())
    _check_comm_matches_job()
    return world_ranks(ps.mpi_comm, global_process_set.mpi_comm,
                       f"process_sets entry number {index}")


def map_to_registered(process_sets: Sequence[ProcessSet]) -> None:
    """What every ``hvd.init(process_sets=[...])`` does, as Horovod's: each entry gets the id of
    the registered set with its ranks (registered at this session's first init). An entry that
    repeats an earlier one or the global set loses its id and, once the others have theirs,
    ValueError names it (Horovod raises it after registering the distinct sets, so a later
    init() with the list corrected goes on)."""
    by_ranks = {tuple(ranks): set_id for set_id, ranks in ids_and_ranks().items()}
    seen = {0}
    duplicate = None
    for index, ps in enumerate(process_sets):
        key = tuple(_entry_ranks(index, ps))
        if key not in by_ranks:
            raise ValueError(
                f"process_sets entry number {index}, {ps}, is not a registered process set: an "
                "init() while initialized only maps its sets to those of the first init() "
                f"(registered: {sorted(by_ranks.values())}); call hvd.shutdown() first to "
                "register others, or add them with hvd.add_process_set()")
        set_id = by_ranks[key]
        ps.ranks = list(key)  # a set from a communicator learns its ranks here, as Horovod's
        if set_id in seen:
            ps.process_set_id = None
            duplicate = duplicate or (index, ps)
            continue
        seen.add(set_id)
        ps.process_set_id = set_id
        holders = _id_to_process_sets.setdefault(set_id, [])
        if not any(holder is ps for holder in holders):
            holders.append(ps)
    if duplicate is not None:
        raise ValueError(f"Horovod could not be initialized because process_sets entry number "
                         f"{duplicate[0]} is a duplicate: {duplicate[1]}")


def _dynamic_enabled() -> bool:
    return bool(_core.config().get("dynamic_process_sets", False))


def add_process_set(process_set) -> ProcessSet:
    """Registers a process set after hvd.init() (a list of ranks or a ProcessSet) and returns it.

    Collective: every rank calls it, with the same ranks. Requires HOROVOD_DYNAMIC_PROCESS_SETS=1
    (or ``hvd.init(process_sets="dynamic")``).
    """
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.ranks is None and process_set.mpi_comm is not None:
        raise NotImplementedError(
            "Dynamically adding process sets defined by an MPI communicator is not implemented. "
            "Please build the process set via a list of ranks.")
    if not _core.is_initialized():
        raise ValueError("Horovod has not been initialized; use hvd.init().")
    if not _dynamic_enabled():
        raise ValueError("Set HOROVOD_DYNAMIC_PROCESS_SETS=1 to allow adding process sets after "
                         "Horovod initialization.")
    if process_set.process_set_id is not None:
        raise ValueError(f"{process_set} has already been added")
    try:
        process_set.process_set_id = int(_core.add_process_set(process_set.ranks))
    except _core.KoloError as error:
        raise ValueError(str(error)) from None
    _id_to_process_sets.setdefault(process_set.process_set_id, []).append(process_set)
    return process_set


# Run with a set's id once it was removed: a front end forgets what it kept about the set
# (kolo.torch's ranks sharing a GPU, torch/shared_gpu.py).
_after_removal_hooks: list = []


def after_removal(hook) -> None:
    """Registers `hook(process_set_id)` to run after every removal of a process set."""
    _after_removal_hooks.append(hook)


def remove_process_set(process_set: ProcessSet) -> bool:
    """Unregisters a process set on every rank (collective) and invalidates the ProcessSet
    objects standing for it. False for the global set or a set that is not registered; raises
    HorovodInternalError if a member still has operations pending on the set.

    Requires HOROVOD_DYNAMIC_PROCESS_SETS=1.
    """
    if not _core.is_initialized():
        raise ValueError("Horovod has not been initialized; use hvd.init().")
    if not _dynamic_enabled():
        raise ValueError("Set HOROVOD_DYNAMIC_PROCESS_SETS=1 to allow removing process sets after "
                         "Horovod initialization.")
    process_set_id = process_set.process_set_id
    if process_set_id is None or process_set_id == 0:
        return False
    removed = bool(_core.remove_process_set(process_set_id))
    if removed:
        for hook in _after_removal_hooks:
            hook(process_set_id)
        for some_process_set in _id_to_process_sets.pop(process_set_id, [process_set]):
            some_process_set.invalidate()
        process_set.invalidate()
    return removed


def process_set_by_id(process_set_id: int) -> ProcessSet:
    """The registered ProcessSet with that id."""
    if process_set_id not in _id_to_process_sets:
        raise ValueError(f"No known process set with id {process_set_id}")
    return _id_to_process_sets[process_set_id][0]


def process_sets() -> List[ProcessSet]:
    """One registered ProcessSet per id, by ascending id."""
    return [_id_to_process_sets[i][0] for i in sorted(_id_to_process_sets)]


def ids_and_ranks() -> Dict[int, List[int]]:
    """Every registered id and its ranks (Horovod's ``_get_process_set_ids_and_ranks``)."""
    return {i: list(_core.process_set_ranks(i)) for i in _core.process_set_ids()}


def comm_process_set_id(comm) -> int:
    """The id of the registered set whose ranks are those of mpi4py communicator `comm`
    (Horovod's ``_comm_process_set_id``)."""
    global_comm = global_process_set.mpi_comm
    if global_comm is None:
        raise ValueError("process sets defined by MPI communicators need hvd.init(comm=MPI_comm)")
    key = world_ranks(comm, global_comm, "comm")
    for set_id, ranks in ids_and_ranks().items():
        if ranks == key:
            return set_id
    raise ValueError("MPI communicator does not correspond to any registered process set.")


def check_process_set(process_set) -> int:
    """The core's id for `process_set` (None means the global set). Membership is checked by the
    core when an operation is submitted (a clear error naming the set, its ranks and the rank)."""
    if process_set is None:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise ValueError(f"process_set must be a hvd.ProcessSet, got {type(process_set).__name__}")
    if process_set.process_set_id is None:
        raise ValueError(f"{process_set} is not registered: pass it to "
                         "hvd.init(process_sets=[...]) or hvd.add_process_set() first (or it was "
                         "removed)")
    if process_set.process_set_id not in _id_to_process_sets:
        # Checked here, not only by the core: in a graph the core's error would surface as
        # InvalidArgumentError at run time, where Horovod raises ValueError when the op is made.
        raise ValueError(f"process set id {process_set.process_set_id} of {process_set} is not "
                         f"a registered process set (registered ids: "
                         f"{sorted(_id_to_process_sets)})")
    return process_set.process_set_id
