"""The `c10d` operators, declared as PyTorch declares them (torch/csrc/distributed/c10d/Ops.cpp),
with CPU kernels on the process group's MPI communicator and Meta kernels that move no data.

The collectives of `pyaten.distributed` call these, so every collective goes through the
dispatcher: `pyaten dispatch c10d::allreduce_` shows the table, `pyaten.explain()` the call.
PrivateUse1 (as in PyTorch's table) and any other plug-in key (`register_device_kernels`) run
the CPU kernels on host copies of the device's tensors, copied back when the Work is done.
Registering needs no MPI; running a kernel does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pyaten.distributed._types import Work, as_red_op
from pyaten.library import Library

__all__ = ["C10D_SCHEMAS", "register_device_kernels"]

_PG = "__torch__.torch.classes.c10d.ProcessGroup"
_OP = "__torch__.torch.classes.c10d.ReduceOp"
_WORK = "__torch__.torch.classes.c10d.Work"

# name -> schema text after the name, as PyTorch 2.13 prints them.
C10D_SCHEMAS: dict[str, str] = {
    "allreduce_": f"(Tensor[] tensors, {_PG} process_group, {_OP} reduce_op, Tensor? "
    f"sparse_indices, bool async_op=True, int timeout=-1) -> (Tensor[], {_WORK})",
    "broadcast_": f"(Tensor[] tensors, {_PG} process_group, int root_rank, int root_tensor, "
    f"bool async_op=True, int timeout=-1) -> (Tensor[], {_WORK})",
    "allgather_": f"(Tensor[][] output_tensors, Tensor[] input_tensors, {_PG} process_group, "
    f"bool async_op=True, int timeout=-1) -> (Tensor[][], {_WORK})",
    "_allgather_base_": f"(Tensor output_tensor, Tensor input_tensor, {_PG} process_group, "
    f"bool async_op=True, int timeout=-1) -> (Tensor, {_WORK})",
    "reduce_scatter_": f"(Tensor[] output_tensors, Tensor[][] input_tensors, {_PG} "
    f"process_group, {_OP} reduce_op, bool async_op=True, int timeout=-1) -> (Tensor[], {_WORK})",
    "_reduce_scatter_base_": f"(Tensor output_tensor, Tensor input_tensor, {_PG} process_group, "
    f"{_OP} reduce_op, bool async_op=True, int timeout=-1) -> (Tensor, {_WORK})",
    "alltoall_": f"(Tensor[] output_tensors, Tensor[] input_tensors, {_PG} process_group, "
    f"bool async_op=True, int timeout=-1) -> (Tensor[], {_WORK})",
    "alltoall_base_": f"(Tensor output, Tensor input, {_PG} process_group, int[] "
    f"output_split_sizes, int[] input_split_sizes, bool async_op=True, int timeout=-1) -> {_WORK}",
    "reduce_": f"(Tensor[] tensors, {_PG} process_group, {_OP} reduce_op, int root_rank, "
    f"int root_tensor, bool async_op=True, int timeout=-1) -> {_WORK}",
    "gather_": f"(Tensor[][] output_tensors, Tensor[] input_tensors, {_PG} process_group, "
    f"int root_rank, bool async_op=True, int timeout=-1) -> {_WORK}",
    "scatter_": f"(Tensor[] output_tensors, Tensor[][] input_tensors, {_PG} process_group, "
    f"int root_rank, bool async_op=True, int timeout=-1) -> (Tensor[], {_WORK})",
    "barrier": f"(Tensor tensor, {_PG} process_group, int[] device_ids, bool async_op=True, "
    f"int timeout=-1) -> {_WORK}",
    "monitored_barrier_": f"(Tensor tensor, {_PG} process_group, int[] device_ids, int timeout, "
    "bool wait_all_ranks) -> ()",
    "send": f"(Tensor[] tensors, {_PG} process_group, int dst, int tag) -> {_WORK}",
    "recv_": f"(Tensor[] tensors, {_PG} process_group, int src, int tag) -> {_WORK}",
    "recv_any_source_": f"(Tensor[] tensors, {_PG} process_group, int tag) -> {_WORK}",
}


def _np(t: Any) -> np.ndarray:
    return t.numpy(force=True)  # a view of host memory (Note: how a tensor reaches MPI)


def _sizes(t: Any) -> str:
    return "(" + ", ".join(str(n) for n in t.shape) + ")"  # as PyTorch's errors print sizes


def _shape(t: Any) -> tuple:
    return (tuple(t.shape), str(t.dtype))


# -- CPU kernels ---------------------------------------------------------------------------


def allreduce_(tensors, process_group, reduce_op, sparse_indices=None, async_op=True,
               timeout=-1):  # fmt: skip
    op = as_red_op(reduce_op)
    process_group.check_same("all_reduce", ([_shape(t) for t in tensors], op.name))
    return tensors, _holding(process_group.allreduce([_np(t) for t in tensors], op), tensors)


def broadcast_(tensors, process_group, root_rank, root_tensor=0, async_op=True, timeout=-1):
    process_group.check_same("broadcast", ([_shape(t) for t in tensors], root_rank))
    works = [process_group.broadcast(_np(t), root_rank) for t in tensors]
    return tensors, _holding(_joined(works), tensors)


def _settle(process_group, fn: str, what: object, problem: str | None) -> None:
    """Check `what` across ranks; raise on every rank when any found a `problem`."""
    process_group.check_same(fn, what, problem)
    if problem is not None:
        process_group.settle(fn)


def allgather_(output_tensors, input_tensors, process_group, async_op=True, timeout=-1):
    outputs = output_tensors[0]
    rank = process_group.rank()
    problem = None
    if _shape(input_tensors[0]) != _shape(outputs[rank]):
        expected, got = _sizes(outputs[rank]), _sizes(input_tensors[0])
        problem = f"invalid tensor size at index {rank} (expected {expected}, got {got})"
    _settle(process_group, "all_gather", [_shape(t) for t in outputs], problem)
    work = process_group.allgather([_np(t) for t in outputs], _np(input_tensors[0]))
    return output_tensors, work


def _allgather_base_(output_tensor, input_tensor, process_group, async_op=True, timeout=-1):
    size = process_group.size()
    out = _np(output_tensor)
    problem = None
    if out.size != input_tensor.numel() * size or output_tensor.dtype != input_tensor.dtype:
        problem = ("output tensor size must be equal to world_size times input tensor size, "
                   "and of the input's dtype")  # fmt: skip
    _settle(process_group, "all_gather_into_tensor", _shape(input_tensor), problem)
    chunks = list(out.reshape(size, -1)) if out.flags.c_contiguous else None
    if chunks is None:
        flat = np.empty((size, input_tensor.numel()), out.dtype)
        work = process_group.allgather(list(flat), _np(input_tensor).reshape(-1))
        return output_tensor, _then(work, lambda: out.__setitem__(..., flat.reshape(out.shape)))
    return output_tensor, process_group.allgather(chunks, _np(input_tensor).reshape(-1))


def reduce_scatter_(output_tensors, input_tensors, process_group, reduce_op, async_op=True,
                    timeout=-1):  # fmt: skip
    op = as_red_op(reduce_op)
    inputs = input_tensors[0]
    problem = None
    if _shape(output_tensors[0]) != _shape(inputs[process_group.rank()]):
        problem = "the output's shape and dtype must be those of input_list[rank]"
    _settle(process_group, "reduce_scatter", ([_shape(t) for t in inputs], op.name), problem)
    work = process_group.reduce_scatter(_np(output_tensors[0]), [_np(t) for t in inputs], op)
    return output_tensors, work


def _reduce_scatter_base_(output_tensor, input_tensor, process_group, reduce_op, async_op=True,
                          timeout=-1):  # fmt: skip
    op = as_red_op(reduce_op)
    size = process_group.size()
    problem = None
    if input_tensor.numel() != output_tensor.numel() * size:
        problem = "input tensor size must be equal to world_size times output tensor size"
    _settle(process_group, "reduce_scatter_tensor", (_shape(input_tensor), op.name), problem)
    chunks = list(np.ascontiguousarray(_np(input_tensor)).reshape(size, -1))
    out = _np(output_tensor)
    return output_tensor, process_group.reduce_scatter(out, [c.reshape(out.shape) for c in
                                                             chunks], op)  # fmt: skip


def alltoall_(output_tensors, input_tensors, process_group, async_op=True, timeout=-1):
    # Rank r sends inputs[s] to rank s: every rank sees every pair's sizes, so all decide alike.
    sent = [t.numel() * t.element_size() for t in input_tensors]
    received = [t.numel() * t.element_size() for t in output_tensors]
    everyone = process_group._gather_objects("all_to_all", (sent, received))
    world = process_group.size()
    for r in range(world):
        for s in range(world):
            if everyone[r][0][s] != everyone[s][1][r]:
                raise RuntimeError(
                    f"all_to_all: rank {r} sends {everyone[r][0][s]} bytes to rank {s}, which "
                    f"expects {everyone[s][1][r]}"
                )
    work = process_group.alltoall([_np(t) for t in output_tensors], [_np(t) for t in
                                                                     input_tensors])  # fmt: skip
    return output_tensors, work


def alltoall_base_(output, input, process_group, output_split_sizes, input_split_sizes,
                   async_op=True, timeout=-1):  # fmt: skip
    size = process_group.size()
    try:
        in_splits = list(input_split_sizes) or _even(_rows(input), size, "input")
        out_splits = list(output_split_sizes) or _even(_rows(output), size, "output")
        inputs = _split_rows(_np(input), in_splits)
        outputs = _split_rows(_np(output), out_splits)
        problem = None
    except ValueError as error:
        problem = str(error)
    _settle(process_group, "all_to_all_single", None, problem)
    return alltoall_(outputs, inputs, process_group)[1]


def _rows(t: Any) -> int:
    return t.shape[0] if t.dim() else 1


def _even(rows: int, size: int, which: str) -> list[int]:
    if rows % size:
        raise ValueError(f"{which} dim 0 ({rows}) is not divisible by the world size {size}")
    return [rows // size] * size


class _Rows:
    """A NumPy block standing for a tensor in `alltoall_` (which reads numel, element_size)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def numel(self) -> int:
        return self.array.size

    def element_size(self) -> int:
        return self.array.itemsize

    def numpy(self, force: bool = False) -> np.ndarray:
        return self.array


