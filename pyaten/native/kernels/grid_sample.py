"""Grid sampling: `grid_sampler_2d` and `grid_sampler_2d_backward` (CPU and Meta), and the
affine grids of `F.affine_grid` (`affine_grid_generator`, CompositeExplicitAutograd, with the
composite `affine_grid_generator_backward`).

Every output position samples the input at a grid point: the point is unnormalised from
[-1, 1] to pixel coordinates, mapped by the padding mode (border clamps, reflection mirrors,
both with the gradient multiplier ATen's `*_set_grad` helpers give), then read through its
taps: bilinear 2x2, nearest 1 (half to even), bicubic 4x4 (A = -0.75, taps mapped by the
padding mode one by one). All positions of the whole batch are one NumPy computation: taps are
gathered with fancy indexing (out-of-range taps read 0) and the input gradient is summed back
with one `np.bincount` over flat indices.
"""

from __future__ import annotations

import itertools

import numpy as np

from pyaten.core.tensor import Tensor
from pyaten.native.family import FLOATING_AND_REDUCED, unsupported_dtype
from pyaten.native.kernels.padding import as_array, compute_dtype, new_result
from pyaten.native.kernels.shape import format_shape
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.native.registry import native

BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
_A = -0.75


# --- coordinates ---------------------------------------------------------------------------------


def _unnormalize(coord: np.ndarray, size: int, align_corners: bool) -> tuple:
    """(pixel coordinate, d pixel / d coord)."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1), (size - 1) / 2
    return ((coord + 1) * size - 1) / 2, size / 2


def _clip(coord: np.ndarray, size: int) -> tuple:
    limit = size - 1
    grad = ((coord > 0) & (coord < limit)).astype(coord.dtype)
    return np.clip(coord, 0, limit), grad


def _reflect(coord: np.ndarray, twice_low: int, twice_high: int) -> tuple:
    if twice_low == twice_high:
        return np.zeros_like(coord), np.zeros_like(coord)
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    shifted = coord - low
    sign = np.where(shifted < 0, -1, 1).astype(coord.dtype)
    shifted = np.abs(shifted)
    extra = np.fmod(shifted, span)
    flips = np.floor(shifted / span)
    even = np.fmod(flips, 2) == 0
    value = np.where(even, extra + low, span - extra + low)
    return value.astype(coord.dtype), np.where(even, sign, -sign)


def _pad_coordinates(coord: np.ndarray, size: int, padding_mode: int,
                     align_corners: bool) -> tuple:
    """The padding mode's mapping of a pixel coordinate and its derivative."""
    one = np.ones_like(coord)
    if padding_mode == BORDER:
        return _clip(coord, size)
    if padding_mode == REFLECTION:
        if align_corners:
            coord, g = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord, g = _reflect(coord, -1, 2 * size - 1)
        coord, g2 = _clip(coord, size)
        return coord, g * g2
    return coord, one


def _cubic_coefficients(t: np.ndarray) -> list:
    def c1(x):
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def c2(x):
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A

    return [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]


def _cubic_derivatives(t: np.ndarray) -> list:
    def d1(x):
        return (3 * (_A + 2) * x - 2 * (_A + 3)) * x

    def d2(x):
        return (3 * _A * x - 10 * _A) * x + 8 * _A

    return [d2(t + 1), d1(t), -d1(1 - t), -d2(2 - t)]


