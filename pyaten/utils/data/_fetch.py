"""Fetching one batch (or one sample) by its index from a dataset; shared by the
single-process iterator and the worker processes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class MapFetcher:
    """Indexes a map-style dataset: a list of indices with auto-collation, one key without."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, index: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        many = getattr(self.dataset, "__getitems__", None)
        data = many(index) if many else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class IterableFetcher:
    """Draws from an iterable dataset's iterator: `len(index)` samples per batch."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> None:
        self.iterator = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in index:
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(iterable: bool, dataset: Any, auto_collation: bool, collate_fn: Callable,
                 drop_last: bool) -> MapFetcher | IterableFetcher:
    kind = IterableFetcher if iterable else MapFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)
