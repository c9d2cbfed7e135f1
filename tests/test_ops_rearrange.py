"""Rearranging operators against PyTorch: flip fliplr flipud roll rot90 repeat tile
repeat_interleave tril triu (and tril_/triu_, out=) diag diag_embed diagflat, and the stacks
hstack vstack dstack column_stack row_stack: every dtype, row-major and strided inputs, 0-d and
empty tensors, keyword arguments, out=, Meta, errors, hypothesis and PyTorch's OpInfo samples.
"""

from __future__ import annotations

import pytest
import torch
from _helpers import DTYPE_NAMES, assert_same, assert_same_outcome, outs, run_both, same_error
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_shape_helpers import make_pair
from test_ops_views import LAYOUTS, check_opinfo_samples, layout_pair, opinfo_params

import pyaten

CASES = [
    ("flip", lambda m, x: x.flip(0), (2, 3, 4)),
    ("flip_dims", lambda m, x: m.flip(x, (0, -1)), (2, 3, 4)),
    ("flip_none", lambda m, x: x.flip(()), (2, 3)),
    ("flip_0d", lambda m, x: x.flip(0), ()),
    ("flip_empty", lambda m, x: m.flip(x, dims=[1]), (0, 3)),
    ("fliplr", lambda m, x: x.fliplr(), (2, 3, 4)),
    ("flipud", lambda m, x: m.flipud(x), (3, 2)),
    ("roll", lambda m, x: x.roll(1), (2, 3, 4)),
    ("roll_dims", lambda m, x: m.roll(x, (1, -5), (0, 2)), (2, 3, 4)),
    ("roll_kw", lambda m, x: x.roll(shifts=-1, dims=1), (2, 3)),
    ("roll_0d", lambda m, x: x.roll(3), ()),
    ("roll_empty", lambda m, x: x.roll(2, 0), (0, 3)),
    ("rot90", lambda m, x: x.rot90(), (2, 3, 4)),
    ("rot90_k2", lambda m, x: m.rot90(x, 2, (1, 2)), (2, 3, 4)),
    ("rot90_k3", lambda m, x: x.rot90(3, [-1, 0]), (2, 3)),
    ("rot90_neg", lambda m, x: x.rot90(k=-1), (2, 3)),
    ("rot90_k0", lambda m, x: x.rot90(4), (2, 3)),
    ("repeat", lambda m, x: x.repeat(2, 1, 3), (2, 3)),
    ("repeat_same", lambda m, x: x.repeat(1, 1), (2, 3)),
    ("repeat_zero", lambda m, x: x.repeat((0, 2)), (2, 3)),
    ("repeat_0d", lambda m, x: x.repeat(2, 3), ()),
    ("tile", lambda m, x: x.tile((2,)), (2, 3)),
    ("tile_more", lambda m, x: m.tile(x, (2, 1, 2)), (2, 3)),
    ("repeat_interleave_int", lambda m, x: x.repeat_interleave(2), (2, 3)),
    ("repeat_interleave_dim", lambda m, x: m.repeat_interleave(x, 3, dim=1), (2, 3)),
    ("repeat_interleave_tensor", lambda m, x: x.repeat_interleave(m.tensor([1, 0, 2]), 1),
     (2, 3)),
    ("repeat_interleave_one", lambda m, x: x.repeat_interleave(m.tensor([2]), 0), (2, 3)),
    ("repeat_interleave_size", lambda m, x: x.repeat_interleave(m.tensor([1, 2]), 0,
                                                                output_size=3), (2, 3)),
    ("repeat_interleave_0d", lambda m, x: x.repeat_interleave(2), ()),
    ("tril", lambda m, x: x.tril(), (3, 4)),
    ("tril_neg", lambda m, x: m.tril(x, -1), (2, 3, 4)),
    ("triu", lambda m, x: x.triu(diagonal=1), (3, 4)),
    ("triu_big", lambda m, x: m.triu(x, 9), (3, 4)),
    ("tril_empty", lambda m, x: x.tril(), (0, 4)),
    ("tril_", lambda m, x: x.clone().tril_(1), (3, 4)),
    ("triu_", lambda m, x: x.clone().triu_(-1), (2, 3, 4)),
    ("diag_embed", lambda m, x: x.diag_embed(), (2, 3)),
    ("diag_embed_offset", lambda m, x: m.diag_embed(x, -1, 0, 2), (2, 3)),
    ("diag_embed_kw", lambda m, x: x.diag_embed(offset=2, dim1=-1, dim2=0), (3,)),
    ("diag_1d", lambda m, x: x.diag(), (3,)),
    ("diag_1d_offset", lambda m, x: m.diag(x, -2), (3,)),
    ("diag_2d", lambda m, x: x.diag(1), (3, 4)),
    ("diag_2d_far", lambda m, x: m.diag(x, diagonal=-5), (3, 4)),
    ("diagflat", lambda m, x: x.diagflat(), (2, 2)),
    ("diagflat_offset", lambda m, x: m.diagflat(x, -1), (3,)),
    ("hstack", lambda m, x: m.hstack([x, x]), (2, 3)),
    ("hstack_1d", lambda m, x: m.hstack((x[0], x[1])), (2, 3)),
    ("hstack_0d", lambda m, x: m.hstack([x[0, 0], x[0]]), (2, 3)),
    ("vstack", lambda m, x: m.vstack([x[0], x]), (2, 3)),
    ("row_stack", lambda m, x: m.row_stack([x, x]), (2, 3)),
    ("dstack", lambda m, x: m.dstack([x, x[0]]), (1, 3)),
    ("column_stack", lambda m, x: m.column_stack([x[0], x.t()]), (3, 3)),
    ("column_stack_0d", lambda m, x: m.column_stack([x[0, 0], x[0, 1]]), (2, 3)),
]

