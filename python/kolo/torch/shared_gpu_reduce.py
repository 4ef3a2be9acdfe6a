"""The sum of the shared-GPU path (shared_gpu.py): every rank's region combined into the result
with torch's kernels on the caller's current stream, in rank order so that every rank gets the
same bits, and the zeros of ranks that joined."""

from __future__ import annotations

import torch

from kolo import _core


def reduce_in_rank_order(regions: list[torch.Tensor], reduction: int, result: torch.Tensor,
                         count: int) -> None:
    """Every rank's region combined into `result`, in rank order (the same bits on every rank)."""
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
            result.div_(count)
        else:
            result.copy_(torch.div(result, count, rounding_mode="trunc"))


def with_joined_zeros(result: torch.Tensor, reduction: int) -> None:
    """Ranks that joined take part with zeros (as in the core's allreduce): nothing to add to a
    Sum (Average divides by every member already), but a Min, Max or Product sees them."""
    if reduction == _core.REDUCE_MIN:
        result.clamp_(max=0)
    elif reduction == _core.REDUCE_MAX:
        result.clamp_(min=0)
    elif reduction == _core.REDUCE_PRODUCT:
        result.zero_()
