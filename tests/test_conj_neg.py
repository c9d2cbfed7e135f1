"""Lazy conjugate and negative views, and ZeroTensor (Note: math bits, pyaten/native/mathbits.py),
against PyTorch 2.13.

- the Conjugate / Negative / ZeroTensor columns of every operator's dispatch table;
- PyTorch's OpInfo samples run on conj views (complex64) and neg views (float32): values and
  the `is_conj()`/`is_neg()` bits of every output;
- in-place and out= writes through conj and neg views, reading and writing the base;
- gradients through conj and neg views (and in-place writes into them);
- what reads values outside the dispatcher: numpy(), tolist, item, printing, pickling, save,
  DLPack;
- ZeroTensor: `_efficientzerotensor`, its kernels, fallback and immutability.
"""

from __future__ import annotations

import io
import pickle
import warnings

import numpy as np
import pytest
import torch
from _helpers import assert_same, run_both, same_error, to_pyaten
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
import pyaten.dispatch as pd

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

MATH_KEYS = ("Conjugate", "Negative", "ZeroTensor")


def _column_kind(text: str) -> str:
    return text if text in ("fallthrough", "fallback", "missing") else "kernel"


def _torch_columns(name: str) -> dict[str, str] | None:
    try:
        table = torch._C._dispatch_dump_table(name)
    except RuntimeError:
        return None
    columns = {}
    for key in MATH_KEYS:
        line = next((x for x in table.splitlines() if x.startswith(key + ":")), None)
        if line is None:
            columns[key] = "missing"
        elif "fallthrough" in line:
            columns[key] = "fallthrough"
        elif "[backend fallback]" in line:
            columns[key] = "fallback"
        else:
            columns[key] = "kernel"
    return columns


def test_math_bit_columns_of_every_operator_match_torch() -> None:
    # Fallthrough, own kernel or the boxed fallback: what PyTorch 2.13 registers on the keys.
    compared, problems = 0, []
    for name in pd.list_operators("aten"):
        theirs = _torch_columns(name)
        if theirs is None:
            continue
        table = pd.dump_table(name)
        ours = {key: _column_kind(table.get(key, "missing")) for key in MATH_KEYS}
        compared += 1
        if ours != theirs:
            problems.append(f"{name}: ours {ours}, torch {theirs}")
    assert compared > 1500
    assert not problems, "\n".join(problems[:10])


@pytest.mark.parametrize("name", ["aten::mm", "aten::add.Tensor", "aten::view", "aten::copy_",
                                  "aten::neg_", "aten::_efficientzerotensor"])
def test_dump_table_rows_match_torch(name: str) -> None:
    assert {k: _column_kind(pd.dump_table(name)[k]) for k in MATH_KEYS} == _torch_columns(name)


# ---- OpInfo samples on conj and neg views --------------------------------------------------

# What differs from PyTorch in these sweeps, and why (values or bits).
SWEEP_EXCLUDED = {
    "empty": "uninitialised values",
    "empty_like": "uninitialised values",
    "logcumsumexp": "pyaten's complex logcumsumexp overflows where PyTorch's does not",
    "linalg.eig": "eigenvectors are defined up to a phase",
    "linalg.eigh": "eigenvectors are defined up to a phase",
    "linalg.lu_solve": "PyTorch returns a conj view for adjoint solves, pyaten a plain tensor",
    "linalg.vander": "pyaten refuses N=1 where PyTorch allows it",
    "nn.functional.triplet_margin_with_distance_loss": "pyaten recursion on complex inputs",
    "nn.functional.max_pool1d": "PyTorch 2.13's max_pool1d ignores the neg bit (wrong values)",
}

_NAMESPACES = (
    (torch, pyaten),
    (torch.nn.functional, pyaten.nn.functional),
    (torch.linalg, pyaten.linalg),
    (torch.special, pyaten.special),
    (torch.fft, pyaten.fft),
)

