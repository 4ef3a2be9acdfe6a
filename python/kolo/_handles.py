"""The one table of kolo's operations in flight, for ``kolo`` and ``kolo.torch`` alike.

Until an operation completes, the core reads and writes its arrays' memory, so the arrays stay
referenced here. A framework layer attaches a ``finish`` function that turns the core's result
into what its caller gets back (``kolo.torch``: the caller's own tensor after an in-place
operation, a tensor back on its device after staging through host memory), so both layers share
this table, poll() and synchronize() instead of keeping tables of their own.

A grouped operation is several named operations that the core runs as one unit; its handle is a
negative id standing for all of them, and synchronize() returns the list of their results.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Optional

from kolo import _arrays, _core
from kolo.exceptions import KoloError


@dataclass
class _InFlight:
    array: Any  # the input (also the output of an in-place operation)
    output: Any  # a separate output the caller allocated, or None
    op: int  # _core.OP_*
    finish: Optional[Callable[[Any], Any]]  # the framework's last step, or None
    # kolo.torch's NCCL path: () -> (cudaStream_t, device, name) of the caller's current stream
    # at synchronize(), which is made to wait for kolo's completion event; None elsewhere. With
    # it, `finish` is required and receives the alltoall's received splits ([] otherwise).
    on_stream: Optional[Callable[[], tuple]] = None
    # Told when the operation failed (synchronize() raises instead of calling `finish`): a front
    # end that keeps state per operation forgets it (kolo.torch's shared GPU path).
    failed: Optional[Callable[[], None]] = None


_in_flight: dict[int, _InFlight] = {}
# The pointer path's operations (kolo.torch's allreduce and broadcast on host memory), kept
# apart because they need so little: handle -> what synchronize() returns (the output, or the
# input when in place), and handle -> the input for those with a separate output. No record
# object per operation: at 100 async ops per step, allocating one each was a visible part of the
# submission, and kept Python's cyclic garbage collector busy.
_direct: dict[int, Any] = {}
_direct_inputs: dict[int, Any] = {}
_NOT_DIRECT = object()
# Operations whose result is the caller's own output (or input) array.
_SAME_SHAPE = (_core.OP_ALLREDUCE, _core.OP_BROADCAST)
_groups: dict[int, list[int]] = {}
_group_ids = itertools.count(1)


def track(handle: int, array: Any, output: Any, op: int,
          finish: Optional[Callable[[Any], Any]] = None,
          on_stream: Optional[Callable[[], tuple]] = None,
          failed: Optional[Callable[[], None]] = None) -> None:
    """Keeps `array` and `output` referenced until synchronize(handle); `finish(result)` then
    gives the caller's result, `failed()` is called instead when the operation failed.
    `on_stream` (an operation on kolo.torch's NCCL path): the stream that synchronize() makes
    wait for the device result instead of waiting itself."""
    _in_flight[handle] = _InFlight(array, output, op, finish, on_stream, failed)


def _forget_failed(handle: int, entry: _InFlight) -> None:
    del _in_flight[handle]
    if entry.failed is not None:
        entry.failed()


def then(handle: int, step: Callable[[Any], Any]) -> None:
    """Makes synchronize(handle) return step(result), after the framework's own finish (kolo.torch:
    a CUDA tensor's postscale). Only for handles track() registered."""
    entry = _in_flight[handle]
    first = entry.finish
    entry.finish = step if first is None else (lambda result: step(first(result)))


def track_direct(handle: int, array: Any, output: Any) -> None:
    """track() for an allreduce or broadcast of the pointer path, which needs no finish step:
    synchronize(handle) returns `output`, or `array` when `output` is None (in place)."""
    if output is None:
        _direct[handle] = array
    else:
        _direct[handle] = output
        _direct_inputs[handle] = array


def group(handles: list) -> int:
    """One (negative) handle standing for the members' handles, in order."""
    handle = -next(_group_ids)
    _groups[handle] = handles
    return handle


def poll(handle: int) -> bool:
    """True once the operation (every member, for a group) finished, successfully or not."""
    if handle < 0:
        return all(_core.poll(h) for h in _groups[handle])
    return _core.poll(handle)


def synchronize(handle: int) -> Any:
    """Waits for the operation (without holding the GIL) and returns its result; raises
    KoloError (HorovodInternalError) naming the problem if it failed. A group's handle gives the
    list of its results; every member is waited for, so none stays referenced. A handle
    already synchronized (or never issued) gives None, as Horovod's synchronize does."""
    result = _direct.get(handle, _NOT_DIRECT)
    if result is not _NOT_DIRECT:
        return _finish_direct(handle, result)
    if handle not in _in_flight and handle not in _groups:
        return None
    if handle < 0:
        results, first_error = [], None
        for member in _groups.pop(handle):
            try:
                results.append(synchronize(member))
            except KoloError as error:
                first_error = first_error or error
        if first_error is not None:
            raise first_error
        return results
    entry = _in_flight[handle]
    # A KeyboardInterrupt (Ctrl-C during the wait) is not an Exception and leaves the entry in
    # place: the operation still runs and reads or writes the arrays referenced here, so they
    # must outlive it; synchronize(handle) may be called again.
    if entry.on_stream is not None:
        # The NCCL path: the caller's stream waits for kolo's event; the front end's finish
        # builds the result (from the alltoall's received splits, finish_on_stream's answer).
        try:
            received_splits = _core.finish_on_stream(handle, *entry.on_stream())
        except Exception:
            _forget_failed(handle, entry)
            raise
        del _in_flight[handle]
        return entry.finish(received_splits)
    if entry.op in _SAME_SHAPE:
        # Nothing allocated by the core: wait and forget the handle in one call.
        try:
            _core.finish(handle)
        except Exception:
            _forget_failed(handle, entry)
            raise
        del _in_flight[handle]
        result = entry.output if entry.output is not None else entry.array
        return entry.finish(result) if entry.finish is not None else result
    try:
        _core.wait(handle)
    except Exception:
        if _core.poll(handle):
            _take(handle, entry)  # frees what the core allocated for the failed operation
        _forget_failed(handle, entry)
        raise
    allocated = _take(handle, entry)
    del _in_flight[handle]
    result = _result(entry, allocated)
    return entry.finish(result) if entry.finish is not None else result


def _finish_direct(handle: int, result: Any) -> Any:
    # As for _in_flight's entries: a failure forgets the handle and raises; a KeyboardInterrupt
    # (Ctrl-C during the wait) keeps it, since the operation still uses the arrays.
    try:
        _core.finish(handle)
    except Exception:
        _forget_direct(handle)
        raise
    _forget_direct(handle)
    return result


def _forget_direct(handle: int) -> None:
    del _direct[handle]
    _direct_inputs.pop(handle, None)


def _take(handle: int, entry: _InFlight) -> Any:
    """The output the core allocated (allgather, alltoall, reducescatter), in the input's
    framework; frees the core's copy."""
    as_torch = _arrays.is_torch(entry.array)
    if entry.op == _core.OP_ALLTOALL:
        return _core.take_alltoall_output(handle, as_torch)
    return _core.take_output(handle, as_torch)


def _result(entry: _InFlight, allocated: Any) -> Any:
    if entry.op == _core.OP_ALLTOALL:
        received, splits = allocated
        if _arrays.is_torch(entry.array):
            import torch
            return received, torch.tensor(splits, dtype=torch.int32)
        import numpy as np
        return received, np.asarray(splits, dtype=np.int32)
    if entry.op in (_core.OP_ALLGATHER, _core.OP_REDUCESCATTER):
        return allocated
    return entry.output if entry.output is not None else entry.array
