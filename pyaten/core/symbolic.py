"""Symbolic sizes: `SymInt`, `SymFloat`, `SymBool` (PyTorch's `torch.SymInt`...).

Note: symbolic values carry a hint
    A symbolic size stands for "the batch size of input 0", not for 64. It holds an
    expression over size symbols (`s0`, `s1`...) and the value it has in the example being
    traced (its *hint*). Arithmetic builds new expressions, so a Meta kernel that computes an
    output size (`s0 * s1`, `s0 + s2`) on symbolic sizes produces symbolic sizes. Where a
    kernel or the traced program takes a decision (`if size == 1`, `max(size, 1)`), the
    comparison is answered with the hints and recorded as a *guard* by the `ShapeEnv` that
    owns the symbols (pyaten/fx/experimental/symbolic_shapes.py): the graph traced is valid
    for every size that answers the recorded comparisons the same way. Converting to a plain
    int (`int(s)`, `operator.index(s)`, a NumPy shape) specialises: it records the guard
    `s == hint`. Symbols stand for sizes of 2 or more (0 and 1 are specialised when a
    symbol is made), so comparisons such as `s0 >= 1` are answered without a guard.

Integer expressions are kept as polynomials with integer coefficients over *atoms*: a
symbol, or an opaque `//`, `%`, `max`, `min` of expressions. Two expressions that are the
same polynomial compare equal without a guard (`s0 * s1 == s1 * s0`). An expression prints
as Python source (`s0*s1 + 2`), which is how guards are evaluated later.
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

__all__ = ["SymBool", "SymFloat", "SymInt", "SymNode", "sym_float", "sym_int", "sym_max",
           "sym_min", "sym_not", "is_symbolic", "Poly"]

SYMBOL_MIN = 2  # the least value a size symbol stands for (0 and 1 are specialised)


class Poly:
    """An integer polynomial: {monomial: coefficient}, a monomial a sorted tuple of atom
    texts; `atoms` maps each atom's text to its value range kind ("symbol" or "opaque")."""

    __slots__ = ("terms", "atoms", "_text")

    def __init__(self, terms: dict[tuple, int], atoms: dict[str, str]) -> None:
        self.terms = {m: c for m, c in terms.items() if c != 0}
        self.atoms = atoms
        self._text: str | None = None

    @staticmethod
    def constant(value: int) -> Poly:
        return Poly({(): value}, {})

    @staticmethod
    def atom(text: str, kind: str) -> Poly:
        return Poly({(text,): 1}, {text: kind})

    def as_constant(self) -> int | None:
        if not self.terms:
            return 0
        if len(self.terms) == 1 and () in self.terms:
            return self.terms[()]
        return None

    def __add__(self, other: Poly) -> Poly:
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Poly(terms, {**self.atoms, **other.atoms})

    def scale(self, k: int) -> Poly:
        return Poly({m: c * k for m, c in self.terms.items()}, self.atoms)

    def __mul__(self, other: Poly) -> Poly:
        terms: dict[tuple, int] = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = tuple(sorted(m1 + m2))
                terms[m] = terms.get(m, 0) + c1 * c2
        return Poly(terms, {**self.atoms, **other.atoms})

    def key(self) -> tuple:
        return tuple(sorted(self.terms.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Poly) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = _poly_text(self)
        return self._text

    def __str__(self) -> str:
        return self.text

    def bounds(self) -> tuple[float, float]:
        """A range the value lies in, from symbols being >= SYMBOL_MIN (opaque atoms:
        unknown)."""
        if any(self.atoms[a] != "symbol" for m in self.terms for a in m):
            return (-math.inf, math.inf)
        low = high = self.terms.get((), 0)
        for m, c in self.terms.items():
            if not m:
                continue
            at_min = c * SYMBOL_MIN ** len(m)
            if c > 0:
                low += at_min
                high = math.inf
            else:
                high += at_min
                low = -math.inf
        return (low, high)

    def evaluate(self, env: dict[str, int]) -> int:
        """The value for these symbol values (an opaque atom's source compiled once)."""
        total = 0
        for monomial, coefficient in self.terms.items():
            value = coefficient
            for atom in monomial:
                if self.atoms.get(atom) == "symbol":
                    value *= env[atom]
                else:
                    code = _ATOM_CODE.get(atom)
                    if code is None:
                        code = _ATOM_CODE[atom] = compile(atom, "<symbolic size>", "eval")
                    value *= eval(code, _EVAL_GLOBALS, env)  # noqa: S307 - our own source
            total += value
        return total


_ATOM_CODE: dict[str, Any] = {}
_EVAL_GLOBALS: dict[str, Any] = {"__builtins__": {"max": max, "min": min}}


def _poly_text(p: Poly) -> str:
    if not p.terms:
        return "0"
    if len(p.terms) == 1:
        (monomial, coefficient), = p.terms.items()
        if coefficient == 1 and len(monomial) == 1:  # one atom: no parentheses around it
            return monomial[0]
    parts = []
    for m, c in sorted(p.terms.items(), key=lambda mc: (-len(mc[0]), mc[0])):
        factor = "*".join(a if p.atoms.get(a) == "symbol" else f"({a})" for a in m)
        if not m:
            parts.append(str(c))
        elif c == 1:
            parts.append(factor)
        elif c == -1:
            parts.append("-" + factor)
        else:
            parts.append(f"{c}*{factor}")
    text = parts[0]
    for part in parts[1:]:
        text += f" - {part[1:]}" if part.startswith("-") else f" + {part}"
    return text


class SymNode:
    """What a symbolic value holds: its expression, its hint and the ShapeEnv that records
    guards about it (Note: symbolic values carry a hint)."""

    __slots__ = ("expr", "hint", "shape_env")

    def __init__(self, expr: Any, hint: Any, shape_env: Any) -> None:
        self.expr = expr
        self.hint = hint
        self.shape_env = shape_env

    def __repr__(self) -> str:
        return str(self.expr)


def is_symbolic(value: object) -> bool:
    return isinstance(value, (SymInt, SymFloat, SymBool))


def _env_of(*values: object) -> Any:
    for v in values:
        if isinstance(v, (SymInt, SymFloat, SymBool)):
            return v.node.shape_env
    return None


def _int_poly(value: object) -> Poly | None:
    if isinstance(value, SymInt):
        return value.node.expr
    if value.__class__ is builtins.int or value.__class__ is builtins.bool:
        return Poly.constant(builtins.int(value))
    if isinstance(value, builtins.int):
        return Poly.constant(builtins.int(value))
    return None


def _hint(value: object) -> Any:
    return value.node.hint if isinstance(value, (SymInt, SymFloat, SymBool)) else value


def _make_int(expr: Poly, hint: int, env: Any) -> SymInt | int:
    constant = expr.as_constant()
    if constant is not None:
        return constant
    return SymInt(SymNode(expr, hint, env))


def _text(value: object) -> str:
    if isinstance(value, SymInt):
        return value.node.expr.text
    if isinstance(value, (SymFloat, SymBool)):
        return value.node.expr
    return repr(value)


def _exact_quotient(a: Poly, b: Poly) -> Poly | None:
    """`a / b` when `b` is one positive term over symbols that divides every term of `a`
    (then `//` is exact and `%` is 0 for every value of the symbols), else None."""
    if len(b.terms) != 1:
        return None
    (divisor, c), = b.terms.items()
    if c <= 0 or any(b.atoms[atom] != "symbol" for atom in divisor):
        return None
    terms: dict[tuple, int] = {}
    for monomial, coefficient in a.terms.items():
        if coefficient % c:
            return None
        rest = list(monomial)
        for atom in divisor:
            if atom not in rest:
                return None
            rest.remove(atom)
        terms[tuple(rest)] = terms.get(tuple(rest), 0) + coefficient // c
    return Poly(terms, a.atoms)


def _opaque_int(op: str, a: object, b: object) -> Any:
    env = _env_of(a, b)
    hint = {"//": operator.floordiv, "%": operator.mod, "max": max, "min": min}[op](
        _hint(a), _hint(b))
    pa, pb = _int_poly(a), _int_poly(b)
    if pa is not None and pb is not None:
        ca, cb = pa.as_constant(), pb.as_constant()
        if ca is not None and cb is not None:
            return hint
        quotient = _exact_quotient(pa, pb) if op in ("//", "%") else None
        if quotient is not None:  # `s0*s1 // s0` is `s1`, and `s0*s1 % s0` is 0
            return _make_int(quotient, hint, env) if op == "//" else 0
        if op in ("max", "min") and pa == pb:
            return a
    if op in ("max", "min"):
        diff = _int_poly(a) + _int_poly(b).scale(-1)
        low, high = diff.bounds()
        if low >= 0:
            return a if op == "max" else b
        if high <= 0:
            return b if op == "max" else a
        text = f"{op}({_text(a)}, {_text(b)})"
    else:
        text = f"{_paren(a)} {op} {_paren(b)}"
    if env is not None:  # how to compute it again (make_fx rebuilds it from its parts)
        env.opaque.setdefault(text, (op, a, b))
    return _make_int(Poly.atom(text, "opaque"), hint, env)


def _paren(value: object) -> str:
    text = _text(value)
    return text if text.isidentifier() or text.lstrip("-").isdigit() else f"({text})"


def _compare(op: str, a: object, b: object) -> Any:
    """`a op b` on symbolic integers (or floats): a SymBool, or a bool when the answer
    does not depend on the symbols."""
    env = _env_of(a, b)
    hint = _COMPARISONS[op](_hint(a), _hint(b))
    pa, pb = _int_poly(a), _int_poly(b)
    if pa is not None and pb is not None:
        diff = pa + pb.scale(-1)
        constant = diff.as_constant()
        if constant is not None:
            return _COMPARISONS[op](constant, 0)
        low, high = diff.bounds()
        decided = _decide(op, low, high)
        if decided is not None:
            return decided
        text = f"{diff.text} {op} 0"
        return SymBool(SymNode(text, hint, env))
    return SymBool(SymNode(f"{_paren(a)} {op} {_paren(b)}", hint, env))


def _decide(op: str, low: float, high: float) -> bool | None:
    """The answer of `x op 0` for every x in [low, high], or None."""
    if op == "==":
        return False if low > 0 or high < 0 else None
    if op == "!=":
        return True if low > 0 or high < 0 else None
    if op == "<":
        return True if high < 0 else False if low >= 0 else None
    if op == "<=":
        return True if high <= 0 else False if low > 0 else None
    if op == ">":
        return True if low > 0 else False if high <= 0 else None
    if op == ">=":
        return True if low >= 0 else False if high < 0 else None
    return None


_COMPARISONS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
                ">": operator.gt, ">=": operator.ge}


