"""`pyaten.linalg`'s norms: `linalg_vector_norm` (structured, CPU and Meta; its NumPy
reduction is reduce.py's, shared with `norm`), and the composites `linalg_matrix_norm`
(Frobenius, nuclear, spectral through `svdvals`, and the 1/inf norms through
`vector_norm` + `amax`/`amin`) and `linalg_norm`, in PyTorch's order of checks.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core.tensor import Tensor
from pyaten.native import reduction as R
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.linalg_ops import check_floating, check_matrix
from pyaten.native.kernels.reduce import _norm_meta, _repeated_norm
from pyaten.native.kernels.shape import format_shape, wrap_dim
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import quiet_call

# --- linalg.vector_norm (structured), linalg.matrix_norm, linalg.norm -----------------------------


def _vector_norm_checks(self: Tensor, ord, dtype) -> None:  # noqa: A002
    if not (self._dtype.is_floating_point or self._dtype.is_complex):
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{self._dtype.scalar_name}"
        )
    if isinstance(ord, complex):
        raise RuntimeError(
            "linalg.vector_norm: Expected a non-complex scalar as the order of norm."
        )
    if dtype is None:
        return
    if dtype.is_complex and not self._dtype.is_complex:
        raise RuntimeError(
            f"linalg.vector_norm: dtype should be real for real inputs. Got pyaten.{dtype.name}"
        )
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(
            "linalg.vector_norm: dtype should be floating point or complex, but got "
            f"{dtype.scalar_name}"
        )
    if self._dtype.is_complex and not dtype.is_complex:
        raise RuntimeError(
            "linalg.vector_norm: dtype should be complex for complex inputs, but got "
            f"{dtype.scalar_name}"
        )
    from pyaten.core.promotion import promote_types

    if promote_types(self._dtype, dtype) is not dtype:
        raise RuntimeError(
            f"linalg.vector_norm: the dtype of the input ({self._dtype.scalar_name}) should be "
            f"convertible without narrowing to the specified dtype ({dtype.scalar_name})"
        )


def _check_unique_dims(dim, ndim: int) -> None:
    if dim is None:
        return
    seen = set()
    for d in dim:
        w = wrap_dim(d, ndim)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.add(w)


@native
def meta_linalg_vector_norm(op, self: Tensor, ord=2, dim=None, keepdim: bool = False,  # noqa: A002
                            dtype=None) -> None:
    _vector_norm_checks(self, ord, dtype)
    _check_unique_dims(dim, max(len(self._sizes), 1))
    _, _, _, sizes = _norm_meta(self, ord, dim, keepdim, None)
    result_dtype = (dtype if dtype is not None else self._dtype).to_real()
    op.set_output(0, sizes, result_dtype, self._device)


@native
def linalg_vector_norm_out(op, self: Tensor, ord, dim, keepdim: bool, dtype,  # noqa: A002
                           out: Tensor) -> None:
    p = float(ord)
    dims = R.reduction_dims(dim, len(self._sizes))
    source = self._dtype if dtype is None else dtype
    # broadcast dims read once (Note: reductions over broadcast dims)
    a, copies = R.broadcast_source(self, dims, R.accumulate_dtype(source))
    if a.ndim == 0:
        a = a.reshape(())
    value = quiet_call(_repeated_norm, a, p, dims, keepdim, copies)
    assign(R.output_array(out), np.asarray(value))


def _matrix_norm_dims(A: Tensor, dim) -> tuple[int, int]:  # noqa: N803
    check_matrix(A, "linalg.matrix_norm")
    check_floating(A, "linalg.matrix_norm", low_precision=True)
    if len(dim) != 2:
        raise RuntimeError(
            f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}"
        )
    d0, d1 = wrap_dim(dim[0], A.dim()), wrap_dim(dim[1], A.dim())
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    return d0, d1


def _order_text(ord) -> str:  # noqa: A002
    if isinstance(ord, float) and ord.is_integer() and not math.isinf(ord):
        return str(int(ord))
    return str(ord)


def _svdvals_norm(A: Tensor, d0: int, d1: int, keepdim: bool, dtype, largest: bool,  # noqa: N803
                  total: bool = False) -> Tensor:
    aten = _aten()
    if dtype is not None:
        A = aten._to_copy.default(A, dtype=dtype)  # noqa: N806
    rest = [d for d in range(A.dim()) if d not in (d0, d1)]
    moved = aten.permute.default(A, rest + [d0, d1])
    values = aten.linalg_svdvals.default(moved, None)
    if total:
        result = aten.sum.dim_IntList(values, [-1], False, None)
    elif largest:
        result = aten.amax.default(values, [-1], False)
    else:
        result = aten.amin.default(values, [-1], False)
    if keepdim:
        for d in sorted((d0, d1)):
            result = aten.unsqueeze.default(result, d)
    return result


@native
def linalg_matrix_norm(self: Tensor, ord, dim=(-2, -1), keepdim: bool = False,  # noqa: A002
                       dtype=None) -> Tensor:
    d0, d1 = _matrix_norm_dims(self, dim)
    magnitude = abs(ord)
    if magnitude not in (1, 2, math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {_order_text(ord)} not supported.")
    if magnitude == 2:
        return _svdvals_norm(self, d0, d1, keepdim, dtype, ord > 0)
    aten = _aten()
    if magnitude == math.inf:
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    sums = aten.linalg_vector_norm.default(self, 1, [d0], keepdim, dtype)
    if ord > 0:
        return aten.amax.default(sums, [d1], keepdim)
    return aten.amin.default(sums, [d1], keepdim)


@native
def linalg_matrix_norm_str_ord(self: Tensor, ord="fro", dim=(-2, -1),  # noqa: A002
                               keepdim: bool = False, dtype=None) -> Tensor:
    d0, d1 = _matrix_norm_dims(self, dim)
    if ord == "fro":
        return _aten().linalg_vector_norm.default(self, 2, [d0, d1], keepdim, dtype)
    if ord == "nuc":
        return _svdvals_norm(self, d0, d1, keepdim, dtype, True, total=True)
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def _copy_out(result: Tensor, out: Tensor, name: str) -> Tensor:
    from pyaten.native.structured import resize_output

    if out._dtype is not result._dtype:
        raise RuntimeError(
            f"linalg.{name} expected out tensor dtype {result._dtype.scalar_name} but got: "
            f"{out._dtype.scalar_name}"
        )
    resize_output(out, result._sizes, name)
    return _aten().copy_.default(out, result, False)


@native
def linalg_matrix_norm_out(self, ord, dim, keepdim, dtype, out: Tensor) -> Tensor:  # noqa: A002
    return _copy_out(linalg_matrix_norm(self, ord, dim, keepdim, dtype), out, "matrix_norm")


@native
def linalg_matrix_norm_str_ord_out(self, ord, dim, keepdim, dtype, out: Tensor) -> Tensor:  # noqa: A002, N802
    return _copy_out(linalg_matrix_norm_str_ord(self, ord, dim, keepdim, dtype), out,
                     "matrix_norm")


def _norm_dims_check(self: Tensor, ord, dim) -> None:  # noqa: A002
    if dim is not None:
        if len(dim) not in (1, 2):
            raise RuntimeError(
                "linalg.norm: If dim is specified, it must be of length 1 or 2. Got "
                f"{format_shape(dim)}"
            )
    elif ord is not None and self.dim() not in (1, 2):
        raise RuntimeError(
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
            f"{self.dim()}D."
        )


@native
def linalg_norm(self: Tensor, ord=None, dim=None, keepdim: bool = False,  # noqa: A002
                dtype=None) -> Tensor:
    _norm_dims_check(self, ord, dim)
    aten = _aten()
    if ord is not None and ((dim is not None and len(dim) == 2)
                            or (dim is None and self.dim() == 2)):
        return aten.linalg_matrix_norm.default(self, ord, list(dim or (0, 1)), keepdim, dtype)
    return aten.linalg_vector_norm.default(self, 2 if ord is None else ord, dim, keepdim, dtype)


@native
def linalg_norm_ord_str(self: Tensor, ord: str, dim=None, keepdim: bool = False,  # noqa: A002
                        dtype=None) -> Tensor:
    if dim is not None:
        _norm_dims_check(self, ord, dim)
    elif self.dim() not in (1, 2):
        raise RuntimeError(
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
            f"{self.dim()}D."
        )
    return _aten().linalg_matrix_norm.str_ord(self, ord, list(dim or (-2, -1)), keepdim, dtype)


@native
def linalg_norm_out(self, ord, dim, keepdim, dtype, out: Tensor) -> Tensor:  # noqa: A002
    return _copy_out(linalg_norm(self, ord, dim, keepdim, dtype), out, "norm")


@native
def linalg_norm_ord_str_out(self, ord, dim, keepdim, dtype, out: Tensor) -> Tensor:  # noqa: A002
    return _copy_out(linalg_norm_ord_str(self, ord, dim, keepdim, dtype), out, "norm")