def _taps(spatial: tuple, grid: np.ndarray, mode: int, padding_mode: int,
          align_corners: bool) -> tuple:
    """The taps of every grid point, [(indices, weight, [d weight / d coordinate])], and the
    coordinate multipliers. Coordinates and indices run x, y[, z] (the input's last dimension
    first), as in the grid."""
    sizes = tuple(reversed(spatial))
    coords, mults = [], []
    for d, size in enumerate(sizes):
        c, m = _unnormalize(grid[..., d], size, align_corners)
        coords.append(c)
        mults.append(m)
    if mode == BICUBIC:
        x, y = coords
        x0, y0 = np.floor(x), np.floor(y)
        tx, ty = x - x0, y - y0
        cx, cy = _cubic_coefficients(tx), _cubic_coefficients(ty)
        dx, dy = _cubic_derivatives(tx), _cubic_derivatives(ty)
        taps = []
        for j in range(4):
            for i in range(4):
                px, _ = _pad_coordinates(x0 - 1 + i, sizes[0], padding_mode, align_corners)
                py, _ = _pad_coordinates(y0 - 1 + j, sizes[1], padding_mode, align_corners)
                taps.append(([px, py], cx[i] * cy[j], [dx[i] * cy[j], cx[i] * dy[j]]))
        return taps, mults
    mapped = []
    for d, size in enumerate(sizes):
        c, g = _pad_coordinates(coords[d], size, padding_mode, align_corners)
        mapped.append(c)
        mults[d] = mults[d] * g
    if mode == NEAREST:
        zero = np.zeros_like(mapped[0])
        return [([np.rint(c) for c in mapped], np.ones_like(zero), [zero] * len(sizes))], mults
    lows = [np.floor(c) for c in mapped]
    # per dimension: (index, weight, d weight / d coordinate) of the low and high tap
    sides = [[(lo, lo + 1 - c, -np.ones_like(c)), (lo + 1, c - lo, np.ones_like(c))]
             for c, lo in zip(mapped, lows)]
    taps = []
    for corner in itertools.product((0, 1), repeat=len(sizes)):
        # PyTorch's corner order: z outermost, then y, then x
        picks = [sides[d][corner[len(sizes) - 1 - d]] for d in range(len(sizes))]
        weight = picks[0][1]
        for p in picks[1:]:
            weight = weight * p[1]
        grads = []
        for d in range(len(sizes)):
            g = picks[d][2]
            for e in range(len(sizes)):
                if e != d:
                    g = g * picks[e][1]
            grads.append(g)
        taps.append(([p[0] for p in picks], weight, grads))
    return taps, mults


def _gather(flat_input: np.ndarray, spatial: tuple, indices: list) -> tuple:
    """`flat_input` (N * prod(spatial), C), channels last, read at the (x, y[, z]) `indices`
    (each of the grid's shape (N, *out)): (N, *out, C) read at the clamped indices, the
    in-bounds mask (the callers zero what lies outside) and the flat row index of each read."""
    sizes = tuple(reversed(spatial))
    inside = np.ones(indices[0].shape, bool)
    clamped = []
    for idx, size in zip(indices, sizes):
        inside &= (idx >= 0) & (idx <= size - 1)
        clamped.append(np.clip(np.nan_to_num(idx), 0, size - 1).astype(np.int64))
    n = indices[0].shape[0]
    plane = int(np.prod(spatial))
    batch = (np.arange(n) * plane).reshape((n,) + (1,) * (indices[0].ndim - 1))
    rows = batch + np.ravel_multi_index(tuple(reversed(clamped)), spatial)
    return np.take(flat_input, rows, axis=0), inside, rows


# --- checks ----------------------------------------------------------------------------------


