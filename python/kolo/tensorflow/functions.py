"""Synchronising variables and Python objects, as ``horovod.tensorflow.functions``.

Objects travel as pickled bytes in NumPy arrays (kolo/common/objects.py, shared with
kolo.torch); ``session`` is accepted for Horovod's TF1 signature and must be None (TensorFlow 2
runs eagerly)."""

from __future__ import annotations

from typing import Any, Optional

from kolo.common import objects
from kolo.process_sets import global_process_set
from kolo.tensorflow.mpi_ops import broadcast_


def _no_session(session) -> None:
    if session is not None:
        raise ValueError("kolo.tensorflow runs on TensorFlow 2: session= must be None "
                         "(there are no TF1 sessions to run the broadcast in)")


def broadcast_variables(variables, root_rank: int, process_set=global_process_set,
                        inplace=False):
    """Overwrites every rank's `variables` with root_rank's values (one grouped broadcast).
    ``inplace`` is accepted for Horovod's signature: variables are always assigned in place."""
    return broadcast_(list(variables), root_rank, process_set=process_set)


def broadcast_object(obj: Any, root_rank: int = 0, session=None, name: Optional[str] = None,
                     process_set=global_process_set) -> Any:
    """root_rank's picklable `obj` on every rank."""
    _no_session(session)
    return objects.broadcast_object(obj, root_rank, name=name, process_set=process_set)


def broadcast_object_fn(root_rank: int = 0, session=None, name: Optional[str] = None,
                        process_set=global_process_set):
    """A function obj -> root_rank's obj (Horovod's form for elastic states)."""
    _no_session(session)

    def broadcast_fn(obj):
        return objects.broadcast_object(obj, root_rank, name=name, process_set=process_set)

    return broadcast_fn


def allgather_object(obj: Any, session=None, name: Optional[str] = None,
                     process_set=global_process_set) -> list:
    """Every rank's picklable `obj`, as a list in rank order."""
    _no_session(session)
    return objects.allgather_object(obj, name=name, process_set=process_set)
