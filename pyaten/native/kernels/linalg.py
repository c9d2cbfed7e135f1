"""Matrix products: mm and bmm (structured), and matmul (a composite over them).

Note: matmul's dimension rules, as PyTorch applies them. Both operands need at least one
dimension. 1-d @ 1-d is a dot product (0-d result); 2-d @ 1-d a matrix-vector product;
1-d @ 2-d a vector-matrix product (the vector is treated as a row and the row dim removed
again); 2-d @ 2-d is `mm`. Anything with three or more dims is batched: the last two dims of
each operand are the matrices (a 1-d operand becomes a row or a column that is removed from
the result), the leading dims broadcast, and the product runs as one `bmm` over the flattened
batch. Every step here calls an op through the dispatcher.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.accel import ACCEL
from pyaten.core.broadcast import new_row_major
from pyaten.core.device import CPU
from pyaten.core.tensor import Tensor
from pyaten.native import fastpath
from pyaten.native.kernels.copy import CPP_DTYPE_NAMES, assign, check_out_dtype
from pyaten.native.kernels.shape import format_shape
from pyaten.native.mathbits import MATH_BITS, reads_math_bits
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import quiet_call, resize_output


def compute_dtype(dtype) -> np.dtype:
    """The NumPy dtype a product of `dtype` operands is computed in (kernels/blas.py too)."""
    if dtype is dt.float16 or dtype is dt.bfloat16:
        return np.dtype(np.float32)
    if dtype.is_integral:
        return np.dtype(np.int64)
    return dtype.numpy


def _check_same_dtype(a: Tensor, b: Tensor) -> None:
    if a._dtype is not b._dtype:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{CPP_DTYPE_NAMES[a.dtype.scalar_name]} != {CPP_DTYPE_NAMES[b.dtype.scalar_name]}"
        )


def _check_not_bool(dtype, kernel: str) -> None:
    if dtype is dt.bool or dtype is dt.complex32:  # neither has a CPU matmul in PyTorch
        raise NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_name}\'')


def product(a: np.ndarray, b: np.ndarray, out_dtype) -> np.ndarray:
    """a @ b in the compute dtype of `out_dtype` (integers wrap as C++ does)."""
    acc = compute_dtype(out_dtype)
    if a.dtype != acc:
        a = a.astype(acc)
    if b.dtype != acc:
        b = b.astype(acc)
    return quiet_call(np.matmul, a, b)


# --- mm ----------------------------------------------------------------------------------


@native
def meta_mm(op, self: Tensor, mat2: Tensor) -> None:
    if len(self._sizes) != 2:
        raise RuntimeError("self must be a matrix")
    if len(mat2._sizes) != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_same_dtype(self, mat2)
    (n, k), (k2, m) = self._sizes, mat2._sizes
    if k != k2:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})"
        )
    op.set_output(0, (n, m), self._dtype, self._device)


@native
@reads_math_bits(outputs=1)  # mm falls through the math-bit keys (Note: math bits)
def mm_out_cpu(op, self: Tensor, mat2: Tensor, out: Tensor) -> None:
    _check_not_bool(self._dtype, "addmm_impl_cpu_")
    a, b, target = self._numpy(), mat2._numpy(), out._numpy()
    acc = compute_dtype(out._dtype)
    if op.kind == "functional" and a.dtype == b.dtype == target.dtype == acc:
        # A new output cannot overlap the inputs: the product goes straight into it.
        quiet_call(np.matmul, a, b, out=target)
        return
    assign(target, product(a, b, out._dtype))


def _fast_mm(self: Tensor, mat2: Tensor):
    """mm's fast path (Note: the structured fast path): two floating or complex CPU
    matrices of one dtype, the product straight into a new row-major result."""
    dtype = self._dtype
    sizes, sizes2 = self._sizes, mat2._sizes
    if (dtype not in fastpath.INEXACT or mat2._dtype is not dtype or len(sizes) != 2
            or len(sizes2) != 2 or sizes[1] != sizes2[0] or self._device is not CPU
            or mat2._device is not CPU or (self._keyset | mat2._keyset) & MATH_BITS):
        return None
    out = new_row_major((sizes[0], sizes2[1]), dtype, CPU)
    a, b = fastpath.array(self), fastpath.array(mat2)
    # NumPy's own matmul loop without the ufunc call (Note: mm's product through NumPy's own
    # matmul loop, csrc/accel.c): the same bits
    if _MATMUL is None or not _MATMUL(a, b, out._np):
        fastpath.run_quiet(np.matmul, a, b, out=out._np)
    return out


_MATMUL = ACCEL.matmul_small if ACCEL is not None else None


fastpath.register("mm", _fast_mm, None, __file__)


# --- bmm ---------------------------------------------------------------------------------


@native
def meta_bmm(op, self: Tensor, mat2: Tensor) -> None:
    if len(self._sizes) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if len(mat2._sizes) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _check_same_dtype(self, mat2)
    b, n, k = self._sizes
    if mat2._sizes[:2] != (b, k):
        raise RuntimeError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"{format_shape((b, k))} but got: {format_shape(mat2._sizes[:2])}."
        )
    op.set_output(0, (b, n, mat2._sizes[2]), self.dtype, self.device)


@native
@reads_math_bits(outputs=1)
def bmm_out_cpu(op, self: Tensor, mat2: Tensor, out: Tensor) -> None:
    _check_not_bool(self.dtype, "bmm")
    assign(out._numpy(), product(self._numpy(), mat2._numpy(), out.dtype))


# --- matmul ------------------------------------------------------------------------------


def _broadcast_batch(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    shape = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {i}"
            )
        shape.append(y if x == 1 else x)
    return tuple(shape)


@native
def matmul(self: Tensor, other: Tensor) -> Tensor:
    aten = _aten()
    d1, d2 = len(self._sizes), len(other._sizes)
    if d1 == 0 or d2 == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {d1}D and {d2}D"
        )
    if d1 == 1 and d2 == 1:
        n1, n2 = self._sizes[0], other._sizes[0]
        if n1 != n2:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{n1}] and src [{n2}] to have the "
                f"same number of elements, but got {n1} and {n2} elements respectively"
            )
        return aten.dot.default(self, other)  # as PyTorch (dot reads the conj bits)
    if d1 == 2 and d2 == 1:
        (n, k), m = self._sizes, other._sizes[0]
        if k != m:
            raise RuntimeError(f"size mismatch, got input ({n}), mat ({n}x{k}), vec ({m})")
        product = aten.mm.default(self, aten.unsqueeze.default(other, 1))
        return aten.squeeze_.dim(product, -1)  # the fresh product squeezed in place, as PyTorch
    if d1 == 1 and d2 == 2:
        product = aten.mm.default(aten.unsqueeze.default(self, 0), other)
        return aten.squeeze_.dim(product, 0)
    if d1 == 2 and d2 == 2:
        return aten.mm.default(self, other)
    return _batched_matmul(aten, self, other)


def _batched_matmul(aten, self: Tensor, other: Tensor) -> Tensor:
    d1, d2 = len(self._sizes), len(other._sizes)
    # a 1-d operand becomes a row (left) or a column (right), removed from the result later
    a = aten.unsqueeze.default(self, 0) if d1 == 1 else self
    b = aten.unsqueeze.default(other, 1) if d2 == 1 else other
    n, k = a._sizes[-2:]
    k2, m = b._sizes[-2:]
    if d2 == 1 or d2 == 2:
        rows = 1
        for s in a._sizes[:-1]:
            rows *= s
        if k != k2:
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and {k2}x{m})"
            )
        # fold the batch of the left operand into its rows: one mm
        folded = aten.reshape.default(a, (rows, k))
        product = aten.mm.default(folded, b)
        result = aten.view.default(product, a._sizes[:-1] + (m,))
        return aten.squeeze.dim(result, -1) if d2 == 1 else result
    batch = _broadcast_batch(a._sizes[:-2], b._sizes[:-2])
    count = 1
    for s in batch:
        count *= s
    a3 = aten.reshape.default(aten.expand.default(a, batch + (n, k)), (count, n, k))
    b3 = aten.reshape.default(aten.expand.default(b, batch + (k2, m)), (count, k2, m))
    product = aten.bmm.default(a3, b3)
    result = aten.view.default(product, batch + (n, m))
    if d1 == 1:
        result = aten.squeeze.dim(result, -2)
    if d2 == 1:
        result = aten.squeeze.dim(result, -1)
    return result


@native
def matmul_out(self: Tensor, other: Tensor, out: Tensor) -> Tensor:
    result = matmul(self, other)
    check_out_dtype(out, result.dtype)
    resize_output(out, result._sizes, "matmul")
    return _aten().copy_.default(out, result)
