"""Differential tests of the pointwise binary and ternary operators against PyTorch.

One table (`OPS`) drives every test: each operator runs in pyaten and in torch on the same
inputs, for all twelve dtypes, several shapes (0-d, empty, broadcast, non-contiguous), each
variant PyTorch has (function, method, in-place, `out=`) and on meta tensors. Supported dtypes
compare values; unsupported ones compare the exception's kind and message. PyTorch's OpInfo
samples are a second source of cases; hypothesis varies the shapes.
"""

# ruff: noqa: B023 - the lambdas handed to run_both/assert_same_outcome run at once, in their
# loop iteration

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
from _helpers import (
    DTYPE_NAMES,
    assert_same,
    assert_same_outcome,
    from_torch,
    run_both,
    same_error,
    sample_arguments,
    to_pyaten,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

# --- making the same tensor in both libraries -------------------------------------------------


def _values(shape: tuple, dtype: str, seed: int, domain: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == "uint8":
        low = 1 if domain in ("nonzero", "positive") else 0
        return rng.integers(low, 12, size=shape).astype(np.uint8)
    if dtype.startswith("int"):
        if domain == "positive":
            return rng.integers(1, 9, size=shape).astype(dtype)
        values = rng.integers(-6, 7, size=shape)
        if domain == "nonzero":
            values[values == 0] = 3
        return values.astype(dtype)
    real = rng.standard_normal(size=shape) * 2
    if domain == "positive":
        real = np.abs(real) + 0.1
    if dtype.startswith("complex"):
        return (real + 1j * rng.standard_normal(size=shape)).astype(dtype)
    return real


def pair(shape: tuple, dtype: str, seed: int = 0, domain: str = "any"):
    """The same tensor as (pyaten, torch)."""
    values = _values(shape, dtype, seed, domain)
    t = torch.from_numpy(np.array(values)).to(getattr(torch, dtype))
    return from_torch(t), t


# --- the table ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One operator: how to call it and which variants PyTorch has."""

    name: str
    arity: int = 2
    kwargs: dict = field(default_factory=dict)
    method: bool = True
    inplace: bool = True
    out: bool = True
    domains: tuple = ("any", "any", "any")  # per operand: "any", "nonzero", "positive"
    first_bool: bool = False  # where: the first operand is a bool condition
    label: str = ""

    @property
    def id(self) -> str:
        return self.label or self.name


NZ = ("any", "nonzero", "any")
OPS = [
    Op("add"), Op("add", kwargs={"alpha": 2}, label="add-alpha"), Op("sub"),
    Op("subtract"), Op("mul"), Op("multiply"), Op("div"), Op("divide"), Op("true_divide"),
    Op("div", kwargs={"rounding_mode": "trunc"}, domains=NZ, label="div-trunc"),
    Op("div", kwargs={"rounding_mode": "floor"}, domains=NZ, label="div-floor"),
    Op("floor_divide", domains=NZ), Op("remainder", domains=NZ), Op("fmod", domains=NZ),
    Op("pow"), Op("float_power"), Op("atan2"), Op("arctan2"), Op("hypot"), Op("copysign"),
    Op("nextafter"), Op("ldexp"), Op("logaddexp", inplace=False),
    Op("logaddexp2", inplace=False), Op("maximum", inplace=False), Op("minimum", inplace=False),
    Op("fmax", inplace=False), Op("fmin", inplace=False), Op("eq"), Op("ne"), Op("lt"),
    Op("le"), Op("gt"), Op("ge"), Op("greater"), Op("greater_equal"), Op("less"),
    Op("less_equal"), Op("not_equal"), Op("logical_and"), Op("logical_or"), Op("logical_xor"),
    Op("bitwise_and"), Op("bitwise_or"), Op("bitwise_xor"), Op("bitwise_left_shift"),
    Op("bitwise_right_shift"), Op("gcd"), Op("lcm"), Op("heaviside"),
    Op("xlogy", domains=("any", "positive", "any")),
    Op("rsub", method=False, inplace=False, out=False),  # torch's binding has no out=
    Op("polar", method=False, inplace=False),
    Op("complex", method=False, inplace=False),
    Op("lerp", 3), Op("lerp", 2, kwargs={"weight": 0.25}, label="lerp-scalar"),
    Op("addcmul", 3), Op("addcmul", 3, kwargs={"value": 2}, label="addcmul-value"),
    Op("addcdiv", 3, domains=("any", "any", "nonzero")),
    Op("where", 3, first_bool=True, inplace=False),
    Op("isclose", inplace=False, out=False), Op("allclose", inplace=False, out=False),
    Op("equal", inplace=False, out=False),
]
OP_IDS = [op.id for op in OPS]

# (shapes of the operands; a view applied to both after making them)
SHAPES = {
    "0d": ((), (), ()),
    "same": ((3, 4), (3, 4), (3, 4)),
    "broadcast": ((2, 1, 4), (3, 1), (4,)),
    "empty": ((0, 4), (4,), (1, 4)),
    "noncontig": ((4, 3), (4, 3), (4, 3)),
}


def operands(op: Op, shape_name: str, dtype: str, seed: int = 0):
    shapes = SHAPES[shape_name]
    ours, theirs = [], []
    for i in range(op.arity):
        d = "bool" if op.first_bool and i == 0 else dtype
        p, t = pair(shapes[i], d, seed + i, op.domains[i])
        if shape_name == "noncontig":
            p, t = p.t(), t.t()
        ours.append(p)
        theirs.append(t)
    return ours, theirs


def complex_half(dtype: str, *scalars) -> bool:
    """float16 with a complex operand: PyTorch's result is complex32, which pyaten lacks."""
    return dtype == "float16" and any(isinstance(s, complex) for s in scalars)


def call(lib, op: Op, args, **extra):
    return getattr(lib, op.name)(*args, **op.kwargs, **extra)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


# --- every dtype, shape and variant -------------------------------------------------------------


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_function_and_method_every_dtype(op, shape):
    for dtype in DTYPE_NAMES:
        if op.name == "complex" and dtype == "float16":
            continue  # complex32: test_complex_of_float16
        ours, theirs = operands(op, shape, dtype)
        assert_same_outcome(lambda: call(pyaten, op, ours), lambda: call(torch, op, theirs))
        if op.method:
            assert_same_outcome(
                lambda: getattr(ours[0], op.name)(*ours[1:], **op.kwargs),
                lambda: getattr(theirs[0], op.name)(*theirs[1:], **op.kwargs),
            )


@pytest.mark.parametrize("op", [op for op in OPS if op.inplace], ids=lambda op: op.id)
def test_inplace_every_dtype(op):
    for dtype in DTYPE_NAMES:
        for shape in ("same", "0d", "noncontig", "broadcast"):
            ours, theirs = operands(op, shape, dtype)
            if shape == "broadcast":  # self must have the broadcast shape
                ours[0], theirs[0] = pair((3, 1, 4) if op.arity == 2 else (2, 3, 4), dtype, 7,
                                          op.domains[0])
            before = ours[0].clone()
            got = run_both(
                lambda: getattr(ours[0], op.name + "_")(*ours[1:], **op.kwargs),
                lambda: getattr(theirs[0], op.name + "_")(*theirs[1:], **op.kwargs),
            )
            if got is None:  # both refused: self is unchanged
                assert_same(ours[0], to_torch_like(before))
                continue
            assert got[0] is ours[0]
            assert_same(ours[0], theirs[0])


def to_torch_like(p) -> torch.Tensor:
    name = p.dtype.name
    if name in ("float16", "bfloat16"):
        return torch.from_numpy(p.to(pyaten.float32).numpy()).to(getattr(torch, name))
    return torch.from_numpy(p.numpy().copy())


@pytest.mark.parametrize("op", [op for op in OPS if op.out], ids=lambda op: op.id)
def test_out_every_dtype(op):
    for dtype in DTYPE_NAMES:
        if op.name == "complex" and dtype == "float16":
            continue  # complex32: test_complex_of_float16
        for shape in ("same", "broadcast", "empty"):
            ours, theirs = operands(op, shape, dtype)
            try:
                expected = _quiet(lambda: call(torch, op, theirs))
                out_dtype = str(expected.dtype).rpartition(".")[2]
            except Exception:  # noqa: BLE001 - the out= call must then raise alike
                out_dtype = "float32"
            p_out = pyaten.empty(0, dtype=getattr(pyaten, out_dtype))
            t_out = torch.empty(0, dtype=getattr(torch, out_dtype))
            got = run_both(lambda: call(pyaten, op, ours, out=p_out),
                           lambda: call(torch, op, theirs, out=t_out))
            if got is not None:
                assert got[0] is p_out
                assert_same(p_out, t_out)


@pytest.mark.parametrize("op", [op for op in OPS if op.out and op.arity == 2],
                         ids=lambda op: op.id)
def test_out_of_another_dtype(op):
    # The result is cast into `out` when the cast is safe; otherwise PyTorch's error.
    ours, theirs = operands(op, "same", "int32")
    for out_dtype in ("float64", "int16", "bool", "complex64"):
        p_out = pyaten.empty(3, 4, dtype=getattr(pyaten, out_dtype))
        t_out = torch.empty(3, 4, dtype=getattr(torch, out_dtype))
        got = run_both(lambda: call(pyaten, op, ours, out=p_out),
                       lambda: call(torch, op, theirs, out=t_out))
        if got is not None:  # computed in float32 (ulp-level differences), stored wider
            assert_same(p_out, t_out, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", [op for op in OPS if op.name not in ("allclose", "equal")],
                         ids=lambda op: op.id)
def test_meta_shapes_and_dtypes(op):
    # Where the CPU call succeeds, the meta call gives torch's meta shape and dtype (torch's
    # meta functions refuse some dtypes its CPU kernels refuse, others not: not compared).
    for dtype in DTYPE_NAMES:
        if op.name == "complex" and dtype == "float16":
            continue  # complex32: test_complex_of_float16
        ours, theirs = operands(op, "broadcast", dtype)
        try:
            result = _quiet(lambda: call(torch, op, theirs))
        except Exception:  # noqa: BLE001 - the CPU tests compare this error
            continue
        ours = [p.to("meta") for p in ours]
        theirs = [t.to("meta") for t in theirs]
        assert_same_outcome(lambda: call(pyaten, op, ours), lambda: call(torch, op, theirs))
        if op.out:  # an out= of the result's dtype is resized to the result's shape
            name = str(result.dtype).rpartition(".")[2]
            p_out = pyaten.empty(0, device="meta", dtype=getattr(pyaten, name))
            t_out = torch.empty(0, device="meta", dtype=result.dtype)
            assert_same_outcome(lambda: call(pyaten, op, ours, out=p_out),
                                lambda: call(torch, op, theirs, out=t_out))


# --- Python scalars -----------------------------------------------------------------------------

SCALAR_OPS = [
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
    "float_power", "copysign", "eq", "ne", "lt", "le", "gt", "ge", "greater", "less_equal",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
    "xlogy", "rsub", "subtract", "multiply", "divide",
]
REFLECTED_OPS = ["pow", "remainder", "float_power", "xlogy", "bitwise_and", "bitwise_or",
                 "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"]
SCALARS = [3, -2, 0.5, True, 1.5 - 2j]


@pytest.mark.parametrize("name", SCALAR_OPS)
def test_tensor_and_scalar(name):
    for dtype in DTYPE_NAMES:
        p, t = pair((2, 3), dtype, 3, "nonzero")
        for s in SCALARS:
            if complex_half(dtype, s):
                continue
            assert_same_outcome(lambda: getattr(pyaten, name)(p, s),
                                lambda: getattr(torch, name)(t, s))
            if hasattr(torch.Tensor, name + "_"):
                pc, tc = p.clone(), t.clone()
                got = run_both(lambda: getattr(pc, name + "_")(s),
                               lambda: getattr(tc, name + "_")(s))
                if got is not None:
                    assert_same(pc, tc)


@pytest.mark.parametrize("name", REFLECTED_OPS)
def test_scalar_and_tensor(name):
    for dtype in DTYPE_NAMES:
        p, t = pair((2, 3), dtype, 4, "positive")
        for s in SCALARS:
            if complex_half(dtype, s):
                continue
            assert_same_outcome(lambda: getattr(pyaten, name)(s, p),
                                lambda: getattr(torch, name)(s, t))


def test_python_operators():
    p, t = pair((2, 3), "int64", 5, "nonzero")
    q, u = pair((2, 3), "float32", 6)
    cases = [
        lambda a, b: a << 2, lambda a, b: a >> 1, lambda a, b: 2 << a, lambda a, b: a % 3,
        lambda a, b: a // 2, lambda a, b: 9 // a, lambda a, b: a ** 2, lambda a, b: 2 ** a,
        lambda a, b: a / b, lambda a, b: a - b, lambda a, b: 1 - a, lambda a, b: a & 6,
    ]
    for case in cases:
        assert_same_outcome(lambda: case(p, q), lambda: case(t, u))
    for name in ("__ilshift__", "__irshift__", "__imod__", "__ifloordiv__", "__ipow__"):
        pc, tc = p.clone(), t.clone()
        assert_same_outcome(lambda: getattr(pc, name)(2), lambda: getattr(tc, name)(2))
        assert_same(pc, tc)


# --- keyword arguments, overloads, errors -------------------------------------------------------


def test_keyword_arguments_and_defaults():
    (p, t), (q, u) = pair((3,), "float32", 1), pair((3,), "float32", 2)
    (w, v) = pair((3,), "float32", 8)
    cases = [
        lambda m, a, b, c: m.add(a, other=b, alpha=3),
        lambda m, a, b, c: m.sub(input=a, other=b, alpha=0.5),
        lambda m, a, b, c: m.div(a, b, rounding_mode=None),
        lambda m, a, b, c: m.lerp(a, end=b, weight=c),
        lambda m, a, b, c: m.lerp(a, b, weight=0.75),
        lambda m, a, b, c: m.addcmul(a, tensor1=b, tensor2=c, value=-1.5),
        lambda m, a, b, c: m.addcdiv(a, b, c, value=0.5),
        lambda m, a, b, c: m.isclose(a, b, rtol=0.5, atol=0.1, equal_nan=True),
        lambda m, a, b, c: m.allclose(a, a + 1e-9),
        lambda m, a, b, c: m.heaviside(a, values=b),
        lambda m, a, b, c: m.pow(a, exponent=2),
        lambda m, a, b, c: m.pow(self=2, exponent=a),
        lambda m, a, b, c: m.xlogy(self=2, other=c.abs()),
        lambda m, a, b, c: m.float_power(a, exponent=2),
        lambda m, a, b, c: m.polar(abs=a.abs(), angle=b),
        lambda m, a, b, c: m.complex(real=a, imag=b),
        lambda m, a, b, c: m.where(a > 0, input=a, other=b),
        lambda m, a, b, c: m.where(a > 0, a, 2.5),
        lambda m, a, b, c: m.where(a > 0, 1, 2.5),
    ]
    for case in cases:
        assert_same_outcome(lambda: case(pyaten, p, q, w), lambda: case(torch, t, u, v))


def test_integer_division_by_zero_raises_zero_division_error():
    p, t = pair((3,), "int64", 1)
    pz, tz = pyaten.zeros(3, dtype=pyaten.int64), torch.zeros(3, dtype=torch.int64)
    for name in ("remainder", "fmod", "floor_divide"):
        same_error(lambda: getattr(pyaten, name)(p, pz), lambda: getattr(torch, name)(t, tz))
        same_error(lambda: getattr(pyaten, name)(p, 0), lambda: getattr(torch, name)(t, 0))
    same_error(lambda: pyaten.div(p, pz, rounding_mode="trunc"),
               lambda: torch.div(t, tz, rounding_mode="trunc"))
    before = p.clone()
    same_error(lambda: p.fmod_(pz), lambda: t.clone().fmod_(tz))
    assert_same(p, to_torch_like(before))


def test_integer_pow_with_negative_exponent():
    p, t = pair((7,), "int64", 2)
    same_error(lambda: pyaten.pow(p, -1), lambda: torch.pow(t, -1))
    e, f = pyaten.tensor([-1, -2, 0, 3]), torch.tensor([-1, -2, 0, 3])
    b, c = pyaten.tensor([1, -1, 2, -2]), torch.tensor([1, -1, 2, -2])
    assert_same(pyaten.pow(b, e), torch.pow(c, f))
    assert_same(pyaten.pow(2, e), torch.pow(2, f))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("exponent", [0.5, -0.5, -1, 2, 3, -2, 0.3, 1.5])
def test_float_pow_scalar_special_values_as_torch(dtype, exponent):
    # which of sqrt/rsqrt/reciprocal/powf torch's kernel takes shows at -0.0 and -inf
    values = [-0.0, -np.inf, np.inf, 0.0, -2.0, 3.0, 0.7, np.nan]
    ours = pyaten.pow(pyaten.tensor(values, dtype=getattr(pyaten, dtype)), exponent)
    theirs = torch.pow(torch.tensor(values, dtype=getattr(torch, dtype)), exponent)
    a, b = ours.float().numpy(), theirs.float().numpy()
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(a, b)
    numbers = ~np.isnan(b)  # (a NaN's sign bit is the hardware's)
    np.testing.assert_array_equal(np.signbit(a)[numbers], np.signbit(b)[numbers])


def test_integer_overflow_wraps():
    cases = [("int8", 100, 3), ("uint8", 200, 2), ("int32", 2**30, 4), ("int64", 2**62, 4)]
    for dtype, a, b in cases:
        p, t = pyaten.tensor([a], dtype=getattr(pyaten, dtype)), torch.tensor(
            [a], dtype=getattr(torch, dtype))
        for name in ("mul", "add", "pow", "lcm", "bitwise_left_shift"):
            assert_same_outcome(lambda: getattr(pyaten, name)(p, b),
                                lambda: getattr(torch, name)(t, b))
        assert_same_outcome(lambda: pyaten.addcmul(p, p, p), lambda: torch.addcmul(t, t, t))


SPECIAL = [0.0, -0.0, 1.0, -1.5, float("inf"), float("-inf"), float("nan"), 2.5, 1e-30]


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin", "atan2", "copysign",
                                  "fmod", "remainder", "hypot", "nextafter", "logaddexp",
                                  "logaddexp2", "xlogy", "heaviside", "div", "floor_divide",
                                  "pow", "float_power", "isclose", "ldexp", "eq", "lt"])
