"""Sparse tensors' own kernels: factories, conversions, and the parts' accessors.

The kernels registered here serve the `SparseCPU` / `SparseCsrCPU` (and, where they read only
metadata, `SparseMeta` / `SparseCsrMeta`) entries of native_functions.yaml, beside the
`CompositeExplicitAutograd` defaults that give PyTorch's "expected ... layout" errors for a
strided tensor. The tensor model is in pyaten/core/sparse.py (Note: what a sparse tensor is);
the arithmetic is in kernels/sparse_ops.py.

Conversions work on the parts' NumPy arrays: a strided tensor becomes COO through `nonzero`,
COO becomes compressed by counting each row's (column's) entries, and the block layouts are
cut from the dense form. Like PyTorch's, the factories do not check the index invariants
(PyTorch checks them only when asked, `check_invariants=True`): only the parts' shapes.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.creation import share_array
from pyaten.core.device import CPU
from pyaten.core.device import device as _device
from pyaten.core.sparse import (
    COMPRESSED_LAYOUTS,
    ROW_COMPRESSED,
    SparseTensor,
    layout_name,
    layout_of,
    make_compressed,
    make_coo,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
)
from pyaten.core.tensor import Tensor, strided
from pyaten.core.views import empty_tensor
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native, native_at

# --- helpers ---------------------------------------------------------------------------------


def _array(t: Tensor) -> np.ndarray:
    return t._host_values()


def _tensor(array: np.ndarray, d: dt.dtype) -> Tensor:
    return share_array(np.ascontiguousarray(array, dtype=d.numpy), d)


def _long(array: np.ndarray) -> Tensor:
    return _tensor(np.asarray(array, dtype=np.int64), dt.int64)


def expect_layout(op: str, t: Tensor, layouts: tuple, wanted: str) -> None:
    """PyTorch's "<op> expected <wanted> layout but got <Layout>" check."""
    layout = layout_of(t)
    if layout not in layouts:
        raise RuntimeError(f"{op} expected {wanted} layout but got {layout_name(layout)}")


