"""Gradient buckets for DistributedOptimizer on the shared-GPU path (shared_gpu.py).

There each operation costs the caller's thread a copy launch, a handshake and a slot in a batch
of sums, whatever its size; a model's hundred-odd gradients one by one cost more of the thread
than the GPU spends summing them. Grouped, a bucket of gradients is one operation
(shared_gpu_session.SharedGpu.submit with a list). So, as DDP buckets its gradients, a
DistributedOptimizer whose gradients all go to the shared path and that was given no ``groups``
reduces them in buckets of at most KOLO_SHARED_GPU_BUCKET_MB (25 by default, DDP's
bucket_cap_mb; 0 turns it off), filled in the reverse of the parameters' order (roughly the
order backward produces them), from its second step on.

Every rank must cut the same buckets, or their handshakes would name different lists (an error,
not a hang, but an error): the cut depends only on the model's parameters, the job's path and
which gradients are sparse. A sparse gradient is reduced on its own, as before; whether a
gradient is sparse anywhere is asked of every rank once, after the first step (one small
allreduce), since a parameter unused on one rank has no gradient there to look at.
"""

from __future__ import annotations

import os

import torch

from kolo.torch import shared_gpu

DEFAULT_BUCKET_MB = 25.0


def cap_bytes() -> int:
    """KOLO_SHARED_GPU_BUCKET_MB in bytes; 0: no buckets."""
    text = os.environ.get("KOLO_SHARED_GPU_BUCKET_MB", "")
    try:
        megabytes = float(text) if text.strip() else DEFAULT_BUCKET_MB
    except ValueError:
        raise ValueError(f"KOLO_SHARED_GPU_BUCKET_MB={text!r}: expected a number of megabytes "
                         f"(0 turns gradient buckets off)") from None
    return max(0, int(megabytes * (1 << 20)))


def applies(params: list, reduce_op: int, scale: float) -> bool:
    """Whether every gradient of `params` goes to the shared-GPU path, on one device."""
    if not params:
        return False
    device = params[0].device
    return all(p.device == device and shared_gpu.runs_here(p, reduce_op, scale)
               for p in params) and cap_bytes() > 0


def sparse_anywhere(params: list, process_set) -> set:
    """The parameters whose gradient is sparse on some rank of `process_set` (one allreduce)."""
    from kolo.torch.allreduce_ops import allreduce
    from kolo.torch.basics import Max

    mine = torch.tensor([p.grad is not None and p.grad.is_sparse for p in params],
                        dtype=torch.uint8)
    anywhere = allreduce(mine, name="kolo.gradient_buckets.sparse", op=Max,
                         process_set=process_set)
    return {p for p, flag in zip(params, anywhere.tolist()) if flag}


def plan(params: list, cap: int) -> list[tuple]:
    """`params` (in the order their gradients are expected) cut into consecutive buckets of at
    most `cap` bytes; a parameter larger than `cap` is a bucket of its own."""
    buckets, current, used = [], [], 0
    for p in params:
        nbytes = p.numel() * p.element_size()
        if current and used + nbytes > cap:
            buckets.append(tuple(current))
            current, used = [], 0
        current.append(p)
        used += nbytes
    if current:
        buckets.append(tuple(current))
    return buckets
