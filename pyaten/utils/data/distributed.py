"""`DistributedSampler`: each rank reads its own share of a dataset, in PyTorch's order.

The order is PyTorch's exactly: with `shuffle`, `randperm(len(dataset))` from a generator
seeded with `seed + epoch` (pyaten's generator draws PyTorch's permutations); then, without
`drop_last`, the list is padded by repeating its start up to a multiple of the number of
replicas, or cut down to one with it; rank r takes every `num_replicas`-th index from r.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import TypeVar

from pyaten.core import Generator
from pyaten.utils.data import _random
from pyaten.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]

T_co = TypeVar("T_co", covariant=True)


class DistributedSampler(Sampler[T_co]):
    """Indices of rank `rank`'s share of `dataset` among `num_replicas` ranks."""

    def __init__(self, dataset: Sized, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:  # fmt: skip
        if num_replicas is None or rank is None:
            import pyaten.distributed as dist

            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[T_co]:
        n = len(self.dataset)
        if self.shuffle:
            generator = Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = _random.randperm(n, generator)
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently in each epoch: call before iterating (the same on every rank)."""
        self.epoch = epoch
