"""Arithmetic on sparse tensors: the `SparseCPU` / `SparseCsrCPU` kernels of pointwise ops,
`add`, `mul`, `sum`, `mm`/`addmm`, `sampled_addmm`, the sparse softmaxes, `index_select` and
transposition.

Pointwise ops that map zero to zero act on the stored values only: one rule
(`_UNARY_FAMILY`) registers `<op>_sparse` (COO: coalesced first, except for the linear `neg`)
and `<op>_sparse_csr` for each, calling the dense operator on the values. Products with dense
matrices run on SciPy's sparse matrices (`scipy.sparse.csr_array @ ndarray`), which is where
the time goes; COO inputs are coalesced into CSR for it.
"""

from __future__ import annotations

import numpy as np

from pyaten.core.promotion import promote_types
from pyaten.core.sparse import (
    COMPRESSED_LAYOUTS,
    SparseTensor,
    layout_of,
    make_compressed,
    make_coo,
    parts_versions,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
)
from pyaten.core.tensor import Tensor, _wrap_dim
from pyaten.native.kernels.sparse import (
    _array,
    _long,
    _tensor,
    coalesce_arrays,
    coalesced_parts,
    compressed_rows_cols,
    dense_array,
)
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native, native_at

# --- the pointwise family --------------------------------------------------------------------

_UNARY_FAMILY = (
    "abs", "neg", "relu", "sin", "sinh", "tan", "tanh", "asinh", "atan", "atanh", "sqrt",
    "expm1", "log1p", "trunc", "floor", "ceil", "sign", "sgn", "frac", "round", "deg2rad",
    "rad2deg",
)  # fmt: skip
_LINEAR = frozenset({"neg"})


def _with_values(t: SparseTensor, values: Tensor) -> SparseTensor:
    """`t`'s sparsity pattern with new values (the index parts are copied, as PyTorch's)."""
    if t._layout is sparse_coo:
        return make_coo(_aten().clone.default(t._parts[0]), values, t._sizes, t._coalesced)
    compressed, plain = (_aten().clone.default(p) for p in t._parts[:2])
    return make_compressed(t._layout, compressed, plain, values, t._sizes)


def _coalesced(t: SparseTensor) -> SparseTensor:
    return t if t._coalesced else _aten()._coalesce.default(t)


def _unary_rule(name: str):
    def coo(self: Tensor) -> Tensor:
        source = self if name in _LINEAR else _coalesced(self)
        return _with_values(source, getattr(_aten(), name).default(source._parts[1]))

    def compressed(self: Tensor) -> Tensor:
        return _with_values(self, getattr(_aten(), name).default(self._parts[2]))

    native_at(f"{name}_sparse", coo, __file__)
    native_at(f"{name}_sparse_csr", compressed, __file__)


for _name in _UNARY_FAMILY:
    _unary_rule(_name)


# --- mul -------------------------------------------------------------------------------------


def _is_scalar(t: Tensor) -> bool:
    return not isinstance(t, SparseTensor) and t.dim() == 0


def _key_of(indices: np.ndarray, sizes: tuple) -> np.ndarray:
    if indices.shape[0] == 0:
        return np.zeros(indices.shape[1], np.int64)
    return np.ravel_multi_index(tuple(indices), sizes)


def _check_same_size(op: str, a: Tensor, b: Tensor) -> None:
    if a._sizes != b._sizes:
        raise RuntimeError(
            f"{op}: expected 'self' and 'other' to have same size, but self has size "
            f"{list(a._sizes)} while other has size {list(b._sizes)} (FYI: op2-sparse "
            "multiplication and addition require the operands to have the same size)"
        )


@native
def mul_sparse(self: Tensor, other: Tensor) -> Tensor:
    if _is_scalar(other) or _is_scalar(self):
        sparse, scalar = (self, other) if _is_scalar(other) else (other, self)
        return _with_values(sparse, _aten().mul.Tensor(sparse._parts[1], scalar))
    if not isinstance(self, SparseTensor) or not isinstance(other, SparseTensor):
        sparse, dense = (self, other) if isinstance(self, SparseTensor) else (other, self)
        _check_same_size("mul", sparse, dense)
        indices, values = coalesced_parts(sparse)
        picked = _array(dense)[tuple(indices)] if indices.shape[0] else _array(dense)[None]
        product = _aten().mul.Tensor(_tensor(values, sparse._dtype),
                                     _tensor(picked, dense._dtype))
        return make_coo(_long(indices), product, sparse._sizes, True)
    _check_same_size("mul", self, other)
    sizes = self._sizes[: self._sparse_dim]
    (ia, va), (ib, vb) = coalesced_parts(self), coalesced_parts(other)
    _, where_a, where_b = np.intersect1d(_key_of(ia, sizes), _key_of(ib, sizes),
                                         assume_unique=True, return_indices=True)
    product = _aten().mul.Tensor(_tensor(va[where_a], self._dtype),
                                 _tensor(vb[where_b], other._dtype))
    return make_coo(_long(ia[:, where_a]), product, self._sizes, True)


