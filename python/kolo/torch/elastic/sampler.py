"""``ElasticSampler`` (``horovod.torch.elastic.ElasticSampler``): a DistributedSampler that
remembers how much of the epoch was processed, so that after a reset the rest of the epoch is
split among the new set of workers, and no sample is skipped or repeated."""

from __future__ import annotations

import math
import random
from typing import Any, Iterable, Iterator

import torch.utils.data

from kolo.torch.mpi_ops import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Partitions a dataset across ranks, and re-partitions what is left after a reset.

    Use it as Horovod's: put it in the ``TorchState`` (its progress is then committed, rolled
    back and synced with the model), call ``record_batch`` after each batch, and ``set_epoch``
    at the *end* of each epoch (it clears the record).

    The order of an epoch is a permutation of the dataset fixed by ``seed + epoch`` (the same on
    every rank); rank r of n takes every n-th of the samples left, starting at r. So the first
    k batches of all ranks are exactly the first ``k * batch_size * n`` samples left, and
    ``processed_num`` is Horovod's counter: ``record_batch`` adds ``batch_size * n`` to it on
    every rank alike, with no communication, and a reset skips that many of the order.

    ``record_indices`` (the API of Horovod's older samplers) marks dataset indices this rank
    processed instead; the TorchState's commit unions them over all ranks, and they are left out
    of the order before the counter applies. Use one or the other within an epoch.

    Args:
        dataset: the dataset (its length must not change).
        shuffle: shuffle the order each epoch (default True).
        seed: the shuffle's seed, the same on every rank (default 0).
    """

    def __init__(self, dataset, shuffle: bool = True, seed: int = 0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed

        self.epoch = 0
        # Samples counted by record_batch: a prefix of the order left after processed_indices.
        self._batches_num = 0
        self.processed_indices: set = set()
        # Indices recorded by record_indices since the last commit: this rank's only, until the
        # TorchState's commit unions them over all ranks.
        self.local_indices: set = set()

        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices: list = []
        self.indices: list = []
        self.num_samples = 0
        self.total_size = 0
        self.reset()

    @property
    def processed_num(self) -> int:
        """How many samples of this epoch have been processed (Horovod's counter)."""
        return self._batches_num + len(self.processed_indices)

    @processed_num.setter
    def processed_num(self, value: int) -> None:
        self._batches_num = int(value) - len(self.processed_indices)

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch `epoch` with nothing processed. Call it at the end of an epoch, not at
        its start: an epoch interrupted by a reset must keep its record."""
        self.epoch = epoch
        self._batches_num = 0
        self.processed_indices = set()
        self.local_indices = set()
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """Counts one batch of `batch_size` samples on every rank as processed (Horovod's
        arithmetic: `batch_idx` is not used, batches are taken in order)."""
        self._batches_num += batch_size * self.num_replicas

    def record_indices(self, indices: Iterable[int]) -> None:
        """Marks dataset indices that *this rank* processed; they count for every rank after the
        next commit of the TorchState holding this sampler (which gathers them)."""
        indices = set(int(i) for i in indices) - self.processed_indices
        self.local_indices |= indices
        self.processed_indices |= indices

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "processed_num": self.processed_num,
                "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state_dict: dict) -> None:
        """Takes a ``state_dict()`` (kolo's, or Horovod's with ``processed_num`` alone) and
        re-partitions what is left over the current ranks."""
        self.epoch = state_dict["epoch"]
        self.processed_indices = set(state_dict.get("processed_indices", ()))
        self.processed_num = state_dict["processed_num"]
        self.local_indices = set()
        self.reset()

    def _order(self) -> list:
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        return order

    def reset(self) -> None:
        """Re-reads rank and size and splits the unprocessed samples among the ranks."""
        self.num_replicas = size()
        self.rank = rank()
        left = [i for i in self._order() if i not in self.processed_indices]
        self.remaining_indices = left[self._batches_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas
        # As DistributedSampler: the last few samples are repeated so every rank gets as many.
        padded = list(self.remaining_indices)
        padded += padded[:self.total_size - len(padded)]
        self.indices = padded[self.rank:self.total_size:self.num_replicas]

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self.indices))

    def __len__(self) -> int:
        return self.num_samples
