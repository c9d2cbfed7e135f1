"""Concatenation: cat (structured).

Note: legacy empty tensors. For backward compatibility ATen skips 1-d tensors of size 0
(`torch.empty(0)`) when checking shapes, whatever the other tensors' rank; they still take
part in type promotion. When every input is such a tensor the result is one of them: shape
[0]. The result dtype is the promotion of all inputs (or the `out=` tensor's dtype, which
the inputs must be castable to); the layout is channels-last when the first shape-giving
input is, else contiguous.
"""

from __future__ import annotations

from pyaten.core.promotion import can_cast, promote_types
from pyaten.core.tensor import Tensor
from pyaten.core.views import assert_no_overlap, channels_last_strides, is_channels_last_strides
from pyaten.native.kernels.copy import array_of, assign, check_no_internal_overlap
from pyaten.native.kernels.shape import wrap_dim
from pyaten.native.registry import native


def _is_legacy_empty(t: Tensor) -> bool:
    return t._sizes == (0,)


def _cat_dtype(tensors) -> object:
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = promote_types(dtype, t.dtype)
    return dtype


@native
def meta_cat(op, tensors, dim: int = 0) -> None:
    if len(tensors) == 0:
        raise ValueError("pyaten.cat(): expected a non-empty list of Tensors")
    first_device = tensors[0].device
    for i, t in enumerate(tensors):
        if len(t._sizes) == 0:
            raise RuntimeError(
                f"zero-dimensional tensor (at position {i}) cannot be concatenated"
            )
        if t.device != first_device:
            raise RuntimeError(
                f"Tensor on device {t.device} is not on the expected device {first_device}!"
            )
    dtype = _cat_dtype(tensors)
    out = op.maybe_get_output(0)
    if out is not None:
        if not can_cast(dtype, out.dtype):
            raise TypeError(
                "pyaten.cat(): input types can't be cast to the desired output type "
                f"{out.dtype.scalar_name}"
            )
        check_no_internal_overlap(out)
        for t in tensors:
            assert_no_overlap(out, t)
        dtype = out.dtype
    valid = next((i for i, t in enumerate(tensors) if not _is_legacy_empty(t)), None)
    if valid is None:
        op.set_output(0, (0,), dtype, tensors[0].device)
        return
    reference = tensors[valid]
    ndim = len(reference._sizes)
    d = wrap_dim(dim, ndim)
    sizes = list(reference._sizes)
    total = 0
    for i, t in enumerate(tensors):
        if _is_legacy_empty(t):
            continue
        if len(t._sizes) != ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ndim} and {len(t._sizes)}"
            )
        for axis in range(ndim):
            if axis != d and t._sizes[axis] != sizes[axis]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{sizes[axis]} but got size {t._sizes[axis]} for tensor number {i} in the "
                    "list."
                )
        total += t._sizes[d]
    sizes[d] = total
    sizes = tuple(sizes)
    strides = None
    if ndim == 4 and is_channels_last_strides(reference._sizes, reference._strides) and not (
        reference.is_contiguous()
    ):
        strides = channels_last_strides(sizes)
    op.set_output(0, sizes, dtype, reference.device, strides)


@native
def cat_out_cpu(op, tensors, dim: int, out: Tensor) -> None:
    pieces = [t for t in tensors if not _is_legacy_empty(t)]
    if not pieces or out.numel() == 0:
        return
    d = wrap_dim(dim, len(pieces[0]._sizes))
    target = array_of(out)
    lead = (slice(None),) * d
    position = 0
    for t in pieces:
        size = t._sizes[d]
        if size:
            assign(target[lead + (slice(position, position + size),)], array_of(t))
        position += size