PARAMS = [
    pytest.param(fn, shape, dtype, id=f"{name}-{dtype}")
    for name, fn, shape in CASES
    for dtype in DTYPE_NAMES
]


@pytest.mark.parametrize("fn,shape,dtype", PARAMS)
def test_matches_torch(fn, shape, dtype):
    t, p = make_pair(shape, dtype)
    assert_same_outcome(lambda: fn(pyaten, p), lambda: fn(torch, t), strides=True)
    assert_same(p, t)  # the input is left alone


@pytest.mark.parametrize("fn,shape,layout", [
    pytest.param(fn, shape, layout, id=f"{name}-{layout}")
    for name, fn, shape in CASES for layout in LAYOUTS[1:] if len(shape) >= 2
])
def test_strided_inputs(fn, shape, layout):
    t, p = layout_pair(shape, "float32", layout)
    assert_same_outcome(lambda: fn(pyaten, p), lambda: fn(torch, t), strides=True)


@pytest.mark.parametrize("fn,shape", [(fn, shape) for _, fn, shape in CASES],
                         ids=[c[0] for c in CASES])
def test_meta(fn, shape):
    t = torch.empty(shape, device="meta")
    p = pyaten.empty(shape, device="meta")
    assert_same_outcome(lambda: fn(pyaten, p), lambda: fn(torch, t), strides=True)


def test_repeat_interleave_of_repeats_alone():
    for dtype in ("int64", "int32"):
        t, p = make_pair((4,), dtype, low=0, high=4)
        assert_same(pyaten.repeat_interleave(p), torch.repeat_interleave(t))
        total = int(t.sum())
        assert_same(pyaten.repeat_interleave(p, output_size=total),
                    torch.repeat_interleave(t, output_size=total))
    r = torch.tensor([1, 2], device="meta")
    same_error(lambda: pyaten.repeat_interleave(pyaten.tensor([1, 2], device="meta")),
               lambda: torch.repeat_interleave(r))
    assert_same(pyaten.repeat_interleave(pyaten.tensor([1, 2], device="meta"), output_size=3),
                torch.repeat_interleave(r, output_size=3))


