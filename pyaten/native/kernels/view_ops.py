"""More views and their relatives: diagonal unfold movedim moveaxis swapaxes swapdims
unflatten ravel broadcast_to broadcast_tensors tensor_split hsplit vsplit dsplit atleast_1d/2d/3d
meshgrid; the `_copy` form of every view (`view_copy`, `permute_copy`, ...); the scatters
`select_scatter slice_scatter diagonal_scatter as_strided_scatter`; and `resize_`,
`resize_as_`.

The views follow `shape.py`: compute sizes, strides and an offset, then ask
`as_strided_view` for a tensor on the same storage (`_base` set, version counter shared). The
composites call other operators through the op handles, as PyTorch's
CompositeImplicitAutograd kernels do, so Meta and tracing see each step.

Note: the `_copy` forms. PyTorch generates one for every view so that functionalized
programs have no aliasing: the view, then `clone(memory_format=contiguous_format)` of each
result. `view_copy` differs: on the CPU a shape the input's strides cannot view is reshaped
(copied) instead of refused (PyTorch's Meta kernel refuses it, as `view` does).

Note: the scatters preserve strides. `*_scatter(self, src, ...)` returns a copy of `self`
with one view of it overwritten by `src`. The copy is of self's whole storage, and the result
has self's sizes, strides and storage offset (PyTorch's `clone_preserve_strides`), unless
self has overlapping elements (an expanded dim), which are cloned densely.
"""

from __future__ import annotations

import warnings

import numpy as np

from pyaten.core.broadcast import infer_size
from pyaten.core.dtypes import int64
from pyaten.core.tensor import Tensor, contiguous_format
from pyaten.core.views import (
    MemOverlap,
    as_strided_view,
    empty_tensor,
    has_internal_overlap,
    resize_tensor_,
)
from pyaten.native.kernels.copy import (
    check_out_dtype,
    memory_format_name,
    strides_for_format,
)
from pyaten.native.kernels.shape import (
    compute_view_strides,
    format_shape,
    narrow_start,
    numel_of,
    wrap_dim,
)
from pyaten.native.kernels.shape import infer_size as infer_view_size
from pyaten.native.ops_handles import aten_ops
from pyaten.native.registry import native
from pyaten.native.structured import resize_output

# --- diagonal, unfold -------------------------------------------------------------------------


@native
def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    sizes = self._sizes
    strides = self._strides
    ndim = len(sizes)
    d1 = wrap_dim(dim1, ndim)
    d2 = wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if offset >= 0:
        length = max(min(sizes[d1], sizes[d2] - offset), 0)
    else:
        length = max(min(sizes[d1] + offset, sizes[d2]), 0)
    start = self._offset
    if length:  # an empty diagonal keeps the offset (it may point past the end otherwise)
        start += offset * strides[d2] if offset >= 0 else -offset * strides[d1]
    keep = [d for d in range(ndim) if d != d1 and d != d2]
    return as_strided_view(
        self,
        tuple(sizes[d] for d in keep) + (length,),
        tuple(strides[d] for d in keep) + (strides[d1] + strides[d2],),
        start,
    )


@native
def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    sizes = self._sizes
    strides = self._strides
    ndim = len(sizes)
    d = wrap_dim(dimension, ndim)
    longest = sizes[d] if ndim else 1
    if size > longest:
        raise RuntimeError(
            f"maximum size for tensor at dimension {d} is {longest} but size is {size}"
        )
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    new_sizes = list(sizes) + [size]
    new_strides = list(strides) + [strides[d] if ndim else 1]
    if ndim:
        new_sizes[d] = (sizes[d] - size) // step + 1
        new_strides[d] = step * strides[d]
    return as_strided_view(self, tuple(new_sizes), tuple(new_strides), self._offset)


# --- moving and swapping dims ------------------------------------------------------------------


