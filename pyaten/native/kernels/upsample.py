"""Upsampling operators PyTorch declares with kernels: `upsample_nearest{1,2,3}d`,
`_upsample_nearest_exact{1,2,3}d`, `upsample_linear1d`, `upsample_bilinear2d`,
`upsample_bicubic2d`, `upsample_trilinear3d` (structured, with their structured `*_backward`
helpers), and the `.vec` composites that `F.interpolate` calls.

Each resampling is separable: along every spatial dimension an output position reads a few
input positions with weights that depend only on that dimension (nearest: one index; linear:
two taps; cubic: four taps, clamped at the edges). The kernels build those per-dimension maps
with PyTorch's source-index arithmetic (`area_pixel_compute_source_index`, `nearest_idx`,
computed in the input's precision as ATen does) and apply them to the whole batch: nearest
with one `np.take` per dimension, linear and cubic as one matrix product per dimension. The
backward is the transposed map (scatter of nearest, product with the transposed matrix).
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.symbolic import is_symbolic
from pyaten.core.tensor import Tensor
from pyaten.native.family import FLOATING_AND_REDUCED, unsupported_dtype
from pyaten.native.kernels.padding import (
    as_array,
    compute_dtype,
    scatter_along,
    scatter_axis,
    store,
    suggested_strides,
    take_along,
)
from pyaten.native.kernels.shape import format_shape
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native_at

_CUBIC_A = -0.75


# --- per-dimension maps --------------------------------------------------------------------------


def _scale_value(scale: float | None, n_in: int, n_out: int, ftype) -> np.floating:
    if scale is not None and scale > 0:
        return ftype(1.0 / scale)
    return ftype(ftype(n_in) / ftype(n_out))


def _area_scale(n_in: int, n_out: int, align_corners: bool, scale: float | None, ftype):
    if align_corners:
        return ftype(ftype(n_in - 1) / ftype(n_out - 1)) if n_out > 1 else ftype(0)
    return _scale_value(scale, n_in, n_out, ftype)


def _source_index(scale, n_out: int, align_corners: bool, cubic: bool, ftype) -> np.ndarray:
    dst = np.arange(n_out).astype(ftype)
    if align_corners:
        return (scale * dst).astype(ftype)
    src = (scale * (dst + ftype(0.5)) - ftype(0.5)).astype(ftype)
    return src if cubic else np.maximum(src, ftype(0))


def nearest_index(n_in: int, n_out: int, scale: float | None, exact: bool) -> np.ndarray:
    if not exact and n_out == n_in:
        return np.arange(n_out)
    if not exact and n_out == 2 * n_in:
        return np.arange(n_out) >> 1
    s = _scale_value(scale, n_in, n_out, np.float32)
    dst = np.arange(n_out)
    if exact:
        src = np.floor(((dst + 0.5) * np.float64(s)).astype(np.float32))
    else:
        src = np.floor(dst.astype(np.float32) * s)
    return np.minimum(src.astype(np.int64), n_in - 1)


def linear_taps(n_in: int, n_out: int, align_corners: bool, scale: float | None,
                ftype) -> list:
    """[(indices, weights)] of the two linear taps of each output position."""
    s = _area_scale(n_in, n_out, align_corners, scale, ftype)
    real = _source_index(s, n_out, align_corners, False, ftype)
    index = np.minimum(np.floor(real).astype(np.int64), n_in - 1)
    lam = np.clip(real - index.astype(ftype), 0, 1).astype(ftype)
    step = (index < n_in - 1).astype(np.int64)
    return [(index, (ftype(1) - lam).astype(ftype)), (index + step, lam)]


def _cubic1(x, a):
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cubic2(x, a):
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def cubic_taps(n_in: int, n_out: int, align_corners: bool, scale: float | None,
               ftype) -> list:
    """[(indices, weights)] of the four cubic taps (A = -0.75), indices clamped."""
    s = _area_scale(n_in, n_out, align_corners, scale, ftype)
    real = _source_index(s, n_out, align_corners, True, ftype)
    index = np.floor(real).astype(np.int64)
    t = (real - index.astype(ftype)).astype(ftype)
    a = ftype(_CUBIC_A)
    one = ftype(1)
    coeffs = [_cubic2(t + one, a), _cubic1(t, a), _cubic1(one - t, a), _cubic2(one - t + one, a)]
    return [(np.clip(index - 1 + j, 0, n_in - 1), c.astype(ftype)) for j, c in enumerate(coeffs)]


def _aa_linear(x: np.ndarray) -> np.ndarray:
    x = np.abs(x)
    return np.where(x < 1, 1 - x, 0)


def _aa_cubic(x: np.ndarray) -> np.ndarray:
    # Keys' kernel with a = -0.5, as PIL (and ATen's antialiased bicubic) use
    x = np.abs(x)
    return np.where(x < 1, _cubic1(x, -0.5), np.where(x < 2, _cubic2(x, -0.5), 0))


def _aa_lanczos(x: np.ndarray) -> np.ndarray:
    # Lanczos-3, as PIL
    return np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0)


_AA_FILTERS = {"aa_linear": (1.0, _aa_linear), "aa_cubic": (2.0, _aa_cubic),
               "aa_lanczos": (3.0, _aa_lanczos)}


def aa_matrix(n_in: int, n_out: int, align_corners: bool, scale: float | None, ftype,
              kind: str) -> np.ndarray:
    """The (out x in) matrix of an antialiased resampling: the filter widened by the
    downscaling factor, each row normalised to sum 1 (ATen's `_compute_weights_aa`)."""
    s = _area_scale(n_in, n_out, align_corners, scale, ftype)
    half, fn = _AA_FILTERS[kind]
    support = half * (float(s) if s >= 1 else 1.0)
    invscale = ftype(1 / s) if s >= 1 else ftype(1)
    center = (s * (np.arange(n_out).astype(ftype) + ftype(0.5))).astype(ftype)
    lo = np.maximum((center - support + 0.5).astype(np.int64), 0)
    hi = np.minimum((center + support + 0.5).astype(np.int64), n_in)
    j = np.arange(n_in)
    inside = (j >= lo[:, None]) & (j < hi[:, None])
    arg = ((j.astype(ftype) - center[:, None] + ftype(0.5)) * invscale).astype(ftype)
    w = np.where(inside, fn(arg), 0).astype(ftype)
    total = w.sum(1, keepdims=True)
    return np.where(total != 0, w / np.where(total != 0, total, 1), w).astype(ftype)


def apply_taps(x: np.ndarray, taps_per_axis: list) -> np.ndarray:
    """Interpolate the last len(taps_per_axis) axes one after the other, each output the
    weighted sum of its taps in tap order (float32 results can differ from ATen's in the
    last bit: its vectorised loops order and fuse the operations differently)."""
    k = len(taps_per_axis)
    for i in range(k):
        axis = x.ndim - k + i
        shape = [1] * x.ndim
        shape[axis] = -1
        total = None
        for index, weight in taps_per_axis[i]:
            term = np.take(x, index, axis=axis) * weight.reshape(shape)
            total = term if total is None else total + term
        x = total
    return x


def apply_matrices(x: np.ndarray, mats: list, transpose: bool) -> np.ndarray:
    """Contract each of the last len(mats) axes of `x` with its matrix (out x in), or with
    the transposed matrix for the backward."""
    k = len(mats)
    for i, w in enumerate(mats):
        axis = x.ndim - k + i
        m = w if transpose else w.T
        if axis == x.ndim - 1:
            x = x @ m
        else:
            x = np.moveaxis(np.moveaxis(x, axis, -1) @ m, -1, axis)
    return x


# --- checks ---------------------------------------------------------------------------------


def _sizes_text(names: str, values: tuple) -> str:
    return ", ".join(f"{n}: {v}" for n, v in zip(names, values))


def _check_sizes(dims: int, input_size: tuple, output_size: list) -> None:
    if len(output_size) != dims:
        raise RuntimeError(
            f"It is expected output_size equals to {dims}, but got size {len(output_size)}"
        )
    if len(input_size) != dims + 2:
        raise RuntimeError(
            f"It is expected input_size equals to {dims + 2}, but got size {len(input_size)}"
        )
    names = "DHW"[3 - dims:]
    spatial = tuple(input_size[2:])
    if any(s <= 0 for s in spatial) or any(s <= 0 for s in output_size):
        joiner = " and output" if dims == 1 else " output"
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input "
            f"({_sizes_text(names, spatial)}){joiner} ({_sizes_text(names, tuple(output_size))})"
        )


