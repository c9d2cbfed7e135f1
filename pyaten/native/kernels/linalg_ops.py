"""`pyaten.linalg`, part one: the LU-based operators (inverse, determinants, solve) and
Cholesky, with the torch-namespace forms (det, logdet, slogdet, inverse), and the checks and
LAPACK helpers the other linalg modules share (norms: linalg_norms.py). The factorizations
that give several matrices (qr, svd, eigh, eig, lu, lstsq, ...) are in linalg_decomp.py.

Each operator is declared as PyTorch declares it: a structured primitive with CPU and Meta
kernels (`linalg_inv_ex`, `_linalg_det`, `_linalg_slogdet`, `_linalg_solve_ex`,
`linalg_cholesky_ex`, `linalg_vector_norm`) and `CompositeImplicitAutograd` functions over
them (`linalg_inv`, `linalg_det`, `linalg_solve`, `linalg_norm`, ...), so the errors, the
Meta shapes and the outputs that autograd formulas need (LU and pivots) are PyTorch's.

Note: LAPACK, one matrix at a time
    The CPU kernels call SciPy's LAPACK wrappers (`getrf`, `getrs`, `potrf`) on each matrix of
    the batch, in the input's precision (float32 stays float32), and return LAPACK's `info`
    codes as PyTorch does (int32, one per matrix): `info > 0` is the index of a zero pivot or
    of the first minor that is not positive-definite. `raise_for_info` (the kernel of
    `_linalg_check_errors`) turns a nonzero code into PyTorch's message (its
    `torch._C._LinAlgError` is a RuntimeError), with "(Batch element i): " for batched inputs.
    Matrix results have PyTorch's batched column-major strides (each matrix stored as its
    transpose would be in row-major order).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.subclass_like import subclass_like
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native.kernels.copy import assign
from pyaten.native.lazy import LazyModule
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import broadcast_shapes, quiet_call

scipy_linalg = LazyModule("scipy.linalg")

_LOW_PRECISION = (dt.float16, dt.bfloat16, dt.complex32)


class LinAlgError(RuntimeError):
    """A failed factorization or solve (PyTorch's `torch._C._LinAlgError`)."""


# --- checks shared by the linalg operators ------------------------------------------------------


def check_matrix(A: Tensor, api: str, name: str = "A") -> None:  # noqa: N803
    if len(A._sizes) < 2:
        raise RuntimeError(f"{api}: The input tensor {name} must have at least 2 dimensions.")


def check_square(A: Tensor, api: str) -> None:  # noqa: N803
    check_matrix(A, api)
    m, n = A._sizes[-2:]
    if m != n:
        raise RuntimeError(
            f"{api}: A must be batches of square matrices, but they are {m} by {n} matrices"
        )


def check_floating(A: Tensor, api: str, low_precision: bool = False) -> None:  # noqa: N803
    dtype = A._dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(
            f"{api}: Expected a floating point or complex tensor as input. Got "
            f"{dtype.scalar_name}"
        )
    if not low_precision and dtype in _LOW_PRECISION:
        raise RuntimeError(f"{api}: Low precision dtypes not supported. Got {dtype.scalar_name}")


def column_major(sizes: tuple) -> tuple[int, ...]:
    """PyTorch's batched column-major strides for matrices of `sizes`."""
    sizes = tuple(sizes)
    if len(sizes) < 2:
        return (1,) * len(sizes)
    m, n = sizes[-2:]
    strides = [1, max(m, 1)]
    step = max(m, 1) * max(n, 1)
    for s in reversed(sizes[:-2]):
        strides.insert(0, step)
        step *= max(s, 1)
    return tuple(strides[:-2]) + (1, max(m, 1))


def lapack(name: str, a: np.ndarray) -> Any:
    """SciPy's LAPACK routine `name` for `a`'s precision (`getrf` -> sgetrf/dgetrf/...)."""
    return scipy_linalg.load().get_lapack_funcs(name, (a,))


def batches(batch: tuple):
    """Every index of the batch dims (one empty index for a single matrix)."""
    return np.ndindex(*batch) if batch else [()]


# --- _linalg_check_errors -------------------------------------------------------------------


def _error_text(api: str, code: int) -> str:
    if "inv" in api:
        return (f"The diagonal element {code} is zero, the inversion could not be completed "
                "because the input matrix is singular.")
    if "solve" in api:
        return "The solver failed because the input matrix is singular."
    if "cholesky" in api:
        return ("The factorization could not be completed because the input is not "
                f"positive-definite (the leading minor of order {code} is not "
                "positive-definite).")
    if "svd" in api:
        return ("The algorithm failed to converge because the input matrix is ill-conditioned "
                f"or has too many repeated singular values (error code: {code}).")
    if "eig" in api or "syevd" in api:
        return ("The algorithm failed to converge because the input matrix is ill-conditioned "
                f"or has too many repeated eigenvalues (error code: {code}).")
    if "lstsq" in api:
        return ("The least squares solution could not be computed because the input matrix "
                f"does not have full rank (error code: {code}).")
    if "lu_factor" in api:
        return (f"U[{code},{code}] is zero and using it on lu_solve "
                "would result in a division by zero. If you still want to perform the "
                "factorization, consider calling linalg.lu(A, pivot) or "
                "linalg.lu_factor_ex(A, pivot)")
    return f"Unknown error code {code}."


def raise_for_info(info: Tensor, api: str, is_matrix: bool) -> None:
    """Raise PyTorch's LinAlgError for the first nonzero LAPACK code in `info`. An `info`
    that holds no data of its own (a BatchedTensor, a wrapper subclass) is checked by the
    operator `_linalg_check_errors`, which vmap and the subclass handle (PyTorch's composite
    kernels call that operator)."""
    if info.__class__ is not Tensor and subclass_like(info):
        _aten()._linalg_check_errors.default(info, api, is_matrix=is_matrix)
        return
    _raise_for_codes(info, api, is_matrix)


def _raise_for_codes(info: Tensor, api: str, is_matrix: bool) -> None:
    if info._device.type == "meta" or info.numel() == 0:
        return
    codes = info._numpy()
    if not codes.any():
        return
    if is_matrix:
        code, prefix = int(codes.reshape(-1)[0]), ""
    else:
        flat = codes.reshape(-1)
        index = int(np.flatnonzero(flat)[0])
        code, prefix = int(flat[index]), f"(Batch element {index}): "
    if code < 0:
        raise RuntimeError(
            f"{api}: Argument {-code} has illegal value. Most certainly there is a bug in the "
            "implementation calling the backend library."
        )
    if "lu_factor" in api:  # PyTorch's message names the function itself
        raise LinAlgError(f"pyaten.linalg.lu_factor: {_error_text(api, code)}")
    raise LinAlgError(f"{api}: {prefix}{_error_text(api, code)}")


@native
def _linalg_check_errors(info: Tensor, api_name: str, is_matrix: bool) -> None:
    _raise_for_codes(info, api_name, is_matrix)


# --- LU: the factorization behind inv, det, slogdet and solve -----------------------------------


def lu_batched(a: np.ndarray, lu: np.ndarray, pivots: np.ndarray, info: np.ndarray) -> None:
    """getrf on every matrix of `a` (batch dims first), into `lu`, `pivots` (1-based) and
    `info`."""
    if a.shape[-1] == 0 or a.shape[-2] == 0:
        return
    getrf = lapack("getrf", a)
    for index in batches(a.shape[:-2]):
        factor, piv, code = getrf(a[index])
        lu[index] = factor
        pivots[index] = piv[: pivots.shape[-1]] + 1
        info[index] = code


def _new(sizes: tuple, dtype: dt.dtype, device, column: bool = False) -> Tensor:
    return empty_tensor(tuple(sizes), dtype, device, column_major(sizes) if column else None)


# --- linalg.inv_ex, linalg.inv, inverse ----------------------------------------------------------


@native
def meta_linalg_inv_ex(op, A: Tensor, check_errors: bool = False) -> None:  # noqa: N803
    check_square(A, "linalg.inv")
    check_floating(A, "linalg.inv")
    op.set_output(0, A._sizes, A._dtype, A._device, column_major(A._sizes))
    op.set_output(1, A._sizes[:-2], dt.int32, A._device)


@native
def linalg_inv_ex_out(op, A: Tensor, check_errors: bool, inverse: Tensor,  # noqa: N803
                      info: Tensor) -> None:
    a = A._numpy()
    codes = np.zeros(A._sizes[:-2], np.int32)
    if a.size:
        try:
            value = quiet_call(np.linalg.inv, a)
        except np.linalg.LinAlgError:
            value = np.full(a.shape, np.nan, a.dtype)
            lu = np.empty_like(a)
            piv = np.empty(a.shape[:-1], np.int32)
            lu_batched(a, lu, piv, codes)
            for index in batches(a.shape[:-2]):
                if codes[index] == 0:
                    value[index] = np.linalg.inv(a[index])
        assign(inverse._numpy(), value)
    assign(info._numpy(), codes)
    if check_errors:
        raise_for_info(info, "linalg.inv_ex", A.dim() == 2)


@native
def linalg_inv(A: Tensor) -> Tensor:  # noqa: N803
    inverse, info = _aten().linalg_inv_ex.default(A, False)
    raise_for_info(info, "linalg.inv", A.dim() == 2)
    return inverse


@native
def linalg_inv_out(A: Tensor, out: Tensor) -> Tensor:  # noqa: N803
    info = empty_tensor((0,), dt.int32, A._device)
    _aten().linalg_inv_ex.inverse(A, False, inverse=out, info=info)
    raise_for_info(info, "linalg.inv", A.dim() == 2)
    return out


@native
def inverse(self: Tensor) -> Tensor:
    return _aten().linalg_inv.default(self)


@native
def inverse_out(self: Tensor, out: Tensor) -> Tensor:
    return _aten().linalg_inv.out(self, out=out)


# --- _linalg_det, linalg.det, det, _linalg_slogdet, slogdet, logdet -------------------------------


def _lu_outputs(op, A: Tensor, first: int) -> None:  # noqa: N803
    op.set_output(first, A._sizes, A._dtype, A._device, column_major(A._sizes))
    op.set_output(first + 1, A._sizes[:-1], dt.int32, A._device)


@native
def meta__linalg_det(op, A: Tensor) -> None:  # noqa: N803
    check_square(A, "linalg.det")
    check_floating(A, "linalg.det", low_precision=True)
    op.set_output(0, A._sizes[:-2], A._dtype, A._device)
    _lu_outputs(op, A, 1)


def _lu_of(A: Tensor, LU: Tensor, pivots: Tensor, op_name: str):  # noqa: N803
    if A._dtype in _LOW_PRECISION:
        raise NotImplementedError(f'"{op_name}" not implemented for \'{A._dtype.scalar_name}\'')
    a = A._numpy()
    if A.is_contiguous() and not A._dtype.is_complex:
        # PyTorch factors a real row-major A as its transpose (column-major in memory, no copy):
        # the determinant is the same, the LU and pivots are those of A^T
        a = np.swapaxes(a, -1, -2)
    lu = np.empty(a.shape, a.dtype)
    piv = np.empty(a.shape[:-1], np.int32)
    codes = np.zeros(a.shape[:-2], np.int32)
    lu_batched(a, lu, piv, codes)
    assign(LU._numpy(), lu)
    assign(pivots._numpy(), piv)
    return lu, piv


def _permutation_sign(piv: np.ndarray) -> np.ndarray:
    n = piv.shape[-1]
    swaps = np.count_nonzero(piv != np.arange(1, n + 1, dtype=piv.dtype), axis=-1)
    return np.where(swaps % 2 == 1, -1, 1)


@native
def _linalg_det_out(op, A: Tensor, result: Tensor, LU: Tensor, pivots: Tensor) -> None:  # noqa: N803
    lu, piv = _lu_of(A, LU, pivots, "lu_cpu")
    diag = np.diagonal(lu, axis1=-2, axis2=-1)
    value = quiet_call(np.prod, diag, axis=-1) * _permutation_sign(piv)
    assign(result._numpy(), np.asarray(value, lu.dtype))


@native
def linalg_det(A: Tensor) -> Tensor:  # noqa: N803
    return _aten()._linalg_det.default(A)[0]


@native
def linalg_det_out(A: Tensor, out: Tensor) -> Tensor:  # noqa: N803
    LU = empty_tensor((0,), A._dtype, A._device)  # noqa: N806
    pivots = empty_tensor((0,), dt.int32, A._device)
    _aten()._linalg_det.result(A, result=out, LU=LU, pivots=pivots)
    return out


@native
def det(self: Tensor) -> Tensor:
    return _aten().linalg_det.default(self)


@native
def meta__linalg_slogdet(op, A: Tensor) -> None:  # noqa: N803
    check_square(A, "linalg.slogdet")
    check_floating(A, "linalg.slogdet", low_precision=True)
    batch = A._sizes[:-2]
    op.set_output(0, batch, A._dtype, A._device)
    op.set_output(1, batch, A._dtype.to_real(), A._device)
    _lu_outputs(op, A, 2)


@native
def _linalg_slogdet_out(op, A: Tensor, sign: Tensor, logabsdet: Tensor, LU: Tensor,  # noqa: N803
                        pivots: Tensor) -> None:
    lu, piv = _lu_of(A, LU, pivots, "lu_cpu")
    diag = np.diagonal(lu, axis1=-2, axis2=-1)
    magnitude = np.abs(diag)
    with np.errstate(divide="ignore", invalid="ignore"):
        unit = np.where(magnitude == 0, 0, diag / np.where(magnitude == 0, 1, magnitude))
        signs = np.prod(unit, axis=-1) * _permutation_sign(piv)
        logs = np.sum(np.log(magnitude), axis=-1)
    assign(sign._numpy(), np.asarray(signs, lu.dtype))
    assign(logabsdet._numpy(), np.asarray(logs, magnitude.dtype))


@native
def linalg_slogdet(A: Tensor) -> tuple[Tensor, Tensor]:  # noqa: N803
    sign, logabsdet, _, _ = _aten()._linalg_slogdet.default(A)
    return sign, logabsdet


@native
def linalg_slogdet_out(A: Tensor, sign: Tensor, logabsdet: Tensor):  # noqa: N803
    LU = empty_tensor((0,), A._dtype, A._device)  # noqa: N806
    pivots = empty_tensor((0,), dt.int32, A._device)
    _aten()._linalg_slogdet.sign(A, sign=sign, logabsdet=logabsdet, LU=LU, pivots=pivots)
    return sign, logabsdet


@native
def slogdet(self: Tensor) -> tuple[Tensor, Tensor]:
    return _aten().linalg_slogdet.default(self)


@native
def slogdet_out(self: Tensor, sign: Tensor, logabsdet: Tensor):
    return _aten().linalg_slogdet.out(self, sign=sign, logabsdet=logabsdet)


@native
def logdet(self: Tensor) -> Tensor:
    check_square(self, "linalg.logdet")
    check_floating(self, "linalg.logdet", low_precision=True)
    aten = _aten()
    sign, logabsdet = aten.linalg_slogdet.default(self)
    if self._dtype.is_complex:
        return aten.add.Tensor(aten.log.default(sign), logabsdet, 1)
    # log of a negative determinant is NaN, of zero -inf
    nan = aten.full_like.default(logabsdet, math.nan, None, None, None, None, None)
    return aten.where.self(aten.lt.Scalar(sign, 0), nan, logabsdet)


# --- _linalg_solve_ex, linalg.solve_ex, linalg.solve ----------------------------------------------


def _solve_is_vector(A: Tensor, B: Tensor) -> bool:  # noqa: N803
    return len(B._sizes) == 1 or (len(A._sizes) - 1 == len(B._sizes)
                                  and tuple(B._sizes) == tuple(A._sizes[:-1]))


def _solve_shapes(A: Tensor, B: Tensor, left: bool) -> tuple[bool, tuple]:  # noqa: N803
    vector = _solve_is_vector(A, B)
    if vector:
        n = B._sizes[-1]
        rows, cols = (n, 1) if left else (1, n)
    else:
        rows, cols = B._sizes[-2:]
    n = A._sizes[-1]
    if (left and rows != n) or (not left and cols != n):
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation {equation} "
            f"({A._sizes[-2]}x{n} and {rows}x{cols})"
        )
    b_batch = B._sizes[:-1] if vector else B._sizes[:-2]
    batch = broadcast_shapes("linalg.solve", tuple(A._sizes[:-2]), tuple(b_batch))
    return vector, batch + ((n,) if vector else (rows, cols))


