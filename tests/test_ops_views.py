"""Views against PyTorch: diagonal unfold movedim moveaxis swapaxes swapdims unflatten ravel
broadcast_to broadcast_tensors tensor_split hsplit vsplit dsplit atleast_1d/2d/3d meshgrid
(and the existing splits), their `_copy` forms, the scatters, resize_ / resize_as_ and
as_strided: values, strides, storage offsets, storage and version-counter sharing (`_base`,
`_is_view()`), Meta, errors, and PyTorch's OpInfo samples with their storage kept (as_strided
reads the whole storage, so a sample that is a view of a larger tensor must stay one)."""

from __future__ import annotations

import warnings

import pytest
import torch
from _helpers import DTYPE_NAMES, assert_same, assert_same_outcome, run_both, same_error
from _helpers import to_pyaten as _plain_to_pyaten
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_shape_helpers import make_pair

import pyaten
from pyaten.core.views import as_strided_view

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db


# ---- inputs that keep their storage --------------------------------------------------------------


def storage_pair(t: torch.Tensor) -> pyaten.Tensor:
    """`t` as a pyaten view of a copy of t's whole storage (same sizes, strides, offset)."""
    if not isinstance(t, torch.Tensor):
        return _plain_to_pyaten(t)
    t = t.detach()
    if t.is_contiguous() and t.storage_offset() == 0 and not t._is_view():
        return _plain_to_pyaten(t)
    count = t.untyped_storage().nbytes() // t.element_size()
    whole = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (count,), (1,))
    base = _plain_to_pyaten(whole.clone())
    return as_strided_view(base, tuple(t.shape), tuple(t.stride()), t.storage_offset())


def to_pyaten(x):
    if isinstance(x, (list, tuple)):
        return type(x)(to_pyaten(v) for v in x)
    if isinstance(x, dict):
        return {k: to_pyaten(v) for k, v in x.items()}
    return storage_pair(x)


def layout_pair(shape: tuple, dtype: str, layout: str):
    """A torch/pyaten pair of `shape`: row-major, with its dims reversed in memory
    ("transposed"), or every other element of a wider tensor ("strided")."""
    if layout == "transposed" and len(shape) >= 2:
        t, p = make_pair(tuple(reversed(shape)), dtype)
        order = tuple(range(len(shape) - 1, -1, -1))
        return t.permute(order), p.permute(order)
    if layout == "strided" and len(shape) >= 1:
        t, p = make_pair(tuple(shape[:-1]) + (2 * shape[-1],), dtype)
        return t[..., ::2], p[..., ::2]
    return make_pair(shape, dtype)


LAYOUTS = ("contiguous", "transposed", "strided")


def assert_aliasing_like_torch(got, expected, p, t) -> None:
    """Each output shares storage (and then the version counter, `_base`) exactly when
    torch's does, and `_is_view()` agrees."""
    if isinstance(expected, torch.Tensor):
        got, expected = [got], [expected]
    for g, e in zip(got, expected):
        shares = e.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
        assert (g.untyped_storage() is p.untyped_storage()) == shares
        assert g._is_view() == e._is_view()
        assert g.storage_offset() == e.storage_offset()
        if e._is_view() and shares:
            root = p if p._base is None else p._base
            assert g._base is root
            before = p._version
            g._bump_version()
            assert p._version == before + 1


# ---- views ---------------------------------------------------------------------------------------

