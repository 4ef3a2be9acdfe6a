"""The shared-GPU path's handshake (shared_gpu.py): what each rank tells the others about one
allreduce or one grouped allreduce, as a fixed-size slot of bytes, and the check that the ranks
agree.

A slot: 16 little-endian int64 fields (a magic number, the rank, its mailbox's number and size,
the region's offset and length, dtype and reduction codes, the number of dimensions and of
elements, the operation's number among the rank's shared allreduces on the process set, the
rank's low mark, the number of tensors of a group (0 for a single allreduce), the digest of the
group's dtypes and shapes, two spare), 8 dimensions, then three 64-byte handles (the mailbox, the
ready event, the done event). A slot of zeros is a rank that joined.

A group's members lie back to back in one region (each on a 256-byte boundary): every rank
derives where each member lies in a peer's region from its own list of dtypes and shapes, which
the digest proves to be the peer's list too. One slot whatever the group's size: a group of
hundreds of gradients is one handshake, not hundreds.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from kolo import _core
from kolo.exceptions import KoloError

DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.uint8, torch.int8,
          torch.int16, torch.int32, torch.int64)
DTYPE_CODES = {dtype: code for code, dtype in enumerate(DTYPES)}
REDUCTION_NAMES = {_core.REDUCE_SUM: "sum", _core.REDUCE_AVERAGE: "average",
                   _core.REDUCE_MIN: "min", _core.REDUCE_MAX: "max",
                   _core.REDUCE_PRODUCT: "product"}

MAGIC = 0x6B6F6C6F53475055  # "koloSGPU"
MAX_DIMS = 8
HEADER = struct.Struct("<" + "q" * 16)
DIMS = struct.Struct("<" + "q" * MAX_DIMS)
HANDLE_BYTES = 64
PAYLOAD_BYTES = HEADER.size + DIMS.size + 3 * HANDLE_BYTES
PAYLOAD_WORDS = PAYLOAD_BYTES // 8  # the handshake travels as int64 values


@dataclass
class Entry:
    """What one rank said in the handshake."""

    rank: int
    mailbox: int
    mailbox_size: int
    offset: int
    nbytes: int
    dtype: int
    reduction: int
    shape: tuple
    number: int  # the operation's number among this rank's shared allreduces on the set
    low: int  # this rank had summed every one numbered below, when it submitted
    handles: tuple  # (mailbox, ready, done)
    members: int = 0  # a group's number of tensors; 0 for a single allreduce
    digest: int = 0  # a group's dtypes and shapes (group_digest)


def group_digest(members: list) -> int:
    """A group's (dtype code, shape) list as one int64: equal lists give equal digests on every
    rank (the lists' text, hashed)."""
    text = repr([(code, tuple(shape)) for code, shape in members]).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little", signed=True)


def pack(rank: int, mailbox_number: int, mailbox_size: int, offset: int, nbytes: int,
         dtype: torch.dtype, reduction: int, shape: tuple, numel: int, number: int, low: int,
         handles: bytes, members: int = 0, digest: int = 0) -> bytes:
    """One rank's slot; `handles`: the mailbox's, the ready event's and the done event's."""
    slot = bytearray(PAYLOAD_BYTES)
    pack_into(slot, 0, rank, mailbox_number, mailbox_size, offset, nbytes, dtype, reduction, shape,
              numel, number, low, handles, members, digest)
    return bytes(slot)


def pack_into(payload, slot: int, rank: int, mailbox_number: int, mailbox_size: int,
              offset: int, nbytes: int, dtype: torch.dtype, reduction: int, shape: tuple,
              numel: int, number: int, low: int, handles: bytes, members: int = 0,
              digest: int = 0) -> None:
    """pack() written into slot number `slot` of `payload` (a writable buffer of slots)."""
    start = slot * PAYLOAD_BYTES
    HEADER.pack_into(payload, start, MAGIC, rank, mailbox_number, mailbox_size, offset, nbytes,
                     DTYPE_CODES[dtype], reduction, len(shape), numel, number, low, members,
                     digest, 0, 0)
    DIMS.pack_into(payload, start + HEADER.size, *_padded(shape))
    memoryview(payload).cast("B")[start + HEADER.size + DIMS.size:start + PAYLOAD_BYTES] = \
        handles


def _padded(shape: tuple) -> list:
    dims = list(shape[:MAX_DIMS])
    return dims + [0] * (MAX_DIMS - len(dims))


def parse(raw: bytes) -> Optional[Entry]:
    """One rank's slot of the handshake; None for a rank that joined (its slot is zeros)."""
    header = HEADER.unpack_from(raw, 0)
    if header[0] == 0:
        return None
    if header[0] != MAGIC:
        raise KoloError("a shared-GPU handshake carried something else (a rank running another "
                        "kolo version?)")
    _, rank, mailbox, size, offset, nbytes, dtype, reduction, ndim, numel, number, low, members, \
        digest = header[:14]
    dims = DIMS.unpack_from(raw, HEADER.size)
    shape = tuple(dims[:ndim]) if ndim <= MAX_DIMS else (f"{ndim} dimensions", numel)
    start = HEADER.size + DIMS.size
    handles = tuple(raw[start + i * HANDLE_BYTES:start + (i + 1) * HANDLE_BYTES]
                    for i in range(3))
    return Entry(rank, mailbox, size, offset, nbytes, dtype, reduction, shape, number, low,
                  handles, members, digest)


def check_agreement(name: str, entries: list[Entry],
                    own: Optional[Callable[[], str]] = None) -> None:
    """KoloError in the core's words (negotiation/request_checks.cc) when the ranks differ.
    `own()`: "rank R submitted <its dtypes and shapes>" for a group, added when the ranks' lists
    differ (a rank knows only the digests of the others')."""
    first = entries[0]
    if all((e.dtype, e.shape, e.reduction, e.members, e.digest)
           == (first.dtype, first.shape, first.reduction, first.members, first.digest)
           for e in entries):
        return
    reduce_op = ("reduce op", lambda e: REDUCTION_NAMES.get(e.reduction, str(e.reduction)))
    if any(e.members for e in entries):
        checks = (("number of tensors", lambda e: str(e.members)),
                  ("dtypes and shapes", lambda e: f"list {e.digest & 0xFFFFFFFF:08x}"), reduce_op)
    else:
        checks = (("dtype", lambda e: str(DTYPES[e.dtype]).replace("torch.", "")),
                  ("shape", lambda e: "[" + ", ".join(map(str, e.shape)) + "]"), reduce_op)
    for what, value in checks:
        groups: dict[str, list[int]] = {}
        for entry in entries:
            groups.setdefault(value(entry), []).append(entry.rank)
        if len(groups) > 1:
            parts = ", ".join(f"{ranks_text(ranks)} submitted {v}" for v, ranks in groups.items())
            detail = f"; {own()}" if what == "dtypes and shapes" and own else ""
            raise KoloError(f"Mismatched {what} for tensor '{name}': {parts}{detail}")


def ranks_text(ranks: list[int]) -> str:
    """The ranks as the core's messages name them (negotiation/request_checks.cc's
    describe_ranks): "rank 1", "rank 0 and rank 2", "ranks 0-3, 5 and 7"."""
    ranks = sorted(ranks)
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if len(ranks) == 2:
        return f"rank {ranks[0]} and rank {ranks[1]}"
    items, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        items += [f"{ranks[i]}-{ranks[j]}"] if j - i >= 2 else [str(r) for r in ranks[i:j + 1]]
        i = j + 1
    if len(items) == 1:
        return "ranks " + items[0]
    return "ranks " + ", ".join(items[:-1]) + f" and {items[-1]}"