@native
def meta__linalg_solve_ex(op, A: Tensor, B: Tensor, left: bool = True,  # noqa: N803
                          check_errors: bool = False) -> None:
    check_square(A, "linalg.solve")
    check_floating(A, "linalg.solve")
    if A._dtype is not B._dtype:
        raise RuntimeError(
            "linalg.solve: Expected A and B to have the same dtype, but found A of type "
            f"{A._dtype.scalar_name} and B of type {B._dtype.scalar_name} instead"
        )
    vector, sizes = _solve_shapes(A, B, left)
    batch = sizes[:-1] if vector else sizes[:-2]
    n = A._sizes[-1]
    op.set_output(0, sizes, A._dtype, A._device, None if vector else column_major(sizes))
    op.set_output(1, batch + (n, n), A._dtype, A._device, column_major(batch + (n, n)))
    op.set_output(2, batch + (n,), dt.int32, A._device)
    op.set_output(3, batch, dt.int32, A._device)


@native
def _linalg_solve_ex_out(op, A: Tensor, B: Tensor, left: bool, check_errors: bool,  # noqa: N803
                         result: Tensor, LU: Tensor, pivots: Tensor, info: Tensor) -> None:  # noqa: N803
    vector = _solve_is_vector(A, B)
    n = A._sizes[-1]
    batch = tuple(info._sizes)
    a = np.broadcast_to(A._numpy(), batch + (n, n))
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a = np.swapaxes(a, -1, -2)
    b = B._numpy()
    b = b[..., :, None] if vector else (b if left else np.swapaxes(b, -1, -2))
    b = np.broadcast_to(b, batch + b.shape[-2:])
    lu = np.empty(a.shape, a.dtype)
    piv = np.zeros(batch + (n,), np.int32)
    codes = np.zeros(batch, np.int32)
    x = np.zeros(b.shape, a.dtype)
    if n and a.size:
        getrf, getrs = lapack("getrf", a), lapack("getrs", a)
        for index in batches(batch):
            factor, p, code = getrf(a[index])
            lu[index], piv[index], codes[index] = factor, p + 1, code
            if code == 0 and b.shape[-1]:
                x[index] = getrs(factor, p, b[index])[0]
    value = x[..., 0] if vector else (x if left else np.swapaxes(x, -1, -2))
    assign(result._numpy(), value)
    assign(LU._numpy(), lu)
    assign(pivots._numpy(), piv)
    assign(info._numpy(), codes)
    if check_errors:
        raise_for_info(info, "pyaten.linalg.solve_ex", A.dim() == 2)


