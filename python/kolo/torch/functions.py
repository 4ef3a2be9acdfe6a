"""Model and optimizer synchronisation helpers, as ``horovod.torch.functions``."""

from __future__ import annotations

import io
from typing import Any, Optional

import torch

from kolo.torch.mpi_ops import (
    allgather, broadcast_, broadcast_async_, rank, size, synchronize)
from kolo.torch.process_sets import check_process_set, global_process_set

try:  # Horovod pickles with cloudpickle (lambdas, local classes); plain pickle otherwise.
    import cloudpickle as _pickle
except ImportError:  # pragma: no cover - depends on the environment
    import pickle as _pickle

from kolo.torch.process_sets import ProcessSet  # noqa: E402,F401  (Horovod's module has it too)


def broadcast_parameters(params, root_rank: int, prefix: Optional[str] = None,
                         process_set=global_process_set) -> None:
    """Overwrites every rank's parameters with root_rank's, in place.

    `params` is a ``model.state_dict()`` (dict), ``model.named_parameters()`` or a list of
    parameters / (name, parameter) pairs. Named entries are broadcast under their names (with
    `prefix`), so the same model gives the same names on every rank.
    """
    if isinstance(params, dict):
        params = sorted(params.items())
    elif isinstance(params, list) or hasattr(params, "__iter__"):
        params = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise ValueError(f"invalid params of type: {type(params)}")
    handles = []
    for name, p in params:
        if p is None:
            continue
        if name is not None and prefix is not None:
            name = prefix + name
        handles.append(broadcast_async_(p, root_rank, name, process_set=process_set))
    for handle in handles:
        synchronize(handle)


def broadcast_object(obj: Any, root_rank: int = 0, name: Optional[str] = None,
                     process_set=global_process_set) -> Any:
    """root_rank's `obj` (pickled, broadcast, unpickled) on every rank."""
    check_process_set(process_set)
    if name is None:
        name = type(obj).__name__
    if rank() == root_rank:
        buffer = io.BytesIO()
        _pickle.dump(obj, buffer)
        payload = torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)
        length = torch.tensor([payload.numel()], dtype=torch.int64)
        broadcast_(length, root_rank, name + ".sz", process_set=process_set)
    else:
        length = torch.zeros(1, dtype=torch.int64)
        broadcast_(length, root_rank, name + ".sz", process_set=process_set)
        payload = torch.empty(int(length.item()), dtype=torch.uint8)
    broadcast_(payload, root_rank, name + ".t", process_set=process_set)
    if rank() == root_rank:
        return obj
    return _pickle.loads(payload.numpy().tobytes())


def allgather_object(obj: Any, name: Optional[str] = None,
                     process_set=global_process_set) -> list:
    """Every rank's `obj` (of the process set), as a list in rank order."""
    members = size() if check_process_set(process_set) == 0 else process_set.size()
    if name is None:
        name = type(obj).__name__
    buffer = io.BytesIO()
    _pickle.dump(obj, buffer)
    payload = torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)
    sizes = allgather(torch.tensor([payload.numel()], dtype=torch.int64), name=name + ".sz",
                      process_set=process_set)
    gathered = allgather(payload, name=name + ".t", process_set=process_set).numpy()
    out, start = [], 0
    for r in range(members):
        end = start + int(sizes[r])
        out.append(_pickle.loads(gathered[start:end].tobytes()))
        start = end
    return out


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer, root_rank: int,
                              process_set=global_process_set) -> None:
    """Makes every rank's optimizer state (per-parameter buffers, step counts, and options such
    as the learning rate) equal to root_rank's.

    The state's structure and its non-tensor values travel as one pickled object; its tensors are
    broadcast in place, without pickling. Works for any torch optimizer (SGD with momentum, Adam,
    AdamW, ...) and for one whose state is still empty: unlike Horovod, no warm-up step is taken
    to create the state, so parameters are never touched and an empty state stays empty.
    """
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    check_process_set(process_set)
    state_dict = optimizer.state_dict()
    tensors: list[torch.Tensor] = []
    skeleton = None
    if rank() == root_rank:
        # The structure, with each tensor replaced by its index, shape and dtype.
        skeleton = {"param_groups": state_dict["param_groups"], "state": {}}
        for pid, entry in state_dict["state"].items():
            skeleton["state"][pid] = {}
            for key, value in entry.items():
                if torch.is_tensor(value) and not value.is_sparse:
                    skeleton["state"][pid][key] = ("__kolo_tensor__", len(tensors),
                                                   tuple(value.shape), value.dtype)
                    tensors.append(value)
                else:
                    skeleton["state"][pid][key] = value
    skeleton = broadcast_object(skeleton, root_rank, name="optimizer_state.skeleton",
                                process_set=process_set)
    if rank() != root_rank:
        received = {"param_groups": skeleton["param_groups"], "state": {}}
        for pid, entry in skeleton["state"].items():
            received["state"][pid] = {}
            for key, value in entry.items():
                if isinstance(value, tuple) and len(value) == 4 and value[0] == "__kolo_tensor__":
                    tensor = torch.empty(value[2], dtype=value[3])
                    tensors.append(tensor)
                    value = tensor
                received["state"][pid][key] = value
    handles = [broadcast_async_(t, root_rank, f"optimizer_state.{i}", process_set=process_set)
               for i, t in enumerate(tensors)]
    for handle in handles:
        synchronize(handle)
    if rank() != root_rank:
        optimizer.load_state_dict(received)