def _check_input(dims: int, self: Tensor) -> None:
    sizes = tuple(self._sizes)
    rest = 1
    for s in sizes[1:]:
        rest *= s
    if len(sizes) != dims + 2 or not (self.numel() != 0 or rest):
        raise RuntimeError(
            f"Non-empty {dims + 2}D data tensor expected but got a tensor with sizes "
            f"{format_shape(sizes)}"
        )


def _check_dtype(kind: str, dims: int, dtype) -> None:
    """PyTorch's CPU dtype switches: floating types, and uint8 where it has a path for it."""
    if dtype in FLOATING_AND_REDUCED:
        return
    if kind.startswith("nearest"):
        name = "upsample_nearest2d_channels_last" if dims == 2 else (
            "compute_indices_weights_nearest")
        allowed = dtype is dt.uint8
    elif kind in _AA_FILTERS:
        name, allowed = "compute_index_ranges_weights", dtype is dt.uint8
    elif kind == "cubic":
        name, allowed = "compute_indices_weights_cubic", dtype is dt.uint8
    else:
        name = "upsample_bilinear2d_channels_last" if dims == 2 else (
            "compute_indices_weights_linear")
        allowed = dims == 2 and dtype is dt.uint8
    if not allowed:
        raise unsupported_dtype(name, dtype)
    if not kind.startswith("nearest"):
        raise NotImplementedError(
            "pyaten: uint8 inputs of the interpolating modes (PyTorch's fixed-point path) "
            "are not implemented yet"
        )


