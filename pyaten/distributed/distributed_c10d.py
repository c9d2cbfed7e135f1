"""`torch.distributed`'s process-group API on MPI: init, groups, and the collectives.

Each collective checks its arguments where they enter (PyTorch's errors), then calls its
`c10d` operator through the dispatcher (`pyaten/distributed/_c10d_ops.py`), which returns the
tensors and a `Work`. `async_op=True` returns that Work; otherwise it is waited for here.

Note: ranks come from MPI. The ranks are the processes `mpirun` started (the launcher
`pyaten.distributed.run` is a front end to it); `init_method`, `MASTER_ADDR`/`MASTER_PORT`
and a `store` are accepted and not needed, and a `rank`/`world_size` that disagrees with MPI's
is an error rather than a silent regrouping. Global ranks index `COMM_WORLD`; a group made by
`new_group` has its own communicator and maps global ranks to its own.
"""

from __future__ import annotations

import datetime
import os
import pickle
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from pyaten.distributed._mpi import ProcessGroup, load_mpi, mpi_available
from pyaten.distributed._types import GroupMember, ReduceOp, Work, as_red_op, group
from pyaten.distributed._types import group as _group_namespace  # `group` is also a parameter

__all__ = [
    "Backend", "init_process_group", "is_available", "is_initialized", "is_mpi_available",
    "is_gloo_available", "is_nccl_available", "is_torchelastic_launched", "get_rank",
    "get_world_size", "get_backend", "destroy_process_group", "new_group", "get_group_rank",
    "get_global_rank", "get_process_group_ranks", "all_reduce", "broadcast", "all_gather",
    "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "reduce", "gather", "scatter", "send", "recv", "isend", "irecv",
    "barrier", "monitored_barrier", "broadcast_object_list", "all_gather_object",
    "gather_object", "scatter_object_list",
]  # fmt: skip

_NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call "
    "init_process_group."
)
default_pg_timeout = datetime.timedelta(minutes=30)


class Backend(str):
    """A backend name: "mpi", or "gloo" (the CPU backend name, served by MPI here)."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    def __new__(cls, name: str) -> Backend:
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        value = name.lower()
        if ":" in value:  # "cpu:gloo,cuda:nccl": the CPU entry serves here
            entries = dict(e.split(":", 1) for e in value.split(",") if ":" in e)
            value = entries.get("cpu", value)
        return str.__new__(cls, value)


class _World:
    """The default group and every group made since `init_process_group`."""

    default: ProcessGroup | None = None
    groups: dict[ProcessGroup, list[int]] = {}  # group -> its global ranks
    names: dict[str, ProcessGroup] = {}
    excepthook: Any = None


def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    return mpi_available()


def is_gloo_available() -> bool:
    return mpi_available()  # "gloo" is served by MPI


def is_nccl_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    return _World.default is not None


def _seconds(timeout: Any) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(
            f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}"
        )
    return timeout.total_seconds()


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Join the ranks `mpirun` started into the default group (Note: ranks come from MPI)."""
    if _World.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = Backend(backend if backend is not None else "gloo")
    if name not in ("gloo", "mpi", "nccl", "ucc", "xccl"):
        raise AssertionError(f"Unknown backend type {backend}")
    if name in ("nccl", "ucc", "xccl"):
        raise RuntimeError(f"Distributed package doesn't have {name.upper()} built in")
    if store is not None and init_method is not None:
        raise AssertionError("Cannot specify both init_method and store.")
    seconds = _seconds(timeout)
    mpi = load_mpi()
    world = mpi.COMM_WORLD
    for what, given, actual in (
        ("world_size", world_size if world_size != -1 else os.environ.get("WORLD_SIZE"),
         world.Get_size()),
        ("rank", rank if rank != -1 else os.environ.get("RANK"), world.Get_rank()),
    ):  # fmt: skip
        if given is not None and int(given) != actual:
            raise ValueError(
                f"init_process_group: {what}={given} but MPI started this process as {what} "
                f"{actual}; start the ranks with `pyaten run --nproc-per-node N` or "
                "`mpirun -n N` (docs/distributed.md)"
            )
    pg = ProcessGroup(world, str(name), seconds, group_name or "0")
    _World.default = pg
    _World.groups = {pg: list(range(pg.size()))}
    _World.names = {pg.group_name: pg}
    GroupMember.WORLD = group.WORLD = pg
    if pg.size() > 1:
        _abort_on_uncaught_exception(mpi)


