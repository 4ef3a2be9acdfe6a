"""One training epoch and one evaluation, with metrics summed over every rank."""

from __future__ import annotations

import contextlib
import resource
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F

from .artefacts import ProgressBar
from .schedule import LearningRate


@dataclass
class Job:
    """Everything the loops use, built once by train.py."""

    backend: Any
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    lr: LearningRate
    device: torch.device
    amp_dtype: torch.dtype | None  # None: full precision
    logger: Any
    train_loader: Any
    test_loader: Any
    sampler: Any
    train_cfg: dict[str, Any] = field(default_factory=dict)

    def autocast(self):
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)


def peak_memory_mb(device: torch.device) -> float:
    """This process's peak: CUDA memory allocated on a GPU, resident set size on CPU."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def train_one_epoch(job: Job, epoch: int, consumed: int,
                    save_position: Callable[[int], None]) -> dict[str, float]:
    """Trains epoch `epoch` (1-based) from `consumed` samples of its global order on;
    `save_position(consumed)` writes a mid-epoch latest.pth when the config asks for one."""
    backend, cfg = job.backend, job.train_cfg
    job.model.train()
    job.sampler.set_position(epoch, consumed)
    total = len(job.sampler.dataset)
    steps = len(job.train_loader)
    if cfg["max_steps_per_epoch"]:
        steps = min(steps, cfg["max_steps_per_epoch"])
    bar = ProgressBar(job.logger, backend.rank == 0, steps, f"epoch {epoch}",
                      cfg["log_interval"])
    loss_sum = correct = count = 0.0
    start = time.perf_counter()
    for step, (x, y) in enumerate(job.train_loader, 1):
        if step > steps:
            break
        lr = job.lr.at(epoch - 1 + consumed / total)
        job.lr.apply(job.optimizer, lr)
        x, y = x.to(job.device, non_blocking=True), y.to(job.device, non_blocking=True)
        job.optimizer.zero_grad(set_to_none=True)
        with job.autocast():
            output = job.model(x)
            loss = F.cross_entropy(output, y)
        job.scaler.scale(loss).backward()
        backend.step(job.optimizer, job.scaler)
        consumed = min(total, consumed + job.train_loader.batch_size * backend.size)
        loss_sum += loss.item() * len(y)
        correct += (output.argmax(1) == y).sum().item()
        count += len(y)
        bar.update(step, loss.item(), lr)
        every = cfg["checkpoint_every_steps"]
        if every and step % every == 0 and step < steps:
            save_position(consumed)
    bar.close()
    elapsed = time.perf_counter() - start
    loss_sum, correct, count = backend.allreduce([loss_sum, correct, count], "sum")
    slowest, peak = backend.allreduce([elapsed, peak_memory_mb(job.device)], "max")
    return {"train_loss": loss_sum / max(count, 1), "train_acc": correct / max(count, 1),
            "samples": int(count), "samples_per_s": count / max(slowest, 1e-9),
            "epoch_time_s": slowest, "peak_mem_mb": peak, "lr": job.optimizer.param_groups[0]["lr"]}


def evaluate(job: Job) -> dict[str, float]:
    """Test loss and accuracy over the whole test set (each rank its shard, summed)."""
    job.model.eval()
    loss_sum = correct = count = 0.0
    with torch.no_grad(), job.autocast():
        for x, y in job.test_loader:
            x, y = x.to(job.device), y.to(job.device)
            output = job.model(x)
            loss_sum += F.cross_entropy(output.float(), y, reduction="sum").item()
            correct += (output.argmax(1) == y).sum().item()
            count += len(y)
    loss_sum, correct, count = job.backend.allreduce([loss_sum, correct, count], "sum")
    return {"test_loss": loss_sum / max(count, 1), "test_acc": correct / max(count, 1)}