VIEW_CASES = [
    ("diagonal", lambda m, x: x.diagonal(), (3, 4)),
    ("diagonal_offset", lambda m, x: m.diagonal(x, 1, 1, 2), (2, 3, 4)),
    ("diagonal_neg", lambda m, x: x.diagonal(-2, -1, 0), (4, 3, 2)),
    ("diagonal_past_end", lambda m, x: x.diagonal(7), (3, 4)),
    ("diagonal_kw", lambda m, x: x.diagonal(offset=-1, dim1=1, dim2=0), (3, 4)),
    ("diagonal_empty", lambda m, x: x.diagonal(), (0, 4)),
    ("unfold", lambda m, x: x.unfold(1, 2, 1), (2, 5, 3)),
    ("unfold_step", lambda m, x: x.unfold(-1, 2, 3), (2, 7)),
    ("unfold_0d", lambda m, x: x.unfold(0, 1, 1), ()),
    ("unfold_size0", lambda m, x: x.unfold(0, 0, 1), (3,)),
    ("movedim", lambda m, x: x.movedim(0, -1), (2, 3, 4)),
    ("movedim_list", lambda m, x: m.movedim(x, (0, 1), (2, 0)), (2, 3, 4)),
    ("movedim_0d", lambda m, x: x.movedim(0, 0), ()),
    ("moveaxis", lambda m, x: m.moveaxis(x, -1, 0), (2, 3, 4)),
    ("moveaxis_list", lambda m, x: x.moveaxis((2,), (1,)), (2, 3, 4)),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, 2), (2, 3, 4)),
    ("swapdims", lambda m, x: x.swapdims(-1, 1), (2, 3, 4)),
    ("unflatten", lambda m, x: x.unflatten(1, (2, -1)), (2, 6)),
    ("unflatten_fn", lambda m, x: m.unflatten(x, -1, (3, 1, 2)), (2, 6)),
    ("unflatten_empty", lambda m, x: x.unflatten(0, (0, 4)), (0, 2)),
    ("ravel", lambda m, x: x.ravel(), (2, 3)),
    ("ravel_fn", lambda m, x: m.ravel(x), ()),
    ("broadcast_to", lambda m, x: x.broadcast_to((2, 3, 4)), (3, 1)),
    ("broadcast_to_fn", lambda m, x: m.broadcast_to(x, (-1, 2)), (3, 1)),
    ("broadcast_tensors", lambda m, x: m.broadcast_tensors(x, m.ones(2, 1, 1)), (3, 1)),
    ("broadcast_tensors_one", lambda m, x: m.broadcast_tensors(x), (3, 1)),
    ("tensor_split", lambda m, x: x.tensor_split(3, 1), (2, 7)),
    ("tensor_split_more", lambda m, x: m.tensor_split(x, 5), (3, 2)),
    ("tensor_split_indices", lambda m, x: x.tensor_split([1, 4, 2], dim=-1), (2, 7)),
    ("tensor_split_tensor", lambda m, x: x.tensor_split(m.tensor([1, 3]), 1), (2, 7)),
    ("tensor_split_tensor0d", lambda m, x: x.tensor_split(m.tensor(2)), (5, 2)),
    ("hsplit", lambda m, x: x.hsplit(2), (3, 4)),
    ("hsplit_1d", lambda m, x: m.hsplit(x, [1, 3]), (6,)),
    ("vsplit", lambda m, x: m.vsplit(x, 2), (4, 3)),
    ("vsplit_array", lambda m, x: x.vsplit([2]), (4, 3)),
    ("dsplit", lambda m, x: x.dsplit(3), (2, 2, 3)),
    ("dsplit_array", lambda m, x: m.dsplit(x, [1]), (2, 2, 3)),
    ("atleast_1d", lambda m, x: m.atleast_1d(x), ()),
    ("atleast_1d_same", lambda m, x: m.atleast_1d(x), (2, 3)),
    ("atleast_2d", lambda m, x: m.atleast_2d(x), (3,)),
    ("atleast_2d_list", lambda m, x: m.atleast_2d([x, x[0]]), (3,)),
    ("atleast_3d", lambda m, x: m.atleast_3d(x), (2, 3)),
    ("atleast_3d_args", lambda m, x: m.atleast_3d(x, x[0], x[0, 0]), (2, 3)),
    ("meshgrid_ij", lambda m, x: m.meshgrid(x[0], x[1, :2], indexing="ij"), (2, 3)),
    ("meshgrid_xy", lambda m, x: m.meshgrid([x[0], x[1, :2], x[0, 0]], indexing="xy"), (2, 3)),
    ("meshgrid_one", lambda m, x: m.meshgrid(x, indexing="xy"), (3,)),
    ("split", lambda m, x: x.split(2, 1), (2, 5)),
    ("split_sizes", lambda m, x: m.split(x, [1, 4], 1), (2, 5)),
    ("chunk", lambda m, x: x.chunk(3), (5, 2)),
    ("unbind", lambda m, x: m.unbind(x, 1), (2, 3)),
    ("expand_as", lambda m, x: x.expand_as(m.ones(2, 3, 1)), (3, 1)),
    ("expand_0d", lambda m, x: x.expand(1, 3), ()),
    ("view_as", lambda m, x: x.view_as(m.ones(3, 2)), (2, 3)),
]

