"""kolo: distributed training with a C++ core, compatible with Horovod.

This module is the framework-free front end over ``kolo._core``: it works on any DLPack-capable
array (NumPy at least; PyTorch tensors too). ``kolo.torch`` builds the ``horovod.torch`` API on it.

    import numpy as np, kolo
    kolo.init()
    total = kolo.allreduce(np.ones(4, np.float32), op=kolo.Sum)
"""

from __future__ import annotations

import atexit
import itertools
import numbers
import operator
import threading
import zlib
from typing import Any, Optional

from kolo import _arrays, _core, _handles
from kolo import process_sets as _process_sets
from kolo._handles import poll, synchronize
from kolo.exceptions import HorovodInternalError, KoloError, KoloValueError

# The C++ build's version (the file VERSION, which the package metadata reads too).
__version__: str = _core.VERSION
__all__ = [
    "KoloError", "KoloValueError", "HorovodInternalError", "Average", "Sum", "Min", "Max",
    "Product", "Adasum",
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "cross_rank", "cross_size", "placement", "allreduce", "allreduce_async", "allreduce_",
    "allreduce_async_",
    "allgather", "allgather_async", "broadcast", "broadcast_async", "broadcast_",
    "broadcast_async_", "alltoall", "alltoall_async", "reducescatter", "reducescatter_async",
    "grouped_allreduce", "grouped_allreduce_async", "grouped_allgather",
    "grouped_allgather_async", "grouped_reducescatter", "grouped_reducescatter_async", "barrier",
    "join", "poll", "synchronize",
]

Average = _core.REDUCE_AVERAGE
Sum = _core.REDUCE_SUM
Min = _core.REDUCE_MIN
Max = _core.REDUCE_MAX
Product = _core.REDUCE_PRODUCT
Adasum = _core.REDUCE_ADASUM

# Keyed by (kind, process set id): a rank outside a set never calls its ops, so one counter per
# kind would drift between ranks as soon as sets are used.
_unnamed_counters: dict[tuple[str, int], Any] = {}
# What holds for one session only: the counters above, and what a front end decided from the
# session's members (the torch front end's GPU path, from the ranks' GPUs). Emptied at each init:
# after an elastic reset old workers and new ones must decide anew, and at the same point.
_session_caches: list[dict] = [_unnamed_counters]


def session_cache() -> dict:
    """A dict that init() empties at the start of every session."""
    cache: dict = {}
    _session_caches.append(cache)
    return cache


# Run on every rank once per session, before its first operation on the global process set
# (whatever the front end, the device or the operation, join and barrier included): a point every
# rank reaches together. kolo.torch exchanges the ranks' GPUs there (torch/staging.py).
_first_global_op_hooks: list = []
_first_global_op_seen: dict = session_cache()  # non-empty once this session's hooks ran
_first_global_op_lock = threading.Lock()


def on_first_global_op(hook) -> None:
    """Registers `hook()` to run before this rank's first operation on the global process set in
    each session. Its own operations must be on the global set."""
    _first_global_op_hooks.append(hook)


def _before_first_global_op() -> None:
    """Runs the hooks, once per session; the hooks' operations pass through here unhindered, as
    do other threads' operations meanwhile (each is matched by name, whatever the order)."""
    with _first_global_op_lock:
        if _first_global_op_seen or not _core.is_initialized():
            return
        _first_global_op_seen["ran"] = True
    for hook in _first_global_op_hooks:
        hook()


def init(process_sets=None) -> None:
    """Joins the job (rank and size from kolorun/horovodrun's environment; alone: size 1).

    ``process_sets``: a list of ``kolo.process_sets.ProcessSet`` to register now, or
    ``"dynamic"`` to allow adding and removing sets later (as HOROVOD_DYNAMIC_PROCESS_SETS=1;
    the argument wins over the environment). A second init() while initialized joins nothing
    new: as Horovod's, it gives the sets it is passed the ids the first init() registered.
    """
    wanted, dynamic, gathered = _process_sets.init_argument(process_sets)
    already = _core.is_initialized()
    _core.init(dynamic_process_sets=dynamic)
    if already:
        _process_sets.map_to_registered(wanted)
        return
    # Unnamed ops count from zero in each session: after an elastic reset the members are a mix
    # of old workers and new ones, and all of them must give the same names.
    for cache in _session_caches:
        cache.clear()
    _process_sets.register_at_init(wanted, gathered)


# Run at shutdown(), before the core leaves the job (operations still complete): kolo.torch gives
# back the device memory its ranks sharing a GPU mapped from each other (torch/shared_gpu.py).
_shutdown_hooks: list = []