def test_special_float_values(name):
    grid_a = np.repeat(np.array(SPECIAL), len(SPECIAL))
    grid_b = np.tile(np.array(SPECIAL), len(SPECIAL))
    for dtype in ("float32", "float64", "float16", "bfloat16"):
        t, u = (torch.from_numpy(g).to(getattr(torch, dtype)) for g in (grid_a, grid_b))
        p, q = to_pyaten(t), to_pyaten(u)
        got = run_both(lambda: getattr(pyaten, name)(p, q), lambda: getattr(torch, name)(t, u))
        if got is not None:
            assert_same(*got)
            if got[1].is_floating_point():  # the sign of zeros too (a NaN's sign is noise)
                ours, theirs = got[0].to(pyaten.float32).numpy(), got[1].float().numpy()
                real = ~np.isnan(theirs)
                if name in ("maximum", "minimum", "fmax", "fmin"):
                    # Of (0.0, -0.0) torch's vectorized loop returns the second operand and
                    # its scalar loop (tails, small tensors) the first: not compared.
                    real &= ~((t == 0) & (u == 0)).numpy()
                assert np.array_equal(np.signbit(ours[real]), np.signbit(theirs[real]))


def test_error_messages():
    f, g = pyaten.ones(2), torch.ones(2)
    i, j = pyaten.ones(2, dtype=pyaten.int64), torch.ones(2, dtype=torch.int64)
    c, d = pyaten.ones(2, dtype=pyaten.complex64), torch.ones(2, dtype=torch.complex64)
    cases = [
        lambda m, f, i, c: m.heaviside(f, i),
        lambda m, f, i, c: m.heaviside(c, c),
        lambda m, f, i, c: m.maximum(f, c),
        lambda m, f, i, c: m.fmin(c, c),
        lambda m, f, i, c: m.float_power(f, 2, out=m.empty(2)),
        lambda m, f, i, c: f.clone().float_power_(2),
        lambda m, f, i, c: m.polar(f, i),
        lambda m, f, i, c: m.polar(f, f.double()),
        lambda m, f, i, c: m.complex(f, f, out=m.empty(2)),
        lambda m, f, i, c: m.lerp(f, f.double(), 0.5),
        lambda m, f, i, c: m.lerp(f, f, f.double()),
        lambda m, f, i, c: m.lerp(f, f, 1j),
        lambda m, f, i, c: m.addcdiv(f, i, i),
        lambda m, f, i, c: m.addcmul(i, i, i, value=True),
        lambda m, f, i, c: m.isclose(f, i),
        lambda m, f, i, c: m.allclose(f, i),
        lambda m, f, i, c: m.isclose(f, f, rtol=-1.0),
        lambda m, f, i, c: m.isclose(f, f, atol=-1.0),
        lambda m, f, i, c: m.where(i, f, f),
        lambda m, f, i, c: m.logical_and(f, i, out=m.empty(2, dtype=m.int64)),
        lambda m, f, i, c: i.clone().logical_or_(f),
        lambda m, f, i, c: m.maximum(f, m.ones(3)),
        lambda m, f, i, c: m.div(f, f, rounding_mode="round"),
        lambda m, f, i, c: i.clone().ldexp_(i),
        lambda m, f, i, c: m.gcd(f, f),
    ]
    for case in cases:
        assert_same_outcome(lambda: case(pyaten, f, i, c), lambda: case(torch, g, j, d))