VIEW_PARAMS = [
    pytest.param(fn, shape, dtype, layout, id=f"{name}-{dtype}-{layout}")
    for name, fn, shape in VIEW_CASES
    for dtype in ("float32", "int64", "bool", "complex64", "bfloat16")
    for layout in LAYOUTS
    if dtype == "float32" or layout == "contiguous"
]


@pytest.mark.parametrize("fn,shape,dtype,layout", VIEW_PARAMS)
def test_views_match_torch(fn, shape, dtype, layout):
    t, p = layout_pair(shape, dtype, layout)
    pair = run_both(lambda: fn(pyaten, p), lambda: fn(torch, t))
    if pair is not None:
        assert_same(*pair, strides=True)
        assert_aliasing_like_torch(*pair, p, t)


@pytest.mark.parametrize("fn,shape", [(fn, shape) for _, fn, shape in VIEW_CASES],
                         ids=[c[0] for c in VIEW_CASES])
def test_views_on_meta(fn, shape):
    t = torch.empty(shape, device="meta")
    p = pyaten.empty(shape, device="meta")
    if "tensor_split_tensor" in repr(fn.__code__.co_consts):
        return  # the indices tensor is on the CPU (torch refuses meta ones, as we do)
    assert_same_outcome(lambda: fn(pyaten, p), lambda: fn(torch, t), strides=True)


def test_broadcast_tensors_returns_unchanged_inputs_themselves():
    a, b = pyaten.ones(2, 3), pyaten.ones(3)
    ra, rb = pyaten.broadcast_tensors(a, b)
    assert ra is a and rb._base is b and isinstance(pyaten.broadcast_tensors(a), tuple)


def test_atleast_returns_self_when_already_enough_dims():
    a = pyaten.ones(2, 3)
    assert pyaten.atleast_1d(a) is a and pyaten.atleast_2d(a) is a
    assert pyaten.ops.aten.atleast_3d.default(pyaten.ones(1, 1, 1)) is not a