def _split_rows(array: np.ndarray, splits: Sequence[int]) -> list[_Rows]:
    rows = array.shape[0] if array.ndim else 1
    if sum(splits) != rows or len(splits) == 0 or min(splits) < 0:
        raise ValueError(f"split sizes {list(splits)} do not add up to dim 0 ({rows})")
    bounds = np.cumsum([0, *splits])
    return [_Rows(array[bounds[i]:bounds[i + 1]]) for i in range(len(splits))]


def reduce_(tensors, process_group, reduce_op, root_rank, root_tensor=0, async_op=True,
            timeout=-1):  # fmt: skip
    op = as_red_op(reduce_op)
    process_group.check_same("reduce", (_shape(tensors[0]), op.name, root_rank))
    return process_group.reduce(_np(tensors[0]), root_rank, op)


def gather_(output_tensors, input_tensors, process_group, root_rank, async_op=True, timeout=-1):
    outputs = output_tensors[0] if output_tensors else []
    is_root = process_group.rank() == root_rank
    problem = None
    if is_root and (len(outputs) != process_group.size() or
                    any(_shape(t) != _shape(input_tensors[0]) for t in outputs)):  # fmt: skip
        problem = "gather_list needs one tensor per rank, each of the input's size and dtype"
    _settle(process_group, "gather", (_shape(input_tensors[0]), root_rank), problem)
    if is_root:
        return process_group.gather([_np(t) for t in outputs], _np(input_tensors[0]), root_rank)
    return process_group.gather(None, _np(input_tensors[0]), root_rank)


