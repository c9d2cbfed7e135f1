"""The worker processes of a DataLoader with `num_workers > 0`.

Each worker owns an index queue; the main process sends it `(task, index)` pairs round-robin
and every worker answers on one shared result queue with `(task, batch)`. The main process
puts the answers back in task order. A worker's failure travels back as a `WorkerFailure`
and is raised in the main process; an iterable dataset's end as an `IterableEnd`.
"""

from __future__ import annotations

import pickle
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyaten.core import manual_seed
from pyaten.utils.data._fetch import make_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]


class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: id, num_workers, seed, dataset."""

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id: int, num_workers: int, seed: int, dataset: Any) -> None:  # noqa: A002
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's WorkerInfo inside a DataLoader worker process; None elsewhere."""
    return _worker_info


@dataclass
class IterableEnd:
    """A worker's iterable dataset is exhausted."""

    worker_id: int


@dataclass
class WorkerFailure:
    """An exception raised in a worker, carried back as its type and traceback text."""

    kind: type
    text: str

    def reraise(self) -> None:
        try:
            error = self.kind(self.text)
        except Exception:  # noqa: BLE001 - an exception type with another constructor
            error = RuntimeError(self.text)
        raise error


def failure(where: str) -> WorkerFailure:
    """The exception being handled, described for the main process."""
    kind = _current_exception_type()
    text = f"Caught {kind.__name__} {where}.\nOriginal {traceback.format_exc()}"
    try:
        pickle.dumps(kind)
    except Exception:  # noqa: BLE001 - a local exception class travels as RuntimeError
        kind = RuntimeError
    return WorkerFailure(kind, text)


def _current_exception_type() -> type:
    import sys

    return sys.exc_info()[0] or RuntimeError


@dataclass
class WorkerConfig:
    """What one worker needs, handed to the process at start."""

    iterable: bool
    dataset: Any
    auto_collation: bool
    collate_fn: Callable
    drop_last: bool
    base_seed: int
    init_fn: Callable[[int], None] | None
    worker_id: int
    num_workers: int


def worker_loop(config: WorkerConfig, index_queue: Any, result_queue: Any) -> None:
    """The body of a worker process: seed, run `worker_init_fn`, then answer tasks until the
    main process sends None."""
    global _worker_info
    result_queue.cancel_join_thread()  # exiting never waits on batches nobody will read
    seed = config.base_seed + config.worker_id
    random.seed(seed)
    manual_seed(seed)
    _worker_info = WorkerInfo(config.worker_id, config.num_workers, seed, config.dataset)
    where = f"in DataLoader worker process {config.worker_id}"
    broken = None
    fetcher = None
    try:
        if config.init_fn is not None:
            config.init_fn(config.worker_id)
        fetcher = make_fetcher(config.iterable, config.dataset, config.auto_collation,
                               config.collate_fn, config.drop_last)
    except Exception:  # noqa: BLE001 - reported to the main process with each answer
        broken = failure(where)
    ended = False
    while True:
        task = index_queue.get()
        if task is None:
            break
        number, index = task
        if broken is not None:
            result_queue.put((number, _pickled(broken, where)))
            continue
        if ended:
            result_queue.put((number, _pickled(IterableEnd(config.worker_id), where)))
            continue
        try:
            answer = fetcher.fetch(index)
        except StopIteration:
            ended = config.iterable
            answer = IterableEnd(config.worker_id) if ended else failure(where)
        except Exception:  # noqa: BLE001 - raised again in the main process
            answer = failure(where)
        result_queue.put((number, _pickled(answer, where)))


def _pickled(answer: Any, where: str) -> bytes:
    """The answer as bytes, pickled here so that an unpicklable batch is reported, not lost
    in the queue's feeder thread."""
    try:
        return pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - reported to the main process instead
        return pickle.dumps(failure(where), protocol=pickle.HIGHEST_PROTOCOL)
