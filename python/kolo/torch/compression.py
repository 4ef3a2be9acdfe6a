"""Gradient compression during allreduce, as ``horovod.torch.compression``."""

from __future__ import annotations

from typing import Any

import torch


class Compressor:
    """Interface: ``compress`` returns (tensor to send, context); ``decompress`` undoes it."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> tuple[torch.Tensor, Any]:
        raise NotImplementedError

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors as they are (the default)."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> tuple[torch.Tensor, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 (half the bytes) and casts results back."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> tuple[torch.Tensor, Any]:
        if tensor.dtype.is_floating_point and tensor.dtype != torch.float16:
            return tensor.type(torch.float16), tensor.dtype
        return tensor, tensor.dtype

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        dtype = ctx
        if dtype is not None and dtype.is_floating_point and tensor.dtype != dtype:
            return tensor.type(dtype)
        return tensor


class Compression:
    """Compression algorithms to pass as ``compression=``: ``none`` (default) and ``fp16``."""

    none = NoneCompressor
    fp16 = FP16Compressor
