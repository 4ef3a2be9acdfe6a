"""Broadcasting and allgathering picklable Python objects, for every framework: the pickled
bytes travel as NumPy uint8 arrays, so no framework tensor is needed (``horovod.torch`` and
``horovod.tensorflow`` both expose these, the latter with its extra ``session`` argument).

Unlike Horovod, an unnamed call is named by a counter of its own kind of call rather than by the
object's type, so ``broadcast_object(x if rank == 0 else None)`` works instead of stalling on
names that differ between ranks.
"""

from __future__ import annotations

import io
from typing import Any, Optional

import numpy as np

import kolo
from kolo import _core
from kolo._handles import synchronize
from kolo.process_sets import check_process_set, global_process_set

try:  # Horovod pickles with cloudpickle (lambdas, local classes); plain pickle otherwise.
    import cloudpickle as _pickle
except ImportError:  # pragma: no cover - depends on the environment
    import pickle as _pickle


def _part(name: Optional[str], part: str) -> Optional[str]:
    """The name of one part of an object transfer (None: kolo's per-kind counter names it)."""
    return None if name is None else f"{name}.{part}"


def _pickled(obj: Any) -> np.ndarray:
    buffer = io.BytesIO()
    _pickle.dump(obj, buffer)
    # A writable copy: DLPack refuses to export read-only NumPy arrays.
    return np.frombuffer(bytearray(buffer.getvalue()), dtype=np.uint8)


def _broadcast_in_place(array: np.ndarray, root_rank: int, name: Optional[str],
                        set_id: int) -> None:
    synchronize(kolo._submit(_core.OP_BROADCAST, "broadcast", array, None, name, root=root_rank,
                             process_set=set_id))


def _allgather(array: np.ndarray, name: Optional[str], set_id: int) -> np.ndarray:
    return synchronize(kolo._submit(_core.OP_ALLGATHER, "allgather", array, None, name,
                                    process_set=set_id))


def broadcast_object(obj: Any, root_rank: int = 0, name: Optional[str] = None,
                     process_set=global_process_set) -> Any:
    """root_rank's `obj` (pickled, broadcast, unpickled) on every rank of the process set."""
    set_id = check_process_set(process_set)
    name = kolo._name("broadcast_object", name, set_id)
    is_root = _core.rank() == root_rank
    payload = _pickled(obj) if is_root else None
    length = np.array([payload.size if is_root else 0], dtype=np.int64)
    _broadcast_in_place(length, root_rank, _part(name, "sz"), set_id)
    if not is_root:
        payload = np.empty(int(length[0]), dtype=np.uint8)
    _broadcast_in_place(payload, root_rank, _part(name, "t"), set_id)
    if is_root:
        return obj
    return _pickle.loads(payload.tobytes())


def allgather_object(obj: Any, name: Optional[str] = None,
                     process_set=global_process_set) -> list:
    """Every rank's `obj` (of the process set), as a list in rank order.

    An unnamed call is named by a counter of allgather_object calls alone (Horovod: by the
    object's type), so a plain allgather that only some ranks made (one refused while a rank had
    joined) cannot shift the names the ranks agree on."""
    set_id = check_process_set(process_set)
    members = _core.size() if set_id == 0 else process_set.size()
    name = kolo._name("allgather_object", name, set_id)
    payload = _pickled(obj)
    sizes = _allgather(np.array([payload.size], dtype=np.int64), _part(name, "sz"), set_id)
    gathered = _allgather(payload, _part(name, "t"), set_id)
    out, start = [], 0
    for r in range(members):
        end = start + int(sizes[r])
        out.append(_pickle.loads(gathered[start:end].tobytes()))
        start = end
    return out
