"""View kernels: view, reshape, transpose, t, permute, expand, squeeze, unsqueeze, select,
slice, as_strided, alias, and the size/stride arithmetic they share.

Every kernel here only computes new sizes, strides and a storage offset and then asks
`pyaten.core.as_strided_view` for a tensor on the same storage (shared version counter,
`_base` set). None of them reads data, so one function serves the CPU and Meta keys.

Note: the shared helpers (`wrap_dim`, `infer_size`, `compute_view_strides`, `format_shape`)
are also used by the copy, factory, reduce, linalg, cat and index kernel modules; they live
here because views need them first. `aten_ops`, the op handles composites call, is
`pyaten.native.ops_handles`'s, re-exported here for the modules that import it from here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyaten.core.tensor import Tensor, contiguous_format, strided
from pyaten.core.views import as_strided_view
from pyaten.core.views import contiguous_strides as _cached_contiguous_strides
from pyaten.native.ops_handles import (
    LazyEntry,
    aten_ops,  # also re-exported (see the Note above)
)
from pyaten.native.registry import native

# Entries the hot composites call directly (found on first use, after registration).
_VIEW = LazyEntry("view")
_RESHAPE = LazyEntry("reshape")

# --- shared size/stride arithmetic --------------------------------------------------------


def format_shape(sizes: Sequence[int]) -> str:
    """PyTorch prints shapes in messages as `[2, 3]`."""
    return "[" + ", ".join(str(s) for s in sizes) + "]"


def wrap_dim(dim: int, ndim: int, wrap_scalar: bool = True) -> int:
    """Turn a possibly negative `dim` into an index in `range(ndim)` the way ATen does.

    A 0-dim tensor accepts dims -1 and 0 (as if it had one dimension) when `wrap_scalar`.
    """
    if ndim <= 0:
        if not wrap_scalar:
            raise IndexError(
                f"Dimension specified as {dim} but tensor has no dimensions"
            )
        ndim = 1
    if dim < -ndim or dim >= ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
            f"but got {dim})"
        )
    return dim + ndim if dim < 0 else dim


def contiguous_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides in elements (core's cached helper; size-0 dims count as 1)."""
    return _cached_contiguous_strides(tuple(sizes))


def numel_of(sizes: Sequence[int]) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def infer_size(shape: Sequence[int], numel: int) -> tuple[int, ...]:
    """Resolve one `-1` in a requested shape against `numel` (ATen's infer_size)."""
    if len(shape) == 1 and shape[0] == numel:
        return tuple(shape)
    known = 1
    infer_at = -1
    for i, s in enumerate(shape):
        if s == -1:
            if infer_at >= 0:
                raise RuntimeError("only one dimension can be inferred")
            infer_at = i
        elif s >= 0:
            known *= s
        else:
            raise RuntimeError(
                f"invalid shape dimension {s} at index {i} of shape {format_shape(shape)}"
            )
    if infer_at < 0:
        if known != numel:
            raise RuntimeError(
                f"shape '{format_shape(shape)}' is invalid for input of size {numel}"
            )
        return tuple(shape)
    # -1 is ambiguous when the other dims multiply to 0
    if known == 0 and numel == 0:
        raise RuntimeError(
            f"cannot reshape tensor of 0 elements into shape {format_shape(shape)} because the "
            "unspecified dimension size -1 can be any value and is ambiguous"
        )
    if known == 0 or numel % known != 0:
        raise RuntimeError(f"shape '{format_shape(shape)}' is invalid for input of size {numel}")
    out = list(shape)
    out[infer_at] = numel // known
    return tuple(out)


