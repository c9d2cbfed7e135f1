"""`pyaten.linalg`, part two: the factorizations (qr, svd, eigh, eig, lu), what is built on
them directly (svdvals, eigvalsh, eigvals, lu_solve, householder_product), and the legacy
torch forms (svd, qr, cholesky). Matrix functions, pseudo-inverse, rank, least squares and
the tensor forms are in linalg_functions.py.

Declared as PyTorch declares them; see the Notes of linalg_ops.py (LAPACK one matrix at a
time, info codes, column-major results).
"""

from __future__ import annotations

import warnings

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native.kernels.copy import assign, check_out_dtype
from pyaten.native.kernels.linalg_ops import (
    batches,
    check_floating,
    check_matrix,
    check_square,
    column_major,
    lapack,
    lu_batched,
    raise_for_info,
)
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import broadcast_shapes, quiet_call, resize_output


def copy_into(result: Tensor, out: Tensor, name: str, check: bool = True) -> Tensor:
    """`result` into `out`: out must have its dtype (ATen's structured check) unless PyTorch
    copies with a cast there (`check=False`)."""
    if check:
        check_out_dtype(out, result._dtype)
    resize_output(out, result._sizes, name)
    return _aten().copy_.default(out, result, False)


def _store(t: Tensor, value: np.ndarray) -> None:
    if t.numel():
        assign(t._numpy(), value)


# --- linalg.qr, qr -------------------------------------------------------------------------------


def _qr_sizes(A: Tensor, mode: str) -> tuple[tuple, tuple]:  # noqa: N803
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    batch, (m, n) = A._sizes[:-2], A._sizes[-2:]
    k = min(m, n)
    if mode == "r":
        return (0,), batch + (k, n)
    if mode == "complete":
        return batch + (m, m), batch + (m, n)
    return batch + (m, k), batch + (k, n)


@native
def meta_linalg_qr(op, A: Tensor, mode: str = "reduced") -> None:  # noqa: N803
    check_matrix(A, "linalg.qr")
    check_floating(A, "linalg.qr")
    q_sizes, r_sizes = _qr_sizes(A, mode)
    op.set_output(0, q_sizes, A._dtype, A._device, column_major(q_sizes))
    op.set_output(1, r_sizes, A._dtype, A._device, column_major(r_sizes))


@native
def linalg_qr_out(op, A: Tensor, mode: str, Q: Tensor, R: Tensor) -> None:  # noqa: N803
    a = A._numpy()
    if a.size == 0:
        _store(R, np.zeros(R._numpy().shape, a.dtype))
        if mode != "r" and Q.numel():  # Q of an empty input: the identity's columns
            eye = np.eye(Q._sizes[-2], Q._sizes[-1], dtype=a.dtype)
            _store(Q, np.broadcast_to(eye, Q._numpy().shape))
        return
    if mode == "r":
        _store(R, quiet_call(np.linalg.qr, a, mode="r"))
        return
    q, r = quiet_call(np.linalg.qr, a, mode=mode)
    _store(Q, q)
    _store(R, r)


@native
def qr(self: Tensor, some: bool = True) -> tuple[Tensor, Tensor]:
    warnings.warn(
        "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future "
        "PyTorch release.\nThe boolean parameter 'some' has been replaced with a string "
        "parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\nQ, R = "
        "torch.linalg.qr(A, 'reduced' if some else 'complete')",
        UserWarning,
        stacklevel=3,
    )
    return _aten().linalg_qr.default(self, "reduced" if some else "complete")


@native
def qr_Q(self: Tensor, some: bool, Q: Tensor, R: Tensor):  # noqa: N802, N803
    return _aten().linalg_qr.out(self, "reduced" if some else "complete", Q=Q, R=R)


# --- _linalg_svd, linalg.svd, linalg.svdvals, svd -------------------------------------------------


