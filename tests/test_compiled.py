"""The compiled loops (pyaten/native/compiled.py, Note: compiled loops) against torch and
against pyaten's own NumPy path: gather, scatter (tensor and value), scatter_add, the
multiply reduction and index_add, on every dtype, with the compiled path forced on for
inputs of any size."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _helpers import assert_same, assert_same_outcome, from_torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.native import compiled

pytest.importorskip("numba")
pytestmark = pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")

DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
          torch.complex128]


@pytest.fixture(autouse=True)
def compiled_path():
    compiled.set_enabled(True)
    yield
    compiled.set_enabled(None)


def _values(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float64) * 5
    return x.to(dtype)


def _index(shape, size, seed=1, dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, size, shape, generator=g, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_gather_every_dtype_and_dim(dtype, dim):
    x = _values((4, 5, 6), dtype)
    shape = [4, 5, 6]
    shape[dim] = 7
    index = _index(shape, x.shape[dim])
    assert_same(pyaten.gather(from_torch(x), dim, from_torch(index)), torch.gather(x, dim, index))


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64], ids=str)
def test_gather_int32_index_and_smaller_index(index_dtype):
    x = _values((6, 8), torch.float32)
    for shape in [(6, 3), (2, 3)]:  # the second does not span dim 0: the NumPy path
        index = _index(shape, 8, dtype=index_dtype)
        assert_same(pyaten.gather(from_torch(x), 1, from_torch(index)), torch.gather(x, 1, index))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_and_scatter_add_every_dtype(dtype, dim):
    base = _values((4, 5, 6), dtype)
    index = _index((4, 5, 6), base.shape[dim])
    src = _values((4, 5, 6), dtype, seed=2)
    ours_base, ours_index, ours_src = from_torch(base), from_torch(index), from_torch(src)
    # scatter's duplicates: the last write wins on both (serial CPU loops)
    assert_same(ours_base.scatter(dim, ours_index, ours_src), base.scatter(dim, index, src))
    assert_same(ours_base.scatter(dim, ours_index, 3), base.scatter(dim, index, 3))
    assert_same_outcome(lambda: ours_base.scatter_add(dim, ours_index, ours_src),
                        lambda: base.scatter_add(dim, index, src))
    if dtype not in (torch.bool, torch.float16, torch.bfloat16):
        assert_same(ours_base.scatter(dim, ours_index, ours_src, reduce="multiply"),
                    base.scatter(dim, index, src, reduce="multiply"), rtol=1e-5, atol=1e-5)


def test_scatter_src_larger_than_index():
    base, src = _values((5, 6), torch.float64), _values((7, 9), torch.float64, seed=3)
    index = _index((5, 4), 6)
    assert_same(from_torch(base).scatter_add(1, from_torch(index), from_torch(src)),
                base.scatter_add(1, index, src))


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.float32, torch.float64,
                                   torch.complex128, torch.float16], ids=str)
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_index_add(dtype, dim):
    base = _values((3, 4, 5), dtype)
    index = _index((6,), base.shape[dim])
    shape = [3, 4, 5]
    shape[dim] = 6
    source = _values(shape, dtype, seed=4)
    # float16 adds in float32 here and in half there: a few half ulps apart
    tolerance = {"rtol": 1e-2, "atol": 1e-2} if dtype is torch.float16 else {}
    assert_same(from_torch(base).index_add(dim, from_torch(index), from_torch(source), alpha=2),
                base.index_add(dim, index, source, alpha=2), **tolerance)


def test_bad_index_raises_and_writes_nothing():
    base = torch.zeros(3, 4)
    index = torch.tensor([[0, 1, 9, 2]] * 3)
    ours = from_torch(base)
    before = ours.clone()
    assert_same_outcome(lambda: ours.scatter_add_(1, from_torch(index), pyaten.ones(3, 4)),
                        lambda: base.scatter_add_(1, index, torch.ones(3, 4)))
    assert np.array_equal(ours.numpy(), before.numpy())
    assert_same_outcome(lambda: pyaten.gather(ours, 1, from_torch(index)),
                        lambda: torch.gather(base, 1, index))
    assert_same_outcome(lambda: pyaten.gather(ours, 1, from_torch(-index)),
                        lambda: torch.gather(base, 1, -index))


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data())
def test_compiled_equals_numpy_path(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    size = shape[dim]
    index_shape = list(shape)
    index_shape[dim] = data.draw(st.integers(0, 6))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = pyaten.tensor(rng.standard_normal(shape))
    index = pyaten.tensor(rng.integers(0, size, index_shape))
    src = pyaten.tensor(rng.standard_normal(index_shape))
    runs = []
    for enabled in (True, False):
        compiled.set_enabled(enabled)
        runs.append((pyaten.gather(x, dim, index), x.scatter(dim, index, src),
                     x.scatter_add(dim, index, src)))
    for fast, reference in zip(*runs):
        assert np.array_equal(fast.numpy(), reference.numpy())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=str)
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_forward_and_backward(dtype, affine):
    x = _values((3, 4, 6), dtype).requires_grad_()
    weight = _values((4, 6), dtype, seed=5).requires_grad_() if affine != "none" else None
    bias = _values((4, 6), dtype, seed=6).requires_grad_() if affine == "both" else None
    grad = _values((3, 4, 6), dtype, seed=7)
    tolerance = {"rtol": 2e-2, "atol": 2e-2} if dtype in (torch.float16, torch.bfloat16) else {}

    def run(m, tensors):
        x, weight, bias, grad = tensors
        y = m.nn.functional.layer_norm(x, (4, 6), weight, bias, eps=1e-5)
        wanted = [t for t in (x, weight, bias) if t is not None]
        return (y, *m.autograd.grad(y, wanted, grad))

    ours = [None if t is None else from_torch(t.detach()).requires_grad_(t.requires_grad)
            for t in (x, weight, bias, grad)]
    assert_same(run(pyaten, ours), run(torch, (x, weight, bias, grad)), **tolerance)


def test_layer_norm_compiled_equals_numpy_path():
    rng = np.random.default_rng(3)
    x = pyaten.tensor(rng.standard_normal((5, 7, 9)), requires_grad=True)
    weight = pyaten.tensor(rng.standard_normal(9), requires_grad=True)
    runs = []
    for enabled in (True, False):
        compiled.set_enabled(enabled)
        y = pyaten.nn.functional.layer_norm(x, (9,), weight)
        runs.append((y, *pyaten.autograd.grad((y * y).sum(), [x, weight])))
    for fast, reference in zip(*runs):
        assert np.allclose(fast.detach().numpy(), reference.detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 7), (9,), ()])
def test_small_softmax_rows_against_torch_and_the_numpy_path(dtype, log, shape):
    x = _values(shape, dtype)
    if x.dim() == 2:
        x[1, 2] = float("nan")  # a NaN row stays NaN
        x[2] = float("-inf")  # a row of -inf: NaN, as in PyTorch
        x[3, 0] = float("inf")
    name = "log_softmax" if log else "softmax"
    ours = getattr(pyaten, name)(from_torch(x), -1)
    compiled.set_enabled(False)
    try:
        reference = getattr(pyaten, name)(from_torch(x), -1)
    finally:
        compiled.set_enabled(True)
    theirs = getattr(torch, name)(x, -1)
    tolerance = 1e-6 if dtype == torch.float32 else 1e-12
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tolerance * 10,
                               atol=tolerance)
    np.testing.assert_allclose(ours.numpy(), reference.numpy(), rtol=tolerance * 10,
                               atol=tolerance)
    assert ours.dtype == reference.dtype
