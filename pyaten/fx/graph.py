"""An FX graph: an ordered list of nodes, its checks, and the Python source it stands for.

`Graph.python_code()` writes one line per node (`add = pyaten.ops.aten.add.Tensor(x_1, y_1)`),
each value released after its last use (`;  x_1 = None`, as PyTorch's code generator does),
and returns the source with the globals it needs; `GraphModule` compiles it into `forward`.
"""

from __future__ import annotations

import builtins
import keyword
import math
import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyaten.core.symbolic import SymBool, SymFloat, SymInt
from pyaten.fx.node import Node, qualified_name

__all__ = ["Graph", "PythonCode"]

_ILLEGAL = re.compile(r"[^0-9a-zA-Z_]+")


@dataclass(frozen=True)
class PythonCode:
    """The source of `forward` and the names it reads besides its arguments."""

    src: str
    globals: dict[str, Any]


class Graph:
    """Nodes in execution order, each named uniquely."""

    def __init__(self) -> None:
        self._nodes: list[Node] = []
        self._names: dict[str, int] = {}

    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self._nodes))

    # -- building -------------------------------------------------------------------------

    def _unique(self, candidate: str) -> str:
        base = _ILLEGAL.sub("_", candidate) or "_"
        if base[0].isdigit():
            base = "_" + base
        taken = self._names
        if base not in taken and not _reserved(base):
            taken[base] = 0
            return base
        match = re.fullmatch(r"(.*)_(\d+)", base)
        stem = match.group(1) if match and not _reserved(base) else base
        count = taken.get(stem, 0)
        while True:
            count += 1
            name = f"{stem}_{count}"
            if name not in taken:
                taken[stem] = count
                taken[name] = 0
                return name

    def create_node(self, op: str, target: Any, args: tuple = (), kwargs: dict | None = None,
                    name: str | None = None) -> Node:
        node = Node(self, self._unique(name or _default_name(target)), op, target, args,
                    kwargs or {})
        self._nodes.append(node)
        return node

    def placeholder(self, name: str) -> Node:
        return self.create_node("placeholder", name, name=name)

    def get_attr(self, qualified_name: str) -> Node:
        return self.create_node("get_attr", qualified_name, name=qualified_name)

    def call_function(self, target: Any, args: tuple = (), kwargs: dict | None = None) -> Node:
        return self.create_node("call_function", target, args, kwargs)

    def output(self, result: Any) -> Node:
        return self.create_node("output", "output", (result,), name="output")

    def erase_node(self, node: Node) -> None:
        if node.users:
            raise RuntimeError(
                f"Tried to erase Node {node} but it still had {len(node.users)} users in the "
                "graph"
            )
        node._set_inputs((), {})
        self._nodes.remove(node)

    def eliminate_dead_code(self) -> bool:
        """Remove nodes whose value nobody reads (placeholders, the output and in-place
        operators stay); returns whether anything was removed."""
        changed = False
        for node in reversed(list(self._nodes)):
            if node.op in ("placeholder", "output") or node.users:
                continue
            schema = getattr(node.target, "_schema", None)
            if schema is not None and any(a.is_write for a in schema.returns):
                continue
            self.erase_node(node)
            changed = True
        return changed

    # -- checks ---------------------------------------------------------------------------

    def lint(self) -> None:
        """Check the graph is well formed: names unique, every input defined before use and
        belonging to this graph, users consistent, one output at the end."""
        seen: set[Node] = set()
        names: set[str] = set()
        for node in self._nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            for arg in node.all_input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to "
                                       "this Graph!")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it "
                                       "has been defined!")
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' is not recorded as a user of '{arg}'")
            seen.add(node)
        outputs = [n for n in self._nodes if n.op == "output"]
        if len(outputs) > 1 or (outputs and outputs[0] is not self._nodes[-1]):
            raise RuntimeError("A Graph has one output node, and it comes last")

    # -- printing and code ----------------------------------------------------------------

    def __str__(self) -> str:
        lines = ["graph():"] + [f"    {n.format_node()}" for n in self._nodes]
        return "\n".join(lines)

    def python_code(self, root_module: str = "self", annotate: bool = False) -> PythonCode:
        """The source of `forward(self, <placeholders>)` and the globals it needs."""
        import pyaten

        namespace: dict[str, Any] = {
            "pyaten": pyaten, "device": pyaten.device, "inf": math.inf, "nan": math.nan,
        }
        last_use: dict[Node, Node] = {}
        for node in self._nodes:
            for arg in node.all_input_nodes:
                last_use[arg] = node
        freed_after: dict[Node, list[Node]] = {}
        for value, user in last_use.items():
            freed_after.setdefault(user, []).append(value)

        params = []
        body = []
        for node in self._nodes:
            if node.op == "placeholder":
                default = f" = {_source(node.args[0], namespace)}" if node.args else ""
                params.append(node.name + (_annotation(node) if annotate else "") + default)
                continue
            if node.op == "output":
                body.append(f"return {_source(node.args[0], namespace)}")
                continue
            target = node.target
            if node.op == "get_attr":
                expression = f"{root_module}.{target}"
            elif node.op == "call_function" and target is operator.getitem:
                sequence, index = node.args
                expression = f"{_source(sequence, namespace)}[{_source(index, namespace)}]"
            elif node.op == "call_function" and target in _INFIX and not node.kwargs:
                left, right = (_source(a, namespace) for a in node.args)
                expression = f"{left} {_INFIX[target]} {right}"
            elif node.op == "call_function" and target in _PREFIX and not node.kwargs:
                expression = f"{_PREFIX[target]}{_source(node.args[0], namespace)}"
            elif node.op == "call_function" and target is builtins.getattr:
                expression = f"{_source(node.args[0], namespace)}.{node.args[1]}"
            elif node.op == "call_function":
                parts = [_source(a, namespace) for a in node.args]
                parts += [f"{k} = {_source(v, namespace)}" for k, v in node.kwargs.items()]
                expression = f"{_callee(target, namespace)}({', '.join(parts)})"
            elif node.op == "call_method":
                first, *rest = node.args
                parts = [_source(a, namespace) for a in rest]
                parts += [f"{k} = {_source(v, namespace)}" for k, v in node.kwargs.items()]
                expression = f"{_source(first, namespace)}.{target}({', '.join(parts)})"
            else:  # call_module
                parts = [_source(a, namespace) for a in node.args]
                parts += [f"{k} = {_source(v, namespace)}" for k, v in node.kwargs.items()]
                expression = f"{_module_path(root_module, target)}({', '.join(parts)})"
            line = f"{node.name}{_annotation(node) if annotate else ''} = {expression}"
            freed = [v.name for v in freed_after.get(node, ())]
            if not node.users:  # a value nobody reads is released at once, as PyTorch's code
                freed.append(node.name)
            if freed:
                line += ";  " + " = ".join(freed) + " = None"
            body.append(line)
        signature = ", ".join([root_module, *params])
        src = f"def forward({signature}):\n" + "".join(f"    {line}\n" for line in body)
        return PythonCode(src, namespace)


