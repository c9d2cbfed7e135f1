"""Datasets: map-style (`Dataset`, indexed) and iterable-style (`IterableDataset`), with the
wrappers torch.utils.data has (TensorDataset, ConcatDataset, ChainDataset, Subset) and
`random_split`."""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from pyaten.core import Generator, Tensor, default_generator
from pyaten.utils.data import _random

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
    "ChainDataset", "Subset", "random_split",
]

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")


class Dataset(Generic[T_co]):
    """A map from keys (usually 0..len-1) to samples; subclasses define `__getitem__` and
    usually `__len__`. `a + b` concatenates."""

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A stream of samples; subclasses define `__iter__`. `a + b` chains."""

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Sample i is `(t[i] for t in tensors)`; all tensors have the same first size."""

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Several datasets side by side: sample i is a tuple (`*args`) or a dict (`**kwargs`)
    of their samples i."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                "input/output, but both types are given."
            )
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(self._length != len(d) for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets: tuple | dict = args if args else kwargs

    def __getitem__(self, index: Any) -> tuple | dict:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        columns = self.datasets.values() if isinstance(self.datasets, dict) else self.datasets
        fetched = [_fetch_many(d, indices) for d in columns]
        if isinstance(self.datasets, dict):
            return [dict(zip(self.datasets, row)) for row in zip(*fetched)]
        return [tuple(row) for row in zip(*fetched)] if fetched else []

    def __len__(self) -> int:
        return self._length


def _fetch_many(dataset: Any, indices: list) -> list:
    many = getattr(dataset, "__getitems__", None)
    if not callable(many):
        return [dataset[i] for i in indices]
    items = many(indices)
    if len(items) != len(indices):
        raise ValueError(
            f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}"
        )
    return items


class ConcatDataset(Dataset[T_co]):
    """The datasets one after another."""

    @staticmethod
    def cumsum(sequence: Iterable[Any]) -> list[int]:
        totals, running = [], 0
        for part in sequence:
            running += len(part)
            totals.append(running)
        return totals

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[Any]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset[T_co]):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        cls = type(self)
        if cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__. When subclassing "
                "Subset and overriding __getitem__, you must also override __getitems__ to "
                "ensure DataLoader works correctly with your custom logic. A simple "
                "implementation:\n\ndef __getitems__(self, indices):\n    return "
                "[self.__getitem__(idx) for idx in indices]"
            )

    def __getitem__(self, idx: Any) -> T_co:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        mapped = [self.indices[i] for i in indices]
        many = getattr(self.dataset, "__getitems__", None)
        if callable(many):
            return many(mapped)
        return [self.dataset[i] for i in mapped]

    def __len__(self) -> int:
        return len(self.indices)


def split_lengths(total: int, lengths: Sequence[int | float]) -> list[int]:
    """The split sizes `random_split` uses: `lengths` as given, or fractions (summing to 1)
    floored and the remainder handed out one by one from the first split on."""
    if not (math.isclose(sum(lengths), 1) and sum(lengths) <= 1):
        return list(lengths)
    sizes = []
    for i, frac in enumerate(lengths):
        if frac < 0 or frac > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        sizes.append(math.floor(total * frac))
    for i in range(total - sum(sizes)):
        sizes[i % len(sizes)] += 1
    for i, size in enumerate(sizes):
        if size == 0:
            warnings.warn(
                f"Length of split at index {i} is 0. This might result in an empty dataset.",
                stacklevel=3,
            )
    return sizes


def random_split(
    dataset: Dataset[T],
    lengths: Sequence[int | float],
    generator: Generator | None = default_generator,
) -> list[Subset[T]]:
    """Split `dataset` into non-overlapping random subsets of the given lengths (or
    fractions), drawn from one `randperm(len(dataset), generator=generator)`."""
    sizes = split_lengths(len(dataset), lengths)
    if sum(sizes) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = _random.randperm(sum(sizes), generator)
    ends = itertools.accumulate(sizes)
    return [Subset(dataset, order[end - size : end]) for end, size in zip(ends, sizes)]
