"""`narrow_copy` (CPU kernel, out= form, composite form for Meta) and `_reshape_copy`, against
PyTorch: values, dtypes, strides, errors, gradients."""

from __future__ import annotations

import torch
from _helpers import assert_same, assert_same_outcome
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_shape_helpers import make_pair

import pyaten


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
       dim=st.integers(-4, 3), start=st.integers(-7, 7), length=st.integers(-2, 6),
       dtype=st.sampled_from(["float32", "int64", "bool", "complex64"]),
       transposed=st.booleans())
def test_narrow_copy_matches_torch(shape, dim, start, length, dtype, transposed):
    t, p = make_pair(tuple(shape), dtype)
    if transposed and len(shape) >= 2:
        t, p = t.transpose(0, -1), p.transpose(0, -1)
    assert_same_outcome(lambda: pyaten.narrow_copy(p, dim, start, length),
                        lambda: torch.narrow_copy(t, dim, start, length), strides=True)
    assert_same_outcome(lambda: p.narrow_copy(dim, start, length),
                        lambda: t.narrow_copy(dim, start, length), strides=True)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
       dim=st.integers(-4, 3), start=st.integers(-7, 7), length=st.integers(-2, 6))
def test_narrow_copy_on_meta_matches_torch(shape, dim, start, length):
    t = torch.empty(shape, device="meta")
    p = pyaten.empty(shape, device="meta")
    assert_same_outcome(lambda: pyaten.narrow_copy(p, dim, start, length),
                        lambda: torch.narrow_copy(t, dim, start, length), strides=True)


def test_narrow_copy_owns_its_memory():
    p = pyaten.arange(12.0).reshape(3, 4)
    piece = pyaten.narrow_copy(p, 1, 1, 2)
    piece.fill_(-1.0)
    assert p.sum().item() == 66.0
    assert not piece._is_view()


def test_narrow_copy_out():
    t, p = make_pair((3, 4))
    t_out, p_out = torch.empty(0), pyaten.empty(0)
    torch.narrow_copy(t, 1, 1, 2, out=t_out)
    result = pyaten.narrow_copy(p, 1, 1, 2, out=p_out)
    assert result is p_out
    assert_same(p_out, t_out, strides=True)
    p_wrong, t_wrong = pyaten.zeros(2, dtype=pyaten.int64), torch.zeros(2, dtype=torch.int64)
    assert_same_outcome(lambda: pyaten.narrow_copy(p, 1, 1, 2, out=p_wrong),
                        lambda: torch.narrow_copy(t, 1, 1, 2, out=t_wrong))
    assert p_wrong.tolist() == [0, 0]


def test_narrow_copy_gradient_matches_torch():
    # torch 2.13's NarrowCopyBackward0 fails for a negative start ("The size of tensor a (0)
    # must match ..."): there the reference is the gradient of `narrow`, a view of the same
    # elements
    for dim, start, length in [(1, 1, 2), (1, -2, 2), (0, 0, 3), (-1, 4, 0)]:
        t, p = make_pair((3, 4), "float64")
        t.requires_grad_(True)
        p.requires_grad_(True)
        t_op = torch.narrow_copy if start >= 0 else torch.narrow
        t_out = t_op(t, dim, start, length)
        p_out = pyaten.narrow_copy(p, dim, start, length)
        if start >= 0:
            assert type(p_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
        weights = torch.arange(t_out.numel(), dtype=torch.float64).reshape(t_out.shape)
        (t_out * weights).sum().backward()
        (p_out * pyaten.tensor(weights.numpy())).sum().backward()
        assert_same(p.grad, t.grad)
    p = pyaten.randn(3, 4, dtype=pyaten.float64, requires_grad=True)
    assert pyaten.autograd.gradcheck(lambda x: pyaten.narrow_copy(x, 1, -3, 2), (p,))


@settings(max_examples=40, deadline=None)
@given(shape=st.sampled_from([(2, 3), (6,), (1, 2, 3), (0, 4)]),
       size=st.sampled_from([(3, 2), (-1,), (6,), (2, -1), (5, 3), (0,), (1, 6, 1)]),
       transposed=st.booleans())
def test_reshape_copy_matches_torch(shape, size, transposed):
    t, p = make_pair(shape)
    if transposed and len(shape) >= 2:
        t, p = t.transpose(0, -1), p.transpose(0, -1)
    assert_same_outcome(lambda: pyaten.ops.aten._reshape_copy(p, size),
                        lambda: torch.ops.aten._reshape_copy(t, size), strides=True)


def test_reshape_copy_gradient_and_meta():
    t, p = make_pair((2, 3), "float64")
    t.requires_grad_(True)
    p.requires_grad_(True)
    t_out = torch.ops.aten._reshape_copy(t.t(), (6,))
    p_out = pyaten.ops.aten._reshape_copy(p.t(), (6,))
    assert type(p_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    weights = torch.arange(6.0, dtype=torch.float64)
    (t_out * weights).sum().backward()
    (p_out * pyaten.tensor(weights.numpy())).sum().backward()
    assert_same(p.grad, t.grad)
    meta = torch.ops.aten._reshape_copy(torch.empty(2, 3, device="meta"), (3, 2))
    ours = pyaten.ops.aten._reshape_copy(pyaten.empty(2, 3, device="meta"), (3, 2))
    assert_same(ours, meta, strides=True)
