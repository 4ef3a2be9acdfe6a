"""Allocating results in the caller's framework without importing any framework.

kolo accepts any DLPack-capable array. Results are made to match the input's kind: NumPy arrays
give NumPy arrays, PyTorch tensors give PyTorch tensors (found by duck typing, so kolo never
imports or links torch).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np


def _torch_module(array: Any):
    """The torch module if `array` is a torch tensor, else None (never imports torch)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(array, torch.Tensor):
        return torch
    return None


def empty_like(array: Any) -> Any:
    """A new uninitialised array with the input's dtype, shape and framework."""
    torch = _torch_module(array)
    if torch is not None:
        return torch.empty_like(array, memory_format=torch.contiguous_format)
    return np.empty_like(np.asarray(array))


def zeros_of(array: Any, shape: tuple) -> Any:
    """A zero-filled array of `shape` in the input's dtype and framework."""
    torch = _torch_module(array)
    if torch is not None:
        return torch.zeros(shape, dtype=array.dtype, device=array.device)
    return np.zeros(shape, dtype=np.asarray(array).dtype)


def is_torch(array: Any) -> bool:
    """Whether results for this input should be torch tensors (else NumPy arrays)."""
    return _torch_module(array) is not None


def contiguous(array: Any) -> Any:
    """The array itself when contiguous, else a contiguous copy (for inputs only)."""
    torch = _torch_module(array)
    if torch is not None:
        return array.contiguous()
    if isinstance(array, np.ndarray):
        return np.ascontiguousarray(array)
    return array