def _compressed_via_coo(t: Tensor) -> Tensor:
    return _aten()._to_sparse.default(t) if layout_of(t) in COMPRESSED_LAYOUTS else t


def _back_to(layout, t: Tensor) -> Tensor:
    if layout is sparse_csr:
        return _aten()._to_sparse_csr.default(t, None)
    return _aten()._to_sparse_csc.default(t, None)


@native
def mul_sparse_csr(self: Tensor, other: Tensor) -> Tensor:
    layout = layout_of(self) if isinstance(self, SparseTensor) else layout_of(other)
    if _is_scalar(other):
        return _with_values(self, _aten().mul.Tensor(self._parts[2], other))
    result = mul_sparse(_compressed_via_coo(self), _compressed_via_coo(other))
    return _back_to(layout, result)


@native
def mul_scalar_sparse_csr(self: Tensor, other) -> Tensor:
    return _with_values(self, _aten().mul.Scalar(self._parts[2], other))


# --- add -------------------------------------------------------------------------------------


@native
def add_sparse(self: Tensor, other: Tensor, alpha=1) -> Tensor:
    if not isinstance(self, SparseTensor):  # dense + sparse: a dense result
        _check_same_size("add", self, other)
        scaled = dense_array(other) * alpha if alpha != 1 else dense_array(other)
        return _aten().add.Tensor(self, _tensor(np.asarray(scaled), other._dtype))
    if not isinstance(other, SparseTensor):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    _check_same_size("add", self, other)
    result_dtype = promote_types(self._dtype, other._dtype)
    va = _array(_aten().to.dtype(self._parts[1], result_dtype))
    vb = _array(_aten().to.dtype(_aten().mul.Scalar(other._parts[1], alpha), result_dtype))
    indices = np.concatenate((_array(self._parts[0]), _array(other._parts[0])), axis=1)
    values = np.concatenate((va, vb), axis=0)
    if self._coalesced and other._coalesced:
        indices, values = coalesce_arrays(indices, values, self._sizes[: self._sparse_dim])
        return make_coo(_long(indices), _tensor(values, result_dtype), self._sizes, True)
    return make_coo(_long(indices), _tensor(values, result_dtype), self._sizes, False)


@native
def add_sparse_csr(self: Tensor, other: Tensor, alpha=1) -> Tensor:
    if not isinstance(self, SparseTensor) or not isinstance(other, SparseTensor):
        dense, sparse = (self, other) if not isinstance(self, SparseTensor) else (other, self)
        scaled = _tensor(dense_array(sparse), sparse._dtype)
        if sparse is other:
            return _aten().add.Tensor(dense, scaled, alpha=alpha)
        return _aten().add.Tensor(scaled, dense, alpha=alpha)
    result = add_sparse(_compressed_via_coo(self), _compressed_via_coo(other), alpha)
    return _back_to(layout_of(self), result)


# --- sum -------------------------------------------------------------------------------------


@native
def sum_coo(self: Tensor, dtype=None) -> Tensor:
    return _aten().sum.default(self._parts[1], dtype=dtype)


@native
def sum_csr(self: Tensor, dtype=None) -> Tensor:
    return _aten().sum.default(self._parts[2], dtype=dtype)