def on_shutdown(hook) -> None:
    """Registers `hook()` to run at the start of every shutdown() of an initialized session."""
    _shutdown_hooks.append(hook)


def shutdown() -> None:
    """Leaves the job; pending operations fail. ``init()`` may be called again afterwards."""
    if _core.is_initialized():
        for hook in _shutdown_hooks:
            try:
                hook()
            except Exception as error:  # leaving the job must not fail on cleanup
                import warnings

                warnings.warn(f"kolo: at shutdown: {error}", RuntimeWarning, stacklevel=2)
    _core.shutdown()


def is_initialized() -> bool:
    return _core.is_initialized()


def rank() -> int:
    return _core.rank()


def size() -> int:
    return _core.size()


def local_rank() -> int:
    return _core.local_rank()


def local_size() -> int:
    return _core.local_size()


def cross_rank() -> int:
    return _core.cross_rank()


def placement() -> dict:
    """What kolo's default placement did for this rank at init (docs/guide/placement.md).

    ``{"cpus": [...], "job_cpus": [...], "threads": int or None, "summary": str}``: the CPUs
    this rank's threads may use, the CPUs of the whole job on this host, the thread count given
    to the framework (None: left alone) and one line saying why.
    """
    return _core.placement()


def cross_size() -> int:
    return _core.cross_size()


def _name(kind: str, name: Optional[str], process_set: int = 0) -> str:
    # Unnamed ops get names from a per-kind, per-set counter: identical on every rank of an SPMD
    # program that takes part.
    if name is not None:
        return name
    counter = _unnamed_counters.setdefault((kind, process_set), itertools.count())
    return f"{kind}.noname.{next(counter)}"


def _submit(op: int, kind: str, array: Any, output: Any, name: Optional[str], *,
            reduce_op: int = 0, root: int = 0, prescale: float = 1.0, postscale: float = 1.0,
            process_set: int = 0, splits: Optional[list] = None, group: tuple = (0, 0),
            invalid: str = "", finish=None, ready: tuple = (0, -1), drive: bool = False,
            failed=None) -> int:
    """Queues one operation and tracks it until synchronize(). `invalid` (non-empty) says what
    is wrong with the caller's arguments: the core raises it as a ValueError and fails the name
    on the other ranks too. `group` is (id, size) for a member of a grouped operation;
    `finish(result)` is the framework layer's last step at synchronize() (_handles.py);
    `failed()` is called instead of `finish` when the operation failed;
    `ready` is (cudaEvent_t, device) the core waits for before reading `array` (kolo.torch's
    asynchronous host path), (0, -1) for none (a device with no event: a CUDA tensor's request
    made on the host, kolo.torch's shared GPU path). `drive`: the caller waits for it at once, and
    that wait runs the negotiation and the collective on the caller's thread (the blocking
    functions; core/session.h)."""
    if process_set == 0 and not _first_global_op_seen:
        _before_first_global_op()
    options = _core.EnqueueOptions(
        op=op, name=_name(kind, name, process_set), reduce_op=reduce_op, root=root,
        prescale=float(prescale), postscale=float(postscale), process_set=process_set,
        splits=[] if splits is None else [int(s) for s in splits], group_id=group[0],
        group_size=group[1], invalid=invalid, ready_event=ready[0], ready_device=ready[1],
        caller_drives=drive)
    handle = _core.enqueue(options, array, output)
    _handles.track(handle, array, output, op, finish, failed=failed)
    return handle


def _new_group(base_name: str, members: int) -> tuple:
    """(id, size) of the group named `base_name` with `members` tensors; the core runs the
    members only once every one of them is ready on every rank, as one unit. The id derives from
    the name (never 0), so every rank gives a group the same id whatever order the ranks submit
    their groups in (DistributedOptimizer's hooks may fire in different orders)."""
    if members == 0:
        raise ValueError("a grouped operation needs at least one tensor")
    return (zlib.crc32(base_name.encode()) & 0x7FFFFFFF) or 1, members


def _submit_group(base_name: str, arrays: list, submit_one) -> list:
    """Submits every member of the group `base_name`; `submit_one(array, index, group)` submits
    one member and returns its handle."""
    return submit_members(_new_group(base_name, len(arrays)), arrays, submit_one)


def _group_handle(handles: list) -> int:
    return _handles.group(handles)


