"""Collectives on torch tensors, as ``horovod.torch.mpi_ops``: same names, signatures, defaults.

Every operation is keyed by its name (unnamed ones get per-kind counters, identical on every rank
of an SPMD program); tensors must agree across ranks for a name, else every rank gets a
HorovodInternalError naming the tensor and the ranks. The blocking forms are autograd functions:
allreduce's gradient is the allreduce of the output gradients (same op and scaling); allgather's
and broadcast's, as Horovod's, average the output gradients over ranks first, then take this
rank's slice (allgather) or keep them on the root only (broadcast).
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch

import kolo
from kolo import _core
from kolo.torch.basics import (  # noqa: F401  (re-exported: scripts import them from mpi_ops)
    Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank, cross_size, cuda_built,
    ddl_built, gloo_built, gloo_enabled, handle_average_backwards_compatibility, init,
    is_homogeneous, is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size, start_timeline,
    stop_timeline)
from kolo.torch.compression import Compression
from kolo.torch.handles import make_group, poll, submit, synchronize  # noqa: F401
from kolo.torch.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, check_process_set, global_process_set, remove_process_set)

HorovodInternalError = kolo.KoloError


# ---- allreduce -----------------------------------------------------------------------------------

def _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor, process_set):
    return submit(_core.OP_ALLREDUCE, "allreduce", tensor, output, name, op,
                  prescale=prescale_factor, postscale=postscale_factor, process_set=process_set)


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
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor, process_set))


class HorovodAllreduce(torch.autograd.Function):
    """Allreduce whose gradient is the same allreduce of the output gradients."""

    @staticmethod
    def forward(ctx, tensor, average, name, op, prescale_factor, postscale_factor, process_set):
        ctx.args = (average, op, prescale_factor, postscale_factor, process_set)
        return synchronize(allreduce_async(tensor, average, name, op, prescale_factor,
                                           postscale_factor, process_set))

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
    reduced = HorovodAllreduce.apply(compressed, average, name, op, prescale_factor,
                                     postscale_factor, process_set)
    return compression.decompress(reduced, ctx)


# ---- grouped allreduce ---------------------------------------------------------------------------

def _grouped_allreduce_async(tensors, outputs, name, op, prescale_factor, postscale_factor,
                             process_set):
    if len(tensors) == 0:
        raise ValueError("grouped allreduce needs at least one tensor")
    base = kolo._name("grouped_allreduce", name, check_process_set(process_set))
    # Submitted back to back, the members are ready in the same cycle and the core fuses them.
    handles = [_allreduce_async(t, o, f"{base}.{i}", op, prescale_factor, postscale_factor,
                                process_set)
               for i, (t, o) in enumerate(zip(tensors, outputs))]
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


# ---- allgather -----------------------------------------------------------------------------------

def allgather_async(tensor: torch.Tensor, name: Optional[str] = None,
                    process_set=global_process_set) -> int:
    """Starts concatenating every rank's `tensor` along dimension 0 (which may differ by rank)."""
    return submit(_core.OP_ALLGATHER, "allgather", tensor.contiguous(), None, name,
                  process_set=process_set)


class HorovodAllgather(torch.autograd.Function):
    """Allgather; the gradient is this rank's slice of the rank-averaged output gradient."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.dim = tensor.shape[0]
        ctx.process_set = process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        reduced = allreduce(grad_output.contiguous(), op=Average, process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dim], dtype=torch.int64), process_set=ctx.process_set)
        offset = int(dims[:_rank_in(ctx.process_set)].sum().item())
        return reduced.narrow(0, offset, ctx.dim), None, None


def allgather(tensor: torch.Tensor, name: Optional[str] = None,
              process_set=global_process_set) -> torch.Tensor:
    """Every rank's `tensor` concatenated along dimension 0 (the first dimension may differ by
    rank, the others must match); differentiable."""
    return HorovodAllgather.apply(tensor, name, process_set)


# ---- broadcast -----------------------------------------------------------------------------------

def broadcast_async(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
                    process_set=global_process_set) -> int:
    """Starts copying root_rank's `tensor` into a new tensor on every rank."""
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return submit(_core.OP_BROADCAST, "broadcast", tensor, output, name, root=root_rank,
                  process_set=process_set)


def broadcast_async_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
                     process_set=global_process_set) -> int:
    """Starts an in-place broadcast of root_rank's `tensor`."""
    return submit(_core.OP_BROADCAST, "broadcast", tensor, None, name, root=root_rank,
                  process_set=process_set)


def broadcast_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
               process_set=global_process_set) -> torch.Tensor:
    """In-place broadcast; returns `tensor`."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


class HorovodBroadcast(torch.autograd.Function):
    """Broadcast; the gradient is the rank-averaged output gradient on the root, zero elsewhere."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        reduced = allreduce(grad_output.contiguous(), op=Average, process_set=ctx.process_set)
        if rank() != ctx.root_rank:  # root_rank is a job rank, also within a process set
            reduced = reduced * 0
        return reduced, None, None, None


def broadcast(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
              process_set=global_process_set) -> torch.Tensor:
    """root_rank's `tensor`, copied to every rank (a new tensor); differentiable."""
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


# ---- barrier / join ------------------------------------------------------------------------------

def barrier(process_set=global_process_set) -> None:
    """Returns once every rank (of the process set) has called barrier()."""
    kolo.barrier(check_process_set(process_set))


def join(device: int = -1) -> int:
    """Declares that this rank has run out of data (uneven inputs): until every rank has joined,
    it takes part with zeros in every allreduce the others still run (so Average still divides by
    the whole job's size, as in Horovod), and allgather, broadcast, alltoall and reducescatter
    fail while a rank is joined. Blocks until all ranks joined; returns the rank that joined last.

    ``device`` is accepted as Horovod's (where the zeros live); this build runs CPU tensors only,
    so the zeros are always in host memory.
    """
    return int(kolo.join())


def _rank_in(process_set) -> int:
    """This process's rank within `process_set` (its job rank for the global set)."""
    if process_set is None or check_process_set(process_set) == 0:
        return rank()
    return process_set.rank()
