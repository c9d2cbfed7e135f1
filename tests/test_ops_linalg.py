"""mm, bmm and matmul vs PyTorch: every matmul dimension rule (1-d/2-d/batched,
broadcasting), integer and reduced-precision products, out=, Meta, and errors."""

from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ops_shape_helpers import assert_same, assert_same_error, make_pair

import pyaten


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int8", "uint8",
              "complex64"]
)
def test_mm_matches_torch(dtype):
    ta, pa = make_pair((3, 4), dtype, seed=1)
    tb, pb = make_pair((4, 2), dtype, seed=2)
    rtol = 2e-2 if dtype == "bfloat16" else None
    assert_same(pyaten.mm(pa, pb), torch.mm(ta, tb), rtol=rtol)
    assert_same(pa.mm(pb), ta.mm(tb), rtol=rtol)
    # transposed and sliced operands
    assert_same(pyaten.mm(pb.t(), pa.t()), torch.mm(tb.t(), ta.t()), rtol=rtol)


def test_mm_empty_and_out():
    ta, pa = make_pair((0, 3), "float32")
    tb, pb = make_pair((3, 2), "float32")
    assert_same(pyaten.mm(pa, pb), torch.mm(ta, tb))
    ta, pa = make_pair((2, 0), "float32")
    tb, pb = make_pair((0, 3), "float32")
    assert_same(pyaten.mm(pa, pb), torch.mm(ta, tb))
    ta, pa = make_pair((2, 3), "float64")
    tb, pb = make_pair((3, 2), "float64")
    out_t, out_p = torch.empty(0, dtype=torch.float64), pyaten.empty(0, dtype=pyaten.float64)
    assert pyaten.mm(pa, pb, out=out_p) is out_p
    assert_same(out_p, torch.mm(ta, tb, out=out_t))


MATMUL_SHAPES = [
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3,)),
    ((5, 2, 3), (3, 4)),
    ((3,), (5, 3, 4)),
    ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)),
    ((1, 2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (5, 3, 4)),
    ((4, 1, 2, 3), (1, 6, 3, 2)),
    ((0, 2, 3), (3, 4)),
    ((2, 0), (0, 3)),
]


@pytest.mark.parametrize("a_shape,b_shape", MATMUL_SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_matmul_dimension_rules(a_shape, b_shape, dtype):
    ta, pa = make_pair(a_shape, dtype, seed=3)
    tb, pb = make_pair(b_shape, dtype, seed=4)
    expected = torch.matmul(ta, tb)
    assert_same(pyaten.matmul(pa, pb), expected)
    assert_same(pa.matmul(pb), expected)
    assert_same(pa @ pb, ta @ tb)


def test_matmul_out():
    ta, pa = make_pair((5, 2, 3), "float32")
    tb, pb = make_pair((3, 4), "float32")
    out_t, out_p = torch.empty(1), pyaten.empty(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.matmul(ta, tb, out=out_t)
        got = pyaten.matmul(pa, pb, out=out_p)
    assert got is out_p
    assert_same(got, expected)


def test_bmm_matches_torch():
    ta, pa = make_pair((4, 2, 3), "float64")
    tb, pb = make_pair((4, 3, 5), "float64")
    assert_same(pyaten.bmm(pa, pb), torch.bmm(ta, tb))
    assert_same(pa.bmm(pb), ta.bmm(tb))


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, a, b: m.mm(a, m.ones(4, 5)),
        lambda m, a, b: m.mm(m.ones(3), b),
        lambda m, a, b: m.mm(a, m.ones(3)),
        lambda m, a, b: m.mm(a, b.to(m.float64)),
        lambda m, a, b: m.mm(a.to(m.bool), b.to(m.bool)),
        lambda m, a, b: m.matmul(m.tensor(1.0), b),
        lambda m, a, b: m.matmul(m.ones(3), m.ones(4)),
        lambda m, a, b: m.matmul(a, m.ones(4)),
        lambda m, a, b: m.matmul(m.ones(3), m.ones(4, 2)),
        lambda m, a, b: m.matmul(m.ones(5, 2, 3), m.ones(4, 3, 2)),
        lambda m, a, b: m.bmm(m.ones(2, 2, 3), m.ones(3, 3, 2)),
        lambda m, a, b: m.bmm(a, m.ones(3, 3, 2)),
    ],
)
def test_linalg_errors_match_torch(fn):
    ta, pa = make_pair((2, 3), "float32")
    tb, pb = make_pair((3, 2), "float32")
    assert_same_error(lambda: fn(pyaten, pa, pb), lambda: fn(torch, ta, tb))