# --- operator makers ---------------------------------------------------------------------------


def _maps(kind: str, in_spatial: tuple, out_spatial: tuple, align_corners: bool,
          scales: list, ftype) -> list:
    if kind in ("nearest", "nearest_exact"):
        return [nearest_index(i, o, s, kind == "nearest_exact")
                for i, o, s in zip(in_spatial, out_spatial, scales)]
    if kind in _AA_FILTERS:
        return [aa_matrix(i, o, align_corners, s, ftype, kind)
                for i, o, s in zip(in_spatial, out_spatial, scales)]
    make = cubic_taps if kind == "cubic" else linear_taps
    return [make(i, o, align_corners, s, ftype)
            for i, o, s in zip(in_spatial, out_spatial, scales)]


def _forward_value(kind: str, x: np.ndarray, maps: list) -> np.ndarray:
    if kind in ("nearest", "nearest_exact"):
        return take_along(x, maps)
    if kind in _AA_FILTERS:
        return apply_matrices(x, maps, transpose=False)
    return apply_taps(x, maps)


def _backward_value(kind: str, g: np.ndarray, maps: list, in_spatial: tuple) -> np.ndarray:
    if kind in ("nearest", "nearest_exact"):
        return scatter_along(g, maps, list(in_spatial))
    if kind in _AA_FILTERS:
        return apply_matrices(g, maps, transpose=True)
    k = len(maps)
    for i in reversed(range(k)):
        axis = g.ndim - k + i
        n = in_spatial[i]
        if n <= _DENSE_LIMIT:
            # small dimensions: one BLAS product with the (out x in) matrix beats sorting
            g = apply_matrices(g, [_taps_matrix(maps[i], n)], transpose=True) if (
                axis == g.ndim - 1) else np.moveaxis(apply_matrices(
                    np.moveaxis(g, axis, -1), [_taps_matrix(maps[i], n)], transpose=True),
                    -1, axis)
            continue
        shape = [1] * g.ndim
        shape[axis] = -1
        total = None
        for index, weight in maps[i]:
            part = scatter_axis(g * weight.reshape(shape), index, n, axis)
            total = part if total is None else total + part
        g = total
    return g


_DENSE_LIMIT = 512  # measured: BLAS wins over sort + reduceat up to a few hundred


def _taps_matrix(taps: list, n_in: int) -> np.ndarray:
    """The (out x in) matrix of one dimension's taps (repeated indices add up)."""
    n_out = taps[0][0].shape[0]
    w = np.zeros((n_out, n_in), taps[0][1].dtype)
    rows = np.arange(n_out)
    for index, weight in taps:
        np.add.at(w, (rows, index), weight)
    return w


def _split(kind: str, rest: tuple) -> tuple:
    """(align_corners, scales) from the arguments after output_size / input_size."""
    if kind in ("nearest", "nearest_exact"):
        return False, list(rest)
    return bool(rest[0]), list(rest[1:])