def _abort_on_uncaught_exception(mpi: Any) -> None:
    """A rank that dies of an exception takes the job down, as torchrun does (no hang)."""
    previous = sys.excepthook

    def hook(kind: type, value: BaseException, tb: Any) -> None:
        previous(kind, value, tb)
        sys.stderr.flush()
        mpi.COMM_WORLD.Abort(1)

    _World.excepthook = previous
    sys.excepthook = hook


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    if _World.default is None:
        raise AssertionError("Process group cannot be None")
    if group is None or group is GroupMember.WORLD:
        for pg in list(_World.groups):
            pg.free()
        _World.default = None
        _World.groups = {}
        _World.names = {}
        GroupMember.WORLD = _group_namespace.WORLD = None
        if _World.excepthook is not None:
            sys.excepthook, _World.excepthook = _World.excepthook, None
        return
    if group in _World.groups:
        group.free()
        del _World.groups[group]
        _World.names.pop(group.group_name, None)


def _default() -> ProcessGroup:
    if _World.default is None:
        raise ValueError(_NOT_INITIALIZED)
    return _World.default


def _resolve(group_: Any) -> ProcessGroup | None:
    """The group to run on; None when this rank is not a member of `group_`."""
    default = _default()
    if group_ is None or group_ is GroupMember.WORLD:
        return default
    if group_ is GroupMember.NON_GROUP_MEMBER:
        return None
    if isinstance(group_, str):
        if group_ not in _World.names:
            raise ValueError(f"Group {group_} is not registered, please create group first")
        return _World.names[group_]
    if not isinstance(group_, ProcessGroup) or group_ not in _World.groups:
        raise ValueError(f"Invalid process group specified: {group_!r}")
    return group_


def new_group(ranks: Sequence[int] | None = None, timeout: datetime.timedelta | None = None,
              backend: str | None = None, pg_options: Any = None,
              use_local_synchronization: bool = False, group_desc: str | None = None,
              device_id: Any = None) -> Any:  # fmt: skip
    """A group of `ranks` (all ranks by default); every rank must call it, as in PyTorch."""
    default = _default()
    world_size = default.size()
    members = sorted(range(world_size) if ranks is None else ranks)
    for r in members:
        if not 0 <= r < world_size:
            raise ValueError(
                f"new_group: rank {r} is out of range for a world of {world_size} ranks"
            )
    if len(set(members)) != len(members):
        raise ValueError(f"new_group: ranks {list(ranks)} has duplicates")
    mpi = load_mpi()
    me = default.rank()
    color = 0 if me in members else mpi.UNDEFINED
    comm = default.comm.Split(color, members.index(me) if me in members else 0)
    if comm == mpi.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    seconds = default.timeout if timeout is None else _seconds(timeout)
    name = str(len(_World.names))
    pg = ProcessGroup(comm, str(Backend(backend)) if backend else default.name(), seconds, name)
    _World.groups[pg] = members
    _World.names[name] = pg
    return pg


def get_rank(group: Any = None) -> int:
    pg = _resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: Any = None) -> int:
    pg = _resolve(group)
    return -1 if pg is None else pg.size()


def get_backend(group: Any = None) -> str:
    pg = _resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.name()


def get_process_group_ranks(group: Any) -> list[int]:
    pg = _resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return list(_World.groups[pg])


def get_group_rank(group: Any, global_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def get_global_rank(group: Any, group_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


# -- argument checks -------------------------------------------------------------------------


def _check_tensor(fn: str, tensor: Any, name: str) -> None:
    from pyaten.core import Tensor

    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
            f"             but got {type(tensor)} instead."
        )


def _check_tensor_list(fn: str, tensors: Any, name: str) -> None:
    from pyaten.core import Tensor

    if not isinstance(tensors, (list, tuple)) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(
            f"Invalid function argument. Expected parameter `{name}` of type "
            "List[torch.Tensor]\n             but got "
            f"{type(tensors)} with elements of type {[type(t) for t in tensors]} instead."
            if isinstance(tensors, (list, tuple))
            else f"Invalid function argument. Expected parameter `{name}` of type "
            f"List[torch.Tensor]\n             but got {type(tensors)} instead."
        )


# PyTorch's ScalarType names, which its errors print.
_SCALAR_TYPE_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short",
                      "int32": "Int", "int64": "Long", "uint16": "UInt16", "uint32": "UInt32",
                      "uint64": "UInt64"}  # fmt: skip


