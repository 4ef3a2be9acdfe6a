"""The rules Horovod's DistributedOptimizer (torch) and DistributedGradientTape / optimizer
(TensorFlow) share for their arguments and for grouping gradients into grouped allreduces."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

from kolo.common.basics import Average


def check_reduction_arguments(op: int, gradient_predivide_factor: float, num_groups: int,
                              groups: Any, is_variable: Callable[[Any], bool],
                              variable_kind: str) -> Optional[Any]:
    """Checks Horovod's gradient-reduction arguments and returns the effective ``groups``
    (``num_groups`` is its deprecated name). ``groups``: None, a positive int (that many groups of
    variables ordered by name), or a list of lists of variables (`variable_kind` names their
    type in the errors; each may appear once)."""
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0:
        # stacklevel 3: the user's call of the public wrapper.
        warnings.warn("Parameter `num_groups` has been replaced by `groups` and will be removed "
                      "in v0.23.0.", DeprecationWarning, stacklevel=3)
        if groups is None:
            groups = num_groups
    if groups is None:
        return None
    if not (isinstance(groups, list) or (isinstance(groups, int) and groups > 0)):
        raise ValueError(f"groups should be a non-negative integer or a list of list of "
                         f"{variable_kind}.")
    if isinstance(groups, list):
        seen = set()
        for group in groups:
            for variable in group:
                if not is_variable(variable):
                    raise TypeError(f"groups must consist of {variable_kind}.")
                if id(variable) in seen:
                    raise ValueError("A parameter can only appear once in groups.")
                seen.add(id(variable))
    return groups


def split_list(l, n):  # noqa: E741 - Horovod's parameter name
    """``l`` in ``n`` consecutive parts whose lengths differ by at most one, longer ones first
    (``horovod.common.util.split_list``)."""
    base, extra = divmod(len(l), n)
    parts, start = [], 0
    for i in range(n):
        end = start + base + (1 if i < extra else 0)
        parts.append(l[start:end])
        start = end
    return parts


def split_by_name(variables: list, name_of: Callable[[Any], str], parts: int) -> list[list]:
    """`variables` ordered by name (the same order on every rank) and cut into at most `parts`
    consecutive, nearly equal, non-empty groups."""
    ordered = sorted(variables, key=name_of)
    return [chunk for chunk in split_list(ordered, parts) if chunk]


def scale_factors(op: int, gradient_predivide_factor: float) -> tuple[float, float]:
    """(prescale, postscale): gradient_predivide_factor splits the average around the sum (the
    core also multiplies postscale by 1 / size for Average)."""
    if op == Average:
        return 1.0 / gradient_predivide_factor, gradient_predivide_factor
    return 1.0, 1.0


def synchronize_runs_reductions() -> bool:
    """Whether an optimizer leaves its gradients' allreduces to its synchronize(), whose wait then
    runs them in one cycle on the caller's thread, instead of waking the background thread for
    each gradient during backward.

    True when callers may drive cycles (all ranks on one host, KOLO_CALLER_DRIVES not 0) and
    this rank may use one core (kolorun's placement on a host with as many cores as ranks): the
    background thread would only take turns with backward on that core, so overlapping buys
    nothing, and each of its wake-ups cost the core two context switches (training the CNN at
    np 2: ~1.5 ms of the rank's CPU per 27 ms step). With more cores per rank the allreduces
    overlap backward as before."""
    import os

    from kolo import _core

    return _core.callers_drive() and len(os.sched_getaffinity(0)) == 1