def scatter_(output_tensors, input_tensors, process_group, root_rank, async_op=True, timeout=-1):
    is_root = process_group.rank() == root_rank
    listed = (input_tensors[0] if input_tensors else []) if is_root else []
    problem = None
    if is_root and (len(listed) != process_group.size() or
                    any(_shape(t) != _shape(output_tensors[0]) for t in listed)):  # fmt: skip
        problem = "scatter_list needs one tensor per rank, each of the output's size and dtype"
    _settle(process_group, "scatter", (_shape(output_tensors[0]), root_rank), problem)
    inputs = [_np(t) for t in listed] if is_root else None
    work = process_group.scatter(_np(output_tensors[0]), inputs, root_rank)
    return output_tensors, work


def barrier(tensor, process_group, device_ids=(), async_op=True, timeout=-1):
    return process_group.barrier()


def monitored_barrier_(tensor, process_group, device_ids, timeout, wait_all_ranks):
    process_group.monitored_barrier(timeout / 1000.0, wait_all_ranks)


def send(tensors, process_group, dst, tag):
    return process_group.send(_np(tensors[0]), dst, tag)


def recv_(tensors, process_group, src, tag):
    return process_group.recv(_np(tensors[0]), src, tag)


def recv_any_source_(tensors, process_group, tag):
    return process_group.recv(_np(tensors[0]), None, tag)