def test_complex_of_float16():
    (p, t), (q, u) = pair((2, 3), "float16", 1), pair((3,), "float16", 2)
    ours, theirs = _quiet(lambda: pyaten.complex(p, q)), torch.complex(t, u)
    assert ours.dtype.name == "complex32"
    assert_same(ours.to(pyaten.complex64), theirs.to(torch.complex64))
    assert _quiet(lambda: pyaten.complex(p.to("meta"), q.to("meta"))).dtype.name == "complex32"


def test_equal_and_allclose_return_python_bools():
    p, t = pair((3, 4), "float32", 1)
    q, u = pair((3, 4), "float32", 2)
    for a, b, x, y in ((p, p, t, t), (p, q, t, u), (p, p[:2], t, t[:2])):
        assert_same(pyaten.equal(a, b), torch.equal(x, y))
        assert_same(a.equal(b), x.equal(y))
        assert_same_outcome(lambda: pyaten.allclose(a, b), lambda: torch.allclose(x, y))
    n, m = pyaten.tensor([float("nan")]), torch.tensor([float("nan")])
    assert_same(pyaten.equal(n, n), torch.equal(m, m))
    assert_same(pyaten.allclose(n, n, equal_nan=True), torch.allclose(m, m, equal_nan=True))


def test_overlapping_inputs_and_outputs():
    p, t = pair((6,), "float32", 3)
    assert_same_outcome(lambda: pyaten.maximum(p[1:], p[:-1], out=p[:-1]),
                        lambda: torch.maximum(t[1:], t[:-1], out=t[:-1]), message=False)
    assert_same(p, t)
    q, u = pair((3,), "float32", 4)
    assert_same(pyaten.atan2(q.expand(2, 3), q), torch.atan2(u.expand(2, 3), u))
    pc, tc = q.clone(), u.clone()
    assert_same(pc.lerp_(pc, 0.5), tc.lerp_(tc, 0.5))