def test_meshgrid_without_indexing_warns_like_torch():
    with pytest.warns(UserWarning, match="it will be required to pass the indexing"):
        grids = pyaten.meshgrid(pyaten.arange(2), pyaten.arange(3))
    assert_same(grids, torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij"))


INPLACE_VIEW_CASES = [
    ("swapaxes_", lambda x: x.swapaxes_(0, -1), (2, 3, 4)),
    ("swapdims_", lambda x: x.swapdims_(1, 0), (2, 3)),
    ("swapdims_same", lambda x: x.swapdims_(1, 1), (2, 3)),
]


@pytest.mark.parametrize("name,fn,shape", INPLACE_VIEW_CASES,
                         ids=[c[0] for c in INPLACE_VIEW_CASES])
def test_inplace_views_match_torch(name, fn, shape):
    t, p = make_pair(shape)
    t_version, p_version = t._version, p._version
    assert fn(p) is p
    fn(t)
    assert_same(p, t, strides=True)
    assert p._version - p_version == t._version - t_version


# its message prints the tensor, which pyaten prints its own way
MESHGRID_2D = lambda m, x: m.meshgrid(x, x, indexing="ij")  # noqa: E731

VIEW_ERRORS = [
    ("diagonal_same", lambda m, x: x.diagonal(0, 1, -1), (2, 3)),
    ("diagonal_range", lambda m, x: x.diagonal(0, 0, 2), (2, 3)),
    ("diagonal_1d", lambda m, x: x.diagonal(), (3,)),
    ("diagonal_0d", lambda m, x: x.diagonal(), ()),
    ("unfold_big", lambda m, x: x.unfold(1, 4, 1), (2, 3)),
    ("unfold_step0", lambda m, x: x.unfold(1, 2, 0), (2, 3)),
    ("unfold_negative", lambda m, x: x.unfold(1, -1, 1), (2, 3)),
    ("unfold_range", lambda m, x: x.unfold(2, 1, 1), (2, 3)),
    ("unfold_0d_big", lambda m, x: x.unfold(0, 2, 1), ()),
    ("movedim_len", lambda m, x: x.movedim((0, 1), (1,)), (2, 3)),
    ("movedim_dup_src", lambda m, x: x.movedim((0, 0), (0, 1)), (2, 3)),
    ("movedim_dup_dst", lambda m, x: x.movedim((0, 1), (1, 1)), (2, 3)),
    ("movedim_range", lambda m, x: x.movedim(0, 2), (2, 3)),
    ("swapaxes_range", lambda m, x: x.swapaxes(0, 2), (2, 3)),
    ("unflatten_mult", lambda m, x: x.unflatten(1, (4, -1)), (2, 6)),
    ("unflatten_sizes", lambda m, x: x.unflatten(1, (5, 2)), (2, 6)),
    ("unflatten_empty_sizes", lambda m, x: x.unflatten(1, ()), (2, 6)),
    ("unflatten_range", lambda m, x: x.unflatten(3, (1,)), (2, 6)),
    ("broadcast_to_fewer", lambda m, x: x.broadcast_to((3,)), (2, 3)),
    ("broadcast_to_mismatch", lambda m, x: m.broadcast_to(x, (2, 4)), (2, 3)),
    ("broadcast_tensors", lambda m, x: m.broadcast_tensors(x, m.ones(4)), (2, 3)),
    ("tensor_split_0", lambda m, x: x.tensor_split(0), (2, 3)),
    ("tensor_split_0d", lambda m, x: x.tensor_split(2), ()),
    ("tensor_split_2d_idx", lambda m, x: x.tensor_split(m.tensor([[1]])), (2, 3)),
    ("tensor_split_float_idx", lambda m, x: x.tensor_split(m.tensor([1.0])), (2, 3)),
    ("hsplit_divisible", lambda m, x: x.hsplit(2), (2, 3)),
    ("hsplit_zero", lambda m, x: x.hsplit(0), (2, 3)),
    ("hsplit_0d", lambda m, x: m.hsplit(x, 1), ()),
    ("vsplit_1d", lambda m, x: x.vsplit(1), (3,)),
    ("vsplit_array_1d", lambda m, x: x.vsplit([1]), (3,)),
    ("dsplit_2d", lambda m, x: x.dsplit(1), (2, 3)),
    ("dsplit_divisible", lambda m, x: x.dsplit(2), (2, 2, 3)),
    ("meshgrid_2d", MESHGRID_2D, (2, 2)),
    ("meshgrid_dtypes", lambda m, x: m.meshgrid(x, x.long(), indexing="ij"), (2,)),
    ("meshgrid_indexing", lambda m, x: m.meshgrid(x, indexing="ji"), (2,)),
    ("meshgrid_empty", lambda m, x: m.meshgrid([], indexing="ij"), (2,)),
]


@pytest.mark.parametrize("fn,shape", [(fn, shape) for _, fn, shape in VIEW_ERRORS],
                         ids=[c[0] for c in VIEW_ERRORS])
def test_view_errors_match_torch(fn, shape):
    t, p = make_pair(shape)
    same_error(lambda: fn(pyaten, p), lambda: fn(torch, t), message=fn is not MESHGRID_2D)


@pytest.mark.parametrize("sizes", [(-1, -1), (0, -1)])
def test_unflatten_unexpected_errors_name_the_cause(sizes):
    # PyTorch appends a C++ backtrace to these; the first two lines are what we compare
    t, p = make_pair((2, 0) if sizes == (0, -1) else (2, 6))
    same_error(lambda: p.unflatten(1, sizes), lambda: t.unflatten(1, sizes), message=False)
    with pytest.raises(RuntimeError) as ours:
        p.unflatten(1, sizes)
    with pytest.raises(RuntimeError) as theirs:
        t.unflatten(1, sizes)
    assert str(ours.value).splitlines()[:2] == str(theirs.value).splitlines()[:2]


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=2, max_size=4), data=st.data())
def test_diagonal_any_offset_and_dims(shape, data):
    t, p = layout_pair(tuple(shape), "int32", data.draw(st.sampled_from(LAYOUTS)))
    ndim = len(shape)
    d1, d2 = data.draw(st.lists(st.integers(-ndim, ndim - 1), min_size=2, max_size=2))
    offset = data.draw(st.integers(-5, 5))
    pair = run_both(lambda: p.diagonal(offset, d1, d2), lambda: t.diagonal(offset, d1, d2))
    if pair is not None:
        assert_same(*pair, strides=True)
        assert pair[0].storage_offset() == pair[1].storage_offset()


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_movedim_any_permutation(shape, data):
    t, p = make_pair(tuple(shape), "int16")
    ndim = len(shape)
    count = data.draw(st.integers(0, ndim))
    source = data.draw(st.permutations(range(ndim)))[:count]
    destination = data.draw(st.permutations(range(-ndim, 0)))[:count]
    assert_same_outcome(lambda: p.movedim(source, destination),
                        lambda: t.movedim(source, destination), strides=True)


