"""DataLoader: batches from a dataset through a sampler and a collate function, in the main
process or in worker processes (`num_workers > 0`), as torch.utils.data.DataLoader."""

from __future__ import annotations

import functools
import itertools
import math
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from multiprocessing import connection
from typing import Any

from pyaten.core import Generator, int64
from pyaten.ops import aten
from pyaten.utils.data._fetch import make_fetcher
from pyaten.utils.data._worker import (
    IterableEnd,
    ResumeIteration,
    WorkerConfig,
    WorkerFailure,
    failure,
    worker_loop,
)
from pyaten.utils.data.collate import default_collate, default_convert
from pyaten.utils.data.dataset import Dataset, IterableDataset
from pyaten.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
           "persistent_workers")
_JOIN_SECONDS = 5.0  # how long workers get to exit at the end of an epoch (PyTorch's)
_ERROR_GRACE_SECONDS = 0.1  # after a timeout or a dead worker: the rest is not waited for

# The queues, event and processes of every iterator whose workers run, by id(iterator). An
# iterator caught in a reference cycle (an exception's traceback holds its frames) is freed
# by the garbage collector, which runs the queues' own finalizers (ending their feeder
# threads) before the iterator's `__del__` when they are garbage too: the None sent to
# the workers would never leave. Held here, they are not garbage until the shutdown is done.
_RUNNING: dict[int, tuple] = {}


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
        return _length(self._iterable, self.dataset, self._index_sampler, self.batch_size,
                       self.drop_last)

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if not self.persistent_workers:
            return _MultiProcessIter(self)
        iterator = self.__dict__.get("_iterator")
        if iterator is None or iterator._shut:  # first epoch, or the last one failed
            self._iterator = _MultiProcessIter(self)
        else:
            iterator._reset(self)
        return self._iterator

    def _shared_seed(self) -> int:
        """The base seed of an epoch's workers, drawn from `generator` (or the default)."""
        seed = aten.random_.default(aten.empty.memory_format([], dtype=int64),
                                    generator=self.generator)
        return int(seed.item())


