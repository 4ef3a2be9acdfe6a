"""``TorchState`` (``horovod.torch.elastic.TorchState``): the state of a PyTorch training loop
across resets: models, optimizers, learning-rate schedulers, ElasticSamplers, and any picklable
attributes (epoch, batch, ...).

Each model, optimizer, scheduler and sampler gets a handler that saves a deep copy of its
``state_dict()`` (on the tensors' own device) at ``commit()``, loads that copy back at
``restore()``, and broadcasts rank 0's at ``sync()``; the other attributes are kept as
``ObjectState`` keeps them.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from kolo.elastic.state import ObjectState
from kolo.torch.elastic.sampler import ElasticSampler
from kolo.torch.functions import (
    allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters)
from kolo.torch.mpi_ops import rank


class StateHandler:
    """Saves, restores and syncs one object of the state."""

    # Handlers sync in increasing order: an optimizer whose state is still empty takes one
    # local step to create it (broadcast_optimizer_state), which can move parameters (weight
    # decay), so models are synced after optimizers and end up bitwise equal to rank 0's.
    sync_order = 0

    def __init__(self, value: Any):
        self.value = value

    def save(self) -> None:
        raise NotImplementedError()

    def restore(self) -> None:
        raise NotImplementedError()

    def sync(self) -> None:
        raise NotImplementedError()

    def set_value(self, value: Any) -> None:
        self.value = value
        self.save()

    def on_reset(self) -> None:
        """Called after each reset, before the sync (which a removal of hosts skips)."""


class _StateDictHandler(StateHandler):
    """An object with ``state_dict()`` / ``load_state_dict()``: saved as a deep copy."""

    def __init__(self, value: Any):
        super().__init__(value)
        self._saved = copy.deepcopy(self.value.state_dict())

    def save(self) -> None:
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(self._saved)

    def sync(self) -> None:
        self.value.load_state_dict(broadcast_object(self.value.state_dict()))


class ModelStateHandler(_StateDictHandler):
    """A ``torch.nn.Module``: parameters and buffers, broadcast in place from rank 0."""

    sync_order = 2

    def sync(self) -> None:
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(_StateDictHandler):
    """A ``torch.optim.Optimizer`` (or kolo's DistributedOptimizer): its buffers, step counts
    and options (the learning rate)."""

    def sync(self) -> None:
        broadcast_optimizer_state(self.value, root_rank=0)


class LRSchedulerStateHandler(_StateDictHandler):
    """A learning-rate scheduler: its counters, synced as a picklable object."""


class SamplerStateHandler(_StateDictHandler):
    """An ``ElasticSampler``: which samples of the epoch are done. A commit adds the indices
    each rank recorded with ``record_indices`` to every rank's record (one small allgather)."""

    def save(self) -> None:
        gathered = allgather_object(self.value.local_indices)
        state = copy.deepcopy(self.value.state_dict())
        counted = self.value.processed_num - len(state["processed_indices"])
        state["processed_indices"] = state["processed_indices"].union(*gathered)
        state["processed_num"] = counted + len(state["processed_indices"])
        self.value.processed_indices = set(state["processed_indices"])
        self.value.local_indices = set()
        self._saved = state

    def on_reset(self) -> None:
        # The ranks and the size changed: split what is left of the epoch anew. Needed when the
        # sync is skipped (hosts only removed), where no load_state_dict does it.
        self.value.reset()


_handler_registry = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (torch.optim.lr_scheduler.LRScheduler, LRSchedulerStateHandler),
    (ElasticSampler, SamplerStateHandler),
]


def get_handler_registry() -> list:
    """The (type, handler class) pairs TorchState consults, first match wins."""
    return _handler_registry


def set_handler_registry(registry: list) -> None:
    """Replaces the (type, handler class) pairs TorchState consults."""
    _handler_registry[:] = list(registry)


def _get_handler(value: Any):
    for handled_type, handler_class in _handler_registry:
        if isinstance(value, handled_type):
            return handler_class(value)
    return None


def _get_handlers(kwargs: dict) -> tuple[dict, dict]:
    handlers, plain = {}, {}
    for name, value in kwargs.items():
        handler = _get_handler(value)
        if handler is not None:
            handlers[name] = handler
        else:
            plain[name] = value
    return handlers, plain


class TorchState(ObjectState):
    """The state of a PyTorch training process, kept across resets.

    Args:
        model: optional ``torch.nn.Module``.
        optimizer: optional ``torch.optim.Optimizer``.
        kwargs: more attributes. Models, optimizers, LR schedulers and ElasticSamplers (any
            number of each) are handled as such; anything else must be picklable and is
            broadcast from rank 0 as a Python object. Every one becomes an attribute.
    """

    def __init__(self, model=None, optimizer=None, **kwargs: Any):
        kwargs.update(dict(model=model, optimizer=optimizer))
        self._handlers, kwargs = _get_handlers(kwargs)
        for name, handler in self._handlers.items():
            setattr(self, name, handler.value)
        super().__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def save(self) -> None:
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self) -> None:
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self) -> None:
        for handler in sorted(self._handlers.values(), key=lambda h: h.sync_order):
            handler.sync()
        super().sync()

    def on_reset(self) -> None:
        for handler in self._handlers.values():
            handler.on_reset()
        super().on_reset()

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, name) and name in self._handlers:
            self._handlers[name].set_value(value)
        super().__setattr__(name, value)
