"""A node of an FX graph: one placeholder, operator call, attribute read or the output.

`op` says what the node is (`placeholder`, `call_function`, `call_method`, `call_module`,
`get_attr`, `output`), `target` what it calls or names, `args`/`kwargs` its inputs (other
nodes inside any nesting of tuples, lists and dicts), `meta` what capture learned about its
value (`val`: the tensor, or a Meta tensor under fake tracing; `tensor_meta`).
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

__all__ = ["Node", "map_arg"]

OPS = ("placeholder", "call_function", "call_method", "call_module", "get_attr", "output")


def map_arg(value: Any, fn: Any) -> Any:
    """`value` with every Node inside it (tuples, lists, dicts, slices) replaced by `fn(node)`."""
    if isinstance(value, Node):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(map_arg(v, fn) for v in value)
    if isinstance(value, list):
        return [map_arg(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: map_arg(v, fn) for k, v in value.items()}
    if isinstance(value, slice):
        return slice(map_arg(value.start, fn), map_arg(value.stop, fn), map_arg(value.step, fn))
    return value


class Node:
    """One instruction of a `Graph`."""

    def __init__(self, graph: Any, name: str, op: str, target: Any, args: tuple,
                 kwargs: dict[str, Any]) -> None:
        if op not in OPS:
            raise ValueError(f"Node op must be one of {OPS}, not {op!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.meta: dict[str, Any] = {}
        self.users: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict[str, Any] = {}
        self._inputs: tuple[Node, ...] = ()  # the nodes in args and kwargs, kept as they are set
        self._set_inputs(tuple(args), dict(kwargs))

    # -- inputs and users ----------------------------------------------------------------

    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value: tuple) -> None:
        self._set_inputs(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict[str, Any]:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict[str, Any]) -> None:
        self._set_inputs(self._args, dict(value))

    @property
    def all_input_nodes(self) -> list[Node]:
        return list(self._inputs)

    def _set_inputs(self, args: tuple, kwargs: dict[str, Any]) -> None:
        for node in self._inputs:
            node.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        found: dict[Node, None] = {}
        map_arg((args, kwargs), lambda n: found.setdefault(n))
        self._inputs = tuple(found)
        for node in self._inputs:
            node.users[self] = None

    def replace_all_uses_with(self, replacement: Node) -> list[Node]:
        """Make every user of this node read `replacement` instead; returns those users."""
        users = list(self.users)
        for user in users:
            swap = lambda n: replacement if n is self else n  # noqa: E731
            user._set_inputs(map_arg(user._args, swap), map_arg(user._kwargs, swap))
        return users

    # -- printing ---------------------------------------------------------------------------

    def format_node(self) -> str:
        """The node as `Graph.__str__` lists it (PyTorch's format)."""
        users = f"[num_users={len(self.users)}]"
        if self.op == "placeholder":
            default = f"(default={self._args[0]})" if self._args else ""
            return f"%{self.name} : {users} = placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"%{self.name} : {users} = get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {_format_arg(self._args[0], bare=True)}"
        args = _format_arg(self._args, top=True)
        kwargs = "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in self._kwargs.items()) + "}"
        return (f"%{self.name} : {users} = {self.op}[target={_target_name(self.target)}]"
                f"(args = {args}, kwargs = {kwargs})")

    def __repr__(self) -> str:
        return self.name


_NAMESPACES = ("pyaten", "pyaten.nn.functional", "pyaten.linalg", "pyaten.special",
               "pyaten.fft")
_QUALIFIED: dict[int, str] = {}


def qualified_name(target: Any) -> str:
    """How code names a call target: `operator.mul`, `builtins.getattr`, `pyaten.cat`,
    `pyaten.nn.functional.relu`, `pyaten.ops.aten.add.Tensor`, else module.qualname."""
    if isinstance(target, str):
        return target
    found = _QUALIFIED.get(id(target))
    if found is not None:
        return found
    name = getattr(target, "__name__", None)
    if getattr(target, "overloadpacket", None) is not None:
        found = f"pyaten.ops.{target}"
    elif name is not None and getattr(operator, name, None) is target:
        found = f"operator.{name}"
    elif name is not None and getattr(builtins, name, None) is target:
        found = f"builtins.{name}"
    else:
        import importlib

        for namespace in _NAMESPACES:
            module = importlib.import_module(namespace)
            if name is not None and module.__dict__.get(name) is target:
                found = f"{namespace}.{name}"
                break
        else:
            found = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', name)}"
    _QUALIFIED[id(target)] = found
    return found


def _target_name(target: Any) -> str:
    return qualified_name(target)


def _format_arg(value: Any, top: bool = False, bare: bool = False) -> str:
    if isinstance(value, Node):
        return value.name if bare else f"%{value.name}"
    if isinstance(value, tuple):
        inner = ", ".join(_format_arg(v, bare=bare) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_format_arg(v, bare=bare) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v, bare=bare)}" for k, v in value.items()) + "}"
    return str(value)
