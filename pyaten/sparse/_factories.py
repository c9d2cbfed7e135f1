"""The sparse factories as Python sees them: `pyaten.sparse_coo_tensor`, `sparse_csr_tensor`,
`sparse_csc_tensor`, `sparse_bsr_tensor`, `sparse_bsc_tensor`, `sparse_compressed_tensor`.

As PyTorch's (bound by hand in its C++, not generated), they accept array-likes for the
parts (indices become int64 tensors, values get `dtype` or the inferred one), `size`
positionally or by keyword, `requires_grad`, and `check_invariants=True`, which checks the
index invariants with PyTorch's messages. They then call the declared operators
(`aten::sparse_coo_tensor.indices_size`, `aten::sparse_compressed_tensor...`), which dispatch.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.creation import tensor as make_tensor
from pyaten.core.sparse import sparse_bsc, sparse_bsr, sparse_csc, sparse_csr
from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten_ops as _aten

__all__ = ["sparse_coo_tensor", "sparse_compressed_tensor", "sparse_csr_tensor",
           "sparse_csc_tensor", "sparse_bsr_tensor", "sparse_bsc_tensor"]


def _part(data: object, dtype: object = None) -> Tensor:
    if isinstance(data, Tensor):
        return data
    return make_tensor(data, dtype=dtype)


def _finish(result: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        result.requires_grad_(True)
    return result


def sparse_coo_tensor(indices: object, values: object = None, size: object = None, *,
                      dtype: object = None, device: object = None, pin_memory: bool = False,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> Tensor:
    """A COO tensor from `indices` (sparse_dim x nnz) and `values` (nnz x dense dims), or an
    empty one of `size` (`sparse_coo_tensor((2, 3))`), as `torch.sparse_coo_tensor`."""
    if values is None:  # the size-only form
        made = _aten().sparse_coo_tensor.size(list(indices), dtype=dtype, device=device)
        return _finish(made, requires_grad)
    index = _part(indices, dt.int64)
    value = _part(values, dtype)
    if size is None:
        made = _aten().sparse_coo_tensor.indices(index, value, dtype=dtype, device=device,
                                                 is_coalesced=is_coalesced)
    else:
        made = _aten().sparse_coo_tensor.indices_size(index, value, list(size), dtype=dtype,
                                                      device=device, is_coalesced=is_coalesced)
    if check_invariants:
        _check_coo(made)
    return _finish(made, requires_grad)


def _check_coo(t: Tensor) -> None:
    indices = t._parts[0]._host_values()
    for d in range(indices.shape[0]):
        row = indices[d]
        if row.size and row.min() < 0:
            raise RuntimeError(f"found negative index {int(row.min())} for dim {d}")
        if row.size and row.max() >= t.shape[d]:
            raise RuntimeError(
                f"size is inconsistent with indices: for dim {d}, size is {t.shape[d]} but "
                f"found index {int(row.max())}"
            )


_NAMES = {
    sparse_csr: ("crow_indices", "col_indices", "rows", "ncols"),
    sparse_bsr: ("crow_indices", "col_indices", "rows", "ncols"),
    sparse_csc: ("ccol_indices", "row_indices", "columns", "nrows"),
    sparse_bsc: ("ccol_indices", "row_indices", "columns", "nrows"),
}


_COUNT_NAMES = {"rows": "nrows", "columns": "ncols"}


def _check_compressed(t: Tensor) -> None:
    compressed, plain = (p._host_values() for p in t._parts[:2])
    cname, pname, outer, inner = _NAMES[t.layout]
    row_major = t.layout in (sparse_csr, sparse_bsr)
    block = t._parts[2].shape[1:3] if t.layout in (sparse_bsr, sparse_bsc) else (1, 1)
    count = (t.shape[0] // block[0]) if row_major else (t.shape[1] // block[1])
    limit = (t.shape[1] // block[1]) if row_major else (t.shape[0] // block[0])
    nnz = plain.shape[0]

    def unsatisfied(text: str) -> RuntimeError:
        return RuntimeError(f"`{text}` is not satisfied.")

    if compressed.shape[0] != count + 1:
        raise RuntimeError(
            f"{cname}.shape[-1] must be equal to the number of {outer} + 1 (={count + 1}), but "
            f"got {compressed.shape[0]}"
        )
    if compressed[0] != 0:
        raise unsatisfied(f"{cname}[..., 0] == 0")
    if compressed[-1] != nnz:
        raise unsatisfied(f"{cname}[..., -1] == nnz")
    steps = np.diff(compressed)
    if steps.size and (steps.min() < 0 or steps.max() > limit):
        raise unsatisfied(f"0 <= {cname}[..., 1:] - {cname}[..., :-1] <= {inner}")
    if nnz and (plain.min() < 0 or plain.max() >= limit):
        raise unsatisfied(f"0 <= {pname} < {inner}")
    segments = np.repeat(np.arange(count), steps)
    ordered = np.lexsort((plain, segments))
    if nnz and (np.any(ordered != np.arange(nnz)) or np.any(
            (np.diff(plain) == 0) & (np.diff(segments) == 0))):
        raise unsatisfied(
            f"{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all i = 1, ..., "
            f"{_COUNT_NAMES[outer]} are sorted and distinct along the last dimension values"
        )


def sparse_compressed_tensor(compressed_indices: object, plain_indices: object, values: object,
                             size: object = None, *, dtype: object = None,
                             layout: object = None, device: object = None,
                             pin_memory: bool = False, requires_grad: bool = False,
                             check_invariants: bool | None = None) -> Tensor:
    """A compressed sparse tensor of `layout` (CSR, CSC, BSR or BSC) from its parts, as
    `torch.sparse_compressed_tensor`."""
    parts = (_part(compressed_indices, dt.int64), _part(plain_indices, dt.int64),
             _part(values, dtype))
    if size is None:
        made = _aten().sparse_compressed_tensor.comp_plain_value(
            *parts, dtype=dtype, layout=layout, device=device)
    else:
        made = _aten().sparse_compressed_tensor.comp_plain_value_size(
            *parts, list(size), dtype=dtype, layout=layout, device=device)
    if check_invariants:
        _check_compressed(made)
    return _finish(made, requires_grad)


def _layout_factory(layout: object, names: tuple[str, str]):  # noqa: ANN202
    def factory(compressed: object, plain: object, values: object, size: object = None, *,
                dtype: object = None, device: object = None, pin_memory: bool = False,
                requires_grad: bool = False, check_invariants: bool | None = None) -> Tensor:
        return sparse_compressed_tensor(compressed, plain, values, size, dtype=dtype,
                                        layout=layout, device=device,
                                        requires_grad=requires_grad,
                                        check_invariants=check_invariants)

    factory.__name__ = factory.__qualname__ = f"{layout.name}_tensor"
    factory.__doc__ = (f"A {layout.name} tensor from `{names[0]}`, `{names[1]}` and `values`, "
                       f"as `torch.{layout.name}_tensor`.")
    return factory


sparse_csr_tensor = _layout_factory(sparse_csr, ("crow_indices", "col_indices"))
sparse_csc_tensor = _layout_factory(sparse_csc, ("ccol_indices", "row_indices"))
sparse_bsr_tensor = _layout_factory(sparse_bsr, ("crow_indices", "col_indices"))
sparse_bsc_tensor = _layout_factory(sparse_bsc, ("ccol_indices", "row_indices"))
