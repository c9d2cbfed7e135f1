"""Differential tests of the elementwise operators against PyTorch.

Every op runs in pyaten and in torch on the same inputs through each variant (function,
method, in-place, out=, Python operator); results must agree in dtype, shape and values, or
both must raise the same kind of error.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import torch
from _helpers import dtype_name
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

DTYPES = ["bool", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
SHAPE_PAIRS = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2,)), ((0, 3), (3,))]


def _values(shape, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype == "uint8":
        return rng.integers(1, 20, size=shape).astype(np.uint8)
    if dtype.startswith("int"):
        values = rng.integers(-20, 20, size=shape)
        values[values == 0] = 3  # keep integer division defined
        return values.astype(dtype)
    return (rng.standard_normal(size=shape) * 3).astype(np.float32 if dtype in (
        "float16", "bfloat16") else dtype)


def make(shape, dtype: str, seed: int = 0):
    """The same tensor in pyaten and torch."""
    values = _values(shape, dtype, seed)
    t = torch.from_numpy(np.array(values))
    if dtype in ("float16", "bfloat16"):
        t = t.to(getattr(torch, dtype))
        values = t.float().numpy()
        return pyaten.from_numpy(values).to(getattr(pyaten, dtype)), t
    return pyaten.from_numpy(np.array(values)), t


def to_numpy(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        if x.dtype == torch.bfloat16 or x.dtype == torch.float16:
            return x.float().numpy()
        return x.numpy()
    arr = np.asarray(x.numpy())
    if arr.dtype.name in ("bfloat16", "float16"):
        return arr.astype(np.float32)
    return arr


def assert_same(ours, theirs, rtol=1e-6, atol=1e-6) -> None:
    assert dtype_name(ours.dtype) == dtype_name(theirs.dtype), (
        ours.dtype, theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    if theirs.dtype in (torch.float16, torch.bfloat16):
        rtol, atol = 1e-2, 1e-2
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=rtol, atol=atol,
                               equal_nan=True)


def run_both(fn_pyaten, fn_torch):
    """Run both; return (ours, theirs) or assert they raise the same kind of error."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            theirs = fn_torch()
        except Exception as error:  # noqa: BLE001 - any torch error must be mirrored
            with pytest.raises(type(error) if not isinstance(error, RuntimeError)
                               else RuntimeError):
                fn_pyaten()
            return None
        ours = fn_pyaten()
    return ours, theirs


def assert_agree(calls) -> None:
    """Each (pyaten call, torch call) pair gives the same result, or both raise alike."""
    for call_p, call_t in calls:
        pair = run_both(call_p, call_t)
        if pair:
            assert_same(*pair)


BINARY = ["add", "sub", "mul", "div", "eq", "ne", "lt", "le", "gt", "ge"]
OPERATORS = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "div": "__truediv__",
             "eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__", "gt": "__gt__",
             "ge": "__ge__"}


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_binary_variants(op, dtype, shapes):
    (pa, ta), (pb, tb) = make(shapes[0], dtype, 1), make(shapes[1], dtype, 2)
    # function, method, operator
    assert_agree([
        (lambda: getattr(pyaten, op)(pa, pb), lambda: getattr(torch, op)(ta, tb)),
        (lambda: getattr(pa, op)(pb), lambda: getattr(ta, op)(tb)),
        (lambda: getattr(pa, OPERATORS[op])(pb), lambda: getattr(ta, OPERATORS[op])(tb)),
    ])
    # in-place on a copy of the first operand
    pa2, ta2 = pa.clone(), ta.clone()
    pair = run_both(lambda: getattr(pa2, op + "_")(pb), lambda: getattr(ta2, op + "_")(tb))
    if pair:
        assert pair[0] is pa2
        assert_same(pa2, ta2)
    # out= into an empty tensor of the expected dtype
    expected = getattr(torch, op)(ta, tb) if run_both(
        lambda: getattr(pyaten, op)(pa, pb), lambda: getattr(torch, op)(ta, tb)) else None
    if expected is not None:
        po = pyaten.empty(0, dtype=getattr(pyaten, dtype_name(expected.dtype)))
        to = torch.empty(0, dtype=expected.dtype)
        pair = run_both(lambda: getattr(pyaten, op)(pa, pb, out=po),
                        lambda: getattr(torch, op)(ta, tb, out=to))
        assert pair is not None
        assert pair[0] is po
        assert_same(po, to)


