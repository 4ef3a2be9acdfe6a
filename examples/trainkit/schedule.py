"""Optimizer and learning rate. The LR is a function of epoch progress (a float), not of the step
count, so it is the same at the same point of training whatever the world size, also across a
resume on a different number of ranks."""

from __future__ import annotations

import math
from typing import Any

import torch


def build_optimizer(model: torch.nn.Module, cfg: dict[str, Any]) -> torch.optim.Optimizer:
    kwargs = {k: v for k, v in cfg.items() if k != "type"}
    try:
        optimizer_class = getattr(torch.optim, cfg["type"])
    except AttributeError:
        raise ValueError(f"optimizer.type '{cfg['type']}' is not a torch.optim optimizer") from None
    return optimizer_class(model.parameters(), **kwargs)


class LearningRate:
    """Goyal et al.'s recipe: scale the base LR by the world size (--auto-scale-lr) and reach it by
    a linear warm-up from the base LR, then hold it (policy constant) or decay it (cosine)."""

    def __init__(self, base_lr: float, world_size: int, auto_scale: bool,
                 schedule: dict[str, Any]) -> None:
        self.base = base_lr
        self.peak = base_lr * (world_size if auto_scale else 1)
        self.warmup = float(schedule["warmup_epochs"]) if auto_scale else 0.0
        self.epochs = float(schedule["epochs"])
        self.policy = schedule["policy"]
        if self.policy not in ("constant", "cosine"):
            raise ValueError(f"schedule.policy '{self.policy}' is not one of constant, cosine")

    def at(self, progress: float) -> float:
        """The LR after `progress` epochs (0 at the start of training)."""
        if progress < self.warmup:
            return self.base + (self.peak - self.base) * progress / self.warmup
        if self.policy == "constant" or self.epochs <= self.warmup:
            return self.peak
        done = min((progress - self.warmup) / (self.epochs - self.warmup), 1.0)
        return self.peak * 0.5 * (1.0 + math.cos(math.pi * done))

    @staticmethod
    def apply(optimizer: torch.optim.Optimizer, lr: float) -> None:
        for group in optimizer.param_groups:
            group["lr"] = lr
