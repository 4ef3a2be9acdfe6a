"""The device side of the shared-GPU path (shared_gpu.py), in one place: mailboxes other
processes map (kolo's core loads the runtime's IPC calls), interprocess events (torch's), kolo's
stream calls (staging.py's). CudaSharing is the real one; HostSharing plays it on host memory
(KOLO_STAGE_THROUGH_HOST=shared and the tests): a mailbox is a file in /dev/shm that the peers map,
events have always fired, streams are names. self_test tries the real one once before the path
is chosen."""

from __future__ import annotations

import atexit
import mmap
import os
import time
import uuid
from typing import Any, Optional

import torch

from kolo import _core
from kolo.torch import staging
from kolo.torch.shared_gpu_handshake import HANDLE_BYTES

_PROBE_BYTES = 256


class CudaSharing(staging.CudaCalls):
    """The CUDA side: kolo's stream and copies (staging's), IPC mailboxes (kolo's core loads the
    runtime's IPC calls) and interprocess events (torch's)."""

    def export(self, device: int, nbytes: int) -> tuple[int, bytes]:
        return _core.cuda_ipc_export(device, nbytes)

    def import_(self, device: int, handle: bytes) -> int:
        return _core.cuda_ipc_import(device, handle)

    def close(self, device: int, pointer: int) -> None:
        _core.cuda_ipc_close(device, pointer)

    def free(self, device: int, pointer: int) -> None:
        _core.cuda_ipc_free(device, pointer)

    def view(self, pointer: int, nbytes: int, device: int) -> torch.Tensor:
        """A uint8 tensor over device memory torch does not own (kept alive by the mailbox)."""
        return torch.as_tensor(_DeviceBytes(pointer, nbytes), device=torch.device("cuda", device))

    def copy_here(self, destination: torch.Tensor, source: torch.Tensor) -> None:
        destination.copy_(source, non_blocking=True)  # on the current stream

    def copy_many(self, destinations: list, sources: list) -> None:
        """A group's copies on the current stream: one multi-tensor launch where torch has it
        (one per dtype and layout), rather than one launch per member."""
        if hasattr(torch, "_foreach_copy_"):
            torch._foreach_copy_(destinations, sources, non_blocking=True)
        else:
            for destination, source in zip(destinations, sources):
                destination.copy_(source, non_blocking=True)

    def ipc_event(self, device: int) -> Any:
        with torch.cuda.device(device):  # torch creates the event at its first use
            event = torch.cuda.Event(interprocess=True)
            event.ipc_handle()
        return event

    def event_handle(self, event: Any) -> bytes:
        return bytes(event.ipc_handle())

    def open_event(self, device: int, handle: bytes) -> Any:
        return torch.cuda.Event.from_ipc_handle(torch.device("cuda", device), handle)

    def fired(self, event: Any) -> bool:
        return bool(event.query())

    def device_of(self, tensor: torch.Tensor) -> int:
        return tensor.device.index if tensor.device.index is not None \
            else torch.cuda.current_device()

    def synchronize(self) -> None:
        torch.cuda.synchronize()


def first_unfired(fired, events: dict, timeout: float) -> Optional[int]:
    """Queries `events` (rank -> event) from the CPU until every one has fired; the rank of one
    still unfired after `timeout` seconds, None once all fired. Never a stream wait: a dead
    peer's event may never fire."""
    pending = sorted(rank for rank, event in events.items() if not fired(event))
    deadline = time.monotonic() + timeout
    pause = 20e-6
    while pending:
        if time.monotonic() > deadline:
            return pending[0]
        time.sleep(pause)
        pause = min(pause * 2, 1e-3)
        pending = [rank for rank in pending if not fired(events[rank])]
    return None


class _DeviceBytes:
    """Device memory as torch.as_tensor reads it (the CUDA Array Interface; no "stream" key:
    nothing to synchronize, the memory is ordered by kolo's events)."""

    def __init__(self, pointer: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                         "data": (pointer, False), "version": 2,
                                         "strides": None}


class HostSharing(staging.HostOnlyCalls):
    """The protocol on host memory (KOLO_STAGE_THROUGH_HOST=shared and the tests): a mailbox is a
    file in /dev/shm that the peers map, events have always fired, streams are names."""

    def __init__(self) -> None:
        super().__init__()
        self._maps: dict[int, tuple[mmap.mmap, str, bool]] = {}  # pointer -> (map, path, owner)
        self._next_pointer = 1 << 20
        atexit.register(self._unlink_own)  # a rank that exits without shutdown leaves no file

    def _unlink_own(self) -> None:
        for _, path, owner in self._maps.values():
            if owner and os.path.exists(path):
                os.unlink(path)

    def _map(self, path: str, owner: bool) -> int:
        with open(path, "r+b") as file:
            mapped = mmap.mmap(file.fileno(), 0)
        pointer = self._next_pointer
        self._next_pointer += 1 << 40
        self._maps[pointer] = (mapped, path, owner)
        return pointer

    def export(self, device: int, nbytes: int) -> tuple[int, bytes]:
        path = f"/dev/shm/kolo-shared-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        with open(path, "wb") as file:
            file.truncate(nbytes)
        self.log.append(("export", nbytes))
        return self._map(path, owner=True), path.encode().ljust(HANDLE_BYTES, b"\0")

    def import_(self, device: int, handle: bytes) -> int:
        self.log.append(("import",))
        return self._map(handle.rstrip(b"\0").decode(), owner=False)

    def close(self, device: int, pointer: int) -> None:
        self._maps.pop(pointer)[0].close()

    def free(self, device: int, pointer: int) -> None:
        mapped, path, _ = self._maps.pop(pointer)
        mapped.close()
        os.unlink(path)

    def view(self, pointer: int, nbytes: int, device: int) -> torch.Tensor:
        return torch.frombuffer(self._maps[pointer][0], dtype=torch.uint8, count=nbytes)

    def copy_here(self, destination: torch.Tensor, source: torch.Tensor) -> None:
        self.log.append(("copy", "caller", destination.data_ptr(), source.data_ptr()))
        destination.copy_(source)

    def copy_many(self, destinations: list, sources: list) -> None:
        self.log.append(("copy many", len(destinations)))
        torch._foreach_copy_(destinations, sources)

    def ipc_event(self, device: int) -> str:
        return self.new_event()

    def event_handle(self, event: str) -> bytes:
        return event.encode().ljust(HANDLE_BYTES, b"\0")

    def open_event(self, device: int, handle: bytes) -> str:
        return "peer " + handle.rstrip(b"\0").decode()

    def fired(self, event: str) -> bool:
        return True

    def device_of(self, tensor: torch.Tensor) -> int:
        return -1


def self_test() -> str:
    """Why this process cannot share device memory after all ("" when it can): a small mailbox
    exported, viewed as a torch tensor and written, an interprocess event made and its handle
    taken, on the current device. Run when the path is chosen (staging.py); every rank on the
    GPU runs the same software, so every rank finds the same, and a failure leaves the job on
    the async host path with the reason in its warning instead of failing its first allreduce."""
    try:
        device = torch.cuda.current_device()
        calls = CudaSharing()
        pointer, _ = calls.export(device, _PROBE_BYTES)
        try:
            calls.view(pointer, _PROBE_BYTES, device).fill_(0)
            calls.event_handle(calls.ipc_event(device))
            torch.cuda.synchronize(device)
        finally:
            calls.free(device, pointer)
    except Exception as error:  # any failure means: not this path
        return f"its self-test failed ({type(error).__name__}: {error})"
    return ""


staging.on_ipc_self_test(self_test)