@native
def sum_sparse_coo(self: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    ndim = self.dim()
    dims = sorted({d % ndim for d in (range(ndim) if not dim else dim)}) if ndim else []
    if not dims:
        return sum_coo(self, dtype)
    indices, values = coalesced_parts(self)
    sparse_dim = self._sparse_dim
    reduced_sparse = [d for d in dims if d < sparse_dim]
    kept_sparse = [d for d in range(sparse_dim) if d not in reduced_sparse]
    dense_axes = tuple(d - sparse_dim + 1 for d in dims if d >= sparse_dim)
    vals = _aten().sum.dim_IntList(_tensor(values, self._dtype), list(dense_axes), keepdim,
                                   dtype=dtype) if dense_axes else _tensor(values, self._dtype)
    if dtype is not None and not dense_axes:
        vals = _aten().to.dtype(vals, dtype)
    out_sizes = tuple(1 if d in dims else s for d, s in enumerate(self._sizes)
                      if keepdim or d not in dims)
    if not kept_sparse and not keepdim:
        return _aten().sum.dim_IntList(vals, [0], False)
    kept = indices[kept_sparse] if not keepdim else np.where(
        np.isin(np.arange(sparse_dim), reduced_sparse)[:, None], 0, indices)
    array = _array(vals)
    if keepdim:  # duplicates summed, yet flagged uncoalesced, as PyTorch's
        kept, array = coalesce_arrays(kept, array, out_sizes[:sparse_dim])
        return make_coo(_long(kept), _tensor(array, vals._dtype), out_sizes, False)
    new_sizes = tuple(self._sizes[d] for d in kept_sparse)
    kept, array = coalesce_arrays(kept, array, new_sizes)
    return make_coo(_long(kept), _tensor(array, vals._dtype), out_sizes, True)


@native
def sum_sparse_compressed(self: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    if not keepdim:
        raise RuntimeError("reduction operations on CSR tensors with keepdim=False is unsupported")
    dense = _tensor(dense_array(self), self._dtype)
    summed = _aten().sum.dim_IntList(dense, dim, True, dtype=dtype)
    return _back_to(sparse_csr, summed)


@native
def _sparse_sum(self: Tensor, dim=None) -> Tensor:
    """`_sparse_sum` (CompositeImplicitAutograd: every dim, through `_sparse_sum.dim`) and
    `_sparse_sum.dim` (CompositeExplicitAutograd): a sparse result over the dims left, dense
    when every sparse dim is reduced."""
    if dim is None:
        return _aten()._sparse_sum.dim(self, list(range(self.dim())))
    return sum_sparse_coo(self, list(dim), False, None)


@native
def _sparse_sum_backward_cpu(grad: Tensor, self: Tensor, dim) -> Tensor:
    """The gradient of `_sparse_sum.dim`: `grad` at each of `self`'s specified entries."""
    ndim = self.dim()
    dims = sorted({d % ndim for d in dim})
    kept_shape = tuple(1 if d in dims else s for d, s in enumerate(self._sizes))
    spread = np.broadcast_to(np.asarray(dense_array(grad)).reshape(kept_shape), self._sizes)
    indices, _ = coalesced_parts(self)
    picked = spread[tuple(indices)] if indices.shape[0] else spread[None]
    return make_coo(_long(indices), _tensor(np.ascontiguousarray(picked), grad._dtype),
                    self._sizes, True)


# --- matrix products (SciPy) -----------------------------------------------------------------


def _index32(array: np.ndarray, bound: int) -> np.ndarray:
    # SciPy's kernels run about a third faster on int32 indices; they are used when they fit.
    return array.astype(np.int32) if bound < 2**31 - 1 else array


def scipy_csr(t: SparseTensor) -> object:
    """A 2-D sparse tensor as SciPy's CSR matrix, kept on the tensor until a part is written
    (the values shared when they are already in row-major order)."""
    versions = parts_versions(t)
    derived = t._derived
    if derived is not None and derived[0] == versions:
        return derived[1]
    matrix = _scipy_csr(t)
    t._derived = (versions, matrix)
    return matrix


def _scipy_csr(t: SparseTensor) -> object:
    import scipy.sparse as sp  # on first use: it costs ~0.2 s of `import pyaten`

    values = _array(t._parts[-1])
    rows, cols = t._sizes[:2]
    if t._layout is sparse_coo:
        indices, values = coalesced_parts(t)  # row-major order: CSR's, without a sort
        bound = max(rows, cols, indices.shape[1]) + 1
        indptr = np.concatenate(([0], np.cumsum(np.bincount(indices[0], minlength=rows))))
        return sp.csr_array((values, _index32(indices[1], bound), _index32(indptr, bound)),
                            shape=t._sizes)
    if t._layout in (sparse_csr, sparse_csc):
        bound = max(rows, cols, values.shape[0]) + 1
        compressed = _index32(_array(t._parts[0]), bound)
        plain = _index32(_array(t._parts[1]), bound)
        if t._layout is sparse_csr:
            return sp.csr_array((values, plain, compressed), shape=t._sizes)
        return sp.csc_array((values, plain, compressed), shape=t._sizes).tocsr()
    compressed, plain = _array(t._parts[0]), _array(t._parts[1])
    if t._layout is sparse_bsr:
        return sp.bsr_array((values, plain, compressed), shape=t._sizes).tocsr()
    # BSC: the BSR form of the transpose (blocks transposed), transposed back
    transposed = sp.bsr_array((values.transpose(0, 2, 1), plain, compressed),
                              shape=(cols, rows))
    return sp.csr_array(transposed.T)


def _check_mm(self: Tensor, mat2: Tensor) -> None:
    if self.dim() != 2:
        raise RuntimeError(f"self must be a matrix, got {self.dim()}-D tensor")
    if mat2.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {mat2.dim()}-D tensor")
    if self._sizes[1] != mat2._sizes[0] and isinstance(self, SparseTensor):
        raise RuntimeError(
            f"addmm: Argument #3 (dense): Expected dim 0 size {self._sizes[1]}, got "
            f"{mat2._sizes[0]}"
        )
    if self._sizes[1] != mat2._sizes[0]:
        raise RuntimeError(
            "mat1 and mat2 shapes cannot be multiplied "
            f"({self._sizes[0]}x{self._sizes[1]} and {mat2._sizes[0]}x{mat2._sizes[1]})"
        )
    if self._dtype is not mat2._dtype:
        raise RuntimeError(
            f"expected mat1 and mat2 to have the same dtype, but got: "
            f"{self._dtype.cpp_name} != {mat2._dtype.cpp_name}"
        )


def _product(self: Tensor, mat2: Tensor) -> Tensor:
    a_sparse, b_sparse = isinstance(self, SparseTensor), isinstance(mat2, SparseTensor)
    if a_sparse and b_sparse:
        product = (scipy_csr(self) @ scipy_csr(mat2)).tocoo()
        indices = np.stack((product.row, product.col)).astype(np.int64)
        indices, values = coalesce_arrays(indices, product.data, self._sizes[:1] + mat2._sizes[1:])
        return make_coo(_long(indices), _tensor(values, self._dtype),
                        (self._sizes[0], mat2._sizes[1]), True)
    if a_sparse:
        out = scipy_csr(self) @ _array(mat2)
    else:
        out = (scipy_csr(mat2).T @ _array(self).T).T
    return _tensor(np.asarray(out), self._dtype)


@native
def _sparse_mm(sparse: Tensor, dense: Tensor) -> Tensor:
    """`mm`'s SparseCPU kernel and `pyaten.sparse.mm` (CompositeImplicitAutograd): a sparse
    product goes through `_sparse_addmm`, whose derivative keeps the sparse gradient."""
    _check_mm(sparse, dense)
    if isinstance(dense, SparseTensor) or not isinstance(sparse, SparseTensor):
        return _product(sparse, dense)
    zero = _tensor(np.zeros((), sparse._dtype.numpy), sparse._dtype)
    return _aten()._sparse_addmm.default(zero, sparse, dense, beta=0, alpha=1)


@native
def _sparse_addmm(self: Tensor, mat1: Tensor, mat2: Tensor, beta=1, alpha=1) -> Tensor:
    return _addmm(self, mat1, mat2, beta, alpha)


@native
def _sparse_csr_mm(self: Tensor, mat2: Tensor) -> Tensor:
    _check_mm(self, mat2)
    if layout_of(self).name == "sparse_bsc" and not isinstance(mat2, SparseTensor):
        raise RuntimeError(
            "addmm: computation on CPU is not implemented for Strided + SparseBsc @ Strided"
        )
    result = _product(self, mat2)
    if isinstance(result, SparseTensor):
        return _back_to(sparse_csr, result)
    return result


def _addmm(self: Tensor, mat1: Tensor, mat2: Tensor, beta, alpha) -> Tensor:
    _check_mm(mat1, mat2)
    product = _product(mat1, mat2)
    if isinstance(product, SparseTensor):
        product = _tensor(dense_array(product), product._dtype)
    scaled = _aten().mul.Scalar(product, alpha) if alpha != 1 else product
    if beta == 0:
        return scaled
    return _aten().add.Tensor(_aten().mul.Scalar(self, beta), scaled)


@native
def addmm_sparse_dense_cpu(self: Tensor, mat1: Tensor, mat2: Tensor, beta=1, alpha=1) -> Tensor:
    return _addmm(self, mat1, mat2, beta, alpha)


@native
def addmm_sparse_compressed_dense(self: Tensor, mat1: Tensor, mat2: Tensor, beta=1, alpha=1
                                  ) -> Tensor:
    return _addmm(self, mat1, mat2, beta, alpha)


@native
def sparse_sampled_addmm_sparse_csr_cpu(self: Tensor, mat1: Tensor, mat2: Tensor, beta=1,
                                        alpha=1) -> Tensor:
    if layout_of(self) is not sparse_csr:
        raise RuntimeError(
            "sampled_addmm: Expected self to be a sparse CSR tensor, but got "
            f"{layout_of(self).name}"
        )
    rows, cols = compressed_rows_cols(self)
    a, b = _array(mat1), _array(mat2)
    sampled = np.einsum("ij,ij->i", a[rows], b[:, cols].T)
    values = beta * _array(self._parts[2]) + alpha * sampled
    return _with_values(self, _tensor(values, self._dtype))


# --- sparse_mask (the gradient of to_dense) --------------------------------------------------


@native
def sparse_mask(self: Tensor, mask: Tensor) -> Tensor:
    """`self`'s values at `mask`'s specified entries, in `mask`'s (COO) pattern."""
    _check_same_size("sparse_mask", self, mask)
    indices, _ = coalesced_parts(mask)
    array = dense_array(self)
    picked = array[tuple(indices)] if indices.shape[0] else array[None]
    return make_coo(_long(indices), _tensor(picked, self._dtype), mask._sizes, True)


@native
def sparse_mask_sparse_compressed(self: Tensor, mask: Tensor) -> Tensor:
    _check_same_size("sparse_mask", self, mask)
    rows, cols = compressed_rows_cols(mask)
    picked = dense_array(self)[rows, cols]
    return _with_values(mask, _tensor(picked, self._dtype))


# --- softmax ---------------------------------------------------------------------------------


def _softmax(self: Tensor, dim: int, log: bool) -> Tensor:
    dim = dim % self.dim()
    if dim >= self._sparse_dim:
        raise NotImplementedError("pyaten's sparse softmax reduces sparse dimensions only")
    indices, values = coalesced_parts(self)
    # the entries of one slice along `dim` share every other sparse index
    others = np.delete(indices, dim, axis=0)
    sizes = tuple(s for d, s in enumerate(self._sizes[: self._sparse_dim]) if d != dim)
    groups = np.unique(_key_of(others, sizes), return_inverse=True)[1].reshape(-1)
    count = int(groups.max()) + 1 if groups.size else 0
    shape = (count,) + values.shape[1:]
    peak = np.full(shape, -np.inf, dtype=values.dtype)
    np.maximum.at(peak, groups, values)
    shifted = values - peak[groups]
    total = np.zeros(shape, dtype=values.dtype)
    np.add.at(total, groups, np.exp(shifted))
    out = shifted - np.log(total[groups]) if log else np.exp(shifted) / total[groups]
    return make_coo(_long(indices), _tensor(out, self._dtype), self._sizes, True)


@native
def softmax_sparse_cpu(self: Tensor, dim: int, half_to_float: bool) -> Tensor:
    return _softmax(self, dim, False)


@native
def log_softmax_sparse_cpu(self: Tensor, dim: int, half_to_float: bool) -> Tensor:
    return _softmax(self, dim, True)


def _softmax_backward(grad_output: Tensor, output: Tensor, dim: int, log: bool) -> Tensor:
    # per slice along `dim`: softmax  g_in = y * (g - sum(g * y)),
    #                        log     g_in = g - exp(y) * sum(g)
    dim = dim % output.dim()
    indices, y = coalesced_parts(output)
    g = dense_array(grad_output)[tuple(indices)]
    others = np.delete(indices, dim, axis=0)
    sizes = tuple(s for d, s in enumerate(output._sizes[: output._sparse_dim]) if d != dim)
    groups = np.unique(_key_of(others, sizes), return_inverse=True)[1].reshape(-1)
    total = np.zeros((int(groups.max()) + 1 if groups.size else 0,) + y.shape[1:], y.dtype)
    np.add.at(total, groups, g if log else g * y)
    result = g - np.exp(y) * total[groups] if log else y * (g - total[groups])
    return make_coo(_long(indices), _tensor(result, output._dtype), output._sizes, True)


@native
def softmax_backward_sparse_cpu(grad_output: Tensor, output: Tensor, dim: int, self: Tensor
                                ) -> Tensor:
    return _softmax_backward(grad_output, output, dim, False)


@native
def log_softmax_backward_sparse_cpu(grad_output: Tensor, output: Tensor, dim: int, self: Tensor
                                    ) -> Tensor:
    return _softmax_backward(grad_output, output, dim, True)


@native
def _sparse_softmax_int(self: Tensor, dim: int, dtype=None) -> Tensor:
    source = self if dtype is None else _with_values(self, _aten().to.dtype(self._parts[1], dtype))
    return _aten()._sparse_softmax.default(source, dim, False)


@native
def _sparse_log_softmax_int(self: Tensor, dim: int, dtype=None) -> Tensor:
    source = self if dtype is None else _with_values(self, _aten().to.dtype(self._parts[1], dtype))
    return _aten()._sparse_log_softmax.default(source, dim, False)


# --- index_select and transposition ----------------------------------------------------------


@native
def index_select_sparse_cpu(self: Tensor, dim: int, index: Tensor) -> Tensor:
    dim = dim % self.dim()
    indices, values = _array(self._parts[0]), _array(self._parts[1])
    wanted = _array(index).reshape(-1)
    sizes = list(self._sizes)
    sizes[dim] = len(wanted)
    if dim >= self._sparse_dim:
        picked = np.take(values, wanted, axis=dim - self._sparse_dim + 1)
        return make_coo(_long(indices), _tensor(picked, self._dtype), tuple(sizes), False)
    # every stored entry whose index along `dim` is wanted, once per time it is wanted
    matches = indices[dim][:, None] == wanted[None, :]
    entry, position = np.nonzero(matches)
    new_indices = indices[:, entry].copy()
    new_indices[dim] = position
    return make_coo(_long(new_indices), _tensor(values[entry], self._dtype), tuple(sizes), False)


def sparse_transpose(self: SparseTensor, dim0: int, dim1: int) -> Tensor:
    """`transpose` of a sparse tensor (called by the strided kernel for other layouts)."""
    ndim = self.dim()
    d0, d1 = dim0 % ndim, dim1 % ndim
    sizes = list(self._sizes)
    sizes[d0], sizes[d1] = sizes[d1], sizes[d0]
    if self._layout is sparse_coo:
        if d0 >= self._sparse_dim or d1 >= self._sparse_dim:
            raise NotImplementedError("pyaten transposes the sparse dimensions of COO only")
        indices = _array(self._parts[0]).copy()
        indices[[d0, d1]] = indices[[d1, d0]]
        return make_coo(_long(indices), _aten().clone.default(self._parts[1]), tuple(sizes),
                        d0 == d1 and self._coalesced)
    if {d0, d1} != {0, 1}:
        return self
    swapped = {sparse_csr: sparse_csc, sparse_csc: sparse_csr}.get(self._layout)
    if swapped is None:
        raise NotImplementedError("pyaten transposes the CSR and CSC layouts only")
    compressed, plain = (_aten().clone.default(p) for p in self._parts[:2])
    return make_compressed(swapped, compressed, plain, _aten().clone.default(self._parts[2]),
                           tuple(sizes))



# --- cat and bmm -----------------------------------------------------------------------------

def _shape_text(sizes: tuple) -> str:
    return "[" + ", ".join(str(s) for s in sizes) + "]"


@native
def cat_sparse(tensors: tuple, dim: int = 0) -> Tensor:
    """`cat` of COO tensors: along a sparse dimension the indices are shifted and joined;
    along a dense one each tensor's values are padded with zeros to the joined extent. The
    result is uncoalesced, as PyTorch's."""
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, SparseTensor) or t._layout is not sparse_coo:
            raise RuntimeError(
                f"Concatenating sparse tensors, but a dense tensor was found at position {i}.")
    first = tensors[0]
    ndim = len(first._sizes)
    dim = _wrap_dim(int(dim), ndim)
    for i, t in enumerate(tensors):
        if len(t._sizes) != ndim or any(
                a != b for d, (a, b) in enumerate(zip(first._sizes, t._sizes)) if d != dim):
            raise RuntimeError(
                f"All tensors must have the same shape: {_shape_text(first._sizes)} (except in "
                f"the concatenating dimension), but found shape: {_shape_text(t._sizes)} at "
                f"position {i}.")
    sparse_dim, dense_dim = first._sparse_dim, len(first._sizes) - first._sparse_dim
    for i, t in enumerate(tensors):
        if t._sparse_dim != sparse_dim:
            raise RuntimeError(
                f"All tensors must have the same sparse_dim and dense_dim: {sparse_dim}, "
                f"{dense_dim}, but tensor at position {i} has {t._sparse_dim}, "
                f"{len(t._sizes) - t._sparse_dim}.")
    out_dtype = first._dtype
    for t in tensors[1:]:
        out_dtype = promote_types(out_dtype, t._dtype)
    sizes = list(first._sizes)
    sizes[dim] = sum(t._sizes[dim] for t in tensors)
    index_parts, value_parts, at = [], [], 0
    for t in tensors:
        indices = _array(t._parts[0])
        values = _array(t._parts[1]).astype(out_dtype.numpy, copy=False)
        if dim < sparse_dim:
            indices = indices.copy()
            indices[dim] += at
        else:
            axis = dim - sparse_dim + 1
            shape = list(values.shape)
            shape[axis] = sizes[dim]
            padded = np.zeros(shape, out_dtype.numpy)
            where = [slice(None)] * len(shape)
            where[axis] = slice(at, at + t._sizes[dim])
            padded[tuple(where)] = values
            values = padded
        index_parts.append(indices)
        value_parts.append(values)
        at += t._sizes[dim]
    indices = np.concatenate(index_parts, axis=1)
    values = np.concatenate(value_parts, axis=0)
    return make_coo(_long(indices), _tensor(values, out_dtype), tuple(sizes), False)


@native
def bmm_sparse_cpu(self: Tensor, mat2: Tensor) -> Tensor:
    """`bmm` of a 3-D COO tensor (three sparse dimensions) by a dense 3-D tensor: one SciPy
    CSR product per batch, a dense result."""
    if isinstance(mat2, SparseTensor) or getattr(mat2, "is_nested", False) or getattr(
            mat2, "is_quantized", False):
        raise RuntimeError("bmm_sparse: Tensor 'mat2' must be dense")
    if not isinstance(self, SparseTensor) or self._layout is not sparse_coo:
        raise RuntimeError("bmm_sparse: Tensor 'self' must be sparse")
    dense_dim = len(self._sizes) - self._sparse_dim
    if dense_dim != 0:
        raise RuntimeError(f"bmm_sparse: Tensor 'self' must have 0 dense dims, but has "
                           f"{dense_dim}")
    if self._sparse_dim != 3:
        raise RuntimeError(f"bmm_sparse: Tensor 'self' must have 3 sparse dims, but has "
                           f"{self._sparse_dim}")
    if mat2.dim() != 3:
        raise RuntimeError(f"bmm_sparse: Tensor 'mat2' must have 3 dims, but has {mat2.dim()}")
    if self._sizes[0] != mat2._sizes[0]:
        raise RuntimeError("bmm_sparse: 'self.size(0)' and 'mat2.size(0)' must match")
    if self._sizes[2] != mat2._sizes[1]:
        raise RuntimeError("bmm_sparse: 'self.size(2)' and 'mat2.size(1)' must match")
    if self._dtype is not mat2._dtype:
        raise RuntimeError(f"expected scalar type {self._dtype.scalar_name} but found "
                           f"{mat2._dtype.scalar_name}")
    import scipy.sparse as sp  # on first use, as in scipy_csr

    batches, rows, inner = self._sizes
    cols = mat2._sizes[2]
    indices, values = coalesced_parts(self)
    dense = _array(mat2)
    out = np.zeros((batches, rows, cols), self._dtype.numpy)
    bounds = np.searchsorted(indices[0], np.arange(batches + 1))
    for b in range(batches):
        lo, hi = bounds[b], bounds[b + 1]
        if lo == hi:
            continue
        matrix = sp.csr_array((values[lo:hi], (indices[1, lo:hi], indices[2, lo:hi])),
                              shape=(rows, inner))
        out[b] = matrix @ dense[b]
    return _tensor(out, self._dtype)
