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
from kolo.horovod_common import (  # noqa: F401  (Horovod's mpi_ops imports them from its util)
    HorovodBasics, check_installed_version, get_average_backwards_compatibility_fun, gpu_available,
    num_rank_is_power_2)
# allreduce and grouped allreduce live in allreduce_ops.py; re-exported here, as Horovod's.
from kolo.torch.allreduce_ops import (  # noqa: F401
    HorovodAllreduce, HorovodGroupedAllreduce, allreduce, allreduce_, allreduce_async,
    allreduce_async_, grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
    grouped_allreduce_async_)
from kolo.torch.basics import (  # noqa: F401  (re-exported: scripts import them from mpi_ops)
    Adasum, Average, Max, Min, Product, Sum, ccl_built, cross_rank, cross_size, cuda_built,
    ddl_built, gloo_built, gloo_enabled, handle_average_backwards_compatibility, init,
    is_homogeneous, is_initialized, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rank, rocm_built, shutdown, size, start_timeline,
    stop_timeline, sycl_built)
from kolo.torch.compression import Compression
from kolo.torch.handles import make_group, op_name, poll, submit, synchronize  # noqa: F401
from kolo.torch.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, check_process_set, global_process_set, remove_process_set)

HorovodInternalError = kolo.KoloError
# Horovod's per-extension basics object; its own tests reach process sets through it.
_basics = HorovodBasics(__file__, "mpi_lib_v2")


# ---- allgather -----------------------------------------------------------------------------------

def allgather_async(tensor: torch.Tensor, name: Optional[str] = None,
                    process_set=global_process_set) -> int:
    """Starts concatenating every rank's `tensor` along dimension 0 (which may differ by rank)."""
    return submit(_core.OP_ALLGATHER, "allgather", tensor.contiguous(), None,
                  op_name("allgather", name), process_set=process_set)


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


def _check_group(tensors) -> list:
    tensors = list(tensors)
    if len(tensors) == 0:
        raise ValueError("a grouped operation needs at least one tensor")
    return tensors


def grouped_allgather_async(tensors: Sequence[torch.Tensor], name: Optional[str] = None,
                            process_set=global_process_set) -> int:
    """Starts allgathering a list of tensors as one group; synchronize() returns the list."""
    tensors = _check_group(tensors)
    base = kolo._name("grouped_allgather", op_name("grouped_allgather", name),
                      check_process_set(process_set))
    group = kolo._new_group(base, len(tensors))
    return make_group(kolo.submit_members(group, tensors, lambda t, i, g: submit(
        _core.OP_ALLGATHER, "allgather", t, None, f"{base}.{i}", process_set=process_set,
        group=g)))


class HorovodGroupedAllgather(torch.autograd.Function):
    """Grouped allgather; each gradient is this rank's slice of its rank-averaged gradient."""

    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.dims = [t.shape[0] for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allgather_async(list(tensors), name, process_set)))

    @staticmethod
    def backward(ctx, *grad_output):
        reduced = grouped_allreduce([g.contiguous() for g in grad_output], op=Average,
                                    process_set=ctx.process_set)
        dims = allgather(torch.tensor([ctx.dims], dtype=torch.int64),
                         process_set=ctx.process_set)
        offsets = dims[:_rank_in(ctx.process_set)].sum(dim=0).tolist()
        return (None, None, *[g.narrow(0, int(o), d)
                              for g, o, d in zip(reduced, offsets, ctx.dims)])


def grouped_allgather(tensors: Sequence[torch.Tensor], name: Optional[str] = None,
                      process_set=global_process_set) -> list:
    """Allgathers a list of tensors as one group; differentiable. Returns a list."""
    return list(HorovodGroupedAllgather.apply(name, process_set, *_check_group(tensors)))


def sparse_allreduce_async(tensor: torch.Tensor, name: str, op: int,
                           process_set=global_process_set):
    """Starts reducing a sparse COO tensor over all ranks (Average or Sum), as Horovod's: its
    indices and values are allgathered (their counts may differ by rank). Returns a callable
    (not a handle id, as Horovod's) that waits and returns the sparse result, duplicates summed.
    """
    if not isinstance(tensor, torch.Tensor) or not tensor.is_sparse:
        raise TypeError("sparse_allreduce_async needs a sparse COO torch.Tensor")
    if op not in (Average, Sum):
        raise ValueError("sparse_allreduce_async supports op=Average or op=Sum only")
    t = tensor.coalesce()
    indices_handle = allgather_async(t.indices().transpose(0, 1).contiguous(),
                                     name=f"{name}.indices", process_set=process_set)
    values_handle = allgather_async(t.values(), name=f"{name}.values", process_set=process_set)

    def finish() -> torch.Tensor:
        values = synchronize(values_handle)
        indices = synchronize(indices_handle)
        if op == Average:
            values = values / _set_size(process_set)
        return torch.sparse_coo_tensor(indices.transpose(0, 1), values, t.size(),
                                       check_invariants=False).coalesce()

    return finish


