"""Tensors on a device other than the CPU reach kolo's core through host memory, on one of two
paths that gpu_path.py chooses once per device kind (one warning says which and why):

- **The asynchronous host path** (CUDA): submitting records an event on the caller's current
  stream; kolo's own stream waits for it and copies the tensor into pinned host memory with a
  non-blocking copy, then records a second event, whose handle goes to the core with the
  operation. The caller's thread never waits: kolo's background thread waits for that event
  (core/executor.cc, gpu/device_event_wait.h) before it reads the bytes, runs the CPU collective,
  and synchronize() copies the result back with a non-blocking copy on the caller's current stream
  at that moment, so every kernel queued on it afterwards sees the result. The source tensor is
  marked in use on kolo's stream (record_stream), so the caching allocator cannot hand its memory
  out before the copy is done.
- **Staging** (xpu, mps, xla / privateuse1, or KOLO_GPU_OPERATIONS=STAGING): a blocking
  ``.to("cpu")`` when the operation is submitted (it sees every kernel queued before the call), and
  the copy back at synchronize() on the caller's current stream.

Either way the collective runs on a host copy; synchronize() writes the result back to the caller's
tensor (in-place operations) or returns a new tensor on the caller's device. Cost: two copies over
the host link per tensor (NCCL avoids them: nccl_submit.py, for every operation it takes).

``KOLO_STAGE_THROUGH_HOST=1`` forces staging for CPU tensors too, ``=async`` the asynchronous path
played on host memory (HostOnlyCalls: the same steps in the same order, with CPU tensors standing
for device memory and no events), so every line here runs without a GPU. A ``meta`` tensor has no
data and gets a ValueError.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

import kolo
from kolo.torch import gpu_path

FORCE_ENV = "KOLO_STAGE_THROUGH_HOST"
# Read once, when kolo.torch is imported (a test knob; reading the environment costs about half a
# microsecond per operation).
_FORCE_VALUE = os.environ.get(FORCE_ENV, "")
FORCED = _FORCE_VALUE not in ("", "0")
FORCED_ASYNC = _FORCE_VALUE == "async"

# Operation codes of the core -> gpu_path's operation names.
_OP_NAMES: dict[int, str] = {}


def _op_name(op: int) -> str:
    if not _OP_NAMES:
        from kolo import _core

        _OP_NAMES.update({_core.OP_ALLREDUCE: "allreduce", _core.OP_ALLGATHER: "allgather",
                          _core.OP_BROADCAST: "broadcast", _core.OP_ALLTOALL: "alltoall",
                          _core.OP_REDUCESCATTER: "reducescatter"})
    return _OP_NAMES.get(op, "allreduce")


class CudaCalls:
    """The CUDA calls of the asynchronous host path (torch's), in one place: the path's code names
    no CUDA function, and the CPU tests replace this object to check the order of the calls."""

    def __init__(self) -> None:
        self._streams: dict[int, Any] = {}
        self._lock = threading.Lock()

    def current_stream(self, device: torch.device) -> Any:
        return torch.cuda.current_stream(device)

    def kolo_stream(self, device: torch.device) -> Any:
        """kolo's own stream on `device`, created on first use and kept."""
        index = device.index if device.index is not None else torch.cuda.current_device()
        with self._lock:
            stream = self._streams.get(index)
            if stream is None:
                stream = self._streams[index] = torch.cuda.Stream(device=index)
            return stream

    def new_event(self) -> Any:
        return torch.cuda.Event()  # timing off: the cheapest kind, all kolo needs is order

    def record(self, event: Any, stream: Any) -> None:
        event.record(stream)

    def wait(self, stream: Any, event: Any) -> None:
        stream.wait_event(event)

    def pinned_empty(self, shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, pin_memory=True)

    def copy_on(self, stream: Any, destination: torch.Tensor, source: torch.Tensor) -> None:
        with torch.cuda.stream(stream):
            destination.copy_(source, non_blocking=True)

    def keep_until_done(self, tensor: torch.Tensor, stream: Any) -> None:
        tensor.record_stream(stream)

    def event_handle(self, event: Any, device: torch.device) -> tuple[int, int]:
        """(cudaEvent_t as an integer, device index): what the core waits for."""
        index = device.index if device.index is not None else torch.cuda.current_device()
        return int(event.cuda_event), index

    def empty_on(self, device: torch.device, shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device=device)


class HostOnlyCalls:
    """The asynchronous path's steps played on host memory (KOLO_STAGE_THROUGH_HOST=async and the
    tests): copies happen at once, streams and events are names, and `log` keeps every call in
    order so a test can check it. The core gets no event (0) and waits for nothing."""

    def __init__(self) -> None:
        self.log: list[tuple] = []
        self._events = 0

    def current_stream(self, device: torch.device) -> str:
        return "caller"

    def kolo_stream(self, device: torch.device) -> str:
        return "kolo"

    def new_event(self) -> str:
        self._events += 1
        return f"event{self._events}"

    def record(self, event: str, stream: str) -> None:
        self.log.append(("record", event, stream))

    def wait(self, stream: str, event: str) -> None:
        self.log.append(("wait", stream, event))

    def pinned_empty(self, shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
        self.log.append(("pinned_empty", tuple(shape), dtype))
        return torch.empty(shape, dtype=dtype)

    def copy_on(self, stream: str, destination: torch.Tensor, source: torch.Tensor) -> None:
        self.log.append(("copy", stream, destination.data_ptr(), source.data_ptr()))
        destination.copy_(source)

    def keep_until_done(self, tensor: torch.Tensor, stream: str) -> None:
        self.log.append(("keep", tensor.data_ptr(), stream))

    def event_handle(self, event: str, device: torch.device) -> tuple[int, int]:
        self.log.append(("handed_to_core", event))
        return 0, -1

    def empty_on(self, device: torch.device, shape: torch.Size, dtype: torch.dtype) -> torch.Tensor:
        self.log.append(("empty_on_device", tuple(shape), dtype))
        return torch.empty(shape, dtype=dtype, device=device)


_calls: Any = HostOnlyCalls() if FORCED_ASYNC else CudaCalls()
# Decided per session (kolo.init empties it): a reset may change which ranks share a GPU, and a
# worker that joins compares GPUs at its first CUDA tensor, so every member must do so again.
_choices: dict[str, dict[str, gpu_path.PathChoice]] = kolo.session_cache()
_choices_lock = threading.Lock()


def use_calls(calls: Any) -> Any:
    """Replaces the CUDA calls (tests); returns the previous ones."""
    global _calls
    previous, _calls = _calls, calls
    return previous


def _cuda_uuid(device_index: int) -> str:
    """This GPU's UUID (torch reads cudaGetDeviceProperties' uuid)."""
    return str(torch.cuda.get_device_properties(device_index).uuid)


# Every rank's (host, GPU UUID, NCCL loaded), exchanged once per session (kolo.init empties it)
# before the rank's first operation on the global process set, whatever its device: a point
# every rank reaches together. Exchanged at the first CUDA tensor instead (sessions 33 to 35), a
# rank whose first tensor of a session was a CPU one left the others waiting in the exchange
# (Horovod's test_horovod_allreduce_cpu_gpu_error hung on the H200 in session 36: rank 0 passes a
# CUDA tensor, rank 1 a CPU one, and each test is a session of its own).
_gpu_table: dict = kolo.session_cache()
_gpu_table_lock = threading.Lock()
# A second exchange at most: when a rank had not chosen its GPU at the first one.
_MAX_EXCHANGES = 2


def _cuda_present() -> bool:
    """Whether this process can have CUDA tensors at all (a test may say yes without a GPU)."""
    return torch.cuda.is_available()


def _own_gpu() -> tuple[str, str, bool]:
    """This rank's row: its host, its GPU's UUID ("" while torch has not initialized CUDA: the
    rank has not chosen its GPU yet; asking would create a context on GPU 0) and whether NCCL
    loaded in this process."""
    import socket

    from kolo import _core

    uuid = _cuda_uuid(torch.cuda.current_device()) if torch.cuda.is_initialized() else ""
    return socket.gethostname(), uuid, bool(_core.nccl_status()["loaded"])


def _exchanged_gpus(choosing: bool) -> tuple:
    """Every rank's row (_own_gpu), in rank order. `choosing`: a CUDA tensor's path is being
    chosen, and if some rank had not chosen its GPU at the first exchange (its first operation
    came before torch.cuda.set_device), the rows are exchanged once more, now. Every rank holds
    the same table, so every rank that chooses does so; this second exchange is the one point
    where the ranks must reach their first CUDA tensor together (as the guides' scripts do)."""
    from kolo.common.objects import allgather_object

    # The session's first exchange is the hook of its first global operation, which the
    # allgather below would be when a process set's operation or a direct question comes first:
    # run it now, outside the lock (inside, the hook would wait for the lock this thread holds:
    # Horovod's process-set tests hung so on the H200, session 39).
    kolo._before_first_global_op()
    with _gpu_table_lock:
        table = _gpu_table.get("rows")
        exchanges = _gpu_table.get("exchanges", 0)
        if table is None or (choosing and gpu_path.unchosen(table) and exchanges < _MAX_EXCHANGES):
            exchanges += 1
            table = tuple(gpu_path.gather_gpus(_own_gpu(), lambda mine: allgather_object(
                mine, name=f"kolo.gpu_uuids.{exchanges}")))
            _gpu_table.update(rows=table, exchanges=exchanges)
        return table


def exchange_gpus() -> None:
    """kolo's hook before a rank's first operation on the global process set in a session."""
    if _cuda_present():
        _exchanged_gpus(choosing=False)


if kolo._core.NCCL_BUILT:  # without an NCCL backend the ranks' GPUs decide nothing
    kolo.on_first_global_op(exchange_gpus)


# The shared-GPU path's self-test (shared_gpu_calls.py registers it when kolo.torch is imported).
_ipc_self_tests: list = []


def on_ipc_self_test(test) -> None:
    """Registers `test()`: why device memory cannot be shared here after all, "" when it can."""
    _ipc_self_tests.append(test)


def _cuda_ipc_unavailable() -> str:
    """Why this process cannot map its peers' device memory ("" when it can: the runtime has
    the IPC calls and they work here; tests replace it: a CPU machine may have a CUDA runtime
    installed)."""
    from kolo import _core

    reason = str(_core.cuda_ipc_unavailable())
    if reason or not _ipc_self_tests:
        return reason or "the shared-GPU path is not loaded"
    return _ipc_self_tests[0]()


def _local_facts(device_type: str) -> gpu_path.GpuFacts:
    """What the choice needs. The ranks' GPUs and NCCL are compared (the exchange above) only
    where this version has an NCCL backend and the process has CUDA; device memory sharing is
    tried (the IPC self-test: device memory allocated and freed, a device synchronize) only
    where the ranks share one GPU in a job that is not elastic, the one case that asks it."""
    from kolo import _core

    cuda = device_type == "cuda" and _cuda_present()
    built = bool(_core.NCCL_BUILT)
    local = dict(device_type=device_type, cuda_usable=cuda, nccl_backend_built=built,
                 env=os.environ)
    if not (cuda and built):
        return gpu_path.GpuFacts(**local)
    facts = gpu_path.facts_from_table(_exchanged_gpus(choosing=True), kolo.rank(),
                                      str(_core.nccl_status()["reason"]), **local)
    if gpu_path.may_share_the_gpu(facts):
        facts = dataclasses.replace(facts, ipc_unavailable=_cuda_ipc_unavailable())
    return facts


def path_for(device_type: str, op: int) -> str:
    """gpu_path's choice for `op` on tensors of `device_type`, decided on the first tensor of that
    kind (the ranks' devices are set by then: guides call torch.cuda.set_device after init), with
    one warning."""
    choices = _choices.get(device_type)
    if choices is None:
        with _choices_lock:
            choices = _choices.get(device_type)
            if choices is None:
                choices = gpu_path.choose(_local_facts(device_type))
                _warn_once(gpu_path.warning_text(choices, device_type))
                _choices[device_type] = choices
    return choices[_op_name(op)].path


def _warn_once(text: str) -> None:
    import kolo

    # One warning for the job: every rank decides the same, rank 0 says it.
    if not kolo.is_initialized() or kolo.rank() == 0:
        warnings.warn(text, RuntimeWarning, stacklevel=4)


@dataclass
class Staged:
    """What synchronize() owes the caller of one staged operation."""

    device: torch.device
    # The caller's tensor for an in-place operation (the host result is copied into it).
    inplace_target: Optional[torch.Tensor]
    # The asynchronous host path: the result goes back with a non-blocking copy.
    asynchronous: bool = False
    # Kept alive until synchronize(): the event the core waits for (its handle must stay valid).
    keep: list = field(default_factory=list)


def needs_staging(tensor: torch.Tensor, name: str) -> bool:
    """True when `tensor` must go through host memory; refuses tensors without data."""
    if tensor.device.type == "meta":
        raise ValueError(f"tensor '{name}' is on the meta device: it has no data to communicate "
                         "(materialize it, e.g. with .to_empty(device=...), first)")
    return tensor.device.type != "cpu" or FORCED


def stage(source: torch.Tensor, op: int,
          inplace_target: Optional[torch.Tensor]) -> tuple[torch.Tensor, Staged, tuple[int, int]]:
    """The host copy of `source` the core works on, what synchronize() owes the caller, and the
    (event, device) the core must wait for before reading the copy ((0, -1): none)."""
    # NCCL chosen, but this tensor cannot go (a type NCCL lacks, an empty tensor): the
    # asynchronous host path, not the blocking staging.
    asynchronous = FORCED_ASYNC or (source.device.type != "cpu"
                                    and path_for(source.device.type, op) != gpu_path.STAGING)
    staged = Staged(source.device, inplace_target, asynchronous)
    if not asynchronous:
        return to_host(source), staged, (0, -1)
    host, copied = to_host_async(source, _calls)
    staged.keep.append(copied)
    return host, staged, _calls.event_handle(copied, source.device)


def host_output_like(host: torch.Tensor, staged: Staged) -> torch.Tensor:
    """A host output buffer for an out-of-place operation on a staged tensor (pinned on the
    asynchronous path, so the copy back does not block)."""
    if staged.asynchronous:
        return _calls.pinned_empty(host.shape, host.dtype)
    return torch.empty_like(host)


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous host copy of `tensor`, made after all work queued on the current stream
    (a blocking copy on the caller's current stream: for CUDA, the stream is synchronized)."""
    return tensor.detach().to("cpu", copy=True).contiguous()


def to_host_async(tensor: torch.Tensor, calls: Any) -> tuple[torch.Tensor, Any]:
    """A pinned host copy of `tensor` issued on kolo's stream after everything queued on the
    caller's current stream, without waiting for it; returns the copy and the event recorded after
    it (its completion means the host bytes are there)."""
    device = tensor.device
    caller = calls.current_stream(device)
    stream = calls.kolo_stream(device)
    submitted = calls.new_event()
    calls.record(submitted, caller)  # everything the caller queued so far, the tensor's producer
    calls.wait(stream, submitted)
    host = calls.pinned_empty(tensor.shape, tensor.dtype)
    calls.copy_on(stream, host, tensor.detach())
    calls.keep_until_done(tensor, stream)  # its memory is not reused before the copy ran
    copied = calls.new_event()
    calls.record(copied, stream)
    return host, copied


def to_caller(result: Any, staged: Staged) -> Any:
    """The host result moved to where the caller expects it: copied into the in-place target,
    or onto the caller's device (alltoall's (output, received_splits) both go there)."""
    if staged.asynchronous:
        return _to_caller_async(result, staged, _calls)
    if staged.inplace_target is not None:
        with torch.no_grad():  # the core would have written the memory directly, grad or not
            staged.inplace_target.copy_(result)
        return staged.inplace_target
    if isinstance(result, tuple):
        return tuple(r.to(staged.device) for r in result)
    return result.to(staged.device)


def _to_caller_async(result: Any, staged: Staged, calls: Any) -> Any:
    """Non-blocking copies back on the caller's current stream: ordered before every kernel the
    caller queues on it from now on, and the caller's thread does not wait."""
    stream = calls.current_stream(staged.device)
    if staged.inplace_target is not None:
        with torch.no_grad():
            calls.copy_on(stream, staged.inplace_target, result)
        return staged.inplace_target

    def back(host: torch.Tensor) -> torch.Tensor:
        out = calls.empty_on(staged.device, host.shape, host.dtype)
        calls.copy_on(stream, out, host)
        return out

    if isinstance(result, tuple):
        return tuple(back(r) for r in result)
    return back(result)
