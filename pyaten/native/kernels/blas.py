"""The BLAS-like products of the torch namespace: addmm addmv addr baddbmm addbmm, mv dot vdot,
and the composites PyTorch builds on them: outer/ger inner kron tensordot chain_matmul.
(einsum, cross and cdist live in kernels/contract.py.)

Note: beta, alpha and `self`
    Every `add*` op computes `beta * self + alpha * product`, `self` broadcast (expanded) to
    the product's shape with expand's error. When beta is 0 `self` is not read at all, so a
    NaN or inf in it does not reach the result (PyTorch documents this). beta and alpha are
    cast to the result dtype as C++ casts a Scalar (a complex one for a real result raises
    ATen's overflow error). Products run in the accumulation dtype (float32 for float16 and
    bfloat16, int64 for integers, which wraps as C++ does) and are rounded once when stored.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.accel import ACCEL
from pyaten.core.broadcast import new_row_major
from pyaten.core.device import CPU
from pyaten.core.promotion import can_cast, result_type
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native import fastpath
from pyaten.native.kernels.copy import CPP_DTYPE_NAMES, assign, checked_scalar
from pyaten.native.kernels.linalg import compute_dtype, product
from pyaten.native.kernels.shape import format_shape, wrap_dim
from pyaten.native.mathbits import MATH_BITS, dot_reads_math_bits, reads_math_bits
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native
from pyaten.native.structured import quiet_call, resize_output


def _not_implemented(kernel: str, dtype: dt.dtype) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{dtype.scalar_name}\'')


def _check_no_bool(dtype: dt.dtype, kernel: str) -> None:
    if dtype is dt.bool or dtype is dt.complex32:  # no CPU BLAS loop for either
        raise _not_implemented(kernel, dtype)


def _scalar(value, dtype: dt.dtype, acc: np.dtype):
    """beta or alpha as the result dtype's C++ value, held in the accumulation dtype."""
    return np.asarray(checked_scalar(value, dtype)).astype(acc)


def _axpby(prod: np.ndarray, addend: Tensor, beta, alpha, dtype: dt.dtype) -> np.ndarray:
    """alpha * prod + beta * addend, `addend` broadcast (see Note: beta, alpha and `self`)."""
    acc = prod.dtype
    if alpha != 1:
        prod = np.multiply(prod, _scalar(alpha, dtype, acc), out=prod)
    if beta == 0:
        return prod
    term = addend._numpy().astype(acc, copy=False)
    if beta != 1:
        term = term * _scalar(beta, dtype, acc)
    return np.add(prod, term, out=prod)


def _expanded(self: Tensor, sizes: tuple) -> None:
    """Raise expand's error when `self` does not broadcast to `sizes`."""
    have = self._sizes
    if len(have) <= len(sizes):
        offset = len(sizes) - len(have)
        if all(h == 1 or h == sizes[offset + i] for i, h in enumerate(have)):
            return
    _aten().expand.default(self, sizes, False)  # raises expand's message


def _scaled_self(self: Tensor, beta, out: Tensor, sizes: tuple) -> None:
    """out = beta * self (expanded) when the product is empty: ATen copies `self` and
    multiplies in place, so beta's type promotes as a Python scalar there (a bool result with
    an int beta raises its cast error)."""
    aten = _aten()
    if beta == 0:
        aten.zero_.default(out)
        return
    if out is not self:
        aten.copy_.default(out, aten.expand.default(self, sizes, False), False)
    aten.mul_.Scalar(out, beta)


def _dtype_name(dtype: dt.dtype) -> str:
    return dtype.scalar_name


def _set_output(op, sizes: tuple, like: Tensor) -> None:
    """op.set_output, with ATen's unprefixed message for a mismatched in-place `self`."""
    if op.kind == "inplace":
        target = op.maybe_get_output(0)
        if target._dtype is not like._dtype:
            raise RuntimeError(
                f"Bad in-place call: input tensor dtype {target._dtype.cpp_name} and output "
                f"tensor dtype {like._dtype.cpp_name} should match"
            )
        if tuple(target._sizes) != tuple(sizes):
            raise RuntimeError(
                f"Bad in-place call: input tensor size {format_shape(target._sizes)} and output "
                f"tensor size {format_shape(sizes)} should match"
            )
    op.set_output(0, sizes, like._dtype, like._device)


