"""prescale_factor and postscale_factor of CUDA tensors, applied on the device with torch's kernels
the way Horovod's GPU operations apply them (its ScaleBuffer kernels): a floating-point tensor is
multiplied by the factor rounded to the tensor's own type (a float16 tensor by a float16 factor,
one rounding), an integer tensor in float64 and cast back (truncating); the prescale before the
collective, the postscale after it. The core then runs a plain Sum or Average.

Why not in the collective itself: NCCL has one pre-multiplication (ncclRedOpCreatePreMulSum),
which cannot apply a postscale after the sum in the tensor's type, so its float16 results differ
from Horovod's in the last bit (Horovod's tests compare bit for bit below four ranks), and the
host path's kernels scale float16 in float32. A CUDA tensor gets the same bits on either path.

The scaled input is a new tensor (the caller's stays as it was); for an in-place allreduce the
result is copied back into the caller's tensor at synchronize(). The factor goes to the kernel as
a 0-dimensional CPU tensor, a kernel argument: no host-to-device copy, no wait.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from kolo import _core, _handles
from kolo.torch import nccl_submit

_SCALED_OPS = (_core.OP_ALLREDUCE, _core.OP_REDUCESCATTER)
_SCALED_REDUCTIONS = (_core.REDUCE_SUM, _core.REDUCE_AVERAGE)


def applies(tensor: torch.Tensor, op: int, reduce_op: int, prescale: float,
            postscale: float) -> bool:
    """True for a scaled Sum or Average of a CUDA tensor (other reductions keep the core's
    handling, which reports what it refuses). CUDA as the NCCL submit sees it, so that the CPU
    tests' stand-in GPU (nccl_submit.use_calls) takes this path too."""
    return ((prescale != 1.0 or postscale != 1.0) and op in _SCALED_OPS
            and reduce_op in _SCALED_REDUCTIONS and nccl_submit.is_cuda(tensor))


def scaled(tensor: torch.Tensor, factor: float) -> torch.Tensor:
    """A new tensor: `tensor` times `factor` as Horovod's GPU kernels compute it."""
    if tensor.dtype.is_floating_point:
        return tensor * torch.tensor(factor, dtype=tensor.dtype)
    return (tensor.double() * factor).to(tensor.dtype)


def scale_in_place(tensor: torch.Tensor, factor: float) -> torch.Tensor:
    with torch.no_grad():
        if tensor.dtype.is_floating_point:
            return tensor.mul_(torch.tensor(factor, dtype=tensor.dtype))
        return tensor.copy_((tensor.double() * factor).to(tensor.dtype))


def submit_scaled(submit: Callable[..., int], op: int, kind: str, tensor: torch.Tensor,
                  output: Any, name: Any, reduce_op: int, prescale: float, postscale: float,
                  **rest: Any) -> int:
    """Submits the prescaled tensor unscaled through `submit` (handles.submit) and makes
    synchronize() postscale the result (and copy it into the caller's tensor when in place)."""
    inplace = output is None and op == _core.OP_ALLREDUCE
    source = tensor
    if prescale != 1.0:
        source = scaled(tensor.detach(), prescale)
    handle = submit(op, kind, source, output, name, reduce_op, prescale=1.0, postscale=1.0,
                    **rest)

    def finish(result: torch.Tensor) -> torch.Tensor:
        if postscale != 1.0:
            scale_in_place(result, postscale)
        if inplace and result is not tensor:
            with torch.no_grad():
                tensor.copy_(result)
            return tensor
        return result

    _handles.then(handle, finish)
    return handle
