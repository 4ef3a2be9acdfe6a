"""SyncBatchNorm, as ``horovod.torch.SyncBatchNorm``: batch normalization whose statistics cover
the batch of every rank, not just the local one.

In training (with more than one rank) the forward pass sums, per channel, the element count, the
sum and the sum of squares over all ranks (one allreduce, in float64 so that the variance keeps
its precision), so ranks may hold batches of different sizes; every rank normalizes with the
global mean and biased variance and updates running_mean / running_var as torch's BatchNorm does
(the running variance is the unbiased one, count / (count - 1)). The backward pass sums the two
per-channel gradient terms (sum of dy and of dy * x_hat) over all ranks, giving each rank exactly
its rows of the gradient that one BatchNorm over the concatenated batch would produce. The
weight and bias gradients stay local sums, as in torch's and Horovod's SyncBatchNorm: summed over
ranks (which DistributedOptimizer's allreduce does, up to its averaging) they are the
concatenated batch's gradients. In eval mode, or alone, it is a plain BatchNorm.
"""

from __future__ import annotations

import torch
from torch.nn.modules.batchnorm import _BatchNorm

from kolo.torch.mpi_ops import Sum, allgather_async, allreduce_async, size, synchronize  # noqa: F401


def _per_channel_sum(t: torch.Tensor) -> torch.Tensor:
    """Sum over every dimension but the channel one (dimension 1)."""
    return t.transpose(0, 1).reshape(t.shape[1], -1).sum(dim=1)


def _allreduce_sum(t: torch.Tensor, name: str) -> torch.Tensor:
    return synchronize(allreduce_async(t.contiguous(), op=Sum, name=name))


class _SyncBatchNormFunction(torch.autograd.Function):

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, name):
        channels = input.shape[1]
        x = input.double()
        count_here = torch.tensor([input.numel() // max(channels, 1)], dtype=torch.float64,
                                  device=input.device)
        local = torch.cat([count_here, _per_channel_sum(x), _per_channel_sum(x * x)])
        total = _allreduce_sum(local, f"{name}.stats")
        count = total[0].item()
        if count <= 1:
            raise ValueError(f"SyncBatchNorm: expected more than 1 value per channel over all "
                             f"ranks when training, got {int(count)}")
        mean = total[1:1 + channels] / count
        var = (total[1 + channels:] / count - mean * mean).clamp_min(0)
        if running_mean is not None:
            with torch.no_grad():
                running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
                unbiased = var * (count / (count - 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype),
                                                    alpha=momentum)
        shape = [1, channels] + [1] * (input.dim() - 2)
        invstd = (var + eps).rsqrt()
        x_hat = ((x - mean.view(shape)) * invstd.view(shape)).to(input.dtype)
        out = x_hat
        if weight is not None:
            out = out * weight.view(shape) + bias.view(shape)
        ctx.save_for_backward(x_hat, invstd, weight)
        ctx.count = count
        ctx.name = name
        return out

    @staticmethod
    def backward(ctx, grad_output):
        x_hat, invstd, weight = ctx.saved_tensors
        channels = x_hat.shape[1]
        shape = [1, channels] + [1] * (x_hat.dim() - 2)
        dy = grad_output.double()
        xh = x_hat.double()
        sum_dy = _per_channel_sum(dy)
        sum_dy_xhat = _per_channel_sum(dy * xh)
        grad_weight = grad_bias = None
        if weight is not None:
            grad_weight = sum_dy_xhat.to(weight.dtype)
            grad_bias = sum_dy.to(weight.dtype)
        grad_input = None
        if ctx.needs_input_grad[0]:
            total = _allreduce_sum(torch.cat([sum_dy, sum_dy_xhat]), f"{ctx.name}.grad")
            mean_dy = (total[:channels] / ctx.count).view(shape)
            mean_dy_xhat = (total[channels:] / ctx.count).view(shape)
            scale = invstd.view(shape)
            if weight is not None:
                scale = scale * weight.double().view(shape)
            grad_input = (scale * (dy - mean_dy - xh * mean_dy_xhat)).to(grad_output.dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over the batches of all ranks (any input of 2 or more dimensions, channels in
    dimension 1); same arguments as ``torch.nn.BatchNorm1d/2d/3d``."""

    _instances = 0

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        # Collective names: the n-th SyncBatchNorm built gets the same name on every rank, and
        # reusing it every step lets the response cache agree on it cheaply.
        SyncBatchNorm._instances += 1
        self._kolo_name = f"sync_batch_norm.{SyncBatchNorm._instances}"

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        self._check_input_dim(input)
        if not self.training or size() == 1:
            return super().forward(input)
        # Momentum as torch's _BatchNorm computes it (None: cumulative moving average).
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = (1.0 / float(self.num_batches_tracked) if self.momentum is None
                      else self.momentum)
        running_mean = self.running_mean if self.track_running_stats else None
        running_var = self.running_var if self.track_running_stats else None
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean,
                                            running_var, self.eps, factor, self._kolo_name)