# --- PyTorch's OpInfo samples -------------------------------------------------------------------


@functools.cache
def _op_db():
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


OPINFO_NAMES = sorted({op.name for op in OPS} - {"polar", "complex"})


@pytest.mark.parametrize("name", OPINFO_NAMES)
def test_opinfo_samples(name):
    infos = [info for info in _op_db() if info.name == name and not info.variant_test_name]
    if not infos:
        pytest.skip(f"no OpInfo for {name}")
    info = infos[0]
    for dtype in (torch.float32, torch.int64, torch.bool, torch.complex64, torch.bfloat16):
        if dtype not in info.supported_dtypes("cpu"):
            continue
        for k, sample in enumerate(info.sample_inputs("cpu", dtype)):
            if k >= 12:
                break
            args, ours, kwargs = sample_arguments(sample)
            assert_same_outcome(lambda: getattr(pyaten, name)(*ours, **kwargs),
                                lambda: getattr(torch, name)(*args, **sample.kwargs))


# --- broadcasting, property-based ---------------------------------------------------------------

SHAPES_ST = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None)
@given(SHAPES_ST, SHAPES_ST, st.sampled_from(["maximum", "fmod", "atan2", "logical_xor",
                                               "xlogy", "lerp", "addcmul", "copysign"]))
def test_broadcasting_property(shape_a, shape_b, name):
    (p, t), (q, u) = pair(shape_a, "float32", 1), pair(shape_b, "float32", 2)
    args_p = (p, q, q) if name == "addcmul" else (p, q, 0.3) if name == "lerp" else (p, q)
    args_t = (t, u, u) if name == "addcmul" else (t, u, 0.3) if name == "lerp" else (t, u)
    assert_same_outcome(lambda: getattr(pyaten, name)(*args_p),
                        lambda: getattr(torch, name)(*args_t))
