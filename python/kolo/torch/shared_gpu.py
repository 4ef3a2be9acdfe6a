"""Allreduce among ranks that share one GPU, summed on that GPU through CUDA IPC (the protocol:
shared_gpu_session.py): which tensors take the path, and each device's session (kolo.init starts
new ones, kolo.shutdown closes them).

``KOLO_STAGE_THROUGH_HOST=shared`` plays the whole protocol on host memory (HostSharing: mailboxes
in /dev/shm, events that have always fired), so every step runs without a GPU in the tests.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

import torch

import kolo
from kolo import _core, process_sets
from kolo.torch import shared_gpu_handshake as handshake
from kolo.torch import staging
from kolo.torch.shared_gpu_calls import CudaSharing, HostSharing
from kolo.torch.shared_gpu_session import SharedGpu

__all__ = ["SharedGpu", "takes", "runs_here", "takes_group", "submit", "submit_group",
           "use_calls", "forget_set", "close_sessions"]

_REDUCTIONS = (_core.REDUCE_SUM, _core.REDUCE_AVERAGE, _core.REDUCE_MIN, _core.REDUCE_MAX,
               _core.REDUCE_PRODUCT)

# -- which tensors, and the session's instance -----------------------------------------------

PLAYED_ON_HOST = staging._FORCE_VALUE == "shared"
_calls: Any = HostSharing() if PLAYED_ON_HOST else CudaSharing()
_sessions: dict = kolo.session_cache()
_sessions_lock = threading.Lock()


def use_calls(calls: Any) -> Any:
    """Replaces the calls (tests); returns the previous ones."""
    global _calls
    previous, _calls = _calls, calls
    return previous


def takes(tensor: torch.Tensor, output: Optional[torch.Tensor], reduce_op: int,
          scale: float) -> bool:
    """Whether this allreduce runs here: a CUDA tensor whose path (gpu_path) is the shared GPU,
    or any CPU tensor when the protocol is played on host memory; a dtype and reduction the sum
    above computes, no scaling left (device_scale.py applies Sum's and Average's), data, and a
    contiguous tensor where the result goes into it."""
    return tensor.numel() > 0 and (output is not None or tensor.is_contiguous()) and \
        runs_here(tensor, reduce_op, scale)


def runs_here(tensor: torch.Tensor, reduce_op: int, scale: float) -> bool:
    """takes() but for the tensor's size and layout."""
    if not (tensor.is_cuda or PLAYED_ON_HOST):
        return False
    if tensor.dtype not in handshake.DTYPE_CODES or reduce_op not in _REDUCTIONS or scale != 1.0:
        return False
    if PLAYED_ON_HOST:
        return tensor.device.type == "cpu"
    from kolo.torch import gpu_path

    return tensor.is_cuda and staging.path_for("cuda", _core.OP_ALLREDUCE) == gpu_path.SHARED_GPU


def takes_group(tensors: list, outputs: list, reduce_op: int, scale: float) -> bool:
    """Whether a grouped allreduce runs here as one operation (SharedGpu.submit with a list):
    every member would run here alone, or is empty (it takes no room). Otherwise each member
    goes its own way, as a member of a core group."""
    device = tensors[0].device
    return all(t.device == device and runs_here(t, reduce_op, scale)
               and (o is not None or t.is_contiguous()) for t, o in zip(tensors, outputs))


def _session(tensor: torch.Tensor) -> SharedGpu:
    device = _calls.device_of(tensor)
    with _sessions_lock:
        session = _sessions.get(device)
        if session is None:
            session = _sessions[device] = SharedGpu(_calls, device)
    return session


def submit(tensor: torch.Tensor, output: Optional[torch.Tensor], name: Optional[str],
           reduce_op: int, set_id: int, group: tuple) -> int:
    """Queues one allreduce on the shared GPU; synchronize() returns the result (the caller's
    tensor when in place)."""
    # Named as the other paths name an allreduce, so unnamed counters stay aligned.
    name = kolo._name("allreduce", name, set_id)
    return _session(tensor).submit([tensor], [output], name, reduce_op, set_id, group, False)


def submit_group(tensors: list, outputs: list, name: str, reduce_op: int, set_id: int) -> int:
    """Queues a grouped allreduce (`name`: the group's) on the shared GPU as one operation;
    synchronize() returns the list of results (the caller's tensors where in place)."""
    return _session(tensors[0]).submit(tensors, outputs, name, reduce_op, set_id, (0, 0), True)


def forget_set(process_set_id: int) -> None:
    """kolo.process_sets' hook after a set was removed (SharedGpu.forget_set)."""
    with _sessions_lock:
        sessions = list(_sessions.values())
    for session in sessions:
        session.forget_set(process_set_id)


def close_sessions() -> None:
    """kolo.shutdown's hook: this session's mailboxes go back."""
    with _sessions_lock:
        sessions = list(_sessions.values())
        _sessions.clear()
    for session in sessions:
        session.close()


kolo.on_shutdown(close_sessions)
process_sets.after_removal(forget_set)
