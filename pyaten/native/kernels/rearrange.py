"""Rearranging data: flip fliplr flipud roll rot90 repeat tile repeat_interleave, the
triangles tril triu, the diagonals diag diag_embed diagflat, and the stacks hstack vstack
dstack column_stack row_stack.

Unlike the views in `shape.py` and `view_ops.py`, every result here is a fresh tensor. The
kernels that PyTorch runs per backend (`flip`, `roll`, `tril`/`triu`, `repeat_interleave`)
compute the result's geometry first and only then touch data, so one function serves the CPU
and Meta keys; the others are composites of dispatched calls, as PyTorch declares them.

Note: result layouts. `flip` allocates like `empty_like(self)` (a dense input keeps its
strides, anything else is row-major), `roll`, `repeat`, `tril`/`triu` and `diag_embed` are
row-major, and `rot90` is a `flip` then a `transpose_`, so its result is a transposed view of
a fresh tensor, exactly as PyTorch's strides show.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import Tensor, contiguous_format
from pyaten.core.views import contiguous_strides, empty_tensor
from pyaten.native.family import unsupported_dtype
from pyaten.native.kernels.copy import assign, like_strides
from pyaten.native.kernels.shape import format_shape, wrap_dim
from pyaten.native.ops_handles import aten_ops
from pyaten.native.registry import native


def wrap_dims(dims, ndim: int) -> list[int]:
    """Wrapped dims, each at most once (ATen's dim_list_to_bitset)."""
    seen: list[int] = []
    for d in dims:
        w = wrap_dim(d, ndim)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.append(w)
    return seen


def _has_data(t: Tensor) -> bool:
    return t._device.type != "meta" and t.numel() != 0


# --- flip, roll, rot90 ------------------------------------------------------------------------


@native
def flip(self: Tensor, dims: tuple) -> Tensor:
    axes = wrap_dims(dims, len(self._sizes))
    strides = like_strides(self, None)
    if strides == contiguous_strides(self._sizes):
        strides = None  # the cheaper row-major allocation
    result = empty_tensor(self._sizes, self._dtype, self._device, strides)
    if _has_data(self):
        source = self._numpy()
        assign(result._numpy(), np.flip(source, tuple(axes)) if self._sizes else source)
    return result


@native
def fliplr(self: Tensor) -> Tensor:
    if len(self._sizes) < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return aten_ops().flip.default(self, (1,))


@native
def flipud(self: Tensor) -> Tensor:
    if len(self._sizes) < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return aten_ops().flip.default(self, (0,))


@native
def roll(self: Tensor, shifts: tuple, dims: tuple = ()) -> Tensor:
    if not shifts:
        raise RuntimeError("`shifts` required")
    if self.numel() == 0 and dims and len(dims) == len(shifts):
        return aten_ops().clone.default(self)  # ATen: nothing to roll (dims unchecked), a clone
    if not dims and len(shifts) == 1:
        # no dims: roll the flattened tensor, then restore the shape
        result = empty_tensor(self._sizes, self._dtype, self._device)
        if _has_data(self):
            flat = result._numpy().reshape(-1)  # the fresh result is row-major: a view
            _roll_into(flat, self._numpy().reshape(-1), shifts[0], 0)
        return result
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
        )
    axes = [wrap_dim(d, len(self._sizes), wrap_scalar=False) for d in dims]
    result = empty_tensor(self._sizes, self._dtype, self._device)
    if _has_data(self):
        if len(axes) == 1:
            _roll_into(result._numpy(), self._numpy(), shifts[0], axes[0])
        else:
            assign(result._numpy(), np.roll(self._numpy(), tuple(shifts), tuple(axes)))
    return result


def _roll_into(target: np.ndarray, source: np.ndarray, shift: int, axis: int) -> None:
    """target = source rolled by `shift` along `axis`: two slice copies (np.roll makes more)."""
    size = source.shape[axis]
    shift %= size
    lead = (slice(None),) * axis
    if shift == 0:
        assign(target, source)
        return
    assign(target[lead + (slice(shift, None),)], source[lead + (slice(None, size - shift),)])
    assign(target[lead + (slice(None, shift),)], source[lead + (slice(size - shift, None),)])


@native
def rot90(self: Tensor, k: int = 1, dims: tuple = (0, 1)) -> Tensor:
    ndim = len(self._sizes)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {ndim}")
    d0, d1 = dims
    if wrap_dim(d0, ndim) == wrap_dim(d1, ndim):
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    aten = aten_ops()
    k %= 4
    if k == 1:
        return aten.transpose_.default(aten.flip.default(self, (d1,)), d0, d1)
    if k == 2:
        return aten.flip.default(self, (d0, d1))
    if k == 3:
        return aten.transpose_.default(aten.flip.default(self, (d0,)), d0, d1)
    return aten.clone.default(self, contiguous_format)