def test_inplace_triangles_bump_the_version_and_return_self():
    t, p = make_pair((3, 3))
    view_t, view_p = t.t(), p.t()  # in place through a view writes the base
    assert view_p.tril_() is view_p
    view_t.tril_()
    assert_same(p, t)
    assert p._version == t._version


OUT_CASES = [
    ("flip", lambda m, x, out: m.flip(x, [1], out=out), "float32"),
    ("roll", lambda m, x, out: m.roll(x, 1, 0, out=out), "float32"),
    ("rot90", lambda m, x, out: m.rot90(x, out=out), "float32"),
    ("tril", lambda m, x, out: m.tril(x, 1, out=out), "float32"),
    ("triu_wrong_dtype", lambda m, x, out: m.triu(x, out=out), "float64"),
    ("diag_1d", lambda m, x, out: m.diag(x[0], out=out), "float32"),
    ("diag_2d", lambda m, x, out: m.diag(x, 1, out=out), "float32"),
    ("diag_embed", lambda m, x, out: m.diag_embed(x, out=out), "float32"),
    ("hstack", lambda m, x, out: m.hstack([x, x], out=out), "float32"),
    ("hstack_cast", lambda m, x, out: m.hstack([x, x], out=out), "float64"),
    ("vstack", lambda m, x, out: m.vstack([x, x], out=out), "float32"),
    ("row_stack", lambda m, x, out: m.row_stack([x, x], out=out), "float32"),
    ("dstack", lambda m, x, out: m.dstack([x, x], out=out), "float32"),
    ("column_stack", lambda m, x, out: m.column_stack([x[0], x[1]], out=out), "float32"),
]


@pytest.mark.parametrize("fn,out_dtype", [(fn, d) for _, fn, d in OUT_CASES],
                         ids=[c[0] for c in OUT_CASES])
@pytest.mark.parametrize("out_shape", [(0,), (2, 3)])
def test_out_variants(fn, out_dtype, out_shape):
    t, p = make_pair((2, 3))
    p_out, t_out = outs(out_shape, out_dtype)
    pair = run_both(lambda: fn(pyaten, p, p_out), lambda: fn(torch, t, t_out))
    if pair is not None:
        assert pair[0] is p_out and pair[1] is t_out
        assert_same(p_out, t_out, strides=True)


ERRORS = [
    ("flip_dup", lambda m, x: x.flip((0, -2)), (2, 3)),
    ("flip_range", lambda m, x: x.flip(2), (2, 3)),
    ("fliplr_1d", lambda m, x: x.fliplr(), (3,)),
    ("flipud_0d", lambda m, x: x.flipud(), ()),
    ("roll_no_shifts", lambda m, x: x.roll((), ()), (2, 3)),
    ("roll_align", lambda m, x: x.roll(1, (0, 1)), (2, 3)),
    ("roll_two_shifts", lambda m, x: x.roll((1, 2)), (2, 3)),
    ("roll_range", lambda m, x: x.roll(1, 2), (2, 3)),
    ("roll_0d_dim", lambda m, x: x.roll(1, 0), ()),
    ("rot90_dims_len", lambda m, x: x.rot90(1, (0,)), (2, 3)),
    ("rot90_1d", lambda m, x: x.rot90(), (3,)),
    ("rot90_same", lambda m, x: x.rot90(1, (1, 1)), (2, 3)),
    ("rot90_same_wrapped", lambda m, x: x.rot90(1, (0, -2)), (2, 3)),
    ("rot90_range", lambda m, x: x.rot90(1, (0, 2)), (2, 3)),
    ("repeat_fewer", lambda m, x: x.repeat(2), (2, 3)),
    ("repeat_negative", lambda m, x: x.repeat(-1, 2), (2, 3)),
    ("tile_negative", lambda m, x: x.tile((-1,)), (2, 3)),
    ("repeat_interleave_neg", lambda m, x: x.repeat_interleave(-1), (2, 3)),
    ("repeat_interleave_len", lambda m, x: x.repeat_interleave(m.tensor([1, 2]), 1), (2, 3)),
    ("repeat_interleave_2d", lambda m, x: x.repeat_interleave(m.tensor([[1]])), (2, 3)),
    ("repeat_interleave_range", lambda m, x: x.repeat_interleave(2, 2), (2, 3)),
    ("repeat_interleave_float", lambda m, x: m.repeat_interleave(x[0]), (2, 3)),
    ("repeat_interleave_0d", lambda m, x: m.repeat_interleave(m.tensor(3)), (2, 3)),
    ("repeat_interleave_negative_counts", lambda m, x: m.repeat_interleave(m.tensor([-1])),
     (2, 3)),
    ("repeat_interleave_size", lambda m, x: m.repeat_interleave(m.tensor([1, 2]),
                                                                output_size=5), (2, 3)),
    ("tril_1d", lambda m, x: x.tril(), (3,)),
    ("triu_0d", lambda m, x: m.triu(x), ()),
    ("diag_3d", lambda m, x: x.diag(), (2, 2, 2)),
    ("diag_0d", lambda m, x: m.diag(x), ()),
    ("diag_embed_same", lambda m, x: x.diag_embed(0, 0, 0), (3,)),
    ("diag_embed_range", lambda m, x: x.diag_embed(0, 0, 2), (3,)),
    ("hstack_empty", lambda m, x: m.hstack([]), (3,)),
    ("vstack_empty", lambda m, x: m.vstack([]), (3,)),
    ("dstack_empty", lambda m, x: m.dstack([]), (3,)),
    ("column_stack_empty", lambda m, x: m.column_stack([]), (3,)),
    ("hstack_mismatch", lambda m, x: m.hstack([x, x[:1, :2]]), (2, 3)),
]


