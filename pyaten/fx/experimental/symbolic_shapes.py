"""`ShapeEnv`: the size symbols of one trace, and the guards recorded about them.

A trace with symbolic shapes (`make_fx(tracing_mode="symbolic")`, `pyaten.compile` with
`dynamic`) gives each input size a symbol (`s0`, `s1`...) instead of its value, and runs
the program on FakeTensors: Meta tensors whose sizes and strides are `SymInt`s
(pyaten/core/symbolic.py, "Note: symbolic values carry a hint"). As PyTorch's:

- a size of 0 or 1 is not made a symbol: it stays the constant (a broadcast or an empty
  tensor behaves differently), so symbols stand for sizes of 2 or more;
- equal sizes get the same symbol ("duck sizing": in `x + y` with both of size 8, one
  symbol, no guard that they are equal), which the guards then check;
- every decision taken on a symbol (`if size == 1`, a broadcast, a `view` that must divide)
  is recorded as a guard: the expression in Python source and the answer it had.

`check` takes the tensors of a new call and says whether the trace holds for them: each
symbol is bound from the first size that introduced it, every size and stride of the inputs
must equal its expression, and every guard must give the answer recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyaten.core.symbolic import (
    Poly,
    SymBool,
    SymFloat,
    SymInt,
    SymNode,
    sym_float,
    sym_int,
    sym_max,
    sym_min,
    sym_not,
)
from pyaten.core.tensor import Tensor

__all__ = ["ShapeEnv", "ShapeGuard", "SymBool", "SymFloat", "SymInt", "fake_tensor",
           "guard_int", "has_symbolic_sizes", "hint_int", "is_concrete_int", "sym_float",
           "sym_int", "sym_max", "sym_min", "sym_not"]


@dataclass(frozen=True)
class ShapeGuard:
    """A decision recorded while tracing: `expr` (Python source over the symbols) had the
    truth value `value`."""

    expr: str
    value: bool

    def __str__(self) -> str:
        return self.expr if self.value else f"not ({self.expr})"


class ShapeEnv:
    """The symbols of one trace and the guards about them (see the module docstring)."""

    def __init__(self, duck_shape: bool = True, specialize_zero_one: bool = True) -> None:
        self.duck_shape = duck_shape
        self.specialize_zero_one = specialize_zero_one
        self.var_to_val: dict[str, int] = {}
        self.var_to_sources: dict[str, list[str]] = {}
        self.guards: list[ShapeGuard] = []
        self._guard_set: set[ShapeGuard] = set()
        self._by_value: dict[int, SymInt] = {}
        self.opaque: dict[str, tuple] = {}  # `//`, `%`, max, min atoms: (op, a, b)
        self._checker: Any = None

    # --- making symbols
    def create_symbol(self, value: int, source: str) -> int | SymInt:
        """A symbol for a size of `value` read from `source` (or the constant 0/1, or the
        symbol already made for an equal size)."""
        value = int(value)
        if self.specialize_zero_one and value in (0, 1):
            return value
        if self.duck_shape and value in self._by_value:
            sym = self._by_value[value]
            self.var_to_sources[sym.node.expr.text].append(source)
            return sym
        name = f"s{len(self.var_to_val)}"
        self.var_to_val[name] = value
        self.var_to_sources[name] = [source]
        sym = SymInt(SymNode(Poly.atom(name, "symbol"), value, self))
        self._by_value[value] = sym
        return sym

    def create_symbolic_sizes_strides(self, t: Tensor, source: str,
                                      static_dims: frozenset[int] = frozenset()) -> tuple:
        """Symbolic sizes for `t` (a symbol per dim not in `static_dims`) and strides
        expressed in them where `t`'s layout is dense (a permutation of a contiguous
        layout); other strides stay the numbers they are."""
        sizes = tuple(s if i in static_dims else self.create_symbol(s, f"{source}.size()[{i}]")
                      for i, s in enumerate(t.shape))
        strides = t.stride()
        order = sorted(range(len(sizes)), key=lambda d: (strides[d], -d))
        expected = 1
        for d in order:
            if t.shape[d] > 1 and strides[d] != expected:
                return sizes, tuple(strides)  # not dense: keep the numbers
            expected = expected * max(t.shape[d], 1)
        symbolic: list[Any] = list(strides)
        acc: Any = 1
        concrete = 1
        for d in order:
            if strides[d] == concrete:  # a size-1 dim's stride stays a number otherwise
                symbolic[d] = acc
            acc = acc * sizes[d]
            concrete = concrete * t.shape[d]
        return sizes, tuple(symbolic)

    # --- guards
    def record_guard(self, expr: str, value: bool) -> None:
        guard = ShapeGuard(expr, value)
        if guard not in self._guard_set:
            self._guard_set.add(guard)
            self.guards.append(guard)
            self._checker = None

    def format_guards(self) -> list[str]:
        return [str(g) for g in self.guards]

    def evaluate_guards(self, values: dict[str, int]) -> str | None:
        """None when every guard holds for these symbol values, else the first that fails."""
        if self._checker is None:
            names = sorted(self.var_to_val)
            body = " and ".join(f"({g.expr}) == {g.value}" for g in self.guards) or "True"
            self._checker = eval(  # noqa: S307 - our own expressions over the symbols
                f"lambda {', '.join(names) + ',' if names else ''} **_: {body}",
                {"__builtins__": {"max": max, "min": min}})
        try:
            if self._checker(**values):
                return None
        except (ZeroDivisionError, TypeError):
            pass
        for g in self.guards:
            try:
                if bool(eval(g.expr, {"__builtins__": {"max": max, "min": min}},  # noqa: S307
                             dict(values))) != g.value:
                    return f"shape guard failed: {g}"
            except ZeroDivisionError:
                return f"shape guard failed: {g} (division by zero)"
        return "shape guard failed"

    def bind(self, pairs: list[tuple[Any, int]]) -> dict[str, int] | str:
        """Symbol values from (symbolic size, actual size) pairs: a plain symbol is bound
        from the first pair naming it; every other pair must agree. A string says why
        they do not."""
        values: dict[str, int] = {}
        for expected, got in pairs:
            if isinstance(expected, SymInt):
                poly = expected.node.expr
                monomials = list(poly.terms)
                if len(monomials) == 1 and len(monomials[0]) == 1 and \
                        poly.terms[monomials[0]] == 1 and \
                        poly.atoms[monomials[0][0]] == "symbol":
                    name = monomials[0][0]
                    if name not in values:
                        if self.specialize_zero_one and got in (0, 1):
                            return f"{name} is {got} (sizes 0 and 1 are specialized)"
                        values[name] = got
                        continue
        for expected, got in pairs:
            want = expected.node.expr.evaluate(values) if isinstance(expected, SymInt) \
                else expected
            if want != got:
                return f"size {got} where {expected} == {want} was expected"
        return values

    def check(self, pairs: list[tuple[Any, int]]) -> str | None:
        """None when the trace holds for these sizes (`bind`, then every guard)."""
        values = self.bind(pairs)
        if isinstance(values, str):
            return values
        return self.evaluate_guards(values)

    def compile_check(self, expected: list[Any]) -> Any:
        """A function of the actual sizes (a list, in the order of `expected`) that is True
        when `check` would pass: one generated Python expression, the per-call fast path
        (`check` says why it fails)."""
        bound: dict[str, str] = {}
        lines = []
        conditions = []
        for i, want in enumerate(expected):
            if isinstance(want, SymInt):
                poly = want.node.expr
                (monomial, coefficient), = poly.terms.items() if len(poly.terms) == 1 \
                    else ((None, None),)
                if monomial is not None and len(monomial) == 1 and coefficient == 1 and \
                        poly.atoms[monomial[0]] == "symbol" and monomial[0] not in bound:
                    bound[monomial[0]] = f"v[{i}]"
                    lines.append(f"    {monomial[0]} = v[{i}]")
                    if self.specialize_zero_one:
                        conditions.append(f"{monomial[0]} >= 2")
                    continue
                conditions.append(f"v[{i}] == {poly.text}")
            else:
                conditions.append(f"v[{i}] == {int(want)}")
        conditions += [f"({g.expr})" if g.value else f"not ({g.expr})" for g in self.guards]
        body = " and ".join(f"({c})" for c in conditions) or "True"
        source = "def check(v):\n" + "\n".join(lines + [
            "    try:", f"        return {body}", "    except ZeroDivisionError:",
            "        return False"]) + "\n"
        namespace: dict[str, Any] = {"__builtins__": {"max": max, "min": min}}
        exec(compile(source, "<pyaten shape guards>", "exec"), namespace)  # noqa: S102
        return namespace["check"]

    def __repr__(self) -> str:
        return f"ShapeEnv({self.var_to_val}, guards={self.format_guards()})"


def fake_tensor(t: Tensor, shape_env: ShapeEnv, source: str,
                static_dims: frozenset[int] = frozenset()) -> Tensor:
    """A FakeTensor for `t`: a Meta tensor with `t`'s dtype and `requires_grad` and symbolic
    sizes and strides from `shape_env`."""
    from pyaten.core.device import device as make_device
    from pyaten.core.storage import Storage

    sizes, strides = shape_env.create_symbolic_sizes_strides(t, source, static_dims)
    meta = make_device("meta")
    storage = Storage._fresh(0, meta)
    fake = Tensor._make(storage, sizes, strides, 0, t.dtype, meta)
    if t.requires_grad:
        fake.requires_grad_(True)
    return fake


def has_symbolic_sizes(t: Tensor) -> bool:
    return any(isinstance(s, SymInt) for s in t._sizes)


def is_concrete_int(a: Any) -> bool:
    """Whether `a` is a plain int (PyTorch's `is_concrete_int`)."""
    return isinstance(a, int) and not isinstance(a, bool)


def hint_int(a: Any) -> int:
    """The value `a` has in the example traced, without a guard."""
    return a.node.hint if isinstance(a, SymInt) else int(a)


def guard_int(a: Any) -> int:
    """`a` as a plain int, recording the guard that specialises it."""
    return int(a)


def _concrete(value: Any, values: dict[str, int]) -> Any:
    """`value` with every symbolic size evaluated for these symbol values."""
    if isinstance(value, SymInt):
        return value.node.expr.evaluate(values)
    if isinstance(value, Tensor):
        if not has_symbolic_sizes(value) and not any(isinstance(s, SymInt)
                                                      for s in value._strides):
            return value
        from pyaten.core.views import empty_tensor

        return empty_tensor(_concrete(tuple(value._sizes), values), value.dtype,
                            value.device, _concrete(tuple(value._strides), values))
    if isinstance(value, (list, tuple)):
        return type(value)(_concrete(v, values) for v in value)
    if isinstance(value, dict):
        return {k: _concrete(v, values) for k, v in value.items()}
    return value


def symbol_values(gm: Any, inputs: tuple) -> dict[str, int] | str:
    """The symbol values a call of the symbolic graph `gm` has, read from its inputs'
    sizes and strides (a string says why they do not fit the graph)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    pairs: list[tuple[Any, int]] = []
    for node, value in zip(placeholders, inputs):
        expected = node.meta.get("val")
        if isinstance(expected, Tensor) and isinstance(value, Tensor):
            pairs += zip(expected._sizes, value.shape)
            pairs += zip(expected._strides, value.stride())
        elif isinstance(expected, SymInt):
            pairs.append((expected, value))
    env = next((e.node.shape_env for e, _ in pairs if isinstance(e, SymInt)), None)
    if env is None:
        return {}
    return env.bind(pairs)


def specialize_graph(gm: Any, values: dict[str, int]) -> Any:
    """A copy of the symbolic graph `gm` for one set of symbol values: sizes read or
    computed (`sym_size.int`, arithmetic on sizes) become the numbers they are, and every
    node's `val`/`tensor_meta` gets concrete sizes (what a shape-specialising compiler
    reads)."""
    from pyaten.fx.graph import Graph
    from pyaten.fx.graph_module import GraphModule
    from pyaten.fx.node import Node, map_arg

    graph = Graph()
    env: dict[Node, Any] = {}

    def substitute(value: Any) -> Any:
        return _concrete(map_arg(value, env.__getitem__), values)

    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if node.op == "call_function" and isinstance(val, SymInt):
            env[node] = val.node.expr.evaluate(values)  # a size: a number in this copy
            continue
        new = graph.create_node(node.op, node.target, substitute(node.args),
                                substitute(node.kwargs), name=node.name)
        new.meta = {k: _concrete(v, values) for k, v in node.meta.items()}
        env[node] = new
    graph.eliminate_dead_code()
    return GraphModule({}, graph, class_name=type(gm).__name__)
