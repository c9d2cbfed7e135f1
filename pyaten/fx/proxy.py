"""`Proxy`: the stand-in value symbolic tracing passes through a module's `forward`.

A proxy records instead of computing: a `pyaten` function or `nn.functional` call reaches its
`__torch_function__` (docs/torch-function.md) and becomes a `call_function` node; a method
(`x.view(-1, 4)`) a `call_method` node; a Python operator (`x * w + 1`) a `call_function`
node on `operator.mul`/`operator.add`; an attribute (`x.shape`) `getattr`. Python control
flow on a proxy (`if x.sum() > 0`, `len(x)`, iteration) cannot be recorded and raises
`TraceError`, as in PyTorch.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any

__all__ = ["Proxy", "Attribute", "TraceError"]


class TraceError(ValueError):
    """Raised when symbolic tracing meets what a graph cannot hold."""


class Proxy:
    """A value of the graph being traced: `node` is the node that computes it."""

    def __init__(self, node: Any, tracer: Any) -> None:
        self.node = node
        self.tracer = tracer

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, name: str) -> Attribute:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Attribute(self, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self) -> Any:
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument.")

    def __bool__(self) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         "flow")

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call pyaten.fx.wrap('len') at "
                           "module scope")

    def keys(self) -> Any:
        return self.tracer.create_proxy("call_method", "keys", (self,), {})

    @classmethod
    def __torch_function__(cls, func: Any, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Proxy:
        kwargs = kwargs or {}
        tracer = _find_tracer((args, kwargs))
        method = _tensor_method_name(func)
        if method is not None:
            return tracer.create_proxy("call_method", method, args, kwargs)
        return tracer.create_proxy("call_function", func, args, kwargs)


class Attribute(Proxy):
    """`proxy.name`: a `getattr` node when used as a value, a `call_method` when called."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Any = None

    @property
    def node(self) -> Any:  # made on first use as a value
        if self._node is None:
            self._node = self.tracer.create_proxy(
                "call_function", builtins.getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


def _find_tracer(value: Any) -> Any:
    if isinstance(value, Proxy):
        return value.tracer
    if isinstance(value, (tuple, list)):
        for item in value:
            found = _find_tracer(item)
            if found is not None:
                return found
    if isinstance(value, dict):
        return _find_tracer(list(value.values()))
    return None


def _tensor_method_name(func: Any) -> str | None:
    """The method name when `func` is a `Tensor` method (`Tensor.view`), else None."""
    from pyaten.core.tensor import Tensor

    name = getattr(func, "__name__", None)
    if name is None:
        return None
    owner = Tensor.__dict__.get(name)
    if owner is not None and (owner is func or getattr(owner, "__func__", None) is func):
        return name
    return None


def _binary(op: Any, reflected: bool = False) -> Any:
    def method(self: Proxy, other: Any) -> Proxy:
        args = (other, self) if reflected else (self, other)
        return self.tracer.create_proxy("call_function", op, args, {})

    return method


def _unary(op: Any) -> Any:
    def method(self: Proxy) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self,), {})

    return method


BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul,
    "truediv": operator.truediv, "floordiv": operator.floordiv, "mod": operator.mod,
    "pow": operator.pow, "matmul": operator.matmul, "and": operator.and_, "or": operator.or_,
    "xor": operator.xor, "lshift": operator.lshift, "rshift": operator.rshift,
}
COMPARISON = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
              "gt": operator.gt, "ge": operator.ge}
UNARY = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert,
         "abs": operator.abs}

for _name, _op in BINARY.items():
    setattr(Proxy, f"__{_name}__", _binary(_op))
    setattr(Proxy, f"__r{_name}__", _binary(_op, reflected=True))
for _name, _op in COMPARISON.items():
    setattr(Proxy, f"__{_name}__", _binary(_op))
for _name, _op in UNARY.items():
    setattr(Proxy, f"__{_name}__", _unary(_op))
Proxy.__getitem__ = _binary(operator.getitem)
Proxy.__hash__ = object.__hash__
