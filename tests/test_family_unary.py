"""Differential tests of the pointwise unary math operators against PyTorch.

One table (`OPS`) drives the tests: each operator runs in pyaten and in torch on the same
inputs, for all twelve dtypes, several shapes (0-d, empty, non-contiguous, a broadcasting
`out=`), each variant PyTorch has (function, method, in-place, `out=`) and on meta tensors.
Supported dtypes compare values; unsupported ones compare the exception's kind and message.
PyTorch's OpInfo samples are a second source of cases; hypothesis varies values and shapes.
The clamp family, relu, round(decimals) and logit(eps) have their own tests below the table.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pytest
import torch
from _helpers import (
    DTYPE_NAMES,
    TOLERANCES,
    assert_same,
    assert_same_outcome,
    opinfo_samples,
    run_both,
    same_error,
    sample_arguments,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

# --- the same tensor in both libraries ------------------------------------------------------


def _values(shape: tuple, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == "uint8":
        return rng.integers(0, 12, size=shape).astype(np.uint8)
    if dtype.startswith("int"):
        return rng.integers(-6, 7, size=shape).astype(dtype)
    real = rng.standard_normal(size=shape) * 1.5
    if dtype.startswith("complex"):
        return (real + 1j * rng.standard_normal(size=shape)).astype(dtype)
    return real


def from_torch(t: torch.Tensor):
    """A torch tensor's values as a new pyaten tensor."""
    name = str(t.dtype).rpartition(".")[2]
    if t.dtype in (torch.float16, torch.bfloat16):
        return pyaten.from_numpy(t.detach().float().numpy().copy()).to(getattr(pyaten, name))
    # (a clone: .numpy() makes a torch storage non-resizable)
    return pyaten.from_numpy(t.detach().clone().resolve_conj().numpy()).clone()


def to_torch(p) -> torch.Tensor:
    name = p.dtype.name
    if name in ("float16", "bfloat16"):
        return torch.from_numpy(p.to(pyaten.float32).numpy()).to(getattr(torch, name))
    return torch.from_numpy(p.numpy().copy())


def pair(shape: tuple, dtype: str, seed: int = 0, values: np.ndarray | None = None):
    """The same tensor as (pyaten, torch)."""
    if values is None:
        values = _values(shape, dtype, seed)
    t = torch.from_numpy(np.array(values)).to(getattr(torch, dtype)).clone()  # resizable
    return from_torch(t), t


SHAPES = {"0d": (), "2d": (3, 4), "empty": (0, 3), "noncontig": (4, 3)}


def operand(shape_name: str, dtype: str, seed: int = 0):
    p, t = pair(SHAPES[shape_name], dtype, seed)
    if shape_name == "noncontig":
        p, t = p.t(), t.t()
    return p, t


# --- the table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One operator: its name, extra arguments, and which variants PyTorch has."""

    name: str
    kwargs: dict = field(default_factory=dict)
    method: bool = True
    inplace: bool = True
    out: bool = True
    label: str = ""

    @property
    def id(self) -> str:
        return self.label or self.name


_NAMES = (
    "abs absolute neg negative positive sign sgn signbit ceil floor round trunc fix frac exp "
    "exp2 expm1 log log2 log10 log1p sqrt rsqrt square reciprocal sin cos tan asin acos atan "
    "arcsin arccos arctan sinh cosh tanh asinh acosh atanh arcsinh arccosh arctanh sigmoid "
    "logit deg2rad rad2deg bitwise_not logical_not relu"
).split()
_NO_INPLACE = {"positive", "signbit"}
_NO_OUT = {"positive", "relu"}
OPS = [Op(n, inplace=n not in _NO_INPLACE, out=n not in _NO_OUT) for n in _NAMES] + [
    Op("round", {"decimals": 2}, label="round-decimals"),
    Op("round", {"decimals": -1}, label="round-decimals-neg"),
    Op("logit", {"eps": 0.2}, label="logit-eps"),
    Op("clamp", {"min": -0.5, "max": 1}, label="clamp"),
    Op("clamp", {"min": 1}, label="clamp-min-only"),
    Op("clamp", {"max": 2}, label="clamp-max-only"),
    Op("clip", {"min": -1, "max": 1.5}, label="clip"),
    Op("clamp_min", {"min": 0}, label="clamp_min"),
    Op("clamp_max", {"max": 0.5}, label="clamp_max"),
]
OP_IDS = [op.id for op in OPS]
# PyTorch has no in-place/out variant of `positive`, and `round.decimals` only by keyword.