def submit_members(group: tuple, arrays: list, submit_one) -> list:
    """Submits every member of `group` even when one is refused (a bad argument raises on the
    caller's thread): the core holds a group until all its members arrived, so a member missing
    on this rank would leave the other ranks waiting forever; with all of them sent, the refused
    one fails the group everywhere. Raises the first refusal."""
    handles, first_error = [], None
    for i, array in enumerate(arrays):
        try:
            handles.append(submit_one(array, i, group))
        except (KoloError, KoloValueError) as error:
            first_error = first_error or error
    if first_error is not None:
        raise first_error
    return handles


def allreduce_async(array: Any, op: int = Average, name: Optional[str] = None,
                    prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> int:
    """Starts an allreduce into a new array; ``synchronize(handle)`` returns it."""
    source = _arrays.contiguous(array)
    return _submit(_core.OP_ALLREDUCE, "allreduce", source, _arrays.empty_like(source), name,
                   reduce_op=op, prescale=prescale_factor, postscale=postscale_factor)


def allreduce(array: Any, op: int = Average, name: Optional[str] = None,
              prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> Any:
    source = _arrays.contiguous(array)
    return synchronize(_submit(_core.OP_ALLREDUCE, "allreduce", source,
                               _arrays.empty_like(source), name, reduce_op=op,
                               prescale=prescale_factor, postscale=postscale_factor, drive=True))


def allreduce_async_(array: Any, op: int = Average, name: Optional[str] = None,
                     prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> int:
    """Starts an in-place allreduce (the array must be contiguous)."""
    return _submit(_core.OP_ALLREDUCE, "allreduce", array, None, name, reduce_op=op,
                   prescale=prescale_factor, postscale=postscale_factor)


def allreduce_(array: Any, op: int = Average, name: Optional[str] = None,
               prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> Any:
    return synchronize(_submit(_core.OP_ALLREDUCE, "allreduce", array, None, name, reduce_op=op,
                               prescale=prescale_factor, postscale=postscale_factor, drive=True))


def allgather_async(array: Any, name: Optional[str] = None) -> int:
    """Starts an allgather: every rank's array concatenated along the first dimension (which may
    differ per rank)."""
    return _submit(_core.OP_ALLGATHER, "allgather", _arrays.contiguous(array), None, name)


def allgather(array: Any, name: Optional[str] = None) -> Any:
    return synchronize(allgather_async(array, name))


def broadcast_async(array: Any, root_rank: int, name: Optional[str] = None) -> int:
    """Starts a broadcast of root_rank's array into a new array on every rank."""
    source = _arrays.contiguous(array)
    return _submit(_core.OP_BROADCAST, "broadcast", source, _arrays.empty_like(source), name,
                   root=root_rank)


def broadcast(array: Any, root_rank: int, name: Optional[str] = None) -> Any:
    source = _arrays.contiguous(array)
    return synchronize(_submit(_core.OP_BROADCAST, "broadcast", source,
                               _arrays.empty_like(source), name, root=root_rank, drive=True))


def broadcast_async_(array: Any, root_rank: int, name: Optional[str] = None) -> int:
    return _submit(_core.OP_BROADCAST, "broadcast", array, None, name, root=root_rank)


def broadcast_(array: Any, root_rank: int, name: Optional[str] = None) -> Any:
    return synchronize(_submit(_core.OP_BROADCAST, "broadcast", array, None, name, root=root_rank,
                               drive=True))


def _alltoall_splits(splits: Any, name: Optional[str]) -> tuple:
    """(splits as a list of ints or None, what is wrong with them or ""). `splits` may be a list,
    a NumPy array or a tensor; float or 2-D splits are a bad argument (Horovod wants an int32
    tensor; kolo takes any integers), which the core reports as a ValueError here and as an
    error on the other ranks, never as rows sent to the wrong ranks."""
    if splits is None:
        return None, ""
    values = splits.tolist() if hasattr(splits, "tolist") else list(splits)
    bad = [v for v in values if isinstance(v, bool) or not isinstance(v, numbers.Integral)]
    if bad:
        kind = getattr(splits, "dtype", type(bad[0]).__name__)
        return [], (f"rank {_core.rank() if _core.is_initialized() else '?'}: alltoall of tensor "
                    f"'{name or 'alltoall'}': splits must be a 1-D sequence of integers (an int32 "
                    f"tensor, as Horovod expects), got {kind} values such as {bad[0]!r}")
    return [int(v) for v in values], ""


def alltoall_async(array: Any, splits: Optional[Any] = None, name: Optional[str] = None) -> int:
    """Starts an alltoall: rows splits[r] of the first dimension (in order) go to rank r; without
    splits the first dimension is divided evenly. ``synchronize(handle)`` returns
    (received rows, received_splits), the rows concatenated in rank order."""
    splits, invalid = _alltoall_splits(splits, name)
    return _submit(_core.OP_ALLTOALL, "alltoall", _arrays.contiguous(array), None, name,
                   splits=splits, invalid=invalid)


def alltoall(array: Any, splits: Optional[Any] = None, name: Optional[str] = None) -> Any:
    """Received rows; with `splits`, (received rows, received splits) as Horovod returns."""
    output, received = synchronize(alltoall_async(array, splits, name))
    return output if splits is None else (output, received)


def reducescatter_async(array: Any, op: int = Average, name: Optional[str] = None,
                        prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> int:
    """Starts a reducescatter: the op-reduction over ranks, of which this rank keeps its share
    of the first dimension (Horovod's split: the first rows % size ranks get one row more)."""
    return _submit(_core.OP_REDUCESCATTER, "reducescatter", _arrays.contiguous(array), None, name,
                   reduce_op=op, prescale=prescale_factor, postscale=postscale_factor)


def reducescatter(array: Any, op: int = Average, name: Optional[str] = None,
                  prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> Any:
    return synchronize(reducescatter_async(array, op, name, prescale_factor, postscale_factor))


def grouped_allreduce_async(arrays: list, op: int = Average, name: Optional[str] = None,
                            prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> int:
    """Starts allreducing `arrays` as one group (all or nothing, fused); ``synchronize`` returns
    the list of results."""
    base = _name("grouped_allreduce", name)
    sources = [_arrays.contiguous(a) for a in arrays]
    handles = _submit_group(base, sources, lambda a, i, g: _submit(
        _core.OP_ALLREDUCE, "allreduce", a, _arrays.empty_like(a), f"{base}.{i}", reduce_op=op,
        prescale=prescale_factor, postscale=postscale_factor, group=g))
    return _group_handle(handles)


def grouped_allreduce(arrays: list, op: int = Average, name: Optional[str] = None,
                      prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> list:
    return synchronize(grouped_allreduce_async(arrays, op, name, prescale_factor,
                                               postscale_factor))


def grouped_allgather_async(arrays: list, name: Optional[str] = None) -> int:
    """Starts allgathering `arrays` as one group; ``synchronize`` returns the list."""
    base = _name("grouped_allgather", name)
    handles = _submit_group(base, [_arrays.contiguous(a) for a in arrays],
                            lambda a, i, g: _submit(_core.OP_ALLGATHER, "allgather", a, None,
                                                    f"{base}.{i}", group=g))
    return _group_handle(handles)


def grouped_allgather(arrays: list, name: Optional[str] = None) -> list:
    return synchronize(grouped_allgather_async(arrays, name))


def grouped_reducescatter_async(arrays: list, op: int = Average, name: Optional[str] = None,
                                prescale_factor: float = 1.0,
                                postscale_factor: float = 1.0) -> int:
    """Starts reducescattering `arrays` as one group; ``synchronize`` returns the list."""
    base = _name("grouped_reducescatter", name)
    handles = _submit_group(base, [_arrays.contiguous(a) for a in arrays],
                            lambda a, i, g: _submit(
                                _core.OP_REDUCESCATTER, "reducescatter", a, None, f"{base}.{i}",
                                reduce_op=op, prescale=prescale_factor,
                                postscale=postscale_factor, group=g))
    return _group_handle(handles)


def grouped_reducescatter(arrays: list, op: int = Average, name: Optional[str] = None,
                          prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> list:
    return synchronize(grouped_reducescatter_async(arrays, op, name, prescale_factor,
                                                   postscale_factor))


def barrier(process_set: int = 0) -> None:
    """Returns once every rank (of the process set with that id) has called barrier()."""
    import numpy as np

    synchronize(_submit(_core.OP_BARRIER, "barrier", np.zeros(0, np.uint8), None, None,
                        process_set=process_set))


def join(device: int = -1) -> int:
    """Declares that this rank has no more data (Horovod's hvd.join()): until every rank joined,
    it takes part with zeros in the allreduces the others still run. Blocks until all ranks
    joined; returns the rank that joined last. `device`: the CUDA device for the zeros of CUDA
    allreduces (-1: the GPU of this rank's earlier CUDA operations; see kolo.torch.join)."""
    if not _first_global_op_seen:
        _before_first_global_op()
    return _core.join(operator.index(device))


def _shutdown_at_exit() -> None:
    # At interpreter exit a failed shutdown has already been logged (naming the rank); a
    # traceback from an atexit hook would only repeat it.
    try:
        _core.shutdown()
    except KoloError:
        pass


atexit.register(_shutdown_at_exit)