# --- repeat, tile, repeat_interleave ----------------------------------------------------------


@native
def repeat(self: Tensor, repeats: tuple) -> Tensor:
    sizes = self._sizes
    if len(repeats) < len(sizes):
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            "of tensor"
        )
    padded = (1,) * (len(repeats) - len(sizes)) + tuple(sizes)
    target = tuple(p * r for p, r in zip(padded, repeats))
    for s in target:
        if s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {format_shape(target)}"
            )
    result = empty_tensor(target, self._dtype, self._device)
    if self._device.type != "meta" and result.numel() != 0:
        assign(result._numpy(), np.tile(self._numpy().reshape(padded), repeats))
    return result


@native
def tile_symint(self: Tensor, dims: tuple) -> Tensor:
    missing = len(self._sizes) - len(dims)
    if missing > 0:
        dims = (1,) * missing + tuple(dims)
    return aten_ops().repeat.default(self, tuple(dims))


@native
def repeat_interleave_cpu(repeats: Tensor, output_size: int | None = None) -> Tensor:
    if len(repeats._sizes) != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats._dtype not in (dt.int64, dt.int32):
        raise unsupported_dtype("repeat_interleave_cpu", repeats._dtype)
    if repeats._device.type == "meta":
        if output_size is None:
            raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
        return empty_tensor((output_size,), repeats._dtype, repeats._device)
    counts = repeats._numpy().astype(np.int64)
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    total = int(counts.sum())
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    result = empty_tensor((total,), repeats._dtype, repeats._device)
    if total:
        assign(result._numpy(), np.repeat(np.arange(len(counts)), counts))
    return result


@native
def repeat_interleave_self_Tensor(
    self: Tensor, repeats: Tensor, dim: int | None = None, output_size: int | None = None
) -> Tensor:
    aten = aten_ops()
    source = self
    if dim is None:
        source = aten.flatten.using_ints(self, 0, -1)
        dim = 0
    dim = wrap_dim(dim, len(source._sizes))
    length = source._sizes[dim] if source._sizes else 1
    if len(repeats._sizes) == 0 or repeats._sizes == (1,):
        repeats = aten.expand.default(aten.reshape.default(repeats, (1,)), (length,))
    elif len(repeats._sizes) == 1:
        if repeats._sizes[0] != length:
            raise RuntimeError(
                "repeats must have the same size as input along dim, but got repeats.size(0) "
                f"= {repeats._sizes[0]} and input.size({dim}) = {length}"
            )
    else:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    positions = aten.repeat_interleave.Tensor(repeats, output_size)
    if not source._sizes:
        source = aten.reshape.default(source, (1,))
    return aten.index_select.default(source, dim, positions)


@native
def repeat_interleave_self_int(
    self: Tensor, repeats: int, dim: int | None = None, output_size: int | None = None
) -> Tensor:
    aten = aten_ops()
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    source = self if dim is not None else aten.flatten.using_ints(self, 0, -1)
    axis = 0 if dim is None else wrap_dim(dim, len(source._sizes))
    if output_size is None:
        output_size = (source._sizes[axis] if source._sizes else 1) * repeats
    counts = aten.full.default((1,), repeats, dt.int64, None, self._device, None)
    return repeat_interleave_self_Tensor(source, counts, axis, output_size)


# --- tril, triu (structured) -----------------------------------------------------------------


def _meta_triangle(op, self: Tensor, name: str) -> None:
    if len(self._sizes) < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    op.set_output(0, self._sizes, self._dtype, self._device)


@native
def meta_tril(op, self: Tensor, diagonal: int = 0) -> None:
    _meta_triangle(op, self, "tril")


@native
def meta_triu(op, self: Tensor, diagonal: int = 0) -> None:
    _meta_triangle(op, self, "triu")


_ZEROED: dict[tuple, np.ndarray] = {}


def _zeroed_part(rows: int, cols: int, diagonal: int, lower: bool) -> np.ndarray:
    """The (rows, cols) mask of the elements tril (`lower`) or triu sets to zero (cached)."""
    key = (rows, cols, diagonal, lower)
    mask = _ZEROED.get(key)
    if mask is None:
        below = np.arange(cols)[None, :] - np.arange(rows)[:, None]  # column - row
        mask = below > diagonal if lower else below < diagonal
        if len(_ZEROED) < 1024:
            _ZEROED[key] = mask
    return mask


