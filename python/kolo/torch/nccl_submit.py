"""CUDA tensors on kolo's NCCL path (gpu_path.NCCL): allreduce (grouped too) and broadcast
(submit), allgather, alltoall and reducescatter, grouped too (submit_allocating).

Submitting never waits for the GPU: an event is recorded on the caller's current stream and
handed to the core with the tensor's device pointers and device index
(``_core.enqueue_pointers(..., device_index, caller_event)``); kolo's own stream waits for that
event before NCCL reads the memory (core/executor_device.cc). ``synchronize()`` (and the
optimizer's ``step()``, which synchronizes its handles) waits on the host only for what Horovod's
synchronize must wait for, the negotiation and the collective being queued, then makes the
caller's current stream at that moment wait for kolo's completion event
(``_core.finish_on_stream``): kernels queued afterwards see the result, and the thread goes on.

The caller's tensors stay referenced until synchronize(). Their memory is safe to reuse after
that on the stream synchronize() ordered (the current stream; the one the caching allocator
gave them, in the usual single-stream program).

Allgather, alltoall and reducescatter learn their output's shape only from the negotiation: the
submit registers an allocator (``_core.enqueue_device_output(..., allocator)``) that kolo's
background thread calls, holding the GIL, with the agreed shape; it allocates with torch on the
tensor's device (the caching allocator, on that thread's current stream, the device's default
one), records an event on that stream which kolo's stream waits for before NCCL writes the block
(kernels queued there before the block's last free may still use it), and keeps the tensor until
synchronize() returns it. A failed allocation fails the op on every rank, naming this one
(core/executor_device_outputs.cc). The block belongs to the default stream for torch's
allocator, as any tensor allocated there: a program that uses the result on another stream
calls record_stream as it would for its own tensors.

Not here (the async host path, staging.py, takes them): the reductions the NCCL path does not run
(Adasum, a scale on Min/Max/Product, an integer Average; a scaled Sum or Average of a CUDA
tensor arrives unscaled, device_scale.py having applied the factors with torch); tensors of the
types NCCL lacks (int16, bool); empty or non-contiguous in-place tensors (for allgather and
alltoall: rows of no elements, the same on every rank, while a rank with zero rows goes to NCCL
like its peers); and operations carrying an error to report (the general path reports it on
every rank).

``CudaCalls`` holds the CUDA calls (torch's); a test replaces it (use_calls) to check, without a
GPU, which pointer, device and event reach the core and what synchronize() waits on.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Optional

import torch

import kolo
from kolo import _core, _handles
from kolo.torch import gpu_path, staging

# What NCCL reduces and moves (gpu/nccl_collectives.cc's nccl_type_of); int16 and bool are not
# NCCL types and take the async host path.
_NCCL_DTYPES = {
    torch.uint8: _core.DTYPE_UINT8, torch.int8: _core.DTYPE_INT8,
    torch.int32: _core.DTYPE_INT32, torch.int64: _core.DTYPE_INT64,
    torch.float16: _core.DTYPE_FLOAT16, torch.bfloat16: _core.DTYPE_BFLOAT16,
    torch.float32: _core.DTYPE_FLOAT32, torch.float64: _core.DTYPE_FLOAT64,
}


class CudaCalls:
    """The few CUDA facts and calls of the NCCL submit, through torch."""

    def is_cuda(self, tensor: torch.Tensor) -> bool:
        return tensor.is_cuda

    def device_index(self, tensor: torch.Tensor) -> int:
        return tensor.device.index if tensor.device.index is not None else \
            torch.cuda.current_device()

    def record_on_caller(self, device: int) -> tuple[Any, int]:
        """An event recorded on the calling thread's current stream of `device` (everything
        queued so far, the tensor's producer included), and its cudaEvent_t as an integer."""
        event = torch.cuda.Event()  # timing off: all kolo needs is order
        event.record(torch.cuda.current_stream(device))
        return event, int(event.cuda_event)

    def allocate(self, shape: list, dtype: torch.dtype, device: int) -> torch.Tensor:
        """The output of an allgather, alltoall or reducescatter (kolo's thread, GIL held)."""
        return torch.empty(shape, dtype=dtype, device=torch.device("cuda", device))

    def caller_stream(self, device: int) -> int:
        """The caller's current stream of `device` now (at synchronize), as a cudaStream_t."""
        return int(torch.cuda.current_stream(device).cuda_stream)


_calls: Any = CudaCalls()


def use_calls(calls: Any) -> Any:
    """Replaces the CUDA calls (tests); returns the previous ones."""
    global _calls
    previous, _calls = _calls, calls
    return previous


def is_cuda(tensor: torch.Tensor) -> bool:
    """Whether `tensor` is a CUDA tensor (for the CPU tests' stand-in GPU, whether it plays one)."""
    return _calls.is_cuda(tensor)