def _reserved(name: str) -> bool:
    return keyword.iskeyword(name) or hasattr(builtins, name) or name in ("pyaten", "device")


def _default_name(target: Any) -> str:
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return packet.__name__
    if isinstance(target, str):
        return target
    return getattr(target, "__name__", "node")


_INFIX = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<",
    operator.rshift: ">>", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
    operator.le: "<=", operator.gt: ">", operator.ge: ">=",
}
_PREFIX = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}


def _module_path(root: str, qualified: str) -> str:
    """`self.lin`, or `getattr(self.seq, "0")` for a name that is not an identifier."""
    path = root
    for part in qualified.split("."):
        path = f"{path}.{part}" if part.isidentifier() else f'getattr({path}, "{part}")'
    return path


def _callee(target: Any, namespace: dict[str, Any]) -> str:
    text = str(target)
    if getattr(target, "overloadpacket", None) is not None:
        return f"pyaten.ops.{text}"
    qualified = qualified_name(target)
    if qualified.startswith(("pyaten.", "operator.", "builtins.")):
        head = qualified.split(".")[0]
        namespace.setdefault(head, __import__(head))
        return qualified
    name = "_fn_" + _ILLEGAL.sub("_", getattr(target, "__name__", "call"))
    while name in namespace and namespace[name] is not target:
        name += "_"
    namespace[name] = target
    return name


def _source(value: Any, namespace: dict[str, Any]) -> str:
    if isinstance(value, Node):
        return value.name
    if isinstance(value, tuple):
        inner = ", ".join(_source(v, namespace) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(_source(v, namespace) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_source(v, namespace)}" for k, v in value.items()) + "}"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (bool, int, float, complex, str, type(None))):
        return repr(value)
    # dtypes, devices, layouts, memory formats: named by their repr when it evaluates
    # to them; anything else is kept as a global of the generated code.
    text = repr(value)
    try:
        if eval(text, dict(namespace)) == value:  # noqa: S307 - our own reprs
            return text
    except Exception:  # noqa: BLE001 - not an expression: keep the object itself
        pass
    name = f"_const_{len([k for k in namespace if k.startswith('_const_')])}"
    namespace[name] = value
    return name


def _annotation(node: Node) -> str:
    val = node.meta.get("val")
    if isinstance(val, (SymInt, SymFloat, SymBool)):  # a size read or computed: its expression
        return f': "Sym({val})"'
    sizes = getattr(val, "shape", None)
    dtype = getattr(val, "dtype", None)
    if sizes is None or dtype is None:
        return ""
    short = _SHORT.get(dtype.name if hasattr(dtype, "name") else str(dtype), str(dtype))
    return f': "{short}[{", ".join(str(s) for s in sizes)}]"'


_SHORT = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
    "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8",
    "complex64": "c64", "complex128": "c128",
}