SCALARS = [2, -3, 2.5, True, 0]


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "float32"])
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
def test_binary_with_python_scalar(op, dtype, scalar):
    pa, ta = make((2, 3), dtype, 3)
    assert_agree([
        (lambda: getattr(pyaten, op)(pa, scalar), lambda: getattr(torch, op)(ta, scalar)),
        (lambda: getattr(pa, op)(scalar), lambda: getattr(ta, op)(scalar)),
        (lambda: getattr(pa, OPERATORS[op])(scalar), lambda: getattr(ta, OPERATORS[op])(scalar)),
    ])


@pytest.mark.parametrize("op,alpha", [("add", 2), ("sub", 3), ("add", 0.5), ("sub", -1.5)])
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_alpha(op, alpha, dtype):
    (pa, ta), (pb, tb) = make((4,), dtype, 4), make((4,), dtype, 5)
    pair = run_both(lambda: getattr(pyaten, op)(pa, pb, alpha=alpha),
                    lambda: getattr(torch, op)(ta, tb, alpha=alpha))
    if pair:
        assert_same(*pair)


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "float32", "float64"])
def test_div_rounding_modes(mode, dtype):
    (pa, ta), (pb, tb) = make((2, 5), dtype, 6), make((5,), dtype, 7)
    pair = run_both(lambda: pyaten.div(pa, pb, rounding_mode=mode),
                    lambda: torch.div(ta, tb, rounding_mode=mode))
    assert_same(*pair)
    pair = run_both(lambda: pa.div(3, rounding_mode=mode), lambda: ta.div(3, rounding_mode=mode))
    assert_same(*pair)
    pa2, ta2 = pa.clone(), ta.clone()
    pair = run_both(lambda: pa2.div_(pb, rounding_mode=mode),
                    lambda: ta2.div_(tb, rounding_mode=mode))
    if pair:
        assert_same(pa2, ta2)


def test_integer_division_by_zero_raises_like_torch():
    pa, ta = pyaten.tensor([1, 2]), torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.div(ta, torch.tensor([0, 1]), rounding_mode="floor")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        pyaten.div(pa, pyaten.tensor([0, 1]), rounding_mode="floor")


def test_float_floor_division_by_zero():
    pa, ta = pyaten.tensor([1.0, -1.0, 0.0]), torch.tensor([1.0, -1.0, 0.0])
    pair = run_both(lambda: pyaten.div(pa, 0.0, rounding_mode="floor"),
                    lambda: torch.div(ta, 0.0, rounding_mode="floor"))
    assert_same(*pair)


def test_integer_overflow_wraps():
    pa = pyaten.tensor([127, -128], dtype=pyaten.int8)
    ta = torch.tensor([127, -128], dtype=torch.int8)
    assert_same(pa + pa, ta + ta)
    assert_same(pa * 3, ta * 3)


UNARY = ["exp", "log", "neg", "abs", "sigmoid", "tanh", "relu"]


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (0,)], ids=str)
def test_unary_variants(op, dtype, shape):
    pa, ta = make(shape, dtype, 8)
    assert_agree([
        (lambda: getattr(pyaten, op)(pa), lambda: getattr(torch, op)(ta)),
        (lambda: getattr(pa, op)(), lambda: getattr(ta, op)()),
    ])
    pa2, ta2 = pa.clone(), ta.clone()
    pair = run_both(lambda: getattr(pa2, op + "_")(), lambda: getattr(ta2, op + "_")())
    if pair:
        assert pair[0] is pa2
        assert_same(pa2, ta2)
    expected = run_both(lambda: getattr(pyaten, op)(pa), lambda: getattr(torch, op)(ta))
    if expected:
        theirs = expected[1]
        po = pyaten.empty(0, dtype=getattr(pyaten, dtype_name(theirs.dtype)))
        to = torch.empty(0, dtype=theirs.dtype)
        pair = run_both(lambda: getattr(pyaten, op)(pa, out=po),
                        lambda: getattr(torch, op)(ta, out=to))
        if pair:  # None when both refuse out= (relu has no Python out variant)
            assert pair[0] is po
            assert_same(po, to)


def test_unary_operators():
    pa, ta = make((2, 3), "float32", 9)
    assert_same(-pa, -ta)
    assert_same(abs(pa), abs(ta))
    assert (+pa) is pa and (+ta) is ta
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor"):
        +pyaten.tensor([True])  # noqa: B018