def _check(input: Tensor, grid: Tensor, mode: int, dims: int) -> None:
    if input._device != grid._device:
        raise RuntimeError(
            "grid_sampler(): expected input and grid to be on same device, but input is on "
            f"{input._device} and grid is on {grid._device}"
        )
    in_text, grid_text = format_shape(tuple(input._sizes)), format_shape(tuple(grid._sizes))
    if grid._sizes[-1] != input.dim() - 2:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, "
            f"but got grid with sizes {grid_text}"
        )
    if input._sizes[0] != grid._sizes[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {in_text} and grid with sizes {grid_text}"
        )
    for i in range(2, input.dim()):
        if input._sizes[i] <= 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but "
                f"input has sizes {in_text} with dimension {i} being empty"
            )
    if input.dim() != dims + 2 or grid.dim() != input.dim():
        raise RuntimeError(
            f"grid_sampler(): expected {dims + 2}D input and grid with same number of "
            f"dimensions, but got input with sizes {in_text} and grid with sizes {grid_text}"
        )
    if dims == 3 and mode == BICUBIC:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input._dtype not in FLOATING_AND_REDUCED and input._device.type != "meta":
        name = "grid_sampler_2d_cpu_kernel_impl" if dims == 2 else "grid_sampler3d_cpu"
        raise unsupported_dtype(name, input._dtype)
    if input._dtype is not grid._dtype:
        raise RuntimeError(
            f"expected scalar type {input._dtype.scalar_name} but found "
            f"{grid._dtype.scalar_name}"
        )


# --- operators ---------------------------------------------------------------------------------


def _channels_last(inp: np.ndarray) -> np.ndarray:
    """(N, C, *spatial) -> (N * prod(spatial), C), contiguous."""
    n, c = inp.shape[:2]
    return np.ascontiguousarray(np.moveaxis(inp, 1, -1)).reshape(-1, c)


def _forward(input: Tensor, grid: Tensor, mode: int, padding_mode: int, align_corners: bool,
             dims: int) -> Tensor:
    _check(input, grid, mode, dims)
    sizes = tuple(input._sizes[:2]) + tuple(grid._sizes[1:-1])
    if input._device.type == "meta":
        return new_result(input, sizes, None)
    acc = compute_dtype(input._dtype)
    inp, g = as_array(input, acc), as_array(grid, acc)
    if not int(np.prod(sizes)):
        return new_result(input, sizes, np.zeros(sizes, acc))
    spatial = inp.shape[2:]
    flat = _channels_last(inp)
    taps, _ = _taps(spatial, g, mode, padding_mode, align_corners)
    out = None
    for indices, weight, _ in taps:
        values, inside, _ = _gather(flat, spatial, indices)
        np.multiply(values, (weight * inside).astype(acc)[..., None], out=values)
        if out is None:
            out = values
        else:
            out += values
    return new_result(input, sizes, np.moveaxis(out, -1, 1))


def _backward(grad_output: Tensor, input: Tensor, grid: Tensor, mode: int, padding_mode: int,
              align_corners: bool, output_mask: list, dims: int) -> tuple:
    _check(input, grid, mode, dims)
    want_input = bool(output_mask[0])
    if input._device.type == "meta" or grad_output._device.type == "meta":
        grad_input = new_result(input, tuple(input._sizes), None) if want_input else None
        return grad_input, new_result(grid, tuple(grid._sizes), None)
    acc = compute_dtype(input._dtype)
    inp, g = as_array(input, acc), as_array(grid, acc)
    go = np.moveaxis(as_array(grad_output, acc), 1, -1)  # (N, *out, C)
    n, c = inp.shape[:2]
    spatial = inp.shape[2:]
    rows_total = n * int(np.prod(spatial))
    flat = _channels_last(inp)
    taps, mults = _taps(spatial, g, mode, padding_mode, align_corners)
    gin = np.zeros(rows_total * c, acc) if want_input else None
    grads = [np.zeros(g.shape[:-1], acc) for _ in range(dims)]
    channel = np.arange(c)
    for indices, weight, dweights in taps:
        values, inside, rows = _gather(flat, spatial, indices)
        if want_input and go.size:
            where = rows[..., None] * c + channel
            contrib = go * (weight * inside)[..., None]
            gin += np.bincount(where.reshape(-1), contrib.reshape(-1), rows_total * c)
        if mode != NEAREST:
            vg = np.einsum("...c,...c->...", values, go) * inside
            for d in range(dims):
                grads[d] += vg * dweights[d]
    grad_grid = np.stack([gd * m for gd, m in zip(grads, mults)], -1)
    grad_input = None
    if want_input:
        value = np.moveaxis(gin.reshape((n,) + tuple(spatial) + (c,)), -1, 1)
        grad_input = new_result(input, tuple(input._sizes), value)
    return grad_input, new_result(grid, tuple(grid._sizes), grad_grid)