def _triangle(self: Tensor, diagonal: int, out: Tensor, lower: bool) -> None:
    if not _has_data(self):
        return
    target = out._numpy()
    if out is not self:
        assign(target, self._numpy())
    rows, cols = self._sizes[-2:]
    np.copyto(target, np.zeros((), target.dtype), where=_zeroed_part(rows, cols, diagonal, lower))


@native
def tril_cpu(op, self: Tensor, diagonal: int, out: Tensor) -> None:
    _triangle(self, diagonal, out, lower=True)


@native
def triu_cpu(op, self: Tensor, diagonal: int, out: Tensor) -> None:
    _triangle(self, diagonal, out, lower=False)


# --- diagonals: diag_embed, diag, diagflat ---------------------------------------------------


@native
def diag_embed(self: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    ndim = len(self._sizes) + 1
    d1 = wrap_dim(dim1, ndim)
    d2 = wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    last = self._sizes[-1] if self._sizes else 1
    n = last + abs(offset)
    sizes = list(self._sizes[:-1])
    low, high = (d1, d2) if d1 < d2 else (d2, d1)
    sizes.insert(low, n)
    sizes.insert(high, n)
    aten = aten_ops()
    result = aten.zeros.default(tuple(sizes), self._dtype, None, self._device, None)
    aten.copy_.default(aten.diagonal.default(result, offset, d1, d2), self)
    return result


@native
def diag(self: Tensor, diagonal: int = 0) -> Tensor:
    ndim = len(self._sizes)
    if ndim not in (1, 2):
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {ndim}D")
    if ndim == 1:
        return aten_ops().diag_embed.default(self, diagonal, 0, 1)
    return aten_ops().diagonal_copy.default(self, diagonal, 0, 1)


@native
def diag_out(self: Tensor, diagonal: int = 0, out: Tensor = None) -> Tensor:
    ndim = len(self._sizes)
    if ndim not in (1, 2):
        raise RuntimeError(f"Supports 1D or 2D tensors. Got {ndim}D")
    if ndim == 1:
        return aten_ops().diag_embed.out(self, diagonal, 0, 1, out)
    return aten_ops().diagonal_copy.out(self, diagonal, 0, 1, out)


@native
def diagflat(self: Tensor, offset: int = 0) -> Tensor:
    aten = aten_ops()
    flat = aten.view.default(aten.contiguous.default(self), (-1,))
    return aten.diag.default(flat, offset)


# --- stacks ------------------------------------------------------------------------------------


def _nonempty(tensors, name: str) -> None:
    if len(tensors) == 0:
        raise RuntimeError(f"{name} expects a non-empty TensorList")


def _hstack_pieces(tensors) -> tuple[list, int]:
    _nonempty(tensors, "hstack")
    pieces = aten_ops().atleast_1d.Sequence(tensors)
    return pieces, 0 if len(pieces[0]._sizes) == 1 else 1


@native
def hstack(tensors) -> Tensor:
    pieces, dim = _hstack_pieces(tensors)
    return aten_ops().cat.default(pieces, dim)


@native
def hstack_out(tensors, out: Tensor) -> Tensor:
    pieces, dim = _hstack_pieces(tensors)
    return aten_ops().cat.out(pieces, dim, out)


@native
def vstack(tensors) -> Tensor:
    _nonempty(tensors, "vstack")
    return aten_ops().cat.default(aten_ops().atleast_2d.Sequence(tensors), 0)


@native
def vstack_out(tensors, out: Tensor) -> Tensor:
    _nonempty(tensors, "vstack")
    return aten_ops().cat.out(aten_ops().atleast_2d.Sequence(tensors), 0, out)


@native
def row_stack(tensors) -> Tensor:
    return aten_ops().vstack.default(tensors)


@native
def row_stack_out(tensors, out: Tensor) -> Tensor:
    return aten_ops().vstack.out(tensors, out)


@native
def dstack(tensors) -> Tensor:
    _nonempty(tensors, "dstack")
    return aten_ops().cat.default(aten_ops().atleast_3d.Sequence(tensors), 2)


@native
def dstack_out(tensors, out: Tensor) -> Tensor:
    _nonempty(tensors, "dstack")
    return aten_ops().cat.out(aten_ops().atleast_3d.Sequence(tensors), 2, out)


def _columns(tensors) -> list:
    _nonempty(tensors, "column_stack")
    reshape = aten_ops().reshape.default
    return [reshape(t, (t.numel(), 1)) if len(t._sizes) <= 1 else t for t in tensors]


@native
def column_stack(tensors) -> Tensor:
    return aten_ops().hstack.default(_columns(tensors))


@native
def column_stack_out(tensors, out: Tensor) -> Tensor:
    return aten_ops().hstack.out(_columns(tensors), out)