# --- addmm (structured; nn.Linear's op) ---------------------------------------------------------


def _check_matrix(t: Tensor, name: str) -> None:
    if len(t._sizes) != 2:
        raise RuntimeError(f"{name} must be a matrix, got {len(t._sizes)}-D tensor")


def _check_pair_dtype(a: Tensor, b: Tensor, names: str) -> None:
    if a._dtype is not b._dtype:
        raise RuntimeError(
            f"{names} must have the same dtype, but got {_dtype_name(a._dtype)} and "
            f"{_dtype_name(b._dtype)}"
        )


def _addmm_checks(self: Tensor, mat1: Tensor, mat2: Tensor) -> tuple[int, int]:
    _check_matrix(mat1, "mat1")
    _check_matrix(mat2, "mat2")
    (n, k), (k2, m) = mat1._sizes, mat2._sizes
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    _check_pair_dtype(self, mat2, "self and mat2")
    _check_pair_dtype(mat1, mat2, "mat1 and mat2")
    return n, m


def _product_plus(a: np.ndarray, b: np.ndarray, c: np.ndarray, out: np.ndarray) -> None:
    np.matmul(a, b, out=out)
    np.add(out, c, out=out)


@native
def meta_addmm(op, self: Tensor, mat1: Tensor, mat2: Tensor, beta=1, alpha=1) -> None:
    n, m = _addmm_checks(self, mat1, mat2)
    if op.kind != "inplace" and self._device.type == "meta":
        _expanded(self, (n, m))  # on CPU the impl expands, after `out` is checked
    _set_output(op, (n, m), mat1)


@native
@reads_math_bits(outputs=1)  # addmm falls through the math-bit keys (Note: math bits)
def addmm_out_cpu(op, self: Tensor, mat1: Tensor, mat2: Tensor, beta, alpha, out: Tensor) -> None:
    dtype = out._dtype
    if op.kind != "inplace":
        _expanded(self, out._sizes)
    if out.numel() == 0:
        return
    if mat1._sizes[1] == 0:
        _scaled_self(self, beta, out, out._sizes)
        return
    _check_no_bool(dtype, "addmm_impl_cpu_")
    a, b, target = mat1._numpy(), mat2._numpy(), out._numpy()
    acc = compute_dtype(dtype)
    if (beta == 1 and alpha == 1 and op.kind == "functional" and a.dtype == acc
            and b.dtype == acc and target.dtype == acc):
        # nn.Linear's case: the product straight into the new output, then the bias added
        quiet_call(_product_plus, a, b, self._numpy(), target)
        return
    assign(target, quiet_call(_axpby, product(a, b, dtype), self, beta, alpha, dtype))


def _fast_addmm(self: Tensor, mat1: Tensor, mat2: Tensor, beta, alpha):
    """addmm's fast path (Note: the structured fast path), nn.Linear's call: beta = alpha = 1,
    CPU operands of one floating or complex dtype, `self` the (m,) bias or an (n, m) matrix,
    a non-empty product; the general path's `_product_plus` into a new row-major result."""
    dtype = mat1._dtype
    sizes1, sizes2 = mat1._sizes, mat2._sizes
    if (beta.__class__ is not int or alpha.__class__ is not int or beta != 1 or alpha != 1
            or dtype not in fastpath.INEXACT or mat2._dtype is not dtype
            or self._dtype is not dtype or len(sizes1) != 2 or len(sizes2) != 2
            or sizes1[1] != sizes2[0] or not sizes1[1] or mat1._device is not CPU
            or mat2._device is not CPU or self._device is not CPU
            or (self._keyset | mat1._keyset | mat2._keyset) & MATH_BITS):
        return None
    sizes = (sizes1[0], sizes2[1])
    bias = self._sizes
    if not ((len(bias) == 1 and bias[0] == sizes[1]) or bias == sizes) or not sizes[0] * sizes[1]:
        return None
    out = new_row_major(sizes, dtype, CPU)
    a, b, c, target = fastpath.array(mat1), fastpath.array(mat2), fastpath.array(self), out._np
    if _MATMUL is not None and _MATMUL(a, b, target):  # `_product_plus`, its matmul in C
        fastpath.quiet(np.add, target, c, target)
    else:
        fastpath.quiet(_product_plus, a, b, c, target)
    return out