def _register(name: str, dims: int, kind: str) -> None:
    where = f"{__file__}:_register({name!r})"

    def meta(op, self: Tensor, output_size: list, *rest) -> None:
        output_size = [s if is_symbolic(s) else int(s) for s in output_size]
        _check_sizes(dims, tuple(self._sizes), output_size)
        _check_input(dims, self)
        sizes = tuple(self._sizes[:2]) + tuple(output_size)
        op.set_output(0, sizes, self._dtype, self._device, suggested_strides(self, sizes))

    def impl(op, self: Tensor, output_size: list, *rest) -> None:
        out = rest[-1]
        if out._device.type == "meta":
            return
        _check_dtype(kind, dims, self._dtype)
        if out.numel() == 0:
            return
        align_corners, scales = _split(kind, rest[:-1])
        ftype = compute_dtype(self._dtype).type
        x = self._numpy() if kind.startswith("nearest") else as_array(self)
        maps = _maps(kind, tuple(self._sizes[2:]), tuple(int(s) for s in output_size),
                     align_corners, scales, ftype)
        store(out, _forward_value(kind, x, maps))

    def meta_backward(op, grad_output: Tensor, output_size: list, input_size: list,
                      *rest) -> None:
        output_size = [int(s) for s in output_size]
        input_size = tuple(int(s) for s in input_size)
        _check_sizes(dims, input_size, output_size)
        if grad_output.dim() != dims + 2:
            raise RuntimeError(
                f"Expected grad_output to be a tensor of dimension {dims + 2} but got: "
                f"dimension {grad_output.dim()}"
            )
        expected = input_size[:2] + tuple(output_size)
        for i, (e, g) in enumerate(zip(expected, grad_output._sizes)):
            if e != g:
                raise RuntimeError(
                    f"Expected grad_output to have the same shape as output; output.size({i}) = "
                    f"{e} but got grad_output.size({i}) = {g}"
                )
        op.set_output(0, input_size, grad_output._dtype, grad_output._device,
                      suggested_strides(grad_output, input_size))

    def impl_backward(op, grad_output: Tensor, output_size: list, input_size: list,
                      *rest) -> None:
        grad_input = rest[-1]
        if grad_input._device.type == "meta" or grad_input.numel() == 0:
            return
        align_corners, scales = _split(kind, rest[:-1])
        ftype = compute_dtype(grad_output._dtype).type
        in_spatial = tuple(int(s) for s in input_size[2:])
        maps = _maps(kind, in_spatial, tuple(int(s) for s in output_size), align_corners,
                     scales, ftype)
        store(grad_input, _backward_value(kind, as_array(grad_output), maps, in_spatial))

    def vec(input: Tensor, output_size, *rest) -> Tensor:
        # (output_size, [align_corners], scale_factors) -> the sized operator
        scale_factors = rest[-1]
        osize = _output_size(input, output_size, scale_factors, dims)
        scales = list(scale_factors) if scale_factors is not None else [None] * dims
        op = getattr(_aten(), name).default
        return op(input, osize, *rest[:-1], *scales)

    native_at(f"meta_{name}", meta, where)
    native_at(f"{name}_out_cpu", impl, where)
    native_at(f"meta_{name}_backward", meta_backward, where)
    native_at(f"{name}_backward_out_cpu", impl_backward, where)
    native_at(f"{name}_vec", vec, where)


def _output_size(input: Tensor, output_size, scale_factors, dims: int) -> list:
    if (output_size is None) == (scale_factors is None):
        raise RuntimeError("Must specify exactly one of output_size and scale_factors")
    if output_size is not None:
        return [s if is_symbolic(s) else int(s) for s in output_size]
    spatial = tuple(input._sizes[2:])
    if len(scale_factors) != dims or len(spatial) != dims:
        raise RuntimeError(
            f"It is expected output_size equals to {dims}, but got size {len(scale_factors)}"
        )
    return [_scaled_size(n, s) for n, s in zip(spatial, scale_factors)]


def _scaled_size(n, scale) -> int:
    """floor(n * scale) taken in double, as ATen does. A symbolic size stays symbolic when
    the product is exact in double (a scale p / q with q a small power of two and a small p,
    `2.0`, `0.5`, `1.5`...): then the floor is the integer quotient `n * p // q` (Note:
    symbolic values carry a hint); any other scale specialises the size."""
    if is_symbolic(n):
        p, q = float(scale).as_integer_ratio()
        if q <= 1024 and abs(p) < 2**20:
            return n * p if q == 1 else (n * p) // q
    return int(math.floor(float(n) * float(scale)))


for _name, _dims, _kind in (
    ("upsample_nearest1d", 1, "nearest"),
    ("upsample_nearest2d", 2, "nearest"),
    ("upsample_nearest3d", 3, "nearest"),
    ("_upsample_nearest_exact1d", 1, "nearest_exact"),
    ("_upsample_nearest_exact2d", 2, "nearest_exact"),
    ("_upsample_nearest_exact3d", 3, "nearest_exact"),
    ("upsample_linear1d", 1, "linear"),
    ("upsample_bilinear2d", 2, "linear"),
    ("upsample_trilinear3d", 3, "linear"),
    ("upsample_bicubic2d", 2, "cubic"),
    ("_upsample_bilinear2d_aa", 2, "aa_linear"),
    ("_upsample_bicubic2d_aa", 2, "aa_cubic"),
    ("_upsample_lanczos2d_aa", 2, "aa_lanczos"),
):
    _register(_name, _dims, _kind)
