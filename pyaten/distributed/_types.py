"""The value types of `pyaten.distributed`: `ReduceOp`, `Work`, its `Future`, `GroupMember`.

A `Work` is the handle of one collective (see "Note: the worker thread" in `_mpi.py`). `wait`
gives up after the process group's timeout, so a peer that never joins the collective turns
into a `RuntimeError` instead of a hang.
"""

from __future__ import annotations

import enum
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ReduceOp", "Work", "Future", "GroupMember", "group"]


class _RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9

    def __str__(self) -> str:
        return f"RedOpType.{self.name}"

    __repr__ = enum.IntEnum.__repr__


_RedOpType.__name__ = _RedOpType.__qualname__ = "RedOpType"


class ReduceOp:
    """The reductions of `all_reduce` and friends: `ReduceOp.SUM`, ... `ReduceOp.BXOR`."""

    RedOpType = _RedOpType
    SUM = _RedOpType.SUM
    AVG = _RedOpType.AVG
    PRODUCT = _RedOpType.PRODUCT
    MIN = _RedOpType.MIN
    MAX = _RedOpType.MAX
    BAND = _RedOpType.BAND
    BOR = _RedOpType.BOR
    BXOR = _RedOpType.BXOR
    PREMUL_SUM = _RedOpType.PREMUL_SUM
    UNUSED = _RedOpType.UNUSED

    def __init__(self, op: _RedOpType | ReduceOp = _RedOpType.SUM) -> None:
        self.op = as_red_op(op)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ReduceOp, _RedOpType)):
            return self.op == as_red_op(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.op)

    def __repr__(self) -> str:
        return f"<ReduceOp.{self.op.name}>"


def as_red_op(op: Any) -> _RedOpType:
    """The `RedOpType` of a `ReduceOp`, a `RedOpType` or its name (functional collectives)."""
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, _RedOpType):
        return op
    if isinstance(op, str) and op.upper() in _RedOpType.__members__:
        return _RedOpType[op.upper()]
    raise TypeError(f"op: expected a ReduceOp, got {type(op).__name__} ({op!r})")


class Future:
    """The result of a `Work` (what `Work.get_future()` and DDP communication hooks return)."""

    def __init__(self, wait: Callable[[], Any] | None = None) -> None:
        self._wait = wait
        self._done = wait is None
        self._value: Any = None

    def set_result(self, value: Any) -> None:
        self._value = value
        self._done = True
        self._wait = None

    def done(self) -> bool:
        return self._done

    def wait(self) -> Any:
        if not self._done:
            wait, self._wait = self._wait, None
            self.set_result(wait())
        return self._value

    def value(self) -> Any:
        return self.wait()

    def then(self, callback: Callable[[Future], Any]) -> Future:
        """A future of `callback(self)`, run when the result is first asked for."""
        return Future(lambda: callback(_done_future(self.wait())))


def _done_future(value: Any) -> Future:
    future = Future()
    future.set_result(value)
    return future


class Work:
    """A collective in flight: `wait()` blocks until it is done, `is_completed()` asks.

    It is done when the process group's worker thread has run it (`done`, an Event), or when
    its MPI requests complete (point-to-point calls, polled here)."""

    def __init__(
        self,
        requests: Sequence[Any] = (),
        finish: Callable[[], None] | None = None,
        *,
        result: Sequence[Any] = (),
        timeout: float = 1800.0,
        name: str = "collective",
        source_rank: Callable[[], int] | None = None,
        done: threading.Event | None = None,
    ) -> None:
        self._requests = list(requests)
        self._finish = finish
        self._result = list(result)
        self._timeout = timeout
        self._name = name
        self._source_rank = source_rank
        self._done = done
        self._error: BaseException | None = None
        self._completed = not self._requests and finish is None and done is None

    def _finished_by_worker(self, error: BaseException | None) -> None:
        self._error = error
        self._done.set()

    def is_completed(self) -> bool:
        if self._completed:
            return True
        if self._done is not None:
            return self._done.is_set()
        if all(r.Test() for r in self._requests):
            self._complete()
        return self._completed

    def is_success(self) -> bool:
        return self.is_completed() and self._error is None

    def exception(self) -> BaseException | None:
        return self._error

    def wait(self, timeout: Any = None) -> bool:
        """Block until done; a RuntimeError after `timeout` (the group's by default)."""
        if self._completed:
            return True
        seconds = self._timeout if timeout is None else _seconds(timeout)
        if self._done is not None:
            if not self._done.wait(seconds):
                raise self._timed_out(seconds)
            if self._error is not None:
                raise self._error
        start = time.monotonic()
        spins = 0
        for request in self._requests:
            while not request.Test():  # each Test also moves MPI's non-blocking algorithm on
                spins += 1
                if spins % 64:
                    os.sched_yield()  # let a rank sharing this core run, as MPI's own wait does
                    continue
                waited = time.monotonic() - start
                if waited > seconds:
                    raise self._timed_out(seconds)
                if waited > 1.0:
                    time.sleep(0.001)  # a long wait: stop spinning
        self._complete()
        return True

    def _timed_out(self, seconds: float) -> RuntimeError:
        return RuntimeError(
            f"pyaten.distributed: {self._name} timed out after {seconds:g} s waiting for the "
            "other ranks (a rank failed, exited or did not call the same collective)"
        )

    def _complete(self) -> None:
        self._requests.clear()
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()
        self._completed = True

    def result(self) -> list[Any]:
        self.wait()
        return self._result

    def get_future(self) -> Future:
        return Future(self.result)

    def source_rank(self) -> int:
        if self._source_rank is None:
            raise RuntimeError("source_rank(): only a recv from any source has one")
        self.wait()
        return self._source_rank()


def _seconds(timeout: Any) -> float:
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)


class _NonMember:
    def __repr__(self) -> str:
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """`GroupMember.WORLD` (the default group once initialised) and `NON_GROUP_MEMBER`."""

    WORLD: Any = None
    NON_GROUP_MEMBER = _NonMember()


class group:  # noqa: N801  (PyTorch's name)
    """`group.WORLD`: the default process group (None before `init_process_group`)."""

    WORLD: Any = None
