"""Gradient compression during allreduce, Horovod's policy for every framework: ``none`` sends
tensors as they are, ``fp16`` sends floating-point tensors as float16 (half the bytes) and casts
the results back. A framework adapter subclasses ``FP16Compressor`` with its three dtype hooks
(kolo/torch/compression.py, kolo/tensorflow/compression.py)."""

from __future__ import annotations

from typing import Any


class Compressor:
    """Interface: ``compress`` returns (tensor to send, context); ``decompress`` undoes it."""

    @classmethod
    def compress(cls, tensor: Any) -> tuple[Any, Any]:
        raise NotImplementedError

    @classmethod
    def decompress(cls, tensor: Any, ctx: Any) -> Any:
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors as they are (the default)."""

    @classmethod
    def compress(cls, tensor: Any) -> tuple[Any, Any]:
        return tensor, None

    @classmethod
    def decompress(cls, tensor: Any, ctx: Any) -> Any:
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 and casts results back to their dtype. Subclasses
    give the framework's float16 dtype and the two functions below."""

    HALF: Any = None

    @staticmethod
    def is_floating(dtype: Any) -> bool:
        raise NotImplementedError

    @staticmethod
    def cast(tensor: Any, dtype: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def compress(cls, tensor: Any) -> tuple[Any, Any]:
        if cls.is_floating(tensor.dtype) and tensor.dtype != cls.HALF:
            return cls.cast(tensor, cls.HALF), tensor.dtype
        return tensor, tensor.dtype

    @classmethod
    def decompress(cls, tensor: Any, ctx: Any) -> Any:
        dtype = ctx
        if dtype is not None and cls.is_floating(dtype) and tensor.dtype != dtype:
            return cls.cast(tensor, dtype)
        return tensor