# ---- reducescatter -------------------------------------------------------------------------------

def reducescatter_async(tensor: torch.Tensor, name: Optional[str] = None, op: int = Average,
                        process_set=global_process_set, prescale_factor: float = 1.0,
                        postscale_factor: float = 1.0) -> int:
    """Starts reducing `tensor` over all ranks (Average or Sum) and keeping this rank's share of
    the first dimension: rows are split as Horovod does, the first (rows % size) ranks get one
    row more. Returns a handle for poll() / synchronize()."""
    return submit(_core.OP_REDUCESCATTER, "reducescatter", tensor, None,
                  op_name("reducescatter", name), op, prescale=prescale_factor,
                  postscale=postscale_factor, process_set=process_set)


def _reducescatter_grad_scale(op, prescale, postscale, process_set) -> float:
    # Horovod's convention, which its tests check: the gathered output gradient is multiplied by
    # the set's size for Sum and left as is for Average (each rank's output stands for the whole
    # set's contribution), then by both scale factors.
    scale = prescale * postscale
    return scale * _set_size(process_set) if op == Sum else scale


class HorovodReducescatter(torch.autograd.Function):
    """Reducescatter; the gradient is the allgather of the output gradients, times the set's size
    for Sum (as Horovod's) and the scale factors."""

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.args = (op, process_set, prescale_factor, postscale_factor)
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale_factor,
                                               postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        op, process_set, prescale, postscale = ctx.args
        gathered = allgather(grad_output.contiguous(), process_set=process_set)
        scale = _reducescatter_grad_scale(op, prescale, postscale, process_set)
        return (gathered * scale if scale != 1.0 else gathered), None, None, None, None, None


def reducescatter(tensor: torch.Tensor, name: Optional[str] = None,
                  compression=Compression.none, op: int = Average,
                  process_set=global_process_set, prescale_factor: float = 1.0,
                  postscale_factor: float = 1.0) -> torch.Tensor:
    """This rank's share (first dimension split as Horovod does) of the Average (default) or Sum
    of `tensor` over all ranks; differentiable."""
    compressed, ctx = compression.compress(tensor)
    reduced = HorovodReducescatter.apply(compressed, name, op, process_set, prescale_factor,
                                         postscale_factor)
    return compression.decompress(reduced, ctx)


def grouped_reducescatter_async(tensors: Sequence[torch.Tensor], name: Optional[str] = None,
                                op: int = Average, process_set=global_process_set,
                                prescale_factor: float = 1.0,
                                postscale_factor: float = 1.0) -> int:
    """Starts reducescattering a list of tensors as one group; synchronize() returns the list."""
    tensors = _check_group(tensors)
    base = kolo._name("grouped_reducescatter", op_name("grouped_reducescatter", name),
                      check_process_set(process_set))
    group = kolo._new_group(base, len(tensors))
    return make_group(kolo.submit_members(group, tensors, lambda t, i, g: submit(
        _core.OP_REDUCESCATTER, "reducescatter", t, None, f"{base}.{i}", op,
        prescale=prescale_factor, postscale=postscale_factor, process_set=process_set, group=g)))


class HorovodGroupedReducescatter(torch.autograd.Function):
    """Grouped reducescatter; gradients are the grouped allgather of the output gradients."""

    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.args = (op, process_set, prescale_factor, postscale_factor)
        return tuple(synchronize(grouped_reducescatter_async(
            list(tensors), name, op, process_set, prescale_factor, postscale_factor)))

    @staticmethod
    def backward(ctx, *grad_output):
        op, process_set, prescale, postscale = ctx.args
        gathered = grouped_allgather([g.contiguous() for g in grad_output],
                                     process_set=process_set)
        scale = _reducescatter_grad_scale(op, prescale, postscale, process_set)
        return (None, None, None, None, None, *[g * scale for g in gathered])


