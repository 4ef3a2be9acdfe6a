"""The sum of the shared-GPU path (shared_gpu.py): every rank's region combined into the result
with torch's kernels on the caller's current stream, in rank order so that every rank gets the
same bits, and the zeros of ranks that joined.

Several operations are summed at once where they can be (a training step's gradients, whose
handshakes the core completes together): torch's multi-tensor kernels (``torch._foreach_*``) take
a whole list per launch, where one launch per tensor and rank cost the caller's thread more than
the GPU's time for the sum (session 39 on an H200: about 120 us per tensor). An operation summed
alone goes through the same kernels as a list of one, so the bits never depend on how a rank's
operations happened to be batched: every rank gets the same result whatever its batches.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kolo import _core

# Sum and Average of floating tensors go through the multi-tensor kernels; the rest (integer
# Average's truncation, Min, Max, Product) one tensor at a time, as they are rare in training.
_LISTED = (_core.REDUCE_SUM, _core.REDUCE_AVERAGE)
_HAS_FOREACH = hasattr(torch, "_foreach_copy_") and hasattr(torch, "_foreach_add_")


@dataclass
class Sum:
    """One operation to combine: every rank's region in rank order, the result tensor, the
    reduction, Average's divisor (every member of the set, joined ranks included) and whether
    some member joined (its zeros take part)."""

    regions: list
    result: torch.Tensor
    reduction: int
    count: int
    joined: bool


def reduce_all(sums: list[Sum]) -> None:
    """Every operation of `sums` combined into its result on the current stream."""
    listed: dict[tuple, list[Sum]] = {}
    for item in sums:
        if _HAS_FOREACH and item.reduction in _LISTED and item.result.dtype.is_floating_point \
                and item.result.is_contiguous():
            key = (item.result.dtype, item.result.device, len(item.regions), item.reduction,
                   item.count)
            listed.setdefault(key, []).append(item)
        else:
            _reduce_one(item)
    for (_, _, ranks, reduction, count), items in listed.items():
        results = [item.result.view(-1) for item in items]
        torch._foreach_copy_(results, [item.regions[0].view(-1) for item in items])
        for k in range(1, ranks):
            torch._foreach_add_(results, [item.regions[k].view(-1) for item in items])
        if reduction == _core.REDUCE_AVERAGE:
            # Divided, rounded once (a multi-tensor division divides; torch's own division of a
            # CUDA tensor by a number multiplies by the reciprocal, an ulp off at times).
            torch._foreach_div_(results, float(count))
    # A joined rank's zeros change nothing in a Sum or Average: only _reduce_one's reductions.


def _reduce_one(item: Sum) -> None:
    regions, result, reduction = item.regions, item.result, item.reduction
    if len(regions) == 1:  # alone, or the others joined
        result.copy_(regions[0])
    else:
        combine = {_core.REDUCE_MIN: torch.minimum, _core.REDUCE_MAX: torch.maximum,
                   _core.REDUCE_PRODUCT: torch.mul}.get(reduction, torch.add)
        combine(regions[0], regions[1], out=result)
        for region in regions[2:]:
            combine(result, region, out=result)
    if reduction == _core.REDUCE_AVERAGE:
        if result.dtype.is_floating_point:
            result.div_(item.count)
        else:
            result.copy_(torch.div(result, item.count, rounding_mode="trunc"))
    if item.joined:
        _with_joined_zeros(result, reduction)


def _with_joined_zeros(result: torch.Tensor, reduction: int) -> None:
    """Ranks that joined take part with zeros (as in the core's allreduce): nothing to add to a
    Sum (Average divides by every member already), but a Min, Max or Product sees them."""
    if reduction == _core.REDUCE_MIN:
        result.clamp_(max=0)
    elif reduction == _core.REDUCE_MAX:
        result.clamp_(min=0)
    elif reduction == _core.REDUCE_PRODUCT:
        result.zero_()
