"""Grouping a graph's pointwise operators into fused loops.

Note: which nodes fuse
    A node can join a loop when its operator has a scalar expression (lowering.py), its
    value is a contiguous float32 or float64 tensor, and every tensor it reads has its
    dtype. It joins the group of a producer it reads when the two have the same shape and
    the group stays schedulable: the group runs where its last member stood, so no node
    outside it may read a member before that point. The group's inputs are the tensors its
    members read from outside it (broadcast to the loop's shape when smaller); its outputs
    are the members read after it or returned. A group of one computing node (copies such
    as `detach` do not count) is not worth a Numba loop, whose call costs about what the
    operator's kernel does: its nodes then run their own kernels. A C loop, called through
    ctypes, costs a few microseconds, so there one operator is worth a loop.

    A loop may end with one reduction: a `sum` or `mean` of a member over the last dim (the
    inner loop accumulates, one result per row) or over every element, or a `sum` of a 2-d
    member over its first dim (a layer's bias gradient: one result per column, the rows
    added in order in the member's dtype, as NumPy's reduction adds them). The loop still
    runs where its last member stood: the reduction reads only that member, so its result
    is ready there, before its readers. The reduced member is then written only if
    something else reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyaten.fx.graph import Graph
from pyaten.fx.node import Node

from .lowering import expression

__all__ = ["FusedGroup", "fuse"]

_FLOATS = ("float32", "float64")


@dataclass
class FusedGroup:
    """Members in order; external inputs; members whose values leave the loop."""

    members: list[Node] = field(default_factory=list)
    inputs: list[Node] = field(default_factory=list)
    outputs: list[Node] = field(default_factory=list)
    index: int = 0
    # a trailing sum or mean of one member, over the last dim or over every element
    reduction: Node | None = None
    reduced: Node | None = None  # the member it reduces
    reduce_all: bool = False
    mean: bool = False
    reduce_rows: bool = False  # a sum over the first dim of a 2-d loop

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.members[0].meta["tensor_meta"]["shape"])

    @property
    def dtype(self) -> Any:
        return self.members[0].meta["tensor_meta"]["dtype"]


def _contiguous(shape: tuple, stride: tuple) -> bool:
    expected = 1
    for size, step in reversed(list(zip(shape, stride))):
        if size != 1 and step != expected:
            return False
        expected *= size
    return True


def _fusible(node: Node) -> bool:
    if node.op != "call_function":
        return False
    meta = node.meta.get("tensor_meta")
    if meta is None or getattr(meta["dtype"], "name", "") not in _FLOATS:
        return False
    if not _contiguous(meta["shape"], meta["stride"]):
        return False
    for arg in node.args:
        if isinstance(arg, Node):
            other = arg.meta.get("tensor_meta")
            if other is None or other["dtype"] != meta["dtype"]:
                return False
        elif isinstance(arg, (list, tuple, dict)):
            return False
    names = [f"v{i}" if isinstance(a, Node) else a for i, a in enumerate(node.args)]
    return expression(node.target, names, dict(node.kwargs)) is not None


def fuse(graph: Graph, min_work: int = 2) -> list[FusedGroup]:
    """The fused groups of `graph` (Note: which nodes fuse), in the order they run: those
    computing at least `min_work` operators (1 where a loop costs less to call than the
    operator's kernel, as a C loop does)."""
    nodes = graph.nodes
    position = {n: i for i, n in enumerate(nodes)}
    group_of: dict[Node, FusedGroup] = {}
    groups: list[FusedGroup] = []
    for node in nodes:
        if not _fusible(node):
            continue
        shape = tuple(node.meta["tensor_meta"]["shape"])
        chosen = None
        for arg in node.all_input_nodes:
            group = group_of.get(arg)
            if group is None or group.shape != shape or group.dtype != \
                    node.meta["tensor_meta"]["dtype"]:
                continue
            if _can_join(group, node, position, group_of):
                chosen = group
                break
        if chosen is None:
            chosen = FusedGroup()
            groups.append(chosen)
        chosen.members.append(node)
        group_of[node] = chosen
    for group in groups:
        _attach_reduction(group, position)
    fused = [g for g in groups if _work(g) >= min_work]
    for group in fused:
        members = set(group.members)
        for member in group.members:
            for arg in member.all_input_nodes:
                if arg not in members and arg not in group.inputs:
                    group.inputs.append(arg)
            if any(user not in members and user is not group.reduction
                   for user in member.users):
                group.outputs.append(member)
        group.index = position[group.members[-1]]
    return fused


_IDENTITIES = ("detach.default", "alias.default", "clone.default")


def _work(group: FusedGroup) -> int:
    """Operators in the loop that compute something (a copy is not worth a loop)."""
    computing = sum(getattr(m.target, "__name__", "") not in _IDENTITIES for m in group.members)
    return computing + (group.reduction is not None)


_REDUCTIONS = {"sum.dim_IntList": False, "mean.dim": True, "sum.default": False,
               "mean.default": True}


def _reduction_kind(user: Node, member: Node) -> tuple[bool, bool, bool] | None:
    """(over every element, mean, over the rows) when `user` is a sum or mean of `member` a
    loop can end with: over the last dim or over everything, in the member's dtype, or a
    sum of a 2-d member over its first dim."""
    target = user.target
    name = getattr(target, "__name__", "") if getattr(target, "namespace", None) == "aten" \
        else ""
    if name not in _REDUCTIONS or user.args[0] is not member or user.kwargs.get("dtype"):
        return None
    ndim = len(member.meta["tensor_meta"]["shape"])
    if ndim == 0:
        return None
    mean = _REDUCTIONS[name]
    if name.endswith(".default"):
        return (True, mean, False) if len(user.args) == 1 else None
    dims = user.args[1] if len(user.args) > 1 else None
    extra = user.args[3:] if len(user.args) > 3 else ()
    if any(e is not None for e in extra) or not isinstance(dims, (list, tuple)) or \
            len(dims) != 1:
        return None
    if ndim == 2 and dims[0] % ndim == 0 and not mean:
        return False, False, True
    if dims[0] % ndim != ndim - 1:
        return None
    return False, mean, False


def _attach_reduction(group: FusedGroup, position: dict[Node, int]) -> None:
    for member in reversed(group.members):
        for user in member.users:
            kind = _reduction_kind(user, member)
            if kind is None or position[user] < position[group.members[-1]]:
                continue
            group.reduction, group.reduced = user, member
            group.reduce_all, group.mean, group.reduce_rows = kind
            return


def _can_join(group: FusedGroup, node: Node, position: dict[Node, int],
              group_of: dict[Node, FusedGroup]) -> bool:
    here = position[node]
    for member in group.members:
        for user in member.users:
            if user is not node and group_of.get(user) is not group and position[user] < here:
                return False
    return True