# The neg sweep's surface: pointwise, reductions, scans, matrix products.
NEG_SURFACE = frozenset("""
abs neg sign sgn ceil floor round trunc frac exp exp2 expm1 log log2 log10 log1p sqrt rsqrt
square reciprocal sin cos tan asin atan sinh cosh tanh asinh atanh sigmoid erf erfc lgamma
deg2rad rad2deg nan_to_num isfinite isinf isnan isneginf isposinf isreal angle conj
conj_physical resolve_conj resolve_neg real clamp clamp_min clamp_max add sub rsub mul div
true_divide floor_divide remainder fmod pow atan2 hypot copysign maximum minimum fmax fmin eq
ne lt le gt ge logaddexp lerp addcmul addcdiv where isclose sum prod mean std var amax amin
max min argmax argmin all any logsumexp norm dist median cumsum cumprod cummax cummin trace
softmax log_softmax mm matmul bmm addmm baddbmm addmv mv dot vdot inner outer kron tensordot
cat stack flip roll tril triu gather index_select take masked_fill sort topk kthvalue quantile
nanquantile nn.functional.relu nn.functional.gelu nn.functional.linear nn.functional.conv1d
nn.functional.max_pool1d linalg.vector_norm linalg.matrix_norm linalg.solve linalg.inv
linalg.det linalg.cross linalg.solve_triangular
""".split())


def _pyaten_function(info):
    short = info.name.split(".")[-1]
    for theirs, ours in _NAMESPACES:
        if getattr(theirs, short, None) is info.op and hasattr(ours, short):
            return getattr(ours, short)
    return None


def _sweep_cases(dtype: torch.dtype, surface: frozenset | None) -> list:
    cases, seen = [], set()
    for info in op_db:
        if info.name in SWEEP_EXCLUDED or info.name in seen:
            continue
        if surface is not None and info.name not in surface:
            continue
        if dtype not in info.supported_dtypes("cpu") or _pyaten_function(info) is None:
            continue
        seen.add(info.name)  # one OpInfo per name (its variants add little here)
        cases.append(pytest.param(info, id=info.name))
    return cases


def _map(value, fn):
    if isinstance(value, (torch.Tensor, pyaten.Tensor)):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return value


def _bits(value):
    if isinstance(value, (torch.Tensor, pyaten.Tensor)):
        return (value.is_conj(), value.is_neg())
    if isinstance(value, (list, tuple)):
        return [_bits(v) for v in value]
    return None


def _conj_view(t):
    # the same values, stored conjugated, behind the conj bit (PyTorch's test_conj_view)
    return t.conj_physical().conj() if t.is_complex() else t


def _neg_view(t):
    return t.neg()._neg_view() if t.is_floating_point() else t


def _sweep(info, dtype: torch.dtype, view, count: int) -> None:
    ours_fn = _pyaten_function(info)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(info.sample_inputs("cpu", dtype))[:count]
    for sample in samples:
        theirs_args = _map((sample.input, *sample.args), view)
        theirs_kwargs = _map(dict(sample.kwargs), view)
        ours_args = _map(to_pyaten((sample.input, *sample.args)), view)
        ours_kwargs = _map(to_pyaten(dict(sample.kwargs)), view)
        pair = run_both(lambda: ours_fn(*ours_args, **ours_kwargs),  # noqa: B023
                        lambda: info.op(*theirs_args, **theirs_kwargs),  # noqa: B023
                        message=False)
        if pair is None:
            continue
        ours, theirs = pair
        assert_same(ours, theirs, rtol=1e-4, atol=1e-4)
        assert _bits(ours) == _bits(theirs), (_bits(ours), _bits(theirs))


@pytest.mark.parametrize("info", _sweep_cases(torch.complex64, None))
def test_opinfo_samples_on_conj_views(info) -> None:
    _sweep(info, torch.complex64, _conj_view, 2)


@pytest.mark.parametrize("info", _sweep_cases(torch.float32, NEG_SURFACE))
def test_opinfo_samples_on_neg_views(info) -> None:
    _sweep(info, torch.float32, _neg_view, 1)