@native
def movedim_intlist(self: Tensor, source: tuple, destination: tuple) -> Tensor:
    if len(source) != len(destination):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({format_shape(source)} dims) "
            f"should contain the same number of dims as destination "
            f"({format_shape(destination)} dims)"
        )
    ndim = len(self._sizes)
    src = [wrap_dim(d, ndim) for d in source]
    dst = [wrap_dim(d, ndim) for d in destination]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({format_shape(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(
            f"movedim: repeated dim in `destination` ({format_shape(destination)})"
        )
    aten = aten_ops()
    if ndim == 0:
        return aten.alias.default(self)
    order = [-1] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    order = [o if o >= 0 else next(rest) for o in order]
    return aten.permute.default(self, tuple(order))


@native
def movedim_int(self: Tensor, source: int, destination: int) -> Tensor:
    return aten_ops().movedim.intlist(self, (source,), (destination,))


@native
def moveaxis_intlist(self: Tensor, source: tuple, destination: tuple) -> Tensor:
    return aten_ops().movedim.intlist(self, source, destination)


@native
def moveaxis_int(self: Tensor, source: int, destination: int) -> Tensor:
    return aten_ops().movedim.intlist(self, (source,), (destination,))


@native
def swapaxes(self: Tensor, axis0: int, axis1: int) -> Tensor:
    return aten_ops().transpose.int(self, axis0, axis1)


@native
def swapaxes_(self: Tensor, axis0: int, axis1: int) -> Tensor:
    return aten_ops().transpose_.default(self, axis0, axis1)


@native
def swapdims(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return aten_ops().transpose.int(self, dim0, dim1)


@native
def swapdims_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return aten_ops().transpose_.default(self, dim0, dim1)


# --- reshaping views ----------------------------------------------------------------------------


@native
def unflatten_symint(self: Tensor, dim: int, sizes: tuple) -> Tensor:
    ndim = len(self._sizes)
    d = wrap_dim(dim, ndim)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        if ndim == 0:
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        length = self._sizes[d]
        inferred = infer_view_size(sizes, length)
    except (RuntimeError, IndexError) as error:
        text = str(error)
        if "is invalid for input of size" in text:
            raise RuntimeError(
                f"unflatten: Provided sizes {format_shape(sizes)} don't multiply up to the size "
                f"of dim {d} ({length}) in the input tensor"
            ) from None
        raise RuntimeError(f"unflatten got an unexpected error:\n{text}") from None
    shape = self._sizes[:d] + tuple(inferred) + self._sizes[d + 1 :]
    return aten_ops().view.default(self, shape)


@native
def ravel(self: Tensor) -> Tensor:
    aten = aten_ops()
    return aten.view.default(aten.contiguous.default(self), (-1,))


@native
def broadcast_to_symint(self: Tensor, size: tuple) -> Tensor:
    return aten_ops().expand.default(self, size)


@native
def broadcast_tensors(tensors) -> list:
    shape = None
    for t in tensors:
        shape = t._sizes if shape is None else infer_size(shape, t._sizes)
    expand = aten_ops().expand.default
    # a tensor that already has the common shape is returned itself, as ATen does
    return [t if t._sizes == shape else expand(t, shape) for t in tensors]


# --- splits --------------------------------------------------------------------------------------


def _split_dim(self: Tensor, dim: int) -> int:
    if not self._sizes:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    return wrap_dim(dim, len(self._sizes))


@native
def tensor_split_sections_symint(self: Tensor, sections: int, dim: int = 0) -> list:
    d = _split_dim(self, dim)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    size = self._sizes[d]
    base, extra = divmod(size, sections)
    slice_op = aten_ops().slice.Tensor
    pieces = []
    start = 0
    for i in range(sections):
        length = base + 1 if i < extra else base
        pieces.append(slice_op(self, d, start, start + length, 1))
        start += length
    return pieces


@native
def tensor_split_indices_symint(self: Tensor, indices: tuple, dim: int = 0) -> list:
    d = _split_dim(self, dim)
    slice_op = aten_ops().slice.Tensor
    pieces = []
    start = 0
    for end in indices:
        pieces.append(slice_op(self, d, start, end, 1))
        start = end
    pieces.append(slice_op(self, d, start, self._sizes[d], 1))
    return pieces


@native
def tensor_split_tensor_indices_or_sections(
    self: Tensor, tensor_indices_or_sections: Tensor, dim: int = 0
) -> list:
    _split_dim(self, dim)
    split = tensor_indices_or_sections
    if split._device.type != "cpu":
        raise RuntimeError(
            "tensor_split expected tensor_indices_or_sections to be on cpu, but it's on "
            f"{split._device}"
        )
    if split._dtype is not int64:
        raise RuntimeError(
            "tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
            f"{split._dtype.scalar_name}"
        )
    if len(split._sizes) > 1:
        raise RuntimeError(
            "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
            f"one-dimensional tensor, but got a tensor with {len(split._sizes)} dims"
        )
    aten = aten_ops()
    if not split._sizes:
        return aten.tensor_split.sections(self, int(split.item()), dim)
    return aten.tensor_split.indices(self, tuple(int(i) for i in split.tolist()), dim)


def _hvd_split_dim(self: Tensor, name: str, at_least: int, dim: int) -> int:
    ndim = len(self._sizes)
    if ndim < at_least:
        raise RuntimeError(
            f"pyaten.{name} requires a tensor with at least {at_least} dimension, but got a "
            f"tensor with {ndim} dimensions!"
        )
    return dim


def _split_sections(self: Tensor, name: str, at_least: int, dim: int, sections: int) -> list:
    _hvd_split_dim(self, name, at_least, dim)
    size = self._sizes[dim]
    if sections == 0 or size % sections != 0:
        raise RuntimeError(
            f"pyaten.{name} attempted to split along dimension {dim}, but the size of the "
            f"dimension {size} is not divisible by the split_size {sections}!"
        )
    return aten_ops().tensor_split.sections(self, sections, dim)


def _split_array(self: Tensor, name: str, at_least: int, dim: int, indices: tuple) -> list:
    _hvd_split_dim(self, name, at_least, dim)
    return aten_ops().tensor_split.indices(self, indices, dim)


@native
def hsplit_int(self: Tensor, sections: int) -> list:
    return _split_sections(self, "hsplit", 1, 0 if len(self._sizes) == 1 else 1, sections)


@native
def hsplit_array(self: Tensor, indices: tuple) -> list:
    return _split_array(self, "hsplit", 1, 0 if len(self._sizes) == 1 else 1, indices)


@native
def vsplit_int(self: Tensor, sections: int) -> list:
    return _split_sections(self, "vsplit", 2, 0, sections)


@native
def vsplit_array(self: Tensor, indices: tuple) -> list:
    return _split_array(self, "vsplit", 2, 0, indices)


@native
def dsplit_int(self: Tensor, sections: int) -> list:
    return _split_sections(self, "dsplit", 3, 2, sections)


@native
def dsplit_array(self: Tensor, indices: tuple) -> list:
    return _split_array(self, "dsplit", 3, 2, indices)


# --- atleast_Nd, meshgrid ------------------------------------------------------------------------


@native
def atleast_1d(self: Tensor) -> Tensor:
    if not self._sizes:
        return aten_ops().reshape.default(self, (1,))
    return self


@native
def atleast_2d(self: Tensor) -> Tensor:
    ndim = len(self._sizes)
    if ndim == 0:
        return aten_ops().reshape.default(self, (1, 1))
    if ndim == 1:
        return aten_ops().unsqueeze.default(self, 0)
    return self


@native
def atleast_3d(self: Tensor) -> Tensor:
    ndim = len(self._sizes)
    aten = aten_ops()
    if ndim == 0:
        return aten.reshape.default(self, (1, 1, 1))
    if ndim == 1:
        return aten.unsqueeze.default(aten.unsqueeze.default(self, 0), -1)
    if ndim == 2:
        return aten.unsqueeze.default(self, -1)
    return self


@native
def atleast_1d_Sequence(tensors) -> list:
    return [aten_ops().atleast_1d.default(t) for t in tensors]


@native
def atleast_2d_Sequence(tensors) -> list:
    return [aten_ops().atleast_2d.default(t) for t in tensors]


@native
def atleast_3d_Sequence(tensors) -> list:
    return [aten_ops().atleast_3d.default(t) for t in tensors]


@native
def meshgrid(tensors) -> list:
    warnings.warn(
        "torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
        "argument.",
        UserWarning,
        stacklevel=4,
    )
    return aten_ops().meshgrid.indexing(tensors, "ij")


@native
def meshgrid_indexing(tensors, indexing: str) -> list:
    count = len(tensors)
    if count == 0:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for a, b in zip(tensors, tensors[1:]):
        if a._dtype is not b._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if a._device != b._device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    order = list(tensors)
    swap = False
    if indexing == "xy":
        swap = count >= 2
        if swap:
            order[0], order[1] = order[1], order[0]
    elif indexing != "ij":
        raise RuntimeError(
            'pyaten.meshgrid: indexing must be one of "xy" or "ij", but received: '
            f"{indexing}"
        )
    for t in order:
        if len(t._sizes) > 1:
            raise RuntimeError(
                "pyaten.meshgrid: Expected 0D or 1D tensor in the tensor list but got: "
                f"{t!r}"
            )
    shape = tuple(t.numel() for t in order)
    aten = aten_ops()
    grids = []
    for i, t in enumerate(order):
        view_shape = (1,) * i + (-1,) + (1,) * (count - i - 1)
        grids.append(aten.expand.default(aten.view.default(t, view_shape), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return grids


# --- scatters: a copy of self with one view overwritten (see Note: the scatters) ------------------


def clone_preserve_strides(self: Tensor) -> Tensor:
    """A copy of `self`'s whole storage, seen with self's sizes, strides and offset."""
    aten = aten_ops()
    if has_internal_overlap(self) == MemOverlap.YES:
        return aten.clone.default(self)
    numel = self._storage.nbytes // self._dtype.itemsize
    whole = aten.clone.default(as_strided_view(self, (numel,), (1,), 0))
    return Tensor._make(
        whole._storage, self._sizes, self._strides, self._offset, self._dtype, self._device
    )


def _scatter_into(output: Tensor, view: Tensor, src: Tensor) -> Tensor:
    if src._sizes != view._sizes:
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{format_shape(src._sizes)}, slice size = {format_shape(view._sizes)}"
        )
    aten_ops().copy_.default(view, src)
    return output


@native
def select_scatter(self: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    output = clone_preserve_strides(self)
    return _scatter_into(output, aten_ops().select.int(output, dim, index), src)


@native
def slice_scatter(
    self: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1
) -> Tensor:
    output = clone_preserve_strides(self)
    view = aten_ops().slice.Tensor(output, dim, start, end, step)
    return _scatter_into(output, view, src)


@native
def diagonal_scatter(
    self: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    output = clone_preserve_strides(self)
    view = aten_ops().diagonal.default(output, offset, dim1, dim2)
    return _scatter_into(output, view, src)


@native
def as_strided_scatter(
    self: Tensor, src: Tensor, size: tuple, stride: tuple, storage_offset=None
) -> Tensor:
    output = clone_preserve_strides(self)
    view = aten_ops().as_strided.default(output, size, stride, storage_offset)
    return _scatter_into(output, view, src)


# --- resize_, resize_as_ -----------------------------------------------------------------------


def _restride_for(self: Tensor, memory_format) -> None:
    fmt = memory_format_name(memory_format)
    if fmt == "preserve_format":
        raise RuntimeError("Unsupported memory formatPreserve")
    self._strides = strides_for_format(self._sizes, fmt, "resize_")
    self._np = None


@native
def resize_(self: Tensor, size: tuple, memory_format=None) -> Tensor:
    if any(s < 0 for s in size):  # ATen's size arithmetic refuses it first
        raise RuntimeError("numel: integer multiplication overflow")
    changed = tuple(size) != self._sizes
    resize_tensor_(self, tuple(size))
    if memory_format is not None:
        _restride_for(self, memory_format)
    if changed:
        self._bump_version()
    return self


@native
def resize_as_(self: Tensor, the_template: Tensor, memory_format=None) -> Tensor:
    aten_ops().resize_.default(self, the_template._sizes, None)
    if memory_format is not None:
        if memory_format_name(memory_format) == "preserve_format":
            memory_format = _suggest_memory_format(the_template)
        _restride_for(self, memory_format)
    return self


def _suggest_memory_format(t: Tensor):
    from pyaten.core.tensor import channels_last, channels_last_3d

    if len(t._sizes) == 4 and t.is_contiguous(memory_format=channels_last) and not (
        t.is_contiguous()
    ):
        return channels_last
    if len(t._sizes) == 5 and t.is_contiguous(memory_format=channels_last_3d) and not (
        t.is_contiguous()
    ):
        return channels_last_3d
    return contiguous_format


# --- the _copy forms (see Note: the `_copy` forms) ---------------------------------------------


def _contiguous_copy(result):
    clone = aten_ops().clone.default
    if isinstance(result, (list, tuple)):
        return [clone(t, contiguous_format) for t in result]
    return clone(result, contiguous_format)


def _register_copy(kernel_name: str, view: str, overload: str) -> None:
    def kernel(*args):
        handle = getattr(getattr(aten_ops(), view), overload)
        return _contiguous_copy(handle(*args))

    kernel.__name__ = kernel_name
    kernel.__qualname__ = kernel_name
    kernel.__doc__ = f"`{view}.{overload}`, then a contiguous copy of the result."
    native(kernel)


for _kernel, _view, _overload in (
    ("view_copy_dtype", "view", "dtype"),
    ("as_strided_copy", "as_strided", "default"),
    ("diagonal_copy", "diagonal", "default"),
    ("expand_copy", "expand", "default"),
    ("permute_copy", "permute", "default"),
    ("select_copy_int", "select", "int"),
    ("slice_copy_Tensor", "slice", "Tensor"),
    ("split_copy_Tensor", "split", "Tensor"),
    ("split_with_sizes_copy", "split_with_sizes", "default"),
    ("squeeze_copy", "squeeze", "default"),
    ("squeeze_copy_dim", "squeeze", "dim"),
    ("squeeze_copy_dims", "squeeze", "dims"),
    ("t_copy", "t", "default"),
    ("transpose_copy_int", "transpose", "int"),
    ("unsqueeze_copy", "unsqueeze", "default"),
    ("unbind_copy_int", "unbind", "int"),
    ("unfold_copy", "unfold", "default"),
    ("alias_copy", "alias", "default"),
    ("view_as_real_copy", "view_as_real", "default"),
    ("view_as_complex_copy", "view_as_complex", "default"),
    ("_conj_copy", "_conj", "default"),
    ("_neg_view_copy", "_neg_view", "default"),
):
    _register_copy(_kernel, _view, _overload)


@native
def narrow_copy_dense(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The composite form (Meta and other backends): `narrow`, then a contiguous copy."""
    return _contiguous_copy(aten_ops().narrow.default(self, dim, start, length))


def _checked_narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The CPU kernel's own checks, which word two cases differently from `narrow`'s."""
    sizes = self._sizes
    if not sizes:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if dim < 0:
        dim = wrap_dim(dim, len(sizes))
    if dim >= len(sizes):
        raise RuntimeError(
            "Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false.  "
            "(Could this error message be improved?  If so, please report an enhancement "
            "request to PyTorch.)"
        )
    size = sizes[dim]
    start = narrow_start(start, size)
    if length < 0 or start > size - length:
        raise RuntimeError(
            f"start ({start}) + length ({length}) exceeds dimension size ({size})."
        )
    return aten_ops().slice.Tensor(self, dim, start, start + length, 1)


@native
def narrow_copy_dense_cpu(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    return _contiguous_copy(_checked_narrow(self, dim, start, length))


@native
def narrow_copy_dense_cpu_out(self: Tensor, dim: int, start: int, length: int,
                              out: Tensor) -> Tensor:
    if self._dtype is not out._dtype:
        raise RuntimeError(
            "Expected self.dtype() == output.dtype() to be true, but got false.  (Could this "
            "error message be improved?  If so, please report an enhancement request to "
            "PyTorch.)"
        )
    piece = _checked_narrow(self, dim, start, length)
    resize_output(out, piece._sizes, "narrow_copy")
    aten_ops().copy_.default(out, piece)
    return out


@native
def _reshape_copy(self: Tensor, size: tuple) -> Tensor:
    return _contiguous_copy(aten_ops().reshape.default(self, size))


@native
def view_copy(self: Tensor, size: tuple) -> Tensor:
    shape = infer_view_size(size, numel_of(self._sizes))
    aten = aten_ops()
    viewable = compute_view_strides(self._sizes, self._strides, shape) is not None
    if not viewable and self._device.type != "meta":  # PyTorch's meta kernel views (refuses)
        return aten.reshape.default(self, size)
    return _contiguous_copy(aten.view.default(self, size))


def _copy_pieces_out(pieces: list, out, name: str | None) -> None:
    """Copy each piece into its `out` tensor; with `name`, check the count and dtypes and
    resize first (unbind_copy, split_with_sizes_copy), else copy_ as it is (split_copy)."""
    if name is not None and len(out) != len(pieces):
        raise RuntimeError(
            f"{name} expected an out= argument of size {len(pieces)}, got size {len(out)}"
        )
    copy_ = aten_ops().copy_.default
    for target, piece in zip(out, pieces):
        if name is not None:
            check_out_dtype(target, piece._dtype)
            resize_output(target, piece._sizes, name)
        copy_(target, piece)


@native
def split_copy_Tensor_out(self: Tensor, split_size: int, dim: int, out) -> None:
    pieces = aten_ops().split.Tensor(self, split_size, dim)
    if len(out) != len(pieces):
        raise RuntimeError(
            f"split_copy_Tensor_out() expected an out= argument of size {len(pieces)}, got "
            f"size {len(out)}"
        )
    _copy_pieces_out(pieces, out, None)


@native
def split_with_sizes_copy_out(self: Tensor, split_sizes: tuple, dim: int, out) -> None:
    pieces = aten_ops().split_with_sizes.default(self, split_sizes, dim)
    _copy_pieces_out(pieces, out, "split_with_sizes_copy_out")


@native
def unbind_copy_int_out(self: Tensor, dim: int, out) -> None:
    pieces = aten_ops().unbind.int(self, dim)
    _copy_pieces_out(pieces, out, "unbind_copy_int_out")


# --- backward helpers: diagonal_backward, unfold_backward ----------------------------------------


@native
def diagonal_backward_symint(
    grad_output: Tensor, input_sizes: tuple, offset: int, dim1: int, dim2: int
) -> Tensor:
    aten = aten_ops()
    grad_input = aten.zeros.default(input_sizes, grad_output._dtype, None, grad_output._device,
                                    None)
    aten.copy_.default(aten.diagonal.default(grad_input, offset, dim1, dim2), grad_output)
    return grad_input


@native
def unfold_backward(
    grad_in: Tensor, input_sizes: tuple, dim: int, size: int, step: int
) -> Tensor:
    """The gradient of `unfold`: each window's gradient added back where the window came from
    (windows may overlap)."""
    grad_input = empty_tensor(tuple(input_sizes), grad_in._dtype, grad_in._device)
    if grad_in._device.type == "meta" or grad_input.numel() == 0:
        return grad_input
    target = grad_input._numpy()
    if not input_sizes:
        target[...] = grad_in._numpy().reshape(())
        return grad_input
    d = wrap_dim(dim, len(input_sizes))
    windows = np.moveaxis(grad_in._numpy(), -1, d + 1)  # (..., window, size, ...)
    target[...] = 0
    lead = (slice(None),) * d
    for i in range(windows.shape[d]):
        target[lead + (slice(i * step, i * step + size),)] += windows[lead + (i,)]
    return grad_input
