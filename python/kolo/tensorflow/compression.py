"""Gradient compression during allreduce, as ``horovod.tensorflow.compression``: the shared
policy (kolo/common/compression.py) with TensorFlow's dtypes."""

from __future__ import annotations

import tensorflow as tf

from kolo.common.compression import Compressor, FP16Compressor as _FP16Policy, NoneCompressor

__all__ = ["Compression", "Compressor", "FP16Compressor", "NoneCompressor"]


class FP16Compressor(_FP16Policy):
    """Sends floating-point tensors as float16 (half the bytes) and casts results back."""

    HALF = tf.float16

    @staticmethod
    def is_floating(dtype) -> bool:
        return tf.as_dtype(dtype).is_floating

    @staticmethod
    def cast(tensor, dtype):
        return tf.cast(tensor, dtype)


class Compression:
    """Compression algorithms to pass as ``compression=``: ``none`` (default) and ``fp16``."""

    none = NoneCompressor
    fp16 = FP16Compressor