def test_mm_out_dtype_mismatch_raises():
    _, pa = make_pair((2, 3), "float32")
    _, pb = make_pair((3, 2), "float32")
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        pyaten.mm(pa, pb, out=pyaten.empty(2, 2, dtype=pyaten.float64))


@pytest.mark.parametrize("out_dtype", ["float64", "int64", "float16", "complex64", "bool"])
def test_mm_bmm_out_dtype_message_names_dtypes_as_torch(out_dtype):
    # ATen's structured out check prints c10 TypeMeta names ("float", "long int").
    ta, pa = make_pair((2, 3), "float32")
    tb, pb = make_pair((3, 2), "float32")
    t_out = torch.empty(2, 2, dtype=getattr(torch, out_dtype))
    p_out = pyaten.empty(2, 2, dtype=getattr(pyaten, out_dtype))
    assert_same_error(lambda: pyaten.mm(pa, pb, out=p_out), lambda: torch.mm(ta, tb, out=t_out))
    t3, p3 = make_pair((1, 2, 2), "float32")
    t_out3 = torch.empty(1, 2, 2, dtype=getattr(torch, out_dtype))
    p_out3 = pyaten.empty(1, 2, 2, dtype=getattr(pyaten, out_dtype))
    assert_same_error(lambda: pyaten.bmm(p3, p3, out=p_out3), lambda: torch.bmm(t3, t3, out=t_out3))


def test_meta_matmul_shapes():
    for a, b in [((5, 2, 3), (3, 4)), ((3,), (2, 3, 4)), ((2, 3), (3, 2))]:
        expected = torch.matmul(torch.empty(a, device="meta"), torch.empty(b, device="meta"))
        got = pyaten.matmul(pyaten.empty(a, device="meta"), pyaten.empty(b, device="meta"))
        assert_same(got, expected)


@settings(max_examples=40, deadline=None)
@given(
    batch_a=st.lists(st.integers(1, 3), max_size=2),
    batch_b=st.lists(st.integers(1, 3), max_size=2),
    n=st.integers(1, 3), k=st.integers(0, 3), m=st.integers(1, 3),
    vec_a=st.booleans(), vec_b=st.booleans(),
)
def test_matmul_broadcasting_property(batch_a, batch_b, n, k, m, vec_a, vec_b):
    a_shape = (k,) if vec_a else tuple(batch_a) + (n, k)
    b_shape = (k,) if vec_b else tuple(batch_b) + (k, m)
    ta, pa = make_pair(a_shape, "float64", seed=5)
    tb, pb = make_pair(b_shape, "float64", seed=6)
    try:
        expected = torch.matmul(ta, tb)
    except RuntimeError:
        assert_same_error(lambda: pyaten.matmul(pa, pb), lambda: torch.matmul(ta, tb),
                          message=False)
        return
    assert_same(pyaten.matmul(pa, pb), expected)


def test_bmm_out_and_unsafe_view():
    ta, pa = make_pair((2, 2, 3), "int32")
    tb, pb = make_pair((2, 3, 1), "int32")
    out_t, out_p = torch.empty(0, dtype=torch.int32), pyaten.empty(0, dtype=pyaten.int32)
    assert pyaten.bmm(pa, pb, out=out_p) is out_p
    assert_same(out_p, torch.bmm(ta, tb, out=out_t))
    got = pyaten.ops.aten._unsafe_view.default(pa, (3, 4))
    assert_same(got, torch.ops.aten._unsafe_view.default(ta, (3, 4)), strides=True)


# ---- the BLAS-like products: addmm addmv addr baddbmm addbmm mv dot vdot outer ger inner
# kron tensordot chain_matmul, table-driven against torch ---------------------------------------

from _helpers import assert_same_outcome, from_torch, outs, run_both  # noqa: E402