@native
def meta__linalg_svd(op, A: Tensor, full_matrices: bool = False,  # noqa: N803
                     compute_uv: bool = True, driver=None) -> None:
    check_matrix(A, "linalg.svd")
    check_floating(A, "linalg.svd")
    if driver is not None:
        raise RuntimeError(
            "pyaten.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs "
            "with cuSOLVER backend."
        )
    batch, (m, n) = A._sizes[:-2], A._sizes[-2:]
    k = min(m, n)
    if compute_uv:
        u = batch + ((m, m) if full_matrices else (m, k))
        vh = batch + ((n, n) if full_matrices else (k, n))
        op.set_output(0, u, A._dtype, A._device, column_major(u))
        op.set_output(2, vh, A._dtype, A._device, column_major(vh))
    else:
        op.set_output(0, (0,), A._dtype, A._device)
        op.set_output(2, (0,), A._dtype, A._device)
    op.set_output(1, batch + (k,), A._dtype.to_real(), A._device)


@native
def _linalg_svd_out(op, A: Tensor, full_matrices: bool, compute_uv: bool, driver,  # noqa: N803
                    U: Tensor, S: Tensor, Vh: Tensor) -> None:  # noqa: N803
    a = A._numpy()
    if a.size == 0:
        if compute_uv:
            for t in (U, Vh):
                if t.numel():
                    eye = np.eye(t._sizes[-2], t._sizes[-1], dtype=a.dtype)
                    _store(t, np.broadcast_to(eye, t._numpy().shape))
        return
    if not compute_uv:
        _store(S, quiet_call(np.linalg.svd, a, compute_uv=False))
        return
    u, s, vh = quiet_call(np.linalg.svd, a, full_matrices=full_matrices)
    _store(U, u)
    _store(S, s)
    _store(Vh, vh)


@native
def linalg_svd(A: Tensor, full_matrices: bool = True, driver=None):  # noqa: N803
    return _aten()._linalg_svd.default(A, full_matrices, True, driver)


@native
def linalg_svd_U(A: Tensor, full_matrices: bool, driver, U: Tensor, S: Tensor,  # noqa: N802, N803
                 Vh: Tensor):  # noqa: N803
    return _aten()._linalg_svd.U(A, full_matrices, True, driver, U=U, S=S, Vh=Vh)


@native
def linalg_svdvals(A: Tensor, driver=None) -> Tensor:  # noqa: N803
    vectors = A._requires_grad or A._fw_grad is not None  # the derivative needs U and Vh
    return _aten()._linalg_svd.default(A, False, vectors, driver)[1]


@native
def linalg_svdvals_out(A: Tensor, driver, out: Tensor) -> Tensor:  # noqa: N803
    U = empty_tensor((0,), A._dtype, A._device)  # noqa: N806
    Vh = empty_tensor((0,), A._dtype, A._device)  # noqa: N806
    _aten()._linalg_svd.U(A, False, False, driver, U=U, S=out, Vh=Vh)
    return out


@native
def svd(self: Tensor, some: bool = True, compute_uv: bool = True):
    check_matrix(self, "linalg.svd")
    aten = _aten()
    if not compute_uv:  # zero-filled U and V of the full shapes, as PyTorch documents
        S = aten.linalg_svdvals.default(self, None)  # noqa: N806
        m, n = self._sizes[-2:]
        batch = self._sizes[:-2]
        U = aten.new_zeros.default(self, batch + (m, m), None, None, None, None)  # noqa: N806
        V = aten.new_zeros.default(self, batch + (n, n), None, None, None, None)  # noqa: N806
        return U, S, V
    U, S, Vh = aten.linalg_svd.default(self, not some, None)  # noqa: N806
    return U, S, adjoint(Vh)


def adjoint(t: Tensor) -> Tensor:
    aten = _aten()
    result = aten.transpose.int(t, -2, -1)
    return aten.conj.default(result) if t._dtype.is_complex else result