def coalesce_arrays(indices: np.ndarray, values: np.ndarray, sparse_sizes: tuple
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique indices (row-major) with the values of duplicates summed."""
    if indices.shape[1] == 0:
        return indices, values
    if indices.shape[0] == 0:
        return indices[:, :1], values.sum(axis=0, keepdims=True, dtype=values.dtype)
    keys = np.ravel_multi_index(tuple(indices), sparse_sizes)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    summed = np.add.reduceat(values[order], starts, axis=0).astype(values.dtype, copy=False)
    unique = np.stack(np.unravel_index(keys[starts], sparse_sizes)).astype(np.int64)
    return unique.reshape(len(sparse_sizes), -1), summed


def coalesced_parts(t: SparseTensor) -> tuple[np.ndarray, np.ndarray]:
    """A COO tensor's indices and values as arrays, coalesced."""
    indices, values = _array(t._parts[0]), _array(t._parts[1])
    if t._coalesced:
        return indices, values
    return coalesce_arrays(indices, values, t._sizes[: t._sparse_dim])


def coo_to_dense_array(t: SparseTensor) -> np.ndarray:
    out = np.zeros(t._sizes, dtype=t._dtype.numpy)
    indices, values = _array(t._parts[0]), _array(t._parts[1])
    if indices.shape[1]:
        np.add.at(out, tuple(indices), values)
    return out


def compressed_rows_cols(t: SparseTensor) -> tuple[np.ndarray, np.ndarray]:
    """The (row, column) index of each stored element (block) of a compressed tensor."""
    compressed, plain = _array(t._parts[0]), _array(t._parts[1])
    outer = np.repeat(np.arange(len(compressed) - 1), np.diff(compressed))
    if t._layout in ROW_COMPRESSED:
        return outer, plain
    return plain, outer


def compressed_to_dense_array(t: SparseTensor) -> np.ndarray:
    rows, cols = compressed_rows_cols(t)
    values = _array(t._parts[2])
    out = np.zeros(t._sizes, dtype=t._dtype.numpy)
    if t._layout in (sparse_csr, sparse_csc):
        np.add.at(out, (rows, cols), values)
        return out
    r, c = values.shape[1:3]
    blocks = out.reshape(t._sizes[0] // r, r, t._sizes[1] // c, c, *t._sizes[2:])
    np.add.at(blocks.swapaxes(1, 2), (rows, cols), values)
    return out


def dense_array(t: Tensor) -> np.ndarray:
    """The dense values of a tensor of any layout."""
    if not isinstance(t, SparseTensor):
        return _array(t)
    if t._layout is sparse_coo:
        return coo_to_dense_array(t)
    return compressed_to_dense_array(t)


def coo_from_dense_array(array: np.ndarray, sparse_dim: int, d: dt.dtype) -> SparseTensor:
    if sparse_dim == 0:
        return make_coo(_long(np.zeros((0, 1))), _tensor(array[None], d), array.shape, True)
    mask = array != 0
    if array.ndim > sparse_dim:
        mask = mask.any(axis=tuple(range(sparse_dim, array.ndim)))
    where = np.nonzero(mask)
    indices = np.stack(where) if where else np.zeros((0, 0), np.int64)
    return make_coo(_long(indices), _tensor(array[where], d), array.shape, True)


def compressed_from_coo_arrays(layout, rows: np.ndarray, cols: np.ndarray, values: np.ndarray,
                               sizes: tuple, d: dt.dtype) -> SparseTensor:
    """CSR/CSC from coalesced (row-major sorted) COO arrays of a 2-D sparse part."""
    if layout is sparse_csr:
        counts = np.bincount(rows, minlength=sizes[0])
        plain, kept = cols, values
    else:
        order = np.lexsort((rows, cols))
        counts = np.bincount(cols, minlength=sizes[1])
        plain, kept = rows[order], values[order]
    compressed = np.concatenate(([0], np.cumsum(counts)))
    return make_compressed(layout, _long(compressed), _long(plain), _tensor(kept, d), sizes)


def block_from_dense_array(layout, array: np.ndarray, blocksize: tuple, d: dt.dtype,
                           op: str) -> SparseTensor:
    r, c = blocksize
    rows, cols = array.shape[:2]
    if rows % r or cols % c:
        raise RuntimeError(
            f"{op}: tensor sparse size ({rows},{cols}) must be divisible by given blocksize "
            f"({r},{c})"
        )
    blocks = array.reshape(rows // r, r, cols // c, c).swapaxes(1, 2)  # [R, C, r, c]
    mask = (blocks != 0).any(axis=(2, 3))
    if layout is sparse_bsc:
        block_rows, block_cols = np.nonzero(mask.T)[::-1]
        compressed_len = cols // c
        counts = np.bincount(block_cols, minlength=compressed_len)
        plain = block_rows
    else:
        block_rows, block_cols = np.nonzero(mask)
        counts = np.bincount(block_rows, minlength=rows // r)
        plain = block_cols
    compressed = np.concatenate(([0], np.cumsum(counts)))
    values = blocks[block_rows, block_cols]
    return make_compressed(layout, _long(compressed), _long(plain), _tensor(values, d),
                           array.shape)


# --- conversions -----------------------------------------------------------------------------


def _check_sparse_dim(op: str, self: Tensor, sparse_dim: int) -> None:
    if not 0 <= sparse_dim <= self.dim():
        raise RuntimeError(
            f"{op}: sparse_dim argument must be in [0,{self.dim()}] range, but {sparse_dim} is "
            "given"
        )
    if sparse_dim == 0 and self.dim() > 0:
        raise RuntimeError(
            f"{op}: sparse_dim argument must be in >0 when self.dim()>0"
        )


@native
def dense_to_sparse_sparse_dim(self: Tensor, sparse_dim: int) -> Tensor:
    _check_sparse_dim("dense_to_sparse", self, sparse_dim)
    return coo_from_dense_array(_array(self), sparse_dim, self._dtype)


def _target_layout(layout) -> object:
    return sparse_coo if layout is None else layout


def _no_blocksize(op: str, source, layout) -> RuntimeError:
    return RuntimeError(
        f"{op}: conversion from {layout_name(source)} to {layout_name(layout)} without "
        "blocksize argument given is not supported"
    )


def _compressed_dense_dim(op: str, self: Tensor, dense_dim) -> None:
    batch = self.dim() - 2 - (dense_dim or 0)
    if self.dim() < 2 or batch != 0:
        raise NotImplementedError(
            f"{op}: pyaten's compressed sparse tensors are 2-D with no batch dimensions (got a "
            f"{self.dim()}-D tensor with dense_dim={dense_dim})"
        )


@native
def dense_to_sparse(self: Tensor, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    target = _target_layout(layout)
    if target is sparse_coo:
        sparse_dim = self.dim() - (dense_dim or 0)
        _check_sparse_dim("dense_to_sparse", self, sparse_dim)
        return coo_from_dense_array(_array(self), sparse_dim, self._dtype)
    if target in (sparse_bsr, sparse_bsc) and blocksize is None:
        raise _no_blocksize("dense_to_sparse", strided, target)
    return _to_compressed(self, target, blocksize, dense_dim, "dense_to_sparse")


def _to_compressed(self: Tensor, layout, blocksize, dense_dim, op: str) -> Tensor:
    if layout_of(self) is layout and (blocksize is None or tuple(
            self._parts[2]._sizes[1:3]) == tuple(blocksize)):
        return self
    if layout in (sparse_bsr, sparse_bsc):
        if self.dim() != 2:
            _compressed_dense_dim(op, self, 1)
        return block_from_dense_array(layout, dense_array(self), tuple(blocksize), self._dtype,
                                      op)
    _compressed_dense_dim(op, self, dense_dim)
    source = layout_of(self)
    if source in (sparse_bsr, sparse_bsc):
        raise RuntimeError(
            f"{op}: expected SparseCsr or SparseCsc layout but got {layout_name(source)}"
        )
    if isinstance(self, SparseTensor) and self._layout is sparse_coo and self._sparse_dim == 2:
        indices, values = coalesced_parts(self)
        rows, cols = indices
    else:
        array = dense_array(self)
        mask = array != 0
        if array.ndim > 2:
            mask = mask.any(axis=tuple(range(2, array.ndim)))
        rows, cols = np.nonzero(mask)
        values = array[rows, cols]
    return compressed_from_coo_arrays(layout, rows, cols, values, self._sizes, self._dtype)


def _make_to_compressed(layout, op: str):
    def convert(self: Tensor, dense_dim=None) -> Tensor:
        return _to_compressed(self, layout, None, dense_dim, op)

    return convert


def _make_to_block(layout, op: str):
    def convert(self: Tensor, blocksize: tuple, dense_dim=None) -> Tensor:
        return _to_compressed(self, layout, blocksize, dense_dim, op)

    return convert


for _layout in (sparse_csr, sparse_csc):
    _short = _layout.name[len("sparse_"):]
    _fn = _make_to_compressed(_layout, f"dense_to_sparse_{_short}")
    native_at(f"dense_to_sparse_{_short}", _fn, __file__)
    native_at(f"coo_to_sparse_{_short}", _make_to_compressed(_layout, f"coo_to_sparse_{_short}"),
              __file__)
    native_at(f"sparse_compressed_to_sparse_{_short}",
              _make_to_compressed(_layout, f"sparse_compressed_to_sparse_{_short}"), __file__)
for _layout in (sparse_bsr, sparse_bsc):
    _short = _layout.name[len("sparse_"):]
    for _prefix in ("dense", "coo", "sparse_compressed"):
        native_at(f"{_prefix}_to_sparse_{_short}",
                  _make_to_block(_layout, f"{_prefix}_to_sparse_{_short}"), __file__)


@native
def sparse_coo_to_sparse_sparse_dim(self: Tensor, sparse_dim: int) -> Tensor:
    if sparse_dim != self._sparse_dim:
        raise RuntimeError(
            "to_sparse: conversion from Sparse to Sparse with sparse_dim argument "
            "!=self.sparse_dim() is not supported"
        )
    return self


@native
def sparse_coo_to_sparse(self: Tensor, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    target = _target_layout(layout)
    if target is sparse_coo:
        return self
    if target in (sparse_bsr, sparse_bsc) and blocksize is None:
        raise _no_blocksize("sparse_coo_to_sparse", sparse_coo, target)
    return _to_compressed(self, target, blocksize, dense_dim, "sparse_coo_to_sparse")


def _compressed_to_coo(self: SparseTensor) -> SparseTensor:
    # Stored elements (every element of a stored block) in storage order: coalesced only
    # when that order is row-major, i.e. for CSR, as PyTorch's conversion.
    rows, cols = compressed_rows_cols(self)
    values = _array(self._parts[2])
    if self._layout in (sparse_bsr, sparse_bsc):
        r, c = values.shape[1:3]
        inner_r, inner_c = np.divmod(np.arange(r * c), c)
        rows = (rows[:, None] * r + inner_r).reshape(-1)
        cols = (cols[:, None] * c + inner_c).reshape(-1)
        values = values.reshape(-1, *values.shape[3:])
    return make_coo(_long(np.stack((rows, cols))), _tensor(values, self._dtype), self._sizes,
                    self._layout is sparse_csr)


@native
def sparse_compressed_to_sparse_sparse_dim(self: Tensor, sparse_dim: int) -> Tensor:
    if sparse_dim != 2:
        raise RuntimeError(
            f"sparse_compressed_to_sparse: expected sparse_dim to be 2, but got {sparse_dim}"
        )
    return _compressed_to_coo(self)


@native
def sparse_compressed_to_sparse(self: Tensor, layout=None, blocksize=None, dense_dim=None
                                ) -> Tensor:
    target = _target_layout(layout)
    if target is sparse_coo:
        return _compressed_to_coo(self)
    if target in (sparse_bsr, sparse_bsc) and blocksize is None:
        if self._layout is target:
            return self
        raise _no_blocksize("sparse_compressed_to_sparse", self._layout, target)
    return _to_compressed(self, target, blocksize, dense_dim, "sparse_compressed_to_sparse")


# The CompositeImplicitAutograd entry points: a tensor already in the layout is returned.
@native
def to_sparse_sparse_dim(self: Tensor, sparse_dim: int) -> Tensor:
    return _aten()._to_sparse.sparse_dim(self, sparse_dim)


@native
def to_sparse(self: Tensor, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    target = _target_layout(layout)
    if layout_of(self) is target and (blocksize is None or tuple(
            self._parts[2]._sizes[1:3]) == tuple(blocksize)):
        return self
    return _aten()._to_sparse.default(self, layout=layout, blocksize=blocksize,
                                      dense_dim=dense_dim)


@native
def to_sparse_csr(self: Tensor, dense_dim=None) -> Tensor:
    if layout_of(self) is sparse_csr:
        return self
    return _aten()._to_sparse_csr.default(self, dense_dim)


@native
def to_sparse_csc(self: Tensor, dense_dim=None) -> Tensor:
    if layout_of(self) is sparse_csc:
        return self
    return _aten()._to_sparse_csc.default(self, dense_dim)


@native
def to_sparse_bsr(self: Tensor, blocksize: tuple, dense_dim=None) -> Tensor:
    return _aten()._to_sparse_bsr.default(self, blocksize, dense_dim)


@native
def to_sparse_bsc(self: Tensor, blocksize: tuple, dense_dim=None) -> Tensor:
    return _aten()._to_sparse_bsc.default(self, blocksize, dense_dim)


@native
def to_dense(self: Tensor, dtype=None, masked_grad=None) -> Tensor:
    if layout_of(self) is strided:
        return self
    return _aten()._to_dense.default(self, dtype, masked_grad)


def _check_to_dense_dtype(op: str, dtype) -> None:
    if dtype is not None:
        raise RuntimeError(f"dtype argument is not supported by {op}")


@native
def sparse_to_dense(self: Tensor, dtype=None, masked_grad=None) -> Tensor:
    _check_to_dense_dtype("sparse_to_dense", dtype)
    return _tensor(coo_to_dense_array(self), self._dtype)


@native
def sparse_compressed_to_dense(self: Tensor, dtype=None, masked_grad=None) -> Tensor:
    _check_to_dense_dtype("sparse_compressed_to_dense", dtype)
    if self._device.type == "meta":
        return empty_tensor(self._sizes, self._dtype, self._device)
    return _tensor(compressed_to_dense_array(self), self._dtype)


# --- coalesce --------------------------------------------------------------------------------


@native
def coalesce(self: Tensor) -> Tensor:
    expect_layout("coalesce", self, (sparse_coo,), "sparse coordinate tensor")
    if self._coalesced:
        return self
    return _aten()._coalesce.default(self)


@native
def _coalesce_sparse_cpu(self: Tensor) -> Tensor:
    indices, values = coalesced_parts(self)
    return make_coo(_long(indices), _tensor(values, self._dtype), self._sizes, True)


@native
def is_coalesced_sparse(self: Tensor) -> bool:
    return self._coalesced


@native
def is_coalesced_default(self: Tensor) -> bool:
    expect_layout("is_coalesced", self, (sparse_coo,), "sparse coordinate tensor")
    return False


# --- the parts -------------------------------------------------------------------------------


def _alias(part: Tensor) -> Tensor:
    # A view of the stored part: it shares the data and the version counter, as PyTorch's.
    return Tensor._make_view(part, part._sizes, part._strides, part._offset)


@native
def indices_sparse(self: Tensor) -> Tensor:
    if not self._coalesced:
        raise RuntimeError(
            "Cannot get indices on an uncoalesced tensor, please call .coalesce() first"
        )
    return _alias(self._parts[0])


@native
def values_sparse(self: Tensor) -> Tensor:
    if not self._coalesced:
        raise RuntimeError(
            "Cannot get values on an uncoalesced tensor, please call .coalesce() first"
        )
    return _alias(self._parts[1])


@native
def _indices_sparse(self: Tensor) -> Tensor:
    return _alias(self._parts[0])


@native
def _values_sparse(self: Tensor) -> Tensor:
    return _alias(self._parts[1])


@native
def values_sparse_csr(self: Tensor) -> Tensor:
    return _alias(self._parts[2])


@native
def indices_default(self: Tensor) -> Tensor:
    expect_layout("indices", self, (sparse_coo,), "sparse coordinate tensor")
    raise AssertionError("unreachable")


@native
def values_default(self: Tensor) -> Tensor:
    expect_layout("values", self, (sparse_coo, *COMPRESSED_LAYOUTS), "sparse tensor")
    raise AssertionError("unreachable")


def _make_compressed_accessor(name: str, part: int, layouts: tuple, wanted: str):
    def accessor(self: Tensor) -> Tensor:
        expect_layout(name, self, layouts, wanted)
        return _alias(self._parts[part])

    def default(self: Tensor) -> Tensor:
        expect_layout(name, self, layouts, wanted)
        raise AssertionError("unreachable")

    native_at(f"{name}_sparse_csr", accessor, __file__)
    native_at(f"{name}_default", default, __file__)


_ROWS = (sparse_csr, sparse_bsr)
_COLS = (sparse_csc, sparse_bsc)
_make_compressed_accessor("crow_indices", 0, _ROWS, "sparse row compressed tensor")
_make_compressed_accessor("col_indices", 1, _ROWS, "sparse row compressed tensor")
_make_compressed_accessor("ccol_indices", 0, _COLS, "sparse column compressed tensor")
_make_compressed_accessor("row_indices", 1, _COLS, "sparse column compressed tensor")


@native
def _nnz_sparse(self: Tensor) -> int:
    return self._parts[1]._sizes[0]


@native
def _nnz_sparse_csr(self: Tensor) -> int:
    return self._parts[2]._sizes[0]


@native
def sparse_dim_sparse(self: Tensor) -> int:
    return self._sparse_dim


@native
def dense_dim_sparse(self: Tensor) -> int:
    return self._dense_dim


native_at("sparse_dim_sparse_csr", lambda self: self._sparse_dim, __file__)
native_at("dense_dim_sparse_csr", lambda self: self._dense_dim, __file__)


@native
def sparse_dim_default(self: Tensor) -> int:
    expect_layout("sparse_dim", self, (strided,), "strided tensor")
    return 0


@native
def dense_dim_default(self: Tensor) -> int:
    expect_layout("dense_dim", self, (strided,), "strided tensor")
    return self.dim()


# --- factories -------------------------------------------------------------------------------


def _factory_values(values: Tensor, dtype, device_arg) -> Tensor:
    if dtype is not None and dtype is not values._dtype:
        values = _aten().to.dtype(values, dtype)
    if device_arg is not None and _device(device_arg) != values._device:
        values = _aten().to.device(values, _device(device_arg), values._dtype)
    return values


def _check_layout_arg(op: str, layout, allowed: tuple) -> None:
    if layout is not None and layout not in allowed:
        raise RuntimeError(f"{op}: expected layout {allowed[0]!r}, got {layout!r}")


def _coo_parts(indices: Tensor, values: Tensor, size, dtype, device_arg) -> tuple:
    if indices.dim() != 2:
        raise RuntimeError(
            "indices must be sparse_dim x nnz, but got: " + str(list(indices._sizes))
        )
    if indices._dtype is not dt.int64:
        indices = _aten().to.dtype(indices, dt.int64)
    values = _factory_values(values, dtype, device_arg)
    if indices._sizes[1] != values._sizes[0]:
        raise RuntimeError(
            "indices and values must have same nnz, but got nnz from indices: "
            f"{indices._sizes[1]}, nnz from values: {values._sizes[0]}"
        )
    sparse_dim, dense_dim = indices._sizes[0], values.dim() - 1
    if size is None:
        idx = _array(indices)
        sparse = tuple(int(v) + 1 for v in idx.max(axis=1)) if idx.shape[1] else (0,) * sparse_dim
        size = sparse + tuple(values._sizes[1:])
    size = tuple(size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(
            "'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
            f"{len(size)}, sparse_dim = {sparse_dim}, dense_dim = {dense_dim}"
        )
    return indices, values, size


@native
def sparse_coo_tensor_indices(indices: Tensor, values: Tensor, dtype=None, layout=None,
                              device=None, pin_memory=None, is_coalesced=None) -> Tensor:
    return sparse_coo_tensor_indices_size(indices, values, None, dtype, layout, device,
                                          pin_memory, is_coalesced)


@native
def sparse_coo_tensor_indices_size(indices: Tensor, values: Tensor, size, dtype=None,
                                   layout=None, device=None, pin_memory=None,
                                   is_coalesced=None) -> Tensor:
    _check_layout_arg("sparse_coo_tensor", layout, (sparse_coo,))
    indices, values, size = _coo_parts(indices, values, size, dtype, device)
    # copies, as PyTorch's factory makes its own parts (`indices.clone()`)
    indices = _aten().clone.default(indices)
    values = _aten().clone.default(values)
    return make_coo(indices, values, size, bool(is_coalesced) or values._sizes[0] <= 1)


@native
def sparse_coo_tensor(size, dtype=None, layout=None, device=None, pin_memory=False) -> Tensor:
    where = CPU if device is None else _device(device)
    d = dt.get_default_dtype() if dtype is None else dtype
    indices = empty_tensor((len(size), 0), dt.int64, where)
    values = empty_tensor((0,), d, where)
    return make_coo(indices, values, tuple(size), True)


_LAYOUT_PART_NAMES = {
    sparse_csr: ("crow_indices", "col_indices"), sparse_bsr: ("crow_indices", "col_indices"),
    sparse_csc: ("ccol_indices", "row_indices"), sparse_bsc: ("ccol_indices", "row_indices"),
}  # fmt: skip


def _compressed_factory(compressed: Tensor, plain: Tensor, values: Tensor, size, dtype,
                        layout, device_arg, op: str) -> Tensor:
    if layout not in COMPRESSED_LAYOUTS:
        got = "none" if layout is None else layout_name(layout)
        raise RuntimeError(f"{op} expected sparse compressed tensor layout but got {got}")
    names = _LAYOUT_PART_NAMES[layout]
    if compressed.dim() != 1 or plain.dim() != 1:
        raise NotImplementedError(
            f"{op}: pyaten's compressed sparse tensors have no batch dimensions ("
            f"{names[0]} must be 1-D, got {compressed.dim()}-D)"
        )
    values = _factory_values(values, dtype, device_arg)
    block = layout in (sparse_bsr, sparse_bsc)
    if plain._sizes[0] != values._sizes[0]:
        raise RuntimeError(
            f"{names[1]} and values must have the same number of elements, but got "
            f"{names[1]}.numel(): {plain._sizes[0]}, values.numel(): {values._sizes[0]}"
        )
    if size is None:
        r, c = (values._sizes[1], values._sizes[2]) if block else (1, 1)
        count = compressed._sizes[0] - 1
        other = int(_array(plain).max()) + 1 if plain._sizes[0] else 0
        if layout in ROW_COMPRESSED:
            size = (count * r, other * c)
        else:
            size = (other * r, count * c)
        size = size + tuple(values._sizes[3 if block else 1:])
    size = tuple(size)
    if len(size) < 2:
        raise RuntimeError(
            f"{op}: expected size to have at least 2 dimensions, got {len(size)}"
        )
    compressed = _aten().clone.default(compressed)
    plain = _aten().clone.default(plain)
    return make_compressed(layout, compressed, plain, _aten().clone.default(values), size)


@native
def sparse_compressed_tensor(compressed_indices: Tensor, plain_indices: Tensor, values: Tensor,
                             size, dtype=None, layout=None, device=None, pin_memory=False
                             ) -> Tensor:
    return _compressed_factory(compressed_indices, plain_indices, values, size, dtype, layout,
                               device, "sparse_compressed_tensor")


@native
def sparse_compressed_tensor_comp_plain_value(compressed_indices: Tensor, plain_indices: Tensor,
                                              values: Tensor, dtype=None, layout=None,
                                              device=None, pin_memory=False) -> Tensor:
    return _compressed_factory(compressed_indices, plain_indices, values, None, dtype, layout,
                               device, "sparse_compressed_tensor")


def _make_layout_factory(layout, with_size: bool):
    op = f"{layout.name}_tensor"

    def with_size_factory(compressed, plain, values, size, dtype=None, layout_arg=None,
                          device=None, pin_memory=False):
        _check_layout_arg(op, layout_arg, (layout,))
        return _compressed_factory(compressed, plain, values, size, dtype, layout, device, op)

    def inferred_factory(compressed, plain, values, dtype=None, layout_arg=None, device=None,
                         pin_memory=False):
        _check_layout_arg(op, layout_arg, (layout,))
        return _compressed_factory(compressed, plain, values, None, dtype, layout, device, op)

    return with_size_factory if with_size else inferred_factory


for _layout in COMPRESSED_LAYOUTS:
    _parts = "crow_col" if _layout in ROW_COMPRESSED else "ccol_row"
    native_at(f"{_layout.name}_tensor_{_parts}_value_size", _make_layout_factory(_layout, True),
              __file__)
    native_at(f"{_layout.name}_tensor_{_parts}_value", _make_layout_factory(_layout, False),
              __file__)
