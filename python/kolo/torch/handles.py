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
from kolo import _handles
from kolo._handles import poll, synchronize  # noqa: F401  (the torch layer's, too)
from kolo.torch import device_scale, nccl_submit, shared_gpu, staging
from kolo.torch.process_sets import check_process_set


# Operations whose output the runtime allocates (its size is known only after negotiation).
_ALLOCATING = (kolo._core.OP_ALLGATHER, kolo._core.OP_ALLTOALL, kolo._core.OP_REDUCESCATTER)

# Operations that write a result of the input's shape into memory the caller owns: these take the
# pointer fast path (_submit_pointers) for plain host tensors.
_SAME_SHAPE = (kolo._core.OP_ALLREDUCE, kolo._core.OP_BROADCAST)

_CORE_DTYPES = {
    torch.uint8: kolo._core.DTYPE_UINT8, torch.int8: kolo._core.DTYPE_INT8,
    torch.int16: kolo._core.DTYPE_INT16, torch.int32: kolo._core.DTYPE_INT32,
    torch.int64: kolo._core.DTYPE_INT64, torch.float16: kolo._core.DTYPE_FLOAT16,
    torch.bfloat16: kolo._core.DTYPE_BFLOAT16, torch.float32: kolo._core.DTYPE_FLOAT32,
    torch.float64: kolo._core.DTYPE_FLOAT64, torch.bool: kolo._core.DTYPE_BOOL,
}


def _submit_pointers(op: int, kind: str, tensor: torch.Tensor, output: Optional[torch.Tensor],
                     name: Optional[str], reduce_op: int, root: int, prescale: float,
                     postscale: float, set_id: int, group: tuple,
                     drive: bool = False) -> Optional[int]:
    """The common case of allreduce and broadcast, at a few microseconds less per call: a
    contiguous, non-empty tensor in host memory (and a fresh output like it, or in place) goes
    to the core as addresses instead of through DLPack, with no detach and no finish step (the
    table keeps the caller's own tensor). None when the tensor is anything else: the general
    path (submit) then handles it, errors included. Straight to the core with positional
    arguments and no per-call objects: this runs once per tensor of every async batch."""
    dtype = _CORE_DTYPES.get(tensor.dtype)
    if (dtype is None or not tensor.is_cpu or staging.FORCED or not tensor.is_contiguous()
            or tensor.numel() == 0):
        return None
    if name is None:
        name = kolo._name(kind, None, set_id)
    address = tensor.data_ptr()
    handle = kolo._core.enqueue_pointers(
        op, name, reduce_op, root, float(prescale), float(postscale), set_id, group[0], group[1],
        dtype, tensor.shape, address, address if output is None else output.data_ptr(), drive)
    _handles.track_direct(handle, tensor, output)
    return handle


def submit(op: int, kind: str, tensor: torch.Tensor, output: Optional[torch.Tensor],
           name: Optional[str], reduce_op: int = 0, root: int = 0, prescale: float = 1.0,
           postscale: float = 1.0, process_set=None, splits=None, group: tuple = (0, 0),
           invalid: str = "", drive: bool = False) -> int:
    """Queues one operation; ``output=None`` means in place (or runtime-allocated for allgather,
    alltoall and reducescatter). `group` is (id, size) for members of a grouped operation.

    Tensors are detached first: DLPack refuses tensors that require grad, and the core only
    reads and writes their memory. A CUDA tensor goes to NCCL where gpu_path chose it and NCCL
    takes it (nccl_submit.py), a CUDA allreduce of ranks sharing one GPU to shared_gpu.py; any
    other tensor not on the CPU (or any tensor, with KOLO_STAGE_THROUGH_HOST) goes through host
    memory (staging.py). `drive`: the caller synchronizes at once and its wait runs the cycles
    (kolo._submit).
    """
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    set_id = check_process_set(process_set)
    paths_chosen(set_id)
    if not invalid and device_scale.applies(tensor, op, reduce_op, prescale, postscale):
        return device_scale.submit_scaled(submit, op, kind, tensor, output, name, reduce_op,
                                          prescale, postscale, root=root,
                                          process_set=process_set, splits=splits, group=group,
                                          drive=drive)
    if op in _SAME_SHAPE and not invalid:
        handle = _submit_pointers(op, kind, tensor, output, name, reduce_op, root, prescale,
                                  postscale, set_id, group, drive)
        if handle is not None:
            return handle
        if op == kolo._core.OP_ALLREDUCE and \
                shared_gpu.takes(tensor, output, reduce_op, prescale * postscale):
            return shared_gpu.submit(tensor, output, name, reduce_op, set_id, group)
        if nccl_submit.takes(tensor, op, reduce_op, prescale * postscale):
            handle = nccl_submit.submit(op, kind, tensor, output, name, reduce_op, root,
                                        prescale, postscale, set_id, group)
            if handle is not None:
                return handle
    inplace = output is None and op not in _ALLOCATING
    source = tensor.detach()
    if inplace and not source.is_contiguous():
        # Reported by the core (a ValueError here, an error on the other ranks, not a hang).
        invalid = invalid or (f"rank {kolo.rank()}: tensor '{name or kind}': in-place operations "
                              f"need a contiguous tensor")
        source = source.contiguous()
    staged, ready = None, (0, -1)
    if staging.needs_staging(source, name or kind):
        # Only tensors off the CPU get here: a CPU tensor's submit asks nothing more.
        if op in _ALLOCATING and not invalid and \
                nccl_submit.takes(tensor, op, reduce_op, prescale * postscale):
            return nccl_submit.submit_allocating(op, kind, tensor, name, reduce_op, prescale,
                                                 postscale, set_id, splits, group)
        source, staged, ready = staging.stage(source, op, tensor if inplace else None)
        if output is not None:
            output = staging.host_output_like(source, staged)
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
                        splits=splits, group=group, invalid=invalid, finish=finish, ready=ready,
                        drive=drive and staged is None)


def op_name(kind: str, name: Optional[str]) -> Optional[str]:
    """Horovod's name for a named torch operation: "<kind>.<name>", as its torch extension names
    it (GetOpName in mpi_ops_v2.cc), so an allreduce and an allgather in flight may share a user
    name, and the timeline and the stall inspector show what Horovod's show. None stays None
    (kolo names an unnamed operation "<kind>.noname.<n>" by counter, kolo._name)."""
    return None if name is None else f"{kind}.{name}"


def paths_chosen(set_id: int) -> None:
    """Before the first operation on the global set, where no path is chosen yet: a CUDA
    tensor's path needs the ranks' GPUs (staging.py)."""
    if set_id == 0 and not kolo._first_global_op_seen:
        kolo._before_first_global_op()


def _caller_tensor(tensor: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
    # In-place operations return the caller's tensor itself (the core saw a detached alias).
    return tensor


def make_group(handles: list[int]) -> int:
    """One handle standing for several (a grouped operation)."""
    return kolo._group_handle(handles)
