"""`pyaten.linalg`, part three: what is computed from the factorizations of
linalg_ops.py and linalg_decomp.py: matrix_power and matrix_exp (and the torch forms),
pinv/pinverse, matrix_rank, lstsq, tensorinv and tensorsolve.

Mostly `CompositeImplicitAutograd` functions over other operators, as in PyTorch; `lstsq`
(CompositeExplicitAutograd) and `matrix_exp` (CPU) compute with SciPy.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.linalg_decomp import adjoint, copy_into
from pyaten.native.kernels.linalg_ops import (
    batches,
    check_floating,
    check_matrix,
    check_square,
    column_major,
    scipy_linalg,
)
from pyaten.native.kernels.shape import format_shape
from pyaten.native.mathbits import reads_math_bits
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import broadcast_shapes, quiet_call


def _store(t: Tensor, value: np.ndarray) -> None:
    if t.numel():
        assign(t._numpy(), value)


# --- matrix_power, matrix_exp ---------------------------------------------------------------------


@native
def linalg_matrix_power(self: Tensor, n: int) -> Tensor:
    check_square(self, "linalg.matrix_power")
    aten = _aten()
    if n == 0:  # the identity, batched
        result = aten.new_zeros.default(self, self._sizes, None, None, None, None)
        aten.fill_.Scalar(aten.diagonal.default(result, 0, -2, -1), 1)
        return result
    base = self
    if n < 0:
        base = aten.linalg_inv.default(self)
        n = -n
    if n == 1:
        return aten.clone.default(base, None)
    result = None
    while n:  # binary exponentiation: one matmul per bit
        if n & 1:
            result = base if result is None else aten.matmul.default(result, base)
        n >>= 1
        if n:
            base = aten.matmul.default(base, base)
    return result


@native
def linalg_matrix_power_out(self: Tensor, n: int, out: Tensor) -> Tensor:
    return copy_into(linalg_matrix_power(self, n), out, "matrix_power")


@native
def matrix_power(self: Tensor, n: int) -> Tensor:
    return _aten().linalg_matrix_power.default(self, n)


@native
def matrix_power_out(self: Tensor, n: int, out: Tensor) -> Tensor:
    return _aten().linalg_matrix_power.out(self, n, out=out)


@native
def linalg_matrix_exp(self: Tensor) -> Tensor:
    check_square(self, "linalg.matrix_exp")
    check_floating(self, "linalg.matrix_exp", low_precision=True)
    result = empty_tensor(self._sizes, self._dtype, self._device)
    if self._device.type == "meta" or self.numel() == 0:
        return result
    if self._dtype in (dt.float16, dt.complex32):
        raise NotImplementedError(
            f'"linalg_matrix_exp" not implemented for \'{self._dtype.scalar_name}\''
        )
    a = self._numpy()
    compute = np.float32 if self._dtype is dt.bfloat16 else a.dtype
    _store(result, quiet_call(scipy_linalg.load().expm, a.astype(compute, copy=False)))
    return result


@native
def matrix_exp(self: Tensor) -> Tensor:
    return _aten().linalg_matrix_exp.default(self)


# --- pinv, matrix_rank ----------------------------------------------------------------------------


def _check_pinv_input(self: Tensor, api: str) -> None:
    if len(self._sizes) < 2 or self._dtype not in (dt.float32, dt.float64, dt.complex64,
                                                   dt.complex128):
        raise RuntimeError(
            f"{api}({self._dtype.scalar_name}{{{format_shape(self._sizes)}}}): expected a tensor "
            "with 2 or more dimensions of float, double, cfloat or cdouble types"
        )


def _tolerance(aten, values: Tensor, atol, rtol, shape: tuple) -> Tensor:
    """max(atol, rtol * largest singular value), PyTorch's default rtol being eps * max(m, n)
    when neither is given."""
    eps = float(np.finfo(values._dtype.numpy).eps)
    if rtol is None:
        rtol = (eps * max(shape[-2:])) if (atol is None or _is_zero(atol)) else 0.0
    atol = 0.0 if atol is None else atol
    largest = aten.amax.default(values, [-1], True) if values._sizes[-1] else \
        aten.zeros_like.default(aten.sum.dim_IntList(values, [-1], True, None), None, None,
                                None, None, None)
    relative = aten.mul.Tensor(largest, rtol) if isinstance(rtol, Tensor) else \
        aten.mul.Scalar(largest, rtol)
    absolute = atol if isinstance(atol, Tensor) else aten.full_like.default(
        relative, atol, None, None, None, None, None)
    if isinstance(atol, Tensor) and atol.dim():
        absolute = aten.unsqueeze.default(atol, -1)
    return aten.maximum.default(relative, absolute)


def _is_zero(value) -> bool:
    return not isinstance(value, Tensor) and value == 0


@native
def linalg_pinv(self: Tensor, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    _check_pinv_input(self, "linalg.pinv")
    aten = _aten()
    if self.numel() == 0:
        sizes = self._sizes[:-2] + (self._sizes[-1], self._sizes[-2])
        return aten.new_zeros.default(self, sizes, None, None, None, None)
    if hermitian:
        values, vectors = aten.linalg_eigh.default(self, "L")
        magnitude = aten.abs.default(values)
        tol = _tolerance(aten, magnitude, atol, rtol, self._sizes)
        keep = aten.gt.Tensor(magnitude, tol)
        inverse = aten.where.self(keep, aten.reciprocal.default(values),
                                  aten.zeros_like.default(values, None, None, None, None, None))
        left = aten.mul.Tensor(vectors, aten.unsqueeze.default(inverse, -2))
        return aten.matmul.default(left, adjoint(vectors))
    U, S, Vh = aten.linalg_svd.default(self, False, None)  # noqa: N806
    tol = _tolerance(aten, S, atol, rtol, self._sizes)
    keep = aten.gt.Tensor(S, tol)
    inverse = aten.where.self(keep, aten.reciprocal.default(S),
                              aten.zeros_like.default(S, None, None, None, None, None))
    if self._dtype.is_complex:
        inverse = aten._to_copy.default(inverse, dtype=self._dtype)
    scaled = aten.mul.Tensor(adjoint(Vh), aten.unsqueeze.default(inverse, -2))
    return aten.matmul.default(scaled, adjoint(U))


@native
def linalg_pinv_atol_rtol_float(self: Tensor, atol=None, rtol=None,
                                hermitian: bool = False) -> Tensor:
    return linalg_pinv(self, atol, rtol, hermitian)


@native
def linalg_pinv_rcond(self: Tensor, rcond, hermitian: bool = False) -> Tensor:
    return linalg_pinv(self, 0.0, rcond, hermitian)


@native
def linalg_pinv_rcond_tensor(self: Tensor, rcond: Tensor, hermitian: bool = False) -> Tensor:
    return linalg_pinv(self, 0.0, rcond, hermitian)


@native
def linalg_pinv_out_rcond_tensor(self, rcond, hermitian, out: Tensor) -> Tensor:
    return copy_into(linalg_pinv(self, 0.0, rcond, hermitian), out, "linalg.pinv", check=False)


@native
def linalg_pinv_out(self, atol, rtol, hermitian, out: Tensor) -> Tensor:
    return copy_into(linalg_pinv(self, atol, rtol, hermitian), out, "linalg.pinv", check=False)


@native
def linalg_pinv_atol_rtol_float_out(self, atol, rtol, hermitian, out: Tensor) -> Tensor:
    return copy_into(linalg_pinv(self, atol, rtol, hermitian), out, "linalg.pinv", check=False)


@native
def linalg_pinv_rcond_out(self, rcond, hermitian, out: Tensor) -> Tensor:
    return copy_into(linalg_pinv(self, 0.0, rcond, hermitian), out, "linalg.pinv", check=False)


@native
def pinverse(self: Tensor, rcond: float = 1e-15) -> Tensor:
    return _aten().linalg_pinv.default(self, rcond, False)


def _matrix_rank(self: Tensor, atol, rtol, hermitian: bool) -> Tensor:
    check_matrix(self, "pyaten.linalg.matrix_rank")
    check_floating(self, "pyaten.linalg.matrix_rank")
    aten = _aten()
    if hermitian:
        values = aten.abs.default(aten.linalg_eigvalsh.default(self, "L"))
    else:
        values = aten.linalg_svdvals.default(self, None)
    tol = _tolerance(aten, values, atol, rtol, self._sizes)
    return aten.sum.dim_IntList(aten.gt.Tensor(values, tol), [-1], False, None)


@native
def linalg_matrix_rank_atol_rtol_tensor(input: Tensor, atol=None, rtol=None,  # noqa: A002
                                        hermitian: bool = False) -> Tensor:
    return _matrix_rank(input, atol, rtol, hermitian)


@native
def linalg_matrix_rank_atol_rtol_float(self: Tensor, atol=None, rtol=None,
                                       hermitian: bool = False) -> Tensor:
    return _matrix_rank(self, atol, rtol, hermitian)


@native
def linalg_matrix_rank(self: Tensor, tol: float, hermitian: bool = False) -> Tensor:
    return _matrix_rank(self, tol, 0.0, hermitian)


@native
def linalg_matrix_rank_tol_tensor(input: Tensor, tol: Tensor, hermitian: bool = False) -> Tensor:  # noqa: A002
    return _matrix_rank(input, tol, 0.0, hermitian)


@native
def linalg_matrix_rank_atol_rtol_tensor_out(input, atol, rtol, hermitian, out: Tensor) -> Tensor:  # noqa: A002
    return copy_into(_matrix_rank(input, atol, rtol, hermitian), out, "matrix_rank", check=False)


@native
def linalg_matrix_rank_atol_rtol_float_out(self, atol, rtol, hermitian, out: Tensor) -> Tensor:
    return copy_into(_matrix_rank(self, atol, rtol, hermitian), out, "matrix_rank", check=False)


@native
def linalg_matrix_rank_out(self, tol, hermitian, out: Tensor) -> Tensor:
    return copy_into(_matrix_rank(self, tol, 0.0, hermitian), out, "matrix_rank", check=False)


@native
def linalg_matrix_rank_out_tol_tensor(input, tol, hermitian, out: Tensor) -> Tensor:  # noqa: A002
    return copy_into(_matrix_rank(input, tol, 0.0, hermitian), out, "matrix_rank", check=False)


# --- lstsq -------------------------------------------------------------------------------------


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@native
def linalg_lstsq(self: Tensor, b: Tensor, rcond=None, driver=None):
    api = "pyaten.linalg.lstsq"
    if driver is not None and driver not in _LSTSQ_DRIVERS:
        raise RuntimeError(
            f"{api}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
        )
    check_matrix(self, api)
    check_floating(self, api)
    if self._dtype is not b._dtype:
        raise RuntimeError(
            f"{api}: Expected input and other to have the same dtype, but got input's dtype "
            f"{self._dtype.scalar_name} and other's dtype {b._dtype.scalar_name}"
        )
    vector = len(b._sizes) == len(self._sizes) - 1
    if len(b._sizes) < 1 or (not vector and len(b._sizes) < 2):
        raise RuntimeError(f"{api}: other must have at least 1 dimension.")
    m, n = self._sizes[-2:]
    b_batch = b._sizes[:-1] if vector else b._sizes[:-2]
    batch = broadcast_shapes(api, tuple(self._sizes[:-2]), tuple(b_batch))
    rows = b._sizes[-1] if vector else b._sizes[-2]
    if rows != m:
        raise RuntimeError(f"{api}: input.size(-2) should match other.size(-2)")
    driver = driver or "gelsy"
    real = self._dtype.to_real()
    a = self._numpy()
    rhs = b._numpy()[..., None] if vector else b._numpy()
    k = rhs.shape[-1]
    a = np.broadcast_to(a, batch + (m, n))
    rhs = np.broadcast_to(rhs, batch + (m, k))
    solution = np.zeros(batch + (n, k), a.dtype)
    ranks = np.zeros(batch, np.int64)
    singular = np.zeros(batch + (min(m, n),), real.numpy)
    residuals = np.zeros(batch + (k,), real.numpy)
    full_rank = True
    if a.size and rhs.size:
        solve = scipy_linalg.load().lstsq
        for index in batches(batch):
            x, res, rank, sv = solve(a[index], rhs[index], cond=rcond, lapack_driver=driver
                                     if driver != "gels" else "gelsy")
            solution[index] = x
            ranks[index] = rank
            full_rank = full_rank and rank == n
            if sv is not None and driver in ("gelsd", "gelss"):
                singular[index] = sv
            if m > n:
                residuals[index] = np.sum(np.abs(rhs[index] - a[index] @ x) ** 2, axis=0)
    device = self._device

    def tensor(value: np.ndarray, dtype: dt.dtype) -> Tensor:
        result = empty_tensor(value.shape, dtype, device)
        _store(result, value)
        return result

    x = solution[..., 0] if vector else solution
    sol = empty_tensor(x.shape, self._dtype, device, None if vector else column_major(x.shape))
    _store(sol, x)
    keep_residuals = m > n and driver != "gelsy" and full_rank
    res_tensor = tensor(residuals[..., 0] if vector else residuals, real) if keep_residuals \
        else empty_tensor((0,), real, device)
    rank_tensor = tensor(ranks, dt.int64) if driver != "gels" else empty_tensor((0,), dt.int64,
                                                                                device)
    sv_tensor = tensor(singular, real) if driver in ("gelsd", "gelss") else \
        empty_tensor((0,), real, device)
    return sol, res_tensor, rank_tensor, sv_tensor


@native
def linalg_lstsq_out(self, b, rcond, driver, solution, residuals, rank, singular_values):
    results = linalg_lstsq(self, b, rcond, driver)
    for result, out in zip(results, (solution, residuals, rank, singular_values)):
        copy_into(result, out, "linalg.lstsq")
    return solution, residuals, rank, singular_values


# --- tensorinv, tensorsolve -----------------------------------------------------------------------


@native
def linalg_tensorinv(self: Tensor, ind: int = 2) -> Tensor:
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    head, tail = self._sizes[:ind], self._sizes[ind:]
    rows = math.prod(head)
    cols = math.prod(tail)
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    aten = _aten()
    inverse = aten.linalg_inv.default(aten.reshape.default(self, (rows, cols)))
    return aten.reshape.default(inverse, tuple(tail) + tuple(head))


@native
def linalg_tensorinv_out(self: Tensor, ind: int, out: Tensor) -> Tensor:
    return copy_into(linalg_tensorinv(self, ind), out, "tensorinv")


@native
def linalg_tensorsolve(self: Tensor, other: Tensor, dims=None) -> Tensor:
    aten = _aten()
    if dims is not None:
        ndim = self.dim()
        moved = [d % ndim for d in dims]
        rest = [d for d in range(ndim) if d not in moved]
        self = aten.permute.default(self, rest + moved)
    rows = other.numel()
    result_shape = tuple(self._sizes[other.dim():])
    cols = math.prod(result_shape)
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {rows}"
        )
    matrix = aten.reshape.default(self, (rows, cols))
    solution = aten.linalg_solve.default(matrix, aten.reshape.default(other, (rows,)), True)
    return aten.reshape.default(solution, result_shape)


@native
def linalg_tensorsolve_out(self: Tensor, other: Tensor, dims, out: Tensor) -> Tensor:
    return copy_into(linalg_tensorsolve(self, other, dims), out, "tensorsolve", check=False)


# --- solve_triangular, vander, cond, orgqr, lu_solve/lu_unpack, cholesky_solve/inverse ----------


def _triangular_shapes(A: Tensor, B: Tensor, left: bool) -> tuple:  # noqa: N803
    api = "linalg.solve_triangular"
    check_matrix(A, api)
    check_matrix(B, api, "B")
    check_square(A, api)
    n = A._sizes[-1]
    rows, cols = B._sizes[-2:]
    if (left and rows != n) or (not left and cols != n):
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(
            f"{api}: Incompatible shapes of A and B for the equation {equation} "
            f"({n}x{n} and {rows}x{cols})"
        )
    batch = broadcast_shapes(api, tuple(A._sizes[:-2]), tuple(B._sizes[:-2]))
    return batch + (rows, cols)


def _triangular_solve(A: Tensor, B: Tensor, upper: bool, left: bool,  # noqa: N803
                      unitriangular: bool, result: Tensor) -> None:
    if not (A._dtype.is_floating_point or A._dtype.is_complex) or A._dtype in (
            dt.float16, dt.bfloat16, dt.complex32):
        raise NotImplementedError(
            f'"triangular_solve_cpu" not implemented for \'{A._dtype.scalar_name}\''
        )
    if result._device.type == "meta" or result.numel() == 0:
        return
    sizes = tuple(result._sizes)
    n = A._sizes[-1]
    a = np.broadcast_to(A._numpy(), sizes[:-2] + (n, n))
    b = np.broadcast_to(B._numpy().astype(a.dtype, copy=False), sizes)
    solve = scipy_linalg.load().solve_triangular
    x = np.empty(sizes, a.dtype)
    for index in batches(sizes[:-2]):
        if left:
            x[index] = solve(a[index], b[index], lower=not upper, unit_diagonal=unitriangular,
                             check_finite=False)
        else:  # X A = B  <=>  A^T X^T = B^T
            x[index] = solve(a[index], b[index].T, trans="T", lower=not upper,
                             unit_diagonal=unitriangular, check_finite=False).T
    _store(result, x)


@native
@reads_math_bits()  # falls through the math-bit keys (Note: math bits)
def linalg_solve_triangular(self: Tensor, B: Tensor, upper: bool, left: bool = True,  # noqa: N803
                            unitriangular: bool = False) -> Tensor:
    sizes = _triangular_shapes(self, B, left)
    result = empty_tensor(sizes, self._dtype, self._device, column_major(sizes))
    _triangular_solve(self, B, upper, left, unitriangular, result)
    return result


@native
def linalg_solve_triangular_out(self: Tensor, B: Tensor, upper: bool, left: bool,  # noqa: N803
                                unitriangular: bool, out: Tensor) -> Tensor:
    result = linalg_solve_triangular(self, B, upper, left, unitriangular)
    return copy_into(result, out, "linalg.solve_triangular")


@native
def linalg_vander_symint(x: Tensor, N=None) -> Tensor:  # noqa: N803
    aten = _aten()
    if not x._sizes:  # a 0-dim x is one point (PyTorch's: unsqueezed)
        x = aten.unsqueeze.default(x, -1)
    n = N if N is not None else x._sizes[-1]
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    shape = tuple(x._sizes) + (n - 1,)
    powers = aten.cumprod.default(aten.expand.default(aten.unsqueeze.default(x, -1), shape, False),
                                  -1, None)
    ones = aten.new_ones.default(powers, tuple(x._sizes) + (1,), None, None, None, None)
    return aten.cat.default([ones, powers], -1)


def _cond(self: Tensor, ord) -> Tensor:  # noqa: A002
    if self.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    aten = _aten()
    if isinstance(ord, str):
        check_square(self, f"linalg.cond(ord={ord})")
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.cond got an invalid norm type: {ord}")
    else:
        ord = 2 if ord is None else ord  # noqa: A001
        if ord not in (1, -1, 2, -2, math.inf, -math.inf):
            raise RuntimeError(f"linalg.cond got an invalid norm type: {_ord_text(ord)}")
    if self.numel() == 0:
        return aten.new_zeros.default(self, self._sizes[:-2], self._dtype.to_real(), None,
                                      None, None)
    if not isinstance(ord, str) and abs(ord) == 2:
        values = aten.linalg_svdvals.default(self, None)
        largest = aten.narrow.default(values, -1, 0, 1)
        smallest = aten.narrow.default(values, -1, -1, 1)
        ratio = aten.div.Tensor(smallest, largest) if ord == -2 else \
            aten.div.Tensor(largest, smallest)
        return aten.squeeze.dim(ratio, -1)
    if not isinstance(ord, str):
        check_square(self, f"linalg.cond(ord={_ord_text(ord)})")
    inverse, info = aten.linalg_inv_ex.default(self, False)
    if isinstance(ord, str):
        norm = lambda t: aten.linalg_matrix_norm.str_ord(t, ord, [-2, -1], False, None)  # noqa: E731
    else:
        norm = lambda t: aten.linalg_matrix_norm.default(t, ord, [-2, -1], False, None)  # noqa: E731
    result = aten.mul.Tensor(norm(self), norm(inverse))
    singular = aten.gt.Scalar(info, 0)
    return aten.masked_fill.Scalar(result, singular, math.inf)


def _ord_text(ord) -> str:  # noqa: A002
    if isinstance(ord, float) and math.isinf(ord):
        return "inf" if ord > 0 else "-inf"
    return str(int(ord)) if float(ord).is_integer() else str(ord)


@native
def linalg_cond(self: Tensor, p=None) -> Tensor:
    return _cond(self, p)


@native
def linalg_cond_p_str(self: Tensor, p: str) -> Tensor:
    return _cond(self, p)


@native
def linalg_cond_out(self: Tensor, p, out: Tensor) -> Tensor:
    return copy_into(_cond(self, p), out, "linalg.cond")


@native
def linalg_cond_p_str_out(self: Tensor, p: str, out: Tensor) -> Tensor:
    return copy_into(_cond(self, p), out, "linalg.cond")


@native
def orgqr(self: Tensor, input2: Tensor) -> Tensor:
    return _aten().linalg_householder_product.default(self, input2)


@native
def orgqr_out(self: Tensor, input2: Tensor, out: Tensor) -> Tensor:
    return _aten().linalg_householder_product.out(self, input2, out=out)


@native
def lu_solve(self: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    return _aten().linalg_lu_solve.default(LU_data, LU_pivots, self, True, False)


@native
def lu_solve_out(self: Tensor, LU_data: Tensor, LU_pivots: Tensor, out: Tensor) -> Tensor:  # noqa: N803
    return _aten().linalg_lu_solve.out(LU_data, LU_pivots, self, True, False, out=out)


@native
def meta_lu_unpack(op, LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,  # noqa: N803
                   unpack_pivots: bool = True) -> None:
    check_matrix(LU_data, "torch.lu_unpack")
    batch, (m, n) = LU_data._sizes[:-2], LU_data._sizes[-2:]
    k = min(m, n)
    dtype, device = LU_data._dtype, LU_data._device
    op.set_output(0, batch + (m, m) if unpack_pivots else (0,), dtype, device)
    op.set_output(1, batch + (m, k) if unpack_data else (0,), dtype, device)
    op.set_output(2, batch + (k, n) if unpack_data else (0,), dtype, device)


@native
def lu_unpack_out(op, LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool,  # noqa: N803
                  unpack_pivots: bool, P: Tensor, L: Tensor, U: Tensor) -> None:  # noqa: N803
    from pyaten.native.kernels.linalg_decomp import unpack_lu

    lu, piv = LU_data._numpy(), LU_pivots._numpy()
    m = lu.shape[-2]
    if piv.size and (piv.min() < 1 or piv.max() > m):
        raise RuntimeError(
            "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you "
            "properly pass the result of lu_factor?"
        )
    p, lower, upper = unpack_lu(lu, piv)
    if unpack_pivots:
        _store(P, p)
    if unpack_data:
        _store(L, lower)
        _store(U, upper)


def _cholesky_solve_checks(self: Tensor, input2: Tensor) -> None:
    if self.dim() < 2:
        raise RuntimeError(
            f"b should have at least 2 dimensions, but has {self.dim()} dimensions instead"
        )
    if input2.dim() < 2:
        raise RuntimeError(
            f"u should have at least 2 dimensions, but has {input2.dim()} dimensions instead"
        )
    if self._dtype is not input2._dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type "
            f"{self._dtype.scalar_name} and A of type {input2._dtype.scalar_name} instead."
        )
    n = input2._sizes[-1]
    if input2._sizes[-2] != n or self._sizes[-2] != n:
        raise RuntimeError(
            f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
            f"{input2._sizes[-2]} by {n} but each b matrix is {self._sizes[-2]} by "
            f"{self._sizes[-1]}"
        )


@native
def _cholesky_solve_helper_cpu(self: Tensor, A: Tensor, upper: bool) -> Tensor:  # noqa: N803
    batch = broadcast_shapes("cholesky_solve", tuple(self._sizes[:-2]), tuple(A._sizes[:-2]))
    sizes = batch + tuple(self._sizes[-2:])
    result = empty_tensor(sizes, self._dtype, self._device, column_major(sizes))
    if self._device.type == "meta" or result.numel() == 0:
        return result
    n = A._sizes[-1]
    factor = np.broadcast_to(A._numpy(), batch + (n, n))
    b = np.broadcast_to(self._numpy(), sizes)
    solve = scipy_linalg.load().cho_solve
    x = np.empty(sizes, factor.dtype)
    for index in batches(batch):
        x[index] = solve((factor[index], not upper), b[index], check_finite=False)
    _store(result, x)
    return result


@native
def cholesky_solve(self: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    _cholesky_solve_checks(self, input2)
    return _aten()._cholesky_solve_helper.default(self, input2, upper)


@native
def cholesky_solve_out(self: Tensor, input2: Tensor, upper: bool, out: Tensor) -> Tensor:
    return copy_into(cholesky_solve(self, input2, upper), out, "cholesky_solve")


@native
def cholesky_inverse(self: Tensor, upper: bool = False) -> Tensor:
    check_square(self, "cholesky_inverse")
    if not (self._dtype.is_floating_point or self._dtype.is_complex) or self._dtype in (
            dt.float16, dt.bfloat16, dt.complex32):
        raise NotImplementedError(
            f'"cholesky_inverse_out_cpu" not implemented for \'{self._dtype.scalar_name}\''
        )
    result = empty_tensor(self._sizes, self._dtype, self._device, column_major(self._sizes))
    if self._device.type == "meta" or result.numel() == 0:
        return result
    factor = self._numpy()
    n = factor.shape[-1]
    eye = np.eye(n, dtype=factor.dtype)
    solve = scipy_linalg.load().cho_solve
    x = np.empty(factor.shape, factor.dtype)
    for index in batches(factor.shape[:-2]):
        x[index] = solve((factor[index], not upper), eye, check_finite=False)
    _store(result, x)
    return result


@native
def cholesky_inverse_out(self: Tensor, upper: bool, out: Tensor) -> Tensor:
    return copy_into(cholesky_inverse(self, upper), out, "cholesky_inverse")
