"""The shared-GPU path's records (shared_gpu.py): a mailbox of exported device memory and the
regions handed out from it, one allreduce's state from its submission to its result, and which
of a rank's operations it has summed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy
import torch


@dataclass
class Mailbox:
    """One block of exported memory; regions are handed out from its start (a bump pointer) and
    all become free together once no rank reads any of them (SharedGpu._unread)."""

    number: int
    pointer: int
    size: int
    handle: bytes
    bytes_view: torch.Tensor
    used: int = 0
    # (set id, number) of each operation placed here -> None until this rank summed it, then
    # what the peers must have summed: (rank, set id, that rank's number for the operation).
    placed: dict = field(default_factory=dict)
    typed: dict = field(default_factory=dict)  # dtype -> the whole mailbox viewed as it

    def region(self, offset: int, dtype: torch.dtype, shape: tuple, numel: int) -> torch.Tensor:
        view = self.typed.get(dtype)
        if view is None:
            view = self.typed[dtype] = self.bytes_view.view(dtype)
        # narrow and view: a few microseconds less than as_strided, once per rank and tensor
        return view.narrow(0, offset // view.element_size(), numel).view(shape)


@dataclass
class Operation:
    """One allreduce, or one grouped allreduce (its members back to back in one region)."""

    name: str
    tensors: list  # the caller's (in place) or the sources of an out-of-place allreduce
    outputs: list  # None for each member reduced in place
    reduction: int
    set_id: int
    number: int
    mailbox: Mailbox
    starts: list  # where each member lies from the start of a rank's region (layout())
    regions: list  # this rank's copies
    members: int  # the process set's size: Average's divisor, joined ranks included
    payload: numpy.ndarray  # the handshake's slots (int64), which the core sums in place
    grouped: bool  # synchronize() returns the list of results, not one
    handle: int = 0  # the handshake's
    # The result (a tensor, or the group's list) once summed (perhaps in the batch of another
    # operation's synchronize), or the KoloError that synchronize() raises for it; None until
    # then.
    outcome: Any = None


def layout(sizes: list, align: int) -> tuple[list, int]:
    """Where each of tensors of `sizes` bytes lies in one region, each on an `align`-byte
    boundary, and the region's length."""
    starts, at = [], 0
    for size in sizes:
        starts.append(at)
        at += -(-size // align) * align
    return starts, at


class Marks:
    """Which of a rank's operations on one process set it has summed: every one numbered below
    `low`, and those in `above`."""

    def __init__(self) -> None:
        self.next = 0
        self.low = 0
        self.above: set[int] = set()

    def summed(self, number: int) -> None:
        self.above.add(number)
        while self.low in self.above:
            self.above.remove(self.low)
            self.low += 1
