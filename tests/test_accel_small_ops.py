"""The accelerator's small-operator work (Note: the small-operator loops, in csrc/accel.c):
relu's and add/sub/mul's C element loops and cat's C fast function, each against its Python
reference (same inputs, every slot of the result, versions, declining) and, through the
public operators, against PyTorch (values, dtype, shape, strides, version counters)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_accel import _ALL, _LAYOUTS, _STUB, _compare, _tensor, _values, needs_accel

import pyaten
from pyaten.core import dtypes as dt
from pyaten.native import fastpath
from pyaten.native.kernels import cat as cat_kernels
from pyaten.native.kernels import unary as unary_kernels

_SPECIAL = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-40, -1e-40, 3.5, -2.25])


def _with_specials(values: np.ndarray, dtype) -> np.ndarray:
    """Floating values with NaN, infinities, signed zeros and subnormals mixed in."""
    if not dtype.is_floating_point or values.size == 0:
        return values
    flat = values.reshape(-1).copy()
    n = min(flat.size, _SPECIAL.size)
    flat[:n] = _SPECIAL[:n]
    return flat.reshape(values.shape)


_SHAPES = [(), (3,), (2, 3), (2, 1, 4), (4097,)]  # (4097,): past the loops' size, NumPy's path


@needs_accel
@settings(max_examples=80, deadline=None)
@given(dtype=st.sampled_from(_ALL), shape=st.sampled_from(_SHAPES),
       layout=st.sampled_from(_LAYOUTS), inplace=st.booleans(), seed=st.integers(0, 2**16))
def test_relu_loop_matches_the_reference(dtype, shape, layout, inplace, seed):
    dtypes = fastpath.FLOATS | fastpath.INTEGERS
    loop = unary_kernels._relu_loop
    ours = fastpath.unary(loop, None, dtypes, loop="relu")
    ref = fastpath.unary_reference(loop, {}, None, dtypes, None)
    values = _with_specials(_values(seed, shape, dtype) - 2, dtype)
    index = 1 if inplace else 0
    _compare(ours[index], ref[index], lambda: (_tensor(values, dtype, layout),))


_NUMBERS = [2.5, 0.1, -0.0, 1e300, -1e300, 3.4028235e38, 1e-45, 1e-320, float("nan"),
            float("inf"), 16777217.0, 3]

def _binary_pair(fn, dtypes, out_dtype=None, alpha=False):
    """The accelerated fast functions of `fn` and their Python references."""
    ours = fastpath.binary(fn, _STUB, dtypes, out_dtype, alpha)
    ref = fastpath.binary_reference(fn, _STUB._kernels, _STUB._kernels.get("cpu"), dtypes,
                                    out_dtype)
    if alpha:
        ref = tuple(fastpath._alpha_one(f) for f in ref)
    return ours, ref


_BINARY = {"add": (np.add, True), "sub": (np.subtract, True), "mul": (np.multiply, False)}


@needs_accel
@settings(max_examples=120, deadline=None)
@given(name=st.sampled_from(sorted(_BINARY)), dtype=st.sampled_from(_ALL),
       shape=st.sampled_from(_SHAPES), layout=st.sampled_from(_LAYOUTS),
       other=st.sampled_from(["tensor", "plain", "self", "number"]), inplace=st.booleans(),
       seed=st.integers(0, 2**16))
def test_binary_loops_match_the_reference(name, dtype, shape, layout, other, inplace, seed):
    """Tensors of one shape, the tensor itself, or a wrapped Python number."""
    fn, alpha = _BINARY[name]
    ours, ref = _binary_pair(fn, fastpath.DIRECT, None, alpha)
    index = 1 if inplace else 0
    values = _with_specials(_values(seed, shape, dtype), dtype)
    others = np.flip(_values(seed + 1, shape, dtype))

    def make():
        self = _tensor(values, dtype, layout)
        if other == "self":
            operand = self
        elif other == "number":  # a Python float, cast to the array's dtype as NumPy does
            operand = pyaten.native.runtime.wrapped_number(_NUMBERS[seed % len(_NUMBERS)])
        else:
            operand = _tensor(others, dtype, layout if other == "tensor" else "plain")
        return (self, operand, 1) if alpha else (self, operand)

    _compare(ours[index], ref[index], make)


@needs_accel
@pytest.mark.parametrize("number", _NUMBERS, ids=repr)
@pytest.mark.parametrize("name", sorted(_BINARY))
def test_binary_loops_with_every_kind_of_number(name, number):
    fn, alpha = _BINARY[name]
    ours, ref = _binary_pair(fn, fastpath.DIRECT, None, alpha)
    for dtype in (dt.float32, dt.float64):
        values = _with_specials(_values(7, (3, 5), dtype), dtype)
        def make(values=values, dtype=dtype):
            args = (_tensor(values, dtype, "plain"), pyaten.native.runtime.wrapped_number(number))
            return args + (1,) if alpha else args

        for index in (0, 1):
            _compare(ours[index], ref[index], make)


def test_the_small_ops_are_the_accelerated_ones():
    if pyaten.core.accel.ACCEL is None:
        assert cat_kernels._fast_cat is cat_kernels._fast_cat_reference
        return
    fast = pyaten.core.accel.ACCEL.FastFunction
    assert isinstance(fastpath.REGISTERED["cat"], fast)
    assert isinstance(unary_kernels._relu_fast, fast)


# --- cat -------------------------------------------------------------------------------


def _cat_pair():
    accel = pyaten.core.accel.ACCEL
    return accel.cat_function(), cat_kernels._fast_cat_reference


@st.composite
def _cat_inputs(draw):
    ndim = draw(st.integers(0, 5))
    sizes = [draw(st.integers(0, 3)) for _ in range(ndim)]
    dim = draw(st.integers(-ndim - 1, ndim))
    count = draw(st.integers(0, 3))
    dtype = draw(st.sampled_from(_ALL))
    pieces = []
    for _ in range(count):
        shape = list(sizes)
        if ndim and -ndim <= dim < ndim:
            shape[dim] = draw(st.integers(0, 3))
        kind = draw(st.sampled_from(["same", "same", "same", "other dtype", "legacy empty",
                                     "other rank", "other size"]))
        piece_dtype = dtype
        if kind == "other dtype":
            piece_dtype = dt.float64 if dtype is not dt.float64 else dt.int32
        elif kind == "legacy empty":
            shape = [0]
        elif kind == "other rank":
            shape = shape + [1]
        elif kind == "other size" and ndim > 1:
            shape[(dim + 1) % ndim] += 1
        layout = draw(st.sampled_from(_LAYOUTS))
        pieces.append((tuple(shape), piece_dtype, layout, draw(st.integers(0, 2**16))))
    return pieces, dim, draw(st.booleans())


def _make_pieces(pieces, as_list: bool):
    made = [_tensor(_values(seed, shape, dtype), dtype, layout)
            for shape, dtype, layout, seed in pieces]
    return made if as_list else tuple(made)


@needs_accel
@settings(max_examples=200, deadline=None)
@given(_cat_inputs())
def test_cat_matches_the_reference(case):
    pieces, dim, as_list = case
    ours, ref = _cat_pair()
    _compare(ours, ref, lambda: (_make_pieces(pieces, as_list), dim))


@needs_accel
def test_cat_declines_what_it_does_not_take():
    ours, ref = _cat_pair()
    a = pyaten.ones(2, 3)
    for args in [((a, a), 2**70), ((a, a), -(2**70)), ((a, a.to("meta")), 0),
                 ((pyaten.ones(1, 2, 3, 4),) * 2, 0), ((), 0)]:
        assert ours(*args) is None and ref(*args) is None
    with pytest.raises(TypeError):
        ours(a)


# --- through the operators, against PyTorch ---------------------------------------------


def _pair(values: np.ndarray, dtype):
    theirs = getattr(torch, str(dtype).split(".")[-1])
    return (pyaten.tensor(values.tolist(), dtype=dtype),
            torch.tensor(values.tolist(), dtype=theirs))


def _assert_like_torch(ours, theirs):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.stride() == theirs.stride()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


_OP_DTYPES = [dt.float32, dt.float64, dt.int64, dt.int32, dt.int8, dt.uint8]


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from(_OP_DTYPES), shape=st.sampled_from(_SHAPES[:4] + [(5, 2)]),
       dim=st.integers(-1, 0), seed=st.integers(0, 2**16))
def test_the_operators_match_torch(dtype, shape, dim, seed):
    values = _with_specials(_values(seed, shape, dtype) - 2, dtype)
    others = np.flip(_values(seed + 1, shape, dtype))
    a, ta = _pair(values, dtype)
    b, tb = _pair(others, dtype)
    _assert_like_torch(pyaten.relu(a), torch.relu(ta))
    for name in ("add", "sub", "mul"):
        _assert_like_torch(getattr(pyaten, name)(a, b), getattr(torch, name)(ta, tb))
    if shape:
        _assert_like_torch(pyaten.cat([a, b, a], dim), torch.cat([ta, tb, ta], dim))
    before, tbefore = a._version, ta._version
    a.add_(b)
    ta.add_(tb)
    _assert_like_torch(a, ta)
    assert a._version - before == ta._version - tbefore == 1
    a.relu_()
    ta.relu_()
    _assert_like_torch(a, ta)
    assert a._version - before == ta._version - tbefore == 2


def test_the_operators_are_traced_and_seen_by_modes_as_before():
    from pyaten.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    a, b = pyaten.ones(2, 2), pyaten.ones(2, 2)
    with Record():
        out = pyaten.cat([pyaten.relu(a), pyaten.add(a, b)])
        a.add_(b)
    assert seen == ["aten.relu.default", "aten.add.Tensor", "aten.cat.default",
                    "aten.add_.Tensor"]
    assert out.tolist() == [[1.0, 1.0]] * 2 + [[2.0, 2.0]] * 2
    with pyaten.explain() as trace:
        pyaten.cat([a, b])
    assert "cat" in str(trace)


# --- sum's small loop ---------------------------------------------------------------------


@needs_accel
@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(0, 40), min_size=0, max_size=3).map(tuple),
       dtype=st.sampled_from([np.float32, np.float64, np.int64, np.float16]),
       which=st.sampled_from(["all", "last", "first", "empty"]), keepdim=st.booleans(),
       layout=st.sampled_from(["plain", "transposed", "offset"]), seed=st.integers(0, 2**16))
def test_sum_small_is_numpys_add_reduce(shape, dtype, which, keepdim, layout, seed):
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=shape) * 10.0 ** rng.integers(-3, 4, size=shape)).astype(dtype)
    if x.size and np.issubdtype(dtype, np.floating):
        x.reshape(-1)[: min(x.size, 4)] = np.array([-0.0, np.nan, np.inf, 1e-40])[: x.size]
    if layout == "transposed":
        x = x.T
    elif layout == "offset" and x.size:
        x = np.concatenate([x.reshape(-1)[:1], x.reshape(-1)])[1:].reshape(x.shape)
    nd = x.ndim
    dims = {"all": tuple(range(nd)), "last": (nd - 1,) if nd else (), "first": (0,) if nd
            else (), "empty": ()}[which]
    expected = np.add.reduce(x, axis=dims, keepdims=keepdim)
    out = np.empty(np.shape(expected), x.dtype)
    with np.errstate(all="ignore"):
        done = pyaten.core.accel.ACCEL.sum_small(x, dims, out)
    if not done:
        return  # NumPy's call, as before
    assert np.asarray(expected).tobytes() == out.tobytes()


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from([(4, 4), (3,), (2, 3, 5), (1, 130), (3, 300)]),
       dtype=st.sampled_from([dt.float32, dt.float64]), dim=st.sampled_from([None, -1, 0]),
       keepdim=st.booleans(), seed=st.integers(0, 2**16))
def test_sum_matches_the_general_path_and_torch(shape, dtype, dim, keepdim, seed):
    values = _with_specials(_values(seed, shape, dtype), dtype) if seed % 3 == 0 else _values(
        seed, shape, dtype)
    a, ta = _pair(values, dtype)
    if dim is None:
        ours, theirs = pyaten.sum(a), torch.sum(ta)
    else:
        ours, theirs = pyaten.sum(a, dim, keepdim), torch.sum(ta, dim, keepdim)
    with pyaten.explain():  # the general path: no fast function while tracing
        general = pyaten.sum(a) if dim is None else pyaten.sum(a, dim, keepdim)
    assert ours.numpy().tobytes() == general.numpy().tobytes()
    assert ours.stride() == general.stride() and ours.dtype is general.dtype
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-4)


# --- (log_)softmax's small loop -------------------------------------------------------------


@needs_accel
@settings(max_examples=150, deadline=None)
@given(rows=st.integers(1, 12), n=st.integers(1, 40),
       dtype=st.sampled_from([np.float32, np.float64]), log=st.booleans(),
       scale=st.integers(-2, 3), specials=st.booleans(), seed=st.integers(0, 2**16))
def test_softmax_small_is_the_compiled_rows_loop(rows, n, dtype, log, scale, specials, seed):
    from pyaten.native import compiled

    loops = compiled.available()
    if loops is None:
        pytest.skip("no compiled loops (Numba): the C loop is never taken")
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(rows, n)) * 10.0 ** scale).astype(dtype)
    if specials:
        x.reshape(-1)[:3] = np.array([np.nan, -np.inf, np.inf])[: min(3, x.size)]
    expected, out = np.empty_like(x), np.empty_like(x)
    with np.errstate(all="ignore"):
        loops.softmax_rows(x, expected, log)
        assert pyaten.core.accel.ACCEL.softmax_small(x, 1, out, log)
    assert expected.tobytes() == out.tobytes()


@needs_accel
def test_softmax_small_declines_what_it_does_not_take():
    small = pyaten.core.accel.ACCEL.softmax_small
    x = np.ones((3, 4), np.float32)
    out = np.empty_like(x)
    assert not small(x, 0, out, False)  # not the last dim
    assert not small(x.T, 1, out, False)  # not contiguous
    assert not small(x.astype(np.float16), 1, np.empty((3, 4), np.float16), False)
    assert not small(np.ones((64, 64), np.float32), 1, np.empty((64, 64), np.float32), True)
    assert not small(x, 1, x, False)  # in place: the kernel's own path
    assert not small(x, 1, out.astype(np.float64), False)


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from([(4, 4), (3,), (2, 3, 5), (1, 130), (3, 40)]),
       dtype=st.sampled_from([dt.float32, dt.float64]), dim=st.sampled_from([-1, 0]),
       log=st.booleans(), seed=st.integers(0, 2**16))
def test_softmax_matches_the_general_path_and_torch(shape, dtype, dim, log, seed):
    values = _with_specials(_values(seed, shape, dtype), dtype) if seed % 4 == 0 else _values(
        seed, shape, dtype)
    a, ta = _pair(values, dtype)
    name = "log_softmax" if log else "softmax"
    ours, theirs = getattr(pyaten, name)(a, dim), getattr(torch, name)(ta, dim)
    with pyaten.explain():  # the general path: no fast function while tracing
        general = getattr(pyaten, name)(a, dim)
    assert ours.numpy().tobytes() == general.numpy().tobytes()
    assert ours.stride() == general.stride() == theirs.stride()
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


# --- mm's product through NumPy's own matmul loop -----------------------------------------


@needs_accel
@settings(max_examples=150, deadline=None)
@given(m=st.integers(0, 40), n=st.integers(0, 40), p=st.integers(0, 40),
       dtype=st.sampled_from([np.float32, np.float64, np.complex64, np.complex128, np.int64,
                              np.float16]),
       layout_a=st.sampled_from(["plain", "transposed", "sliced"]),
       layout_b=st.sampled_from(["plain", "transposed", "sliced", "a.T"]),
       seed=st.integers(0, 2**16))
def test_matmul_small_is_numpys_matmul(m, n, p, dtype, layout_a, layout_b, seed):
    rng = np.random.default_rng(seed)

    def make(rows, cols, layout):
        x = rng.normal(size=(rows, cols * 2 if layout == "sliced" else cols))
        if np.issubdtype(dtype, np.complexfloating):
            x = x + 1j * rng.normal(size=x.shape)
        x = x.astype(dtype)
        if layout == "transposed":
            return np.ascontiguousarray(x.T).T
        return x[:, ::2] if layout == "sliced" else x

    a = make(m, n, layout_a)
    b = a.T if layout_b == "a.T" else make(n, p, layout_b)  # BLAS's syrk case
    expected = np.matmul(a, b)
    out = np.empty_like(expected)
    if pyaten.core.accel.ACCEL.matmul_small(a, b, out):
        assert expected.tobytes() == out.tobytes()
    else:
        assert 0 in (m, n, p) or dtype in (np.int64, np.float16)


@needs_accel
def test_matmul_small_declines_what_it_does_not_take():
    small = pyaten.core.accel.ACCEL.matmul_small
    a = np.ones((3, 3), np.float32)
    assert not small(a, a, a)  # the output overlaps an input
    assert not small(a, a, np.empty((3, 3), np.float64))
    assert not small(a, a, np.empty((3, 3), np.float32).T)  # not C-contiguous
    assert not small(np.ones((2, 3, 3), np.float32), a, np.empty((2, 3, 3), np.float32))
    assert not small(a, np.ones((2, 3), np.float32), np.empty((3, 3), np.float32))
    assert not small(a, a, [[0.0] * 3] * 3)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 9), n=st.integers(1, 9), p=st.integers(1, 9),
       dtype=st.sampled_from([dt.float32, dt.float64, dt.complex64]),
       transposed=st.booleans(), bias=st.sampled_from([None, "row", "matrix"]),
       seed=st.integers(0, 2**16))
def test_mm_and_addmm_match_the_general_path_and_torch(m, n, p, dtype, transposed, bias, seed):
    a, ta = _pair(_values(seed, (m, n), dtype), dtype)
    b, tb = _pair(_values(seed + 1, (p, n) if transposed else (n, p), dtype), dtype)
    if transposed:
        b, tb = b.t(), tb.t()
    if bias is None:
        ours, theirs = pyaten.mm(a, b), torch.mm(ta, tb)
        with pyaten.explain():  # the general path: no fast function while tracing
            general = pyaten.mm(a, b)
    else:
        c, tc = _pair(_values(seed + 2, (p,) if bias == "row" else (m, p), dtype), dtype)
        ours, theirs = pyaten.addmm(c, a, b), torch.addmm(tc, ta, tb)
        with pyaten.explain():
            general = pyaten.addmm(c, a, b)
    assert ours.numpy().tobytes() == general.numpy().tobytes()
    assert ours.stride() == general.stride() == theirs.stride()
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-4)


# --- unary ufuncs' own inner loops ----------------------------------------------------------

_UFUNC_ROWS = {
    "exp": (unary_kernels._exp, unary_kernels._exp_small),
    "sigmoid": (unary_kernels._sigmoid, unary_kernels._sigmoid_small),
    **{u.__name__: (u, None) for u in (np.sin, np.log, np.tanh, np.sqrt, np.expm1, np.arctan,
                                       np.absolute, np.negative, np.floor, np.exp2)},
}


@needs_accel
@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(_UFUNC_ROWS)),
       dtype=st.sampled_from([dt.float32, dt.float64, dt.complex64, dt.int32]),
       shape=st.sampled_from([(), (3,), (2, 3), (4, 4), (2, 1, 4), (2047,), (4096,)]),
       layout=st.sampled_from(_LAYOUTS), inplace=st.booleans(), forced=st.booleans(),
       seed=st.integers(0, 2**16))
def test_small_ufunc_loops_match_the_reference(name, dtype, shape, layout, inplace, forced,
                                               seed):
    from pyaten.native import compiled

    fn, small = _UFUNC_ROWS[name]
    dtypes = fastpath.FLOATS | fastpath.COMPLEX | fastpath.INTEGERS
    ours = fastpath.unary(fn, _STUB, dtypes, small=small)
    ref = fastpath.unary_reference(fn, _STUB._kernels, _STUB._kernels.get("cpu"), dtypes, None)
    values = _with_specials(_values(seed, shape, dtype), dtype)
    index = 1 if inplace else 0
    # with the compiled loops forced on, exp's small inputs take them: so must the C path
    compiled.set_enabled(True if forced else None)
    try:
        with np.errstate(all="ignore"):
            _compare(ours[index], ref[index], lambda: (_tensor(values, dtype, layout),))
    finally:
        compiled.set_enabled(None)


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["exp", "sigmoid", "sin", "tanh", "sqrt", "log"]),
       dtype=st.sampled_from([dt.float32, dt.float64]),
       shape=st.sampled_from([(4, 4), (3,), (2, 3, 5)]), seed=st.integers(0, 2**16))
def test_unary_operators_match_the_general_path_and_torch(name, dtype, shape, seed):
    values = _with_specials(_values(seed, shape, dtype), dtype)
    a, ta = _pair(values, dtype)
    ours, theirs = getattr(pyaten, name)(a), getattr(torch, name)(ta)
    with pyaten.explain():
        general = getattr(pyaten, name)(a)
    assert ours.numpy().tobytes() == general.numpy().tobytes()
    assert ours.stride() == general.stride() == theirs.stride()
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
    before = a._version
    getattr(a, name + "_")()
    assert a.numpy().tobytes() == ours.numpy().tobytes() and a._version == before + 1


# --- a fresh tensor's NumPy view, made in C ----------------------------------------------


def _views(dtype):
    base = pyaten.arange(24).to(dtype).reshape(2, 3, 4)
    return {
        "plain": base, "transposed": base.transpose(0, 2), "sliced": base[:, 1:, ::2],
        "offset": base[1], "expanded": base[:, :1].expand(2, 5, 4), "scalar": base[1, 2, 3],
        "empty": base[:, :0], "empty offset": base.reshape(-1)[24:], "permuted": base.permute(
            2, 0, 1), "narrow": base.narrow(2, 1, 2), "subclass": base.as_subclass(
            _SubTensor), "meta": pyaten.empty(2, 3, device="meta", dtype=dtype)}


class _SubTensor(pyaten.Tensor):
    pass


@needs_accel
@pytest.mark.parametrize("dtype", [d for d in dt.ALL_DTYPES], ids=str)
def test_fresh_views_are_tensor_numpys(dtype):
    """`_accel.array` on a tensor without a cached view builds what `Tensor._numpy` builds."""
    accel = pyaten.core.accel.ACCEL
    for name, ours in _views(dtype).items():
        ref = ours.as_strided(ours.shape, ours.stride(), ours.storage_offset()) if (
            name not in ("meta", "subclass")) else ours
        ours._np = None
        ref._np = None
        try:
            expected = pyaten.Tensor._numpy(ref)
        except RuntimeError as error:
            with pytest.raises(RuntimeError, match=str(error)[:20]):
                accel.array(ours)
            continue
        view = accel.array(ours)
        assert ours._np is view, name
        assert view.base is ours._storage.data and expected.base is ref._storage.data
        assert (view.shape, view.strides, view.dtype) == (expected.shape, expected.strides,
                                                          expected.dtype), name
        for flag in ("writeable", "aligned", "c_contiguous", "f_contiguous", "owndata",
                     "writebackifcopy"):
            assert getattr(view.flags, flag) == getattr(expected.flags, flag), (name, flag)
        assert view.__array_interface__["data"] == expected.__array_interface__["data"], name
        np.testing.assert_array_equal(view, expected)


# --- binary ufuncs' own inner loops -----------------------------------------------------------

_BINARY_UFUNCS = {
    "div": (np.true_divide, None), "maximum": (np.maximum, None), "pow": (np.power, None),
    "atan2": (np.arctan2, None), "fmod": (np.fmod, None), "floor_divide": (np.floor_divide,
                                                                           None),
    "lt": (np.less, dt.bool), "eq": (np.equal, dt.bool), "ge": (np.greater_equal, dt.bool),
}


@needs_accel
@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(_BINARY_UFUNCS)),
       dtype=st.sampled_from([dt.float32, dt.float64, dt.int64, dt.complex64]),
       shape=st.sampled_from([(), (3,), (2, 3), (4, 4), (2, 1, 4), (4095,), (4096,)]),
       layout=st.sampled_from(_LAYOUTS), other=st.sampled_from(["tensor", "plain", "self"]),
       inplace=st.booleans(), seed=st.integers(0, 2**16))
def test_binary_ufunc_loops_match_the_reference(name, dtype, shape, layout, other, inplace,
                                                seed):
    fn, out_dtype = _BINARY_UFUNCS[name]
    ours, ref = _binary_pair(fn, fastpath.FLOATS | fastpath.INTEGERS, out_dtype)
    values = _with_specials(_values(seed, shape, dtype), dtype)
    others = _with_specials(np.flip(_values(seed + 1, shape, dtype)), dtype)

    def make():
        self = _tensor(values, dtype, layout)
        if other == "self":
            return self, self
        return self, _tensor(others, dtype, layout if other == "tensor" else "plain")

    index = 1 if inplace else 0
    with np.errstate(all="ignore"):
        _compare(ours[index], ref[index], make)