@native
def svd_U(self: Tensor, some: bool, compute_uv: bool, U: Tensor, S: Tensor,  # noqa: N802, N803
          V: Tensor):  # noqa: N803
    results = svd(self, some, compute_uv)
    for result, out in zip(results, (U, S, V)):
        resize_output(out, result._sizes, "svd")
        _aten().copy_.default(out, result, False)
    return U, S, V


# --- _linalg_eigh, linalg.eigh, linalg.eigvalsh --------------------------------------------------


@native
def meta__linalg_eigh(op, A: Tensor, UPLO: str = "L", compute_v: bool = True) -> None:  # noqa: N803
    check_square(A, "linalg.eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    n = A._sizes[-1]
    values = A._sizes[:-1]
    op.set_output(0, values, A._dtype.to_real(), A._device)
    vectors = A._sizes if compute_v else (0,)
    op.set_output(1, vectors, A._dtype, A._device, column_major(vectors) if compute_v else None)
    del n


@native
def _linalg_eigh_out(op, A: Tensor, UPLO: str, compute_v: bool, eigenvalues: Tensor,  # noqa: N803
                     eigenvectors: Tensor) -> None:
    if not (A._dtype.is_floating_point or A._dtype.is_complex) or A._dtype in (
            dt.float16, dt.bfloat16, dt.complex32):
        raise NotImplementedError(
            f'"linalg_eigh_cpu" not implemented for \'{A._dtype.scalar_name}\''
        )
    a = A._numpy()
    if a.size == 0:
        return
    if compute_v:
        w, v = quiet_call(np.linalg.eigh, a, UPLO=UPLO)
        _store(eigenvectors, v)
    else:
        w = quiet_call(np.linalg.eigvalsh, a, UPLO=UPLO)
    _store(eigenvalues, w)


@native
def linalg_eigh(self: Tensor, UPLO: str = "L"):  # noqa: N803
    return _aten()._linalg_eigh.default(self, UPLO, True)


@native
def linalg_eigh_eigvals(self: Tensor, UPLO: str, eigvals: Tensor, eigvecs: Tensor):  # noqa: N803
    return _aten()._linalg_eigh.eigenvalues(self, UPLO, True, eigenvalues=eigvals,
                                             eigenvectors=eigvecs)


@native
def linalg_eigvalsh(self: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    vectors = self._requires_grad or self._fw_grad is not None  # the derivative needs them
    return _aten()._linalg_eigh.default(self, UPLO, vectors)[0]


@native
def linalg_eigvalsh_out(self: Tensor, UPLO: str, out: Tensor) -> Tensor:  # noqa: N803
    vectors = empty_tensor((0,), self._dtype, self._device)
    _aten()._linalg_eigh.eigenvalues(self, UPLO, False, eigenvalues=out, eigenvectors=vectors)
    return out


# --- linalg.eig, linalg.eigvals ------------------------------------------------------------------


def _eig_checks(self: Tensor) -> dt.dtype:
    check_square(self, "linalg.eig")
    dtype = self._dtype
    if dtype.is_complex:
        return dtype
    if dtype in (dt.float32, dt.float64, dt.float16, dt.bfloat16):
        return dtype.to_complex()
    raise RuntimeError(f"Unknown Complex ScalarType for {dtype.scalar_name}")


def _eig_compute(self: Tensor, values: Tensor, vectors: Tensor | None) -> None:
    if self._dtype in (dt.float16, dt.bfloat16, dt.complex32):
        raise NotImplementedError(
            f'"linalg_eig_out_cpu" not implemented for \'{self._dtype.scalar_name}\''
        )
    if self._device.type == "meta" or self.numel() == 0:
        return
    a = self._numpy()
    if vectors is None:
        _store(values, quiet_call(np.linalg.eigvals, a))
        return
    w, v = quiet_call(np.linalg.eig, a)
    _store(values, w)
    _store(vectors, v)


@native
def linalg_eig(self: Tensor):
    dtype = _eig_checks(self)
    values = empty_tensor(self._sizes[:-1], dtype, self._device)
    vectors = empty_tensor(self._sizes, dtype, self._device, column_major(self._sizes))
    _eig_compute(self, values, vectors)
    return values, vectors


@native
def linalg_eig_out(self: Tensor, eigenvalues: Tensor, eigenvectors: Tensor):
    values, vectors = linalg_eig(self)
    copy_into(values, eigenvalues, "linalg.eig")
    copy_into(vectors, eigenvectors, "linalg.eig")
    return eigenvalues, eigenvectors


@native
def _linalg_eigvals(self: Tensor) -> Tensor:
    dtype = _eig_checks(self)
    values = empty_tensor(self._sizes[:-1], dtype, self._device)
    _eig_compute(self, values, None)
    return values


@native
def linalg_eigvals(self: Tensor) -> Tensor:
    if self._requires_grad or self._fw_grad is not None:  # differentiable through linalg_eig
        return _aten().linalg_eig.default(self)[0]
    return _aten()._linalg_eigvals.default(self)


@native
def linalg_eigvals_out(self: Tensor, out: Tensor) -> Tensor:
    values = _linalg_eigvals(self)
    if not out._dtype.is_complex:
        raise RuntimeError(
            "pyaten.linalg.eigvals: Expected eigenvalues to be safely castable from "
            f"{values._dtype.scalar_name} dtype, but got eigenvalues with dtype "
            f"{out._dtype.scalar_name}"
        )
    return copy_into(values, out, "linalg.eigvals", check=False)


# --- linalg.lu_factor_ex, lu_factor, lu, lu_solve -------------------------------------------------


def _check_pivot(pivot: bool, api: str) -> None:
    if not pivot:
        raise RuntimeError(f"{api}: LU without pivoting is not implemented on the CPU")


@native
def meta_linalg_lu_factor_ex(op, A: Tensor, pivot: bool = True,  # noqa: N803
                             check_errors: bool = False) -> None:
    check_matrix(A, "pyaten.lu_factor")
    m, n = A._sizes[-2:]
    op.set_output(0, A._sizes, A._dtype, A._device, column_major(A._sizes))
    op.set_output(1, A._sizes[:-2] + (min(m, n),), dt.int32, A._device)
    op.set_output(2, A._sizes[:-2], dt.int32, A._device)


@native
def linalg_lu_factor_ex_out(op, A: Tensor, pivot: bool, check_errors: bool, LU: Tensor,  # noqa: N803
                            pivots: Tensor, info: Tensor) -> None:
    _check_pivot(pivot, "linalg.lu_factor")
    if not (A._dtype.is_floating_point or A._dtype.is_complex) or A._dtype in (
            dt.float16, dt.bfloat16, dt.complex32):
        raise NotImplementedError(f'"lu_cpu" not implemented for \'{A._dtype.scalar_name}\'')
    a = A._numpy()
    lu = np.zeros(a.shape, a.dtype)
    piv = np.zeros(a.shape[:-2] + (min(a.shape[-2:]),), np.int32)
    codes = np.zeros(a.shape[:-2], np.int32)
    lu_batched(a, lu, piv, codes)
    _store(LU, lu)
    _store(pivots, piv)
    _store(info, codes)
    if check_errors:
        raise_for_info(info, "pyaten.linalg.lu_factor_ex", A.dim() == 2)


@native
def linalg_lu_factor(A: Tensor, pivot: bool = True):  # noqa: N803
    LU, pivots, info = _aten().linalg_lu_factor_ex.default(A, pivot, False)  # noqa: N806
    raise_for_info(info, "pyaten.linalg.lu_factor", A.dim() == 2)
    return LU, pivots


@native
def linalg_lu_factor_out(A: Tensor, pivot: bool, LU: Tensor, pivots: Tensor):  # noqa: N803
    info = empty_tensor((0,), dt.int32, A._device)
    _aten().linalg_lu_factor_ex.out(A, pivot, False, LU=LU, pivots=pivots, info=info)
    raise_for_info(info, "pyaten.linalg.lu_factor", A.dim() == 2)
    return LU, pivots


def unpack_lu(lu: np.ndarray, piv: np.ndarray):
    """(P, L, U) of LAPACK's packed LU and 1-based pivots, A = P L U."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
    upper = np.triu(lu[..., :k, :])
    perm = np.broadcast_to(np.arange(m), lu.shape[:-2] + (m,)).copy()
    for index in batches(lu.shape[:-2]):
        row = perm[index]
        for i, p in enumerate(piv[index]):
            row[i], row[p - 1] = row[p - 1], row[i]
    eye = np.eye(m, dtype=lu.dtype)
    P = np.swapaxes(eye[perm], -1, -2)  # noqa: N806 - P[:, i] is row perm[i] of the identity
    return P, lower, upper


@native
def meta_linalg_lu(op, A: Tensor, pivot: bool = True) -> None:  # noqa: N803
    check_matrix(A, "linalg.lu")
    batch, (m, n) = A._sizes[:-2], A._sizes[-2:]
    k = min(m, n)
    op.set_output(0, batch + (m, m) if pivot else (0,), A._dtype, A._device)
    op.set_output(1, batch + (m, k), A._dtype, A._device)
    op.set_output(2, batch + (k, n), A._dtype, A._device)


@native
def linalg_lu_out(op, A: Tensor, pivot: bool, P: Tensor, L: Tensor, U: Tensor) -> None:  # noqa: N803
    _check_pivot(pivot, "linalg.lu")
    if not (A._dtype.is_floating_point or A._dtype.is_complex) or A._dtype in (
            dt.float16, dt.bfloat16, dt.complex32):
        raise NotImplementedError(f'"lu_cpu" not implemented for \'{A._dtype.scalar_name}\'')
    a = A._numpy()
    lu = np.zeros(a.shape, a.dtype)
    piv = np.zeros(a.shape[:-2] + (min(a.shape[-2:]),), np.int32)
    codes = np.zeros(a.shape[:-2], np.int32)
    lu_batched(a, lu, piv, codes)
    p, lower, upper = unpack_lu(lu, piv)
    _store(P, p)
    _store(L, lower)
    _store(U, upper)


@native
def meta_linalg_lu_solve(op, LU: Tensor, pivots: Tensor, B: Tensor, left: bool = True,  # noqa: N803
                         adjoint: bool = False) -> None:
    check_square(LU, "linalg.lu_solve")
    check_matrix(B, "linalg.lu_solve", "B")
    if LU._dtype is not B._dtype:
        raise RuntimeError(
            "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
            f"{LU._dtype.scalar_name} and B of type {B._dtype.scalar_name} instead"
        )
    n = LU._sizes[-1]
    rows, cols = B._sizes[-2:]
    if (left and rows != n) or (not left and cols != n):
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"linalg.lu_solve: Incompatible shapes of A and B for the equation {equation} "
            f"({n}x{n} and {rows}x{cols})"
        )
    batch = broadcast_shapes("linalg.lu_solve", tuple(LU._sizes[:-2]), tuple(B._sizes[:-2]))
    sizes = batch + (rows, cols)
    op.set_output(0, sizes, B._dtype, B._device, column_major(sizes) if left else None)


@native
def linalg_lu_solve_out(op, LU: Tensor, pivots: Tensor, B: Tensor, left: bool,  # noqa: N803
                        adjoint: bool, out: Tensor) -> None:
    batch = tuple(out._sizes[:-2])
    n = LU._sizes[-1]
    lu = np.broadcast_to(LU._numpy(), batch + (n, n))
    piv = np.broadcast_to(pivots._numpy(), batch + (n,))
    b = B._numpy()
    if not left:  # X A = B  <=>  A^T X^T = B^T (the adjoint flag flips with it)
        b = np.swapaxes(b, -1, -2)
    b = np.broadcast_to(b, batch + b.shape[-2:])
    x = np.zeros(b.shape, lu.dtype)
    conj = lu.dtype.kind == "c"
    # trans: 0 solves A X = B, 1 A^T X = B, 2 A^H X = B
    if left:
        trans = (2 if conj else 1) if adjoint else 0
    else:
        trans = 0 if adjoint else 1
    if n and b.shape[-1]:
        getrs = lapack("getrs", lu)
        for index in batches(batch):
            rhs = b[index]
            if not left and adjoint and conj:
                rhs = rhs.conj()
            value = getrs(lu[index], piv[index] - 1, rhs, trans=trans)[0]
            x[index] = value.conj() if (not left and adjoint and conj) else value
    _store(out, x if left else np.swapaxes(x, -1, -2))


# --- householder_product --------------------------------------------------------------------------


def _householder_checks(A: Tensor, tau: Tensor) -> None:  # noqa: N803
    api = "pyaten.linalg.householder_product"
    if len(A._sizes) < 2:
        raise RuntimeError(f"{api}: input must have at least 2 dimensions.")
    if len(tau._sizes) < 1:
        raise RuntimeError(f"{api}: tau must have at least 1 dimension.")
    if A._sizes[-2] < A._sizes[-1]:
        raise RuntimeError(
            f"{api}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    if A._sizes[-1] < tau._sizes[-1]:
        raise RuntimeError(
            f"{api}: input.shape[-1] must be greater than or equal to tau.shape[-1]"
        )
    if A._dtype is not tau._dtype:
        raise RuntimeError(
            f"{api}: tau dtype {tau._dtype.scalar_name} does not match input dtype "
            f"{A._dtype.scalar_name}"
        )


@native
def linalg_householder_product(input: Tensor, tau: Tensor) -> Tensor:  # noqa: A002
    _householder_checks(input, tau)
    result = empty_tensor(input._sizes, input._dtype, input._device, column_major(input._sizes))
    if input._device.type == "meta" or input.numel() == 0:
        return result
    a = input._numpy()
    t = tau._numpy()
    name = "ungqr" if a.dtype.kind == "c" else "orgqr"
    routine = lapack(name, a)
    value = np.empty(a.shape, a.dtype)
    k = t.shape[-1]
    for index in batches(a.shape[:-2]):
        padded = np.zeros(a.shape[-1], a.dtype)
        padded[:k] = t[index]
        matrix = np.array(a[index])
        matrix[:, k:] = 0  # reflectors past tau's length are the identity
        for j in range(k, a.shape[-1]):
            matrix[j, j:] = 0
        value[index] = routine(matrix, padded)[0]
    _store(result, value)
    return result


@native
def linalg_householder_product_out(input: Tensor, tau: Tensor, out: Tensor) -> Tensor:  # noqa: A002
    result = linalg_householder_product(input, tau)
    return copy_into(result, out, "householder_product", check=False)


# --- cholesky (the legacy torch form) -------------------------------------------------------------


def _cholesky_legacy(self: Tensor, upper: bool) -> Tensor:
    warnings.warn(
        "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in "
        "a future PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = "
        "torch.linalg.cholesky(A)\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced "
        "with\nU = torch.linalg.cholesky(A).mH\nThis transform will produce equivalent results "
        "for all valid (symmetric positive definite) inputs.",
        UserWarning,
        stacklevel=4,
    )
    check_square(self, "cholesky")
    L, info = _aten().linalg_cholesky_ex.default(self, upper, False)  # noqa: N806
    raise_for_info(info, "cholesky", self.dim() == 2)
    return L


@native
def cholesky(self: Tensor, upper: bool = False) -> Tensor:
    return _cholesky_legacy(self, upper)


@native
def cholesky_out(self: Tensor, upper: bool, out: Tensor) -> Tensor:
    return copy_into(_cholesky_legacy(self, upper), out, "cholesky")