def test_special_float_values():
    values = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e30, -1e30]
    pa, ta = pyaten.tensor(values), torch.tensor(values)
    for op in UNARY:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_same(getattr(pyaten, op)(pa), getattr(torch, op)(ta))
    assert_same(pa / 0.0, ta / 0.0)


@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("int64", "float32"),
                                    ("uint8", "int32"), ("bool", "int64"), ("int32", "float16"),
                                    ("bfloat16", "float16")])
def test_mixed_dtype_promotion(dtypes):
    (pa, ta), (pb, tb) = make((2, 3), dtypes[0], 10), make((3,), dtypes[1], 11)
    for op in ["add", "mul", "div", "lt"]:
        pair = run_both(lambda op=op: getattr(pyaten, op)(pa, pb),
                        lambda op=op: getattr(torch, op)(ta, tb))
        if pair:
            assert_same(*pair)


def test_zero_dim_tensor_promotes_like_a_scalar():
    pa, ta = make((3,), "int32", 12)
    pz, tz = pyaten.tensor(2.5, dtype=pyaten.float64), torch.tensor(2.5, dtype=torch.float64)
    assert_same(pa + pz, ta + tz)
    ph, th = make((3,), "float16", 13)
    assert_same(ph * pz, th * tz)


@pytest.mark.parametrize("dtypes", list(itertools.product(["int64", "float32", "bool"],
                                                           repeat=2)))
def test_where_self(dtypes):
    pc, tc = make((2, 3), "bool", 14)
    (pa, ta), (pb, tb) = make((2, 3), dtypes[0], 15), make((3,), dtypes[1], 16)
    assert_same(pyaten.where(pc, pa, pb), torch.where(tc, ta, tb))
    assert_same(pa.where(pc, pb), ta.where(tc, tb))


def test_where_scalar_overloads_and_condition_form():
    pc, tc = make((4,), "bool", 17)
    pa, ta = make((4,), "float32", 18)
    assert_same(pyaten.where(pc, pa, 0.0), torch.where(tc, ta, 0.0))
    assert_same(pyaten.where(pc, 1.0, pa), torch.where(tc, 1.0, ta))
    assert_same(pyaten.where(pc, 1, 0), torch.where(tc, 1, 0))
    ours, theirs = pyaten.where(pc), torch.where(tc)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert_same(o, t)
    with pytest.raises(RuntimeError, match="boolean tensor"):
        pyaten.where(pa, pa, pa)
    po = pyaten.empty(0)
    pyaten.where(pc, pa, pa, out=po)
    assert_same(po, torch.where(tc, ta, ta))


def test_meta_tensors_compute_shape_and_dtype_only():
    a = pyaten.empty((2, 1, 3), device="meta")
    b = pyaten.empty((4, 1), device="meta", dtype=pyaten.int64)
    for op in BINARY:
        r = getattr(pyaten, op)(a, b)
        t = getattr(torch, op)(torch.empty((2, 1, 3), device="meta"),
                               torch.empty((4, 1), device="meta", dtype=torch.int64))
        assert r.device.type == "meta"
        assert tuple(r.shape) == tuple(t.shape)
        assert dtype_name(r.dtype) == dtype_name(t.dtype)
    for op in UNARY:
        assert tuple(getattr(pyaten, op)(a).shape) == (2, 1, 3)
    assert tuple(pyaten.where(a > 0, a, b).shape) == (2, 4, 3)


@settings(max_examples=40, deadline=None)
@given(
    shape_a=st.lists(st.integers(0, 3), max_size=3),
    shape_b=st.lists(st.integers(0, 3), max_size=3),
    op=st.sampled_from(["add", "mul", "sub", "div", "ge"]),
)
def test_broadcasting_property(shape_a, shape_b, op):
    (pa, ta), (pb, tb) = make(tuple(shape_a), "float32", 19), make(tuple(shape_b), "float32", 20)
    pair = run_both(lambda: getattr(pyaten, op)(pa, pb), lambda: getattr(torch, op)(ta, tb))
    if pair:
        assert_same(*pair)


