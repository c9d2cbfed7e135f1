"""Gradients of the binary, ternary, comparison, bitwise and where operators against torch.

`GRAD_SURFACE` drives PyTorch's OpInfo float64 samples through both libraries
(`tests/_grad_helpers.py`); `SECOND_ORDER` compares the gradients' gradients too. The
hand-written cases below cover what the OpInfos leave out: Scalar overloads, reversed
operands, in-place variants on non-leaves, non-contiguous and broadcast inputs, complex
inputs, the special points of pow/xlogy/copysign/maximum, the operators whose derivative
PyTorch leaves unimplemented, and out= with an input that requires grad.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from _grad_helpers import check_grads, check_opinfo_grads, opinfo_grad_cases, run_grad_sample
from _helpers import from_torch, same_error

import pyaten

# OpInfo names whose gradients are compared here.
GRAD_SURFACE = frozenset("""
div true_divide rsub remainder fmod pow float_power atan2 hypot copysign
where maximum minimum fmax fmin nextafter ldexp logaddexp logaddexp2 xlogy
lerp addcmul addcdiv complex polar
""".split())

# Second order (the gradient of the gradient) compared too.
SECOND_ORDER = GRAD_SURFACE

# OpInfo variants left out, with the reason.
NOT_YET: dict[tuple[str, str], str] = {
    ("where", ""): "the OpInfo's op takes (self, condition, other): hand-written cases below",
}

# Samples per OpInfo (keeps the module within its time budget).
MAX_SAMPLES = 64


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_gradients_match_torch(info) -> None:
    check_opinfo_grads(info, info.name in SECOND_ORDER, limit=MAX_SAMPLES)


# --- hand-written cases --------------------------------------------------------------------

def _randn(*shape, seed=0, complex_=False, low=None):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape)
    if complex_:
        values = values + 1j * rng.standard_normal(shape)
    if low is not None:
        values = np.abs(values) + low
    return torch.from_numpy(values)


SCALAR_CASES = {
    "add.Scalar": lambda lib: (lambda a: lib.add(a, 2.5, alpha=3)),
    "sub.Scalar": lambda lib: (lambda a: lib.sub(a, 2.5, alpha=-2)),
    "mul.Scalar": lambda lib: (lambda a: lib.mul(a, -1.5)),
    "div.Scalar": lambda lib: (lambda a: lib.div(a, 4.0)),
    "div.Scalar_mode.trunc": lambda lib: (lambda a: lib.div(a, 0.7, rounding_mode="trunc")),
    "div.Scalar_mode.floor": lambda lib: (lambda a: lib.div(a, 0.7, rounding_mode="floor")),
    "div.Scalar_mode.none": lambda lib: (lambda a: lib.div(a, 0.7, rounding_mode=None)),
    "rsub.Scalar": lambda lib: (lambda a: lib.rsub(a, 2.0, alpha=3)),
    "rsub.Tensor": lambda lib: (lambda a: lib.rsub(a, a * 2, alpha=0.5)),
    "radd": lambda lib: (lambda a: 2.0 + a),
    "rsub": lambda lib: (lambda a: 2.0 - a),
    "rmul": lambda lib: (lambda a: 3.0 * a),
    "rdiv": lambda lib: (lambda a: 3.0 / a),
    "rpow": lambda lib: (lambda a: 1.7 ** a),
    "remainder.Scalar": lambda lib: (lambda a: lib.remainder(a, 0.8)),
    "fmod.Scalar": lambda lib: (lambda a: lib.fmod(a, 0.8)),
    "pow.Tensor_Scalar": lambda lib: (lambda a: lib.pow(a, 3)),
    "pow.Tensor_Scalar.half": lambda lib: (lambda a: lib.pow(a * a + 0.1, 0.5)),
    "pow.Tensor_Scalar.zero": lambda lib: (lambda a: lib.pow(a, 0)),
    "pow.Tensor_Scalar.neg": lambda lib: (lambda a: lib.pow(a, -2)),
    "pow.Scalar": lambda lib: (lambda a: lib.pow(2.5, a)),
    "pow.Scalar.zero_base": lambda lib: (lambda a: lib.pow(0.0, a)),
    "pow.Scalar.int_base": lambda lib: (lambda a: lib.pow(3, a)),
    "copysign.Scalar": lambda lib: (lambda a: lib.copysign(a, -1.0)),
    "copysign.Scalar.pos": lambda lib: (lambda a: lib.copysign(a, 2)),
}


@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_scalar_overloads(name) -> None:
    make = SCALAR_CASES[name]
    x = _randn(3, 4, seed=1)
    check_grads(make(pyaten), make(torch), [x], second_order=True)


def test_pow_special_points() -> None:
    # exponent 0 (also at self = 0), self = 0 with positive and negative exponents
    base = torch.tensor([0.0, 0.0, 0.0, 2.0, -1.5, 0.5], dtype=torch.float64)
    exponent = torch.tensor([0.0, 2.0, -1.0, 0.0, 3.0, -0.5], dtype=torch.float64)
    check_grads(lambda a, b: pyaten.pow(a, b), lambda a, b: torch.pow(a, b),
                [base, exponent], second_order=False)
    check_grads(lambda b: pyaten.pow(0.0, b), lambda b: torch.pow(0.0, b), [exponent])
    check_grads(lambda a: pyaten.pow(a, 0.0), lambda a: torch.pow(a, 0.0), [base])


MORE_SCALAR_CASES = {
    "xlogy.Scalar_Self": lambda lib: (lambda a: lib.xlogy(2.0, a * a + 0.5)),
    "xlogy.Scalar_Other": lambda lib: (lambda a: lib.xlogy(a, 3.0)),
    "xlogy.Scalar_Other.neg": lambda lib: (lambda a: lib.xlogy(a * (a > 0), -1.0)),
    "lerp.Scalar": lambda lib: (lambda a: lib.lerp(a, a * a, 0.3)),
    "addcmul.value": lambda lib: (lambda a: lib.addcmul(a, a.t(), a, value=-0.5)),
    "addcdiv.value": lambda lib: (lambda a: lib.addcdiv(a, a.t(), a * a + 1, value=2)),
    "max.binary": lambda lib: (lambda a: lib.max(a, a.t())),
    "min.binary": lambda lib: (lambda a: lib.min(a, a.t())),
    "true_divide.Scalar": lambda lib: (lambda a: lib.true_divide(a, 3)),
    "float_power.Scalar": lambda lib: (lambda a: lib.float_power(2, a)),
    "float_power.Tensor_Scalar": lambda lib: (lambda a: lib.float_power(a, 3)),
    "where.ScalarOther": lambda lib: (lambda a: lib.where(a > 0, a, 0.5)),
    "where.ScalarSelf": lambda lib: (lambda a: lib.where(a > 0, -1.0, a)),
}


@pytest.mark.parametrize("name", sorted(MORE_SCALAR_CASES))
def test_more_scalar_overloads(name) -> None:
    make = MORE_SCALAR_CASES[name]
    x = _randn(4, 4, seed=2)
    check_grads(make(pyaten), make(torch), [x], second_order=True)


# In-place variants on non-leaves: `method_(x.clone() ...)`; the formulas that read `self`
# must see its value from before the write.
INPLACE_CASES = {
    "add_": lambda a, b: a.add_(b, alpha=2),
    "add_.Scalar": lambda a, b: a.add_(1.5),
    "sub_": lambda a, b: a.sub_(b, alpha=0.5),
    "mul_": lambda a, b: a.mul_(b),
    "mul_.Scalar": lambda a, b: a.mul_(3),
    "div_": lambda a, b: a.div_(b),
    "div_.trunc": lambda a, b: a.div_(b, rounding_mode="trunc"),
    "div_.Scalar_mode": lambda a, b: a.div_(0.3, rounding_mode="floor"),
    "pow_.Tensor": lambda a, b: a.abs_().add_(0.5).pow_(b),
    "pow_.Scalar": lambda a, b: a.pow_(3),
    "remainder_": lambda a, b: a.remainder_(b),
    "fmod_": lambda a, b: a.fmod_(b),
    "fmod_.Scalar": lambda a, b: a.fmod_(0.7),
    "atan2_": lambda a, b: a.atan2_(b),
    "hypot_": lambda a, b: a.hypot_(b),
    "copysign_": lambda a, b: a.copysign_(b),
    "copysign_.Scalar": lambda a, b: a.copysign_(-2.0),
    "nextafter_": lambda a, b: a.nextafter_(b),
    "ldexp_": lambda a, b: a.ldexp_(b),
    "xlogy_": lambda a, b: a.xlogy_(b * b + 0.1),
    "xlogy_.Scalar_Other": lambda a, b: a.xlogy_(2.5),
    "lerp_.Scalar": lambda a, b: a.lerp_(b, 0.25),
    "lerp_.Tensor": lambda a, b: a.lerp_(b, b * b),
    "addcmul_": lambda a, b: a.addcmul_(b, b, value=2),
    "addcdiv_": lambda a, b: a.addcdiv_(b, b * b + 1, value=0.5),
}


# The formulas of these read `self`; the engine hands them a copy of `self` taken before the
# write without its history (runtime.original), so their second order is not compared yet.
INPLACE_FIRST_ORDER_ONLY = frozenset({
    "atan2_", "copysign_", "copysign_.Scalar", "div_", "hypot_", "lerp_.Tensor", "mul_",
    "pow_.Scalar", "pow_.Tensor", "xlogy_",
})


@pytest.mark.parametrize("name", sorted(INPLACE_CASES))
def test_inplace_on_non_leaf(name) -> None:
    op = INPLACE_CASES[name]

    def call(a, b):
        return op(a.clone() * 1, b)

    check_grads(call, call, [_randn(3, 4, seed=3), _randn(3, 4, seed=4)],
                second_order=name not in INPLACE_FIRST_ORDER_ONLY)


# Non-contiguous (transposed, strided) and broadcast operands.
LAYOUT_CASES = {
    "add": lambda lib: (lambda a, b: lib.add(a.t(), b[::2], alpha=-1.5)),
    "sub": lambda lib: (lambda a, b: lib.sub(a.t(), b[::2])),
    "mul": lambda lib: (lambda a, b: lib.mul(a.t(), b[::2])),
    "div": lambda lib: (lambda a, b: lib.div(a.t(), b[::2] * b[::2] + 1)),
    "pow": lambda lib: (lambda a, b: lib.pow(a.t() * a.t() + 0.5, b[::2])),
    "atan2": lambda lib: (lambda a, b: lib.atan2(a.t(), b[::2])),
    "hypot": lambda lib: (lambda a, b: lib.hypot(a.t(), b[::2])),
    "maximum": lambda lib: (lambda a, b: lib.maximum(a.t(), b[::2])),
    "logaddexp": lambda lib: (lambda a, b: lib.logaddexp(a.t(), b[::2])),
    "xlogy": lambda lib: (lambda a, b: lib.xlogy(a.t(), b[::2] * b[::2] + 0.1)),
    "where": lambda lib: (lambda a, b: lib.where(a.t() > 0, a.t(), b[::2])),
    "lerp": lambda lib: (lambda a, b: lib.lerp(a.t(), b[::2], a.t() * b[::2])),
    "addcmul": lambda lib: (lambda a, b: lib.addcmul(a.t(), b[::2], a.t(), value=3)),
    "broadcast.add": lambda lib: (lambda a, b: lib.add(a[:, :1], b[:1, :], alpha=2)),
    "broadcast.mul": lambda lib: (lambda a, b: lib.mul(a[:, :1], b[:1, :])),
    "broadcast.div": lambda lib: (lambda a, b: lib.div(a[:, :1], b[0, 0] + 3)),
    "broadcast.pow": lambda lib: (lambda a, b: lib.pow(a[:, :1] * a[:, :1] + 1, b[:1, :])),
    "broadcast.where": lambda lib: (lambda a, b: lib.where(a[:1, :] > 0, a[:, :1], b[0, 0])),
    "broadcast.maximum": lambda lib: (lambda a, b: lib.maximum(a[:, :1], b[:1, :])),
    "broadcast.addcdiv": lambda lib: (
        lambda a, b: lib.addcdiv(a[0, 0], a[:, :1], b[:1, :] * b[:1, :] + 1)),
    "broadcast.lerp": lambda lib: (lambda a, b: lib.lerp(a[:, :1], b[:1, :], a[0, 0])),
}


@pytest.mark.parametrize("name", sorted(LAYOUT_CASES))
def test_layouts(name) -> None:
    make = LAYOUT_CASES[name]
    check_grads(make(pyaten), make(torch), [_randn(4, 3, seed=5), _randn(6, 4, seed=6)],
                second_order=True)


# Complex inputs (and real inputs meeting complex ones: the real part of the gradient).
COMPLEX_CASES = {
    "add": lambda lib: (lambda a, b: lib.add(a, b, alpha=2 - 1j)),
    "sub": lambda lib: (lambda a, b: lib.sub(a, b, alpha=0.5j)),
    "rsub": lambda lib: (lambda a, b: lib.rsub(a, b, alpha=1 + 1j)),
    "mul": lambda lib: (lambda a, b: a * b),
    "mul.Scalar": lambda lib: (lambda a, b: lib.ops.aten.mul.Scalar(a, 2 + 3j)),
    "div": lambda lib: (lambda a, b: a / b),
    "div.Scalar": lambda lib: (lambda a, b: lib.ops.aten.div.Scalar(a, 1 - 2j)),
    "pow": lambda lib: (lambda a, b: lib.pow(a, b)),
    "pow.Tensor_Scalar": lambda lib: (lambda a, b: lib.pow(a, 2.5 - 1j)),
    "pow.Scalar": lambda lib: (lambda a, b: lib.pow(1.5 + 0.5j, b)),
    "where": lambda lib: (lambda a, b: lib.where(a.real > 0, a, b)),
    "logaddexp": lambda lib: (lambda a, b: lib.logaddexp(a, b)),
    "lerp.Scalar": lambda lib: (lambda a, b: lib.lerp(a, b, 0.5 + 0.25j)),
    "lerp.Tensor": lambda lib: (lambda a, b: lib.lerp(a, b, a * b)),
    "addcmul": lambda lib: (lambda a, b: lib.addcmul(a, b, a, value=1 - 1j)),
    "addcdiv": lambda lib: (lambda a, b: lib.addcdiv(a, a, b, value=2j)),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex(name) -> None:
    make = COMPLEX_CASES[name]
    inputs = [_randn(3, 4, seed=7, complex_=True), _randn(3, 4, seed=8, complex_=True)]
    check_grads(make(pyaten), make(torch), inputs, second_order=True)


REAL_TO_COMPLEX_CASES = {
    "mul": lambda lib: (lambda a, b: a * b),
    "div": lambda lib: (lambda a, b: a / b),
    "add": lambda lib: (lambda a, b: lib.add(a, b, alpha=2)),
    "addcmul": lambda lib: (lambda a, b: lib.addcmul(b, a, b)),
    "pow.Tensor_Scalar": lambda lib: (lambda a, b: lib.pow(a * a + 0.5, 1 + 1j) * b),
    "complex": lambda lib: (lambda a, b: lib.complex(a, a * a) * b),
}


@pytest.mark.parametrize("name", sorted(REAL_TO_COMPLEX_CASES))
def test_real_meets_complex(name) -> None:
    make = REAL_TO_COMPLEX_CASES[name]
    inputs = [_randn(3, 4, seed=9), _randn(3, 4, seed=10, complex_=True)]
    check_grads(make(pyaten), make(torch), inputs)


def test_special_points() -> None:
    x = torch.tensor([0.0, 0.0, 1.5, -2.0, 3.0, 0.0], dtype=torch.float64)
    y = torch.tensor([-1.0, 2.0, 1.5, -2.0, 1.0, 0.0], dtype=torch.float64)
    for name in ("xlogy", "copysign", "maximum", "minimum", "fmax", "fmin", "nextafter",
                 "remainder", "fmod", "atan2", "hypot"):
        check_grads(getattr(pyaten, name), getattr(torch, name), [x, y])
    nan = torch.tensor([float("nan"), 1.0, float("nan"), 2.0], dtype=torch.float64)
    other = torch.tensor([1.0, float("nan"), float("nan"), 2.0], dtype=torch.float64)
    for name in ("fmax", "fmin", "maximum", "minimum"):
        check_grads(getattr(pyaten, name), getattr(torch, name), [nan, other])


def test_igamma_other() -> None:
    a = _randn(3, 4, seed=11, low=0.5)
    x = _randn(3, 4, seed=12, low=0.2)

    def ours(x_):
        return pyaten.igamma(from_torch(a), x_), pyaten.igammac(from_torch(a), x_)

    def theirs(x_):
        return torch.igamma(a, x_), torch.igammac(a, x_)

    check_grads(ours, theirs, [x], rtol=1e-6)


@pytest.mark.parametrize("name", ["igamma", "igammac", "heaviside", "floor_divide",
                                  "floor_divide.Scalar", "remainder.Scalar_Tensor"])
def test_derivative_not_implemented(name) -> None:
    calls = {
        "igamma": lambda lib, a: lib.igamma(a, a.detach() + 1),
        "igammac": lambda lib, a: lib.igammac(a, a.detach() + 1),
        "heaviside": lambda lib, a: lib.heaviside(a, a),
        "floor_divide": lambda lib, a: lib.floor_divide(a, a.detach() + 1),
        "floor_divide.Scalar": lambda lib, a: lib.floor_divide(a, 2),
        "remainder.Scalar_Tensor": lambda lib, a: lib.remainder(2.0, a),
    }
    a_t = (_randn(3, seed=13, low=0.5)).requires_grad_(True)
    a_o = from_torch(a_t.detach()).requires_grad_(True)
    r_t = calls[name](torch, a_t)
    r_o = calls[name](pyaten, a_o)
    assert r_o.requires_grad and r_t.requires_grad
    with pytest.raises(RuntimeError):  # torch: RuntimeError or NotImplementedError
        r_t.sum().backward()
    op = name.split(".")[0]
    with pytest.raises(NotImplementedError, match=f"derivative for '(aten::)?{op}"):
        r_o.sum().backward()


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                                  "logical_or", "logical_xor"])
def test_comparisons_carry_no_gradient(name) -> None:
    x = from_torch(_randn(3, seed=14)).requires_grad_(True)
    y = from_torch(_randn(3, seed=15)).requires_grad_(True)
    fn = getattr(pyaten, name)
    for result in (fn(x, y), fn(x, 0.5) if name[0] != "l" else fn(x, y.detach())):
        assert not result.requires_grad and result.grad_fn is None
    assert pyaten.equal(x, x) is True
    assert pyaten.allclose(x, y) is False


OUT_CASES = {
    "add": lambda lib, a, b, o: lib.add(a, b, out=o),
    "sub": lambda lib, a, b, o: lib.sub(a, b, out=o),
    "mul": lambda lib, a, b, o: lib.mul(a, b, out=o),
    "div": lambda lib, a, b, o: lib.div(a, b, out=o),
    "div.mode": lambda lib, a, b, o: lib.div(a, b, rounding_mode="floor", out=o),
    "pow": lambda lib, a, b, o: lib.pow(a, b, out=o),
    "pow.Tensor_Scalar": lambda lib, a, b, o: lib.pow(a, 2, out=o),
    "pow.Scalar": lambda lib, a, b, o: lib.pow(2, a, out=o),
    "atan2": lambda lib, a, b, o: lib.atan2(a, b, out=o),
    "maximum": lambda lib, a, b, o: lib.maximum(a, b, out=o),
    "xlogy": lambda lib, a, b, o: lib.xlogy(a, b, out=o),
    "where": lambda lib, a, b, o: lib.where(b > 0, a, b, out=o),
    "lerp": lambda lib, a, b, o: lib.lerp(a, b, 0.5, out=o),
    "addcmul": lambda lib, a, b, o: lib.addcmul(b, a, b, out=o),
    "addcdiv": lambda lib, a, b, o: lib.addcdiv(b, b, a, out=o),
    "polar": lambda lib, a, b, o: lib.polar(a, b, out=o.to(lib.complex128)),
}


@pytest.mark.parametrize("name", sorted(OUT_CASES))
def test_out_refuses_requires_grad(name) -> None:
    call = OUT_CASES[name]
    a_t = _randn(3, seed=16).requires_grad_(True)
    b_t = _randn(3, seed=17)
    a_o = from_torch(a_t.detach()).requires_grad_(True)
    b_o = from_torch(b_t)
    same_error(lambda: call(pyaten, a_o, b_o, pyaten.empty(3, dtype=pyaten.float64)),
               lambda: call(torch, a_t, b_t, torch.empty(3, dtype=torch.float64)))


# OpInfo complex128 samples of the operators that take complex inputs.
COMPLEX_SURFACE = frozenset("""
add sub mul div true_divide rsub pow float_power addcmul addcdiv lerp logaddexp
""".split())

COMPLEX_NOT_YET: dict[tuple[str, str], str] = {
    ("div", "trunc_rounding"): "rounding is not defined for complex inputs",
    ("div", "floor_rounding"): "rounding is not defined for complex inputs",
}


@pytest.mark.parametrize("info", opinfo_grad_cases(COMPLEX_SURFACE, COMPLEX_NOT_YET))
def test_complex_gradients_match_torch(info) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(info.sample_inputs("cpu", torch.complex128, requires_grad=True))
    assert samples, "OpInfo gave no complex128 samples"
    for sample in samples[:MAX_SAMPLES]:
        run_grad_sample(info, sample, second_order=True, gradcheck=False)


# Operands of other dtypes: each gradient comes back in its input's dtype.
MIXED_DTYPE_CASES = {
    "pow.int_exponent": lambda lib, a, b: lib.pow(a, b.to(lib.int64)),
    "mul.float32": lambda lib, a, b: a * b.to(lib.float32),
    "where.float32": lambda lib, a, b: lib.where(a > 0, a.to(lib.float32), b),
    "atan2.float32": lambda lib, a, b: lib.atan2(a.to(lib.float32), b),
    "maximum.int": lambda lib, a, b: lib.maximum(a, b.to(lib.int64)),
    "xlogy.int_self": lambda lib, a, b: lib.xlogy(b.to(lib.int64), a * a + 1),
    "div.floor_int": lambda lib, a, b: lib.div(a, b.to(lib.int64) + 5, rounding_mode="floor"),
    "copysign.int": lambda lib, a, b: lib.copysign(a, b.to(lib.int64)),
    "remainder.int": lambda lib, a, b: lib.remainder(a, b.to(lib.int64) + 5),
}


@pytest.mark.parametrize("name", sorted(MIXED_DTYPE_CASES))
def test_mixed_dtypes(name) -> None:
    call = MIXED_DTYPE_CASES[name]
    inputs = [torch.tensor([1.5, -2.0, 3.0], dtype=torch.float64),
              torch.tensor([2.0, -3.0, 1.0], dtype=torch.float64)]
    check_grads(lambda a, b: call(pyaten, a, b), lambda a, b: call(torch, a, b), inputs,
                rtol=1e-6)


# Node names count the entries of one operator name, as PyTorch's do.
NODE_NAME_CASES = {
    "div.Tensor_mode": lambda lib, a, b: lib.div(a, b, rounding_mode="floor"),
    "div.Scalar": lambda lib, a, b: lib.ops.aten.div.Scalar(a, 2.0),
    "div.Scalar_mode": lambda lib, a, b: lib.ops.aten.div.Scalar_mode(a, 2.0,
                                                                       rounding_mode="trunc"),
    "rsub.Tensor": lambda lib, a, b: lib.rsub(a, b),
    "rsub.Scalar": lambda lib, a, b: lib.ops.aten.rsub.Scalar(a, 2),
    "remainder.Scalar": lambda lib, a, b: lib.remainder(a, 2.0),
    "remainder.Tensor": lambda lib, a, b: lib.remainder(a, b),
    "fmod.Scalar": lambda lib, a, b: lib.fmod(a, 2.0),
    "fmod.Tensor": lambda lib, a, b: lib.fmod(a, b),
    "pow.Tensor_Scalar": lambda lib, a, b: lib.pow(a, 2),
    "pow.Tensor_Tensor": lambda lib, a, b: lib.pow(a, b),
    "pow.Scalar": lambda lib, a, b: lib.pow(2, b),
    "copysign.Tensor": lambda lib, a, b: lib.copysign(a, b),
    "copysign.Scalar": lambda lib, a, b: lib.copysign(a, 2.0),
    "xlogy.Tensor": lambda lib, a, b: lib.xlogy(a, b),
    "xlogy.Scalar_Self": lambda lib, a, b: lib.xlogy(2, b),
    "xlogy.Scalar_Other": lambda lib, a, b: lib.xlogy(a, 2),
    "lerp.Scalar": lambda lib, a, b: lib.lerp(a, b, 0.5),
    "lerp.Tensor": lambda lib, a, b: lib.lerp(a, b, b),
    "where": lambda lib, a, b: lib.where(a > 1, a, b),
    "max.other": lambda lib, a, b: lib.max(a, b),
    "min.other": lambda lib, a, b: lib.min(a, b),
    "fmax": lambda lib, a, b: lib.fmax(a, b),
    "addcdiv": lambda lib, a, b: lib.addcdiv(a, b, b),
    "polar": lambda lib, a, b: lib.polar(a, b),
    "complex": lambda lib, a, b: lib.complex(a, b),
    "igammac": lambda lib, a, b: lib.igammac(a, b),
    "logaddexp2": lambda lib, a, b: lib.logaddexp2(a, b),
    "nextafter": lambda lib, a, b: lib.nextafter(a, b),
    "float_power": lambda lib, a, b: lib.float_power(a, b),
}


@pytest.mark.parametrize("name", sorted(NODE_NAME_CASES))
def test_node_names(name) -> None:
    call = NODE_NAME_CASES[name]
    names = []
    for lib in (torch, pyaten):
        a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([1.0, 3.0], dtype=lib.float64, requires_grad=True)
        names.append(call(lib, a, b).grad_fn.name())
    assert names[1] == names[0]