@native
def grid_sampler_2d_cpu(input: Tensor, grid: Tensor, interpolation_mode: int,
                        padding_mode: int, align_corners: bool) -> Tensor:
    return _forward(input, grid, interpolation_mode, padding_mode, align_corners, 2)


@native
def grid_sampler_2d_backward_cpu(grad_output: Tensor, input: Tensor, grid: Tensor,
                                 interpolation_mode: int, padding_mode: int,
                                 align_corners: bool, output_mask: list) -> tuple:
    return _backward(grad_output, input, grid, interpolation_mode, padding_mode,
                     align_corners, output_mask, 2)


@native
def grid_sampler_3d_cpu(input: Tensor, grid: Tensor, interpolation_mode: int,
                        padding_mode: int, align_corners: bool) -> Tensor:
    return _forward(input, grid, interpolation_mode, padding_mode, align_corners, 3)


@native
def grid_sampler_3d_backward_cpu(grad_output: Tensor, input: Tensor, grid: Tensor,
                                 interpolation_mode: int, padding_mode: int,
                                 align_corners: bool, output_mask: list) -> tuple:
    return _backward(grad_output, input, grid, interpolation_mode, padding_mode,
                     align_corners, output_mask, 3)


# --- affine grids ------------------------------------------------------------------------------


def _linspace(steps: int, align_corners: bool) -> np.ndarray:
    if steps <= 1:
        return np.zeros(max(steps, 0))
    r = np.linspace(-1, 1, steps)
    return r if align_corners else r * (steps - 1) / steps


def _base_grid(size: list, align_corners: bool, dtype: np.dtype) -> np.ndarray:
    """(spatial..., k + 1): the x, y[, z] coordinates and a column of ones."""
    spatial = [int(s) for s in size[2:]]
    axes = [_linspace(s, align_corners) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")
    coords = [m.astype(dtype) for m in reversed(mesh)]  # x first (the last dimension)
    return np.stack(coords + [np.ones(spatial, dtype)], -1)


@native
def affine_grid_generator(theta: Tensor, size: list, align_corners: bool) -> Tensor:
    size = [int(s) for s in size]
    k = len(size) - 2
    n = size[0]
    out_sizes = (n, *size[2:], k)
    if theta._device.type == "meta":
        return new_result(theta, out_sizes, None)
    acc = compute_dtype(theta._dtype)
    base = _base_grid(size, align_corners, acc).reshape(-1, k + 1)
    t = as_array(theta, acc)
    grid = np.einsum("pk,njk->npj", base, t)
    return new_result(theta, out_sizes, grid.reshape(out_sizes))


@native
def affine_grid_generator_backward(grad: Tensor, size: list, align_corners: bool) -> Tensor:
    aten = _aten()
    size = [int(s) for s in size]
    k = len(size) - 2
    acc = compute_dtype(grad._dtype)
    base = _base_grid(size, align_corners, acc).reshape(-1, k + 1)
    from pyaten.core.creation import share_array

    base_t = share_array(np.ascontiguousarray(base), grad._dtype)
    if grad._device.type == "meta":
        base_t = aten.empty_like.default(base_t, None, None, grad._device, None, None)
    flat = aten.reshape.default(grad, [size[0], -1, k])
    # (N, k, P) @ (P, k + 1) -> (N, k, k + 1)
    return aten.matmul.default(aten.transpose.int(flat, 1, 2), base_t)


@native
def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    op = _aten().grid_sampler_2d if input.dim() == 4 else _aten().grid_sampler_3d
    return op.default(input, grid, interpolation_mode, padding_mode, align_corners)