def call(lib, op: Op, x, **extra):
    return getattr(lib, op.name)(x, **op.kwargs, **extra)


def method(x, name: str, *args, **kwargs):
    return getattr(x, name)(*args, **kwargs)


def on_clone(x, name: str, *args, **kwargs):
    """An in-place method on a copy of `x` (the test's operand stays as it was)."""
    return getattr(x.clone(), name)(*args, **kwargs)


# --- every dtype, shape and variant ---------------------------------------------------------


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_function_and_method_every_dtype_and_shape(op):
    for shape in SHAPES:
        for dtype in DTYPE_NAMES:
            ours, theirs = operand(shape, dtype)
            assert_same_outcome(partial(call, pyaten, op, ours), partial(call, torch, op, theirs))
            if op.method:
                assert_same_outcome(
                    partial(method, ours, op.name, **op.kwargs),
                    partial(method, theirs, op.name, **op.kwargs),
                )


@pytest.mark.parametrize("op", [op for op in OPS if op.inplace], ids=lambda op: op.id)
def test_inplace_every_dtype(op):
    for dtype in DTYPE_NAMES:
        for shape in ("2d", "0d", "noncontig"):
            ours, theirs = operand(shape, dtype)
            before = ours.clone()
            version = ours._version
            got = run_both(
                partial(method, ours, op.name + "_", **op.kwargs),
                partial(method, theirs, op.name + "_", **op.kwargs),
            )
            if got is None:  # both refused: self is unchanged
                assert_same(ours, to_torch(before))
                continue
            assert got[0] is ours
            assert ours._version > version
            assert_same(ours, theirs)


@pytest.mark.parametrize("op", [op for op in OPS if op.out], ids=lambda op: op.id)
def test_out_every_dtype(op):
    for dtype in DTYPE_NAMES:
        ours, theirs = operand("2d", dtype)
        for out_dtype in (dtype, "float32", "complex64"):
            # an empty out is resized; a wrongly shaped non-empty one warns and is resized
            for out_shape in ((0,), (2,)):
                out_p, out_t = pair(out_shape, out_dtype, 5)
                got = run_both(
                    partial(call, pyaten, op, ours, out=out_p),
                    partial(call, torch, op, theirs, out=out_t),
                )
                if got is not None:
                    assert got[0] is out_p
                    # values of a half-precision op keep its precision in a wider out
                    tolerance = TOLERANCES.get(dtype, (None, None))
                    assert_same(out_p, out_t, *tolerance)


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_meta_tensors_give_torchs_shape_and_dtype(op):
    for dtype in DTYPE_NAMES:
        for shape in ((2, 3), (0, 4)):
            ours = pyaten.empty(shape, dtype=getattr(pyaten, dtype), device="meta")
            theirs = torch.empty(shape, dtype=getattr(torch, dtype), device="meta")
            cpu = torch.empty(shape, dtype=getattr(torch, dtype))
            _same_on_meta(partial(call, pyaten, op, ours), partial(call, torch, op, theirs),
                          partial(call, torch, op, cpu))


