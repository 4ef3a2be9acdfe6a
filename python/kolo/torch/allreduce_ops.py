"""Allreduce and grouped allreduce on torch tensors, as ``horovod.torch.mpi_ops`` has them (that
module re-exports everything here). The blocking forms are autograd functions whose gradient is
the allreduce of the output gradients, with the same op and scaling.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch

import kolo
from kolo import _core
from kolo.torch.basics import handle_average_backwards_compatibility
from kolo.torch.compression import Compression
from kolo.torch import shared_gpu
from kolo.torch.handles import make_group, op_name, paths_chosen, submit, synchronize
from kolo.torch.process_sets import check_process_set, global_process_set


# ---- allreduce -----------------------------------------------------------------------------------

def _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor, process_set,
                     drive=False):
    # Positional (root 0, no splits, no group, nothing invalid): keywords cost a dict per call on
    # the async path. `drive`: a blocking call, whose wait runs the cycles on this thread
    # (kolo._submit).
    return submit(_core.OP_ALLREDUCE, "allreduce", tensor, output, op_name("allreduce", name), op,
                  0, prescale_factor, postscale_factor, process_set, None, (0, 0), "", drive)


def _allreduce_blocking(tensor, average, name, op, prescale_factor, postscale_factor,
                        process_set):
    op = handle_average_backwards_compatibility(op, average)
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return synchronize(_allreduce_async(tensor, output, name, op, prescale_factor,
                                        postscale_factor, process_set, drive=True))


def allreduce_async(tensor: torch.Tensor, average: Optional[bool] = None,
                    name: Optional[str] = None, op: Optional[int] = None,
                    prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                    process_set=global_process_set) -> int:
    """Starts averaging (or op-reducing) `tensor` over all ranks into a new tensor; the input is
    not modified. Returns a handle for poll() / synchronize()."""
    op = handle_average_backwards_compatibility(op, average)
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor,
                            process_set)


def allreduce_async_(tensor: torch.Tensor, average: Optional[bool] = None,
                     name: Optional[str] = None, op: Optional[int] = None,
                     prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                     process_set=global_process_set) -> int:
    """Starts an in-place allreduce of `tensor` (which must be contiguous)."""
    op = handle_average_backwards_compatibility(op, average)
    return _allreduce_async(tensor, None, name, op, prescale_factor, postscale_factor, process_set)


def allreduce_(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
               op: Optional[int] = None, prescale_factor: float = 1.0,
               postscale_factor: float = 1.0, process_set=global_process_set) -> torch.Tensor:
    """In-place allreduce; returns `tensor`."""
    op = handle_average_backwards_compatibility(op, average)
    return synchronize(_allreduce_async(tensor, None, name, op, prescale_factor, postscale_factor,
                                        process_set, drive=True))


class HorovodAllreduce(torch.autograd.Function):
    """Allreduce whose gradient is the same allreduce of the output gradients."""

    @staticmethod
    def forward(ctx, tensor, average, name, op, prescale_factor, postscale_factor, process_set):
        ctx.args = (average, op, prescale_factor, postscale_factor, process_set)
        return _allreduce_blocking(tensor, average, name, op, prescale_factor, postscale_factor,
                                   process_set)

    @staticmethod
    def backward(ctx, grad_output):
        average, op, prescale, postscale, process_set = ctx.args
        reduced = allreduce(grad_output.contiguous(), average=average, op=op,
                            prescale_factor=prescale, postscale_factor=postscale,
                            process_set=process_set)
        return reduced, None, None, None, None, None, None


def allreduce(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
              compression=Compression.none, op: Optional[int] = None,
              prescale_factor: float = 1.0, postscale_factor: float = 1.0,
              process_set=global_process_set) -> torch.Tensor:
    """Averages (default) or op-reduces `tensor` over all ranks into a new tensor; differentiable.

    Arguments match Horovod's: `average` (deprecated; use `op`), `name`, `compression`
    (Compression.none / fp16), `op` (Average, Sum, Min, Max, Product), scale factors applied
    before and after the reduction, and `process_set`.
    """
    compressed, ctx = compression.compress(tensor)
    if compressed.requires_grad and torch.is_grad_enabled():
        reduced = HorovodAllreduce.apply(compressed, average, name, op, prescale_factor,
                                         postscale_factor, process_set)
    else:
        # No graph to record: the autograd Function would only add its cost (several us), and its
        # output would not require grad either.
        reduced = _allreduce_blocking(compressed, average, name, op, prescale_factor,
                                      postscale_factor, process_set)
    return compression.decompress(reduced, ctx)


# ---- grouped allreduce ---------------------------------------------------------------------------

def _grouped_allreduce_async(tensors, outputs, name, op, prescale_factor, postscale_factor,
                             process_set, drive=False):
    if len(tensors) == 0:
        raise ValueError("grouped allreduce needs at least one tensor")
    set_id = check_process_set(process_set)
    base = kolo._name("grouped_allreduce", op_name("grouped_allreduce", name), set_id)
    paths_chosen(set_id)
    if shared_gpu.takes_group(tensors, outputs, op, prescale_factor * postscale_factor):
        # Ranks sharing a GPU: the whole group is one copy, one handshake and one batch of
        # sums, where members one by one cost the caller's thread each.
        return shared_gpu.submit_group(tensors, outputs, base, op, set_id)
    # One group id: the core runs no member before all are ready on every rank, fused together.
    group = kolo._new_group(base, len(tensors))
    handles = kolo.submit_members(group, list(zip(tensors, outputs)), lambda pair, i, g: submit(
        _core.OP_ALLREDUCE, "allreduce", pair[0], pair[1], f"{base}.{i}", op,
        prescale=prescale_factor, postscale=postscale_factor, process_set=process_set, group=g,
        drive=drive))
    return make_group(handles)


def grouped_allreduce_async(tensors: Sequence[torch.Tensor], average: Optional[bool] = None,
                            name: Optional[str] = None, op: Optional[int] = None,
                            prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                            process_set=global_process_set) -> int:
    """Starts allreducing a list of tensors as one group; synchronize() returns the list."""
    op = handle_average_backwards_compatibility(op, average)
    outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in tensors]
    return _grouped_allreduce_async(list(tensors), outputs, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_async_(tensors: Sequence[torch.Tensor], average: Optional[bool] = None,
                             name: Optional[str] = None, op: Optional[int] = None,
                             prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                             process_set=global_process_set) -> int:
    """Starts an in-place grouped allreduce."""
    op = handle_average_backwards_compatibility(op, average)
    return _grouped_allreduce_async(list(tensors), [None] * len(tensors), name, op,
                                    prescale_factor, postscale_factor, process_set)


def grouped_allreduce_(tensors: Sequence[torch.Tensor], average: Optional[bool] = None,
                       name: Optional[str] = None, op: Optional[int] = None,
                       prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                       process_set=global_process_set) -> list:
    """In-place grouped allreduce; returns the tensors."""
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


class HorovodGroupedAllreduce(torch.autograd.Function):
    """Grouped allreduce whose gradient is the grouped allreduce of the output gradients."""

    @staticmethod
    def forward(ctx, average, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.args = (average, op, prescale_factor, postscale_factor, process_set)
        return tuple(synchronize(grouped_allreduce_async(
            list(tensors), average, name, op, prescale_factor, postscale_factor, process_set)))

    @staticmethod
    def backward(ctx, *grad_output):
        average, op, prescale, postscale, process_set = ctx.args
        reduced = grouped_allreduce([g.contiguous() for g in grad_output], average=average, op=op,
                                    prescale_factor=prescale, postscale_factor=postscale,
                                    process_set=process_set)
        return (None, None, None, None, None, None, *reduced)


def grouped_allreduce(tensors: Sequence[torch.Tensor], average: Optional[bool] = None,
                      name: Optional[str] = None, compression=Compression.none,
                      op: Optional[int] = None, prescale_factor: float = 1.0,
                      postscale_factor: float = 1.0, process_set=global_process_set) -> list:
    """Allreduces a list of tensors as one group (fused); differentiable. Returns a list."""
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
    reduced = HorovodGroupedAllreduce.apply(average, name, op, prescale_factor, postscale_factor,
                                            process_set, *compressed)
    return [compression.decompress(t, c) for t, c in zip(reduced, ctxs)]
