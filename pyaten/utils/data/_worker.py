"""The worker processes of a DataLoader with `num_workers > 0`.

Note: the worker protocol. Each worker owns an index queue; the main process sends it
`(task, index)` pairs round-robin and every worker answers on one shared result queue with
`(task, pickled answer)`; the main process puts the answers back in task order. A worker's
exception travels back as a `WorkerFailure` and is raised in the main process. The protocol
is PyTorch's, and each rule below closes a way to hang:

- An iterable dataset's end is sent once, as `IterableEnd(worker_id)`; afterwards the worker
  answers nothing until the main process sends None (its last message) or, with persistent
  workers, `ResumeIteration` (a new epoch: the worker makes a fresh iterator and
  acknowledges on the result queue, after every answer of the old epoch).
- A worker leaves its loop on None, on the main process's death, or by failing outright
  (`sys.exit`, a signal). Leaving normally, it flushes its queued answers before the process
  ends: a process that ended while its queue's feeder thread held the result queue's write
  lock would leave the other workers unable to answer. Only when the main process is shutting
  down (the done event is set) or gone does the worker drop unsent answers.
- The main process watches the result queue and the exit of every worker it still counts on
  at once, so an exit (clean or not) is noticed when it happens, and raised as
  "DataLoader worker (pid(s) ...) exited unexpectedly".
- Workers end with the main process: on Linux the kernel sends SIGKILL when the parent dies
  (prctl PR_SET_PDEATHSIG, set through ctypes); everywhere a watchdog sees the parent change
  between tasks. The signal is tied to the thread that started the worker, so a loader
  iterated from another thread relies on the watchdog alone (its worker would otherwise die
  with that thread).
"""

from __future__ import annotations

import ctypes
import os
import pickle
import queue
import random
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyaten.core import manual_seed
from pyaten.utils.data._fetch import make_fetcher

__all__ = ["WorkerInfo", "get_worker_info"]

# How often an idle worker checks that its parent is alive (PyTorch's MP_STATUS_CHECK_INTERVAL).
WATCHDOG_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


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
    """A worker's iterable dataset is exhausted (sent once per epoch)."""

    worker_id: int


@dataclass
class ResumeIteration:
    """A persistent worker's next epoch begins; echoed back as its acknowledgement."""

    epoch: int


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
    kind = sys.exc_info()[0] or RuntimeError
    text = f"Caught {kind.__name__} {where}.\nOriginal {traceback.format_exc()}"
    try:
        pickle.dumps(kind)
    except Exception:  # noqa: BLE001 - a local exception class travels as RuntimeError
        kind = RuntimeError
    return WorkerFailure(kind, text)


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
    main_pid: int  # the process that reads the answers
    direct_child: bool  # started by the main process itself (fork, spawn), not a server
    from_main_thread: bool  # started by the main process's main thread


class ParentWatchdog:
    """Alive while the process that started this worker is: an orphan is given a new parent
    (PyTorch's ManagerWatchdog)."""

    def __init__(self) -> None:
        self.parent = os.getppid()
        self.alive = True

    def is_alive(self) -> bool:
        if self.alive:
            self.alive = os.getppid() == self.parent
        return self.alive


def die_with_parent(config: WorkerConfig) -> bool:
    """Ask the kernel to kill this worker when its parent dies (see the Note: the signal is
    skipped for a worker started by another thread). False if the main process is already
    gone."""
    if config.direct_child and os.getppid() != config.main_pid:
        return False
    if sys.platform.startswith("linux") and (config.from_main_thread or not config.direct_child):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no libc to load: the watchdog still works
            pass
        # the parent may have died before the signal was asked for
        if config.direct_child and os.getppid() != config.main_pid:
            return False
    return True


def worker_loop(config: WorkerConfig, index_queue: Any, result_queue: Any,
                done_event: Any) -> None:
    """The body of a worker process: seed, run `worker_init_fn`, then answer tasks until the
    main process sends None, shuts down or dies (see the Note: the worker protocol)."""
    global _worker_info
    if not die_with_parent(config):
        return
    seed = config.base_seed + config.worker_id
    random.seed(seed)
    manual_seed(seed)
    _worker_info = WorkerInfo(config.worker_id, config.num_workers, seed, config.dataset)
    watchdog = ParentWatchdog()
    try:
        _answer_tasks(config, index_queue, result_queue, done_event, watchdog)
    except KeyboardInterrupt:  # the main process has it too, and reports it
        pass
    if done_event.is_set() or not watchdog.is_alive():
        result_queue.cancel_join_thread()  # nobody will read these answers
        result_queue.close()


def _answer_tasks(config: WorkerConfig, index_queue: Any, result_queue: Any, done_event: Any,
                  watchdog: ParentWatchdog) -> None:
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
    while watchdog.is_alive():
        try:
            task = index_queue.get(timeout=WATCHDOG_SECONDS)
        except queue.Empty:
            continue
        if task is None:
            return
        if isinstance(task, ResumeIteration):
            ended = False
            if broken is None:
                fetcher = make_fetcher(config.iterable, config.dataset, config.auto_collation,
                                       config.collate_fn, config.drop_last)
            result_queue.put((task, None))
            continue
        if ended or done_event.is_set():
            continue  # nothing more to give this epoch; wait for None or a new epoch
        number, index = task
        if broken is not None:
            answer = broken
        else:
            try:
                answer = fetcher.fetch(index)
            except StopIteration:
                ended = config.iterable
                answer = IterableEnd(config.worker_id) if ended else failure(where)
            except Exception:  # noqa: BLE001 - raised again in the main process
                answer = failure(where)
        result_queue.put((number, _pickled(answer, where)))
        del answer, task


def _pickled(answer: Any, where: str) -> bytes:
    """The answer as bytes, pickled here so that an unpicklable batch is reported, not lost
    in the queue's feeder thread."""
    try:
        return pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - reported to the main process instead
        return pickle.dumps(failure(where), protocol=pickle.HIGHEST_PROTOCOL)