@settings(max_examples=25, deadline=None)
@given(size=st.integers(0, 9), indices=st.lists(st.integers(-12, 12), max_size=4),
       sections=st.integers(1, 11))
def test_tensor_split_any_indices_or_sections(size, indices, sections):
    t, p = make_pair((2, size))
    assert_same(p.tensor_split(indices, 1), t.tensor_split(indices, 1), strides=True)
    assert_same(p.tensor_split(sections, -1), t.tensor_split(sections, -1), strides=True)


# ---- the _copy forms -----------------------------------------------------------------------------

COPY_CASES = [
    ("view_copy", lambda m, x: m.view_copy(x, (3, 2)), (2, 3)),
    ("view_copy_not_viewable", lambda m, x: m.view_copy(x.t(), (6,)), (2, 3)),
    ("view_copy_dtype", lambda m, x: m.view_copy(x, m.int32), (2, 3)),
    ("as_strided_copy", lambda m, x: m.as_strided_copy(x, (2, 2), (1, 2), 1), (2, 3)),
    ("diagonal_copy", lambda m, x: m.diagonal_copy(x, 1), (3, 4)),
    ("expand_copy", lambda m, x: m.expand_copy(x, (2, 3, 2)), (3, 1)),
    ("permute_copy", lambda m, x: m.permute_copy(x, (1, 0)), (2, 3)),
    ("select_copy", lambda m, x: m.select_copy(x, 1, -1), (2, 3)),
    ("slice_copy", lambda m, x: m.slice_copy(x, 1, 1, None, 2), (2, 5)),
    ("split_copy", lambda m, x: m.split_copy(x, 2, 1), (2, 5)),
    ("split_with_sizes_copy", lambda m, x: m.split_with_sizes_copy(x, [1, 4], 1), (2, 5)),
    ("squeeze_copy", lambda m, x: m.squeeze_copy(x), (1, 3, 1)),
    ("squeeze_copy_dim", lambda m, x: m.squeeze_copy(x, 0), (1, 3, 1)),
    ("squeeze_copy_dims", lambda m, x: m.squeeze_copy(x, [0, 2]), (1, 3, 1)),
    ("t_copy", lambda m, x: m.t_copy(x), (2, 3)),
    ("transpose_copy", lambda m, x: m.transpose_copy(x, 0, -1), (2, 3, 4)),
    ("unsqueeze_copy", lambda m, x: m.unsqueeze_copy(x, 1), (2, 3)),
    ("unbind_copy", lambda m, x: m.unbind_copy(x, 1), (2, 3)),
    ("unfold_copy", lambda m, x: m.unfold_copy(x, 1, 2, 1), (2, 3)),
    ("alias_copy", lambda m, x: m.alias_copy(x), (2, 3)),
    ("neg_view_copy", lambda m, x: m._neg_view_copy(x), (2, 3)),
]


@pytest.mark.parametrize("fn,shape,layout", [
    pytest.param(fn, shape, layout, id=f"{name}-{layout}")
    for name, fn, shape in COPY_CASES for layout in LAYOUTS
])
def test_copy_forms_match_torch_and_own_their_memory(fn, shape, layout):
    t, p = layout_pair(shape, "float32", layout)
    pair = run_both(lambda: fn(pyaten, p), lambda: fn(torch, t))
    if pair is None:
        return
    got, expected = pair
    assert_same(got, expected, strides=True)
    for g in got if isinstance(got, (list, tuple)) else [got]:
        assert g.untyped_storage() is not p.untyped_storage() and not g._is_view()


@pytest.mark.parametrize("fn,shape", [(fn, shape) for _, fn, shape in COPY_CASES],
                         ids=[c[0] for c in COPY_CASES])
def test_copy_forms_on_meta(fn, shape):
    t = torch.empty(shape, device="meta")
    p = pyaten.empty(shape, device="meta")
    assert_same_outcome(lambda: fn(pyaten, p), lambda: fn(torch, t), strides=True)


