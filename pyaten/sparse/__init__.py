"""`pyaten.sparse`, at `torch.sparse`'s path: the sparse-only operators.

`mm`, `addmm`, `sum`, `softmax`, `log_softmax` and `sampled_addmm` call operators declared in
native_functions.yaml (`_sparse_mm`, `addmm`, `sum`, `_sparse_softmax.int`,
`_sparse_log_softmax.int`, `sparse_sampled_addmm`), so they dispatch on the `SparseCPU` /
`SparseCsrCPU` keys like any operator. The layouts themselves (`pyaten.sparse_coo`,
`sparse_csr`, ...) and the tensor model are in pyaten/core/sparse.py; the kernels in
pyaten/native/kernels/sparse*.py. See docs/sparse.md.
"""

from __future__ import annotations

from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten_ops as _aten

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "sampled_addmm"]


def mm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """The product of a sparse matrix with a dense or sparse one (`torch.sparse.mm`); its
    gradient for a sparse `mat1` is sparse, with `mat1`'s pattern."""
    return _aten()._sparse_mm.default(mat1, mat2)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1
          ) -> Tensor:
    """`beta * mat + alpha * (mat1 @ mat2)` for a sparse `mat1` (`torch.sparse.addmm`)."""
    return _aten().addmm.default(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input: Tensor, dim: int | tuple | None = None, dtype: object = None) -> Tensor:  # noqa: A001
    """The sum of a sparse tensor's elements: a dense 0-dim tensor over all dimensions, else
    a sparse tensor over the remaining ones (`torch.sparse.sum`)."""
    if dtype is not None:
        if dim is None:
            return _aten().sum.default(input, dtype=dtype)
        dims = [dim] if isinstance(dim, int) else list(dim)
        return _aten().sum.dim_IntList(input, dims, False, dtype=dtype)
    if dim is None:  # `_sparse_sum`, whose gradient is sparse (PyTorch's rule)
        return _aten()._sparse_sum.default(input)
    return _aten()._sparse_sum.dim(input, [dim] if isinstance(dim, int) else list(dim))


def softmax(input: Tensor, dim: int, dtype: object = None) -> Tensor:
    """Softmax over the specified entries of each slice along `dim` (unspecified entries
    count as -inf, not 0), as `torch.sparse.softmax`."""
    return _aten()._sparse_softmax.int(input, dim, dtype)


def log_softmax(input: Tensor, dim: int, dtype: object = None) -> Tensor:
    """`log(softmax(input, dim))` over the specified entries (`torch.sparse.log_softmax`)."""
    return _aten()._sparse_log_softmax.int(input, dim, dtype)


def sampled_addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1,
                  alpha: float = 1) -> Tensor:
    """`beta * input + alpha * (mat1 @ mat2)` computed only at `input`'s specified entries
    (a sparse CSR `input`), as `torch.sparse.sampled_addmm`."""
    return _aten().sparse_sampled_addmm.default(input, mat1, mat2, beta=beta, alpha=alpha)


# --- gradient helpers that derivatives.yaml's formulas call (PyTorch's rules: the gradient
# of a sparse input is sparse, with the input's pattern) -------------------------------------


def _values_backward(grad: Tensor, self: Tensor) -> Tensor:
    """The gradient of `self.values()`: a sparse tensor with `self`'s indices and `grad` as
    its values (of a nested `self`: a nested tensor over `grad` with `self`'s geometry)."""
    from pyaten.core.sparse import make_compressed, make_coo, sparse_coo

    if self.is_nested:
        from pyaten.native.kernels.nested_tensor import make_nested

        return make_nested(_aten().contiguous.default(grad), self._nt_sizes, self._nt_strides,
                           self._nt_offsets)
    indices = [_aten().clone.default(p) for p in self._parts[:-1]]
    if self.layout is sparse_coo:
        return make_coo(indices[0], grad, tuple(self.shape), self.is_coalesced())
    return make_compressed(self.layout, indices[0], indices[1], grad, tuple(self.shape))


def _mm_mat1_sparse_backward(grad: Tensor, mat1: Tensor, mat2: Tensor, alpha: object) -> Tensor:
    """The gradient of a sparse `mat1` in `alpha * mat1 @ mat2`: `alpha * grad @ mat2^T` at
    `mat1`'s specified entries only."""
    full = _aten().mm.default(grad, _aten().t.default(mat2))
    if alpha != 1:
        full = _aten().mul.Scalar(full, alpha)
    return _aten().sparse_mask.default(full, mat1)