def test_error_messages_match_torch():
    cases = [
        (lambda m: m.tensor([True]) - m.tensor([True])),
        (lambda m: -m.tensor([True])),
        (lambda m: m.tensor([1, 2]).add_(m.tensor([0.5, 1.0]))),
        (lambda m: m.tensor([1.0, 2.0]).add_(m.ones(2, 2))),
        (lambda m: m.add(m.tensor([1, 2]), m.tensor([1, 2]), alpha=1.5)),
        (lambda m: m.tensor([1.0, 2.0]) + m.ones(3)),
        (lambda m: m.div(m.ones(2), m.ones(2), rounding_mode="x")),
        (lambda m: m.neg(m.tensor([1, 2]), out=m.empty(2))),
    ]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(torch)
        with pytest.raises(Exception) as ours:
            case(pyaten)
        assert type(ours.value) is type(theirs.value)
        assert str(ours.value) == str(theirs.value)


def test_out_resize_warns_like_torch():
    pa = pyaten.ones(2)
    po = pyaten.empty(3)
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        pyaten.add(pa, pa, out=po)
    assert tuple(po.shape) == (2,)


def test_inplace_returns_self_and_shares_storage():
    a = pyaten.ones(3)
    view = a.view(3)
    assert a.mul_(2) is a
    assert view.tolist() == [2.0, 2.0, 2.0]
    b = a
    b += 1
    assert b is a and a.tolist() == [3.0, 3.0, 3.0]


def test_operators_on_transposed_and_strided_inputs():
    pa, ta = make((3, 4), "float32", 21)
    assert_same(pa.t() + pa.t(), ta.t() + ta.t())
    assert_same(pa[:, 1] * 2, ta[:, 1] * 2)


def test_output_layout_follows_inputs_like_torch():
    pa, ta = make((3, 4), "float32", 22)
    pb, tb = make((3, 4), "float32", 23)
    ours, theirs = pa.t() + pb.t(), ta.t() + tb.t()
    assert ours.stride() == theirs.stride()
    ours, theirs = pyaten.exp(pa.t()), torch.exp(ta.t())
    assert ours.stride() == theirs.stride()


def test_impls_go_through_dispatch_stubs():
    from pyaten.dispatch import trace

    a = pyaten.ones(2)
    with trace() as t:
        pyaten.mul(a, a)
    def notes(nodes):
        for node in nodes:
            yield from node["notes"]
            yield from notes(node["children"])

    assert any(n["kind"] == "stub" and n["stub"] == "mul_stub" for n in notes(t.as_dicts()))


def test_writes_bump_the_version_counter_like_torch():
    for lib in (pyaten, torch):
        a = lib.ones(2)
        view = a.view(2)
        before = a._version
        a.add_(1)
        a.mul_(2)
        lib.add(a, a, out=view)
        assert a._version - before == 3


MORE_BINARY = {"remainder": "__mod__", "pow": "__pow__", "bitwise_and": "__and__",
               "bitwise_or": "__or__", "bitwise_xor": "__xor__"}


@pytest.mark.parametrize("op", list(MORE_BINARY))
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float32", "float64"])
def test_remainder_pow_bitwise_variants(op, dtype):
    (pa, ta), (pb, tb) = make((2, 3), dtype, 24), make((3,), dtype, 25)
    if op == "pow" and dtype.startswith("int"):
        pb, tb = pb.abs() if dtype != "bool" else pb, tb.abs()
    assert_agree([
        (lambda: getattr(pyaten, op)(pa, pb), lambda: getattr(torch, op)(ta, tb)),
        (lambda: getattr(pa, op)(pb), lambda: getattr(ta, op)(tb)),
        (lambda: getattr(pa, MORE_BINARY[op])(pb), lambda: getattr(ta, MORE_BINARY[op])(tb)),
        (lambda: getattr(pa, MORE_BINARY[op])(2), lambda: getattr(ta, MORE_BINARY[op])(2)),
        (lambda: getattr(pyaten, op)(pa, 3), lambda: getattr(torch, op)(ta, 3)),
    ])
    pa2, ta2 = pa.clone(), ta.clone()
    pair = run_both(lambda: getattr(pa2, op + "_")(pb), lambda: getattr(ta2, op + "_")(tb))
    if pair:
        assert_same(pa2, ta2)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "int64", "float32"])