def test_complex_copy_forms():
    t, p = make_pair((2, 3), "complex64")
    for name in ("view_as_real_copy", "_conj_copy"):
        assert_same(getattr(pyaten, name)(p), getattr(torch, name)(t), strides=True)
    t, p = make_pair((2, 3, 2), "float32")
    assert_same(pyaten.view_as_complex_copy(p), torch.view_as_complex_copy(t), strides=True)


LIST_OUT_CASES = [
    ("split_copy", lambda m, x, out: m.split_copy(x, 1, out=out)),
    ("split_with_sizes_copy", lambda m, x, out: m.split_with_sizes_copy(x, [1, 1], out=out)),
    ("unbind_copy", lambda m, x, out: m.unbind_copy(x, out=out)),
]
LIST_OUTS = [
    ("empty", lambda m: [m.empty(0), m.empty(0)]),
    ("sized", lambda m: [m.empty(1, 3), m.empty(1, 3)]),
    ("flat", lambda m: [m.empty(3), m.empty(3)]),
    ("transposed", lambda m: [m.empty(2, 3).t(), m.empty(2, 3).t()]),
    ("double", lambda m: [m.empty(3, dtype=m.float64), m.empty(3)]),
    ("one", lambda m: [m.empty(3)]),
]


@pytest.mark.parametrize("fn", [c[1] for c in LIST_OUT_CASES], ids=[c[0] for c in LIST_OUT_CASES])
@pytest.mark.parametrize("outs", [c[1] for c in LIST_OUTS], ids=[c[0] for c in LIST_OUTS])
def test_list_out_copy_forms(fn, outs):
    t, p = make_pair((2, 3))
    t_out, p_out = outs(torch), outs(pyaten)
    pair = run_both(lambda: fn(pyaten, p, p_out), lambda: fn(torch, t, t_out))
    if pair is not None:
        assert pair[0] is None and pair[1] is None
        assert_same(p_out, t_out, strides=True)


# ---- scatters ------------------------------------------------------------------------------------

SCATTER_CASES = [
    ("diagonal", lambda m, x: x.diagonal_scatter(m.zeros(3, dtype=x.dtype), 0), (3, 4)),
    ("diagonal_dims", lambda m, x: m.diagonal_scatter(x, m.ones(2, 3, dtype=x.dtype), -1, 2, 1),
     (2, 3, 4)),
    ("diagonal_empty", lambda m, x: x.diagonal_scatter(m.ones(0, dtype=x.dtype), 9), (3, 4)),
    ("as_strided", lambda m, x: x.as_strided_scatter(m.ones(2, 2, dtype=x.dtype), (2, 2), (1, 2)),
     (3, 4)),
    ("as_strided_offset", lambda m, x: m.as_strided_scatter(x, m.ones(2, dtype=x.dtype), (2,),
                                                            (5,), 1), (3, 4)),
    ("as_strided_0d", lambda m, x: m.as_strided_scatter(x, m.ones((), dtype=x.dtype), (), ()),
     (1,)),
    ("select", lambda m, x: x.select_scatter(m.ones(4, dtype=x.dtype), 0, -1), (3, 4)),
    ("slice", lambda m, x: m.slice_scatter(x, m.ones(3, 2, dtype=x.dtype), 1, 0, None, 2),
     (3, 4)),
]


@pytest.mark.parametrize("fn,shape,dtype,layout", [
    pytest.param(fn, shape, dtype, layout, id=f"{name}-{dtype}-{layout}")
    for name, fn, shape in SCATTER_CASES
    for dtype in DTYPE_NAMES
    for layout in LAYOUTS
    if dtype in ("float32", "int64") or layout == "contiguous"
])
def test_scatters_match_torch_and_keep_strides(fn, shape, dtype, layout):
    t, p = layout_pair(shape, dtype, layout)
    if "as_strided" in repr(fn.__code__.co_names) and layout != "contiguous":
        t, p = t.contiguous(), p.contiguous()  # torch's as_strided_scatter: contiguous input
    p_version = p._version
    got, expected = run_both(lambda: fn(pyaten, p), lambda: fn(torch, t))
    assert_same(got, expected, strides=True)
    assert got.storage_offset() == expected.storage_offset()
    assert got.untyped_storage() is not p.untyped_storage() and p._version == p_version
    assert_same(p, t)  # the input is left alone


@pytest.mark.parametrize("fn,shape", [(fn, shape) for _, fn, shape in SCATTER_CASES],
                         ids=[c[0] for c in SCATTER_CASES])
