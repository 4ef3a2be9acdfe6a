"""Horovod's rules for gradients that stay on their rank and for local gradient aggregation,
without a framework: which gradients a reduction skips (those of sources registered as local,
by key), and the checks and scaling of ``backward_passes_per_step``. The TensorFlow tape and
Keras optimizer apply them to tensors."""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable


def split_local(keys: Iterable[Hashable], local_keys: set) -> tuple[list[int], list[int]]:
    """(indices to reduce over the ranks, indices of local sources), both in order."""
    shared, local = [], []
    for i, key in enumerate(keys):
        (local if key in local_keys else shared).append(i)
    return shared, local


def reduce_all_but_local(grads: list, keys: list, local_keys: set,
                         reduce: Callable[[list, list], list], sources: list,
                         divide: Callable[[Any, Any], Any], size: Callable[[], Any],
                         scale_local: bool) -> list:
    """`grads` with the shared ones replaced by reduce(shared grads, their sources) and, with
    `scale_local`, the local ones divided by the set's size (Horovod does so that a local
    gradient weighs as an averaged one: horovod pull 3695). None stays None. `size()` is what
    `divide` takes: a number, or a framework's tensor read when a graph runs."""
    shared, local = split_local(keys, local_keys)
    out = list(grads)
    for i, g in zip(shared, reduce([grads[i] for i in shared], [sources[i] for i in shared])):
        out[i] = g
    if scale_local and local:
        n = size()
        for i in local:
            if out[i] is not None:
                out[i] = divide(out[i], n)
    return out


def check_backward_passes(passes: int) -> int:
    """`backward_passes_per_step`, checked as Horovod does."""
    if not isinstance(passes, int) or passes <= 0:
        raise ValueError(f"backward_passes_per_step must be > 0, got {passes!r}")
    return passes


def aggregated_divisor(passes: int, average_aggregated_gradients: bool) -> int:
    """What the sum of `passes` local gradients is divided by once reduced: `passes` with
    ``average_aggregated_gradients``, else 1 (Horovod's default sums them)."""
    return passes if average_aggregated_gradients else 1