RANDOM_FILLS = frozenset({"normal", "uniform", "cauchy", "exponential", "geometric",
                          "log_normal", "bernoulli", "random_"})  # other random streams


def _inplace_cases(dtype: torch.dtype) -> list:
    cases, seen = [], set()
    for info in op_db:
        method = info.name.split(".")[-1] + "_"
        if (info.inplace_variant is None or info.name in RANDOM_FILLS or method in seen
                or dtype not in info.supported_dtypes("cpu")
                or not hasattr(pyaten.Tensor, method) or not hasattr(torch.Tensor, method)):
            continue
        seen.add(method)
        cases.append(pytest.param(info, method, id=method))
    return cases


def _inplace_sweep(info, method: str, dtype: torch.dtype, view) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = [s for s in info.sample_inputs("cpu", dtype)
                   if isinstance(s.input, torch.Tensor)][:2]
    for sample in samples:
        theirs = view(sample.input.clone())
        ours = view(to_pyaten(sample.input.clone()))
        theirs_args = _map(tuple(sample.args), view)
        ours_args = _map(to_pyaten(tuple(sample.args)), view)
        kwargs = dict(sample.kwargs)
        pair = run_both(
            lambda: getattr(ours, method)(*ours_args, **to_pyaten(kwargs)),  # noqa: B023
            lambda: getattr(theirs, method)(*theirs_args, **kwargs),  # noqa: B023
            message=False)
        if pair is None:
            continue
        assert_same(ours, theirs, rtol=1e-4, atol=1e-4)  # written through the bit
        assert _bits(ours) == _bits(theirs)


@pytest.mark.parametrize("info,method", _inplace_cases(torch.complex64))
def test_inplace_opinfo_samples_on_conj_views(info, method: str) -> None:
    _inplace_sweep(info, method, torch.complex64, _conj_view)


@pytest.mark.parametrize("info,method", _inplace_cases(torch.float32))
def test_inplace_opinfo_samples_on_neg_views(info, method: str) -> None:
    _inplace_sweep(info, method, torch.float32, _neg_view)


# ---- the views themselves ---------------------------------------------------------------------

VALUES = [[1 + 2j, -3 + 0.5j, 2 - 1j], [0.5 - 1j, 4j, -2 + 0j]]


def _pair(values=VALUES, dtype="complex64"):
    return pyaten.tensor(values, dtype=getattr(pyaten, dtype)), \
        torch.tensor(values, dtype=getattr(torch, dtype))


@pytest.mark.parametrize("make", [
    lambda m, x: x.conj(),
    lambda m, x: m.conj(x),
    lambda m, x: x._conj(),
    lambda m, x: x._neg_view(),
    lambda m, x: x.conj().conj(),
    lambda m, x: x._neg_view()._neg_view(),
    lambda m, x: x.conj()._neg_view(),
    lambda m, x: x.conj()[1],
    lambda m, x: x.conj()[:, 1:],
    lambda m, x: x.conj().t(),
    lambda m, x: x.conj().reshape(-1),
    lambda m, x: x.conj().view(3, 2),
    lambda m, x: x.conj().unsqueeze(0).expand(2, 2, 3),
    lambda m, x: x.conj().imag,
    lambda m, x: x.conj().real,
    lambda m, x: x._neg_view().imag,
    lambda m, x: m.view_as_real(x._neg_view()),
    lambda m, x: x.conj().detach(),
    lambda m, x: x.conj().data,
    lambda m, x: x._neg_view().data,
    lambda m, x: m.ops.aten._unsafe_view.default(x.conj(), (3, 2)),
    lambda m, x: x.conj().contiguous(),
    lambda m, x: x.conj().clone(),
    lambda m, x: x.conj().resolve_conj(),
    lambda m, x: x._neg_view().resolve_neg(),
    lambda m, x: x.conj().conj_physical(),
    lambda m, x: m.conj_physical(x),
    lambda m, x: m.empty_like(x.conj()).zero_(),
    lambda m, x: m.zeros_like(x.conj()),
    lambda m, x: x.conj() + 1,
    lambda m, x: x.conj().to(m.complex128),
    lambda m, x: m.mm(x.conj(), x.t()),
    lambda m, x: m.mm(x.conj(), x.conj().t()),
    lambda m, x: m.matmul(x[0].conj(), x[1].conj()),
    lambda m, x: m.dot(x[0].conj(), x[1].conj()),
    lambda m, x: m.vdot(x[0], x[1].conj()),
    lambda m, x: m.addmm(x[:, :2].conj(), x.conj(), x.t().conj()),
    lambda m, x: m.bmm(x.conj().unsqueeze(0), x.t().unsqueeze(0)),
], ids=lambda f: "")
def test_views_values_and_bits(make) -> None:
    ours_base, theirs_base = _pair()
    ours, theirs = make(pyaten, ours_base), make(torch, theirs_base)
    assert_same(ours, theirs)
    assert _bits(ours) == _bits(theirs)
    if theirs._is_view():
        assert ours._is_view() and ours._base is ours_base


