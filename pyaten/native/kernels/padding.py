"""Padding operators PyTorch declares with kernels: `constant_pad_nd`, `reflection_pad{1,2,3}d`,
`replication_pad{1,2,3}d` and their `*_backward` helpers, plus the composites `_pad_circular`,
`_pad_enum` and `pad`.

Every padding is a gather along each padded dimension: an index array maps each output
position to the input position it copies (reflection: mirrored without repeating the edge;
replication: clamped). The forward takes the whole batch with one `np.take` per padded
dimension; the backward sums the gradient back with one matrix product per dimension (the
transposed one-hot map of that dimension), so no loop ever runs over elements or channels.
Outputs keep the input's channels-last layout, as PyTorch's `suggest_memory_format` does.
"""

from __future__ import annotations

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.symbolic import is_symbolic
from pyaten.core.tensor import Tensor
from pyaten.core.views import channels_last_strides, empty_tensor
from pyaten.native.family import unsupported_dtype
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.shape import format_shape
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native, native_at
from pyaten.native.structured import resize_output

# --- shared helpers (upsample.py uses them too) ----------------------------------------------


def compute_dtype(dtype: dt.dtype) -> np.dtype:
    """The NumPy dtype a kernel computes in: float16/bfloat16 in float32."""
    return np.dtype(np.float32) if dtype in (dt.float16, dt.bfloat16) else dtype.numpy


def suggested_strides(like: Tensor, sizes: tuple) -> tuple | None:
    """Channels-last strides for `sizes` when `like` is channels-last (and not contiguous)."""
    from pyaten.core.tensor import channels_last, channels_last_3d

    n = len(like._sizes)
    if n == 4 and like.is_contiguous(memory_format=channels_last) and not like.is_contiguous():
        return channels_last_strides(tuple(sizes))
    if n == 5 and like.is_contiguous(memory_format=channels_last_3d) and (
        not like.is_contiguous()
    ):
        nb, c, d, h, w = sizes
        s_c, s_w = 1, max(c, 1)
        s_h = s_w * max(w, 1)
        s_d = s_h * max(h, 1)
        return (s_d * max(d, 1), s_c, s_d, s_h, s_w)
    return None


def new_result(like: Tensor, sizes: tuple, value: np.ndarray | None,
               dtype: dt.dtype | None = None) -> Tensor:
    """A fresh output laid out as `like` suggests, holding `value` (None on Meta, where a
    symbolic size stays symbolic: Note: symbolic values carry a hint)."""
    if value is not None or not any(is_symbolic(s) for s in sizes):
        sizes = tuple(int(s) for s in sizes)
    out = empty_tensor(sizes, dtype or like._dtype, like._device, suggested_strides(like, sizes))
    store(out, value)
    return out


def store(out: Tensor, value: np.ndarray | None) -> None:
    if value is not None and out._device.type != "meta" and out.numel():
        assign(out._numpy(), np.broadcast_to(np.asarray(value), tuple(out._sizes)))


def write_out(out: Tensor, value: Tensor, name: str) -> Tensor:
    """An unstructured out= variant's write: PyTorch's dtype check, resize, then the values."""
    if out._dtype is not value._dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {value._dtype.cpp_name}, but got "
            f"{out._dtype.cpp_name} instead"
        )
    resize_output(out, tuple(value._sizes), name)
    if out._device.type != "meta" and value._device.type != "meta":
        store(out, value._numpy())
    out._version_counter.value += 1
    return out


def as_array(t: Tensor, dtype: np.dtype | None = None) -> np.ndarray:
    arr = t._numpy()
    dtype = compute_dtype(t._dtype) if dtype is None else dtype
    return arr if arr.dtype == dtype else arr.astype(dtype)


def take_along(x: np.ndarray, indices: list) -> np.ndarray:
    """Gather the last len(indices) axes of `x`, each by its own index array."""
    k = len(indices)
    for i, idx in enumerate(indices):
        x = np.take(x, idx, axis=x.ndim - k + i)
    return x