def _check_op(fn: str, tensors: Sequence[Any], op: Any) -> Any:
    from pyaten.distributed._mpi import check_reduce_op

    red = as_red_op(op)
    for t in tensors:
        dtype = t.dtype
        name = str(dtype).rsplit(".", 1)[-1]
        kind = "c" if dtype.is_complex else "f" if dtype.is_floating_point else (
            "b" if name == "bool" else "i")  # fmt: skip
        check_reduce_op(fn, kind, _SCALAR_TYPE_NAMES.get(name, name), red)
    return red


def _group_rank(pg: ProcessGroup, fn: str, global_rank: int | None, group_rank: int | None,
                what: str) -> int:  # fmt: skip
    if global_rank is not None and group_rank is not None:
        raise ValueError(f"{fn}: Can not specify both {what} and group_{what}")
    if group_rank is not None:
        rank = group_rank
    elif pg is _World.default:
        rank = 0 if global_rank is None else global_rank  # global ranks are the world's
    else:
        ranks = _World.groups[pg]
        global_rank = 0 if global_rank is None else global_rank
        if global_rank not in ranks:
            raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
        rank = ranks.index(global_rank)
    if not 0 <= rank < pg.size():
        raise RuntimeError(f"{fn}: invalid root rank: {rank}")
    return rank


def _warn_non_member(fn: str) -> None:
    warnings.warn(
        f"Running {fn} on global rank {_default().rank()} which does not belong to the given "
        "group.",
        stacklevel=3,
    )


def _finish(work: Work, async_op: bool) -> Work | None:
    if async_op:
        return work
    work.wait()
    return None


def _ops() -> Any:
    from pyaten.distributed import _c10d_ops  # noqa: F401  (defines the c10d operators)
    from pyaten.ops import ops

    return ops.c10d


def _empty() -> Any:
    from pyaten.ops import ops

    return ops.aten.empty.memory_format([0])


def _timeout_ms(pg: ProcessGroup) -> int:
    return int(pg.timeout * 1000)


# -- collectives -----------------------------------------------------------------------------


