"""TensorIterator vs PyTorch's elementwise ops: broadcasting, output layout, out= resizing,
in-place and overlap checks, dtype rules. The kernel is a tiny NumPy add/compare."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from _helpers import DTYPE_NAMES, dtype_name, run_both, same_error
from _helpers import assert_same as shared_assert_same
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten
from pyaten.core.iterator import TensorIterator, TensorIteratorConfig
from pyaten.core.stub import DispatchStub
from pyaten.core.views import as_strided_view

add_stub = DispatchStub("test_core_add_stub")


@add_stub.register("cpu")
def _add_cpu(it: TensorIterator) -> None:
    np.add(*it.np_inputs, out=it.np_outputs[0])


def add(a, b, out=None):
    it = TensorIterator.binary_op(out, a, b)
    if not it.is_meta:
        add_stub(it.device.type, it)
    return it.finish()


def div(a, b, out=None):
    it = TensorIterator.binary_float_op(out, a, b)
    np.true_divide(*it.np_inputs, out=it.np_outputs[0])
    return it.finish()


def lt(a, b, out=None):
    it = TensorIterator.comparison_op(out, a, b)
    np.less(*it.np_inputs, out=it.np_outputs[0])
    return it.finish()


def mirror(t: torch.Tensor):
    """A pyaten tensor with t's sizes, strides and values (copying t's whole storage)."""
    storage = torch.tensor(t.untyped_storage().tolist(), dtype=torch.uint8)
    n = storage.numel() // t.element_size()
    base_t = storage.view(t.dtype)[:n] if n else torch.empty(0, dtype=t.dtype)
    base_p = pyaten.tensor(base_t.numpy())  # a resizable copy of the whole storage
    return as_strided_view(base_p, tuple(t.shape), tuple(t.stride()), t.storage_offset())


def assert_same(p: pyaten.Tensor, t: torch.Tensor) -> None:
    """Exact values, dtype, shape and strides: the iterator decides layout, not just values."""
    shared_assert_same(p, t, rtol=0, atol=0, strides=True)


# ---- broadcasting ------------------------------------------------------------------------

shape_st = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=150, deadline=None)
@given(st.lists(shape_st, min_size=1, max_size=4))
def test_broadcast_shapes_matches_torch(shapes) -> None:
    try:
        expected = tuple(torch.broadcast_shapes(*shapes))
    except (RuntimeError, ValueError) as exc:
        with pytest.raises(type(exc)) as info:
            pyaten.broadcast_shapes(*shapes)
        assert str(info.value) == str(exc)
        return
    assert tuple(pyaten.broadcast_shapes(*shapes)) == expected


@settings(max_examples=150, deadline=None)
@given(shape_st, shape_st)
def test_elementwise_broadcast_shape_and_error_text(sa, sb) -> None:
    ta, tb = torch.zeros(sa), torch.ones(sb)
    pa, pb = pyaten.tensor(np.zeros(sa, np.float32)), pyaten.tensor(np.ones(sb, np.float32))
    pair = run_both(lambda: add(pa, pb), lambda: torch.add(ta, tb))
    if pair is not None:
        assert_same(*pair)


# ---- output layout -----------------------------------------------------------------------


@st.composite
def strided_operand(draw, shape):
    """A view with `shape` whose memory order is a random permutation, maybe expanded."""
    ndim = len(shape)
    perm = draw(st.permutations(range(ndim)))
    expand = [draw(st.booleans()) and shape[d] > 1 for d in range(ndim)]
    alloc_sizes = [1 if expand[d] else shape[d] for d in perm]
    contiguous = torch.arange(int(np.prod(alloc_sizes)), dtype=torch.float32).reshape(alloc_sizes)
    inverse = [perm.index(d) for d in range(ndim)]
    view = contiguous.permute(*inverse) if ndim else contiguous
    return view.expand(*shape) if ndim else view


@st.composite
def operand_pair(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=0, max_size=4)))
    a = draw(strided_operand(shape))
    # b: a broadcastable shape (leading dims dropped, some dims set to 1)
    drop = draw(st.integers(0, len(shape)))
    b_shape = tuple(1 if draw(st.booleans()) else s for s in shape[drop:])
    b = draw(strided_operand(b_shape))
    return a, b


@settings(max_examples=200, deadline=None)
@given(operand_pair())
def test_output_strides_follow_input_layout(pair) -> None:
    ta, tb = pair
    for x, y in ((ta, tb), (tb, ta)):
        assert_same(add(mirror(x), mirror(y)), torch.add(x, y))


@pytest.mark.parametrize(
    "make",
    [
        lambda: (torch.zeros(3, 4).t(), torch.ones(3, 4).t()),
        lambda: (torch.zeros(3, 4).t(), torch.ones(4, 3)),
        lambda: (torch.zeros(4, 3), torch.ones(3, 4).t()),
        lambda: (torch.zeros(1, 3).expand(4, 3), torch.ones(4, 1)),
        lambda: (torch.zeros(2, 3, 4).permute(2, 0, 1), torch.tensor(2.0)),
        lambda: (
            torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last),
            torch.ones(2, 3, 4, 5).to(memory_format=torch.channels_last),
        ),
        lambda: (torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last), torch.ones(5)),
        lambda: (torch.zeros(6)[::2], torch.ones(3)),
        lambda: (
            torch.zeros(2, 3, 2, 4, 5).to(memory_format=torch.channels_last_3d),
            torch.ones(2, 3, 2, 4, 5).to(memory_format=torch.channels_last_3d),
        ),
        lambda: (torch.zeros(2, 3, 2, 4, 5).to(memory_format=torch.channels_last_3d), 1.5),
        lambda: (
            torch.zeros(1, 3, 1, 1).to(memory_format=torch.channels_last),
            torch.ones(3, 1, 1),
        ),
        lambda: (torch.zeros(4, 1, 3).permute(1, 2, 0), torch.ones(1, 3, 4)),
        lambda: (torch.zeros(0, 3).t(), torch.ones(3, 0)),
        lambda: (torch.zeros(2, 0, 3).permute(2, 1, 0), torch.ones(3, 1, 2)),
    ],
)
def test_output_strides_known_layouts(make) -> None:
    ta, tb = make()
    pb = mirror(tb) if isinstance(tb, torch.Tensor) else tb
    assert_same(add(mirror(ta), pb), torch.add(ta, tb))


# ---- out= --------------------------------------------------------------------------------


def _warnings_of(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


@pytest.mark.parametrize(
    "out_shape,a_shape,transposed",
    [
        ((2,), (3,), False),
        ((0,), (3,), False),
        ((3,), (3,), False),
        ((2,), (3, 2), True),
        ((5, 5), (2, 3), False),
        ((6,), (2, 3), False),
    ],
)
def test_out_resizing_and_warning(out_shape, a_shape, transposed) -> None:
    ta = torch.arange(float(np.prod(a_shape))).reshape(a_shape)
    if transposed:
        ta = ta.t()
    t_out = torch.full(out_shape, 7.0)
    p_out = pyaten.tensor(np.full(out_shape, 7.0, np.float32))
    expected_warnings = _warnings_of(lambda: torch.add(ta, 1.0, out=t_out))
    got_warnings = _warnings_of(lambda: add(mirror(ta), 1.0, out=p_out))
    assert [w.split(" (Triggered internally")[0] for w in expected_warnings] == got_warnings
    assert_same(p_out, t_out)


def test_out_keeps_its_strides_when_shape_matches() -> None:
    t_out = torch.zeros(3, 2).t()
    p_out = mirror(t_out)
    torch.add(torch.ones(2, 3), 1, out=t_out)
    add(pyaten.tensor(np.ones((2, 3), np.float32)), 1, out=p_out)
    assert_same(p_out, t_out)


def test_out_dtype_errors() -> None:
    same_error(
        lambda: add(
            pyaten.tensor([0.0, 0, 0]), pyaten.tensor([0.0, 0, 0]), out=pyaten.tensor([0, 0, 0])
        ),
        lambda: torch.add(torch.zeros(3), torch.zeros(3), out=torch.zeros(3, dtype=torch.long)),
    )
    # a safe cast into a wider out dtype is fine and rounds once
    out = pyaten.tensor([0.0, 0.0], dtype=pyaten.float64)
    add(
        pyaten.tensor([1, 2], dtype=pyaten.int32),
        pyaten.tensor([1, 1], dtype=pyaten.int32),
        out=out,
    )
    assert out.tolist() == [2.0, 3.0]


# ---- in-place and overlap ------------------------------------------------------------------


@pytest.mark.parametrize("self_shape,other_shape", [((3,), (2, 3)), ((2, 1), (2, 3)), ((1,), (4,))])
def test_inplace_shape_error(self_shape, other_shape) -> None:
    s = pyaten.tensor(np.zeros(self_shape, np.float32))
    same_error(
        lambda: add(s, pyaten.tensor(np.ones(other_shape, np.float32)), out=s),
        lambda: torch.zeros(self_shape).add_(torch.ones(other_shape)),
    )


def test_inplace_broadcast_other_ok() -> None:
    s = pyaten.tensor(np.zeros((2, 3), np.float32))
    t = torch.zeros(2, 3)
    t.add_(torch.arange(3.0))
    add(s, pyaten.tensor([0.0, 1.0, 2.0]), out=s)
    assert_same(s, t)


def test_write_to_expanded_tensor_raises() -> None:
    base = pyaten.tensor([0.0])
    expanded = as_strided_view(base, (3,), (0,), 0)
    same_error(
        lambda: add(expanded, 1.0, out=expanded), lambda: torch.zeros(1).expand(3).add_(1)
    )


def test_partial_overlap_raises() -> None:
    t = torch.zeros(4)
    p = pyaten.tensor([0.0, 0, 0, 0])
    same_error(
        lambda: add(
            as_strided_view(p, (3,), (1,), 0),
            as_strided_view(p, (3,), (1,), 1),
            out=as_strided_view(p, (3,), (1,), 1),
        ),
        lambda: torch.add(t[:3], t[1:], out=t[1:]),
    )


# ---- dtypes --------------------------------------------------------------------------------

DTYPES = DTYPE_NAMES


def _values(dtype: str):
    t = torch.tensor([-3.5, 0.0, 1.25, 2.75, 100.3]).to(getattr(torch, dtype))
    return t, pyaten.from_dlpack(t.clone())


@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", DTYPES)
def test_add_dtype_promotion_values(da, db) -> None:
    ta, pa = _values(da)
    tb, pb = _values(db)
    expected = torch.add(ta, tb)
    got = add(pa, pb)
    assert got.dtype.name == dtype_name(expected.dtype)
    np.testing.assert_array_equal(np.asarray(got.tolist()), np.asarray(expected.tolist()))


@pytest.mark.parametrize("scalar", [True, -1, 300, 2.5, -0.5, 1 + 1j])
@pytest.mark.parametrize("d", DTYPES)
def test_tensor_scalar_promotion_and_wrapping(scalar, d) -> None:
    if d == "float16" and isinstance(scalar, complex):
        pytest.skip("torch gives complex32 (chalf), which pyaten does not have")
    t, p = _values(d)
    expected = torch.add(t, scalar)
    got = add(p, scalar)
    assert got.dtype.name == dtype_name(expected.dtype)
    np.testing.assert_array_equal(np.asarray(got.tolist()), np.asarray(expected.tolist()))


def test_half_computes_in_float32_and_rounds_once() -> None:
    rng = np.random.default_rng(0)
    for d in ("float16", "bfloat16"):
        ta = torch.tensor(rng.standard_normal(200), dtype=getattr(torch, d))
        tb = torch.tensor(rng.standard_normal(200), dtype=getattr(torch, d))
        pa, pb = pyaten.from_dlpack(ta.clone()), pyaten.from_dlpack(tb.clone())
        assert add(pa, pb).tolist() == torch.add(ta, tb).tolist()
        assert div(pa, pb).tolist() == torch.div(ta, tb).tolist()


def test_float_op_promotes_integers() -> None:
    got = div(pyaten.tensor([1, 2, 3]), pyaten.tensor([2, 2, 2]))
    expected = torch.div(torch.tensor([1, 2, 3]), torch.tensor([2, 2, 2]))
    assert_same(got, expected)


def test_comparison_output_is_bool_or_out_dtype() -> None:
    got = lt(pyaten.tensor([1, 5]), pyaten.tensor([2.5, 2.5]))
    assert_same(got, torch.lt(torch.tensor([1, 5]), torch.tensor([2.5, 2.5])))
    out = pyaten.tensor([9.0, 9.0])
    t_out = torch.tensor([9.0, 9.0])
    lt(pyaten.tensor([1, 5]), 3, out=out)
    torch.lt(torch.tensor([1, 5]), 3, out=t_out)
    assert_same(out, t_out)


def test_check_all_same_dtype() -> None:
    # PyTorch's TensorIterator text (no public torch op reaches it with these inputs)
    it = (
        TensorIteratorConfig()
        .add_output(None)
        .add_input(pyaten.tensor([1.0]))
        .add_input(pyaten.tensor([1.0], dtype=pyaten.float64))
    )
    with pytest.raises(RuntimeError, match="^Found dtype Double but expected Float$"):
        it.build()


def test_unary_float_op_and_nullary() -> None:
    it = TensorIterator.unary_float_op(None, pyaten.tensor([1, 4]))
    np.sqrt(it.np_inputs[0], out=it.np_outputs[0])
    assert_same(it.finish(), torch.sqrt(torch.tensor([1, 4])))
    out = pyaten.tensor([1, 2, 3], dtype=pyaten.int16)
    it = TensorIterator.nullary_op(out)
    it.np_outputs[0][...] = 7
    assert it.finish().tolist() == [7, 7, 7]


# ---- devices -------------------------------------------------------------------------------


def test_meta_operands_give_meta_output_without_data() -> None:
    from pyaten.core.views import empty_tensor

    meta = pyaten.device("meta")
    a = empty_tensor((3, 1), pyaten.float32, meta)
    b = empty_tensor((4,), pyaten.int64, meta)
    result = add(a, b)
    assert result.device == meta and result.shape == (3, 4) and result.dtype is pyaten.float32
    assert result.untyped_storage().data is None
    # a CPU 0-dim tensor may join a meta computation; a CPU 1-d tensor may not
    assert add(a, pyaten.tensor(2)).device == meta
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        add(a, pyaten.tensor([2.0]))


def test_stub_without_kernel_names_stub_and_device() -> None:
    with pytest.raises(NotImplementedError, match="test_core_add_stub.*'meta'"):
        add_stub("meta", None)
    with pytest.raises(RuntimeError, match="already defined"):
        DispatchStub("test_core_add_stub")


def test_metadata_only_plans_without_allocating() -> None:
    t = torch.zeros(3, 4).t()
    it = (
        TensorIteratorConfig()
        .add_output(None)
        .add_input(mirror(t))
        .add_input(1.5)
        .promote_inputs_to_common_dtype(True)
        .metadata_only(True)
        .build()
    )
    assert it.tensors[0] is None
    assert it.shape == (4, 3)
    assert it.output_strides == torch.add(t, 1.5).stride()
    assert it.output_dtypes == [pyaten.float32]


def test_fast_path_matches_general_path() -> None:
    a = pyaten.tensor(np.arange(12, dtype=np.float64).reshape(3, 4))
    b = pyaten.tensor(np.ones((3, 4)))
    fast = add(a, b)
    general = TensorIteratorConfig().add_output(None).add_input(a).add_input(b).build()
    np.add(*general.np_inputs, out=general.np_outputs[0])
    assert fast.stride() == general.finish().stride() == (4, 1)
    np.testing.assert_array_equal(fast.numpy(), general.output().numpy())


@settings(max_examples=120, deadline=None)
@given(operand_pair(), st.sampled_from(["same", "transposed", "empty", "small", "inplace"]))
def test_out_and_inplace_layouts_match_torch(pair, out_kind) -> None:
    ta, tb = pair
    shape = torch.broadcast_shapes(ta.shape, tb.shape)
    if out_kind == "inplace":
        if tuple(ta.shape) != tuple(shape) or ta.stride().count(0):
            return
        t_self = ta.clone()
        p_self = mirror(t_self)
        t_self.add_(tb)
        add(p_self, mirror(tb), out=p_self)
        assert_same(p_self, t_self)
        return
    if out_kind == "same":
        t_out = torch.full(shape, 5.0)
    elif out_kind == "transposed" and len(shape) > 1:
        t_out = torch.full(tuple(reversed(shape)), 5.0).permute(*reversed(range(len(shape))))
    elif out_kind in ("empty", "transposed"):
        t_out = torch.empty(0)
    else:
        t_out = torch.full((1,), 5.0)
    p_out = mirror(t_out)
    theirs = _warnings_of(lambda: torch.add(ta, tb, out=t_out))
    ours = _warnings_of(lambda: add(mirror(ta), mirror(tb), out=p_out))
    assert [w.split(" (Triggered internally")[0] for w in theirs] == ours
    assert_same(p_out, t_out)


def test_broadcast_inputs_are_views_of_the_inputs() -> None:
    a = pyaten.tensor(np.arange(3.0))
    it = TensorIterator.binary_op(None, a, pyaten.tensor(np.ones((2, 1))))
    x, y = it.broadcast_inputs()
    assert x.shape == y.shape == (2, 3) and np.shares_memory(x, a.numpy())


def test_assign_accessors_and_repr() -> None:
    half = pyaten.tensor([1.0, 2.0, 3.0], dtype=pyaten.float16)
    it = TensorIterator.binary_op(None, half, 0.5)
    assert it.compute_dtype is pyaten.float32 and it.np_outputs[0].dtype == np.float32
    assert it.dtype(0) is pyaten.float16 and it.dtype(2) is pyaten.float64
    assert it.ndim == 1 and it.numel() == 3 and it.input(1) == 0.5
    out = it.assign(np.multiply(*it.np_inputs))
    assert out is it.output() and out.tolist() == [0.5, 1.0, 1.5]
    assert it.finish() is out and out.tolist() == [0.5, 1.0, 1.5]  # no stale scratch
    assert "common_dtype=pyaten.float16" in repr(it)


@pytest.mark.parametrize("d", DTYPES)
@pytest.mark.parametrize("value", [True, 3, -2.5])
def test_wrapped_number_operands_on_both_sides(d, value) -> None:
    from pyaten.core.creation import wrapped_scalar_tensor

    t, p = _values(d)
    for ours, theirs in (
        (add(p, wrapped_scalar_tensor(value)), torch.add(t, value)),
        (add(wrapped_scalar_tensor(value), p), torch.add(value, t)),
    ):
        assert ours.dtype.name == dtype_name(theirs.dtype)
        np.testing.assert_array_equal(np.asarray(ours.tolist()), np.asarray(theirs.tolist()))