def test_scatters_on_meta(fn, shape):
    t = torch.empty(shape, device="meta")
    p = pyaten.empty(shape, device="meta")
    assert_same_outcome(lambda: fn(pyaten, p), lambda: fn(torch, t), strides=True)


def test_scatter_of_an_expanded_self_is_dense():
    t, p = torch.ones(3).expand(2, 3), pyaten.ones(3).expand(2, 3)
    assert_same(p.diagonal_scatter(pyaten.zeros(2)), t.diagonal_scatter(torch.zeros(2)),
                strides=True)


@pytest.mark.parametrize("fn", [
    lambda m, x: x.diagonal_scatter(m.ones(2)),
    lambda m, x: x.diagonal_scatter(m.ones(3), 0, 1, 1),
    lambda m, x: x.as_strided_scatter(m.ones(3), (2,), (1,)),
    lambda m, x: x.as_strided_scatter(m.ones(100), (100,), (1,)),
    lambda m, x: x.select_scatter(m.ones(3), 0, 0),
])
def test_scatter_errors_match_torch(fn):
    t, p = make_pair((3, 4))
    same_error(lambda: fn(pyaten, p), lambda: fn(torch, t))


# ---- resize_, resize_as_ -------------------------------------------------------------------------

RESIZE_CASES = [
    ("same", lambda m, x: x.resize_(x.shape)),
    ("shrink", lambda m, x: x.resize_(2)),
    ("grow", lambda m, x: x.resize_(4, 5)),
    ("empty", lambda m, x: x.resize_(0)),
    ("contiguous_format", lambda m, x: x.resize_(x.shape, memory_format=m.contiguous_format)),
    ("channels_last", lambda m, x: x.resize_(2, 3, 1, 2, memory_format=m.channels_last)),
    ("preserve", lambda m, x: x.resize_(2, memory_format=m.preserve_format)),
    ("negative", lambda m, x: x.resize_(-1, 2)),
    ("as", lambda m, x: x.resize_as_(m.ones(3, 1))),
    ("as_fn", lambda m, x: m.resize_as_(x, m.ones(2, 3, 4).transpose(0, 2))),
    ("as_preserve", lambda m, x: x.resize_as_(m.ones(1, 2, 2, 3).permute(0, 3, 1, 2),
                                              memory_format=m.preserve_format)),
    ("as_int", lambda m, x: x.resize_as_(m.ones(5, dtype=m.int64))),
]


@pytest.mark.parametrize("fn", [c[1] for c in RESIZE_CASES], ids=[c[0] for c in RESIZE_CASES])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_resize_matches_torch(fn, layout):
    t, p = layout_pair((2, 3), "float32", layout)
    t = t.clone(memory_format=torch.preserve_format) if layout == "transposed" else t
    p = p.clone() if layout == "transposed" else p
    t_version, p_version = t._version, p._version
    pair = run_both(lambda: fn(pyaten, p), lambda: fn(torch, t))
    if pair is None:
        return
    got, expected = pair
    assert got is p
    assert tuple(got.shape) == tuple(expected.shape) and got.stride() == expected.stride()
    assert p._version - p_version == t._version - t_version
    kept = min(6, got.numel())  # the old elements stay where they were in memory
    assert_same(got.as_strided((kept,), (1,), 0), expected.as_strided((kept,), (1,), 0))


@pytest.mark.parametrize("fn", [c[1] for c in RESIZE_CASES], ids=[c[0] for c in RESIZE_CASES])
def test_resize_on_meta(fn):
    t, p = torch.empty(2, 3, device="meta"), pyaten.empty(2, 3, device="meta")
    pair = run_both(lambda: fn(pyaten, p), lambda: fn(torch, t))
    if pair is not None:
        assert_same(*pair, strides=True)


def test_resize_of_a_view_and_of_borrowed_memory():
    tb, pb = make_pair((6,))
    tv, pv = tb[1:3], pb[1:3]
    pv.resize_(4)
    tv.resize_(4)
    assert_same(pv, tv, strides=True)
    assert pv._base is pb and pb._version == tb._version
    import numpy as np

    same_error(lambda: pyaten.from_numpy(np.ones(3)).resize_(10),
               lambda: torch.from_numpy(np.ones(3)).resize_(10))