# NumPy's own matmul loop without the ufunc call (Note: mm's product through NumPy's own
# matmul loop, csrc/accel.c): the same bits
_MATMUL = ACCEL.matmul_small if ACCEL is not None else None


fastpath.register("addmm", _fast_addmm, None, __file__)


# --- addmv, mv ----------------------------------------------------------------------------------


@native
def meta_addmv(op, self: Tensor, mat: Tensor, vec: Tensor, beta=1, alpha=1) -> None:
    d_self, d_mat, d_vec = len(self._sizes), len(mat._sizes), len(vec._sizes)
    if not (d_mat == 2 and d_vec == 1 and d_self <= 1):
        raise RuntimeError(f"vector + matrix @ vector expected, got {d_self}, {d_mat}, {d_vec}")
    (n, k), m = mat._sizes, vec._sizes[0]
    numel = 1 if d_self == 0 else self._sizes[0]
    if k != m or not (numel == 1 or numel == n):
        if d_self == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        raise RuntimeError(f"size mismatch, got input ({numel}), mat ({n}x{k}), vec ({m})")
    if not (self._dtype is mat._dtype is vec._dtype):
        raise RuntimeError(
            "addmv input tensors must have the same dtype, but got "
            f"{_dtype_name(self._dtype)}, {_dtype_name(mat._dtype)}, and "
            f"{_dtype_name(vec._dtype)}"
        )
    sizes = (n,)
    if mat.numel() == 0 and beta != 0 and op.kind != "inplace":
        sizes = self._sizes  # ATen multiplies the unexpanded `self` into the result
    _set_output(op, sizes, mat)


@native
def addmv_out_cpu(op, self: Tensor, mat: Tensor, vec: Tensor, beta, alpha, out: Tensor) -> None:
    dtype = out._dtype
    if mat.numel() == 0:
        if beta == 0:
            _aten().zero_.default(out)
        else:  # ATen multiplies the unexpanded self into out (resizing it to self's shape)
            factor = empty_tensor((), self._dtype, self._device)
            _aten().fill_.Scalar(factor, beta)
            _aten().mul.out(self, factor, out=out)
        return
    _check_no_bool(dtype, "addmv_impl_cpu")
    prod = product(mat._numpy(), vec._numpy(), dtype)
    assign(out._numpy(), quiet_call(_axpby, prod, self, beta, alpha, dtype))


@native
def mv(self: Tensor, vec: Tensor) -> Tensor:
    if not self._sizes:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    result = empty_tensor((self._sizes[0],), vec._dtype, vec._device)
    return _aten().addmv_.default(result, self, vec, 0, 1)


@native
def mv_out(self: Tensor, vec: Tensor, out: Tensor) -> Tensor:
    if not self._sizes:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    n = self._sizes[0]
    if len(out._sizes) > 1 or (out.numel() != n and out.numel() != 1):
        # addmv's `self` must fit; with beta 0 its values are never read
        addend = empty_tensor((n,), vec._dtype, vec._device)
        return _aten().addmv.out(addend, self, vec, 0, 1, out=out)
    return _aten().addmv.out(out, self, vec, 0, 1, out=out)


# --- dot, vdot ----------------------------------------------------------------------------------


def _dot(self: Tensor, other: Tensor, kernel: str, conj: bool) -> Tensor:
    d1, d2 = len(self._sizes), len(other._sizes)
    if d1 != 1 or d2 != 1:
        raise RuntimeError(f"1D tensors expected, but got {d1}D and {d2}D tensors")
    if self._dtype is not other._dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{_dtype_name(self._dtype)} and {_dtype_name(other._dtype)}"
        )
    n1, n2 = self._sizes[0], other._sizes[0]
    if n1 != n2:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{n1}] and src [{n2}] to have the same "
            f"number of elements, but got {n1} and {n2} elements respectively"
        )
    dtype = self._dtype
    result = empty_tensor((), dtype, self._device)
    if self._device.type == "meta":
        return result
    _check_no_bool(dtype, kernel)
    acc = compute_dtype(dtype)
    a, b = self._numpy().astype(acc, copy=False), other._numpy().astype(acc, copy=False)
    value = quiet_call(np.vdot if conj else np.dot, a, b)
    assign(result._numpy(), np.asarray(value))
    return result


