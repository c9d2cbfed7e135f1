"""Indexing vs PyTorch: Tensor.__getitem__/__setitem__ with ints, slices, None, Ellipsis,
bools, integer/boolean tensors and lists; index.Tensor, index_put_/index_put (accumulate);
views vs copies; Meta; and errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_shape_helpers import assert_same, assert_same_error, make_pair

import pyaten

# both libraries warn about list-as-tuple indices; test_list_of_slices_warns_like_torch checks it
pytestmark = pytest.mark.filterwarnings("ignore:Using a non-tuple sequence:UserWarning")


def _idx(m, spec):
    """Build an index for module `m` from a spec with tensors given as ('t', data, dtype)."""
    if isinstance(spec, tuple) and spec and spec[0] == "t":
        return m.tensor(spec[1], dtype=getattr(m, spec[2]))
    if isinstance(spec, tuple):
        return tuple(_idx(m, s) for s in spec)
    return spec


GET_CASES = [
    0,
    -1,
    (1, 2),
    (slice(None), 1),
    slice(1, None),
    slice(None, None, 2),
    (slice(-3, -1), slice(None, None, 3)),
    (Ellipsis, 0),
    (0, Ellipsis),
    Ellipsis,
    slice(None),
    None,
    (None, 1, None),
    (slice(None), None, Ellipsis, None),
    True,
    False,
    (0, True),
    [0, 2],
    [[0, 1], [2, 0]],
    [True, False, True],
    ("t", [0, 2, -1], "int64"),
    ("t", [[0], [2]], "int32"),
    ("t", 1, "int64"),
    ("t", True, "bool"),
    (("t", [0, 1], "int64"), ("t", [1, 3], "int64")),
    (slice(None), ("t", [0, 3], "int64")),
    (("t", [0, 2], "int64"), slice(None), ("t", [1, 0], "int64")),
    (("t", [0, 2], "int64"), None, ("t", [1, 2], "int64")),
    (1, slice(None), ("t", [0, 1, -1], "int64")),
    (Ellipsis, 0, Ellipsis),
    ("t", [True, False, True], "bool"),
    ("t", [[True, False, True, False, True]] * 3, "bool"),
    (slice(None), ("t", [False, True, True, False, True], "bool")),
    (Ellipsis, ("t", [1, 0], "int64")),
    (("t", [[0], [2]], "int64"), slice(1, None), ("t", [1, 0], "int64")),
    ("t", [], "int64"),
]


@pytest.mark.parametrize("spec", GET_CASES, ids=[repr(c)[:40] for c in GET_CASES])
def test_getitem_matches_torch(spec):
    t, p = make_pair((3, 5, 2), "float32")
    expected = t[_idx(torch, spec)]
    got = p[_idx(pyaten, spec)]
    assert_same(got, expected, strides=True)
    # basic indexing gives views (never self), advanced indexing copies
    is_view = expected.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert (got.untyped_storage() is p.untyped_storage()) == is_view
    assert got is not p


def test_getitem_layout_of_permuted_sources():
    t, p = make_pair((3, 4, 5), "float64")
    for order in ((2, 0, 1), (1, 2, 0), (2, 1, 0)):
        tp, pp = t.permute(*order), p.permute(*order)
        for spec in (
            (("t", [0, 1], "int64"), slice(None), ("t", [1, 2], "int64")),
            (slice(None), ("t", [[0], [1]], "int64"), ("t", [0, 2], "int64")),
            (None, slice(None), ("t", [1], "int64"), None),
        ):
            assert_same(pp[_idx(pyaten, spec)], tp[_idx(torch, spec)], strides=True)
    # size-1 dims keep the strides unsqueeze/reshape give them, and those steer the layout
    t, p = make_pair((2, 1, 1), "int32")
    tp, pp = t.permute(1, 2, 0), p.permute(1, 2, 0)
    spec = (None, slice(None), ("t", [0, 0, 0], "int64"), None, slice(None))
    assert_same(pp[_idx(pyaten, spec)], tp[_idx(torch, spec)], strides=True)
    mask = ("t", [[[True, False]]], "bool")
    assert_same(pp[_idx(pyaten, (mask,))], tp[_idx(torch, (mask,))], strides=True)


@pytest.mark.parametrize("dtype", ["int64", "bool", "complex64", "bfloat16"])
def test_getitem_dtypes_and_0d(dtype):
    t, p = make_pair((4,), dtype)
    assert_same(p[1], t[1])
    assert_same(p[1][...], t[1][...])
    assert_same(p[1][None], t[1][None])
    t0, p0 = make_pair((), dtype)
    assert_same(p0[None], t0[None])
    assert_same(p0[...], t0[...])
    assert_same(p0[True], t0[True])


SET_CASES = [
    (0, 7.0),
    ((slice(None), 1), -1),
    ((Ellipsis, 0), ("t", [1.5, 2.5, 3.5, 4.5, 5.5], "float32")),
    (slice(0, 2), ("t", [[1.0, 2.0]], "float32")),
    (slice(0, 2), ("t", [[[9.0, 8.0]]], "float32")),
    ((1, slice(None, None, 2)), 3),
    (("t", [0, 2], "int64"), 5.0),
    (("t", [0, 2], "int64"), ("t", [[1.0, 2.0]], "float32")),
    ((("t", [0, 2], "int64"), ("t", [1, 3], "int64")), ("t", [[4.0, 5.0], [6.0, 7.0]], "float32")),
    (("t", [[True, False, True, False, True]] * 3, "bool"), 0.5),
    ((slice(None), ("t", [True, False, True, False, True], "bool")), 9),
    (None, ("t", 2.0, "float32")),
    (True, 4),
    (False, 4),
]


@pytest.mark.parametrize("spec,value", SET_CASES, ids=[repr(c)[:40] for c in SET_CASES])
def test_setitem_matches_torch(spec, value):
    t, p = make_pair((3, 5, 2), "float32")
    version = p._version
    t[_idx(torch, spec)] = _idx(torch, value)
    p[_idx(pyaten, spec)] = _idx(pyaten, value)
    assert_same(p, t)
    assert p._version > version


@pytest.mark.parametrize("dtype", ["int8", "bool", "float16", "complex128"])
def test_setitem_scalar_casts_like_torch(dtype):
    t, p = make_pair((4,), dtype)
    for value in (1, True, 2.75, -3):
        try:
            t[1:3] = value
        except RuntimeError:
            continue
        p[1:3] = value
        assert_same(p, t)


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, x: x[5],
        lambda m, x: x[0, 0, 0, 0],
        lambda m, x: x[m.tensor([5])],
        lambda m, x: x[1.5],
        lambda m, x: x[0, 0.5],
        lambda m, x: x[object],
        lambda m, x: x["a"],
        lambda m, x: x[[[0, 1], [1, 0], [0, 0], [1, 1]]],
        lambda m, x: x[m.tensor([1.0])],
        lambda m, x: x[m.tensor([True, False])],
        lambda m, x: x[::-1],
        lambda m, x: x[::0],
        lambda m, x: m.tensor(1.0)[0],
        lambda m, x: x[m.tensor([0, 1]), m.tensor([0, 1, 2])],
        lambda m, x: x.__setitem__(m.tensor([0]), m.ones(1, dtype=m.float64)),
        lambda m, x: x.__setitem__(0, 1 + 2j),
        lambda m, x: x.__setitem__(slice(0, 2), m.ones(2, 2, 2, 2)),
        lambda m, x: x.__setitem__(m.tensor([0, 1]), m.ones(3, 2, 2)),
        lambda m, x: x.index_put_((m.tensor([0]),), m.ones(1, dtype=m.float64)),
    ],
)
def test_index_errors_match_torch(fn):
    t, p = make_pair((3, 2, 2), "float32")
    assert_same_error(lambda: fn(pyaten, p), lambda: fn(torch, t))


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_index_put_ops(accumulate, dtype):
    t, p = make_pair((4, 3), dtype)
    tv, pv = make_pair((3,), dtype, seed=9)
    t_idx = (torch.tensor([0, 2, 0]),)
    p_idx = (pyaten.tensor([0, 2, 0]),)
    if not accumulate:
        t_idx = (torch.tensor([0, 2, 1]),)
        p_idx = (pyaten.tensor([0, 2, 1]),)
    t_vals = tv.view(3, 1).expand(3, 3).contiguous()
    p_vals = pv.view(3, 1).expand(3, 3).contiguous()
    expected = torch.index_put(t, t_idx, t_vals, accumulate)
    got = pyaten.index_put(p, p_idx, p_vals, accumulate)
    assert_same(got, expected)
    assert_same(p, t)  # the functional form leaves self alone
    assert p.index_put_(p_idx, p_vals, accumulate) is p
    t.index_put_(t_idx, t_vals, accumulate)
    assert_same(p, t)


def test_index_op_and_out():
    t, p = make_pair((4, 3), "float64")
    expected = torch.ops.aten.index.Tensor(t, [None, torch.tensor([2, 0])])
    assert_same(pyaten.ops.aten.index.Tensor(p, [None, pyaten.tensor([2, 0])]), expected)
    assert_same(p.index([pyaten.tensor([1, 1])]), t.index_select(0, torch.tensor([1, 1])))
    out = pyaten.empty(0, dtype=pyaten.float64)
    assert pyaten.ops.aten.index.Tensor_out(p, [pyaten.tensor([3])], out=out) is out
    assert_same(out, t[torch.tensor([3])])


def test_meta_indexing():
    t = torch.empty(3, 4, device="meta")
    p = pyaten.empty(3, 4, device="meta")
    for fn in (lambda m, x: x[1:, None, 2], lambda m, x: x[m.tensor([0, 1], device="meta")]):
        assert_same(fn(pyaten, p), fn(torch, t))
    with pytest.raises(NotImplementedError):
        p[pyaten.tensor([True, False, True], device="meta")]


def test_list_of_slices_warns_like_torch():
    t, p = make_pair((3, 4), "float32")
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        expected = t[[slice(None), 1]]
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        got = p[[slice(None), 1]]
    assert_same(got, expected, strides=True)


def test_uint8_mask_warns_and_selects():
    t, p = make_pair((3,), "float32")
    with pytest.warns(UserWarning, match="deprecated"):
        got = p[pyaten.tensor([1, 0, 1], dtype=pyaten.uint8)]
    with pytest.warns(UserWarning):
        expected = t[torch.tensor([1, 0, 1], dtype=torch.uint8)]
    assert_same(got, expected)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_basic_and_advanced_indexing(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    t, p = make_pair(shape, "int32")
    order = data.draw(st.permutations(range(len(shape))))
    t, p = t.permute(*order), p.permute(*order)
    shape = tuple(t.shape)
    items_t, items_p = [], []
    count = data.draw(st.integers(1, 3))
    for size in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "none", "tensor", "skip"]))
        if kind == "int":
            i = data.draw(st.integers(-size, size - 1))
            items_t.append(i)
            items_p.append(i)
        elif kind == "slice":
            a = data.draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
            b = data.draw(st.one_of(st.none(), st.integers(-size - 1, size + 1)))
            step = data.draw(st.integers(1, 3))
            items_t.append(slice(a, b, step))
            items_p.append(slice(a, b, step))
        elif kind == "none":
            items_t.append(None)
            items_p.append(None)
            items_t.append(slice(None))
            items_p.append(slice(None))
        elif kind == "tensor":
            values = data.draw(
                st.lists(st.integers(-size, size - 1), min_size=count, max_size=count)
            )
            items_t.append(torch.tensor(values))
            items_p.append(pyaten.tensor(values))
        else:
            break
    assert_same(p[tuple(items_p)], t[tuple(items_t)], strides=True)
    new_t = t.clone()
    new_p = p.clone()
    new_t[tuple(items_t)] = 7
    new_p[tuple(items_p)] = 7
    assert_same(new_p, new_t)
    assert np.array_equal(p.numpy(), t.numpy())


def test_meta_setitem_and_index_put():
    t = torch.empty(3, 4, device="meta")
    p = pyaten.empty(3, 4, device="meta")
    for fn in (
        lambda m, x: x.index_put_((m.tensor([0, 2], device="meta"),), m.ones(4, device="meta")),
        lambda m, x: m.ops.aten.index_put.default(
            x, [None, m.tensor([1], device="meta")], m.ones(1, device="meta")
        ),
    ):
        assert_same(fn(pyaten, p), fn(torch, t))
    version = p._version
    p[pyaten.tensor([0], device="meta")] = 1.0
    p[1:, None] = pyaten.ones(4, device="meta")
    assert p._version > version and tuple(p.shape) == (3, 4)
    # like PyTorch's Meta kernel, no value-shape check without data
    p.index_put_((pyaten.tensor([0], device="meta"),), pyaten.ones(5, device="meta"))
    t.index_put_((torch.tensor([0], device="meta"),), torch.ones(5, device="meta"))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16", "bfloat16",
                                   "complex64"])
def test_dtype_names_in_index_errors_match_torch(dtype):
    # Messages name dtypes as PyTorch does: legacy tensor type names, ScalarType names.
    t, p = make_pair((3,), dtype)

    def assign_str(m, x):
        x[0] = "text"

    assert_same_error(lambda: assign_str(pyaten, p), lambda: assign_str(torch, t))
    other = "int8" if dtype != "int8" else "float32"
    assert_same_error(
        lambda: pyaten.ops.aten.index.Tensor_out(
            p, [pyaten.tensor([0])], out=pyaten.empty(1, dtype=getattr(pyaten, other))),
        lambda: torch.ops.aten.index.Tensor_out(
            t, [torch.tensor([0])], out=torch.empty(1, dtype=getattr(torch, other))),
    )