@native
def linalg_solve_ex(A: Tensor, B: Tensor, left: bool = True,  # noqa: N803
                    check_errors: bool = False) -> tuple[Tensor, Tensor]:
    result, _, _, info = _aten()._linalg_solve_ex.default(A, B, left, check_errors)
    return result, info


@native
def linalg_solve_ex_out(A, B, left, check_errors, result: Tensor, info: Tensor):  # noqa: N803
    LU = empty_tensor((0,), A._dtype, A._device)  # noqa: N806
    pivots = empty_tensor((0,), dt.int32, A._device)
    _aten()._linalg_solve_ex.result(A, B, left, check_errors, result=result, LU=LU,
                                    pivots=pivots, info=info)
    return result, info


@native
def linalg_solve(A: Tensor, B: Tensor, left: bool = True) -> Tensor:  # noqa: N803
    result, _, _, info = _aten()._linalg_solve_ex.default(A, B, left, False)
    raise_for_info(info, "pyaten.linalg.solve", A.dim() == 2)
    return result


@native
def linalg_solve_out(A: Tensor, B: Tensor, left: bool, out: Tensor) -> Tensor:  # noqa: N803
    info = empty_tensor((0,), dt.int32, A._device)
    linalg_solve_ex_out(A, B, left, False, out, info)
    raise_for_info(info, "pyaten.linalg.solve", A.dim() == 2)
    return out