def _guard_bool(node: SymNode) -> bool:
    env = node.shape_env
    if env is not None:
        env.record_guard(node.expr, bool(node.hint))
    return bool(node.hint)


class SymInt:
    """A symbolic integer (a size or a value computed from sizes); see the Note at the top
    of this module."""

    __slots__ = ("node",)

    def __init__(self, node: SymNode) -> None:
        self.node = node

    # --- arithmetic: new expressions
    def _arith(self, other: object, op: str, reflected: bool = False) -> Any:
        if isinstance(other, (float, SymFloat)):
            a = SymFloat._of(self)
            return getattr(a, ("__r" if reflected else "__") + op + "__")(other)
        po = _int_poly(other)
        if po is None:
            return NotImplemented
        mine = self.node.expr
        a, b = (po, mine) if reflected else (mine, po)
        ha, hb = (_hint(other), self.node.hint) if reflected else (self.node.hint,
                                                                   _hint(other))
        if op == "add":
            return _make_int(a + b, ha + hb, self.node.shape_env)
        if op == "sub":
            return _make_int(a + b.scale(-1), ha - hb, self.node.shape_env)
        if op == "mul":
            return _make_int(a * b, ha * hb, self.node.shape_env)
        x, y = (other, self) if reflected else (self, other)
        return _opaque_int({"floordiv": "//", "mod": "%"}[op], x, y)

    def __add__(self, other: object) -> Any:
        return self._arith(other, "add")

    def __radd__(self, other: object) -> Any:
        return self._arith(other, "add", True)

    def __sub__(self, other: object) -> Any:
        return self._arith(other, "sub")

    def __rsub__(self, other: object) -> Any:
        return self._arith(other, "sub", True)

    def __mul__(self, other: object) -> Any:
        return self._arith(other, "mul")

    def __rmul__(self, other: object) -> Any:
        return self._arith(other, "mul", True)

    def __floordiv__(self, other: object) -> Any:
        return self._arith(other, "floordiv")

    def __rfloordiv__(self, other: object) -> Any:
        return self._arith(other, "floordiv", True)

    def __mod__(self, other: object) -> Any:
        return self._arith(other, "mod")

    def __rmod__(self, other: object) -> Any:
        return self._arith(other, "mod", True)

    def __divmod__(self, other: object) -> Any:
        return (self // other, self % other)

    def __rdivmod__(self, other: object) -> Any:
        return (other // self, other % self)

    def __truediv__(self, other: object) -> Any:
        return SymFloat._of(self) / other

    def __rtruediv__(self, other: object) -> Any:
        return other / SymFloat._of(self)

    def __pow__(self, other: object) -> Any:
        if not isinstance(other, (builtins.int, builtins.float, SymInt, SymFloat)):
            return NotImplemented  # a tensor exponent: Tensor.__rpow__ takes the int as is
        if isinstance(other, builtins.int) and other >= 0:
            result: Any = 1
            for _ in range(other):
                result = result * self
            return result
        return SymFloat._of(self) ** other

    def __neg__(self) -> Any:
        return _make_int(self.node.expr.scale(-1), -self.node.hint, self.node.shape_env)

    def __pos__(self) -> SymInt:
        return self

    def __abs__(self) -> Any:
        low, _ = self.node.expr.bounds()
        return self if low >= 0 else sym_max(self, -self)

    # --- comparisons: SymBool (a guard when a Python decision reads one)
    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        if not isinstance(other, (builtins.int, builtins.float, SymInt, SymFloat)):
            return NotImplemented
        return _compare("==", self, other)

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        if not isinstance(other, (builtins.int, builtins.float, SymInt, SymFloat)):
            return NotImplemented
        return _compare("!=", self, other)

    def __lt__(self, other: object) -> Any:
        return _compare("<", self, other)

    def __le__(self, other: object) -> Any:
        return _compare("<=", self, other)

    def __gt__(self, other: object) -> Any:
        return _compare(">", self, other)

    def __ge__(self, other: object) -> Any:
        return _compare(">=", self, other)

    def __hash__(self) -> int:
        # by expression: equal expressions are equal without a guard (caches keyed by shape)
        return hash(("SymInt", id(self.node.shape_env), self.node.expr.key()))

    # --- leaving the symbolic world: a guard that specialises to the hint
    def __bool__(self) -> bool:
        return builtins.bool(_compare("!=", self, 0))

    def __index__(self) -> int:
        env = self.node.shape_env
        if env is not None:
            env.record_guard(f"{self.node.expr.text} == {self.node.hint}", True)
        return self.node.hint

    __int__ = __index__

    def __float__(self) -> float:
        return float(self.__index__())

    def __round__(self, ndigits: int | None = None) -> Any:
        return self

    def __trunc__(self) -> Any:
        return self

    def __floor__(self) -> Any:
        return self

    def __ceil__(self) -> Any:
        return self

    def __repr__(self) -> str:
        return self.node.expr.text

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(self.node.expr.text, spec) if spec else self.node.expr.text

    def __sym_max__(self, other: object) -> Any:
        return _opaque_int("max", self, other)

    def __sym_min__(self, other: object) -> Any:
        return _opaque_int("min", self, other)

    def is_integer(self) -> bool:
        return True


class SymFloat:
    """A symbolic float: an expression in Python source over the size symbols."""

    __slots__ = ("node",)

    def __init__(self, node: SymNode) -> None:
        self.node = node

    @staticmethod
    def _of(value: object) -> Any:
        if isinstance(value, SymFloat):
            return value
        if isinstance(value, SymInt):
            return SymFloat(SymNode(_paren(value), float(value.node.hint),
                                    value.node.shape_env))
        return float(value)  # type: ignore[arg-type]

    def _arith(self, other: object, symbol: str, fn: Any, reflected: bool = False) -> Any:
        if not isinstance(other, (builtins.int, builtins.float, SymInt, SymFloat)):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        return SymFloat(SymNode(f"{_paren(a)} {symbol} {_paren(b)}", fn(_hint(a), _hint(b)),
                                _env_of(a, b)))

    def __add__(self, o: object) -> Any:
        return self._arith(o, "+", operator.add)

    def __radd__(self, o: object) -> Any:
        return self._arith(o, "+", operator.add, True)

    def __sub__(self, o: object) -> Any:
        return self._arith(o, "-", operator.sub)

    def __rsub__(self, o: object) -> Any:
        return self._arith(o, "-", operator.sub, True)

    def __mul__(self, o: object) -> Any:
        return self._arith(o, "*", operator.mul)

    def __rmul__(self, o: object) -> Any:
        return self._arith(o, "*", operator.mul, True)

    def __truediv__(self, o: object) -> Any:
        return self._arith(o, "/", operator.truediv)

    def __rtruediv__(self, o: object) -> Any:
        return self._arith(o, "/", operator.truediv, True)

    def __pow__(self, o: object) -> Any:
        return self._arith(o, "**", operator.pow)

    def __neg__(self) -> Any:
        return SymFloat(SymNode(f"-{_paren(self)}", -self.node.hint, self.node.shape_env))

    def __eq__(self, o: object) -> Any:  # type: ignore[override]
        return _compare("==", self, o)

    def __ne__(self, o: object) -> Any:  # type: ignore[override]
        return _compare("!=", self, o)

    def __lt__(self, o: object) -> Any:
        return _compare("<", self, o)

    def __le__(self, o: object) -> Any:
        return _compare("<=", self, o)

    def __gt__(self, o: object) -> Any:
        return _compare(">", self, o)

    def __ge__(self, o: object) -> Any:
        return _compare(">=", self, o)

    def __hash__(self) -> int:
        return hash(("SymFloat", self.node.expr))

    def __float__(self) -> float:
        env = self.node.shape_env
        if env is not None:
            env.record_guard(f"{self.node.expr} == {self.node.hint!r}", True)
        return self.node.hint

    def __bool__(self) -> bool:
        return builtins.bool(_compare("!=", self, 0.0))

    def __repr__(self) -> str:
        return self.node.expr

    def is_integer(self) -> bool:
        return builtins.bool(self.node.hint == math.floor(self.node.hint))


class SymBool:
    """A symbolic truth value: reading it in Python (`if`, `bool()`) records a guard."""

    __slots__ = ("node",)

    def __init__(self, node: SymNode) -> None:
        self.node = node

    def __bool__(self) -> bool:
        return _guard_bool(self.node)

    def __invert__(self) -> SymBool:
        return SymBool(SymNode(f"not ({self.node.expr})", not self.node.hint,
                               self.node.shape_env))

    def _logic(self, other: object, word: str, fn: Any) -> Any:
        if isinstance(other, builtins.bool):
            return (self if other else False) if word == "and" else (True if other else self)
        if not isinstance(other, SymBool):
            return NotImplemented
        return SymBool(SymNode(f"({self.node.expr}) {word} ({other.node.expr})",
                               fn(self.node.hint, other.node.hint), self.node.shape_env))

    def __and__(self, o: object) -> Any:
        return self._logic(o, "and", lambda a, b: a and b)

    __rand__ = __and__

    def __or__(self, o: object) -> Any:
        return self._logic(o, "or", lambda a, b: a or b)

    __ror__ = __or__

    def __hash__(self) -> int:
        return hash(("SymBool", self.node.expr))

    def __repr__(self) -> str:
        return self.node.expr


def sym_max(a: Any, b: Any) -> Any:
    """`max` that stays symbolic (PyTorch's `torch.sym_max`)."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        if isinstance(a, (float, SymFloat)) or isinstance(b, (float, SymFloat)):
            return builtins.max(a, b)
        return _opaque_int("max", a, b)
    return builtins.max(a, b)


def sym_min(a: Any, b: Any) -> Any:
    """`min` that stays symbolic (PyTorch's `torch.sym_min`)."""
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        if isinstance(a, (float, SymFloat)) or isinstance(b, (float, SymFloat)):
            return builtins.min(a, b)
        return _opaque_int("min", a, b)
    return builtins.min(a, b)


def sym_int(a: Any) -> Any:
    """`int(a)` that keeps a SymInt symbolic (PyTorch's `torch.sym_int`)."""
    if isinstance(a, SymInt):
        return a
    return builtins.int(a)


def sym_float(a: Any) -> Any:
    """`float(a)` that keeps a symbolic value symbolic (PyTorch's `torch.sym_float`)."""
    if isinstance(a, (SymInt, SymFloat)):
        return SymFloat._of(a)
    return builtins.float(a)


def sym_not(a: Any) -> Any:
    """`not a` that keeps a SymBool symbolic (PyTorch's `torch.sym_not`)."""
    if isinstance(a, SymBool):
        return ~a
    return not a
