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
from typing import Any, Optional

from kolo import _arrays, _core
from kolo._core import KoloError

__version__ = "0.1.0"
__all__ = [
    "KoloError", "HorovodInternalError", "Average", "Sum", "Min", "Max", "Product", "Adasum",
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size",
    "cross_rank", "cross_size", "allreduce", "allreduce_async", "allreduce_", "allreduce_async_",
    "allgather", "allgather_async", "broadcast", "broadcast_async", "broadcast_",
    "broadcast_async_", "barrier", "join", "poll", "synchronize",
]

# Horovod's name for a failed collective; scripts catch it to recover (elastic training).
HorovodInternalError = KoloError

Average = _core.REDUCE_AVERAGE
Sum = _core.REDUCE_SUM
Min = _core.REDUCE_MIN
Max = _core.REDUCE_MAX
Product = _core.REDUCE_PRODUCT
Adasum = _core.REDUCE_ADASUM

# Arrays referenced by in-flight handles: the C++ side reads and writes their memory until the
# handle completes, so Python must not free them before synchronize().
_in_flight: dict[int, tuple[Any, Any, int]] = {}
# Keyed by (kind, process set id): a rank outside a set never calls its ops, so one counter per
# kind would drift between ranks as soon as sets are used.
_unnamed_counters: dict[tuple[str, int], Any] = {}


def init() -> None:
    """Joins the job (rank and size from kolorun/horovodrun's environment; alone: size 1)."""
    _core.init()


def shutdown() -> None:
    """Leaves the job; pending operations fail. ``init()`` may be called again afterwards."""
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


def cross_size() -> int:
    return _core.cross_size()


def _name(kind: str, name: Optional[str], process_set: int = 0) -> str:
    # Unnamed ops get names from a per-kind, per-set counter: identical on every rank of an SPMD
    # program that takes part.
    if name is not None:
        return name
    counter = _unnamed_counters.setdefault((kind, process_set), itertools.count())
    return f"{kind}.noname.{next(counter)}"


def _submit(op: int, kind: str, array: Any, output: Any, name: Optional[str], reduce_op: int = 0,
            root: int = 0, prescale: float = 1.0, postscale: float = 1.0,
            process_set: int = 0) -> int:
    handle = _core.enqueue(op, _name(kind, name, process_set), array, output, reduce_op, root,
                           float(prescale), float(postscale), process_set)
    _in_flight[handle] = (array, output, op)
    return handle


def allreduce_async(array: Any, op: int = Average, name: Optional[str] = None,
                    prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> int:
    """Starts an allreduce into a new array; ``synchronize(handle)`` returns it."""
    source = _arrays.contiguous(array)
    return _submit(_core.OP_ALLREDUCE, "allreduce", source, _arrays.empty_like(source), name, op,
                   prescale=prescale_factor, postscale=postscale_factor)


def allreduce(array: Any, op: int = Average, name: Optional[str] = None,
              prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> Any:
    return synchronize(allreduce_async(array, op, name, prescale_factor, postscale_factor))


def allreduce_async_(array: Any, op: int = Average, name: Optional[str] = None,
                     prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> int:
    """Starts an in-place allreduce (the array must be contiguous)."""
    return _submit(_core.OP_ALLREDUCE, "allreduce", array, None, name, op,
                   prescale=prescale_factor, postscale=postscale_factor)


def allreduce_(array: Any, op: int = Average, name: Optional[str] = None,
               prescale_factor: float = 1.0, postscale_factor: float = 1.0) -> Any:
    return synchronize(allreduce_async_(array, op, name, prescale_factor, postscale_factor))


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
    return synchronize(broadcast_async(array, root_rank, name))


def broadcast_async_(array: Any, root_rank: int, name: Optional[str] = None) -> int:
    return _submit(_core.OP_BROADCAST, "broadcast", array, None, name, root=root_rank)


def broadcast_(array: Any, root_rank: int, name: Optional[str] = None) -> Any:
    return synchronize(broadcast_async_(array, root_rank, name))


def barrier(process_set: int = 0) -> None:
    """Returns once every rank (of the process set with that id) has called barrier()."""
    import numpy as np

    synchronize(_submit(_core.OP_BARRIER, "barrier", np.zeros(0, np.uint8), None, None,
                        process_set=process_set))


def join() -> int:
    """Declares that this rank has no more data (Horovod's hvd.join()): until every rank joined,
    it takes part with zeros in the allreduces the others still run. Blocks until all ranks
    joined; returns the rank that joined last."""
    return _core.join()


def poll(handle: int) -> bool:
    """True once the operation finished (successfully or not)."""
    return _core.poll(handle)


def synchronize(handle: int) -> Any:
    """Waits for the operation (without holding the GIL) and returns its result; raises
    KoloError (HorovodInternalError) naming the problem if it failed."""
    array, output, op = _in_flight[handle]
    try:
        _core.wait(handle)
    finally:
        gathered = _core.take_output(handle, _arrays.is_torch(array)) if _core.poll(handle) else None
        del _in_flight[handle]
    if op == _core.OP_ALLGATHER:
        return gathered
    return output if output is not None else array


atexit.register(_core.shutdown)