def _holding(work: Work, tensors: Sequence[Any]) -> Work:
    work._result = list(tensors)  # what `work.result()` and its future give
    return work


def _joined(works: Sequence[Work]) -> Work:
    if len(works) == 1:
        return works[0]
    return Work((), lambda: [w.wait() for w in works])


def _then(work: Work, after: Callable[[], None]) -> Work:
    return Work((), lambda: (work.wait(), after()))


# -- Meta kernels: shapes only, a completed Work --------------------------------------------


def _meta(name: str) -> Callable[..., Any]:
    returns_tensors = C10D_SCHEMAS[name].split("->")[1].strip().startswith("(Tensor")

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if name == "monitored_barrier_":
            return None
        if returns_tensors:
            return args[0], Work()
        return Work()

    kernel.__name__ = kernel.__qualname__ = f"{name}_meta"
    return kernel


_CPU_KERNELS: dict[str, Callable[..., Any]] = {name: globals()[name] for name in C10D_SCHEMAS}

# -- plug-in devices: staged through host memory ---------------------------------------------


def _staged(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """`kernel` on host copies of a device's tensors; the copies go back when the Work is done."""

    def run(*args: Any) -> Any:
        pairs: list[tuple[Any, Any]] = []

        def to_host(value: Any) -> Any:
            if isinstance(value, (list, tuple)):
                return type(value)(to_host(v) for v in value)
            if hasattr(value, "_keyset") and value.device.type not in ("cpu", "meta"):
                host = value.cpu()
                pairs.append((value, host))
                return host
            return value

        result = kernel(*[to_host(a) for a in args])
        work = result[1] if isinstance(result, tuple) else result

        def back() -> None:
            if work is not None:
                work.wait()
            for device_tensor, host in pairs:
                device_tensor.copy_(host)

        staged = Work((), back)
        return (args[0], staged) if isinstance(result, tuple) else staged

    run.__name__ = run.__qualname__ = f"{kernel.__name__}_staged"
    return run


# CPU, and PrivateUse1 as PyTorch registers them; Meta for shapes.
_LIBRARY = Library("c10d", "FRAGMENT")
for _name, _rest in C10D_SCHEMAS.items():
    _LIBRARY.define(_name + _rest)
    _LIBRARY.impl(_name, _CPU_KERNELS[_name], "CPU")
    _LIBRARY.impl(_name, _staged(_CPU_KERNELS[_name]), "PrivateUse1")
    _LIBRARY.impl(_name, _meta(_name), "Meta")
_DEVICE_LIBRARIES: dict[str, Library] = {}


def register_device_kernels(dispatch_key: str) -> None:
    """Serve the c10d operators on another plug-in device key, staged through host memory."""
    if dispatch_key in _DEVICE_LIBRARIES:
        return
    lib = _DEVICE_LIBRARIES[dispatch_key] = Library("c10d", "IMPL", dispatch_key)
    for name, kernel in _CPU_KERNELS.items():
        lib.impl(name, _staged(kernel), dispatch_key)
