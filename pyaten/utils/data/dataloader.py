"""DataLoader: batches from a dataset through a sampler and a collate function, in the main
process or in worker processes (`num_workers > 0`), as torch.utils.data.DataLoader."""

from __future__ import annotations

import itertools
import math
import multiprocessing
import pickle
import queue
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pyaten.core import Generator, int64
from pyaten.ops import aten
from pyaten.utils.data._fetch import make_fetcher
from pyaten.utils.data._worker import IterableEnd, WorkerConfig, WorkerFailure, worker_loop
from pyaten.utils.data.collate import default_collate, default_convert
from pyaten.utils.data.dataset import Dataset, IterableDataset
from pyaten.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
           "persistent_workers")
_POLL_SECONDS = 5.0


class _InfiniteConstantSampler(Sampler[None]):
    """An iterable dataset's stand-in sampler: None forever."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader:
    """Iterate over `dataset` in batches. See docs/data.md; the arguments, defaults and
    errors are PyTorch's."""

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        prefetch_factor = _check_worker_options(num_workers, timeout, prefetch_factor,
                                                persistent_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            _check_iterable_options(shuffle, sampler, batch_sampler)
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, "
                    "sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FROZEN and self.__dict__.get("_initialized"):
            raise ValueError(
                f"{name} attribute should not be set after {type(self).__name__} is initialized"
            )
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Iterable:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if not self._iterable:
            return len(self._index_sampler)
        length = len(self.dataset)
        if self.batch_size is not None:
            length = length // self.batch_size if self.drop_last else math.ceil(
                length / self.batch_size)
        return length

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        return _MultiProcessIter(self)

    def _shared_seed(self) -> int:
        """The base seed of an epoch's workers, drawn from `generator` (or the default)."""
        seed = aten.random_.default(aten.empty.memory_format([], dtype=int64),
                                    generator=self.generator)
        return int(seed.item())


def _check_worker_options(num_workers: int, timeout: float, prefetch_factor: int | None,
                          persistent_workers: bool) -> int | None:
    """PyTorch's checks of the worker options; the prefetch factor in effect."""
    if num_workers < 0:
        raise ValueError(
            "num_workers option should be non-negative; use num_workers=0 to disable "
            "multiprocessing."
        )
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError(
            "prefetch_factor option could only be specified in multiprocessing.let "
            "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
        )
    if num_workers > 0 and prefetch_factor is None:
        prefetch_factor = 2
    elif prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    return prefetch_factor


def _check_iterable_options(shuffle: object, sampler: object, batch_sampler: object) -> None:
    if shuffle not in {False, None}:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified shuffle option, but got "
            f"shuffle={shuffle}"
        )
    if sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified sampler option, but got "
            f"sampler={sampler}"
        )
    if batch_sampler is not None:
        raise ValueError(
            "DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
            f"got batch_sampler={batch_sampler}"
        )


class _SingleProcessIter:
    """Batches fetched in the calling process, one per `next`."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._indices = iter(loader._index_sampler)
        self._base_seed = loader._shared_seed()
        self._fetcher = make_fetcher(loader._iterable, loader.dataset, loader._auto_collation,
                                     loader.collate_fn, loader.drop_last)

    def __iter__(self) -> _SingleProcessIter:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self) -> Any:
        index = next(self._indices)
        return self._fetcher.fetch(index)


class _MultiProcessIter:
    """Batches fetched by worker processes and handed out in sampler order."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._indices = iter(loader._index_sampler)
        count = loader.num_workers
        context = _context(loader.multiprocessing_context)
        base_seed = loader._shared_seed()
        self._result_queue = context.Queue()
        self._index_queues = []
        self._workers = []
        for worker_id in range(count):
            config = WorkerConfig(loader._iterable, loader.dataset, loader._auto_collation,
                                  loader.collate_fn, loader.drop_last, base_seed,
                                  loader.worker_init_fn, worker_id, count)
            index_queue = context.Queue()
            worker = context.Process(target=worker_loop,
                                     args=(config, index_queue, self._result_queue),
                                     daemon=True)
            worker.start()
            self._index_queues.append(index_queue)
            self._workers.append(worker)
        self._active = [True] * count
        self._next_worker = itertools.cycle(range(count))
        self._sent = 0
        self._received = 0
        self._pending: dict[int, tuple] = {}  # task -> (worker,) or (worker, answer)
        self._shut = False
        for _ in range(loader.prefetch_factor * count):
            self._send_next()

    def __iter__(self) -> _MultiProcessIter:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def _send_next(self) -> None:
        """Give the next index to the next active worker (nothing when none is left)."""
        for _ in range(len(self._workers)):
            worker = next(self._next_worker)
            if self._active[worker]:
                break
        else:
            return
        try:
            index = next(self._indices)
        except StopIteration:
            return
        self._index_queues[worker].put((self._sent, index))
        self._pending[self._sent] = (worker,)
        self._sent += 1

    def __next__(self) -> Any:
        while True:
            if not self._skip_to_live_task():
                self._shutdown()
                raise StopIteration
            info = self._pending[self._received]
            if len(info) == 2:
                return self._hand_out(info[1])
            number, answer = self._receive()
            if isinstance(answer, IterableEnd):
                self._active[answer.worker_id] = False
                self._index_queues[answer.worker_id].put(None)
                self._send_next()
                continue
            if number != self._received:
                self._pending[number] += (answer,)
                continue
            return self._hand_out(answer)

    def _skip_to_live_task(self) -> bool:
        """Pass over tasks of workers whose iterable ended; False when no task is left."""
        while self._received < self._sent:
            info = self._pending[self._received]
            if len(info) == 2 or self._active[info[0]]:
                return True
            del self._pending[self._received]
            self._received += 1
        return False

    def _hand_out(self, answer: Any) -> Any:
        del self._pending[self._received]
        self._received += 1
        self._send_next()
        if isinstance(answer, WorkerFailure):
            self._shutdown()
            answer.reraise()
        return answer

    def _receive(self) -> tuple[int, Any]:
        timeout = self._loader.timeout
        while True:
            try:
                number, payload = self._result_queue.get(
                    timeout=timeout if timeout > 0 else _POLL_SECONDS)
                return number, pickle.loads(payload)
            except queue.Empty:
                if timeout > 0:
                    self._shutdown()
                    raise RuntimeError(
                        f"DataLoader timed out after {timeout} seconds") from None
                self._check_workers_alive()

    def _check_workers_alive(self) -> None:
        dead = [str(w.pid) for w in self._workers if not w.is_alive() and w.exitcode != 0]
        if dead:
            self._shutdown()
            raise RuntimeError(
                f"DataLoader worker (pid(s) {', '.join(dead)}) exited unexpectedly")

    def _shutdown(self) -> None:
        if self._shut:
            return
        self._shut = True
        for index_queue, worker in zip(self._index_queues, self._workers):
            if worker.is_alive():
                index_queue.put(None)
        for worker in self._workers:
            worker.join(timeout=_POLL_SECONDS)
            if worker.is_alive():
                worker.terminate()
        for q in (*self._index_queues, self._result_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self) -> None:
        if not getattr(self, "_shut", True):
            self._shutdown()


def _context(choice: Any) -> Any:
    """The multiprocessing context: the one given (or named), else fork where available."""
    if choice is None:
        methods = multiprocessing.get_all_start_methods()
        return multiprocessing.get_context("fork" if "fork" in methods else None)
    if isinstance(choice, str):
        return multiprocessing.get_context(choice)
    return choice