def _length(iterable: bool, dataset: Any, index_sampler: Any, batch_size: int | None,
            drop_last: bool) -> int:
    """The number of batches an epoch gives (an iterable dataset's from its `__len__`)."""
    if not iterable:
        return len(index_sampler)
    length = len(dataset)
    if batch_size is not None:
        length = length // batch_size if drop_last else math.ceil(length / batch_size)
    return length


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
    """Batches fetched by worker processes and handed out in sampler order (the protocol is
    the Note at the top of _worker.py). With persistent workers the loader keeps this
    iterator and `_reset` starts each new epoch on the same workers."""

    def __init__(self, loader: DataLoader) -> None:
        self._index_sampler = loader._index_sampler
        self._length = functools.partial(_length, loader._iterable, loader.dataset,
                                         self._index_sampler, loader.batch_size,
                                         loader.drop_last)
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._indices = iter(self._index_sampler)
        count = loader.num_workers
        context = _context(loader.multiprocessing_context)
        base_seed = loader._shared_seed()
        self._done_event = context.Event()
        self._result_queue = context.Queue()
        self._index_queues: list[Any] = []
        self._workers: list[Any] = []
        self._active: list[bool] = []  # workers that may still answer this epoch
        self._shut = False
        self._epoch = 0
        _RUNNING[id(self)] = (self._done_event, self._result_queue, self._index_queues,
                              self._workers)
        direct_child = context.get_start_method() in {"fork", "spawn"}
        from_main_thread = threading.current_thread() is threading.main_thread()
        for worker_id in range(count):
            config = WorkerConfig(loader._iterable, loader.dataset, loader._auto_collation,
                                  loader.collate_fn, loader.drop_last, base_seed,
                                  loader.worker_init_fn, worker_id, count, os.getpid(),
                                  direct_child, from_main_thread)
            index_queue = context.Queue()
            worker = context.Process(target=worker_loop, daemon=True, args=(
                config, index_queue, self._result_queue, self._done_event))
            try:
                worker.start()  # spawn pickles the dataset here, and may fail
            except BaseException:
                self._shutdown(_ERROR_GRACE_SECONDS)  # the workers already started
                raise
            self._index_queues.append(index_queue)
            self._workers.append(worker)
            self._active.append(True)
        self._start_epoch()

    def _start_epoch(self) -> None:
        """Count on every worker again and send the first `prefetch_factor` tasks each."""
        self._active = [True] * len(self._workers)
        self._next_worker = itertools.cycle(range(len(self._workers)))
        self._sent = 0
        self._received = 0
        self._pending: dict[int, tuple] = {}  # task -> (worker,) or (worker, answer)
        for _ in range(self._prefetch):
            self._send_next()

    def _reset(self, loader: DataLoader) -> None:
        """A new epoch on the same (persistent) workers: answers still in flight from the
        last epoch are dropped until every worker has acknowledged the new one."""
        self._indices = iter(loader._index_sampler)
        self._epoch += 1
        marker = ResumeIteration(self._epoch)
        for index_queue in self._index_queues:
            index_queue.put(marker)
        self._active = [True] * len(self._workers)  # watch them all while they acknowledge
        waiting = len(self._workers)
        while waiting:
            number, _ = self._receive()
            waiting -= number == marker
        self._start_epoch()

    def __iter__(self) -> _MultiProcessIter:
        return self

    def __len__(self) -> int:
        return self._length()

    def _send_next(self) -> None:
        """Give the next index to the next worker still counted on (the index is dropped when
        none is left, as PyTorch does)."""
        try:
            index = next(self._indices)
        except StopIteration:
            return
        for _ in range(len(self._workers)):
            worker = next(self._next_worker)
            if self._active[worker]:
                break
        else:
            return
        self._index_queues[worker].put((self._sent, index))
        self._pending[self._sent] = (worker,)
        self._sent += 1

    def __next__(self) -> Any:
        while not self._shut:
            if not self._skip_to_live_task():
                if not self._persistent:
                    self._shutdown()
                break
            info = self._pending[self._received]
            if len(info) == 2:
                return self._hand_out(info[1])
            number, payload = self._receive()
            try:
                answer = pickle.loads(payload)
            except Exception:  # noqa: BLE001 - raised in its turn, like a worker's error
                answer = failure("in the main process, unpickling a DataLoader worker's batch")
            if isinstance(answer, IterableEnd):
                self._retire(answer.worker_id)
                self._send_next()
            elif number != self._received:
                self._pending[number] += (answer,)
            else:
                return self._hand_out(answer)
        raise StopIteration

    def _skip_to_live_task(self) -> bool:
        """Pass over the tasks of workers whose iterable ended (they answer none of them);
        False when no task is left."""
        while self._received < self._sent:
            info = self._pending[self._received]
            if len(info) == 2 or self._active[info[0]]:
                return True
            del self._pending[self._received]
            self._received += 1
        return False

    def _retire(self, worker: int) -> None:
        """Stop counting on a worker this epoch; a non-persistent one is also told to exit."""
        self._active[worker] = False
        if not self._persistent:
            self._index_queues[worker].put(None)

    def _hand_out(self, answer: Any) -> Any:
        del self._pending[self._received]
        self._received += 1
        self._send_next()
        if isinstance(answer, WorkerFailure):
            answer.reraise()  # the workers go on: a later `next` gives the next batch
        return answer

    def _receive(self) -> tuple[Any, Any]:
        """The next `(task, payload)` on the result queue. Waits on the queue and on the exit
        of every worker still counted on together, so that a worker's exit ends the wait at
        once; with `timeout`, the wait ends after exactly that long."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        reader = self._result_queue._reader  # the queue's end of its pipe: waitable
        while True:
            watched = [w.sentinel for w, on in zip(self._workers, self._active) if on]
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = connection.wait([reader, *watched], left)
            if reader in ready:
                return self._result_queue.get()
            if ready:
                self._fail_if_a_worker_exited()
            elif deadline is not None and time.monotonic() >= deadline:
                self._shutdown(_ERROR_GRACE_SECONDS)
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _fail_if_a_worker_exited(self) -> None:
        gone = [w for w, on in zip(self._workers, self._active) if on and not w.is_alive()]
        if not gone:
            return
        cause = _exit_detail(gone[0])
        self._shutdown(_ERROR_GRACE_SECONDS)
        pids = ", ".join(str(w.pid) for w in gone)
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from cause

    def _shutdown(self, grace: float = _JOIN_SECONDS) -> None:
        """PyTorch's order: set the done event (workers drop unsent work), send None to every
        worker not yet told, give them `grace` seconds in all to exit, then end the rest."""
        if self._shut:
            return
        self._shut = True
        try:
            self._done_event.set()
            for index_queue, on in zip(self._index_queues, self._active):
                if on or self._persistent:
                    index_queue.put(None)
            self._active = [False] * len(self._workers)
            deadline = time.monotonic() + grace
            for worker in self._workers:
                worker.join(timeout=max(0.0, deadline - time.monotonic()))
        finally:
            _end_workers(self._workers)
            for index_queue in self._index_queues:
                index_queue.cancel_join_thread()
                index_queue.close()
            _RUNNING.pop(id(self), None)

    def __del__(self) -> None:
        # at interpreter exit multiprocessing itself ends the (daemonic) workers
        if not getattr(self, "_shut", True) and not sys.is_finalizing():
            self._shutdown()


def _end_workers(workers: list[Any]) -> None:
    """Terminate the workers still running, then kill those that ignore SIGTERM."""
    stubborn = [w for w in workers if w.is_alive()]
    for worker in stubborn:
        worker.terminate()
    for worker in stubborn:
        worker.join(timeout=_ERROR_GRACE_SECONDS)
        if worker.is_alive():
            worker.kill()
            worker.join()


def _exit_detail(worker: Any) -> RuntimeError | None:
    """How a worker ended, as PyTorch's cause of "exited unexpectedly" (None: exit code 0)."""
    code = worker.exitcode
    if code is None or code == 0:
        return None
    if code < 0:
        return RuntimeError(f"DataLoader worker (pid {worker.pid}) is killed by signal: "
                            f"{signal.strsignal(-code)}. ")
    return RuntimeError(
        f"DataLoader worker (pid {worker.pid}) exited unexpectedly with exit code {code}. "
        "Details are lost due to multiprocessing. Rerunning with num_workers=0 may give "
        "better error trace.")


def _context(choice: Any) -> Any:
    """The multiprocessing context: the one given (or named), else fork where available."""
    if choice is None:
        methods = multiprocessing.get_all_start_methods()
        return multiprocessing.get_context("fork" if "fork" in methods else None)
    if isinstance(choice, str):
        return multiprocessing.get_context(choice)
    return choice