@native
@dot_reads_math_bits  # falls through Conjugate (Note: math bits)
def dot(self: Tensor, tensor: Tensor) -> Tensor:
    return _dot(self, tensor, "dot", False)


@native
@dot_reads_math_bits  # falls through Conjugate (Note: math bits)
def vdot(self: Tensor, other: Tensor) -> Tensor:
    return _dot(self, other, "dot", self._dtype.is_complex)


def _check_result_dtype(out: Tensor, self: Tensor) -> None:
    if out._dtype is not self._dtype:
        raise RuntimeError(
            f"result dtype {_dtype_name(out._dtype)} does not match input dtype "
            f"{_dtype_name(self._dtype)}"
        )


def _dot_into(result: Tensor, out: Tensor, name: str) -> Tensor:
    resize_output(out, (), name)
    return _aten().copy_.default(out, result, False)


@native
def dot_out(self: Tensor, tensor: Tensor, out: Tensor) -> Tensor:
    _check_result_dtype(out, self)
    return _dot_into(_aten().dot.default(self, tensor), out, "dot")


@native
def vdot_out(self: Tensor, other: Tensor, out: Tensor) -> Tensor:
    _check_result_dtype(out, self)
    return _dot_into(_aten().vdot.default(self, other), out, "vdot")


# --- addr ---------------------------------------------------------------------------------------


def _addr_checks(self: Tensor, vec1: Tensor, vec2: Tensor, beta, alpha) -> dt.dtype:
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if len(v._sizes) != 1:
            raise RuntimeError(
                f"addr: Expected 1-D argument {name}, but got {len(v._sizes)}-D"
            )
    dtype = result_type(self, vec1, vec2)
    for name, value in (("beta", beta), ("alpha", alpha)):
        if isinstance(value, bool) and dtype is not dt.bool:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if not (dtype.is_floating_point or dtype.is_complex):
            if isinstance(value, (float, complex)):
                raise RuntimeError(
                    f"For integral input tensors, argument {name} must not be a floating "
                    "point number."
                )
    return dtype


def _addr_compute(self: Tensor, vec1: Tensor, vec2: Tensor, beta, alpha, dtype) -> np.ndarray:
    acc = compute_dtype(dtype) if dtype is not dt.bool else np.dtype(bool)
    a = vec1._numpy().astype(acc, copy=False)
    b = vec2._numpy().astype(acc, copy=False)
    if dtype is dt.bool:
        outer = np.logical_and.outer(a, b) if alpha else np.zeros((a.size, b.size), bool)
        return outer | self._numpy().astype(bool) if beta else outer
    outer = np.multiply.outer(a, b)
    return _axpby(outer, self, beta, alpha, dtype)


def _addr_into(self, vec1, vec2, beta, alpha, out: Tensor | None) -> Tensor:
    dtype = _addr_checks(self, vec1, vec2, beta, alpha)
    sizes = (vec1._sizes[0], vec2._sizes[0])
    _expanded(self, sizes)
    if out is None:
        out = empty_tensor(sizes, dtype, self._device)
    elif not can_cast(dtype, out._dtype):
        raise RuntimeError(
            f"result type {_dtype_name(dtype)} can't be cast to the desired output type "
            f"{_dtype_name(out._dtype)}"
        )
    else:
        resize_output(out, sizes, "addr")
    if out._device.type != "meta" and out.numel():
        if dtype is dt.complex32:
            raise _not_implemented("addr_cpu", dtype)
        value = quiet_call(_addr_compute, self, vec1, vec2, beta, alpha, dtype)
        assign(out._numpy(), value)
        out._bump_version()
    return out


@native
def addr(self: Tensor, vec1: Tensor, vec2: Tensor, beta=1, alpha=1) -> Tensor:
    return _addr_into(self, vec1, vec2, beta, alpha, None)


@native
def addr_out(self: Tensor, vec1: Tensor, vec2: Tensor, beta, alpha, out: Tensor) -> Tensor:
    return _addr_into(self, vec1, vec2, beta, alpha, out)


@native
def math_addr(self: Tensor, vec1: Tensor, vec2: Tensor, beta=1, alpha=1) -> Tensor:
    return _addr_into(self, vec1, vec2, beta, alpha, None)


