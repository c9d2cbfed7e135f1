"""Views vs PyTorch: view reshape transpose t permute expand squeeze unsqueeze select slice
as_strided (+ view.dtype, view_as, reshape_as, expand_as, alias): values, shapes, strides,
storage sharing, the version counter, and errors."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_shape_helpers import assert_same, assert_same_error, make_pair

import pyaten

aten = pyaten.ops.aten

# (name, callable taking the module-like namespace and a tensor, source shape)
VIEW_CASES = [
    ("view", lambda m, x: x.view(3, 4), (2, 6)),
    ("view_infer", lambda m, x: x.view(-1, 2), (2, 6)),
    ("view_0d", lambda m, x: x.view(1, 1), ()),
    ("view_to_0d", lambda m, x: x.view(()), (1,)),
    ("view_empty", lambda m, x: x.view(0, 5), (5, 0)),
    ("view_transposed_ok", lambda m, x: x.t().view(3, 2, 1), (2, 3)),
    ("view_dtype_same_size", lambda m, x: x.view(m.int32), (2, 3)),
    ("view_dtype_smaller", lambda m, x: x.view(m.int16), (2, 3)),
    ("view_dtype_bigger", lambda m, x: x.view(m.float64), (2, 4)),
    ("view_as", lambda m, x: x.view_as(m.empty(4, 3)), (2, 6)),
    ("reshape_view", lambda m, x: x.reshape(6, 2), (3, 4)),
    ("reshape_copy", lambda m, x: x.t().reshape(12), (3, 4)),
    ("reshape_fn", lambda m, x: m.reshape(x, (-1,)), (3, 4)),
    ("reshape_as", lambda m, x: x.reshape_as(m.empty(2, 6)), (3, 4)),
    ("transpose", lambda m, x: x.transpose(0, 2), (2, 3, 4)),
    ("transpose_neg", lambda m, x: m.transpose(x, -1, -2), (2, 3, 4)),
    ("transpose_0d", lambda m, x: x.transpose(0, -1), ()),
    ("t_2d", lambda m, x: x.t(), (2, 3)),
    ("t_1d", lambda m, x: m.t(x), (3,)),
    ("t_0d", lambda m, x: x.t(), ()),
    ("permute", lambda m, x: x.permute(2, 0, 1), (2, 3, 4)),
    ("permute_fn_neg", lambda m, x: m.permute(x, (-1, 0, 1)), (2, 3, 4)),
    ("expand", lambda m, x: x.expand(2, 3, 4), (3, 1)),
    ("expand_keep", lambda m, x: x.expand(-1, 5), (3, 1)),
    ("expand_0d", lambda m, x: x.expand(2, 2), ()),
    ("expand_as", lambda m, x: x.expand_as(m.empty(4, 3, 1)), (3, 1)),
    ("squeeze_all", lambda m, x: x.squeeze(), (1, 3, 1, 2)),
    ("squeeze_dim", lambda m, x: m.squeeze(x, 2), (1, 3, 1, 2)),
    ("squeeze_dim_noop", lambda m, x: x.squeeze(1), (1, 3, 1, 2)),
    ("squeeze_dims", lambda m, x: x.squeeze((0, -2)), (1, 3, 1, 2)),
    ("squeeze_0d", lambda m, x: x.squeeze(0), ()),
    ("unsqueeze", lambda m, x: x.unsqueeze(1), (2, 3)),
    ("unsqueeze_end", lambda m, x: m.unsqueeze(x, -1), (2, 3)),
    ("unsqueeze_0d", lambda m, x: x.unsqueeze(0), ()),
    ("select", lambda m, x: x.select(1, 2), (2, 3, 4)),
    ("select_neg", lambda m, x: m.select(x, -1, -1), (2, 3, 4)),
    ("slice", lambda m, x: m.ops.aten.slice.Tensor(x, 1, 1, 3), (2, 4)),
    ("slice_step", lambda m, x: m.ops.aten.slice.Tensor(x, 0, None, None, 2), (5, 2)),
    ("slice_clamp", lambda m, x: m.ops.aten.slice.Tensor(x, 0, -10, 100), (5, 2)),
    ("slice_empty", lambda m, x: m.ops.aten.slice.Tensor(x, 0, 4, 2), (5, 2)),
    ("as_strided", lambda m, x: x.as_strided((2, 2), (1, 2)), (2, 3)),
    ("as_strided_offset", lambda m, x: m.as_strided(x, (2,), (3,), 1), (2, 3)),
    ("alias", lambda m, x: m.ops.aten.alias.default(x), (2, 3)),
]


VIEW_PARAMS = [
    pytest.param(name, fn, shape, dtype, id=f"{name}-{dtype}")
    for name, fn, shape in VIEW_CASES
    for dtype in ("float32", "int64", "bool", "complex64")
    # dtype views reinterpret float32 bytes; other sources are covered by the same code
    if dtype == "float32" or not name.startswith("view_dtype")
]


@pytest.mark.parametrize("name,fn,shape,dtype", VIEW_PARAMS)
def test_view_ops_match_torch(name, fn, shape, dtype):
    t, p = make_pair(shape, dtype)
    expected = fn(torch, t)
    got = fn(pyaten, p)
    assert_same(got, expected, strides=True)
    assert got.storage_offset() == expected.storage_offset()
    # a view shares memory (and the version counter) with its source; a copy does not
    shares = expected.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert (got.untyped_storage() is p.untyped_storage()) == shares
    if shares:
        assert got._base is p
        before = p._version
        got._bump_version()
        assert p._version == before + 1


def test_view_chain_base_is_root():
    p = pyaten.from_numpy(__import__("numpy").arange(6.0))
    v = p.view(2, 3).t()[0]
    assert v._base is p


def test_meta_views_keep_shapes():
    t = torch.empty(2, 3, 4, device="meta")
    p = pyaten.empty(2, 3, 4, device="meta")
    for fn in (lambda x: x.permute(1, 2, 0), lambda x: x.view(6, 4), lambda x: x[1, :, None]):
        assert_same(fn(p), fn(t), strides=True)


ERROR_CASES = [
    ("view_bad_numel", lambda m, x: x.view(4), (2, 3)),
    ("view_two_infer", lambda m, x: x.view(-1, -1), (2, 3)),
    ("view_negative", lambda m, x: x.view(-2, 3), (2, 3)),
    ("view_strides", lambda m, x: x.t().view(6), (2, 3)),
    ("view_dtype_size", lambda m, x: x.view(m.int64), (2, 3)),
    ("view_dtype_stride", lambda m, x: x.t().view(m.int16), (2, 3)),
    ("view_dtype_0d", lambda m, x: x.view(m.int16), ()),
    ("transpose_range", lambda m, x: x.transpose(0, 2), (2, 3)),
    ("t_3d", lambda m, x: x.t(), (2, 3, 4)),
    ("permute_len", lambda m, x: x.permute(0), (2, 3)),
    ("permute_dup", lambda m, x: x.permute(0, 0), (2, 3)),
    ("expand_fewer", lambda m, x: x.expand(3), (2, 3)),
    ("expand_mismatch", lambda m, x: x.expand(2, 4), (2, 3)),
    ("expand_leading_neg", lambda m, x: x.expand(-1, 2, 3), (2, 3)),
    ("squeeze_range", lambda m, x: x.squeeze(3), (2, 3)),
    ("squeeze_dup_range", lambda m, x: x.squeeze(1), ()),
    ("unsqueeze_range", lambda m, x: x.unsqueeze(3), (2, 3)),
    ("select_range", lambda m, x: x.select(0, 5), (2, 3)),
    ("select_0d", lambda m, x: x.select(0, 0), ()),
    ("slice_step", lambda m, x: m.ops.aten.slice.Tensor(x, 0, 0, 2, 0), (2, 3)),
    ("as_strided_negative", lambda m, x: x.as_strided((2,), (-1,)), (2, 3)),
    ("as_strided_bounds", lambda m, x: x.as_strided((10, 10), (1, 1)), (2, 3)),
    ("as_strided_len", lambda m, x: x.as_strided((2,), (1, 2)), (2, 3)),
]


@pytest.mark.parametrize("name,fn,shape", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_view_errors_match_torch(name, fn, shape):
    t, p = make_pair(shape, "float32")
    assert_same_error(lambda: fn(pyaten, p), lambda: fn(torch, t))


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=4),
    data=st.data(),
)
def test_reshape_copies_only_when_torch_does(shape, data):
    t, p = make_pair(tuple(shape), "float32")
    perm = data.draw(st.permutations(range(len(shape))))
    t, p = t.permute(*perm), p.permute(*perm)
    numel = t.numel()
    divisors = [d for d in range(1, numel + 1) if numel % d == 0] or [1]
    first = data.draw(st.sampled_from(divisors)) if numel else 0
    new_shape = (first, -1) if numel else (0, 3)
    expected = t.reshape(new_shape)
    got = p.reshape(new_shape)
    assert_same(got, expected, strides=True)
    viewed = expected.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert (got.untyped_storage() is p.untyped_storage()) == (viewed or numel == 0)


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_view_after_permute_matches_torch(shape, data):
    t, p = make_pair(tuple(shape), "int32")
    perm = data.draw(st.permutations(range(len(shape))))
    t, p = t.permute(*perm), p.permute(*perm)
    target = data.draw(st.sampled_from([(-1,), (1, -1), tuple(reversed(t.shape))]))
    try:
        expected = t.view(target)
    except RuntimeError:
        assert_same_error(lambda: p.view(target), lambda: t.view(target))
        return
    assert_same(p.view(target), expected, strides=True)


INPLACE_VIEW_CASES = [
    ("t_", lambda x: x.t_(), (2, 3)),
    ("transpose_", lambda x: x.transpose_(0, -1), (2, 3, 4)),
    ("squeeze_", lambda x: x.squeeze_(), (1, 3, 1)),
    ("squeeze_dim", lambda x: x.squeeze_(-1), (1, 3, 1)),
    ("squeeze_dims", lambda x: x.squeeze_((0, 2)), (1, 3, 1)),
    ("unsqueeze_", lambda x: x.unsqueeze_(1), (2, 3)),
    ("as_strided_", lambda x: x.as_strided_((2, 2), (1, 2), 1), (2, 3)),
]


@pytest.mark.parametrize(
    "name,fn,shape", INPLACE_VIEW_CASES, ids=[c[0] for c in INPLACE_VIEW_CASES]
)
def test_inplace_views_match_torch(name, fn, shape):
    t, p = make_pair(shape, "float32")
    t_version, p_version = t._version, p._version
    assert fn(p) is p
    fn(t)
    assert_same(p, t, strides=True)
    assert p.storage_offset() == t.storage_offset()
    assert p._version - p_version == t._version - t_version
    # on a view, the base keeps its shape and the view keeps its base
    tb, pb = make_pair((4, 5), "float32")
    tv, pv = tb[1:], pb[1:]
    tv.t_()
    pv.t_()
    assert_same(pv, tv, strides=True)
    assert pv._base is pb and tuple(pb.shape) == (4, 5)


SCATTER_CASES = [
    lambda m, x: m.select_scatter(x, m.zeros(3, 4), 0, 1),
    lambda m, x: x.select_scatter(m.zeros(2, 4, dtype=m.int64), 1, -1),
    lambda m, x: m.select_scatter(x.permute(2, 0, 1), m.ones(2, 3), 0, 0),
    lambda m, x: m.slice_scatter(x, m.zeros(2, 3, 2), 2, 0, 4, 2),
    lambda m, x: x.slice_scatter(m.zeros(1, 3, 4), end=1),
    lambda m, x: x.slice_scatter(m.zeros(1, 3, 4), start=1),
    lambda m, x: m.ops.aten.select_backward.default(m.ones(3, 4), [2, 3, 4], 0, 1),
    lambda m, x: m.ops.aten.slice_backward.default(m.ones(2, 3, 2), [2, 3, 4], 2, 0, 4, 2),
    lambda m, x: x.sum_to_size(3, 4),
    lambda m, x: x.sum_to_size(3, 1),
    lambda m, x: x.sum_to_size(1, 3, 1),
    lambda m, x: x.sum_to_size((2, 3, 4)),
]


@pytest.mark.parametrize("fn", SCATTER_CASES)
def test_scatter_backward_and_sum_to_size(fn):
    t, p = make_pair((2, 3, 4), "float32")
    assert_same(fn(pyaten, p), fn(torch, t), strides=True)
    assert_same(p, t)  # the input is left alone


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x: m.select_scatter(x, m.ones(3), 0, 0),
        lambda m, x: m.slice_scatter(x, m.ones(2, 3, 3), 2, 0, 4, 2),
        lambda m, x: x.sum_to_size(5, 4),
        lambda m, x: x.sum_to_size(1, 2, 3, 4),
    ],
)
def test_scatter_and_sum_to_size_errors(fn):
    t, p = make_pair((2, 3, 4), "float32")
    assert_same_error(lambda: fn(pyaten, p), lambda: fn(torch, t))