def compute_view_strides(
    old_sizes: Sequence[int], old_strides: Sequence[int], new_sizes: Sequence[int]
) -> tuple[int, ...] | None:
    """Strides that let `new_sizes` view memory laid out as (old_sizes, old_strides), or None.

    The old dims are cut into chunks that are each contiguous in memory (stride[i] ==
    stride[i+1] * size[i+1]); a view is possible when every chunk's element count is made up
    exactly by a run of new dims, which then get strides inside that chunk.
    """
    if not old_sizes:
        return (1,) * len(new_sizes)
    numel = numel_of(old_sizes)
    if numel == 0:
        # Empty tensors can take any shape; ATen uses contiguous strides for them
        if tuple(old_sizes) == tuple(new_sizes):
            return tuple(old_strides)
        return contiguous_strides(new_sizes)
    new_strides = [0] * len(new_sizes)
    view_d = len(new_sizes) - 1
    chunk_base_stride = old_strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_sizes) - 1, -1, -1):
        tensor_numel *= old_sizes[tensor_d]
        # a chunk ends at dim 0 or where the next-outer dim is not contiguous with this one
        if tensor_d == 0 or (
            old_sizes[tensor_d - 1] != 1
            and old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_sizes[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_sizes[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


# --- view kernels -------------------------------------------------------------------------


# Note: view plans
#     `view` and `reshape` of a tensor depend only on its sizes and strides and the requested
#     shape, and a program asks for the same few again and again: the resolved shape and its
#     strides (None: not viewable, so reshape copies) are kept per (sizes, strides, shape).
#     Requests that raise are not kept. `bench_shape_ops.py` measures it.
_VIEW_PLANS: dict[tuple, tuple] = {}
_VIEW_PLANS_LIMIT = 4096


def view_plan(
    sizes: tuple, strides: tuple, shape: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """`shape` with its -1 resolved, and the strides that view (sizes, strides) memory in it
    (None when no view can); an invalid shape raises as ATen does."""
    if shape.__class__ is not tuple:
        shape = tuple(shape)
    key = (sizes, strides, shape)
    try:
        plan = _VIEW_PLANS.get(key)
    except TypeError:  # unhashable geometry (a list): computed, not kept
        plan = None
        key = None
    if plan is None:
        new_sizes = infer_size(shape, numel_of(sizes))
        if strides == _cached_contiguous_strides(tuple(sizes)):
            # a row-major tensor views any shape of its size row-major: no chunk analysis
            new_strides = _cached_contiguous_strides(new_sizes)
        else:
            new_strides = compute_view_strides(sizes, strides, new_sizes)
        plan = (new_sizes, new_strides)
        if key is not None and len(_VIEW_PLANS) < _VIEW_PLANS_LIMIT:
            _VIEW_PLANS[key] = plan
    return plan


def cached_plan(cache: dict, key: tuple, make: Callable[..., tuple], *args: object) -> tuple:
    """`make(*args)`, kept in `cache` under `key` (a geometry: see Note: view plans)."""
    try:
        plan = cache.get(key)
    except TypeError:  # unhashable geometry (a list): computed, not kept
        return make(*args)
    if plan is None:
        plan = make(*args)
        if len(cache) < _VIEW_PLANS_LIMIT:
            cache[key] = plan
    return plan


@native
def view(self: Tensor, size: tuple) -> Tensor:
    shape, strides = view_plan(self._sizes, self._strides, size)
    if strides is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return as_strided_view(self, shape, strides, self._offset)


@native
def _unsafe_view(self: Tensor, size: tuple) -> Tensor:
    # view's geometry, but not a view (no `_base`, its own version counter): ATen uses it to
    # mark a reshape copy that autograd must not alias.
    viewed = view(self, size)
    result = Tensor._make(
        viewed._storage, viewed._sizes, viewed._strides, viewed._offset, self._dtype,
        self._device,
    )
    result._keyset = viewed._keyset  # the math bits (conj, neg) stay, as PyTorch's
    return result


@native
def view_as(self: Tensor, other: Tensor) -> Tensor:
    return _aten().view.default(self, other._sizes)


@native
def reshape(self: Tensor, shape: tuple) -> Tensor:
    new_shape, strides = view_plan(self._sizes, self._strides, shape)
    if strides is not None:  # the view gets the shape asked for, -1 included (as torch's)
        return (_VIEW.entry or _VIEW.resolve()).call(self, shape)
    aten = _aten()
    copied = aten.clone.default(self, memory_format=contiguous_format)
    return aten._unsafe_view.default(copied, new_shape)


@native
def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return _aten().reshape.default(self, other._sizes)


def _sparse_transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
    from pyaten.native.kernels.sparse_ops import sparse_transpose  # the sparse layouts' own

    return sparse_transpose(self, dim0, dim1)


@native
def transpose(self: Tensor, dim0: int, dim1: int) -> Tensor:
    if self.__class__ is not Tensor and self.layout is not strided:  # a sparse layout
        return _sparse_transpose(self, dim0, dim1)
    sizes = self._sizes
    strides = self._strides
    ndim = len(sizes)
    d0 = dim0 if 0 <= dim0 < ndim else wrap_dim(dim0, ndim)
    d1 = dim1 if 0 <= dim1 < ndim else wrap_dim(dim1, ndim)
    if d0 == d1:
        return as_strided_view(self, sizes, strides, self._offset)
    if ndim == 2:  # the matrix transpose, without lists
        return as_strided_view(
            self, (sizes[1], sizes[0]), (strides[1], strides[0]), self._offset
        )
    new_sizes = list(sizes)
    new_strides = list(strides)
    new_sizes[d0], new_sizes[d1] = sizes[d1], sizes[d0]
    new_strides[d0], new_strides[d1] = strides[d1], strides[d0]
    return as_strided_view(self, tuple(new_sizes), tuple(new_strides), self._offset)


@native
def t(self: Tensor) -> Tensor:
    if self.__class__ is not Tensor and self.layout is not strided and self.dim() == 2:
        return _sparse_transpose(self, 0, 1)
    sizes = self._sizes
    if len(sizes) > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {len(sizes)}D"
        )
    if len(sizes) < 2:
        return as_strided_view(self, sizes, self._strides, self._offset)
    strides = self._strides
    return as_strided_view(
        self, (sizes[1], sizes[0]), (strides[1], strides[0]), self._offset
    )


_PERMUTE_PLANS: dict[tuple, tuple] = {}  # (sizes, strides, dims) -> (sizes, strides)


@native
def permute(self: Tensor, dims: tuple) -> Tensor:
    sizes = self._sizes
    strides = self._strides
    if dims.__class__ is not tuple:
        dims = tuple(dims)
    plan = cached_plan(_PERMUTE_PLANS, (sizes, strides, dims), _permute_plan, sizes, strides,
                       dims)
    return as_strided_view(self, plan[0], plan[1], self._offset)


def _permute_plan(sizes: tuple, strides: tuple, dims: tuple) -> tuple[tuple, tuple]:
    ndim = len(sizes)
    if len(dims) != ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of the desired ordering of dimensions i.e. "
            f"input.dim() = {ndim} is not equal to len(dims) = {len(dims)}"
        )
    wrapped = [wrap_dim(d, ndim) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return tuple(sizes[d] for d in wrapped), tuple(strides[d] for d in wrapped)


def expand_strides(
    sizes: Sequence[int], strides: Sequence[int], target: Sequence[int],
    what: str | Callable[[], str],
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Sizes and strides of `sizes`/`strides` broadcast to `target` (-1 keeps a size);
    `what` (or what it returns) starts the message of a too-short `target`."""
    ndim = len(sizes)
    new_ndim = len(target)
    if new_ndim < ndim:
        raise RuntimeError(
            f"{what() if callable(what) else what}, size={format_shape(target)}): the number "
            "of sizes provided "
            f"({new_ndim}) must be greater or equal to the number of dimensions in the "
            f"tensor ({ndim})"
        )
    out_sizes = [0] * new_ndim
    out_strides = [0] * new_ndim
    for i in range(new_ndim - 1, -1, -1):
        offset = ndim - new_ndim + i
        want = target[i]
        if offset < 0:
            if want < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({want}) isn't allowed in a leading, "
                    f"non-existing dimension {i}"
                )
            out_sizes[i] = want
            # a new leading dim of size 1 gets the stride that keeps the layout contiguous (the
            # innermost one of an expanded 0-dim tensor gets 0, as ATen's arithmetic gives)
            if want != 1:
                out_strides[i] = 0
            else:
                out_strides[i] = out_sizes[i + 1] * out_strides[i + 1] if i + 1 < new_ndim else 0
            continue
        have = sizes[offset]
        if want == -1:
            want = have
        if have != want:
            if have != 1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({want}) must match the existing size "
                    f"({have}) at non-singleton dimension {i}.  Target sizes: "
                    f"{format_shape(target)}.  Tensor sizes: {format_shape(sizes)}"
                )
            out_strides[i] = 0
        else:
            out_strides[i] = strides[offset]
        out_sizes[i] = want
    numel = 1
    for s in out_sizes:  # PyTorch's checked numel: a negative size or past int64 overflows
        numel *= s
        if s < 0 or numel > 0x7FFFFFFFFFFFFFFF:
            raise RuntimeError("numel: integer multiplication overflow")
    return tuple(out_sizes), tuple(out_strides)


_EXPAND_PLANS: dict[tuple, tuple] = {}  # (sizes, strides, size) -> (sizes, strides)


def _expand_plan(sizes: tuple, strides: tuple, size: tuple, what: Callable[[], str]) -> tuple:
    for pos, want in enumerate(size, 1):  # the parser's int64 check (fast bindings skip it)
        if not -0x8000000000000000 <= want <= 0x7FFFFFFFFFFFFFFF:
            raise TypeError(
                f"expand(): argument 'size' failed to unpack the object at pos {pos} with "
                'error "Overflow when unpacking long long"'
            )
    return expand_strides(sizes, strides, size, what)


@native
def expand(self: Tensor, size: tuple, implicit: bool = False) -> Tensor:
    sizes = self._sizes
    strides = self._strides
    if size.__class__ is not tuple:
        size = tuple(size)
    plan = cached_plan(_EXPAND_PLANS, (sizes, strides, size), _expand_plan, sizes, strides,
                       size, lambda: _expand_label(self))
    return as_strided_view(self, plan[0], plan[1], self._offset)


def _expand_label(self: Tensor) -> str:
    return f"expand(pyaten.{self.dtype.scalar_name}Tensor{{{format_shape(self._sizes)}}}"


@native
def expand_as(self: Tensor, other: Tensor) -> Tensor:
    return _aten().expand.default(self, other._sizes)


@native
def squeeze(self: Tensor, dim=None) -> Tensor:
    sizes = self._sizes
    strides = self._strides
    ndim = len(sizes)
    if dim is None:
        keep = [d for d in range(ndim) if sizes[d] != 1]
    else:
        dims = (dim,) if isinstance(dim, int) else dim
        drop = {wrap_dim(d, ndim) for d in dims}
        keep = [d for d in range(ndim) if d not in drop or sizes[d] != 1]
    return as_strided_view(
        self, tuple(sizes[d] for d in keep), tuple(strides[d] for d in keep), self._offset
    )


@native
def unsqueeze(self: Tensor, dim: int) -> Tensor:
    sizes = self._sizes
    strides = self._strides
    d = dim if 0 <= dim <= len(sizes) else wrap_dim(dim, len(sizes) + 1)
    # the new dim's stride makes the result contiguous when self is
    new_stride = sizes[d] * strides[d] if d < len(sizes) else 1
    return as_strided_view(
        self,
        sizes[:d] + (1,) + sizes[d:],
        strides[:d] + (new_stride,) + strides[d:],
        self._offset,
    )


@native
def select(self: Tensor, dim: int, index: int) -> Tensor:
    sizes = self._sizes
    ndim = len(sizes)
    if ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = dim if 0 <= dim < ndim else wrap_dim(dim, ndim)
    size = sizes[d]
    if index < -size or index >= size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {format_shape(sizes)} "
            f"at dimension {d}"
        )
    if index < 0:
        index += size
    strides = self._strides
    return as_strided_view(
        self,
        sizes[:d] + sizes[d + 1 :],
        strides[:d] + strides[d + 1 :],
        self._offset + index * strides[d],
    )


def clamp_slice(start: int | None, end: int | None, size: int) -> tuple[int, int]:
    """Python-style clamping of slice bounds to [0, size], as ATen's slice does."""
    if start is None:
        start = 0
    elif start < 0:
        start = max(start + size, 0)
    elif start > size:
        start = size
    if end is None or end > size:
        end = size
    elif end < 0:
        end = max(end + size, 0)
    if end < start:
        end = start
    return start, end


@native
def slice_view(
    self: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> Tensor:
    sizes = self._sizes
    ndim = len(sizes)
    if ndim == 0:
        raise RuntimeError("slice() cannot be applied to a 0-dim tensor.")
    d = dim if 0 <= dim < ndim else wrap_dim(dim, ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    start, end = clamp_slice(start, end, sizes[d])
    strides = self._strides
    length = (end - start + step - 1) // step
    return as_strided_view(
        self,
        sizes[:d] + (length,) + sizes[d + 1 :],
        strides[:d] + (strides[d] * step,) + strides[d + 1 :],
        self._offset + start * strides[d],
    )


@native
def as_strided(
    self: Tensor, size: tuple, stride: tuple, storage_offset: int | None = None
) -> Tensor:
    # ATen's order: lengths, strides, offset, then sizes (checked by the storage arithmetic)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(
            "as_strided: Negative strides are not supported at the moment, got strides: "
            f"{format_shape(stride)}"
        )
    offset = self._offset if storage_offset is None else storage_offset
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if any(s < 0 for s in size):
        if self._device.type == "meta":  # Meta's numel arithmetic refuses it first
            raise RuntimeError("numel: integer multiplication overflow")
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={format_shape(size)} and "
            f"strides={format_shape(stride)}"
        )
    if self._device.type != "meta":  # a meta storage has no bytes to bound the view
        check_storage_bounds(self, size, stride, offset)
    return as_strided_view(self, tuple(size), tuple(stride), offset)


def check_storage_bounds(self: Tensor, size, stride, offset: int) -> None:
    """ATen's setStorage check: the furthest element must lie inside the storage."""
    if numel_of(size) == 0:
        return
    needed = offset + 1 + sum((s - 1) * st for s, st in zip(size, stride))
    itemsize = self.element_size()
    available = self.untyped_storage().nbytes
    if needed * itemsize > available:
        raise RuntimeError(
            f"setStorage: sizes {format_shape(size)}, strides {format_shape(stride)}, storage "
            f"offset {offset}, and itemsize {itemsize} requiring a storage size of "
            f"{needed * itemsize} are out of bounds for storage of size {available}"
        )


@native
def alias(self: Tensor) -> Tensor:
    return as_strided_view(self, self._sizes, self._strides, self._offset)


@native
def lift(self: Tensor) -> Tensor:
    return self  # a tensor from data is already "lifted": only modes wrap it


@native
def lift_fresh(self: Tensor) -> Tensor:
    return self


@native
def lift_fresh_copy(self: Tensor) -> Tensor:
    return _aten().clone.default(self, None)


@native
def view_dtype(self: Tensor, dtype) -> Tensor:
    old = self.dtype
    if dtype == old:
        return as_strided_view(self, self._sizes, self._strides, self._offset)
    old_size = old.itemsize
    new_size = dtype.itemsize
    sizes = list(self._sizes)
    strides = list(self._strides)
    if old_size == new_size:
        return _retyped_view(self, tuple(sizes), tuple(strides), self._offset, dtype)
    what = f"to view {_type_name(old)} as {_type_name(dtype)} (different element sizes)"
    if not sizes:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
    if new_size > old_size:
        ratio = new_size // old_size
        if sizes[-1] % ratio != 0:
            raise RuntimeError(
                f"self.size(-1) must be divisible by {ratio} {what}, but got {sizes[-1]}"
            )
        if self._offset % ratio != 0:
            raise RuntimeError(
                f"self.storage_offset() must be divisible by {ratio} {what}, but got "
                f"{self._offset}"
            )
        for i in range(len(sizes) - 1):
            if strides[i] % ratio != 0:
                raise RuntimeError(
                    f"self.stride({i}) must be divisible by {ratio} {what}, but got {strides[i]}"
                )
        sizes[-1] //= ratio
        strides = [s // ratio for s in strides[:-1]] + [1]
        offset = self._offset // ratio
    else:
        ratio = old_size // new_size
        sizes[-1] *= ratio
        strides = [s * ratio for s in strides[:-1]] + [1]
        offset = self._offset * ratio
    return _retyped_view(self, tuple(sizes), tuple(strides), offset, dtype)


def narrow_start(start: int, size: int) -> int:
    """narrow's `start` counted from the front of a dimension of `size` (PyTorch's range
    check: -size <= start <= size)."""
    if start < -size or start > size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    return start + size if start < 0 else start


@native
def narrow(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    sizes = self._sizes
    if not sizes:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = wrap_dim(dim, len(sizes))
    size = sizes[d]
    start = narrow_start(start, size)
    if start + length > size:
        raise RuntimeError(
            f"start ({start}) + length ({length}) exceeds dimension size ({size})."
        )
    return _aten().slice.Tensor(self, d, start, start + length, 1)


@native
def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    sizes = self._sizes
    if not sizes:
        return _aten().reshape.default(self, (1,))
    start = wrap_dim(start_dim, len(sizes))
    end = wrap_dim(end_dim, len(sizes))
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return self
    merged = numel_of(sizes[start : end + 1])
    reshape_entry = _RESHAPE.entry or _RESHAPE.resolve()
    return reshape_entry.call(self, sizes[:start] + (merged,) + sizes[end + 1 :])


# --- in-place views: new geometry on self --------------------------------------------------


def _restride_(self: Tensor, view: Tensor) -> Tensor:
    """Give `self` the geometry of `view` (a view of self) and record the in-place change."""
    self._sizes = view._sizes
    self._strides = view._strides
    self._offset = view._offset
    self._refresh()
    self._bump_version()
    return self


@native
def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return _restride_(self, transpose(self, dim0, dim1))


@native
def t_(self: Tensor) -> Tensor:
    return _restride_(self, t(self))


@native
def squeeze_(self: Tensor, dim=None) -> Tensor:
    return _restride_(self, squeeze(self, dim))


@native
def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    return _restride_(self, unsqueeze(self, dim))


@native
def as_strided_(
    self: Tensor, size: tuple, stride: tuple, storage_offset: int | None = None
) -> Tensor:
    return _restride_(self, as_strided(self, size, stride, storage_offset))


def _retyped_view(self: Tensor, sizes: tuple, strides: tuple, offset: int, dtype) -> Tensor:
    result = as_strided_view(self, sizes, strides, offset)
    result._dtype = dtype
    return result


def _type_name(dtype) -> str:
    # ATen names scalar types by their C++ name in these messages (Float, Long, ...)
    return dtype.scalar_name


_aten = aten_ops


