"""Sparse tensors: the COO and compressed (CSR, CSC, BSR, BSC) layouts and their key sets.

Note: what a sparse tensor is
    A sparse tensor is a `SparseTensor`, an internal subclass of `Tensor` with no dense
    storage of its own (its `Storage` holds no bytes). It holds its component tensors, which
    are ordinary strided tensors:
    - COO (`sparse_coo`): `indices` (int64, `[sparse_dim, nnz]`) and `values`
      (`[nnz, *dense_shape]`), plus the `coalesced` flag;
    - compressed (`sparse_csr`, `sparse_csc`, `sparse_bsr`, `sparse_bsc`): the compressed
      indices (`crow_indices` / `ccol_indices`, `[size + 1]`), the plain indices
      (`col_indices` / `row_indices`, `[nnz]`) and `values` (`[nnz]`, or `[nnz, r, c]` for
      the block layouts). pyaten's compressed tensors have no batch dimensions.
    Its key set is the key set of a tensor on its device with the `Dense` functionality bit
    swapped for `Sparse` (COO) or `SparseCsr` (the compressed layouts), as PyTorch computes
    it (`DispatchKeySet(SparseCPU, ADInplaceOrView, AutogradCPU, AutocastCPU)`), so every
    operator dispatches to the kernel registered at `SparseCPU` / `SparseCsrCPU` in
    native_functions.yaml (pyaten/native/kernels/sparse*.py), through autograd as usual; an
    operator with no such kernel raises the dispatcher's "Could not run 'aten::X' with
    arguments from the 'SparseCPU' backend" error.

    `__torch_function__` is `_disabled_torch_function_impl`, so the class takes no part in the
    torch-function protocol and results are never converted to it; since it is not `Tensor`
    itself, the generated bindings' fast paths (`v.__class__ is Tensor`) step aside and every
    call dispatches.

Deliberate differences from PyTorch, at the level of Python types:
    - `type(s)` is `pyaten.core.sparse.SparseTensor`, not `Tensor` (PyTorch's sparse tensors
      are `torch.Tensor` with a `SparseTensorImpl`); `isinstance(s, pyaten.Tensor)` holds, and
      `type(s) is pyaten.Tensor` does not.
    - A strided tensor converted to a sparse layout and back is a new tensor (as in PyTorch);
      there are no sparse views of dense storage.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.size import _Token
from pyaten.core.storage import Storage
from pyaten.core.tensor import Tensor, make_dataless, strided
from pyaten.core.torch_function import _disabled_torch_function_impl
from pyaten.dispatch.keys import functionality_bit

__all__ = [
    "SparseTensor",
    "sparse_coo",
    "sparse_csr",
    "sparse_csc",
    "sparse_bsr",
    "sparse_bsc",
    "COMPRESSED_LAYOUTS",
    "make_coo",
    "make_compressed",
    "layout_name",
]

sparse_coo = _Token("sparse_coo")
sparse_csr = _Token("sparse_csr")
sparse_csc = _Token("sparse_csc")
sparse_bsr = _Token("sparse_bsr")
sparse_bsc = _Token("sparse_bsc")

COMPRESSED_LAYOUTS = (sparse_csr, sparse_csc, sparse_bsr, sparse_bsc)
# Layouts compressed along rows (crow/col) rather than columns (ccol/row).
ROW_COMPRESSED = (sparse_csr, sparse_bsr)

_DENSE_BIT = functionality_bit("Dense")
_SPARSE_BIT = functionality_bit("Sparse")
_SPARSE_CSR_BIT = functionality_bit("SparseCsr")

# How PyTorch names layouts in its messages ("expected ... but got Sparse").
_LAYOUT_MESSAGE_NAMES = {
    "strided": "Strided", "sparse_coo": "Sparse", "sparse_csr": "SparseCsr",
    "sparse_csc": "SparseCsc", "sparse_bsr": "SparseBsr", "sparse_bsc": "SparseBsc",
}  # fmt: skip


def layout_name(layout: _Token) -> str:
    """The layout as PyTorch spells it in error messages (`Strided`, `Sparse`, `SparseCsr`)."""
    return _LAYOUT_MESSAGE_NAMES.get(layout.name, layout.name)


def layout_of(t: Tensor) -> _Token:
    """The layout of any tensor (strided for a plain one)."""
    return t._layout if isinstance(t, SparseTensor) else strided


class SparseTensor(Tensor):
    """A tensor in a sparse layout (Note: what a sparse tensor is)."""

    # The sparse fields live in the instance `__dict__` (not slots), so that the copies
    # autograd and the subclass machinery make of a tensor (its slots plus its `__dict__`)
    # keep them: `_layout`, `_parts`, `_sparse_dim`, `_dense_dim`, `_coalesced`, and
    # `_derived`: (versions of the parts, a form computed from them), e.g. the SciPy matrix
    # kernels/sparse_ops.py multiplies with; valid while no part was written in place.
    __slots__ = ()

    __torch_function__ = _disabled_torch_function_impl

    # ------------------------------------------------------------------ layout answers
    @property
    def layout(self) -> _Token:
        return self._layout

    @property
    def is_sparse(self) -> bool:
        return self._layout is sparse_coo

    @property
    def is_sparse_csr(self) -> bool:
        return self._layout is sparse_csr

    def is_contiguous(self, memory_format: object = None) -> bool:
        return False

    def stride(self, dim: int | None = None) -> tuple | int:
        if self._layout is not sparse_coo:
            raise RuntimeError(
                f"Sparse {_COMPRESSED_NAMES[self._layout.name]} tensors do not have strides"
            )
        return super().stride(dim)

    # ------------------------------------------------------------------ no dense data
    def _numpy(self) -> np.ndarray:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    _host_values = _numpy

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def untyped_storage(self) -> Storage:
        impl = "SparseTensorImpl" if self._layout is sparse_coo else "SparseCsrTensorImpl"
        raise NotImplementedError(f"Cannot access storage of {impl}")

    def numpy(self, *, force: bool = False) -> np.ndarray:
        raise TypeError(
            f"can't convert {layout_name(self._layout)} layout tensor to numpy. Use "
            "Tensor.to_dense() first."
        )

    def tolist(self) -> object:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def __repr__(self) -> str:
        from pyaten.core.sparse_printing import sparse_repr

        return sparse_repr(self)

    @staticmethod
    def _wrap_view(base: SparseTensor, view: Tensor) -> SparseTensor:
        """`detach` and other aliases of a sparse tensor: the same parts, the alias's version
        counter and base (the hook `Tensor._make_view` and `detach` call)."""
        alias = _assemble(base._layout, base._parts, base._sizes, base._sparse_dim,
                          base._dense_dim, base._coalesced)
        alias._version_counter = view._version_counter
        alias._base = view._base
        return alias

    def __deepcopy__(self, memo: dict) -> Tensor:
        found = memo.get(id(self))
        if found is not None:
            return found
        parts = tuple(p.__deepcopy__(memo) for p in self._parts)
        new = _assemble(self._layout, parts, self._sizes, self._sparse_dim, self._dense_dim,
                        self._coalesced)
        new._requires_grad = self._requires_grad
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol: int) -> tuple:
        return (_rebuild_sparse, (self._layout.name, tuple(p.detach() for p in self._parts),
                                  self._sizes, self._coalesced, self._requires_grad))


_COMPRESSED_NAMES = {"sparse_csr": "CSR", "sparse_csc": "CSC", "sparse_bsr": "BSR",
                     "sparse_bsc": "BSC"}


def _assemble(layout: _Token, parts: tuple, sizes: tuple, sparse_dim: int, dense_dim: int,
              coalesced: bool) -> SparseTensor:
    values = parts[-1]
    where = values._device
    bit = _SPARSE_BIT if layout is sparse_coo else _SPARSE_CSR_BIT
    # no dense bytes: the data lives in `parts`
    t = make_dataless(SparseTensor, sizes, (0,) * len(sizes), 0, values._dtype, where,
                      (where._keyset & ~_DENSE_BIT) | bit, 0)
    t._layout = layout
    t._parts = parts
    t._sparse_dim = sparse_dim
    t._dense_dim = dense_dim
    t._coalesced = coalesced
    t._derived = None
    return t


def parts_versions(t: SparseTensor) -> tuple:
    """The version of each part: a form derived from the parts is stale when they differ."""
    return tuple(p._version_counter.value for p in t._parts) + tuple(
        id(p._storage.data) for p in t._parts)


def make_coo(indices: Tensor, values: Tensor, sizes: tuple, coalesced: bool = False
             ) -> SparseTensor:
    """A COO tensor from its parts, trusted (the kernels validate what users pass)."""
    sparse_dim = indices._sizes[0]
    return _assemble(sparse_coo, (indices, values), tuple(sizes), sparse_dim,
                     len(values._sizes) - 1, coalesced)


def make_compressed(layout: _Token, compressed: Tensor, plain: Tensor, values: Tensor,
                    sizes: tuple) -> SparseTensor:
    """A compressed tensor (CSR/CSC/BSR/BSC) from its parts, trusted."""
    block = 2 if layout in (sparse_bsr, sparse_bsc) else 0
    dense_dim = len(values._sizes) - 1 - block
    return _assemble(layout, (compressed, plain, values), tuple(sizes), 2, dense_dim, False)


def _rebuild_sparse(layout_text: str, parts: tuple, sizes: tuple, coalesced: bool,
                    requires_grad: bool) -> SparseTensor:
    layout = {t.name: t for t in (sparse_coo, *COMPRESSED_LAYOUTS)}[layout_text]
    if layout is sparse_coo:
        t = make_coo(parts[0], parts[1], sizes, coalesced)
    else:
        t = make_compressed(layout, *parts, sizes)
    t._requires_grad = requires_grad
    return t


def index_dtype_check(name: str, t: Tensor) -> None:
    """PyTorch's check that an index part is int32/int64 (`make_compressed` trusts it)."""
    if t._dtype not in (dt.int32, dt.int64):
        raise RuntimeError(
            f"{name} must be an int32 or int64 tensor, but got {t._dtype.scalar_name}"
        )