def all_reduce(tensor: Any, op: Any = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:  # fmt: skip
    """Reduce `tensor` across the group in place: every rank gets the result."""
    _check_tensor("all_reduce", tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("all_reduce")
    red = _check_op("all_reduce", [tensor], op)
    _, work = _ops().allreduce_.default([tensor], pg, red, None, async_op, _timeout_ms(pg))
    return _finish(work, async_op)


def broadcast(tensor: Any, src: int | None = None, group: Any = None, async_op: bool = False,
              group_src: int | None = None) -> Work | None:  # fmt: skip
    _check_tensor("broadcast", tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("broadcast")
    root = _group_rank(pg, "broadcast", src, group_src, "src")
    _, work = _ops().broadcast_.default([tensor], pg, root, 0, async_op, _timeout_ms(pg))
    return _finish(work, async_op)


def all_gather(tensor_list: list, tensor: Any, group: Any = None,
               async_op: bool = False) -> Work | None:  # fmt: skip
    """`tensor_list[r]` receives rank r's `tensor` (ranks may send different sizes)."""
    _check_tensor_list("all_gather", tensor_list, "tensor_list")
    _check_tensor("all_gather", tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("all_gather")
    if len(tensor_list) != pg.size():
        raise RuntimeError(
            f"all_gather: invalid output tensor list at index 0 (expected length {pg.size()}, "
            f"got {len(tensor_list)})"
        )
    _, work = _ops().allgather_.default([list(tensor_list)], [tensor], pg, async_op,
                                        _timeout_ms(pg))  # fmt: skip
    return _finish(work, async_op)


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None,
                           async_op: bool = False) -> Work | None:  # fmt: skip
    _check_tensor("all_gather_into_tensor", output_tensor, "output_tensor")
    _check_tensor("all_gather_into_tensor", input_tensor, "input_tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("all_gather_into_tensor")
    _, work = _ops()._allgather_base_.default(output_tensor, input_tensor, pg, async_op,
                                              _timeout_ms(pg))  # fmt: skip
    return _finish(work, async_op)


def reduce_scatter(output: Any, input_list: list, op: Any = ReduceOp.SUM, group: Any = None,
                   async_op: bool = False) -> Work | None:  # fmt: skip
    _check_tensor("reduce_scatter", output, "output")
    _check_tensor_list("reduce_scatter", input_list, "input_list")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("reduce_scatter")
    if len(input_list) != pg.size():
        raise ValueError(
            f"reduce_scatter: input_list must have {pg.size()} tensors (one per rank), got "
            f"{len(input_list)}"
        )
    red = _check_op("reduce_scatter", [output], op)
    _, work = _ops().reduce_scatter_.default([output], [list(input_list)], pg, red, async_op,
                                             _timeout_ms(pg))  # fmt: skip
    return _finish(work, async_op)


def reduce_scatter_tensor(output: Any, input: Any, op: Any = ReduceOp.SUM, group: Any = None,
                          async_op: bool = False) -> Work | None:  # fmt: skip
    _check_tensor("reduce_scatter_tensor", output, "output")
    _check_tensor("reduce_scatter_tensor", input, "input")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("reduce_scatter_tensor")
    red = _check_op("reduce_scatter_tensor", [output], op)
    _, work = _ops()._reduce_scatter_base_.default(output, input, pg, red, async_op,
                                                   _timeout_ms(pg))  # fmt: skip
    return _finish(work, async_op)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group: Any = None,
               async_op: bool = False) -> Work | None:  # fmt: skip
    _check_tensor_list("all_to_all", output_tensor_list, "output_tensor_list")
    _check_tensor_list("all_to_all", input_tensor_list, "input_tensor_list")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("all_to_all")
    for name, listed in (("output", output_tensor_list), ("input", input_tensor_list)):
        if len(listed) != pg.size():
            raise ValueError(f"all_to_all: {name}_tensor_list must have {pg.size()} tensors, "
                             f"got {len(listed)}")  # fmt: skip
    _, work = _ops().alltoall_.default(list(output_tensor_list), list(input_tensor_list), pg,
                                       async_op, _timeout_ms(pg))  # fmt: skip
    return _finish(work, async_op)


def all_to_all_single(output: Any, input: Any, output_split_sizes: list | None = None,
                      input_split_sizes: list | None = None, group: Any = None,
                      async_op: bool = False) -> Work | None:  # fmt: skip
    _check_tensor("all_to_all_single", output, "output")
    _check_tensor("all_to_all_single", input, "input")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("all_to_all_single")
    work = _ops().alltoall_base_.default(output, input, pg, list(output_split_sizes or []),
                                         list(input_split_sizes or []), async_op,
                                         _timeout_ms(pg))  # fmt: skip
    return _finish(work, async_op)


def reduce(tensor: Any, dst: int | None = None, op: Any = ReduceOp.SUM, group: Any = None,
           async_op: bool = False, group_dst: int | None = None) -> Work | None:  # fmt: skip
    _check_tensor("reduce", tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("reduce")
    root = _group_rank(pg, "reduce", dst, group_dst, "dst")
    red = _check_op("reduce", [tensor], op)
    work = _ops().reduce_.default([tensor], pg, red, root, 0, async_op, _timeout_ms(pg))
    return _finish(work, async_op)


def gather(tensor: Any, gather_list: list | None = None, dst: int | None = None,
           group: Any = None, async_op: bool = False,
           group_dst: int | None = None) -> Work | None:  # fmt: skip
    _check_tensor("gather", tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("gather")
    root = _group_rank(pg, "gather", dst, group_dst, "dst")
    if pg.rank() != root and gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_tensor_list("gather", gather_list, "gather_list")
    outputs = [list(gather_list)] if pg.rank() == root else []
    work = _ops().gather_.default(outputs, [tensor], pg, root, async_op, _timeout_ms(pg))
    return _finish(work, async_op)


def scatter(tensor: Any, scatter_list: list | None = None, src: int | None = None,
            group: Any = None, async_op: bool = False,
            group_src: int | None = None) -> Work | None:  # fmt: skip
    _check_tensor("scatter", tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("scatter")
    root = _group_rank(pg, "scatter", src, group_src, "src")
    if pg.rank() != root and scatter_list:
        raise ValueError(
            "Argument ``scatter_list`` must NOT be specified on non-source ranks."
        )
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_tensor_list("scatter", scatter_list, "scatter_list")
    inputs = [list(scatter_list)] if pg.rank() == root else []
    _, work = _ops().scatter_.default([tensor], inputs, pg, root, async_op, _timeout_ms(pg))
    return _finish(work, async_op)


def _peer(pg: ProcessGroup, fn: str, peer: int | None, group_peer: int | None, what: str,
          allow_any: bool = False) -> int | None:  # fmt: skip
    if peer is None and group_peer is None:
        if allow_any:
            return None
        raise ValueError(f"{fn}: Must specify {what} or group_{what}")
    rank = _group_rank(pg, fn, peer, group_peer, what)
    if rank == pg.rank():
        which = "destination" if what == "dst" else "source"
        raise ValueError(
            f"Invalid {which} rank: {which} rank should not be the same as the rank of the "
            "current process."
        )
    return rank


def isend(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0,
          group_dst: int | None = None) -> Work | None:  # fmt: skip
    _check_tensor("isend", tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("isend")
    peer = _peer(pg, "isend", dst, group_dst, "dst")
    return _ops().send.default([tensor], pg, peer, tag)


def irecv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0,
          group_src: int | None = None) -> Work | None:  # fmt: skip
    _check_tensor("irecv", tensor, "tensor")
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("irecv")
    peer = _peer(pg, "irecv", src, group_src, "src", allow_any=True)
    if peer is None:
        return _ops().recv_any_source_.default([tensor], pg, tag)
    return _ops().recv_.default([tensor], pg, peer, tag)


def send(tensor: Any, dst: int | None = None, group: Any = None, tag: int = 0,
         group_dst: int | None = None) -> None:  # fmt: skip
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor: Any, src: int | None = None, group: Any = None, tag: int = 0,
         group_src: int | None = None) -> int:  # fmt: skip
    """Receive into `tensor`; returns the sender's global rank (-1 for a non-member)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    pg = _resolve(group)
    source = work.source_rank() if src is None and group_src is None else (
        _group_rank(pg, "recv", src, group_src, "src"))  # fmt: skip
    return _World.groups[pg][source]


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("barrier")
    work = _ops().barrier.default(_empty(), pg, list(device_ids or []), async_op,
                                  _timeout_ms(pg))  # fmt: skip
    return _finish(work, async_op)


def monitored_barrier(group: Any = None, timeout: datetime.timedelta | None = None,
                      wait_all_ranks: bool = False) -> None:  # fmt: skip
    """A barrier whose rank 0 names the ranks that did not arrive within `timeout`."""
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("monitored_barrier")
    ms = _timeout_ms(pg) if timeout is None else int(_seconds(timeout) * 1000)
    _ops().monitored_barrier_.default(_empty(), pg, [], ms, wait_all_ranks)
    return None


# -- object collectives: pickled bytes moved by the group's communicator --------------------


def broadcast_object_list(object_list: list, src: int | None = None, group: Any = None,
                          device: Any = None, group_src: int | None = None) -> None:  # fmt: skip
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("broadcast_object_list")
    root = _group_rank(pg, "broadcast_object_list", src, group_src, "src")
    payload = pickle.dumps(list(object_list)) if pg.rank() == root else b""
    size = np.array([len(payload)], dtype=np.int64)
    pg.broadcast(size, root, "broadcast_object_list").wait()
    data = np.frombuffer(payload, np.uint8).copy() if pg.rank() == root else np.empty(
        int(size[0]), np.uint8)  # fmt: skip
    pg.broadcast(data, root, "broadcast_object_list").wait()
    if pg.rank() != root:
        received = pickle.loads(data.tobytes())
        if len(received) != len(object_list):
            raise RuntimeError(
                f"broadcast_object_list: object_list has {len(object_list)} entries here and "
                f"{len(received)} on the source rank"
            )
        object_list[:] = received
    return None


def all_gather_object(object_list: list, obj: Any, group: Any = None) -> None:
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("all_gather_object")
    if len(object_list) != pg.size():
        raise ValueError(
            f"all_gather_object: object_list must have {pg.size()} entries, got "
            f"{len(object_list)}"
        )
    object_list[:] = _gather_pickled(pg, "all_gather_object", obj)
    return None


def gather_object(obj: Any, object_gather_list: list | None = None, dst: int | None = None,
                  group: Any = None, group_dst: int | None = None) -> None:  # fmt: skip
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("gather_object")
    root = _group_rank(pg, "gather_object", dst, group_dst, "dst")
    gathered = _gather_pickled(pg, "gather_object", obj)
    if pg.rank() == root:
        if object_gather_list is None:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        object_gather_list[:] = gathered
    return None


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list |
                        None = None, src: int | None = None, group: Any = None,
                        group_src: int | None = None) -> None:  # fmt: skip
    pg = _resolve(group)
    if pg is None:
        return _warn_non_member("scatter_object_list")
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")  # fmt: skip
    root = _group_rank(pg, "scatter_object_list", src, group_src, "src")
    holder = [list(scatter_object_input_list or []) if pg.rank() == root else None]
    broadcast_object_list(holder, group_src=root, group=group)
    scatter_object_output_list[0] = holder[0][pg.rank()]
    return None


def _gather_pickled(pg: ProcessGroup, fn: str, obj: Any) -> list[Any]:
    return pg._gather_objects(fn, obj)