def grouped_reducescatter(tensors: Sequence[torch.Tensor], name: Optional[str] = None,
                          compression=Compression.none, op: int = Average,
                          process_set=global_process_set, prescale_factor: float = 1.0,
                          postscale_factor: float = 1.0) -> list:
    """Reducescatters a list of tensors as one group; differentiable. Returns a list."""
    compressed, ctxs = zip(*[compression.compress(t) for t in _check_group(tensors)])
    reduced = HorovodGroupedReducescatter.apply(name, op, process_set, prescale_factor,
                                                postscale_factor, *compressed)
    return [compression.decompress(t, c) for t, c in zip(reduced, ctxs)]


# ---- alltoall ------------------------------------------------------------------------------------

def alltoall_async(tensor: torch.Tensor, splits=None, name: Optional[str] = None,
                   process_set=global_process_set) -> int:
    """Starts an alltoall: rows splits[r] of the first dimension (in order) go to rank r (without
    splits, the first dimension is divided evenly). synchronize() returns (output,
    received_splits): the received rows in rank order and an int32 tensor of their counts."""
    name = op_name("alltoall", name)
    splits, invalid = kolo._alltoall_splits(splits, name)
    return submit(_core.OP_ALLTOALL, "alltoall", tensor, None, name, splits=splits,
                  process_set=process_set, invalid=invalid)


class HorovodAlltoall(torch.autograd.Function):
    """Alltoall; the gradient is the alltoall of the output gradient sent back with the
    received splits."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received_splits = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.process_set = process_set
        ctx.received_splits = received_splits
        if splits is None:
            return output
        ctx.mark_non_differentiable(received_splits)
        return output, received_splits

    @staticmethod
    def backward(ctx, grad_output, *dead_gradients):  # Horovod's parameter names
        grad, _ = alltoall(grad_output.contiguous(), splits=ctx.received_splits,
                           process_set=ctx.process_set)
        return grad, None, None, None


def alltoall(tensor: torch.Tensor, splits=None, name: Optional[str] = None,
             process_set=global_process_set):
    """Scatters rows of `tensor` to every rank and gathers what every rank sent here;
    differentiable. Returns the received tensor, or (received tensor, received_splits) when
    `splits` was given, as Horovod does."""
    return HorovodAlltoall.apply(tensor, splits, name, process_set)


# ---- broadcast -----------------------------------------------------------------------------------

def broadcast_async(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
                    process_set=global_process_set) -> int:
    """Starts copying root_rank's `tensor` into a new tensor on every rank."""
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return submit(_core.OP_BROADCAST, "broadcast", tensor, output, op_name("broadcast", name),
                  root=root_rank, process_set=process_set)


def broadcast_async_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
                     process_set=global_process_set) -> int:
    """Starts an in-place broadcast of root_rank's `tensor`."""
    return submit(_core.OP_BROADCAST, "broadcast", tensor, None, op_name("broadcast", name),
                  root=root_rank, process_set=process_set)


def broadcast_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
               process_set=global_process_set) -> torch.Tensor:
    """In-place broadcast; returns `tensor`."""
    return synchronize(submit(_core.OP_BROADCAST, "broadcast", tensor, None,
                              op_name("broadcast", name), root=root_rank,
                              process_set=process_set, drive=True))


class HorovodBroadcast(torch.autograd.Function):
    """Broadcast; the gradient is the rank-averaged output gradient on the root, zero elsewhere."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
        return synchronize(submit(_core.OP_BROADCAST, "broadcast", tensor, output,
                                  op_name("broadcast", name), root=root_rank,
                                  process_set=process_set, drive=True))

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

    ``device`` is Horovod's: the CUDA device index for this rank's zeros in the CUDA allreduces
    its peers still run through NCCL (the communicator is made on it if this rank ran no CUDA
    operation yet); -1 (the default) means the GPU of this rank's earlier CUDA operations, and a
    rank that ran none and joins with -1 fails its peers' CUDA allreduce, naming itself. kolo's
    NCCL path has one GPU per rank: a device other than that of this rank's earlier CUDA
    operations is an error naming both (Horovod would put the zeros there). CPU tensors' zeros
    live in host memory whatever ``device`` is.
    """
    return int(kolo.join(device))


def _set_size(process_set) -> int:
    """How many ranks `process_set` has (the job's size for the global set)."""
    if process_set is None or check_process_set(process_set) == 0:
        return size()
    return process_set.size()


def _rank_in(process_set) -> int:
    """This process's rank within `process_set` (its job rank for the global set)."""
    if process_set is None or check_process_set(process_set) == 0:
        return rank()
    return process_set.rank()
