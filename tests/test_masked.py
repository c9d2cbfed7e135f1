"""pyaten.masked against torch.masked: every reduction and normalisation on random masks
(all-False slices included), dims, keepdim, dtypes, broadcast masks, gradients and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _helpers import (
    assert_same,
    from_torch,
    opinfo_samples,
    run_both,
    same_error,
    sample_arguments,
    to_pyaten,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "var", "std", "logsumexp", "norm"]
ONE_DIM = ["argmax", "argmin", "median", "cumsum", "cumprod", "softmax", "log_softmax",
           "softmin", "normalize"]


def _data(seed: int, shape: tuple, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    gen = np.random.default_rng(seed)
    if dtype.is_floating_point:
        x = torch.tensor(gen.standard_normal(shape)).to(dtype)
    elif dtype == torch.bool:
        x = torch.tensor(gen.integers(0, 2, shape).astype(bool))
    else:
        x = torch.tensor(gen.integers(-4 if dtype != torch.uint8 else 0, 5, shape)).to(dtype)
    mask = torch.tensor(gen.random(shape) < 0.6)
    if len(shape) >= 2:
        mask[0] = False  # a fully masked-out slice along every later dim
        mask[..., -1] = False
    return x, mask


def _call(module, name: str, x, dim, mask, **kwargs):
    fn = getattr(module.masked, name)
    if name == "norm":
        return fn(x, kwargs.pop("ord", 2.0), dim, mask=mask, **kwargs)
    if name == "normalize":
        return fn(x, kwargs.pop("ord", 2.0), dim, mask=mask, **kwargs)
    return fn(x, dim, mask=mask, **kwargs)


def _compare(name: str, x: torch.Tensor, dim, mask, **kwargs) -> None:
    px = from_torch(x)
    pm = None if mask is None else from_torch(mask)
    ours = {k: getattr(pyaten, str(v).rsplit(".", 1)[-1]) if isinstance(v, torch.dtype) else v
            for k, v in kwargs.items()}
    pair = run_both(lambda: _call(pyaten, name, px, dim, pm, **dict(ours)),
                    lambda: _call(torch, name, x, dim, mask, **dict(kwargs)))
    if pair is not None:
        assert_same(*pair)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_reductions_float(name, dim) -> None:
    x, mask = _data(0, (3, 4, 5), torch.float32)
    for keepdim in (False, True):
        _compare(name, x, dim, mask, keepdim=keepdim)
    _compare(name, x, dim, None)


@pytest.mark.parametrize("name", ONE_DIM)
def test_one_dim_operations_float(name) -> None:
    x, mask = _data(1, (4, 3, 5), torch.float64)
    for dim in (0, -1):
        _compare(name, x, dim, mask)
    _compare(name, x, 1, None)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int16,
                                   torch.bool, torch.float64, torch.float16])
@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "argmax", "argmin", "cumsum",
                                  "cumprod", "mean", "var", "median"])
def test_dtypes(dtype, name) -> None:
    if dtype == torch.bool and name in ("cumsum", "cumprod"):
        pytest.skip("pyaten.cumsum(dtype=bool) computes where torch's refuses (scan.py)")
    x, mask = _data(2, (4, 6), dtype)
    _compare(name, x, 1, mask)
    if name != "median":
        _compare(name, x, 0, mask, dtype=torch.float64)


@pytest.mark.parametrize("name", ["sum", "amax", "mean", "softmax", "norm", "std"])
def test_broadcast_and_non_bool_masks(name) -> None:
    x, _ = _data(3, (3, 4), torch.float32)
    for mask in (torch.tensor([True, False, True, False]), torch.tensor([[1], [0], [1]]),
                 torch.tensor([1.0, 0.0, 2.0, 0.0])):
        _compare(name, x, 1, mask)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
       name=st.sampled_from(REDUCTIONS + ONE_DIM), keepdim=st.booleans())
def test_random_masks_match_torch(seed, shape, name, keepdim) -> None:
    x, mask = _data(seed, tuple(shape), torch.float64)
    dim = seed % len(shape)
    kwargs = {"keepdim": keepdim} if name in REDUCTIONS + ["argmax", "argmin", "median"] else {}
    _compare(name, x, dim, mask, **kwargs)


@pytest.mark.parametrize("name", ["sum", "prod", "amax", "mean", "var", "std", "logsumexp",
                                  "norm", "softmax", "log_softmax", "softmin", "normalize",
                                  "cumsum", "cumprod", "median"])
def test_gradients_match_torch(name) -> None:
    x, mask = _data(4, (3, 4), torch.float64)
    mask[2] = True  # keep one complete row next to the empty and partial ones
    xt = x.clone().requires_grad_()
    xp = from_torch(x).requires_grad_()
    out_t = _call(torch, name, xt, 1, mask)
    out_p = _call(pyaten, name, xp, 1, from_torch(mask))
    weights = torch.tensor(np.random.default_rng(5).standard_normal(tuple(out_t.shape)))
    # NaN/inf outputs of empty slices are left out of the scalar we differentiate
    keep = torch.isfinite(out_t)
    (out_t * weights)[keep].sum().backward()
    (out_p * from_torch(weights))[from_torch(keep)].sum().backward()
    assert_same(xp.grad, xt.grad)


def test_logaddexp_with_two_masks() -> None:
    a, ma = _data(6, (5,), torch.float32)
    b, mb = _data(7, (5,), torch.float32)
    assert_same(pyaten.masked.logaddexp(from_torch(a), from_torch(b), input_mask=from_torch(ma),
                                        other_mask=from_torch(mb)),
                torch.masked.logaddexp(a, b, input_mask=ma, other_mask=mb))


@pytest.mark.parametrize("case", [
    lambda m, x: m.masked.sum(x, 0, mask=m.ones(2, 3, 4, dtype=m.bool)),   # rank above input
    lambda m, x: m.masked.mean(x.long(), 0, mask=m.ones(3, 4, dtype=m.bool)),
    lambda m, x: m.masked.median(x.long(), 1, mask=m.zeros(3, 4, dtype=m.bool)),
    lambda m, x: m.masked.sum(x, (0, 0)),
    lambda m, x: m.masked.amax(x, 5, mask=m.ones(3, 4, dtype=m.bool)),
    lambda m, x: m.masked.amax(x.bool(), 0, mask=m.ones(3, 4, dtype=m.bool)),
    lambda m, x: m.masked.var(x, 0, True, correction=1),
])
def test_errors_match_torch(case) -> None:
    x = torch.arange(12.0).reshape(3, 4)
    same_error(lambda: case(pyaten, from_torch(x)), lambda: case(torch, x))


def test_meta_shapes() -> None:
    x, mask = torch.empty(3, 4, device="meta"), torch.ones(3, 4, dtype=torch.bool, device="meta")
    px, pm = pyaten.empty(3, 4, device="meta"), pyaten.ones(3, 4, dtype=pyaten.bool,
                                                              device="meta")
    for name in ("sum", "amax", "softmax", "logsumexp", "cumsum"):
        assert_same(_call(pyaten, name, px, 1, pm, **({"keepdim": True} if name in (
            "sum", "amax", "logsumexp") else {})),
            _call(torch, name, x, 1, mask, **({"keepdim": True} if name in (
                "sum", "amax", "logsumexp") else {})))


# --- MaskedTensor --------------------------------------------------------------------------------


def _mt(m, data: torch.Tensor, mask: torch.Tensor):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        if m is torch:
            return torch.masked.masked_tensor(data, mask)
        return pyaten.masked.masked_tensor(from_torch(data), from_torch(mask))


_MT_DATA = torch.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
_MT_MASK = torch.tensor([[True, False, True], [False, False, False]])

_MT_CASES = {
    "repr": lambda m, x: x,
    "repr_int": lambda m, x: _mt(m, torch.tensor([1, 2, 3]), torch.tensor([True, False, True])),
    "sum_all": lambda m, x: x.sum(),
    "sum_dim": lambda m, x: x.sum(1),
    "sum_keepdim": lambda m, x: m.sum(x, 1, keepdim=True),
    "mean_all": lambda m, x: x.mean(),
    "mean_dim": lambda m, x: x.mean(0),
    "amax": lambda m, x: x.amax(1),
    "amin": lambda m, x: x.amin(0),
    "argmax": lambda m, x: x.argmax(1),
    "prod": lambda m, x: x.prod(),
    "var": lambda m, x: x.var(1),
    "sin": lambda m, x: x.sin(),
    "abs": lambda m, x: m.abs(x),
    "neg": lambda m, x: -x,
    "add": lambda m, x: x + x,
    "mul_scalar": lambda m, x: x * 2,
    "plain_rhs": lambda m, x: x - m.ones(2, 3),
    "compare": lambda m, x: x > 0,
    "select": lambda m, x: x[0],
    "t": lambda m, x: x.t(),
    "view": lambda m, x: x.view(3, 2),
    "unsqueeze": lambda m, x: x.unsqueeze(0),
    "softmax": lambda m, x: x.softmax(1),
    "clone": lambda m, x: x.clone(),
    "to": lambda m, x: x.to(m.float64),
}


@pytest.mark.parametrize("name", sorted(_MT_CASES))
def test_masked_tensor_operations_match_torch(name) -> None:
    ours = _MT_CASES[name](pyaten, _mt(pyaten, _MT_DATA, _MT_MASK))
    theirs = _MT_CASES[name](torch, _mt(torch, _MT_DATA, _MT_MASK))
    assert type(ours).__name__ == type(theirs).__name__ == "MaskedTensor"
    assert repr(ours) == repr(theirs)
    assert_same(ours.get_mask(), theirs.get_mask())
    assert_same(ours.to_tensor(0), theirs.to_tensor(0))


_MT_ERRORS = [
    lambda m: _mt(m, _MT_DATA, _MT_MASK.int()),
    lambda m: _mt(m, _MT_DATA, _MT_MASK[0]),
    lambda m: _mt(m, _MT_DATA.to(torch.uint8), _MT_MASK),
    lambda m: _mt(m, _MT_DATA, _MT_MASK) + _mt(m, _MT_DATA, ~_MT_MASK),
    lambda m: m.masked.MaskedTensor(_MT_DATA if m is torch else from_torch(_MT_DATA), [True]),
]


@pytest.mark.parametrize("case", range(len(_MT_ERRORS)))
def test_masked_tensor_errors_match_torch(case) -> None:
    same_error(lambda: _MT_ERRORS[case](pyaten), lambda: _MT_ERRORS[case](torch))


def test_masked_tensor_unsupported_operator_raises_type_error() -> None:
    x = _mt(pyaten, _MT_DATA, _MT_MASK)
    with pytest.warns(UserWarning, match="cumsum is not implemented"), \
            pytest.raises(TypeError):
        pyaten.cumsum(x, 0)


_MT_GRAD_CASES = {
    "sum": lambda x: x.sum(),
    "mul_sum": lambda x: (x * 2).sum(),
    "sin_sum_dim": lambda x: x.sin().sum(1).sum(),
    "amax": lambda x: x.amax(1).sum(),
    "mean": lambda x: x.mean(),
    "add_self": lambda x: (x + x).sum(0).sum(),
    "softmax": lambda x: (x.softmax(1) * x).sum(),
    "t_exp": lambda x: x.t().exp().sum(),
    "prod": lambda x: x.prod(1).sum(),
}


@pytest.mark.parametrize("name", sorted(_MT_GRAD_CASES))
def test_masked_tensor_gradients_match_torch(name) -> None:
    mask = torch.tensor([[True, False, True], [False, True, False]])
    results = []
    for m in (torch, pyaten):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            data, bits = (_MT_DATA, mask) if m is torch else (from_torch(_MT_DATA),
                                                              from_torch(mask))
            x = m.masked.masked_tensor(data, bits, requires_grad=True)
            out = _MT_GRAD_CASES[name](x)
            out.backward()
        results.append((out, x.grad))
    (out_t, grad_t), (out_p, grad_p) = results
    assert repr(out_p) == repr(out_t)
    assert type(grad_p).__name__ == "MaskedTensor" and repr(grad_p) == repr(grad_t)
    assert_same(grad_p.get_mask(), grad_t.get_mask())
    assert_same(grad_p.to_tensor(0), grad_t.to_tensor(0))


def test_masked_tensor_helpers() -> None:
    x = _mt(pyaten, _MT_DATA, _MT_MASK)
    assert pyaten.masked.is_masked_tensor(x) and not pyaten.masked.is_masked_tensor(
        from_torch(_MT_DATA))
    assert_same(x.get_data(), _MT_DATA)
    with pytest.warns(UserWarning, match="prototype"):
        pyaten.masked.as_masked_tensor(from_torch(_MT_DATA), from_torch(_MT_MASK))


@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "mean", "var", "std",
                                  "logsumexp", "norm", "softmax", "log_softmax", "softmin",
                                  "cumsum", "argmax"])
def test_functions_on_a_masked_tensor_use_its_mask_as_torch(name) -> None:
    ours = _call(pyaten, name, _mt(pyaten, _MT_DATA, _MT_MASK), 1, None)
    theirs = _call(torch, name, _mt(torch, _MT_DATA, _MT_MASK), 1, None)
    assert_same(ours, theirs)


# --- PyTorch's OpInfo samples for torch.masked --------------------------------------------------


def _masked_opinfos():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    return [pytest.param(i, id=i.name) for i in op_db if i.name.startswith("masked.")]


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
@pytest.mark.parametrize("info", _masked_opinfos())
def test_opinfo_samples(info, dtype) -> None:
    if dtype not in info.supported_dtypes("cpu"):
        pytest.skip(f"{info.name} does not support {dtype} in PyTorch")
    ours_fn = getattr(pyaten.masked, info.name.split(".", 1)[1])
    for sample in opinfo_samples(info, dtype):
        theirs_args, ours_args, ours_kwargs = sample_arguments(sample)
        pair = run_both(lambda a=ours_args, k=ours_kwargs: ours_fn(*a, **k),
                        lambda a=theirs_args, k=sample.kwargs: info.op(*a, **k))
        if pair is not None:
            assert_same(*pair, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("info", [p for p in _masked_opinfos()
                                  if p.values[0].supports_autograd])
def test_opinfo_gradients(info) -> None:
    ours_fn = getattr(pyaten.masked, info.name.split(".", 1)[1])
    for sample in opinfo_samples(info, torch.float64)[:6]:
        x = sample.input.detach().clone().requires_grad_()
        theirs = info.op(x, *sample.args, **sample.kwargs)
        xp = from_torch(x).requires_grad_()
        ours = ours_fn(xp, *to_pyaten(tuple(sample.args)), **to_pyaten(dict(sample.kwargs)))
        keep = torch.isfinite(theirs)
        if not keep.any():
            continue
        weights = torch.linspace(-1.0, 1.0, theirs.numel(), dtype=theirs.dtype).reshape(
            theirs.shape)
        (theirs * weights)[keep].sum().backward()
        (ours * from_torch(weights))[from_torch(keep)].sum().backward()
        assert_same(xp.grad, x.grad)
