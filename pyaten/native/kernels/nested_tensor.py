"""The strided nested tensor: one buffer, and per component its sizes, strides and offset.

Note: the nested tensor's representation
    PyTorch's NestedTensorImpl keeps a 1-D buffer and three per-component tables (nested
    sizes, nested strides, storage offsets); the tensor's key set holds NestedTensorCPU and
    AutogradNestedTensor instead of CPU's Dense bit, so every operator dispatches to the
    NestedTensorCPU kernels (pyaten/native/kernels/nested.py) or reports that it has none.
    `NestedTensor` is that impl: a Tensor subclass whose slots describe the buffer, with the
    tables in its `__dict__`. Its `_sizes` slot holds the "maybe sizes" (a regular dim's size,
    -1 for an irregular one) so code that compares geometry (autograd's input metadata) sees
    one value per nested structure; the public `size()`/`shape` follow PyTorch's rules.
    Components are views of the buffer (`Tensor._make_view`), so unbind costs no copy.
"""

from __future__ import annotations

import numpy as np

from pyaten.core.creation import share_array
from pyaten.core.tensor import Tensor, _new, _wrap_dim
from pyaten.core.torch_function import _disabled_torch_function_impl
from pyaten.dispatch.keys import functionality_bit

__all__ = ["NestedTensor", "make_nested", "components", "from_components", "is_strided_nested"]

_DENSE = functionality_bit("Dense")
_NESTED = functionality_bit("NestedTensor") | functionality_bit("AutogradNestedTensor")


def nested_keyset(device_keyset: int) -> int:
    """A device's key set with its Dense bit swapped for the NestedTensor bits."""
    return (device_keyset & ~_DENSE) | _NESTED


def _maybe_sizes(n: int, sizes: tuple) -> tuple:
    if not sizes:
        return (n,)
    ndim = len(sizes[0])
    maybe = [n]
    for d in range(ndim):
        first = sizes[0][d]
        maybe.append(first if all(s[d] == first for s in sizes) else -1)
    return tuple(maybe)


def _contiguous(shape: tuple) -> tuple:
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= max(s, 1)
    return tuple(reversed(strides))


def _numel(shape: tuple) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


class NestedTensor(Tensor):
    """A strided-layout nested tensor (internal; build with `pyaten.nested.nested_tensor`)."""

    __torch_function__ = _disabled_torch_function_impl

    # ------------------------------------------------------------------ PyTorch's metadata
    @property
    def is_nested(self) -> bool:
        return True

    def size(self, dim: int | None = None) -> int:
        if dim is None:
            raise RuntimeError(
                "Internal error: NestedTensorImpl doesn't support sizes. Please file an issue."
            )
        d = _wrap_dim(int(dim), len(self._sizes))
        size = self._sizes[d]
        if size < 0:
            raise RuntimeError(f"Given dimension {d} is irregular and does not have a size.")
        return size

    @property
    def shape(self) -> None:
        return self.size()

    def stride(self, dim: int | None = None) -> None:
        raise RuntimeError(
            "Internal error: NestedTensorImpl doesn't support strides. Please file an issue."
        )

    def numel(self) -> int:
        return sum(_numel(s) for s in self._nt_sizes)

    nelement = numel

    def is_contiguous(self, memory_format: object = None) -> bool:
        offset = 0
        for size, stride, start in zip(self._nt_sizes, self._nt_strides, self._nt_offsets):
            if start != offset or stride != _contiguous(size):
                return False
            offset += _numel(size)
        return True

    def __len__(self) -> int:
        return self.size()  # PyTorch's strided nested tensor has no len()

    def __iter__(self):  # noqa: ANN204 - iterates the components, as PyTorch's unbind(0)
        return iter(self.unbind(0))

    def numpy(self, force: bool = False) -> None:
        raise RuntimeError("Internal error: NestedTensorImpl doesn't support sizes. Please "
                           "file an issue.")

    def _nested_tensor_size(self) -> Tensor:
        return _table(self._nt_sizes, len(self._sizes) - 1)

    def _nested_tensor_strides(self) -> Tensor:
        return _table(self._nt_strides, len(self._sizes) - 1)

    def _nested_tensor_storage_offsets(self) -> Tensor:
        return share_array(np.array(self._nt_offsets, dtype=np.int64), _int64())

    def __repr__(self) -> str:
        from pyaten.core.printing import tensor_repr

        shown = components(self)
        for c in shown:  # PyTorch shows each component requiring grad as the whole does
            c._requires_grad = self._requires_grad or self.grad_fn is not None
        parts = [tensor_repr(c) for c in shown]
        body = ",\n".join("  " + p.replace("\n", "\n  ") for p in parts)
        text = "nested_tensor([\n" + body + "\n])"
        if self.grad_fn is not None:
            from pyaten.core.printing import _grad_fn_name

            return text[:-1] + f", grad_fn=<{_grad_fn_name(self.grad_fn)}>)"
        if self._requires_grad:
            return text[:-1] + ", requires_grad=True)"
        return text