@pytest.mark.parametrize("fn,shape", [(fn, shape) for _, fn, shape in ERRORS],
                         ids=[c[0] for c in ERRORS])
def test_errors_match_torch(fn, shape):
    t, p = make_pair(shape)
    same_error(lambda: fn(pyaten, p), lambda: fn(torch, t))
    assert_same(p, t)


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=0, max_size=4), data=st.data())
def test_flip_roll_any_dims(shape, data):
    t, p = layout_pair(tuple(shape), "int16", data.draw(st.sampled_from(LAYOUTS)))
    ndim = max(len(shape), 1)
    dims = data.draw(st.lists(st.integers(-ndim, ndim - 1), max_size=3))
    shifts = data.draw(st.lists(st.integers(-9, 9), min_size=len(dims), max_size=len(dims)))
    assert_same_outcome(lambda: p.flip(dims), lambda: t.flip(dims), strides=True)
    assert_same_outcome(lambda: p.roll(shifts or [1], dims), lambda: t.roll(shifts or [1], dims),
                        strides=True)


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=2, max_size=4), data=st.data())
def test_rot90_triangles_and_repeat_any_arguments(shape, data):
    t, p = layout_pair(tuple(shape), "float64", data.draw(st.sampled_from(LAYOUTS)))
    ndim = len(shape)
    k = data.draw(st.integers(-5, 5))
    dims = data.draw(st.lists(st.integers(-ndim, ndim - 1), min_size=2, max_size=2))
    diagonal = data.draw(st.integers(-5, 5))
    repeats = data.draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim + 1))
    assert_same_outcome(lambda: p.rot90(k, dims), lambda: t.rot90(k, dims), strides=True)
    assert_same(p.tril(diagonal), t.tril(diagonal), strides=True)
    assert_same(p.triu(diagonal), t.triu(diagonal), strides=True)
    assert_same(p.repeat(repeats), t.repeat(repeats), strides=True)
    assert_same(p.tile(repeats[:2]), t.tile(repeats[:2]), strides=True)


OPINFO_NAMES = frozenset("""
flip fliplr flipud roll rot90 repeat tile repeat_interleave tril triu diag diag_embed diagflat
hstack vstack dstack column_stack row_stack
""".split())


@pytest.mark.parametrize("info,dtype", opinfo_params(OPINFO_NAMES))
def test_opinfo_samples(info, dtype):
    check_opinfo_samples(info, dtype)
