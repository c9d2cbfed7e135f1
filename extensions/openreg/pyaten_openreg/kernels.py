"""openreg's kernels: what its manifest (openreg.yaml) names, found here by name.

The naming rule (docs/backends.md): `add.Tensor` is the function `add_Tensor`; a structured
operator's device impl is named like its out entry (`mm_out` for `mm.out`), its device meta
`meta_<functional entry>` (`meta_mm`); an `autograd:` entry is the function of the
operator's name (`sigmoid`). The DispatchStub loops of the `stub` strategy are in loops.py;
memory is reached through access.py (`host_array`).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

import pyaten
from pyaten.backends import kernel_api
from pyaten.dispatch import AutoDispatchBelowAutograd
from pyaten_openreg import memory
from pyaten_openreg.access import (
    REDUCED,
    compute_dtype,
    device_of,
    host_array,
    quiet,
    store,
)
from pyaten_openreg.loops import accumulate_dtype, input_arrays, pow_stub, write_result

# -- the required kernels ------------------------------------------------------------------------


def _index(device: Any) -> Any:
    dev = pyaten.device(device) if device is not None else pyaten.device("openreg")
    if dev.index is None:
        dev = pyaten.device("openreg", pyaten.openreg.current_device())
    if dev.index >= memory.DEVICE_COUNT:
        raise RuntimeError(
            f"openreg: invalid device ordinal {dev.index} (device_count() is "
            f"{memory.DEVICE_COUNT})"
        )
    return dev


def _strides_for(size: tuple, memory_format: Any) -> tuple | None:
    if memory_format is None or memory_format in (pyaten.contiguous_format,
                                                  pyaten.preserve_format):
        return None
    if memory_format is pyaten.channels_last and len(size) == 4:
        n, c, h, w = size
        return (h * w * c, 1, w * c, c)
    if memory_format is pyaten.channels_last_3d and len(size) == 5:
        n, c, d, h, w = size
        return (d * h * w * c, 1, h * w * c, w * c, c)
    raise RuntimeError(f"openreg: empty(): memory format {memory_format} needs a "
                       f"{4 if memory_format is pyaten.channels_last else 5}-d size")


def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None,
                        memory_format=None):
    if pin_memory:
        raise RuntimeError("openreg: pin_memory is a CPU option; openreg memory is device memory")
    dtype = pyaten.get_default_dtype() if dtype is None else dtype
    return kernel_api.empty_tensor(size, dtype, _index(device),
                                   _strides_for(tuple(size), memory_format))


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    if len(size) != len(stride):
        raise RuntimeError(
            f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
            f"({len(stride)})"
        )
    dtype = pyaten.get_default_dtype() if dtype is None else dtype
    return kernel_api.empty_tensor(size, dtype, _index(device), stride)


def _copy_from(self, dst, non_blocking=False):
    """Copy `self` into `dst`: same shape and dtype, at least one of them on openreg."""
    store(host_array(dst), host_array(self))
    return dst


def _copy_from_and_resize(self, dst):
    if tuple(dst.shape) != tuple(self.shape):
        dst.resize_(self.shape)
    return _copy_from(self, dst)


def resize_(self, size, memory_format=None):
    changed = tuple(size) != tuple(self.shape)
    kernel_api.resize_storage(self, size, memory.grow)
    if changed:
        self._bump_version()
    return self


def set__source_Storage_storage_offset(self, source, storage_offset, size, stride=()):
    if source.device.type != "openreg":
        raise RuntimeError(
            f"Expected a Storage of type openreg but got one on device {source.device}"
        )
    return kernel_api.set_storage(self, source, storage_offset, size, stride)


def as_strided(self, size, stride, storage_offset=None):
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: "
            f"{list(stride)}"
        )
    offset = self.storage_offset() if storage_offset is None else storage_offset
    needed = kernel_api.storage_nbytes_needed(tuple(size), tuple(stride), offset,
                                              self.element_size())
    available = self.untyped_storage().nbytes
    if 0 not in size and needed > available:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {self.element_size()} requiring a storage size of {needed} are out "
            f"of bounds for storage of size {available}"
        )
    return kernel_api.view_tensor(self, size, stride, offset)


def _view_strides(sizes: tuple, strides: tuple, shape: tuple) -> tuple | None:
    """The strides of `shape` viewing a tensor of `sizes`/`strides`, or None (ATen's
    computeStride: each run of the new shape must lie within one contiguous chunk)."""
    if not sizes:
        sizes, strides = (1,), (1,)
    new = [0] * len(shape)
    view_d = len(shape) - 1
    chunk_base = strides[-1]
    tensor_numel = 1
    view_numel = 1
    for d in range(len(sizes) - 1, -1, -1):
        tensor_numel *= sizes[d]
        if d == 0 or (sizes[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
                new[view_d] = view_numel * chunk_base
                view_numel *= shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new)


def _infer_size(size: tuple, numel: int) -> tuple:
    size = tuple(size)
    if size.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in size:
        if s != -1:
            known *= s
    if -1 in size:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(size)}' is invalid for input of size {numel}")
        return tuple(numel // known if s == -1 else s for s in size)
    if known != numel:
        raise RuntimeError(f"shape '{list(size)}' is invalid for input of size {numel}")
    return size


_CONTIGUOUS: dict[tuple, tuple] = {}  # sizes -> their row-major strides


def _contiguous(sizes: tuple) -> tuple:
    strides = _CONTIGUOUS.get(sizes)
    if strides is None:
        strides = tuple(kernel_api.contiguous_strides(sizes))
        if len(_CONTIGUOUS) < 4096:
            _CONTIGUOUS[sizes] = strides
    return strides


def view(self, size):
    sizes, strides = tuple(self.shape), self.stride()
    shape = _infer_size(size, self.numel())
    if strides == _contiguous(sizes):  # row-major views any shape of its size row-major
        new = _contiguous(shape)
    elif 0 in shape or 0 in sizes:
        new = _contiguous(shape)
    else:
        new = _view_strides(sizes, strides, shape)
    if new is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return kernel_api.view_tensor(self, shape, new, self.storage_offset())


def unfold(self, dimension, size, step):
    ndim = self.dim()
    dim = dimension + ndim if dimension < 0 else dimension
    length = self.shape[dim] if ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {length} but size "
                           f"is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    sizes, strides = list(self.shape), list(self.stride())
    if ndim:
        sizes[dim] = (length - size) // step + 1
        strides[dim] = strides[dim] * step
    return kernel_api.view_tensor(self, (*sizes, size),
                                  (*strides, self.stride(dim) if ndim else 1),
                                  self.storage_offset())


def _local_scalar_dense(self):
    value = host_array(self).reshape(())
    if self.dtype in REDUCED:
        return builtins.float(value)
    return value.item()


def fill__Scalar(self, value):
    if self.numel():
        array = host_array(self)
        if self.dtype.is_complex or not isinstance(value, complex):
            array[...] = value
        else:
            raise RuntimeError(f"value cannot be converted to type {self.dtype} without "
                               "overflow")
    self._bump_version()
    return self


def zero_(self):
    return fill__Scalar(self, 0)


def clone(self, memory_format=None):
    keep = memory_format in (None, pyaten.preserve_format) and (
        self.is_non_overlapping_and_dense())
    strides = self.stride() if keep else _strides_for(tuple(self.shape), memory_format)
    result = kernel_api.empty_tensor(tuple(self.shape), self.dtype, self.device, strides)
    store(host_array(result), host_array(self))
    return result


# -- pointwise: plain kernels --------------------------------------------------------------------


def _new(shape: tuple, dtype: Any, device: Any):
    return kernel_api.empty_tensor(shape, dtype, device)


def _check_relu(self) -> None:
    if self.dtype is pyaten.bool:
        raise RuntimeError("Boolean inputs not supported for relu")
    if self.dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")


def relu(self):
    _check_relu(self)
    result = _new(tuple(self.shape), self.dtype, self.device)
    source = host_array(self)
    np.maximum(source, source.dtype.type(0), out=host_array(result))
    return result


def relu_(self):
    _check_relu(self)
    array = host_array(self)
    np.maximum(array, array.dtype.type(0), out=array)
    self._bump_version()
    return self


def where_self(condition, self, other):
    if condition.dtype not in (pyaten.bool, pyaten.uint8):
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{condition.dtype.scalar_name}"
        )
    dtype = pyaten.result_type(self, other)
    shape = np.broadcast_shapes(tuple(condition.shape), tuple(self.shape), tuple(other.shape))
    result = _new(shape, dtype, device_of((condition, self, other)))
    target = compute_dtype(dtype)
    value = np.where(host_array(condition).astype(bool), host_array(self).astype(target),
                     host_array(other).astype(target))
    store(host_array(result), value)
    return result


def logical_not(self):
    result = _new(tuple(self.shape), pyaten.bool, self.device)
    store(host_array(result), np.logical_not(host_array(self)))
    return result


def dot(self, tensor):
    if self.dim() != 1 or tensor.dim() != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {self.dim()}D and {tensor.dim()}D tensors"
        )
    if self.dtype is not tensor.dtype:
        raise RuntimeError(
            f"dot : expected both vectors to have same dtype, but found "
            f"{self.dtype.scalar_name} and {tensor.dtype.scalar_name}"
        )
    if self.numel() != tensor.numel():
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{self.numel()}] and src "
            f"[{tensor.numel()}] to have the same number of elements, but got {self.numel()} "
            f"and {tensor.numel()} elements respectively"
        )
    acc = compute_dtype(self.dtype)
    result = _new((), self.dtype, self.device)
    store(host_array(result), np.dot(host_array(self).astype(acc), host_array(tensor).astype(acc)))
    return result


def pow_Tensor_Scalar_out(op, self, exponent, out) -> None:
    """pow's device impl (the `impl` strategy): exponents 0 and 1 fill ones or copy, for
    every dtype (bool included), as PyTorch does; others go to the pow loop."""
    if exponent == 0 or exponent == 1:
        (a,) = input_arrays(op)[:1]
        write_result(op, np.ones_like(a) if exponent == 0 else a)
        return
    pow_stub(op)


def prod(self, dtype=None):
    """prod of every element (a plain kernel, as PyTorch declares it): int64 for integers."""
    if dtype is None:
        dtype = self.dtype if (self.dtype.is_floating_point or self.dtype.is_complex) else (
            pyaten.int64)
    result = _new((), dtype, self.device)
    source = host_array(self).astype(accumulate_dtype(dtype), copy=False)
    store(host_array(result), quiet(np.prod, source))
    return result


# -- softmax: structured impls `impl(op, self, dim, half_to_float, out)` ---------------------


def _softmax(source: np.ndarray, dim: int, log: bool) -> np.ndarray:
    if source.ndim == 0:
        source = source.reshape(1)
        dim = 0
    shifted = source - np.max(source, axis=dim, keepdims=True)
    exps = np.exp(shifted)
    total = np.sum(exps, axis=dim, keepdims=True)
    return shifted - np.log(total) if log else exps / total


def _softmax_out(op, self, dim, half_to_float, out) -> None:
    if self.numel():
        source = host_array(self).astype(compute_dtype(out.dtype), copy=False)
        store(host_array(out), quiet(_softmax, source, dim % max(self.dim(), 1), False)
              .reshape(tuple(out.shape)))


def _log_softmax_out(op, self, dim, half_to_float, out) -> None:
    if self.numel():
        source = host_array(self).astype(compute_dtype(out.dtype), copy=False)
        store(host_array(out), quiet(_softmax, source, dim % max(self.dim(), 1), True)
              .reshape(tuple(out.shape)))


def _softmax_backward(grad_output, output, dim, grad_input, log: bool) -> None:
    if not grad_input.numel():
        return
    acc = compute_dtype(grad_input.dtype)
    grad = host_array(grad_output).astype(acc, copy=False)
    out = host_array(output).astype(acc, copy=False)
    axis = dim % max(output.dim(), 1) if output.dim() else None
    if log:
        value = grad - np.exp(out) * np.sum(grad, axis=axis, keepdims=True)
    else:
        value = out * (grad - np.sum(grad * out, axis=axis, keepdims=True))
    store(host_array(grad_input), value)


def _softmax_backward_data_out(op, grad_output, output, dim, input_dtype, grad_input) -> None:
    _softmax_backward(grad_output, output, dim, grad_input, log=False)


def _log_softmax_backward_data_out(op, grad_output, output, dim, input_dtype, out) -> None:
    _softmax_backward(grad_output, output, dim, out, log=True)


# -- nll_loss: structured impls (cross_entropy = log_softmax + nll_loss) -------------------------

_NONE, _MEAN, _SUM = 0, 1, 2  # ATen's Reduction enum


def _nll_targets(self, target, ignore_index) -> tuple[np.ndarray, np.ndarray]:
    """(targets with ignored ones at 0, the mask of counted ones); out-of-range ones raise."""
    t = host_array(target).astype(np.int64)
    valid = t != ignore_index
    classes = self.shape[-1] if self.dim() else 1
    bad = valid & ((t < 0) | (t >= classes))
    if bad.any():
        raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")
    return np.where(valid, t, 0), valid


def _nll_weights(weight, t, valid, acc) -> np.ndarray:
    w = np.ones(t.shape, acc) if weight is None else host_array(weight).astype(acc)[t]
    return np.where(valid, w, 0).astype(acc)


def _picked(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    return x[t] if x.ndim == 1 else x[np.arange(x.shape[0]), t]


def nll_loss_forward_output(op, self, target, weight, reduction, ignore_index, output,
                            total_weight) -> None:
    if self.dtype not in (pyaten.float32, pyaten.float64, *REDUCED):
        raise NotImplementedError(
            f"\"nll_loss_out_frame\" not implemented for '{self.dtype.scalar_name}'"
        )
    acc = compute_dtype(self.dtype)
    t, valid = _nll_targets(self, target, ignore_index)
    w = _nll_weights(weight, t, valid, acc)
    losses = np.where(valid, -_picked(host_array(self).astype(acc), t) * w, 0).astype(acc)
    if reduction == _NONE:
        loss, total = losses, np.zeros((), acc)
    else:
        total = np.sum(w)
        loss = np.sum(losses) if reduction == _SUM else quiet(np.divide, np.sum(losses), total)
    store(host_array(output), loss)
    store(host_array(total_weight), total)


def nll_loss_backward_grad_input(op, grad_output, self, target, weight, reduction,
                                 ignore_index, total_weight, grad_input) -> None:
    if not grad_input.numel():
        return
    acc = compute_dtype(self.dtype)
    t, valid = _nll_targets(self, target, ignore_index)
    scale = -_nll_weights(weight, t, valid, acc) * host_array(grad_output).astype(acc)
    if reduction == _MEAN:
        scale = quiet(np.divide, scale, host_array(total_weight).astype(acc))
    grad = np.zeros(tuple(self.shape), acc)
    if grad.ndim == 1:
        grad[t] = scale
    else:
        grad[np.arange(grad.shape[0]), t] = scale
    store(host_array(grad_input), grad)


# -- matmul: structured impls (and mm's own meta) ------------------------------------------------


def _check_matmul_dtypes(name: str, *tensors) -> None:
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not dtype:
            raise RuntimeError(
                f"expected m1 and m2 to have the same dtype, but got: {dtype.cpp_name} != "
                f"{t.dtype.cpp_name}"
            )
    if dtype is pyaten.bool:
        raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")


def meta_mm(op, self, mat2) -> None:
    """mm's device meta (the `meta_impl` strategy): shapes and dtype checked here."""
    sizes, other = tuple(self.shape), tuple(mat2.shape)
    if len(sizes) != 2:
        raise RuntimeError("self must be a matrix")
    if len(other) != 2:
        raise RuntimeError("mat2 must be a matrix")
    if sizes[1] != other[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({sizes[0]}x{sizes[1]} and "
            f"{other[0]}x{other[1]})"
        )
    dtype = self.dtype
    if mat2.dtype is not dtype or dtype is pyaten.bool:
        _check_matmul_dtypes("addmm_impl_cpu_", self, mat2)  # the CPU kernel's message
    op.set_output(0, (sizes[0], other[1]), dtype, self.device)


def _matmul_into(out, a, b) -> None:
    """`a @ b` into `out` (straight into its memory when no conversion is needed)."""
    target = host_array(out)
    acc = compute_dtype(out.dtype)
    a, b = host_array(a), host_array(b)
    if target.dtype == acc and a.dtype == acc and b.dtype == acc:
        np.matmul(a, b, out=target)
    else:
        store(target, np.matmul(a.astype(acc, copy=False), b.astype(acc, copy=False)))


def mm_out(op, self, mat2, out) -> None:
    _matmul_into(out, self, mat2)


def bmm_out(op, self, mat2, out) -> None:
    _matmul_into(out, self, mat2)


def addmm_out(op, self, mat1, mat2, beta, alpha, out) -> None:
    acc = compute_dtype(out.dtype)
    product = np.matmul(host_array(mat1).astype(acc), host_array(mat2).astype(acc))
    if alpha != 1:
        product = product * alpha
    if beta != 0:
        base = host_array(self).astype(acc)
        product = product + (base if beta == 1 else base * beta)
    store(host_array(out), product)


# -- backend-specific autograd (`autograd:` in the manifest, on AutogradPrivateUse<n>) -------------


class _Sigmoid(pyaten.autograd.Function):
    """sigmoid with openreg's own backward: it keeps the result and computes the gradient
    in one loop (`sigmoid_backward`), as a device with a fused kernel would."""

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        with AutoDispatchBelowAutograd():  # the device's sigmoid kernel, not this one again
            result = pyaten.ops.aten.sigmoid.default(x)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        (result,) = ctx.saved_tensors
        return pyaten.ops.aten.sigmoid_backward.default(grad, result)


def sigmoid(self):
    """The autograd kernel of `sigmoid` on openreg (registered on its Autograd key)."""
    return _Sigmoid.apply(self)


# -- sparse tensors on openreg (the manifest's `sparse:` and `sparse_csr:` lists) -------------
# A sparse openreg tensor's parts (indices, values) are ordinary openreg tensors. The kernels
# that only read metadata or alias a part are pyaten's own SparseCPU / SparseCsrCPU ones (they
# never touch memory); those that compute stage through the host: operands to the CPU,
# pyaten's kernel there, the result back on the device.

def _upstream(op_name: str, key: str) -> Any:
    from pyaten.backends import upstream_kernel

    return upstream_kernel(op_name, key)


sparse__nnz = _upstream("_nnz", "SparseCPU")
sparse_sparse_dim = _upstream("sparse_dim", "SparseCPU")
sparse_dense_dim = _upstream("dense_dim", "SparseCPU")
sparse_is_coalesced = _upstream("is_coalesced", "SparseCPU")
sparse__indices = _upstream("_indices", "SparseCPU")
sparse__values = _upstream("_values", "SparseCPU")
sparse_indices = _upstream("indices", "SparseCPU")
sparse_values = _upstream("values", "SparseCPU")
sparse_csr__nnz = _upstream("_nnz", "SparseCsrCPU")
sparse_csr_values = _upstream("values", "SparseCsrCPU")
sparse_csr_crow_indices = _upstream("crow_indices", "SparseCsrCPU")
sparse_csr_col_indices = _upstream("col_indices", "SparseCsrCPU")


def _staged(op: Any, *args: Any, **kwargs: Any) -> Any:
    """Run `op` on host copies of the openreg tensors in `args`; the result back on openreg."""
    where = next(a.device for a in args
                 if isinstance(a, pyaten.Tensor) and a.device.type == "openreg")  # fmt: skip
    with AutoDispatchBelowAutograd():
        host = [a.cpu() if isinstance(a, pyaten.Tensor) else a for a in args]
        result = op(*host, **kwargs)
        return result.to(where)


def sparse__to_dense(self, dtype=None, masked_grad=None):
    return _staged(pyaten.ops.aten._to_dense.default, self, dtype=dtype, masked_grad=masked_grad)


def sparse__coalesce(self):
    return _staged(pyaten.ops.aten._coalesce.default, self)


def sparse_add_Tensor(self, other, alpha=1):
    return _staged(pyaten.ops.aten.add.Tensor, self, other, alpha=alpha)


def sparse_mul_Tensor(self, other):
    return _staged(pyaten.ops.aten.mul.Tensor, self, other)


def sparse_sparse_mask(self, mask):  # the gradient of to_dense: a dense tensor at mask's pattern
    return _staged(pyaten.ops.aten.sparse_mask.default, self, mask)


def sparse_sum(self, dtype=None):
    return _staged(pyaten.ops.aten.sum.default, self, dtype=dtype)


def sparse_mm(self, mat2):
    return _staged(pyaten.ops.aten.mm.default, self, mat2)


def sparse_csr__to_dense(self, dtype=None, masked_grad=None):
    return _staged(pyaten.ops.aten._to_dense.default, self, dtype=dtype, masked_grad=masked_grad)


def sparse_csr_mm(self, mat2):
    return _staged(pyaten.ops.aten.mm.default, self, mat2)
