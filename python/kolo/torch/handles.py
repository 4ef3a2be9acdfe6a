"""Submitting torch tensors to the core; their handles live in kolo's one table (kolo/_handles.py).

Single operations use the core's handle ids (positive). A grouped operation is several named
operations carrying one group id, which the core runs only once all of them are ready on every
rank, as one unit; its handle is a negative id standing for all of them, so ``synchronize``
returns the whole list, as Horovod's does. What is torch's own is attached to each handle as its
last step at synchronize(): the caller's tensor back after an in-place operation, or the result
moved back to the caller's device after staging through host memory.
"""

from __future__ import annotations

from functools import partial
from typing import Optional

import torch

import kolo
from kolo._handles import poll, synchronize  # noqa: F401  (the torch layer's, too)
from kolo.torch import staging
from kolo.torch.process_sets import check_process_set


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
    finish = None
    if staged is not None:
        finish = partial(staging.to_caller, staged=staged)
    elif inplace:
        finish = partial(_caller_tensor, tensor)
    return kolo._submit(op, kind, source, output, name, reduce_op=reduce_op, root=root,
                        prescale=prescale, postscale=postscale, process_set=set_id,
                        splits=splits, group=group, invalid=invalid, finish=finish)


def _caller_tensor(tensor: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
    # In-place operations return the caller's tensor itself (the core saw a detached alias).
    return tensor


def make_group(handles: list[int]) -> int:
    """One handle standing for several (a grouped operation)."""
    return kolo._group_handle(handles)
