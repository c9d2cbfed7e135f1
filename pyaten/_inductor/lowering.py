"""The pointwise operators the fusing backend writes as scalar expressions.

Each entry maps an ATen overload to a function from its arguments (the names of the scalar
values of tensor arguments, or Python numbers) to the source of one scalar expression; a
fused loop evaluates one such expression per operator per element. An entry returns None
for arguments it does not cover (a rounding mode, an approximate gelu it lacks), and the
node then runs its own kernel. The formulas are the operators' definitions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["POINTWISE", "expression"]

_SQRT1_2 = repr(1 / math.sqrt(2))
_INV_SQRT_2PI = repr(1 / math.sqrt(2 * math.pi))


def _num(value: Any) -> str | None:
    if isinstance(value, bool):
        return "1.0" if value else "0.0"
    if isinstance(value, (int, float)):
        if math.isnan(value):
            return "math.nan"
        if math.isinf(value):
            return "math.inf" if value > 0 else "-math.inf"
        return repr(float(value))
    return None


def _binary(fmt: str) -> Callable[..., str | None]:
    def lower(a: Any, b: Any, **_: Any) -> str | None:
        return fmt.format(a=a, b=b)
    return lower


def _unary(fmt: str) -> Callable[..., str | None]:
    def lower(a: Any, **_: Any) -> str | None:
        return fmt.format(a=a)
    return lower


def _add(a: str, b: str, alpha: Any = 1, **_: Any) -> str | None:
    return f"({a} + {b})" if alpha == 1 else f"({a} + {_num(alpha)} * {b})"


def _sub(a: str, b: str, alpha: Any = 1, **_: Any) -> str | None:
    return f"({a} - {b})" if alpha == 1 else f"({a} - {_num(alpha)} * {b})"


def _div(a: str, b: str, rounding_mode: Any = None, **_: Any) -> str | None:
    return f"({a} / {b})" if rounding_mode is None else None


def _pow(a: str, exponent: str, **_: Any) -> str | None:
    if exponent == "2.0":
        return f"({a} * {a})"
    if exponent == "1.0":
        return a
    if exponent == "0.5":
        return f"math.sqrt({a})"
    return f"({a} ** {exponent})"


def _clamp(a: str, lo: str | None = None, hi: str | None = None, **_: Any) -> str | None:
    out = a
    if lo is not None and lo != "None":
        out = f"({lo} if {out} < {lo} else {out})"
    if hi is not None and hi != "None":
        out = f"({hi} if {out} > {hi} else {out})"
    return out


def _gelu(a: str, approximate: str = "none", **_: Any) -> str | None:
    if approximate != "none":
        return None
    return f"(0.5 * {a} * (1.0 + math.erf({a} * {_SQRT1_2})))"


def _gelu_backward(g: str, a: str, approximate: str = "none", **_: Any) -> str | None:
    if approximate != "none":
        return None
    return (f"({g} * (0.5 * (1.0 + math.erf({a} * {_SQRT1_2})) + {a} * "
            f"{_INV_SQRT_2PI} * math.exp(-0.5 * {a} * {a})))")


def _leaky(a: str, slope: str = "0.01", **_: Any) -> str | None:
    return f"({a} if {a} > 0.0 else {a} * {slope})"


def _threshold_backward(g: str, a: str, threshold: str, **_: Any) -> str | None:
    return f"(0.0 if {a} <= {threshold} else {g})"


def _max(a: str, b: str, **_: Any) -> str | None:
    return f"({a} if ({a} > {b} or {a} != {a}) else {b})"


def _min(a: str, b: str, **_: Any) -> str | None:
    return f"({a} if ({a} < {b} or {a} != {a}) else {b})"


_IDENTITY = _unary("{a}")

# Left out: sin and cos, whose scalar libm calls are the slowest (see TRANSCENDENTAL).

# keyed by the overload's name (`add.Tensor`): no operator handle is built at import
POINTWISE: dict[str, Callable[..., str | None]] = {
    "add.Tensor": _add, "add.Scalar": _add,
    "sub.Tensor": _sub, "sub.Scalar": _sub,
    "rsub.Scalar": lambda a, b, alpha=1, **_: _sub(b, a, alpha),
    "mul.Tensor": _binary("({a} * {b})"), "mul.Scalar": _binary("({a} * {b})"),
    "div.Tensor": _div, "div.Scalar": _div,
    "neg.default": _unary("(-{a})"),
    "exp.default": _unary("math.exp({a})"),
    "expm1.default": _unary("math.expm1({a})"),
    "log.default": _unary("math.log({a})"),
    "log1p.default": _unary("math.log1p({a})"),
    # libm's scalar tanh is slow in a loop; expm1 keeps small arguments exact
    "tanh.default": _unary("_tanh({a})"),
    "sqrt.default": _unary("math.sqrt({a})"),
    "rsqrt.default": _unary("(1.0 / math.sqrt({a}))"),
    "reciprocal.default": _unary("(1.0 / {a})"),
    "abs.default": _unary("abs({a})"),
    "erf.default": _unary("math.erf({a})"),
    "sigmoid.default": _unary("(1.0 / (1.0 + math.exp(-{a})))"),
    "silu.default": _unary("({a} / (1.0 + math.exp(-{a})))"),
    "relu.default": _unary("(0.0 if {a} <= 0.0 else {a})"),
    "gelu.default": _gelu,
    "gelu_backward.default": _gelu_backward,
    "leaky_relu.default": _leaky,
    "pow.Tensor_Scalar": _pow,
    "clamp.default": _clamp,
    "clamp_min.default": lambda a, lo, **_: _clamp(a, lo),
    "clamp_max.default": lambda a, hi, **_: _clamp(a, None, hi),
    "maximum.default": _max,
    "minimum.default": _min,
    "threshold_backward.default": _threshold_backward,
    "tanh_backward.default": _binary("({a} * (1.0 - {b} * {b}))"),
    "sigmoid_backward.default": _binary("({a} * {b} * (1.0 - {b}))"),
    "detach.default": _IDENTITY,
    "alias.default": _IDENTITY,
    "clone.default": _IDENTITY,
}


# Operators calling libm per element (exp, log, tanh, erf...): a Numba loop runs them through
# scalar libm calls, which is slower than NumPy's SIMD loops on this kind of CPU, so by default
# they run their own kernel between fused loops; `FUSE_TRANSCENDENTALS = True` fuses them too.
FUSE_TRANSCENDENTALS = False
TRANSCENDENTAL = frozenset({
    "exp.default", "expm1.default", "log.default", "log1p.default",
    "tanh.default", "erf.default", "sigmoid.default", "silu.default",
    "gelu.default", "gelu_backward.default",
})


def expression(target: Any, args: list[Any], kwargs: dict[str, Any]) -> str | None:
    """The scalar expression for one call (`args`: value names or numbers), or None."""
    if getattr(target, "namespace", None) != "aten":
        return None
    name = target.__name__
    lower = POINTWISE.get(name)
    if lower is None or (name in TRANSCENDENTAL and not FUSE_TRANSCENDENTALS):
        return None
    if name == "clone.default" and kwargs.get("memory_format") is not None:
        return None
    names = [a if isinstance(a, str) else "None" if a is None else _num(a) for a in args]
    if any(n is None for n in names):
        return None
    schema = target._schema
    extra = {}
    for arg in schema.arguments[len(args):]:
        if arg.name in kwargs:
            value = kwargs[arg.name]
            extra[arg.name] = value if isinstance(value, str) and arg.name in (
                "approximate", "rounding_mode") or value is None else _num(value)
            if extra[arg.name] is None and value is not None:
                return None
    if name in ("add.Tensor", "add.Scalar", "sub.Tensor", "sub.Scalar", "rsub.Scalar") and \
            "alpha" in kwargs:
        extra["alpha"] = kwargs["alpha"]
    return lower(*names, **extra)
