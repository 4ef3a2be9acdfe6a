"""Tensors on a device other than the CPU (cuda, xpu, mps, xla / privateuse1, ...) reach kolo's
core through host memory, with the same code for every device kind.

The collective runs on a host copy; synchronize() writes the result back to the caller's tensor
(in-place operations) or returns a new tensor on the caller's device. Stream ordering: the
device-to-host copy is a blocking ``.to("cpu")`` issued when the operation is submitted, on the
caller's current stream, so it sees every kernel queued there before the call; the copy back is
issued at synchronize(), on the caller's current stream at that moment, so every kernel queued on
it afterwards sees the result. Cost: two copies over the host link per tensor and a host wait
before the collective starts (NCCL is not in this version).

``KOLO_STAGE_THROUGH_HOST=1`` forces this path for CPU tensors too (tests use it so that every
line here runs without a GPU). A ``meta`` tensor has no data and gets a ValueError.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

import torch

FORCE_ENV = "KOLO_STAGE_THROUGH_HOST"
# Read once, when kolo.torch is imported (a test knob; reading the environment costs about half a
# microsecond per operation).
FORCED = os.environ.get(FORCE_ENV, "") not in ("", "0")


@dataclass
class Staged:
    """What synchronize() owes the caller of one staged operation."""

    device: torch.device
    # The caller's tensor for an in-place operation (the host result is copied into it).
    inplace_target: Optional[torch.Tensor]


def needs_staging(tensor: torch.Tensor, name: str) -> bool:
    """True when `tensor` must go through host memory; refuses tensors without data."""
    if tensor.device.type == "meta":
        raise ValueError(f"tensor '{name}' is on the meta device: it has no data to communicate "
                         "(materialize it, e.g. with .to_empty(device=...), first)")
    return tensor.device.type != "cpu" or FORCED


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous host copy of `tensor`, made after all work queued on the current stream
    (a blocking copy on the caller's current stream: for CUDA, the stream is synchronized)."""
    return tensor.detach().to("cpu", copy=True).contiguous()


def to_caller(result: Any, staged: Staged) -> Any:
    """The host result moved to where the caller expects it: copied into the in-place target,
    or onto the caller's device (alltoall's (output, received_splits) both go there)."""
    if staged.inplace_target is not None:
        with torch.no_grad():  # the core would have written the memory directly, grad or not
            staged.inplace_target.copy_(result)
        return staged.inplace_target
    if isinstance(result, tuple):
        return tuple(r.to(staged.device) for r in result)
    return result.to(staged.device)