@native
def math_addr_out(self: Tensor, vec1: Tensor, vec2: Tensor, beta, alpha, out: Tensor) -> Tensor:
    return _addr_into(self, vec1, vec2, beta, alpha, out)


@native
def addr_(self: Tensor, vec1: Tensor, vec2: Tensor, beta=1, alpha=1) -> Tensor:
    if len(self._sizes) != 2:
        raise RuntimeError(f"2D tensor expected, got {len(self._sizes)}D tensor for input")
    if len(vec1._sizes) == len(vec2._sizes) == 1 and self._sizes != (vec1._sizes[0],
                                                                      vec2._sizes[0]):
        raise RuntimeError(
            f"size mismatch, input: {format_shape(self._sizes)}, v1: "
            f"{format_shape(vec1._sizes)}, v2: {format_shape(vec2._sizes)}"
        )
    return _aten().addr.out(self, vec1, vec2, beta, alpha, out=self)


# --- baddbmm (structured), addbmm ---------------------------------------------------------------


@native
def meta_baddbmm(op, self: Tensor, batch1: Tensor, batch2: Tensor, beta=1, alpha=1) -> None:
    if len(batch1._sizes) != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    last = wrap_dim(2, len(batch2._sizes))
    if len(batch2._sizes) != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    bs, n, k = batch1._sizes
    if batch2._sizes[:2] != (bs, k):
        raise RuntimeError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"{format_shape((bs, k))} but got: {format_shape(batch2._sizes[:2])}."
        )
    sizes = (bs, n, batch2._sizes[last])
    _expanded(self, sizes)
    if batch1._dtype is not batch2._dtype:
        raise RuntimeError(
            f"expected scalar type {_dtype_name(batch1._dtype)} but found "
            f"{_dtype_name(batch2._dtype)}"
        )
    if self._dtype is not batch1._dtype:
        names = CPP_DTYPE_NAMES
        raise RuntimeError(
            f"Input dtypes must be the same, got: input {names[self._dtype.scalar_name]}, "
            f"batch1: {names[batch1._dtype.scalar_name]}, "
            f"batch2: {names[batch2._dtype.scalar_name]}"
        )
    _set_output(op, sizes, batch1)


@native
@reads_math_bits(outputs=1)
def baddbmm_out_cpu(op, self: Tensor, batch1, batch2, beta, alpha, out: Tensor) -> None:
    dtype = out._dtype
    if out.numel() == 0:
        return
    if batch1._sizes[2] == 0:
        _scaled_self(self, beta, out, out._sizes)
        return
    _check_no_bool(dtype, "baddbmm")
    prod = product(batch1._numpy(), batch2._numpy(), dtype)
    assign(out._numpy(), quiet_call(_axpby, prod, self, beta, alpha, dtype))


def _addbmm_into(self: Tensor, batch1: Tensor, batch2: Tensor, beta, alpha,
                 out: Tensor | None) -> Tensor:
    for name, b in (("batch1", batch1), ("batch2", batch2)):
        if len(b._sizes) != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    (bs, n, k), (bs2, k2, m) = batch1._sizes, batch2._sizes
    if bs != bs2:
        raise RuntimeError(
            f"batch1 and batch2 must have same number of batches, got {bs} and {bs2}"
        )
    if k != k2:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({n}x{k} and {k2}x{m})")
    _expanded(self, (n, m))
    # ATen copies `self` into the result and runs addmm_ on it: the result's dtype is checked
    _check_pair_dtype(self if out is None else out, batch2, "self and mat2")
    _check_pair_dtype(batch1, batch2, "mat1 and mat2")
    dtype = self._dtype if out is None else out._dtype
    if out is None:
        out = empty_tensor((n, m), dtype, self._device)
    elif out is self and self._sizes != (n, m):
        # addbmm_ resizes `self` to the result (its old values broadcast into every row)
        self = _aten().clone.default(_aten().expand.default(self, (n, m), False), None)
        resize_output(out, (n, m), "addbmm")
    elif out is not self:
        resize_output(out, (n, m), "addbmm")
    if out._device.type != "meta" and out.numel():
        if bs == 0 or k == 0:
            _scaled_self(self, beta, out, (n, m))
            out._bump_version()
            return out
        _check_no_bool(dtype, "addmm_impl_cpu_")
        prod = product(batch1._numpy(), batch2._numpy(), dtype).sum(axis=0, dtype=None)
        prod = np.asarray(prod, dtype=compute_dtype(dtype))
        assign(out._numpy(), quiet_call(_axpby, prod, self, beta, alpha, dtype))
        out._bump_version()
    return out