def test_invert_shifts_and_reflected_operators(dtype):
    pa, ta = make((5,), dtype, 26)
    assert_agree([
        (lambda: ~pa, lambda: ~ta),
        (lambda: pa << 2, lambda: ta << 2),
        (lambda: pa >> 1, lambda: ta >> 1),
        (lambda: 7 % pa, lambda: 7 % ta),
        (lambda: 2 ** pa, lambda: 2 ** ta),
        (lambda: 3 & pa, lambda: 3 & ta),
        (lambda: pa // 2, lambda: ta // 2),
        (lambda: 9 // pa, lambda: 9 // ta),
    ])


def test_out_aliasing_strided_out_and_overlap_errors_like_torch():
    pa, ta = make((2, 2), "float32", 27)
    po, to = pyaten.empty(2, 2).t(), torch.empty(2, 2).t()
    pyaten.add(pa, pa, out=po)
    torch.add(ta, ta, out=to)
    assert po.stride() == to.stride()
    assert_same(po, to)
    px, tx = pa.clone(), ta.clone()
    pyaten.mul(px, px, out=px)
    torch.mul(tx, tx, out=tx)
    assert_same(px, tx)
    cases = [
        lambda m: m.ones(3).expand(2, 3).add_(1),
        lambda m: (lambda t: m.add(t[1:], t[:-1], out=t[:-1]))(m.arange(6.0)),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as theirs:
            case(torch)
        with pytest.raises(RuntimeError) as ours:
            case(pyaten)
        assert str(ours.value).split(".")[0] == str(theirs.value).split(".")[0]


@pytest.mark.parametrize("left", DTYPES)
@pytest.mark.parametrize("right", DTYPES + ["int", "float", "bool", "0-dim float64"])
def test_every_dtype_pair_promotes_like_torch(left, right):
    pa, ta = make((2, 3), left, 28)
    if right in ("int", "float", "bool"):
        pb = tb = {"int": 3, "float": 1.5, "bool": True}[right]
    elif right == "0-dim float64":
        pb, tb = pyaten.tensor(2.0, dtype=pyaten.float64), torch.tensor(2.0, dtype=torch.float64)
    else:
        pb, tb = make((3,), right, 29)
    for op in ("add", "mul", "div", "lt"):
        pair = run_both(lambda op=op: getattr(pyaten, op)(pa, pb),
                        lambda op=op: getattr(torch, op)(ta, tb))
        if pair:
            assert_same(*pair)
    if isinstance(pb, pyaten.Tensor):
        pc, tc = make((2, 3), "bool", 30)
        pair = run_both(lambda: pyaten.where(pc, pa, pb), lambda: torch.where(tc, ta, tb))
        assert_same(*pair)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_inputs_like_torch(dtype):
    rng = np.random.default_rng(31)
    values = (rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))).astype(dtype)
    pa, ta = pyaten.from_numpy(values.copy()), torch.from_numpy(values.copy())
    for op in BINARY + UNARY + ["pow"]:
        args = (pa, pa) if op in BINARY + ["pow"] else (pa,)
        targs = (ta, ta) if op in BINARY + ["pow"] else (ta,)
        pair = run_both(lambda op=op, args=args: getattr(pyaten, op)(*args),
                        lambda op=op, targs=targs: getattr(torch, op)(*targs))
        if pair:
            assert_same(*pair, rtol=1e-5, atol=1e-5)
    pair = run_both(lambda: pa.abs_(), lambda: ta.abs_())
    assert pair is None  # both refuse in-place abs of complex
    assert_same(pa * 2.5 + 1j, ta * 2.5 + 1j)


@pytest.mark.parametrize("dtype", ["int64", "float32"])
def test_rsub_and_in_place_operators(dtype):
    (pa, ta), (pb, tb) = make((2, 3), dtype, 32), make((3,), dtype, 33)
    assert_same(pyaten.rsub(pa, pb), torch.rsub(ta, tb))
    assert_same(pyaten.rsub(pa, 2, alpha=3), torch.rsub(ta, 2, alpha=3))
    for op in ("__iadd__", "__isub__", "__imul__", "__imod__", "__ifloordiv__", "__iand__",
               "__ior__", "__ixor__", "__ilshift__", "__irshift__", "__itruediv__"):
        pa2, ta2 = pa.clone(), ta.clone()
        pair = run_both(lambda op=op, x=pa2: getattr(x, op)(2),
                        lambda op=op, x=ta2: getattr(x, op)(2))
        if pair:
            assert pair[0] is pa2
            assert_same(pa2, ta2)