def test_functional_resize_leaves_self_alone():
    for m in (torch, pyaten):
        x = m.arange(6.0)
        r = m.ops.aten.resize.default(x, [2, 2])
        assert tuple(r.shape) == (2, 2) and tuple(x.shape) == (6,)


# ---- as_strided: the fix and its OpInfo samples --------------------------------------------------

AS_STRIDED_CASES = [
    ("storage_offset_none", lambda m, b: b[5:15].as_strided((2, 2), (1, 2))),
    ("storage_offset_0", lambda m, b: m.as_strided(b[5:15], (2, 2), (1, 2), 0)),
    ("storage_offset_10", lambda m, b: b[5:15].as_strided((2, 2), (1, 2), storage_offset=10)),
    ("overlapping", lambda m, b: b.as_strided((3, 3), (1, 1))),
    ("zero_stride", lambda m, b: b[3].as_strided((2, 2), (0, 0))),
    ("empty_past_end", lambda m, b: b.as_strided((0,), (1,), 100)),
    ("bounds", lambda m, b: b.as_strided((2,), (1,), 19)),
    ("negative_size", lambda m, b: b.as_strided((-1, 3), (1, 1))),
    ("negative_stride", lambda m, b: b.as_strided((2,), (-1,), -1)),
    ("negative_offset", lambda m, b: b.as_strided((-2,), (1,), -1)),
    ("lengths", lambda m, b: b.as_strided((2, 3), (1,))),
]


@pytest.mark.parametrize("fn", [c[1] for c in AS_STRIDED_CASES],
                         ids=[c[0] for c in AS_STRIDED_CASES])
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_as_strided_reads_the_whole_storage(fn, device):
    t = torch.arange(20.0).to(device)
    p = pyaten.arange(20.0).to(device)
    pair = run_both(lambda: fn(pyaten, p), lambda: fn(torch, t))
    if pair is not None:
        assert_same(*pair, strides=True)
        assert pair[0].storage_offset() == pair[1].storage_offset()
        assert_aliasing_like_torch(pair[0], pair[1], p, t) if device == "cpu" else None


# ---- PyTorch's OpInfo samples --------------------------------------------------------------------

OPINFO_NAMES = frozenset("""
as_strided as_strided_scatter diagonal diagonal_scatter select_scatter slice_scatter unfold
movedim swapaxes swapdims unflatten ravel broadcast_to broadcast_tensors tensor_split hsplit
vsplit dsplit atleast_1d atleast_2d atleast_3d meshgrid split split_with_sizes unbind chunk
expand expand_as view_as reshape_as sum_to_size view_copy expand_copy permute_copy t_copy
unfold_copy resize_
""".split())


def opinfo_callable(info):
    """pyaten's counterpart of an OpInfo's `op`: the function or method of that name, or the
    OpInfo's own lambda when it only calls methods of its input."""
    name = info.name
    if info.op is getattr(torch, name, None):
        return getattr(pyaten, name)
    if info.op is getattr(torch.Tensor, name, None):
        return getattr(pyaten.Tensor, name)
    if "torch." not in repr(info.op.__code__.co_names) and "torch" not in info.op.__code__.co_names:
        return info.op
    return None


def opinfo_params(names: frozenset, dtypes=(torch.float32, torch.int64)):
    params = []
    for info in op_db:
        if info.name in names and opinfo_callable(info) is not None:
            for dtype in dtypes:
                if dtype in info.supported_dtypes("cpu"):
                    label = info.name + (f".{info.variant_test_name}" if info.variant_test_name
                                         else "")
                    params.append(pytest.param(info, dtype, id=f"{label}-{str(dtype)[6:]}"))
    return params


def check_opinfo_samples(info, dtype) -> None:
    ours = opinfo_callable(info)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(info.sample_inputs("cpu", dtype))
    for sample in samples[:15]:
        args = (to_pyaten(sample.input), *to_pyaten(tuple(sample.args)))
        kwargs = to_pyaten(dict(sample.kwargs))
        pair = run_both(lambda a=args, k=kwargs: ours(*a, **k),
                        lambda s=sample: info.op(s.input, *s.args, **s.kwargs))
        if pair is not None:
            assert_same(*pair, strides=True)


@pytest.mark.parametrize("info,dtype", opinfo_params(OPINFO_NAMES))
def test_opinfo_samples(info, dtype):
    check_opinfo_samples(info, dtype)