@native
def addbmm(self: Tensor, batch1: Tensor, batch2: Tensor, beta=1, alpha=1) -> Tensor:
    return _addbmm_into(self, batch1, batch2, beta, alpha, None)


@native
def addbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, beta=1, alpha=1) -> Tensor:
    return _addbmm_into(self, batch1, batch2, beta, alpha, self)


@native
def addbmm_out(self: Tensor, batch1: Tensor, batch2: Tensor, beta, alpha, out: Tensor) -> Tensor:
    return _addbmm_into(self, batch1, batch2, beta, alpha, out)


# --- composites: outer/ger, inner, kron, tensordot, chain_matmul --------------------------------


def _check_vector(t: Tensor, op: str, name: str) -> None:
    if len(t._sizes) != 1:
        raise RuntimeError(f"{op}: Expected 1-D argument {name}, but got {len(t._sizes)}-D")


@native
def outer(self: Tensor, vec2: Tensor) -> Tensor:
    _check_vector(self, "outer", "self")
    _check_vector(vec2, "outer", "vec2")
    aten = _aten()
    return aten.mul.Tensor(aten.reshape.default(self, (self._sizes[0], 1)), vec2)


@native
def outer_out(self: Tensor, vec2: Tensor, out: Tensor) -> Tensor:
    _check_vector(self, "outer", "self")
    _check_vector(vec2, "outer", "vec2")
    aten = _aten()
    return aten.mul.out(aten.reshape.default(self, (self._sizes[0], 1)), vec2, out=out)


@native
def ger(self: Tensor, vec2: Tensor) -> Tensor:
    return _aten().outer.default(self, vec2)


@native
def ger_out(self: Tensor, vec2: Tensor, out: Tensor) -> Tensor:
    return _aten().outer.out(self, vec2, out=out)


def _inner_checks(self: Tensor, other: Tensor) -> bool:
    """True when one operand is 0-d (inner is then a product)."""
    if not self._sizes or not other._sizes:
        return True
    if self._sizes[-1] != other._sizes[-1]:
        raise RuntimeError(
            "inner() the last dimension must match on both input tensors but got shapes "
            f"{format_shape(self._sizes)} and {format_shape(other._sizes)}"
        )
    return False


@native
def inner(self: Tensor, other: Tensor) -> Tensor:
    aten = _aten()
    if _inner_checks(self, other):
        return aten.mul.Tensor(self, other)
    return aten.tensordot.default(self, other, (-1,), (-1,))


@native
def inner_out(self: Tensor, other: Tensor, out: Tensor) -> Tensor:
    aten = _aten()
    if _inner_checks(self, other):
        return aten.mul.out(self, other, out=out)
    return aten.tensordot.out(self, other, (-1,), (-1,), out=out)


def _kron_views(self: Tensor, other: Tensor) -> tuple[Tensor, Tensor, tuple]:
    """Both operands reshaped so that one broadcasting product lays out the Kronecker product:
    self's dims interleaved with size-1 dims before other's (a, 1, b, 1) * (1, c, 1, d)."""
    aten = _aten()
    nd = max(len(self._sizes), len(other._sizes))
    a = (1,) * (nd - len(self._sizes)) + tuple(self._sizes)
    b = (1,) * (nd - len(other._sizes)) + tuple(other._sizes)
    a_view, b_view, sizes = [], [], []
    for x, y in zip(a, b):
        a_view += [x, 1]
        b_view += [1, y]
        sizes.append(x * y)
    return (aten.reshape.default(self, tuple(a_view)), aten.reshape.default(other, tuple(b_view)),
            tuple(sizes))


@native
def kron(self: Tensor, other: Tensor) -> Tensor:
    a, b, sizes = _kron_views(self, other)
    return _aten().reshape.default(_aten().mul.Tensor(a, b), sizes)


@native
def kron_out(self: Tensor, other: Tensor, out: Tensor) -> Tensor:
    a, b, sizes = _kron_views(self, other)
    result = _aten().mul.Tensor(a, b)
    if not can_cast(result._dtype, out._dtype):
        raise RuntimeError(
            f"result type {_dtype_name(result._dtype)} can't be cast to the desired output type "
            f"{_dtype_name(out._dtype)}"
        )
    resize_output(out, sizes, "kron")
    return _aten().copy_.default(out, _aten().reshape.default(result, sizes), False)


