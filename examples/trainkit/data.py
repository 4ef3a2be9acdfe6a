"""Datasets and the sampler. The sampler deals out one global shuffled order per epoch that does
not depend on the world size, so a checkpoint taken after `consumed` samples resumes at the same
place on any number of ranks."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any, Iterator

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Subset, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/, for pytorch_mnist
from pytorch_mnist import DEFAULT_DATA_DIR, load_dataset  # noqa: E402


def _synthetic(cfg: dict[str, Any], train: bool) -> TensorDataset:
    """Random inputs labelled by a fixed random linear teacher: learnable, with a known shape."""
    shape, classes = tuple(cfg["input_shape"]), cfg["num_classes"]
    features = math.prod(shape)
    teacher = torch.randn(features, classes, generator=torch.Generator().manual_seed(1234))
    count = cfg["train_size"] if train else cfg["test_size"]
    x = torch.randn(count, *shape, generator=torch.Generator().manual_seed(1 if train else 2))
    return TensorDataset(x, (x.flatten(1) @ teacher).argmax(1))


def build_dataset(cfg: dict[str, Any], train: bool) -> Dataset:
    if cfg["type"] == "fashion_mnist":
        dataset = load_dataset(cfg["root"] or DEFAULT_DATA_DIR, train=train)
    elif cfg["type"] == "synthetic":
        dataset = _synthetic(cfg, train)
    else:
        raise ValueError(f"data.type '{cfg['type']}' is not one of fashion_mnist, synthetic")
    subset = cfg["train_subset" if train else "test_subset"]
    if subset is not None and subset < len(dataset):
        dataset = Subset(dataset, range(subset))
    return dataset


class ResumableSampler(DistributedSampler):
    """DistributedSampler (same order, same padding) that can start an epoch after the first
    `consumed` samples of the epoch's global order."""

    def __init__(self, dataset: Dataset, num_replicas: int, rank: int, seed: int) -> None:
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=True, seed=seed)
        self.consumed = 0

    def set_position(self, epoch: int, consumed: int) -> None:
        self.set_epoch(epoch)
        self.consumed = consumed

    def _remaining(self) -> int:
        return max(len(self.dataset) - self.consumed, 0)

    def __len__(self) -> int:
        return math.ceil(self._remaining() / self.num_replicas)

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator()
        generator.manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.dataset), generator=generator).tolist()[self.consumed:]
        if order:
            padding = len(self) * self.num_replicas - len(order)
            order += (order * math.ceil(padding / len(order)))[:padding]
        return iter(order[self.rank::self.num_replicas])


def train_loader(dataset: Dataset, cfg: dict[str, Any], sampler: ResumableSampler) -> DataLoader:
    return DataLoader(dataset, batch_size=cfg["batch_size"], sampler=sampler,
                      num_workers=cfg["num_workers"])


def test_loader(dataset: Dataset, cfg: dict[str, Any], rank: int, size: int) -> DataLoader:
    # Every sample once, no padding, so the summed metrics are exact on any world size.
    shard = Subset(dataset, range(rank, len(dataset), size))
    return DataLoader(shard, batch_size=cfg["test_batch_size"], num_workers=cfg["num_workers"])