def _torch_input(shape, dtype: str, seed: int, noncontiguous: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    full = tuple(shape[:-1]) + (2 * shape[-1],) if (noncontiguous and shape) else tuple(shape)
    if dtype == "bool":
        t = torch.rand(full, generator=g) > 0.5
    elif dtype.startswith("complex"):
        t = torch.randn(full, generator=g, dtype=getattr(torch, dtype))
    elif dtype in ("float16", "bfloat16", "float32", "float64"):
        t = torch.randn(full, generator=g, dtype=torch.float64).to(getattr(torch, dtype))
    else:
        t = torch.randint(0 if dtype == "uint8" else -4, 5, full, generator=g,
                          dtype=getattr(torch, dtype))
    return t[..., ::2] if (noncontiguous and shape) else t


def _inputs(shapes, dtype, noncontiguous=False):
    theirs = [_torch_input(s, dtype, i + 1, noncontiguous) for i, s in enumerate(shapes)]
    return theirs, [from_torch(t) for t in theirs]


_HALF_RTOL = {"float16": 1e-2, "bfloat16": 5e-2}

# (op, argument shapes, keywords): every case runs in every dtype of BLAS_DTYPES, as a
# function, a method (ops with one), out= and in-place (where the op has them), and on Meta.
BLAS_CASES = [
    ("addmm", [(4,), (2, 3), (3, 4)], {}),
    ("addmm", [(2, 4), (2, 3), (3, 4)], {"beta": 0.5, "alpha": 2}),
    ("addmm", [(1, 4), (2, 3), (3, 4)], {"beta": 0}),
    ("addmm", [(), (0, 3), (3, 4)], {}),
    ("addmm", [(2, 4), (2, 0), (0, 4)], {"alpha": 3}),
    ("addmm", [(3,), (2, 3), (3, 4)], {}),
    ("addmm", [(4,), (2, 3), (4, 4)], {}),
    ("addmm", [(4,), (3,), (3, 4)], {}),
    ("addmv", [(2,), (2, 3), (3,)], {}),
    ("addmv", [(), (2, 3), (3,)], {"beta": 2, "alpha": -1}),
    ("addmv", [(1,), (0, 3), (3,)], {}),
    ("addmv", [(3,), (2, 3), (3,)], {}),
    ("addmv", [(2, 1), (2, 3), (3,)], {}),
    ("addmv", [(2,), (2, 3), (4,)], {}),
    ("mv", [(2, 3), (3,)], {}),
    ("mv", [(0, 3), (3,)], {}),
    ("mv", [(2, 3), (4,)], {}),
    ("mv", [(3,), (3,)], {}),
    ("dot", [(3,), (3,)], {}),
    ("dot", [(0,), (0,)], {}),
    ("dot", [(3,), (4,)], {}),
    ("dot", [(3,), (3, 1)], {}),
    ("vdot", [(5,), (5,)], {}),
    ("vdot", [(2,), (3,)], {}),
    ("addr", [(2, 3), (2,), (3,)], {}),
    ("addr", [(3,), (2,), (3,)], {"beta": 2, "alpha": 3}),
    ("addr", [(4, 3), (2,), (3,)], {}),
    ("addr", [(2, 3), (2, 1), (3,)], {}),
    ("baddbmm", [(2, 2, 4), (2, 2, 3), (2, 3, 4)], {}),
    ("baddbmm", [(4,), (2, 2, 3), (2, 3, 4)], {"beta": 0.5, "alpha": 2}),
    ("baddbmm", [(4,), (2, 2, 3), (3, 3, 4)], {}),
    ("baddbmm", [(4,), (2, 3), (2, 3, 4)], {}),
    ("baddbmm", [(5,), (2, 2, 3), (2, 3, 4)], {}),
    ("baddbmm", [(4,), (0, 2, 3), (0, 3, 4)], {}),
    ("addbmm", [(2, 4), (3, 2, 3), (3, 3, 4)], {}),
    ("addbmm", [(2, 4), (3, 2, 3), (3, 3, 4)], {"beta": 0, "alpha": 2}),
    ("addbmm", [(4,), (3, 2, 3), (2, 3, 4)], {}),
    ("addbmm", [(4,), (3, 2, 3), (3, 4, 4)], {}),
    ("addbmm", [(4,), (3, 2), (3, 3, 4)], {}),
    ("outer", [(3,), (4,)], {}),
    ("outer", [(0,), (4,)], {}),
    ("outer", [(3,), (4, 1)], {}),
    ("ger", [(3,), (2,)], {}),
    ("inner", [(2, 3), (4, 3)], {}),
    ("inner", [(3,), (3,)], {}),
    ("inner", [(), (2, 3)], {}),
    ("inner", [(2, 3), (2,)], {}),
    ("kron", [(2, 3), (4,)], {}),
    ("kron", [(2, 1, 3), (2, 2)], {}),
    ("kron", [(), (3,)], {}),
    ("tensordot", [(2, 3, 4), (4, 3, 5)], {"dims": ([1, 2], [1, 0])}),
    ("tensordot", [(2, 3), (3, 4)], {"dims": ([1], [0])}),
    ("tensordot", [(2, 3), (4, 4)], {"dims": ([1], [0])}),
    ("tensordot", [(2, 3), (1, 4)], {"dims": ([1], [0])}),
]

BLAS_DTYPES = ["float32", "float64", "complex64", "int64", "int32", "uint8", "float16",
               "bfloat16", "bool"]
_HAS_METHOD = {"addmm", "addmv", "mv", "dot", "vdot", "addr", "baddbmm", "addbmm", "outer",
               "ger", "inner", "kron"}
_HAS_INPLACE = {"addmm", "addmv", "addr", "baddbmm", "addbmm"}


def _torch_call(name, args, kwargs, **extra):
    return getattr(torch, name)(*args, **kwargs, **extra)


def _ours_call(name, args, kwargs, **extra):
    return getattr(pyaten, name)(*args, **kwargs, **extra)


def _case_id(case):
    name, shapes, kwargs = case
    return f"{name}-{'-'.join('x'.join(map(str, s)) or '0d' for s in shapes)}-{len(kwargs)}"


@pytest.mark.parametrize("dtype", BLAS_DTYPES)
@pytest.mark.parametrize("case", BLAS_CASES, ids=_case_id)
def test_blas_ops_match_torch(case, dtype):
    name, shapes, kwargs = case
    theirs, ours = _inputs(shapes, dtype)
    rtol = _HALF_RTOL.get(dtype)
    assert_same_outcome(lambda: _ours_call(name, ours, kwargs),
                        lambda: _torch_call(name, theirs, kwargs), rtol=rtol)
    if name in _HAS_METHOD:
        assert_same_outcome(lambda: getattr(ours[0], name)(*ours[1:], **kwargs),
                            lambda: getattr(theirs[0], name)(*theirs[1:], **kwargs), rtol=rtol)
    if name in _HAS_INPLACE:
        t_self, p_self = theirs[0].clone(), ours[0].clone()
        assert_same_outcome(lambda: getattr(p_self, name + "_")(*ours[1:], **kwargs),
                            lambda: getattr(t_self, name + "_")(*theirs[1:], **kwargs),
                            rtol=rtol)
        assert_same(p_self, t_self, rtol=rtol)


@pytest.mark.parametrize("case", BLAS_CASES, ids=_case_id)
def test_blas_ops_noncontiguous_out_and_meta(case):
    name, shapes, kwargs = case
    theirs, ours = _inputs(shapes, "float64", noncontiguous=True)
    cpu_ok = run_both(lambda: _ours_call(name, ours, kwargs),
                      lambda: _torch_call(name, theirs, kwargs))
    if cpu_ok is not None:
        assert_same(*cpu_ok)
    theirs, ours = _inputs(shapes, "float32")
    for out_dtype in ("float32", "float64", "int64"):
        p_out, t_out = outs((0,), out_dtype)
        pair = run_both(lambda p_out=p_out: _ours_call(name, ours, kwargs, out=p_out),
                        lambda t_out=t_out: _torch_call(name, theirs, kwargs, out=t_out))
        if pair is not None:  # the out dtype's tolerance would be tighter than the compute's
            assert pair[0] is p_out
            assert_same(p_out, t_out, rtol=1e-5, atol=1e-5)
    t_meta = [t.to("meta") for t in theirs]
    p_meta = [p.to("meta") for p in ours]
    if cpu_ok is None:
        return  # torch's Python meta functions check less than its CPU kernels
    assert_same(_ours_call(name, p_meta, kwargs), _torch_call(name, t_meta, kwargs))


def test_blas_mixed_dtype_errors():
    f, d = torch.ones(2, 3), torch.ones(3, dtype=torch.float64)
    i = torch.ones(3, dtype=torch.int32)
    pf, pd, pi = from_torch(f), from_torch(d), from_torch(i)
    cases = [
        (lambda m, f, d, i: m.addmm(m.ones(3, 3), f.t(), f.to(m.float64))),
        (lambda m, f, d, i: m.addmm(m.ones(3, 3, dtype=m.float64), f.t(), f)),
        (lambda m, f, d, i: m.addmv(m.ones(2), f, d)),
        (lambda m, f, d, i: m.mv(f, d)),
        (lambda m, f, d, i: m.dot(d, i)),
        (lambda m, f, d, i: m.vdot(d, i)),
        (lambda m, f, d, i: m.addr(f, m.ones(2), d)),
        (lambda m, f, d, i: m.addr(f.to(m.int32), m.ones(2, dtype=m.int32), i, beta=1.5)),
        (lambda m, f, d, i: m.addr(f.to(m.int32), m.ones(2, dtype=m.int32), i, alpha=0.5)),
        (lambda m, f, d, i: m.addr(f.to(m.bool), m.ones(2, dtype=m.bool), i.to(m.bool), beta=2)),
        (lambda m, f, d, i: f.to(m.int32).addr_(m.ones(2), d.to(m.float32))),
        (lambda m, f, d, i: m.addmm(m.ones(3), f.t(), f, beta=1j)),
        (lambda m, f, d, i: m.baddbmm(m.ones(3), f[None], f.t()[None].to(m.float64))),
        (lambda m, f, d, i: m.baddbmm(m.ones(3, dtype=m.float64), f[None], f.t()[None])),
        (lambda m, f, d, i: m.addbmm(m.ones(2), f[None], f.t()[None].to(m.float64))),
        (lambda m, f, d, i: m.dot(d, d, out=m.ones(0))),
        (lambda m, f, d, i: m.kron(f, f, out=m.ones(0, dtype=m.int32))),
        (lambda m, f, d, i: m.ops.aten.tensordot.default(f, f.to(m.float64), [1], [1])),
        (lambda m, f, d, i: m.ops.aten.tensordot.default(f, f, [1], [0, 1])),
        (lambda m, f, d, i: m.ops.aten.tensordot.default(f, f, [1, 1], [1, 1])),
        (lambda m, f, d, i: m.ops.aten.tensordot.default(f, f, [5], [1])),
    ]
    for fn in cases:
        assert_same_outcome(lambda fn=fn: fn(pyaten, pf, pd, pi), lambda fn=fn: fn(torch, f, d, i))


def test_addmm_beta_zero_ignores_nan_and_linear_fast_path():
    t_self = torch.full((4,), float("nan"))
    t1, t2 = torch.randn(2, 3), torch.randn(3, 4)
    p_self, p1, p2 = from_torch(t_self), from_torch(t1), from_torch(t2)
    assert_same(pyaten.addmm(p_self, p1, p2, beta=0), torch.addmm(t_self, t1, t2, beta=0))
    bias, w = torch.randn(4), torch.randn(4, 3)
    assert_same(pyaten.addmm(from_torch(bias), p1, from_torch(w).t()), torch.addmm(bias, t1, w.t()))


def test_chain_matmul_matches_torch():
    mats = [_torch_input(s, "float64", i) for i, s in enumerate([(2, 3), (3, 4), (4, 5), (5, 1)])]
    ours = [from_torch(m) for m in mats]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(pyaten.chain_matmul(*ours), torch.chain_matmul(*mats))
        assert_same(pyaten.chain_matmul(ours[0]), torch.chain_matmul(mats[0]))
        assert_same_outcome(lambda: pyaten.chain_matmul(), lambda: torch.chain_matmul())
        assert_same_outcome(lambda: pyaten.chain_matmul(ours[0], from_torch(torch.ones(3))),
                            lambda: torch.chain_matmul(mats[0], torch.ones(3)))


@pytest.mark.parametrize("dims", [0, 1, 2, ([1], [0]), [[0, 1], [1, 0]]])
def test_tensordot_dims_forms(dims):
    a, b = torch.randn(3, 3, 2), torch.randn(3, 3, 2)
    if isinstance(dims, int) and dims:
        b = torch.randn(*a.shape[-dims:], 4)
    assert_same_outcome(lambda: pyaten.tensordot(from_torch(a), from_torch(b), dims=dims),
                        lambda: torch.tensordot(a, b, dims=dims))