def _tensordot_plan(self: Tensor, other: Tensor, dims_self, dims_other):
    """(self as a matrix, other as a matrix, result sizes): the kept dims of self, then the
    contracted ones, times the contracted dims of other, then its kept ones."""
    aten = _aten()
    if len(dims_self) != len(dims_other):
        raise RuntimeError("both dimension lists should have same length")
    if self._dtype is not other._dtype:
        raise RuntimeError("both inputs should have same dtype")
    n1, n2 = len(self._sizes), len(other._sizes)
    seen1, seen2 = set(), set()
    csize = 1
    for d1, d2 in zip(dims_self, dims_other):
        w1, w2 = wrap_dim(d1, n1), wrap_dim(d2, n2)
        s1, s2 = self._sizes[w1], other._sizes[w2]
        if s2 == 1 and s1 != 1:  # a size-1 dim contracts against a sum of the other's
            self = aten.sum.dim_IntList(self, [w1], True, self._dtype)
            s1 = 1
        elif s1 == 1 and s2 != 1:
            other = aten.sum.dim_IntList(other, [w2], True, other._dtype)
            s2 = 1
        if s1 != s2:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {s1} in dim {d1} "
                f"and second has size {s2} in dim {d2}"
            )
        for w, seen in ((w1, seen1), (w2, seen2)):
            if w in seen:
                raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
            seen.add(w)
        csize *= s1
    c1 = [wrap_dim(d, n1) for d in dims_self]
    c2 = [wrap_dim(d, n2) for d in dims_other]
    keep1 = [d for d in range(n1) if d not in seen1]
    keep2 = [d for d in range(n2) if d not in seen2]
    rows, cols = 1, 1
    for d in keep1:
        rows *= self._sizes[d]
    for d in keep2:
        cols *= other._sizes[d]
    sizes = tuple(self._sizes[d] for d in keep1) + tuple(other._sizes[d] for d in keep2)
    left = aten.reshape.default(aten.permute.default(self, keep1 + c1), (rows, csize))
    right = aten.reshape.default(aten.permute.default(other, c2 + keep2), (csize, cols))
    return left, right, sizes


@native
def tensordot(self: Tensor, other: Tensor, dims_self, dims_other) -> Tensor:
    if len(self._sizes) == len(other._sizes) == len(dims_self) == len(dims_other) == 1:
        _tensordot_plan(self, other, dims_self, dims_other)  # the checks
        return _aten().dot.default(self, other)
    left, right, sizes = _tensordot_plan(self, other, dims_self, dims_other)
    return _aten().reshape.default(_aten().mm.default(left, right), sizes)


@native
def tensordot_out(self: Tensor, other: Tensor, dims_self, dims_other, out: Tensor) -> Tensor:
    left, right, sizes = _tensordot_plan(self, other, dims_self, dims_other)
    result = _aten().mm.default(left, right)
    if out._dtype is not result._dtype:
        raise RuntimeError(
            f"tensordot: Expected the output tensor to have dtype {_dtype_name(result._dtype)}, "
            f"but got an output tensor with dtype {_dtype_name(out._dtype)}"
        )
    resize_output(out, sizes, "tensordot")
    return _aten().copy_.default(out, _aten().reshape.default(result, sizes), False)


def _chain_matmul_checks(matrices) -> None:
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if len(m._sizes) != 2:
            raise RuntimeError(f"Tensor dimension is {len(m._sizes)}, expected 2 instead.")


@native
def chain_matmul(matrices) -> Tensor:
    _chain_matmul_checks(matrices)
    if len(matrices) == 1:
        return _aten().clone.default(matrices[0], None)
    return _aten().linalg_multi_dot.default(matrices)


@native
def chain_matmul_out(matrices, out: Tensor) -> Tensor:
    _chain_matmul_checks(matrices)
    if len(matrices) == 1:
        resize_output(out, matrices[0]._sizes, "chain_matmul")
        return _aten().copy_.default(out, matrices[0], False)
    return _aten().linalg_multi_dot.out(matrices, out=out)