# --- linalg.cholesky_ex, linalg.cholesky ----------------------------------------------------------


@native
def meta_linalg_cholesky_ex(op, self: Tensor, upper: bool = False,
                            check_errors: bool = False) -> None:
    check_square(self, "linalg.cholesky")
    check_floating(self, "linalg.cholesky")
    op.set_output(0, self._sizes, self._dtype, self._device, column_major(self._sizes))
    op.set_output(1, self._sizes[:-2], dt.int32, self._device)


@native
def linalg_cholesky_ex_L(op, self: Tensor, upper: bool, check_errors: bool,  # noqa: N802
                         L: Tensor, info: Tensor) -> None:  # noqa: N803
    a = self._numpy()
    value = np.zeros(a.shape, a.dtype)
    codes = np.zeros(a.shape[:-2], np.int32)
    if a.shape[-1]:
        potrf = lapack("potrf", a)
        for index in batches(a.shape[:-2]):
            factor, code = potrf(a[index], lower=0 if upper else 1, clean=1)
            value[index], codes[index] = factor, code
            if code:  # PyTorch leaves the failed factor's trailing block as LAPACK does
                value[index] = np.triu(factor) if upper else np.tril(factor)
    assign(L._numpy(), value)
    assign(info._numpy(), codes)
    if check_errors:
        raise_for_info(info, "linalg.cholesky_ex", self.dim() == 2)


@native
def linalg_cholesky(self: Tensor, upper: bool = False) -> Tensor:
    L, info = _aten().linalg_cholesky_ex.default(self, upper, False)  # noqa: N806
    raise_for_info(info, "linalg.cholesky", self.dim() == 2)
    return L


@native
def linalg_cholesky_out(self: Tensor, upper: bool, out: Tensor) -> Tensor:
    info = empty_tensor((0,), dt.int32, self._device)
    _aten().linalg_cholesky_ex.L(self, upper, False, L=out, info=info)
    raise_for_info(info, "linalg.cholesky", self.dim() == 2)
    return out
