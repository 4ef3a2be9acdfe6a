"""Handles of asynchronous torch operations: submission to the core, poll() and synchronize().

Single operations use the core's handle ids (positive). A grouped operation is several named
operations carrying one group id, which the core runs only once all of them are ready on every
rank, as one unit; its handle is a negative id standing for all of them, so ``synchronize``
returns the whole list, as Horovod's does.
"""

from __future__ import annotations

import itertools
from typing import Any, Optional

import torch

import kolo
from kolo.torch import staging
from kolo.torch.process_sets import check_process_set

# In-place operations return the caller's tensor itself (the core saw a detached alias).
_inplace_results: dict[int, torch.Tensor] = {}
# Operations on device tensors ran on host copies (staging.py); synchronize() moves them back.
_staged: dict[int, staging.Staged] = {}
_groups: dict[int, list[int]] = {}
_group_ids = itertools.count(1)


# Operations whose output the runtime allocates (its size is known only after negotiation).
_ALLOCATING = (kolo._core.OP_ALLGATHER, kolo._core.OP_ALLTOALL, kolo._core.OP_REDUCESCATTER)


def submit(op: int, kind: str, tensor: torch.Tensor, output: Optional[torch.Tensor],
           name: Optional[str], reduce_op: int = 0, root: int = 0, prescale: float = 1.0,
           postscale: float = 1.0, process_set=None, splits=None, group: tuple = (0, 0),
           invalid: str = "") -> int:
    """Queues one operation; ``output=None`` means in place (or runtime-allocated for allgather,
    alltoall and reducescatter). `group` is (id, size) for members of a grouped operation.

    Tensors are detached first: DLPack refuses tensors that require grad, and the core only
    reads and writes their memory. A tensor that is not on the CPU (or any tensor, with
    KOLO_STAGE_THROUGH_HOST=1) is staged through host memory (staging.py).
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    set_id = check_process_set(process_set)
    inplace = output is None and op not in _ALLOCATING
    source = tensor.detach()
    if inplace and not source.is_contiguous():
        # Reported by the core (a ValueError here, an error on the other ranks, not a hang).
        invalid = invalid or (f"rank {kolo.rank()}: tensor '{name or kind}': in-place operations "
                              f"need a contiguous tensor")
        source = source.contiguous()
    staged = None
    if staging.needs_staging(source, name or kind):
        staged = staging.Staged(source.device, tensor if inplace else None)
        source = staging.to_host(source)
        if output is not None:
            output = torch.empty_like(source)
    if output is not None or op in _ALLOCATING:
        source = source.contiguous()
    if output is not None:
        output = output.detach()
    handle = kolo._submit(op, kind, source, output, name, reduce_op, root, prescale, postscale,
                          set_id, splits, group, invalid)
    if staged is not None:
        _staged[handle] = staged
    elif inplace:
        _inplace_results[handle] = tensor
    return handle


def make_group(handles: list[int]) -> int:
    """One handle standing for several (a grouped allreduce)."""
    group = -next(_group_ids)
    _groups[group] = handles
    return group


def poll(handle: int) -> bool:
    """True once the operation (every member, for a group) has finished, successfully or not."""
    if handle < 0:
        return all(kolo.poll(h) for h in _groups[handle])
    return kolo.poll(handle)


def synchronize(handle: int) -> Any:
    """Waits for the operation and returns its result (a list for a grouped allreduce); raises
    HorovodInternalError (kolo.KoloError) naming the tensor and ranks if it failed."""
    if handle < 0:
        members = _groups.pop(handle)
        results, first_error = [], None
        for member in members:  # wait for all, so no tensor stays referenced by a failed group
            try:
                results.append(synchronize(member))
            except kolo.KoloError as error:
                first_error = first_error or error
        if first_error is not None:
            raise first_error
        return results
    inplace = _inplace_results.pop(handle, None)
    staged = _staged.pop(handle, None)
    result = kolo.synchronize(handle)
    if staged is not None:
        return staging.to_caller(result, staged)
    return inplace if inplace is not None else result
