"""The rule for Horovod's legacy ``average=`` argument beside ``op=``, for every framework."""

from __future__ import annotations

import warnings


def get_average_backwards_compatibility_fun(reduce_ops):
    """A function (op, average) -> op for the legacy ``average=`` argument: ``op`` wins (both is a
    ValueError), ``average`` maps to ``reduce_ops.Average``/``Sum`` with a DeprecationWarning,
    neither gives Average."""

    def op_for(op, average):
        if op is not None:
            if average is not None:
                raise ValueError("The op parameter supersedes average. "
                                 "Please provide only one of them.")
            return op
        if average is not None:
            # stacklevel 3: the caller of the public function that took `average`.
            warnings.warn("Parameter `average` has been replaced with `op` and will be removed "
                          "in v1.0", DeprecationWarning, stacklevel=3)
            return reduce_ops.Average if average else reduce_ops.Sum
        return reduce_ops.Average

    return op_for