def test_conj_of_a_real_tensor_is_itself() -> None:
    x = pyaten.tensor([1.0, -2.0])
    assert x.conj() is x and x.conj_physical() is x and x.resolve_conj() is x
    assert x._neg_view().is_neg()  # a real tensor may carry the neg bit
    same_error(lambda: pyaten._conj(x), lambda: torch._conj(torch.tensor([1.0])), message=False)


def test_views_share_storage_with_their_base() -> None:
    ours, theirs = _pair()
    ours.conj()[0, 0] = 5 + 5j
    theirs.conj()[0, 0] = 5 + 5j
    assert_same(ours, theirs)
    ours[1, 1] = 7 - 1j
    assert ours.conj()[1, 1].item() == 7 + 1j


def test_view_as_real_refuses_a_conj_view() -> None:
    ours, theirs = _pair()
    same_error(lambda: pyaten.view_as_real(ours.conj()),
               lambda: torch.view_as_real(theirs.conj()))


# ---- in-place and out= through the views ----------------------------------------------------

WRITES = {
    "add_": lambda m, v, o: v.add_(o),
    "mul_": lambda m, v, o: v.mul_(o),
    "sub_scalar": lambda m, v, o: v.sub_(1 - 2j),
    "div_": lambda m, v, o: v.div_(o),
    "copy_": lambda m, v, o: v.copy_(o),
    "copy_from_conj": lambda m, v, o: v.copy_(o.conj()),
    "copy_from_neg": lambda m, v, o: v.copy_(o._neg_view()),
    "zero_": lambda m, v, o: v.zero_(),
    "fill_": lambda m, v, o: v.fill_(2 + 3j),
    "setitem": lambda m, v, o: v.__setitem__((0, slice(1, 3)), o[1, :2]),
    "index_fill_": lambda m, v, o: v.index_fill_(1, m.tensor([0, 2]), 1j),
    "conj_physical_": lambda m, v, o: v.conj_physical_(),
    "neg_": lambda m, v, o: v.neg_(),
    "exp_": lambda m, v, o: v.exp_(),
    "addmm_": lambda m, v, o: v[:, :2].addmm_(o[:, :2], o[:2, :2].t()),
    "add_out": lambda m, v, o: m.add(o, o, out=v),
    "mul_out": lambda m, v, o: m.mul(o, 2, out=v),
    "mm_out": lambda m, v, o: m.mm(o[:, :2], o[:2, :], out=v),
    "sum_out": lambda m, v, o: m.sum(o, 0, out=v[0]),
}
VIEWS = {
    "conj": lambda x: x.conj(),
    "neg": lambda x: x._neg_view(),
    "conj_neg": lambda x: x.conj()._neg_view(),
    "conj_slice": lambda x: x.conj()[:, :],
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("write", list(WRITES))
def test_writes_through_views(write: str, view: str) -> None:
    other = [[2 - 1j, 0.5 + 0.5j, -1j], [3 + 0j, 1 - 1j, 2j]]
    ours_base, theirs_base = _pair()
    ours_other, theirs_other = _pair(other)
    ours_view, theirs_view = VIEWS[view](ours_base), VIEWS[view](theirs_base)
    pair = run_both(lambda: WRITES[write](pyaten, ours_view, ours_other),
                    lambda: WRITES[write](torch, theirs_view, theirs_other))
    if pair is None:
        return
    ours, theirs = pair
    assert_same(ours, theirs)
    assert _bits(ours) == _bits(theirs)
    assert_same(ours_base, theirs_base)  # the write reached the base
    assert_same(ours_view, theirs_view)


@pytest.mark.parametrize("view", ["conj", "neg"])
def test_mutable_lists_with_a_bit_are_refused(view: str) -> None:
    schema = "fill_all(Tensor(a!)[] xs) -> ()"
    with pyaten.library.Library("pyaten_mathbits", "DEF") as ours_lib:
        ours_lib.define(schema)
        ours_lib.impl("fill_all", lambda xs: None, "CPU")
        theirs_lib = torch.library.Library("pyaten_mathbits", "DEF")
        try:
            theirs_lib.define(schema)
            theirs_lib.impl("fill_all", lambda xs: None, "CPU")
            ours, theirs = (VIEWS[view](t) for t in _pair())
            same_error(lambda: pyaten.ops.pyaten_mathbits.fill_all.default([ours]),
                       lambda: torch.ops.pyaten_mathbits.fill_all.default([theirs]))
        finally:
            theirs_lib._destroy()


# ---- gradients ------------------------------------------------------------------------------

GRADS = {
    "mul": lambda m, x, w: (x.conj() * w).abs().sum(),
    "imag": lambda m, x, w: x.conj().imag.sum(),
    "real": lambda m, x, w: x.conj().real.sum(),
    "neg_view": lambda m, x, w: (x._neg_view() * w).abs().sum(),
    "dot": lambda m, x, w: m.dot(x.conj(), w).abs(),
    "vdot": lambda m, x, w: m.vdot(x.conj(), w.conj()).abs(),
    "mm": lambda m, x, w: m.mm(x.conj().unsqueeze(0), w.unsqueeze(1)).abs().sum(),
    "resolve": lambda m, x, w: x.conj().resolve_conj().mul(w).abs().sum(),
    "conj_physical": lambda m, x, w: x.conj_physical().mul(w).abs().sum(),
    "slice": lambda m, x, w: x.conj()[1:].mul(w[1:]).abs().sum(),
    "twice": lambda m, x, w: x.conj().conj().mul(w).abs().sum(),
}


def _inplace_mul(m, x, w):
    y = (x * 1).conj()
    y.mul_(w)
    return y.abs().sum()


def _inplace_add(m, x, w):
    y = (x * 1).conj()
    y.add_(w)
    return (y * w).real.sum()


def _inplace_base_seen(m, x, w):
    y = x * 1
    y.conj().mul_(w)
    return (y * w).real.sum()


def _conj_physical_(m, x, w):
    y = x * 1
    y.conj_physical_()
    return (y * w).real.sum()


def _imag_of_conj_inplace(m, x, w):
    y = x * 1
    im = y.conj().imag  # a neg view of y's imaginary parts
    im.mul_(2)
    return (y * w).abs().sum() + (im * 3).sum()


def _real_inplace(m, x, w):
    y = x * 1
    r = y.real
    r.add_(r * 2)
    return (y * w).real.sum() + r.sum()


def _imag_inplace(m, x, w):
    y = x * 1
    y.imag.mul_(w.real)
    return (y * w).abs().sum()


GRADS.update(inplace_mul=_inplace_mul, inplace_add=_inplace_add,
             inplace_base=_inplace_base_seen, conj_physical_=_conj_physical_,
             imag_of_conj_inplace=_imag_of_conj_inplace, real_inplace=_real_inplace,
             imag_inplace=_imag_inplace)


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_through_views(name: str) -> None:
    values, weights = [1 + 2j, -3 + 0.5j, 2 - 1j], [0.5 - 1j, 2 + 1j, -1 + 3j]
    xt = torch.tensor(values, requires_grad=True)
    xp = pyaten.tensor(values, requires_grad=True)
    GRADS[name](torch, xt, torch.tensor(weights)).backward()
    GRADS[name](pyaten, xp, pyaten.tensor(weights)).backward()
    assert_same(xp.grad, xt.grad, rtol=1e-5, atol=1e-5)
    assert xp.grad.is_conj() == xt.grad.is_conj()


@pytest.mark.parametrize("make", [
    lambda x: x.conj(), lambda x: x._neg_view(), lambda x: x.conj().imag,
    lambda x: x.conj_physical(), lambda x: x.conj().resolve_conj(),
    lambda x: (x * 1).conj_physical_(),
], ids=["conj", "neg_view", "imag", "conj_physical", "resolve_conj", "conj_physical_"])
def test_grad_fn_names(make) -> None:
    ours = make(pyaten.tensor([1 + 1j], requires_grad=True))
    theirs = make(torch.tensor([1 + 1j], requires_grad=True))
    assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__


@pytest.mark.parametrize("fn", [
    lambda x: x.conj(), lambda x: (x.conj() * x).conj().imag, lambda x: x.conj()._neg_view() * x,
    lambda x: pyaten.mm(x.conj().unsqueeze(0), x.unsqueeze(1)),
], ids=["conj", "imag", "neg", "mm"])
def test_gradcheck_through_views(fn) -> None:
    x = pyaten.tensor([1 + 2j, 3 - 1j], dtype=pyaten.complex128, requires_grad=True)
    assert pyaten.autograd.gradcheck(fn, (x,))
    assert pyaten.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("fn", [
    lambda d: (d.conj() * d).conj().imag * 2 + d._neg_view().real,
    lambda d: d.conj()[1:] * 3,
    lambda d: d.conj().conj_physical(),
], ids=["mixed", "slice", "conj_physical"])
def test_forward_ad_through_views(fn) -> None:
    values, tangents = [1 + 2j, 3 - 1j], [0.5 + 1j, -1j]
    results = []
    for m in (pyaten, torch):
        fa = m.autograd.forward_ad
        with fa.dual_level():
            primal, tangent = fa.unpack_dual(fn(fa.make_dual(m.tensor(values),
                                                             m.tensor(tangents))))
            results.append((primal, tangent))
    (ours_p, ours_t), (theirs_p, theirs_t) = results
    assert_same(ours_p, theirs_p)
    assert_same(ours_t, theirs_t)
    assert _bits(ours_t) == _bits(theirs_t)


# ---- reading values outside the dispatcher --------------------------------------------------

@pytest.mark.parametrize("view", ["conj", "neg"])
def test_numpy_refuses_a_view_with_a_bit(view: str) -> None:
    ours, theirs = _pair()
    same_error(lambda: VIEWS[view](ours).numpy(), lambda: VIEWS[view](theirs).numpy())
    np.testing.assert_array_equal(VIEWS[view](ours).numpy(force=True),
                                  VIEWS[view](theirs).numpy(force=True))


@pytest.mark.parametrize("view", list(VIEWS))
def test_python_conversions_read_through_the_bits(view: str) -> None:
    ours, theirs = (VIEWS[view](t) for t in _pair())
    assert ours.tolist() == theirs.tolist()
    assert ours[1, 2].item() == theirs[1, 2].item()
    assert complex(ours[0, 0]) == complex(theirs[0, 0])
    assert repr(ours) == repr(theirs)
    assert str(ours[0]) == str(theirs[0])


@pytest.mark.parametrize("view", ["conj", "neg", "conj_neg"])
def test_pickle_and_save_keep_the_bit(view: str) -> None:
    ours, theirs = (VIEWS[view](t) for t in _pair())
    back = pickle.loads(pickle.dumps(ours))
    assert_same(back, theirs)
    assert _bits(back) == _bits(theirs)
    buffer = io.BytesIO()
    pyaten.save(ours, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer)  # PyTorch reads pyaten's checkpoint: values and bits
    assert torch.equal(loaded, theirs) and _bits(loaded) == _bits(theirs)
    buffer = io.BytesIO()
    torch.save(theirs, buffer)
    buffer.seek(0)
    loaded = pyaten.load(buffer)
    assert_same(loaded, theirs)
    assert _bits(loaded) == _bits(theirs)


def test_dlpack_refuses_a_conj_view() -> None:
    ours, theirs = _pair()
    same_error(lambda: np.from_dlpack(ours.conj()), lambda: np.from_dlpack(theirs.conj()))


# ---- ZeroTensor -----------------------------------------------------------------------------

def _zeros(shape=(2, 3), dtype="float32"):
    return pyaten._efficientzerotensor(shape, dtype=getattr(pyaten, dtype)), \
        torch._efficientzerotensor(shape, dtype=getattr(torch, dtype))


ZERO_OPS = {
    "add_left": lambda m, z, o: m.add(z, o, alpha=2),
    "add_right": lambda m, z, o: m.add(o, z),
    "add_both": lambda m, z, o: m.add(z, z),
    "sub_left": lambda m, z, o: m.sub(z, o),
    "sub_right": lambda m, z, o: m.sub(o, z, alpha=3),
    "mul": lambda m, z, o: m.mul(z, o),
    "mul_broadcast": lambda m, z, o: m.mul(o[:1], z),
    "mul_int": lambda m, z, o: m.mul(z, m.ones(2, 3, dtype=m.int64)),
    "div_zero_x": lambda m, z, o: m.div(z, o),
    "div_x_zero": lambda m, z, o: m.div(o, z),
    "div_zero_zero": lambda m, z, o: m.div(z, z),
    "cross": lambda m, z, o: m.linalg.cross(m.zeros(2, 3) + z, z),
    "sum": lambda m, z, o: z.sum(),
    "exp": lambda m, z, o: z.exp(),
    "view": lambda m, z, o: z.view(3, 2),
    "t": lambda m, z, o: z.t(),
    "slice": lambda m, z, o: z[1:],
    "clone": lambda m, z, o: z.clone(),
    "mm": lambda m, z, o: m.mm(z, o.t()),
    "dot": lambda m, z, o: m.dot(z[0], o[0]),
    "copy_into_other": lambda m, z, o: o.clone().copy_(z),
    "to_double": lambda m, z, o: z.to(m.float64),
    "add_": lambda m, z, o: z.add_(1),
    "copy_": lambda m, z, o: z.copy_(o),
    "mul_out": lambda m, z, o: m.mul(o, 2, out=z),
    "numpy": lambda m, z, o: z.numpy(),
}


@pytest.mark.parametrize("name", list(ZERO_OPS))
def test_zerotensor_ops(name: str) -> None:
    ours_zero, theirs_zero = _zeros()
    values = [[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]]
    ours_other, theirs_other = pyaten.tensor(values), torch.tensor(values)
    pair = run_both(lambda: ZERO_OPS[name](pyaten, ours_zero, ours_other),
                    lambda: ZERO_OPS[name](torch, theirs_zero, theirs_other))
    if pair is None:
        return
    ours, theirs = pair
    assert ours._is_zerotensor() == theirs._is_zerotensor()
    # (torch's numpy(force=True) of a ZeroTensor crashes: compare its materialised clone)
    assert_same(ours, theirs.clone() if theirs._is_zerotensor() else theirs)


def test_efficientzerotensor_factory() -> None:
    for dtype in ("float32", "int64", "complex64"):
        ours, theirs = _zeros((3,), dtype)
        assert ours.shape == theirs.shape and ours.stride() == theirs.stride()
        assert ours.dtype.name == str(theirs.dtype)[6:]
        assert ours._is_zerotensor() and pyaten._is_zerotensor(ours)
        assert repr(ours) == repr(theirs)
    meta = pyaten._efficientzerotensor((2,), device="meta")
    assert meta.is_meta and meta._is_zerotensor()
    assert not pyaten.zeros(2)._is_zerotensor()


@pytest.mark.parametrize("dtype,make", [
    ("complex32", lambda x: x.conj()),
    ("complex32", lambda x: x._neg_view()),
    ("bfloat16", lambda x: x._neg_view()),
    ("float16", lambda x: x._neg_view()),
    ("int64", lambda x: x._neg_view()),
], ids=["chalf-conj", "chalf-neg", "bf16-neg", "half-neg", "int-neg"])
def test_views_of_narrow_and_integer_dtypes(dtype: str, make) -> None:
    values = [1 + 2j, -3j] if dtype == "complex32" else [3, -2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: ComplexHalf support is experimental
        ours = make(pyaten.tensor(values).to(getattr(pyaten, dtype)))
        theirs = make(torch.tensor(values).to(getattr(torch, dtype)))
        assert repr(ours) == repr(theirs).replace("torch.", "pyaten.")
        wide = "complex64" if dtype == "complex32" else "float64"
        assert_same(ours.clone().to(getattr(pyaten, wide)), theirs.clone().to(getattr(torch, wide)))


def test_deepcopy_resolves_the_views() -> None:
    import copy

    ours, theirs = _pair()
    ours_copies = copy.deepcopy([ours, ours.conj(), ours.t()._neg_view(), ours.conj()[:, :1]])
    theirs_copies = copy.deepcopy([theirs, theirs.conj(), theirs.t()._neg_view(),
                                   theirs.conj()[:, :1]])
    for a, b in zip(ours_copies, theirs_copies):
        assert_same(a, b, strides=True)
        assert _bits(a) == _bits(b)
    ours_copies[1].zero_()  # its own storage: the plain copy is untouched
    assert_same(ours_copies[0], theirs)


def test_meta_tensors_carry_the_bits() -> None:
    def probe(m):
        c = m.empty(2, 3, dtype=m.complex64, device="meta").conj()
        z = m._efficientzerotensor((2, 3), device="meta")
        facts = [c.is_conj(), (c * 2).is_conj(), tuple((c * 2).shape),
                 tuple(m.mm(c, c.t()).shape), c.imag.is_neg(), c.resolve_conj().is_conj(),
                 c.clone().is_conj(), (z + m.ones(2, 3, device="meta"))._is_zerotensor(),
                 (z * z)._is_zerotensor(), tuple(z.sum().shape)]
        c.add_(1)
        return facts + [c.is_conj()]

    assert probe(pyaten) == probe(torch)


# ---- property: chains of views with bits read and write what NumPy says ----------------------

_STEPS = {
    "conj": (lambda t: t.conj(), np.conjugate),
    "neg": (lambda t: t._neg_view(), np.negative),
    "t": (lambda t: t.transpose(0, 1), lambda a: a.transpose(1, 0)),
    "slice": (lambda t: t[:, 1:], lambda a: a[:, 1:]),
    "rows": (lambda t: t[1:], lambda a: a[1:]),
    "imag": (lambda t: t.imag if t.is_complex() else t,
             lambda a: a.imag if a.dtype.kind == "c" else a),
}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(sorted(_STEPS)), min_size=1, max_size=5),
       st.integers(0, 2**31 - 1))
def test_view_chains_match_numpy(steps: list[str], seed: int) -> None:
    rng = np.random.default_rng(seed)
    expected = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)))
    base = pyaten.from_numpy(expected.copy())
    view = base
    for step in steps:
        if min(view.shape) < 2 and step in ("slice", "rows"):
            continue
        make, reference = _STEPS[step]
        view, expected = make(view), reference(expected)
    np.testing.assert_array_equal(np.array(view.tolist()), expected)
    np.testing.assert_array_equal((view * 2).numpy(), expected * 2)  # through the fallback
    view.mul_(3)  # a write through every bit in the chain
    np.testing.assert_allclose(np.array(view.tolist()), expected * 3)
    np.testing.assert_allclose(view.clone().numpy(), expected * 3)
