"""Gradient compression during allreduce, as ``horovod.torch.compression``: the shared policy
(kolo/common/compression.py) with torch's dtypes."""

from __future__ import annotations

import torch

from kolo.common.compression import Compressor, FP16Compressor as _FP16Policy, NoneCompressor

__all__ = ["Compression", "Compressor", "FP16Compressor", "NoneCompressor"]


class FP16Compressor(_FP16Policy):
    """Sends floating-point tensors as float16 (half the bytes) and casts results back."""

    HALF = torch.float16

    @staticmethod
    def is_floating(dtype: torch.dtype) -> bool:
        return dtype.is_floating_point

    @staticmethod
    def cast(tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        return tensor.type(dtype)


class Compression:
    """Compression algorithms to pass as ``compression=``: ``none`` (default) and ``fp16``."""

    none = NoneCompressor
    fp16 = FP16Compressor