def _int64():  # noqa: ANN202
    from pyaten.core import dtypes

    return dtypes.int64


def _table(rows: tuple, width: int) -> Tensor:
    array = np.array(rows, dtype=np.int64).reshape(len(rows), width)
    return share_array(array, _int64())


def is_strided_nested(t: object) -> bool:
    return type(t) is NestedTensor


def make_nested(
    buffer: Tensor, sizes: tuple, strides: tuple | None = None, offsets: tuple | None = None
) -> NestedTensor:
    """A nested tensor over the 1-D `buffer` (contiguous components packed when strides and
    offsets are not given)."""
    sizes = tuple(tuple(int(s) for s in size) for size in sizes)
    if strides is None:
        strides = tuple(_contiguous(s) for s in sizes)
    if offsets is None:
        starts, at = [], 0
        for s in sizes:
            starts.append(at)
            at += _numel(s)
        offsets = tuple(starts)
    t = _new(NestedTensor)
    for name in Tensor.__slots__[:-2]:
        setattr(t, name, getattr(buffer, name))
    t._sizes = _maybe_sizes(len(sizes), sizes)
    t._strides = (0,) * len(t._sizes)
    t._offset = 0
    t._np = None
    t._base = None
    t._vc = buffer._vc
    t._requires_grad = False
    t.grad_fn = None
    t._grad = None
    t._hooks = None
    t.retains_grad = False
    t.output_nr = 0
    t._grad_acc = None
    t._fw_grad = None
    t._keyset = nested_keyset(buffer._device._keyset)
    t._nt_buffer = buffer
    t._nt_sizes = sizes
    t._nt_strides = tuple(tuple(s) for s in strides)
    t._nt_offsets = tuple(offsets)
    return t


def components(t: NestedTensor) -> list[Tensor]:
    """The components of `t`: views of its buffer (PyTorch's `unbind(0)`)."""
    buffer = t._nt_buffer
    return [
        Tensor._make_view(buffer, size, stride, buffer._offset + offset)
        for size, stride, offset in zip(t._nt_sizes, t._nt_strides, t._nt_offsets)
    ]


def from_components(parts: list[Tensor], dtype: object = None,
                    device: object = None) -> NestedTensor:
    """A new nested tensor holding copies of `parts` (dense tensors of one dim count)."""
    if parts:
        dtype = parts[0]._dtype if dtype is None else dtype
        arrays = [np.ascontiguousarray(p._host_values()).reshape(-1) for p in parts]
        flat = np.concatenate(arrays) if arrays else np.zeros(0)
        buffer = share_array(flat.astype(dtype.numpy, copy=False), dtype)
    else:
        from pyaten.core import dtypes

        dtype = dtypes.get_default_dtype() if dtype is None else dtype
        buffer = share_array(np.zeros(0, dtype.numpy), dtype)
    return make_nested(buffer, tuple(tuple(p._sizes) for p in parts))