def scatter_axis(g: np.ndarray, index: np.ndarray, n: int, axis: int) -> np.ndarray:
    """Sum the slices of `g` along `axis` into the `n` positions `index` names (the adjoint
    of `np.take(x, index, axis)`): one stable sort of the index and one `np.add.reduceat`."""
    shape = list(g.shape)
    shape[axis] = n
    if index.size == 0 or g.size == 0:
        return np.zeros(shape, g.dtype)
    m = index.size
    if m % n == 0 and np.array_equal(index, np.arange(m) // (m // n)):
        # each input position read by a run of m // n neighbours (nearest upsampling)
        split = g.shape[:axis] + (n, m // n) + g.shape[axis + 1:]
        return g.reshape(split).sum(axis + 1)
    if np.all(index[1:] >= index[:-1]):
        ordered = g  # already grouped (every tap of an upsampling): no reordering copy
        targets, starts = np.unique(index, return_index=True)
    else:
        order = np.argsort(index, kind="stable")
        targets, starts = np.unique(index[order], return_index=True)
        ordered = np.take(g, order, axis=axis)
    sums = np.add.reduceat(ordered, starts, axis=axis)
    if targets.size == n:
        return sums
    out = np.zeros(shape, g.dtype)
    where = [slice(None)] * g.ndim
    where[axis] = targets
    out[tuple(where)] = sums
    return out


def scatter_along(g: np.ndarray, indices: list, sizes: list) -> np.ndarray:
    """The adjoint of `take_along`: sum each output position into the input position it read,
    axis by axis."""
    k = len(indices)
    for i, (idx, n) in enumerate(zip(indices, sizes)):
        g = scatter_axis(g, idx, n, g.ndim - k + i)
    return g


# --- reflection and replication ----------------------------------------------------------------

def _reflect_index(n: int, left: int, right: int) -> np.ndarray:
    j = np.abs(np.arange(-left, n + right))
    return (n - 1) - np.abs((n - 1) - j)


def _replicate_index(n: int, left: int, right: int) -> np.ndarray:
    return np.clip(np.arange(-left, n + right), 0, n - 1)


def _check_input(dims: int, x: Tensor, padding: list, replication: bool) -> None:
    if len(padding) != 2 * dims:
        if replication:
            raise RuntimeError(f"padding size is expected to be {2 * dims}")
        raise RuntimeError(
            f"padding size is expected to be {2 * dims}, but got: {len(padding)}"
        )
    sizes = tuple(x._sizes)
    batch = len(sizes) == dims + 2
    if batch:
        ok = all(s != 0 for s in sizes[1:])
    else:
        ok = len(sizes) == dims + 1 and all(s != 0 for s in sizes)
    if not ok:
        raise RuntimeError(
            f"Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with possibly 0 batch size "
            f"and other non-zero dimensions for input, but got: {format_shape(sizes)}"
        )


def _too_small(dims: int, in_sizes: tuple, out_sizes: tuple) -> RuntimeError:
    if dims == 1:
        return RuntimeError(
            f"input (W: {in_sizes[0]}) is too small. Calculated output W: {out_sizes[0]}"
        )
    if dims == 2:
        return RuntimeError(
            f"input (H: {in_sizes[0]}, W: {in_sizes[1]}) is too small. Calculated output H: "
            f"{out_sizes[0]} W: {out_sizes[1]}"
        )
    return RuntimeError(
        f"input (D: {in_sizes[0]} H: {in_sizes[1]}, W: {in_sizes[2]}) is too small. Calculated "
        f"output D: {out_sizes[0]} H: {out_sizes[1]} W: {out_sizes[2]}"
    )


def _plan(dims: int, x: Tensor, padding: list, replication: bool) -> tuple:
    """Checks, then (spatial input sizes, spatial output sizes, per-axis (left, right))."""
    _check_input(dims, x, padding, replication)
    sizes = tuple(x._sizes)
    spatial = sizes[-dims:]
    # padding lists the last dimension first: (w_l, w_r, h_t, h_b, d_f, d_b)
    pads = [(int(padding[2 * (dims - 1 - i)]), int(padding[2 * (dims - 1 - i) + 1]))
            for i in range(dims)]
    if not replication:
        for i in reversed(range(dims)):
            left, right = pads[i]
            n = spatial[i]
            if not (left < n and right < n):
                arg = 4 + 2 * (dims - 1 - i)
                raise RuntimeError(
                    f"Argument #{arg}: Padding size should be less than the corresponding input "
                    f"dimension, but got: padding ({left}, {right}) at dimension "
                    f"{len(sizes) - dims + i} of input {format_shape(sizes)}"
                )
    out_spatial = tuple(n + left + right for n, (left, right) in zip(spatial, pads))
    if any(o < 1 for o in out_spatial):
        raise _too_small(dims, spatial, out_spatial)
    return spatial, out_spatial, pads


def _indices(spatial: tuple, pads: list, replication: bool) -> list:
    make = _replicate_index if replication else _reflect_index
    return [make(n, left, right) for n, (left, right) in zip(spatial, pads)]


def _pad_forward(dims: int, replication: bool):
    def meta(op, self: Tensor, padding: list) -> None:
        _, out_spatial, _ = _plan(dims, self, padding, replication)
        sizes = tuple(self._sizes[:-dims]) + out_spatial
        op.set_output(0, sizes, self._dtype, self._device, suggested_strides(self, sizes))

    def value(self: Tensor, spatial: tuple, pads: list) -> np.ndarray:
        if self._dtype is dt.bool:
            kind = "replication" if replication else "reflection"
            raise unsupported_dtype(f"{kind}_pad{dims}d", self._dtype)
        x = self._numpy()
        if all(left >= 0 and right >= 0 for left, right in pads):
            # NumPy's "reflect" and "edge" are PyTorch's reflection and replication
            width = [(0, 0)] * (x.ndim - dims) + list(pads)
            return np.pad(x, width, mode="edge" if replication else "reflect")
        return take_along(x, _indices(spatial, pads, replication))

    def impl(op, self: Tensor, padding: list, out: Tensor) -> None:
        if out._device.type == "meta" or out.numel() == 0:
            return
        spatial, _, pads = _plan(dims, self, padding, replication)
        store(out, value(self, spatial, pads))

    def functional(self: Tensor, padding: list) -> Tensor:
        spatial, out_spatial, pads = _plan(dims, self, padding, replication)
        sizes = tuple(self._sizes[:-dims]) + out_spatial
        if self._device.type == "meta":
            return new_result(self, sizes, None)
        return new_result(self, sizes, value(self, spatial, pads))

    return meta, impl, functional


def _fold_borders(g: np.ndarray, axis: int, n: int, left: int, right: int,
                  replication: bool) -> np.ndarray:
    """The backward of one padded axis: the interior slice, plus each border added onto the
    positions it copied (mirrored for reflection, the edge for replication)."""
    def part(start: int, stop: int) -> tuple:
        where = [slice(None)] * g.ndim
        where[axis] = slice(start, stop)
        return tuple(where)

    out = g[part(left, left + n)].copy()
    if replication:
        if left:
            out[part(0, 1)] += g[part(0, left)].sum(axis, keepdims=True)
        if right:
            out[part(n - 1, n)] += g[part(left + n, left + n + right)].sum(axis, keepdims=True)
        return out
    if left:
        # output j < left read input left - j: positions left..1, mirrored
        out[part(1, left + 1)] += np.flip(g[part(0, left)], axis)
    if right:
        # output left + n + j read input n - 2 - j
        out[part(n - 1 - right, n - 1)] += np.flip(g[part(left + n, left + n + right)], axis)
    return out


def _check_grad(dims: int, grad_output: Tensor, out_spatial: tuple) -> None:
    got = tuple(grad_output._sizes[-dims:])
    names = {1: ("width",), 2: ("height", "width"), 3: ("depth", "height", "width")}[dims]
    for name, expected, size in zip(names, out_spatial, got):
        if expected != size:
            raise RuntimeError(
                f"grad_output {name} unexpected. Expected: {expected}, Got: {size}"
            )


def _pad_backward(dims: int, replication: bool):
    def grad_value(grad_output: Tensor, self: Tensor, padding: list) -> np.ndarray:
        spatial, out_spatial, pads = _plan(dims, self, padding, replication)
        _check_grad(dims, grad_output, out_spatial)
        g = as_array(grad_output)
        indices = _indices(spatial, pads, replication)
        k = len(indices)
        for i, (idx, n, (left, right)) in enumerate(zip(indices, spatial, pads)):
            axis = g.ndim - k + i
            if left < 0 or right < 0:
                g = scatter_axis(g, idx, n, axis)
            else:
                g = _fold_borders(g, axis, n, left, right, replication)
        return g

    def meta(op, grad_output: Tensor, self: Tensor, padding: list) -> None:
        _, out_spatial, _ = _plan(dims, self, padding, replication)
        _check_grad(dims, grad_output, out_spatial)
        sizes = tuple(self._sizes)
        op.set_output(0, sizes, self._dtype, self._device, suggested_strides(self, sizes))

    def impl(op, grad_output: Tensor, self: Tensor, padding: list, grad_input: Tensor) -> None:
        if grad_input._device.type == "meta" or grad_input.numel() == 0:
            return
        store(grad_input, grad_value(grad_output, self, padding))

    def functional(grad_output: Tensor, self: Tensor, padding: list) -> Tensor:
        if self._device.type == "meta" or grad_output._device.type == "meta":
            _, out_spatial, _ = _plan(dims, self, padding, replication)
            _check_grad(dims, grad_output, out_spatial)
            return new_result(self, tuple(self._sizes), None)
        return new_result(self, tuple(self._sizes), grad_value(grad_output, self, padding))

    def out_variant(grad_output: Tensor, self: Tensor, padding: list,
                    grad_input: Tensor) -> Tensor:
        value = functional(grad_output, self, padding)
        kind = "replication" if replication else "reflection"
        return write_out(grad_input, value, f"{kind}_pad{dims}d_backward")

    return meta, impl, functional, out_variant


def _register(kind: str, dims: int, forward: str, backward: str) -> None:
    """Register the kernels of `<kind>_pad<dims>d` and its backward. `forward`/`backward` say
    how PyTorch declares each: "structured" (meta + `_out_cpu` impl) or "plain" (`_cpu`
    functional and `_out_cpu` kernels on CPU and Meta)."""
    replication = kind == "replication"
    where = f"{__file__}:_register({kind!r}, {dims})"
    name = f"{kind}_pad{dims}d"
    meta, impl, forward_fn = _pad_forward(dims, replication)
    if forward == "structured":
        native_at(f"meta_{name}", meta, where)
        native_at(f"{name}_out_cpu", impl, where)
    else:
        def out_variant(self: Tensor, padding: list, out: Tensor) -> Tensor:
            value = forward_fn(self, padding)
            return write_out(out, value, name)

        native_at(f"{name}_cpu", forward_fn, where)
        native_at(f"{name}_out_cpu", out_variant, where)
    meta, impl, functional, out_variant = _pad_backward(dims, replication)
    if backward == "structured":
        native_at(f"meta_{name}_backward", meta, where)
        native_at(f"{name}_backward_out_cpu", impl, where)
    else:
        native_at(f"{name}_backward_cpu", functional, where)
        native_at(f"{name}_backward_out_cpu", out_variant, where)


_register("reflection", 1, "structured", "structured")
_register("reflection", 2, "plain", "plain")
_register("reflection", 3, "structured", "structured")
_register("replication", 1, "structured", "structured")
_register("replication", 2, "structured", "plain")
_register("replication", 3, "structured", "plain")


# --- constant padding ------------------------------------------------------------------------


@native
def constant_pad_nd(self: Tensor, pad: list, value=0) -> Tensor:
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError(
            f"Length of pad must be even but instead it equals {len(pad)}"
        )
    ndim = len(self._sizes)
    if len(pad) // 2 > ndim:
        raise RuntimeError(
            "Length of pad should be no more than twice the number of dimensions of the input. "
            f"Pad length is {len(pad)}while the input has {ndim}dimensions."
        )
    sizes = list(self._sizes)
    k = len(pad) // 2
    crop = [slice(None)] * ndim
    place = [slice(None)] * ndim
    new_sizes = list(sizes)
    for i in range(k):
        axis = ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = sizes[axis]
        start = -left if left < 0 else 0
        stop = n + right if right < 0 else n
        if left < 0 or right < 0:
            if not 0 <= start <= n:
                raise RuntimeError(
                    f"start ({start}) + length ({0}) exceeds dimension size ({n})."
                    if start > n else "narrow(): start must be non-negative."
                )
            if stop - start < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        new = n + left + right
        if new < 0:
            raise RuntimeError(
                f"The input size {n}, plus negative padding {left} and {right} resulted in a "
                f"negative output size, which is invalid. Check dimension {axis} of your input."
            )
        new_sizes[axis] = new
        crop[axis] = slice(start, stop)
        lo = max(left, 0)
        place[axis] = slice(lo, lo + (stop - start))
    if self._device.type == "meta":
        return new_result(self, tuple(new_sizes), None)
    dtype = self._dtype.numpy
    fill = np.array(value.item() if hasattr(value, "item") else value)
    with np.errstate(all="ignore"):
        result = np.full(tuple(new_sizes), fill.astype(dtype), dtype=dtype)
    result[tuple(place)] = self._numpy()[tuple(crop)]
    return new_result(self, tuple(new_sizes), result)


# --- composites --------------------------------------------------------------------------------


@native
def _pad_circular(self: Tensor, pad: list) -> Tensor:
    aten = _aten()
    pad = [int(p) for p in pad]
    ndim = len(self._sizes)
    k = len(pad) // 2
    batched = ndim - k == 2
    if not (batched or ndim - k == 1):
        raise RuntimeError(
            "Invalid padding size, expected 1 or 2 non-padded dimensions, which would be "
            f"equivalent to padding of length {2 * (ndim - 1)} or {2 * (ndim - 2)} respectively "
            f"but got {len(pad)}"
        )
    result = self
    for i in range(k):
        axis = ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = self._sizes[axis]
        if left > n or right > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + left + right < 0:
            raise RuntimeError(
                f"Negative padding value is resulting in an empty dimension: {n + left + right}"
            )
        # wrap around the kept (cropped) span, as PyTorch copies from the cropped result
        start, stop = max(-left, 0), n - max(-right, 0)
        index = start + (np.arange(n + left + right) - max(left, 0)) % max(stop - start, 1)
        result = aten.index_select.default(result, axis, _long_tensor(index, self))
    return result


def _long_tensor(values: np.ndarray, like: Tensor) -> Tensor:
    from pyaten.core.creation import share_array

    t = share_array(np.ascontiguousarray(values, dtype=np.int64), dt.int64)
    if like._device.type == "meta":
        return t.to("meta")
    return t


_MODES = {0: "constant", 1: "reflect", 2: "replicate", 3: "circular"}


@native
def _pad_enum(self: Tensor, pad: list, mode: int, value: float | None = None) -> Tensor:
    aten = _aten()
    pad = [int(p) for p in pad]
    ndim = len(self._sizes)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {ndim}"
        )
    name = _MODES[mode]
    if name == "constant":
        return aten.constant_pad_nd.default(self, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{name}" doesn\'t take in value argument')
    k = len(pad)
    if k == 2 and ndim in (2, 3):
        dims = 1
    elif k == 4 and ndim in (3, 4):
        dims = 2
    elif k == 6 and ndim in (4, 5):
        dims = 3
    else:
        raise NotImplementedError(
            f"Padding size {k} is not supported for {ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    if name == "reflect":
        return getattr(aten, f"reflection_pad{dims}d").default(self, pad)
    if name == "replicate":
        return getattr(aten, f"replication_pad{dims}d").default(self, pad)
    return aten._pad_circular.default(self, pad)


@native
def pad(self: Tensor, pad: list, mode: str = "constant", value: float | None = None) -> Tensor:
    modes = {v: k for k, v in _MODES.items()}
    if mode not in modes:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    return _aten()._pad_enum.default(self, pad, modes[mode], value)


# --- pixel and channel shuffles -----------------------------------------------------------------
# (rearrangements, kept with the padding kernels: one reshape/transpose of the whole batch)


def _check_shuffle(self: Tensor, factor: int) -> None:
    if self.dim() < 3:
        raise RuntimeError(
            "pixel_shuffle expects input to have at least 3 dimensions, but got input with "
            f"{self.dim()} dimension(s)"
        )
    if factor <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {factor}")
    c = self._sizes[-3]
    if c % (factor * factor):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
            f"of upscale_factor, but input.size(-3)={c} is not divisible by {factor * factor}"
        )


def _check_unshuffle(self: Tensor, factor: int) -> None:
    if self.dim() < 3:
        raise RuntimeError(
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
            f"{self.dim()} dimension(s)"
        )
    if factor <= 0:
        raise RuntimeError(
            f"pixel_unshuffle expects a positive downscale_factor, but got {factor}"
        )
    h, w = self._sizes[-2], self._sizes[-1]
    if h % factor:
        raise RuntimeError(
            "pixel_unshuffle expects height to be divisible by downscale_factor, but "
            f"input.size(-2)={h} is not divisible by {factor}"
        )
    if w % factor:
        raise RuntimeError(
            "pixel_unshuffle expects width to be divisible by downscale_factor, but "
            f"input.size(-1)={w} is not divisible by {factor}"
        )


def _shuffle_plan(sizes: tuple, r: int, up: bool) -> tuple:
    """(split shape, transpose order, result shape) of a pixel (un)shuffle."""
    batch = tuple(sizes[:-3])
    c, h, w = sizes[-3:]
    nb = len(batch)
    if up:
        oc = c // (r * r)
        split = batch + (oc, r, r, h, w)
        order = tuple(range(nb)) + tuple(nb + i for i in (0, 3, 1, 4, 2))
        return split, order, batch + (oc, h * r, w * r)
    oh, ow = h // r, w // r
    split = batch + (c, oh, r, ow, r)
    order = tuple(range(nb)) + tuple(nb + i for i in (0, 2, 4, 1, 3))
    return split, order, batch + (c * r * r, oh, ow)


def _shuffle(self: Tensor, r: int, up: bool) -> Tensor:
    (_check_shuffle if up else _check_unshuffle)(self, r)
    split, order, sizes = _shuffle_plan(tuple(self._sizes), r, up)
    if self._device.type == "meta":
        return new_result(self, sizes, None)
    value = self._numpy().reshape(split).transpose(order).reshape(sizes)
    return new_result(self, sizes, value)


def _math_shuffle(self: Tensor, r: int, up: bool) -> Tensor:
    aten = _aten()
    (_check_shuffle if up else _check_unshuffle)(self, r)
    split, order, sizes = _shuffle_plan(tuple(self._sizes), r, up)
    moved = aten.permute.default(aten.reshape.default(self, list(split)), list(order))
    return aten.clone.default(aten.reshape.default(moved, list(sizes)), None)


@native
def pixel_shuffle_cpu(self: Tensor, upscale_factor: int) -> Tensor:
    return _shuffle(self, int(upscale_factor), True)


@native
def pixel_unshuffle_cpu(self: Tensor, downscale_factor: int) -> Tensor:
    return _shuffle(self, int(downscale_factor), False)


@native
def math_pixel_shuffle(self: Tensor, upscale_factor: int) -> Tensor:
    return _math_shuffle(self, int(upscale_factor), True)


@native
def math_pixel_unshuffle(self: Tensor, downscale_factor: int) -> Tensor:
    return _math_shuffle(self, int(downscale_factor), False)


def _check_channel_shuffle(self: Tensor, groups: int) -> None:
    if self.dim() <= 2:
        raise RuntimeError(
            "channel_shuffle expects input with > 2 dims, but got input with sizes "
            f"{format_shape(tuple(self._sizes))}"
        )
    if groups <= 0:
        raise RuntimeError(
            f"Number of groups to divide channels in must be positive. Value of groups:{groups}"
        )
    c = self._sizes[1]
    if c % groups:
        raise RuntimeError(
            f"Number of channels must be divisible by groups. Got {c} channels and {groups} "
            "groups."
        )


def _channel_shuffle(self: Tensor, groups: int) -> Tensor:
    groups = int(groups)
    _check_channel_shuffle(self, groups)
    sizes = tuple(self._sizes)
    if self._device.type == "meta":
        return new_result(self, sizes, None)
    n, c = sizes[:2]
    rest = sizes[2:]
    value = self._numpy().reshape((n, groups, c // groups) + rest).swapaxes(1, 2).reshape(sizes)
    return new_result(self, sizes, value)


@native
def channel_shuffle(self: Tensor, groups: int) -> Tensor:
    return _channel_shuffle(self, groups)


@native
def channel_shuffle_cpu(self: Tensor, groups: int) -> Tensor:
    return _channel_shuffle(self, groups)


@native
def math_channel_shuffle(self: Tensor, groups: int) -> Tensor:
    aten = _aten()
    groups = int(groups)
    _check_channel_shuffle(self, groups)
    sizes = list(self._sizes)
    n, c = sizes[:2]
    split = aten.reshape.default(self, [n, groups, c // groups] + sizes[2:])
    return aten.reshape.default(aten.transpose.int(split, 1, 2).contiguous(), sizes)