def _same_on_meta(fn_ours, fn_theirs, fn_theirs_cpu) -> None:
    """Where torch's meta function gives a result, ours gives the same shape and dtype, or
    refuses the input as torch's CPU kernel does (torch's Python meta functions skip some of
    the checks its C++ meta functions make: complex clamp, bool relu, ...)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            theirs = fn_theirs()
        except Exception:  # noqa: BLE001 - torch refuses on meta: the CPU tests cover it
            return
        try:
            ours = fn_ours()
        except Exception:  # noqa: BLE001
            same_error(fn_ours, fn_theirs_cpu)
            return
        assert_same(ours, theirs)


# --- values PyTorch treats specially --------------------------------------------------------

_SPECIAL = [math.nan, -0.0, 0.0, -math.inf, math.inf, 0.5, -0.5, 1.0, -1.0, 1.5, 2.5, -2.5,
            1e-30, 88.0, -88.0, 1e10]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_special_float_values(op, dtype):
    ours, theirs = pair((len(_SPECIAL),), dtype, values=np.array(_SPECIAL))
    pair_ = run_both(lambda: call(pyaten, op, ours), lambda: call(torch, op, theirs))
    if pair_ is None:
        return
    got, expected = pair_
    assert_same(got, expected)
    if expected.dtype.is_floating_point:  # the sign of zero is part of the value
        zeros = expected == 0
        assert to_torch(got)[zeros].signbit().tolist() == expected[zeros].signbit().tolist()


_COMPLEX_SPECIAL = [0j, 1 + 0j, -1 + 0j, 1j, -1j, 0.5 + 0.5j, -2 - 3j, 3 + 4j]


@pytest.mark.parametrize("op", OPS, ids=OP_IDS)
def test_complex_values(op):
    for dtype in ("complex64", "complex128"):
        ours, theirs = pair((len(_COMPLEX_SPECIAL),), dtype, values=np.array(_COMPLEX_SPECIAL))
        assert_same_outcome(partial(call, pyaten, op, ours), partial(call, torch, op, theirs))


def test_integer_edges_wrap_like_torch():
    for dtype in ("uint8", "int8", "int16", "int32", "int64"):
        info = np.iinfo(dtype)
        values = np.array([info.min, info.max, 0, -1 if info.min < 0 else 1], dtype)
        ours, theirs = pair((4,), dtype, values=values)
        for name in ("abs", "neg", "sign", "square", "bitwise_not", "ceil", "relu"):
            assert_same_outcome(partial(getattr(pyaten, name), ours),
                                partial(getattr(torch, name), theirs))


# --- PyTorch's OpInfo samples ---------------------------------------------------------------


@functools.cache
def _op_infos() -> dict:
    from torch.testing._internal.common_methods_invocations import op_db

    wanted = set(_NAMES) | {"clamp", "clamp_min", "clamp_max", "clip", "round"}
    return {(info.name, info.variant_test_name): info for info in op_db if info.name in wanted}


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_opinfo_samples(dtype):
    checked = 0
    for (name, _variant), info in sorted(_op_infos().items()):
        if getattr(torch, dtype) not in info.dtypes:
            continue
        samples = opinfo_samples(info, getattr(torch, dtype))
        for sample in samples[:: max(1, len(samples) // 6)]:  # a few per operator
            theirs, ours, kwargs = sample_arguments(sample)
            assert_same_outcome(
                partial(getattr(pyaten, name), *ours, **kwargs),
                partial(getattr(torch, name), *theirs, **sample.kwargs),
                rtol=1e-4, atol=1e-5,
            )
            checked += 1
    assert checked > 40


# --- hypothesis: values and shapes ----------------------------------------------------------

_HYPOTHESIS_OPS = ["exp", "log1p", "sigmoid", "tanh", "sign", "round", "frac", "rsqrt", "relu",
                   "atan", "expm1", "sgn"]


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.floats(-1e4, 1e4, width=32), st.sampled_from([math.nan, math.inf, -math.inf])),
        min_size=0, max_size=12,
    ),
    name=st.sampled_from(_HYPOTHESIS_OPS),
    dtype=st.sampled_from(["float32", "float64", "float16"]),
)
def test_hypothesis_float_values(values, name, dtype):
    ours, theirs = pair((len(values),), dtype, values=np.array(values, np.float64))
    # float16: one ulp apart is the same (PyTorch's vectorised half loops round differently,
    # e.g. rsqrt(22.0)); the default half tolerance allows exactly that
    assert_same_outcome(partial(getattr(pyaten, name), ours),
                        partial(getattr(torch, name), theirs),
                        rtol=None if dtype == "float16" else 2e-5)


# --- clamp ----------------------------------------------------------------------------------

_BOUNDS = [(-1, 1), (0.5, None), (None, 2), (1, 0), (math.nan, None), (None, math.nan),
           (0, math.nan), (True, False), (-1.5, 2.5), (300, None), (-1, 200), (1e6, None),
           (1e40, None), (2 + 1j, None), (None, None), (-0.0, 0.0)]


@pytest.mark.parametrize("bounds", _BOUNDS, ids=str)
def test_clamp_scalar_bounds_every_dtype(bounds):
    low, high = bounds
    for dtype in DTYPE_NAMES:
        ours, theirs = operand("2d", dtype)
        assert_same_outcome(partial(pyaten.clamp, ours, low, high),
                            partial(torch.clamp, theirs, low, high))
        assert_same_outcome(partial(method, ours, "clip", low, high),
                            partial(method, theirs, "clip", low, high))
        assert_same_outcome(partial(on_clone, ours, "clamp_", low, high),
                            partial(on_clone, theirs, "clamp_", low, high))
        out_p, out_t = pair((0,), dtype, 1)
        assert_same_outcome(partial(pyaten.clamp, ours, low, high, out=out_p),
                            partial(torch.clamp, theirs, low, high, out=out_t))
        for name, bound in (("clamp_min", low), ("clamp_max", high)):
            if bound is None:
                continue
            assert_same_outcome(partial(getattr(pyaten, name), ours, bound),
                                partial(getattr(torch, name), theirs, bound))
            assert_same_outcome(partial(on_clone, ours, name + "_", bound),
                                partial(on_clone, theirs, name + "_", bound))


_TENSOR_BOUNDS = {
    "both": ((4,), (3, 1)),
    "min": ((4,), None),
    "max": (None, (1, 4)),
    "none": (None, None),
    "0d": ((), ()),
}


@pytest.mark.parametrize("which", list(_TENSOR_BOUNDS))
def test_clamp_tensor_bounds_every_dtype(which):
    low_shape, high_shape = _TENSOR_BOUNDS[which]
    for dtype in DTYPE_NAMES:
        for bound_dtype in {dtype, "float32", "int64"}:
            ours, theirs = operand("2d", dtype)
            low = pair(low_shape, bound_dtype, 3) if low_shape is not None else (None, None)
            high = pair(high_shape, bound_dtype, 4) if high_shape is not None else (None, None)
            assert_same_outcome(partial(pyaten.clamp, ours, low[0], high[0]),
                                partial(torch.clamp, theirs, low[1], high[1]))
            assert_same_outcome(partial(method, ours, "clip", low[0], high[0]),
                                partial(method, theirs, "clip", low[1], high[1]))
            assert_same_outcome(partial(on_clone, ours, "clamp_", low[0], high[0]),
                                partial(on_clone, theirs, "clamp_", low[1], high[1]))
            out_p, out_t = pair((0,), dtype, 1)
            assert_same_outcome(partial(pyaten.clip, ours, low[0], high[0], out=out_p),
                                partial(torch.clip, theirs, low[1], high[1], out=out_t))
            if low_shape is not None:
                assert_same_outcome(partial(pyaten.clamp_min, ours, low[0]),
                                    partial(torch.clamp_min, theirs, low[1]))
                assert_same_outcome(partial(on_clone, ours, "clamp_min_", low[0]),
                                    partial(on_clone, theirs, "clamp_min_", low[1]))
            if high_shape is not None:
                assert_same_outcome(partial(pyaten.clamp_max, ours, high[0]),
                                    partial(torch.clamp_max, theirs, high[1]))


def test_clamp_nan_and_signed_zero_like_torch():
    # 7 elements: PyTorch's scalar loops, whose ties keep self's zero (its vectorized loop
    # for the one-bound Tensor overloads returns the bound's)
    values = np.array([math.nan, -0.0, 0.0, -1.0, 1.0, math.inf, -math.inf])
    ours, theirs = pair(values.shape, "float32", values=values)
    cases = [
        (lambda lib, x: lib.clamp(x, 0.0, 0.0)), (lambda lib, x: lib.clamp(x, -0.0)),
        (lambda lib, x: lib.clamp_min(x, 0.0)), (lambda lib, x: lib.clamp_max(x, -0.0)),
        (lambda lib, x: lib.relu(x)),
    ]
    for bound in (0.0, -0.0, math.nan):
        for lib_call in ("min", "max", "both", "clamp_min", "clamp_max"):
            cases.append(_tensor_bound_case(bound, lib_call))
    for case in cases:
        got, expected = case(pyaten, ours), case(torch, theirs)
        assert_same(got, expected)
        zeros = expected == 0
        assert to_torch(got)[zeros].signbit().tolist() == expected[zeros].signbit().tolist()


def _tensor_bound_case(bound: float, which: str):
    def case(lib, x):
        b = lib.full((), bound)
        if which == "min":
            return lib.clamp(x, b)
        if which == "max":
            return lib.clamp(x, None, b)
        if which == "both":
            return lib.clamp(x, b, b)
        return getattr(lib, which)(x, b)

    return case


def test_clamp_keyword_names_and_errors():
    ours, theirs = operand("2d", "float32")
    assert_same(pyaten.clamp(ours, max=0.5), torch.clamp(theirs, max=0.5))
    assert_same(ours.clamp(min=-0.5), theirs.clamp(min=-0.5))
    assert_same(pyaten.clamp_min(ours, min=0.1), torch.clamp_min(theirs, min=0.1))
    assert_same(pyaten.clamp_max(ours, max=0.1), torch.clamp_max(theirs, max=0.1))
    same_error(lambda: pyaten.clamp(ours), lambda: torch.clamp(theirs))
    same_error(lambda: ours.clamp_(None, None), lambda: theirs.clamp_(None, None))
    same_error(lambda: pyaten.clamp(ours, pyaten.ones(5)),
               lambda: torch.clamp(theirs, torch.ones(5)))
    # a lower-dtype self refuses the promoted in-place result; self stays as it was
    ints, ints_t = operand("2d", "int64")
    before = ints.clone()
    same_error(lambda: ints.clamp_(0.5), lambda: ints_t.clone().clamp_(0.5))
    same_error(lambda: ints.clamp_(pyaten.tensor(0.5)),
               lambda: ints_t.clone().clamp_(torch.tensor(0.5)))
    assert_same(ints, to_torch(before))


# --- relu, round(decimals), logit(eps) ------------------------------------------------------


def test_relu_keeps_negative_zero_and_nan():
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        ours, theirs = pair((len(_SPECIAL),), dtype, values=np.array(_SPECIAL))
        got, expected = pyaten.relu(ours), torch.relu(theirs)
        assert_same(got, expected)
        zeros = expected == 0
        assert to_torch(got)[zeros].signbit().tolist() == expected[zeros].signbit().tolist()
        assert ours.relu_() is ours
        assert_same(ours, theirs.relu_())


@pytest.mark.parametrize("decimals", [0, 1, 3, -1, -2, 8])
def test_round_decimals_values(decimals):
    values = np.array([1.2345, -1.2355, 1234.5, 0.125, -0.5, 2.5, 1e10, -7.25e-3, math.nan])
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        ours, theirs = pair(values.shape, dtype, values=values)
        assert_same_outcome(partial(pyaten.round, ours, decimals=decimals),
                            partial(torch.round, theirs, decimals=decimals))
        assert_same_outcome(partial(on_clone, ours, "round_", decimals=decimals),
                            partial(on_clone, theirs, "round_", decimals=decimals))


@pytest.mark.parametrize("eps", [None, 0.0, 1e-6, 0.25, -1.0, 0.5, 0.75])
def test_logit_eps(eps):
    values = np.array([0.0, 1.0, 0.5, 0.1, 0.9, -0.5, 1.5, math.nan])
    for dtype in ("float16", "bfloat16", "float32", "float64", "int64"):
        ours, theirs = pair(values.shape, dtype, values=values)
        assert_same_outcome(partial(pyaten.logit, ours, eps), partial(torch.logit, theirs, eps))
        assert_same_outcome(partial(method, ours, "logit", eps=eps),
                            partial(method, theirs, "logit", eps=eps))


def test_out_and_inplace_errors_leave_tensors_unchanged():
    ours, theirs = operand("2d", "float32")
    for name in ("abs", "floor", "sign", "signbit", "exp", "logical_not", "round"):
        out_p, out_t = pair((3, 4), "int32", 2)
        before = out_p.clone()
        assert_same_outcome(partial(getattr(pyaten, name), ours, out=out_p),
                            partial(getattr(torch, name), theirs, out=out_t))
        if not torch.equal(to_torch(before), out_t):
            continue  # torch wrote: so did we (compared above)
        assert_same(out_p, to_torch(before))


def test_operators_and_aliases_share_results():
    ours, theirs = operand("2d", "float32")
    assert_same(-ours, -theirs)
    assert_same(abs(ours), abs(theirs))
    assert_same(+ours, +theirs)
    bools, bools_t = operand("2d", "bool")
    assert_same(~bools, ~bools_t)
    same_error(lambda: -bools, lambda: -bools_t)
    same_error(lambda: +bools, lambda: +bools_t)
