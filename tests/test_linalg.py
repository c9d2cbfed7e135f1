"""`pyaten.linalg` (and the torch-namespace det, slogdet, logdet, inverse, svd, qr, cholesky,
matrix_power, matrix_exp, pinverse, einsum, cross, cdist) against torch: values, dtypes,
shapes, strides of the factor outputs, batches, empty and non-contiguous inputs, out=, Meta,
and the errors (singular and non-square inputs, wrong dtypes) by type and message.

Factorizations whose factors are unique only up to signs or phases (svd, eigh, eig) are
compared through what is unique: values, and the reconstruction of the input.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from _helpers import assert_same, assert_same_outcome, from_torch, run_both
from hypothesis import given, settings
from hypothesis import strategies as st

import pyaten

FLOATING = ["float32", "float64", "complex64", "complex128"]
_RTOL = {"float32": 1e-3, "complex64": 1e-3, "float64": 1e-8, "complex128": 1e-8}


def _matrix(shape, dtype: str, seed: int = 0, kind: str = "general") -> torch.Tensor:
    """A well-conditioned matrix batch: general (diagonally shifted), spd (A A^H + n I),
    hermitian, or raw random values."""
    g = torch.Generator().manual_seed(seed)
    tdtype = getattr(torch, dtype)
    base = torch.randn(shape, generator=g, dtype=torch.complex128 if tdtype.is_complex
                       else torch.float64)
    if kind != "raw" and len(shape) >= 2 and shape[-1] == shape[-2] and shape[-1]:
        n = shape[-1]
        if kind == "spd":
            base = base @ base.mH + n * torch.eye(n, dtype=base.dtype)
        elif kind == "hermitian":
            base = base + base.mH
        else:
            base = base + n * torch.eye(n, dtype=base.dtype)
    return base.to(tdtype)


def _pair(t: torch.Tensor):
    return t, from_torch(t)


def _call(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# ---- operators compared value by value -----------------------------------------------------------

# (label, function of (module, *inputs), input shapes, input kind)
DIRECT_CASES = [
    ("inv", lambda m, a: m.linalg.inv(a), [(3, 3)], "general"),
    ("inv-batched", lambda m, a: m.linalg.inv(a), [(2, 3, 3)], "general"),
    ("inv-empty", lambda m, a: m.linalg.inv(a), [(0, 3, 3)], "general"),
    ("inv-0x0", lambda m, a: m.linalg.inv(a), [(0, 0)], "general"),
    ("inv_ex", lambda m, a: m.linalg.inv_ex(a), [(2, 4, 4)], "general"),
    ("inverse", lambda m, a: m.inverse(a), [(3, 3)], "general"),
    ("inverse-method", lambda m, a: a.inverse(), [(3, 3)], "general"),
    ("det", lambda m, a: m.linalg.det(a), [(3, 3)], "raw"),
    ("det-batched", lambda m, a: m.linalg.det(a), [(2, 2, 4, 4)], "raw"),
    ("det-torch", lambda m, a: m.det(a), [(3, 3)], "raw"),
    ("det-method", lambda m, a: a.det(), [(2, 3, 3)], "raw"),
    ("_linalg_det", lambda m, a: m.ops.aten._linalg_det(a), [(2, 3, 3)], "raw"),
    ("slogdet", lambda m, a: m.linalg.slogdet(a), [(2, 3, 3)], "raw"),
    ("slogdet-torch", lambda m, a: m.slogdet(a), [(3, 3)], "raw"),
    ("_linalg_slogdet", lambda m, a: m.ops.aten._linalg_slogdet(a), [(2, 3, 3)], "raw"),
    ("logdet", lambda m, a: m.logdet(a), [(3, 3)], "spd"),
    ("solve", lambda m, a, b: m.linalg.solve(a, b), [(3, 3), (3, 2)], "general"),
    ("solve-vector", lambda m, a, b: m.linalg.solve(a, b), [(3, 3), (3,)], "general"),
    ("solve-batched-vector", lambda m, a, b: m.linalg.solve(a, b), [(2, 3, 3), (3,)], "general"),
    ("solve-broadcast", lambda m, a, b: m.linalg.solve(a, b), [(2, 1, 3, 3), (4, 3, 2)],
     "general"),
    ("solve-left", lambda m, a, b: m.linalg.solve(a, b, left=False), [(3, 3), (2, 3)],
     "general"),
    ("solve_ex", lambda m, a, b: m.linalg.solve_ex(a, b), [(3, 3), (3, 2)], "general"),
    ("_linalg_solve_ex", lambda m, a, b: m.ops.aten._linalg_solve_ex(a, b), [(3, 3), (3, 2)],
     "general"),
    ("cholesky", lambda m, a: m.linalg.cholesky(a), [(2, 3, 3)], "spd"),
    ("cholesky-upper", lambda m, a: m.linalg.cholesky(a, upper=True), [(3, 3)], "spd"),
    ("cholesky_ex", lambda m, a: m.linalg.cholesky_ex(a), [(3, 3)], "spd"),
    ("cholesky-torch", lambda m, a: m.cholesky(a), [(3, 3)], "spd"),
    ("qr", lambda m, a: m.linalg.qr(a), [(4, 3)], "raw"),
    ("qr-wide", lambda m, a: m.linalg.qr(a), [(2, 3, 4)], "raw"),
    ("qr-complete", lambda m, a: m.linalg.qr(a, mode="complete"), [(4, 3)], "raw"),
    ("qr-r", lambda m, a: m.linalg.qr(a, mode="r"), [(4, 3)], "raw"),
    ("qr-torch", lambda m, a: m.qr(a), [(4, 3)], "raw"),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), [(2, 4, 3)], "raw"),
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), [(2, 3, 3)], "hermitian"),
    ("eigvalsh-U", lambda m, a: m.linalg.eigvalsh(a, UPLO="U"), [(3, 3)], "raw"),
    ("matrix_power", lambda m, a: m.linalg.matrix_power(a, 5), [(2, 3, 3)], "raw"),
    ("matrix_power-0", lambda m, a: m.linalg.matrix_power(a, 0), [(3, 3)], "raw"),
    ("matrix_power-neg", lambda m, a: m.linalg.matrix_power(a, -2), [(3, 3)], "general"),
    ("matrix_power-torch", lambda m, a: m.matrix_power(a, 3), [(3, 3)], "raw"),
    ("matrix_exp", lambda m, a: m.linalg.matrix_exp(a), [(2, 3, 3)], "raw"),
    ("matrix_exp-torch", lambda m, a: m.matrix_exp(a), [(3, 3)], "raw"),
    ("pinv", lambda m, a: m.linalg.pinv(a), [(4, 3)], "raw"),
    ("pinv-hermitian", lambda m, a: m.linalg.pinv(a, hermitian=True), [(3, 3)], "spd"),
    ("pinv-rtol", lambda m, a: m.linalg.pinv(a, rtol=0.5), [(4, 3)], "raw"),
    ("pinverse", lambda m, a: m.pinverse(a), [(3, 4)], "raw"),
    ("matrix_rank", lambda m, a: m.linalg.matrix_rank(a), [(2, 4, 3)], "raw"),
    ("matrix_rank-tol", lambda m, a: m.linalg.matrix_rank(a, atol=1.0, rtol=0.0), [(4, 3)],
     "raw"),
    ("lu_factor", lambda m, a: m.linalg.lu_factor(a), [(2, 4, 3)], "raw"),
    ("lu_factor_ex", lambda m, a: m.linalg.lu_factor_ex(a), [(3, 3)], "raw"),
    ("lu", lambda m, a: m.linalg.lu(a), [(2, 4, 3)], "raw"),
    ("lu-wide", lambda m, a: m.linalg.lu(a), [(3, 4)], "raw"),
    ("lu_solve", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b), [(3, 3), (3, 2)],
     "general"),
    ("lu_solve-left", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=False),
     [(3, 3), (2, 3)], "general"),
    ("lu_solve-adjoint", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b,
                                                           adjoint=True), [(3, 3), (3, 2)],
     "general"),
    ("lu_solve-left-adjoint", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b,
                                                                left=False, adjoint=True),
     [(3, 3), (2, 3)], "general"),
    ("householder_product", lambda m, a, t: m.linalg.householder_product(a, t), [(4, 3), (2,)],
     "raw"),
    ("tensorinv", lambda m, a: m.linalg.tensorinv(a, ind=2), [(4, 6, 8, 3)], "raw"),
    ("tensorsolve", lambda m, a, b: m.linalg.tensorsolve(a, b), [(2, 3, 6), (2, 3)], "raw"),
    ("multi_dot", lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), [(2, 3), (3, 4), (4,)],
     "raw"),
    ("vecdot", lambda m, a, b: m.linalg.vecdot(a, b), [(2, 3), (3,)], "raw"),
    ("cross", lambda m, a, b: m.linalg.cross(a, b), [(2, 3), (1, 3)], "raw"),
    ("vector_norm", lambda m, a: m.linalg.vector_norm(a), [(2, 3)], "raw"),
    ("vector_norm-ord", lambda m, a: m.linalg.vector_norm(a, ord=3.5, dim=(0, 2),
                                                          keepdim=True), [(2, 3, 4)], "raw"),
    ("vector_norm-inf", lambda m, a: m.linalg.vector_norm(a, ord=float("inf"), dim=1),
     [(2, 3)], "raw"),
    ("vector_norm-0", lambda m, a: m.linalg.vector_norm(a, ord=0), [(2, 3)], "raw"),
    ("vector_norm-dtype", lambda m, a: m.linalg.vector_norm(a, dtype=m.complex128), [(2, 3)],
     "raw"),
    ("matrix_norm-fro", lambda m, a: m.linalg.matrix_norm(a), [(2, 3, 4)], "raw"),
    ("matrix_norm-nuc", lambda m, a: m.linalg.matrix_norm(a, ord="nuc"), [(2, 3, 4)], "raw"),
    ("matrix_norm-2", lambda m, a: m.linalg.matrix_norm(a, ord=2, keepdim=True), [(2, 3, 4)],
     "raw"),
    ("matrix_norm--2", lambda m, a: m.linalg.matrix_norm(a, ord=-2), [(3, 4)], "raw"),
    ("matrix_norm-1", lambda m, a: m.linalg.matrix_norm(a, ord=1, dim=(0, 2)), [(2, 3, 4)],
     "raw"),
    ("matrix_norm-inf", lambda m, a: m.linalg.matrix_norm(a, ord=float("inf")), [(3, 4)],
     "raw"),
    ("matrix_norm--inf", lambda m, a: m.linalg.matrix_norm(a, ord=-float("inf"),
                                                           keepdim=True), [(2, 3, 4)], "raw"),
    ("norm", lambda m, a: m.linalg.norm(a), [(2, 3, 4)], "raw"),
    ("norm-ord", lambda m, a: m.linalg.norm(a, ord=2), [(3, 4)], "raw"),
    ("norm-dim", lambda m, a: m.linalg.norm(a, ord=1, dim=1), [(3, 4)], "raw"),
    ("norm-fro", lambda m, a: m.linalg.norm(a, ord="fro"), [(3, 4)], "raw"),
    ("norm-nuc-dims", lambda m, a: m.linalg.norm(a, ord="nuc", dim=(0, 2)), [(3, 2, 4)], "raw"),
    ("torch.norm-fro", lambda m, a: m.norm(a, p="fro"), [(3, 4)], "raw"),
    ("torch.norm-nuc", lambda m, a: m.norm(a, p="nuc"), [(3, 4)], "raw"),
    ("torch.norm-p", lambda m, a: m.norm(a, p=3, dim=1, keepdim=True), [(3, 4)], "raw"),
    ("Tensor.norm", lambda m, a: a.norm(dim=0), [(3, 4)], "raw"),
    ("lstsq", lambda m, a, b: m.linalg.lstsq(a, b), [(4, 3), (4, 2)], "raw"),
    ("lstsq-gelsd", lambda m, a, b: m.linalg.lstsq(a, b, driver="gelsd"), [(4, 3), (4, 2)],
     "raw"),
    ("lstsq-gelss", lambda m, a, b: m.linalg.lstsq(a, b, driver="gelss"), [(2, 4, 3), (4, 2)],
     "raw"),
    ("lstsq-gels", lambda m, a, b: m.linalg.lstsq(a, b, driver="gels"), [(4, 3), (4, 2)],
     "raw"),
]


def _inputs(shapes, dtype, kind, transpose=False):
    theirs = []
    for i, shape in enumerate(shapes):
        t = _matrix(shape, dtype, seed=i, kind=kind if i == 0 else "raw")
        if transpose and t.dim() >= 2:  # the same values, column-major (non-contiguous)
            t = t.mT.contiguous().mT
        theirs.append(t)
    return theirs, [from_torch(t) for t in theirs]


def _needs_real(label: str) -> bool:
    return label.startswith(("matrix_norm", "norm", "torch.norm", "Tensor.norm", "vector_norm",
                             "cross", "lstsq-gels"))


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("case", DIRECT_CASES, ids=[c[0] for c in DIRECT_CASES])
def test_linalg_values_match_torch(case, dtype):
    label, fn, shapes, kind = case
    theirs, ours = _inputs(shapes, dtype, kind)
    if label == "vector_norm-dtype" and not dtype.startswith("complex"):
        return  # a real input asks for a real dtype: covered by the error table
    rtol = _RTOL[dtype]
    pair = run_both(lambda: _call(fn, pyaten, *ours), lambda: _call(fn, torch, *theirs))
    if pair is not None:
        assert_same(*pair, rtol=rtol, atol=rtol)
    theirs, ours = _inputs(shapes, dtype, kind, transpose=True)
    assert_same_outcome(lambda: _call(fn, pyaten, *ours), lambda: _call(fn, torch, *theirs),
                        rtol=rtol, atol=rtol)


@pytest.mark.parametrize("case", DIRECT_CASES, ids=[c[0] for c in DIRECT_CASES])
def test_linalg_meta_matches_torch(case):
    label, fn, shapes, kind = case
    if label.startswith(("lstsq", "lu_solve", "tensorsolve", "pinv", "matrix_rank")):
        return  # data-dependent in PyTorch's meta too, or compose ops needing values
    theirs = [torch.empty(s, device="meta") for s in shapes]
    ours = [pyaten.empty(s, device="meta") for s in shapes]
    pair = run_both(lambda: _call(fn, pyaten, *ours), lambda: _call(fn, torch, *theirs),
                    message=False)
    if pair is not None:
        assert_same(*pair)


# ---- strides of the factor outputs (PyTorch's batched column-major layout) -----------------------

STRIDE_CASES = [
    lambda m, a: m.linalg.inv_ex(a),
    lambda m, a: m.ops.aten._linalg_det(a),
    lambda m, a: m.ops.aten._linalg_slogdet(a),
    lambda m, a: m.linalg.cholesky_ex(a),
    lambda m, a: m.linalg.qr(a),
    lambda m, a: m.linalg.lu_factor_ex(a),
    lambda m, a: m.ops.aten._linalg_solve_ex(a, a),
]


@pytest.mark.parametrize("index", range(len(STRIDE_CASES)))
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_factor_outputs_are_column_major(index, device):
    fn = STRIDE_CASES[index]
    cpu = _matrix((2, 3, 3), "float64", kind="spd")
    t, p = cpu.to(device), from_torch(cpu).to(device)
    assert_same(_call(fn, pyaten, p), _call(fn, torch, t), strides=True)


# ---- factorizations compared through what is unique ----------------------------------------------


def _assert_close_np(ours, theirs, rtol):
    assert_same(ours, theirs, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3), (0, 3), (2, 0, 2)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_reconstructs_and_matches_singular_values(dtype, shape, full_matrices):
    t, p = _pair(_matrix(shape, dtype, kind="raw"))
    U, S, Vh = pyaten.linalg.svd(p, full_matrices=full_matrices)  # noqa: N806
    tU, tS, tVh = torch.linalg.svd(t, full_matrices=full_matrices)  # noqa: N806
    rtol = _RTOL[dtype]
    for ours, theirs in ((U, tU), (S, tS), (Vh, tVh)):
        assert ours.shape == theirs.shape and ours.dtype.name == str(theirs.dtype)[6:]
        assert ours.stride() == theirs.stride()
    _assert_close_np(S, tS, rtol)
    k = min(shape[-2:])
    back = (U[..., :, :k] * S[..., None, :].to(U.dtype)) @ Vh[..., :k, :]
    _assert_close_np(back, t, rtol)
    legacy = pyaten.svd(p)
    expected = torch.svd(t)
    for ours, theirs in zip(legacy, expected):
        assert ours.shape == theirs.shape


@pytest.mark.parametrize("dtype", FLOATING)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (0, 2, 2)])
def test_eigh_and_eig_match_values_and_reconstruct(dtype, shape):
    t, p = _pair(_matrix(shape, dtype, kind="hermitian"))
    rtol = _RTOL[dtype]
    w, v = pyaten.linalg.eigh(p)
    tw, tv = torch.linalg.eigh(t)
    _assert_close_np(w, tw, rtol)
    assert v.shape == tv.shape and v.stride() == tv.stride()
    back = (v * w[..., None, :].to(v.dtype)) @ v.mT.conj()  # (pyaten.Tensor.mH: no conj yet)
    _assert_close_np(back, t, rtol * 10)
    raw_t, raw_p = _pair(_matrix(shape, dtype, kind="raw"))
    values, vectors = pyaten.linalg.eig(raw_p)
    t_values, t_vectors = torch.linalg.eig(raw_t)
    assert values.dtype.name == str(t_values.dtype)[6:] and vectors.shape == t_vectors.shape
    order_t = torch.argsort(t_values.real * 1000 + t_values.imag)
    sorted_ours = pyaten.from_numpy(values.numpy()[..., order_t.numpy()]) if values.dim() == 1 \
        else None
    if sorted_ours is not None:
        _assert_close_np(sorted_ours, t_values[order_t], rtol * 10)
    back = raw_p.to(vectors.dtype) @ vectors
    _assert_close_np(back, torch.from_numpy((vectors * values[..., None, :]).numpy()), rtol * 10)
    _assert_close_np(pyaten.linalg.eigvals(raw_p).abs().sum(-1),
                     torch.linalg.eigvals(raw_t).abs().sum(-1), rtol * 10)


# ---- errors: singular and non-square inputs, dtypes, bad arguments -------------------------------


def _eye(m, n):
    return m.tensor([[float(i == j) for j in range(n)] for i in range(n)])


def _singular(batched: bool, m):
    one = m.tensor([[1.0, 2.0], [2.0, 4.0]])
    return m.stack([_eye(m, 2), one]) if batched else one


ERROR_CASES = [
    lambda m: m.linalg.inv(_singular(False, m)),
    lambda m: m.linalg.inv(_singular(True, m)),
    lambda m: m.linalg.inv(m.zeros(3, 3)),
    lambda m: m.linalg.inv_ex(_singular(False, m), check_errors=True),
    lambda m: m.inverse(_singular(False, m)),
    lambda m: m.linalg.inv(m.ones(2, 3)),
    lambda m: m.linalg.inv(m.ones(3)),
    lambda m: m.linalg.inv(m.ones(3, 3, dtype=m.int32)),
    lambda m: m.linalg.inv(m.ones(3, 3, dtype=m.float16)),
    lambda m: m.linalg.inv(m.ones(3, 3, dtype=m.bfloat16)),
    lambda m: m.linalg.det(m.ones(2, 3)),
    lambda m: m.linalg.det(m.ones(3, 3, dtype=m.int64)),
    lambda m: m.linalg.det(m.ones(3, 3, dtype=m.float16)),
    lambda m: m.linalg.slogdet(m.ones(3, 3, dtype=m.int64)),
    lambda m: m.linalg.solve(_singular(False, m), m.ones(2)),
    lambda m: m.linalg.solve(_singular(True, m), m.ones(2)),
    lambda m: m.linalg.solve(_eye(m, 3), m.ones(2, 3)),
    lambda m: m.linalg.solve(_eye(m, 3), m.ones(4)),
    lambda m: m.linalg.solve(_eye(m, 3), m.ones(3, 2), left=False),
    lambda m: m.linalg.solve(_eye(m, 3), m.ones(3, dtype=m.float64)),
    lambda m: m.linalg.solve(m.ones(2, 3), m.ones(2)),
    lambda m: m.linalg.solve_ex(_singular(False, m), m.ones(2), check_errors=True),
    lambda m: m.linalg.cholesky(-_eye(m, 3)),
    lambda m: m.linalg.cholesky(m.stack([_eye(m, 3), -_eye(m, 3)])),
    lambda m: m.linalg.cholesky_ex(-_eye(m, 3), check_errors=True),
    lambda m: m.linalg.cholesky(m.ones(3, 3, dtype=m.int32)),
    lambda m: m.linalg.qr(m.ones(4, 3), mode="bad"),
    lambda m: m.linalg.qr(m.ones(3)),
    lambda m: m.linalg.qr(m.ones(3, 3, dtype=m.int32)),
    lambda m: m.linalg.svd(m.ones(3)),
    lambda m: m.linalg.svd(m.ones(3, 3, dtype=m.int32)),
    lambda m: m.linalg.svd(m.ones(3, 3), driver="gesvd"),
    lambda m: m.linalg.eigh(m.ones(3, 4)),
    lambda m: m.linalg.eigh(_eye(m, 3), UPLO="X"),
    lambda m: m.linalg.eigh(m.ones(3, 3, dtype=m.int32)),
    lambda m: m.linalg.eig(m.ones(3, 4)),
    lambda m: m.linalg.eig(m.ones(3, 3, dtype=m.int32)),
    lambda m: m.linalg.lu_factor(m.zeros(3, 3)),
    lambda m: m.linalg.lu_factor(_eye(m, 3), pivot=False),
    lambda m: m.linalg.lu(m.ones(3, 3, dtype=m.int32)),
    lambda m: m.linalg.lu_solve(*m.linalg.lu_factor(_eye(m, 3)), m.ones(4, 2)),
    lambda m: m.linalg.householder_product(m.ones(4, 3), m.ones(4)),
    lambda m: m.linalg.householder_product(m.ones(3, 4), m.ones(2)),
    lambda m: m.linalg.tensorinv(m.ones(4, 6, 8, 3), ind=1),
    lambda m: m.linalg.tensorsolve(m.ones(2, 3, 6), m.ones(2, 3), dims=(0,)),
    lambda m: m.linalg.matrix_power(m.ones(3, 4), 2),
    lambda m: m.linalg.matrix_power(m.ones(3), 2),
    lambda m: m.linalg.matrix_power(m.ones(3, 3, dtype=m.int32), -1),
    lambda m: m.linalg.matrix_exp(m.ones(3, 4)),
    lambda m: m.linalg.matrix_exp(m.ones(3, 3, dtype=m.int32)),
    lambda m: m.linalg.pinv(m.ones(4, 3, dtype=m.int32)),
    lambda m: m.linalg.pinv(m.ones(3)),
    lambda m: m.linalg.lstsq(m.ones(4, 3), m.ones(3, 2)),
    lambda m: m.linalg.lstsq(m.ones(4, 3), m.ones(4, 2), driver="bad"),
    lambda m: m.linalg.multi_dot([m.ones(2, 3)]),
    lambda m: m.linalg.multi_dot([m.ones(3), m.ones(3, 2, 1), m.ones(2)]),
    lambda m: m.linalg.multi_dot([m.ones(3), m.ones(4, 2), m.ones(2)]),
    lambda m: m.linalg.multi_dot([m.ones(3), m.ones(3, 2, dtype=m.float64), m.ones(2)]),
    lambda m: m.linalg.vecdot(m.ones(2, 3), m.ones(3, dtype=m.float64)),
    lambda m: m.linalg.cross(m.ones(2, 3), m.ones(2, 4)),
    lambda m: m.linalg.cross(m.ones(2, 3), m.ones(3, 3)),
    lambda m: m.linalg.cross(m.ones(2, 3), m.ones(2, 3, 1)),
    lambda m: m.linalg.cross(m.ones(2, 3, dtype=m.int32), m.ones(2, 3)),
    lambda m: m.linalg.cross(m.ones(2, 3, dtype=m.bool), m.ones(2, 3, dtype=m.bool)),
    lambda m: m.cross(m.ones(2, 4), m.ones(2, 4)),
    lambda m: m.linalg.vector_norm(m.ones(3, dtype=m.int32)),
    lambda m: m.linalg.vector_norm(m.ones(3), dtype=m.int64),
    lambda m: m.linalg.vector_norm(m.ones(3, dtype=m.float64), dtype=m.float32),
    lambda m: m.linalg.vector_norm(m.ones(3, dtype=m.complex64), dtype=m.float32),
    lambda m: m.linalg.vector_norm(m.ones(2, 3), ord=1, dim=(0, 0)),
    lambda m: m.linalg.vector_norm(m.ones(0, 3), ord=float("inf")),
    lambda m: m.linalg.vector_norm(m.ones(2, 3), dim=3),
    lambda m: m.linalg.matrix_norm(m.ones(2, 3), ord=3),
    lambda m: m.linalg.matrix_norm(m.ones(2, 3), ord="bad"),
    lambda m: m.linalg.matrix_norm(m.ones(3)),
    lambda m: m.linalg.matrix_norm(m.ones(3, 3, dtype=m.int32)),
    lambda m: m.linalg.matrix_norm(m.ones(2, 3), dim=(0, 0)),
    lambda m: m.linalg.matrix_norm(m.ones(2, 3), dim=(0,)),
    lambda m: m.linalg.norm(m.ones(2, 3, 4), ord=2),
    lambda m: m.linalg.norm(m.ones(2, 3, 4), ord="fro"),
    lambda m: m.linalg.norm(m.ones(2, 3), ord=2, dim=(0, 1, 1)),
    lambda m: m.linalg.norm(m.ones(2, 3, dtype=m.int32)),
    lambda m: m.norm(m.ones(2, 3, 4), p="fro", dim=(0, 1, 2)),
    lambda m: m.norm(m.ones(2, 3, dtype=m.int32)),
    lambda m: m.cdist(m.ones(3), m.ones(4, 2)),
    lambda m: m.cdist(m.ones(3, 2), m.ones(4, 3)),
    lambda m: m.cdist(m.ones(3, 2), m.ones(4, 2), p=-1),
    lambda m: m.cdist(m.ones(3, 2, dtype=m.int32), m.ones(4, 2, dtype=m.int32)),
    lambda m: m.cdist(m.ones(3, 2), m.ones(4, 2, dtype=m.float64)),
    lambda m: m.cdist(m.ones(2, 3, 2), m.ones(5, 4, 2)),
    lambda m: m.cdist(m.ones(3, 2), m.ones(4, 2), compute_mode="bad"),
]


@pytest.mark.parametrize("index", range(len(ERROR_CASES)))
def test_linalg_errors_match_torch(index):
    fn = ERROR_CASES[index]
    assert_same_outcome(lambda: _call(fn, pyaten), lambda: _call(fn, torch))


# ---- out= ----------------------------------------------------------------------------------------

OUT_CASES = [
    (lambda m, a, **o: m.linalg.inv(a, **o), "out"),
    (lambda m, a, **o: m.linalg.det(a, **o), "out"),
    (lambda m, a, **o: m.linalg.solve(a, a, **o), "out"),
    (lambda m, a, **o: m.linalg.cholesky(a, **o), "out"),
    (lambda m, a, **o: m.linalg.vector_norm(a, **o), "out"),
    (lambda m, a, **o: m.linalg.matrix_norm(a, **o), "out"),
    (lambda m, a, **o: m.linalg.svdvals(a, **o), "out"),
    (lambda m, a, **o: m.linalg.eigvalsh(a, **o), "out"),
    (lambda m, a, **o: m.linalg.matrix_power(a, 3, **o), "out"),
    (lambda m, a, **o: m.linalg.matrix_exp(a, **o), "out"),
    (lambda m, a, **o: m.linalg.pinv(a, **o), "out"),
    (lambda m, a, **o: m.linalg.multi_dot([a, a, a], **o), "out"),
    (lambda m, a, **o: m.linalg.vecdot(a, a, **o), "out"),
    (lambda m, a, **o: m.linalg.cross(a[..., :3], a[..., :3], **o), "out"),
    (lambda m, a, **o: m.inverse(a, **o), "out"),
]


@pytest.mark.parametrize("index", range(len(OUT_CASES)))
@pytest.mark.parametrize("out_dtype", ["float64", "float32"])
def test_linalg_out_variants(index, out_dtype):
    fn, _ = OUT_CASES[index]
    t, p = _pair(_matrix((3, 3), "float64", kind="spd"))
    t_out = torch.empty(0, dtype=getattr(torch, out_dtype))
    p_out = pyaten.empty(0, dtype=getattr(pyaten, out_dtype))
    pair = run_both(lambda: _call(fn, pyaten, p, out=p_out), lambda: _call(fn, torch, t,
                                                                          out=t_out))
    if pair is not None:
        assert pair[0] is p_out
        assert_same(p_out, t_out, rtol=1e-8)


def test_multi_output_out_variants():
    t, p = _pair(_matrix((2, 3, 3), "float64", kind="spd"))
    tq, tr = torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.float64)
    pq, pr = pyaten.empty(0, dtype=pyaten.float64), pyaten.empty(0, dtype=pyaten.float64)
    got = pyaten.linalg.qr(p, out=(pq, pr))
    torch.linalg.qr(t, out=(tq, tr))
    assert got[0] is pq and got[1] is pr
    assert_same((pq, pr), (tq, tr), strides=True)
    ts, tl = torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.float64)
    ps, pl = pyaten.empty(0, dtype=pyaten.float64), pyaten.empty(0, dtype=pyaten.float64)
    assert_same(pyaten.linalg.slogdet(p, out=(ps, pl)), torch.linalg.slogdet(t, out=(ts, tl)))
    result = pyaten.linalg.inv_ex(p)
    assert type(result).__name__ == "linalg_inv_ex" and result.inverse is result[0]
    assert pyaten.linalg.slogdet(p).logabsdet is not None


# ---- einsum --------------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("i,j->ij", [(2,), (3,)]),
    ("i,i->", [(3,), (3,)]),
    ("...ij,...jk->...ik", [(5, 1, 2, 3), (4, 3, 2)]),
    ("...j,j...", [(2, 3), (3, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("iij->j", [(3, 3, 2)]),
    ("ab,ab->a", [(2, 1), (2, 4)]),
    ("ij,kj->ik", [(0, 3), (2, 3)]),
    ("Ba,aB", [(2, 3), (3, 2)]),
    ("i j", [(2, 3)]),
    ("", [()]),
    ("ij,jk", [(2, 3), (4, 5)]),
    ("...ij,jk", [(2, 3), (4, 5)]),
    ("i1", [(2, 3)]),
    ("ij,jk", [(2, 3)]),
    ("ij", [(2, 3), (2,)]),
    ("ijk", [(2, 3)]),
    ("...ijk", [(2, 3)]),
    ("ii", [(2, 3)]),
    ("ij->kk", [(2, 3)]),
    ("ij->ii", [(2, 3)]),
    ("i..j..", [(2, 3)]),
    ("i...j...", [(2, 3)]),
    ("...i,...i->...", [(2, 3), (4, 3)]),
]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "complex64"])
@pytest.mark.parametrize("case", EINSUM_CASES, ids=[c[0] or "empty" for c in EINSUM_CASES])
def test_einsum_matches_torch(case, dtype):
    equation, shapes = case
    theirs = [_matrix(s, "float64", seed=i, kind="raw").mul(3).to(getattr(torch, dtype))
              for i, s in enumerate(shapes)]
    ours = [from_torch(t) for t in theirs]
    assert_same_outcome(lambda: pyaten.einsum(equation, *ours),
                        lambda: torch.einsum(equation, *theirs), rtol=_RTOL.get(dtype))
    if len(ours) > 1:  # the list form
        assert_same_outcome(lambda: pyaten.einsum(equation, ours),
                            lambda: torch.einsum(equation, theirs), rtol=_RTOL.get(dtype))


def test_einsum_views_sublists_and_meta():
    t, p = _pair(_matrix((3, 3), "float64", kind="raw"))
    diagonal = pyaten.einsum("ii->i", p)
    assert diagonal._base is p and diagonal.stride() == torch.einsum("ii->i", t).stride()
    assert_same(pyaten.einsum(p, [0, 1], p, [1, 2], [0, 2]), torch.einsum(t, [0, 1], t, [1, 2],
                                                                          [0, 2]))
    meta = [pyaten.empty(s, device="meta") for s in [(2, 3, 4), (2, 4, 5)]]
    theirs = [torch.empty(s, device="meta") for s in [(2, 3, 4), (2, 4, 5)]]
    assert_same(pyaten.einsum("bij,bjk->bik", *meta), torch.einsum("bij,bjk->bik", *theirs))
    assert_same_outcome(lambda: pyaten.einsum("ij"), lambda: torch.einsum("ij"))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from("abcd"), min_size=1, max_size=3),
       st.lists(st.sampled_from("abcd"), min_size=1, max_size=3), st.booleans())
def test_einsum_property(left, right, explicit):
    sizes = {"a": 2, "b": 3, "c": 1, "d": 4}
    a_shape = [sizes[x] for x in left]
    b_shape = [sizes[x] for x in right]
    out = sorted(set(left) ^ set(right))
    equation = "".join(left) + "," + "".join(right) + ("->" + "".join(out) if explicit else "")
    ta, pa = _pair(_matrix(a_shape, "float64", seed=1, kind="raw"))
    tb, pb = _pair(_matrix(b_shape, "float64", seed=2, kind="raw"))
    assert_same_outcome(lambda: pyaten.einsum(equation, pa, pb),
                        lambda: torch.einsum(equation, ta, tb))


# ---- cdist, cross --------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, float("inf")])
@pytest.mark.parametrize("shapes", [((3, 2), (4, 2)), ((30, 3), (4, 3)), ((2, 3, 2), (1, 4, 2)),
                                    ((0, 2), (4, 2)), ((3, 0), (4, 0))])
@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                                  "donot_use_mm_for_euclid_dist"])
def test_cdist_matches_torch(p, shapes, mode):
    t1, p1 = _pair(_matrix(shapes[0], "float64", seed=1, kind="raw"))
    t2, p2 = _pair(_matrix(shapes[1], "float64", seed=2, kind="raw"))
    assert_same_outcome(lambda: pyaten.cdist(p1, p2, p=p, compute_mode=mode),
                        lambda: torch.cdist(t1, t2, p=p, compute_mode=mode), rtol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64", "float16"])
def test_cross_matches_torch(dtype):
    ta = _matrix((4, 3), "float64", seed=1, kind="raw").mul(3).to(getattr(torch, dtype))
    tb = _matrix((4, 3), "float64", seed=2, kind="raw").mul(3).to(getattr(torch, dtype))
    pa, pb = from_torch(ta), from_torch(tb)
    rtol = 1e-2 if dtype == "float16" else None
    assert_same(pyaten.linalg.cross(pa, pb), torch.linalg.cross(ta, tb), rtol=rtol)
    assert_same(_call(pyaten.cross, pa, pb), _call(torch.cross, ta, tb), rtol=rtol)
    assert_same(pa.cross(pb, dim=1), ta.cross(tb, dim=1), rtol=rtol)
    assert_same(pyaten.linalg.cross(pa.t(), pb.t(), dim=0), torch.linalg.cross(ta.t(), tb.t(),
                                                                               dim=0), rtol=rtol)


# ---- PyTorch's OpInfo samples --------------------------------------------------------------------

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

# OpInfo names of this slice whose results are unique (no sign or phase freedom)
OPINFO_SURFACE = frozenset("""
addmm addmv addr baddbmm addbmm mv dot vdot outer ger inner kron tensordot einsum cross cdist
chain_matmul inverse det logdet matrix_exp pinverse
linalg.inv linalg.inv_ex linalg.det linalg.slogdet linalg.solve linalg.solve_ex linalg.cholesky
linalg.cholesky_ex linalg.qr linalg.svdvals linalg.eigvalsh linalg.vector_norm
linalg.matrix_norm linalg.norm linalg.matrix_power linalg.matrix_exp linalg.multi_dot
linalg.vecdot linalg.cross linalg.lu_factor linalg.lu_factor_ex linalg.lu linalg.lu_solve
linalg.householder_product linalg.tensorinv linalg.tensorsolve linalg.pinv linalg.matrix_rank
linalg.diagonal
""".split())


def _resolve(name: str, module):
    target = module
    for part in name.split("."):
        target = getattr(target, part)
    return target


def _opinfo_cases():
    cases = []
    for info in op_db:
        if info.name in OPINFO_SURFACE and info.op is _resolve(info.name, torch):
            label = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
            cases.append(pytest.param(info, id=label))
    return cases


@pytest.mark.parametrize("info", _opinfo_cases())
def test_opinfo_samples_match_torch(info):
    from _helpers import opinfo_samples, sample_arguments

    ours_fn = _resolve(info.name, pyaten)
    for dtype in (torch.float64, torch.complex128):
        if dtype not in info.supported_dtypes("cpu"):
            continue
        for sample in opinfo_samples(info, dtype)[:12]:
            theirs, ours, kwargs = sample_arguments(sample)
            assert_same_outcome(lambda ours=ours, kwargs=kwargs: _call(ours_fn, *ours, **kwargs),
                                lambda theirs=theirs, s=sample: _call(info.op, *theirs, **s.kwargs),
                                rtol=1e-6, atol=1e-6)


# ---- triangular solves, vander, cond, legacy lu / cholesky forms ---------------------------------


def _extra_inputs():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 3, dtype=torch.float64, generator=g) + 3 * torch.eye(3, dtype=torch.float64)
    chol = torch.linalg.cholesky(a @ a.T)
    b = torch.randn(3, 2, dtype=torch.float64, generator=g)
    return a, chol, b


EXTRA_CASES = [
    lambda m, c, a, ch, b: m.linalg.solve_triangular(c(a).triu(), c(b), upper=True),
    lambda m, c, a, ch, b: m.linalg.solve_triangular(c(a).tril(), c(b.T), upper=False,
                                                     left=False),
    lambda m, c, a, ch, b: m.linalg.solve_triangular(c(a), c(b), upper=True, unitriangular=True),
    lambda m, c, a, ch, b: m.linalg.solve_triangular(c(a), c(b[0]), upper=True),
    lambda m, c, a, ch, b: m.linalg.solve_triangular(c(a), c(b.T), upper=True),
    lambda m, c, a, ch, b: m.linalg.vander(c(b[:, 0])),
    lambda m, c, a, ch, b: m.linalg.vander(c(b[:, 0]), N=5),
    lambda m, c, a, ch, b: m.linalg.vander(c(torch.tensor([1, 2, 3])), N=2),
    lambda m, c, a, ch, b: m.linalg.vander(c(torch.tensor(2.0))),
    lambda m, c, a, ch, b: m.linalg.cond(c(a)),
    lambda m, c, a, ch, b: m.linalg.cond(c(a), -2),
    lambda m, c, a, ch, b: m.linalg.cond(c(a), 1),
    lambda m, c, a, ch, b: m.linalg.cond(c(a), float("inf")),
    lambda m, c, a, ch, b: m.linalg.cond(c(a), "fro"),
    lambda m, c, a, ch, b: m.linalg.cond(c(a), "nuc"),
    lambda m, c, a, ch, b: m.linalg.cond(c(b), 1),
    lambda m, c, a, ch, b: m.linalg.cond(c(b), 3),
    lambda m, c, a, ch, b: m.linalg.cond(c(b), "fro"),
    lambda m, c, a, ch, b: m.linalg.cond(c(b[0])),
    lambda m, c, a, ch, b: m.linalg.cond(c(torch.zeros(0, 0))),
    lambda m, c, a, ch, b: m.linalg.cond(c(torch.zeros(2, 2)), 1),
    lambda m, c, a, ch, b: m.cholesky_solve(c(b), c(ch)),
    lambda m, c, a, ch, b: m.cholesky_solve(c(b.T), c(ch)),
    lambda m, c, a, ch, b: m.cholesky_solve(c(b), c(ch.T), upper=True),
    lambda m, c, a, ch, b: m.cholesky_solve(c(b[0]), c(ch)),
    lambda m, c, a, ch, b: m.cholesky_inverse(c(ch)),
    lambda m, c, a, ch, b: m.cholesky_inverse(c(ch.T), upper=True),
    lambda m, c, a, ch, b: m.cholesky_inverse(c(b)),
    lambda m, c, a, ch, b: m.lu_unpack(*m.linalg.lu_factor(c(b))),
    lambda m, c, a, ch, b: m.lu_unpack(*m.linalg.lu_factor(c(a)), unpack_data=False),
    lambda m, c, a, ch, b: m.lu_unpack(c(b), c(torch.tensor([5, 5], dtype=torch.int32))),
    lambda m, c, a, ch, b: m.lu_solve(c(b), *m.linalg.lu_factor(c(a))),
    lambda m, c, a, ch, b: m.orgqr(c(a), c(b[:, 0])),
    lambda m, c, a, ch, b: c(a).orgqr(c(b[:, 0])),
]


@pytest.mark.parametrize("index", range(len(EXTRA_CASES)))
def test_triangular_cond_and_legacy_forms_match_torch(index):
    fn = EXTRA_CASES[index]
    inputs = _extra_inputs()
    assert_same_outcome(lambda: _call(fn, pyaten, from_torch, *inputs),
                        lambda: _call(fn, torch, lambda t: t, *inputs), rtol=1e-8, atol=1e-8)
