"""Model and optimizer synchronisation helpers, as ``horovod.torch.functions``."""

from __future__ import annotations

from typing import Optional

import torch

# Objects travel the same way for every framework (kolo/common/objects.py).
from kolo.common.objects import allgather_object, broadcast_object  # noqa: F401
from kolo.torch.mpi_ops import (  # noqa: F401  (Horovod's module has allgather, broadcast_, size)
    allgather, broadcast_, broadcast_async_, rank, size, synchronize)
from kolo.torch.optimizer import step_locally
from kolo.torch.process_sets import (  # noqa: F401  (ProcessSet: Horovod's module has it too)
    ProcessSet, check_process_set, global_process_set)


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


def _sparse_parameter_ids(model) -> set:
    """ids of the parameters of `model`'s sparse embeddings (their gradients are sparse)."""
    if model is None:
        return set()
    return {id(p) for m in model.modules()
            if isinstance(m, torch.nn.Embedding) and m.sparse for p in m.parameters()}


def _initialize_state(optimizer: torch.optim.Optimizer, model) -> None:
    """Creates the state of an optimizer that has none yet, as Horovod does: every trainable
    parameter gets a zero gradient (sparse for SparseAdam and for `model`'s sparse embeddings
    under SGD) and the optimizer takes one local step. Its gradients are left in place."""
    sparse_ids = _sparse_parameter_ids(model)
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad:
                p.grad = torch.zeros_like(p, memory_format=torch.contiguous_format)
                if isinstance(optimizer, torch.optim.SparseAdam) or (
                        isinstance(optimizer, torch.optim.SGD) and id(p) in sparse_ids):
                    p.grad = p.grad.to_sparse()
    step_locally(optimizer)


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer, root_rank: int, model=None,
                              process_set=global_process_set) -> None:
    """Makes every rank's optimizer state (per-parameter buffers, step counts, and options such
    as the learning rate) equal to root_rank's.

    As Horovod's: an optimizer whose state is still empty first takes one local step on zero
    gradients to create it (so a parameter without a gradient gets a zero one); `model`, if
    given, tells which parameters belong to sparse embeddings. The state's structure and its
    non-tensor values travel as one pickled object; its tensors are broadcast in place, without
    pickling, so a rank whose state differs in shape from root_rank's still ends up equal.
    """
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    check_process_set(process_set)
    if len(optimizer.state_dict()["state"]) == 0:
        _initialize_state(optimizer, model)
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