def takes(tensor: torch.Tensor, op: int, reduce_op: int = 0, scale: float = 1.0) -> bool:
    """True when `tensor` goes to the NCCL path: a non-empty CUDA tensor of a type NCCL has, for
    an operation gpu_path chose NCCL for, with a reduction the NCCL path runs (`scale`: prescale
    times postscale). A CPU tensor is decided by its first test."""
    return (_calls.is_cuda(tensor) and tensor.dtype in _NCCL_DTYPES and _has_data(tensor, op)
            and (op != _core.OP_ALLREDUCE or _nccl_reduces(tensor.dtype, reduce_op, scale))
            and (op != _core.OP_REDUCESCATTER
                 or (scale == 1.0 and _nccl_reduces(tensor.dtype, reduce_op, scale)))
            and staging.path_for("cuda", op) == gpu_path.NCCL)


def _has_data(tensor: torch.Tensor, op: int) -> bool:
    """Not empty. For allgather and alltoall only the rows count, which every rank shares: a rank
    with zero rows must go where its peers go (it sends nothing and may still receive)."""
    if op in (_core.OP_ALLGATHER, _core.OP_ALLTOALL) and tensor.dim() > 0:
        return all(size > 0 for size in tensor.shape[1:])
    return tensor.numel() > 0


def _nccl_reduces(dtype: torch.dtype, reduce_op: int, scale: float) -> bool:
    """What gpu/nccl_collectives.cc runs: not Adasum (the host runs it, as Horovod stages it on
    GPUs); a scale (one PreMulSum) only on a floating-point Sum or Average; integer tensors'
    Average (a truncating division, as the host path does it) not through ncclAvg."""
    if reduce_op == _core.REDUCE_ADASUM:
        return False
    if not dtype.is_floating_point:
        return scale == 1.0 and reduce_op != _core.REDUCE_AVERAGE
    return scale == 1.0 or reduce_op in (_core.REDUCE_SUM, _core.REDUCE_AVERAGE)


def submit(op: int, kind: str, tensor: torch.Tensor, output: Optional[torch.Tensor],
           name: Optional[str], reduce_op: int, root: int, prescale: float, postscale: float,
           set_id: int, group: tuple) -> Optional[int]:
    """Queues allreduce or broadcast of a CUDA tensor in NCCL (output None: in place); None when
    the tensor cannot go as it is (an in-place tensor that is not contiguous), for the general
    path to report."""
    source = tensor.detach()
    if output is None and not source.is_contiguous():
        return None
    if not source.is_contiguous():
        source = source.contiguous()  # kept referenced below until synchronize()
    target = source if output is None else output.detach()
    if name is None:
        name = kolo._name(kind, None, set_id)
    device = _calls.device_index(source)
    event, event_handle = _calls.record_on_caller(device)
    handle = _core.enqueue_pointers(
        op, name, reduce_op, root, float(prescale), float(postscale), set_id, group[0], group[1],
        _NCCL_DTYPES[source.dtype], source.shape, source.data_ptr(), target.data_ptr(), False,
        device_index=device, caller_event=event_handle)
    # The event is kept with the handle: kolo's thread waits for it on its stream later.
    result = tensor if output is None else output
    _handles.track(handle, (source, event), output, op, partial(_result, result),
                   on_stream=partial(_caller_stream, device, name))
    return handle


def submit_allocating(op: int, kind: str, tensor: torch.Tensor, name: Optional[str],
                      reduce_op: int, prescale: float, postscale: float, set_id: int,
                      splits: Optional[list], group: tuple) -> int:
    """Queues allgather, alltoall or reducescatter of a CUDA tensor in NCCL; its output is
    allocated on the tensor's device when kolo's thread knows the agreed shape."""
    source = tensor.detach().contiguous()  # kept referenced below until synchronize()
    if name is None:
        name = kolo._name(kind, None, set_id)
    device = _calls.device_index(source)
    outputs: list = []  # the allocated output, once kolo's thread asked for it

    def allocate(shape: list) -> tuple[int, int]:
        # On kolo's thread: its current stream is the one the caching allocator handed the block
        # out for, whose earlier kernels may still use it; kolo's stream waits for this event.
        output = _calls.allocate(shape, source.dtype, device)
        ready, ready_handle = _calls.record_on_caller(device)
        outputs.append((output, ready))
        return output.data_ptr(), ready_handle

    event, event_handle = _calls.record_on_caller(device)
    handle = _core.enqueue_device_output(
        op, name, reduce_op, float(prescale), float(postscale), set_id, group[0], group[1],
        _NCCL_DTYPES[source.dtype], source.shape, source.data_ptr(),
        [] if splits is None else [int(s) for s in splits], device, event_handle, allocate)
    # The allocator is borrowed by the core: it stays referenced here until synchronize().
    finish = partial(_allocated_result, outputs, op == _core.OP_ALLTOALL)
    _handles.track(handle, (source, event, allocate), None, op, finish,
                   on_stream=partial(_caller_stream, device, name))
    return handle


def _allocated_result(outputs: list, alltoall: bool, received_splits: list) -> Any:
    output = outputs[0][0]
    if alltoall:
        return output, torch.tensor(received_splits, dtype=torch.int32)
    return output


def _caller_stream(device: int, name: str) -> tuple[int, int, str]:
    # Read at synchronize(): the stream current then is the one that must see the result.
    return _calls.caller_stream(device), device, name


def _result(result: torch.Tensor, _core_result: Any) -> torch.Tensor:
    return result
