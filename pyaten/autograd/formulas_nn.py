"""Derivative helpers of the normalisation operators: double backward and forward mode.

`native_layer_norm_backward` and `native_batch_norm_backward` get their own gradients
(`layer_norm_double_backward`, `batchnorm_double_backward`), `native_group_norm` is
differentiated through `infinitely_differentiable_native_group_norm_backward` whenever a
graph is recorded, and `*_jvp` give the tangents of the normalised outputs. The math follows
PyTorch's `FunctionsManual`; every helper is written over pyaten's differentiable operators,
so its result records a graph under `create_graph=True`.

Notation: `gO` is the first backward's incoming gradient, `ggI` / `ggG` / `ggB` are the
gradients that reach that backward's outputs (grad_input, grad_weight, grad_bias; None when
none reached them), `invstd` is 1 / sqrt(var + eps).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pyaten
from pyaten.autograd.formulas_reduce import var_mean_backward
from pyaten.core.tensor import Tensor

__all__ = [
    "batchnorm_double_backward",
    "layer_norm_double_backward",
    "infinitely_differentiable_native_group_norm_backward",
    "native_group_norm_grads",
    "batch_norm_jvp",
    "layer_norm_jvp",
    "group_norm_jvp",
    "group_norm_mean_jvp",
    "group_norm_invstd_jvp",
    "grid_sample_composite",
    "grid_sampler_double_backward",
]

Grads3 = tuple[Tensor | None, Tensor | None, Tensor | None]


def _plus(total: Tensor | None, term: Tensor) -> Tensor:
    return term if total is None else total + term


def _bias_term(ggO: Tensor | None, ggB: Tensor, affine: bool) -> Tensor | None:
    """ggO plus the bias gradient's term. Without a weight PyTorch reads an undefined tensor
    here: the term is lost, or the addition fails when ggO already has a value."""
    if affine:
        return _plus(ggO, ggB)
    if ggO is not None:
        raise RuntimeError("Expected a proper Tensor but got None (or an undefined Tensor in "
                           "C++) for argument #1 'other'")
    return None


# --- batch norm ---------------------------------------------------------------------------------


def _channel_shape(ndim: int, channels: int) -> list[int]:
    """[1, C, 1, ...]: a per-channel vector laid out to broadcast over an input of `ndim`."""
    shape = [1] * ndim
    shape[1] = channels
    return shape


def _sum_but_channels(t: Tensor, keepdim: bool = True) -> Tensor:
    """The sum over every dimension except 1 (the channels)."""
    return t.sum([d for d in range(t.dim()) if d != 1], keepdim)


def _norm_grad_input(gO: Tensor, gamma: Tensor, xc: Tensor, invstd: Tensor, count: int,
                     reduce: Any) -> Tensor:
    """The training-mode grad_input of a normalisation, (gamma * invstd / M) * (M gO -
    sum(gO) - xc invstd^2 sum(gO xc)), the sums over the normalised elements (`reduce`)."""
    first = gamma * invstd / count
    second = count * gO - reduce(gO) - xc * invstd.pow(2) * reduce(gO * xc)
    return first * second


def batchnorm_double_backward(input: Tensor, gamma: Tensor | None, ggI: Tensor | None,
                              ggG: Tensor | None, ggB: Tensor | None, gO: Tensor,
                              running_mean: Tensor | None, running_var: Tensor | None,
                              training: bool, eps: float, save_mean: Tensor | None,
                              save_invstd: Tensor | None, output_mask: Sequence[bool]) -> Grads3:
    """The gradients of native_batch_norm_backward: (input, weight, grad_out)."""
    ndim, channels = input.dim(), input.shape[1]
    view = _channel_shape(ndim, channels)
    affine = gamma is not None
    gamma_x = gamma.reshape(view) if affine else pyaten.ones((), dtype=input.dtype)
    count = input.shape[0] * math.prod(input.shape[2:])
    if training:
        mean = save_mean.to(input.dtype).reshape(view)
        invstd = save_invstd.to(input.dtype).reshape(view)
    else:
        mean = running_mean.reshape(view)
        invstd = (running_var + eps).pow(-0.5).reshape(view)
    xc = input - mean
    invstd2 = invstd.pow(2)
    invstd3 = invstd.pow(3)
    xc_invstd3 = xc * invstd3
    gO_xc_sum = _sum_but_channels(gO * xc)
    gO_sum = _sum_but_channels(gO)

    gI = None
    if ggI is not None and training:
        ggI_sum = _sum_but_channels(ggI)
        ggI_xc_sum = _sum_but_channels(ggI * xc)
        inner = (ggI_sum * gO_sum / count - _sum_but_channels(gO * ggI)
                 + invstd2 * gO_xc_sum * ggI_xc_sum * (3.0 / count))
        term0 = xc_invstd3 * inner / count
        term1 = ggI_xc_sum * invstd3 / count * (gO_sum / count - gO)
        term2 = gO_xc_sum * invstd3 / count * (ggI_sum / count - ggI)
        gI = gamma_x * (term0 + term1 + term2)
    if affine and ggG is not None:
        ggG_x = ggG.reshape(view)
        if training:
            g_term = gO * invstd - invstd * gO_sum / count - xc_invstd3 * gO_xc_sum / count
            gI = _plus(gI, ggG_x * g_term)
        else:
            gI = _plus(gI, ggG_x * invstd * gO)

    gG = None
    if affine and ggI is not None:
        if training:
            ones = pyaten.ones((), dtype=invstd.dtype)
            full = ggI * _norm_grad_input(gO, ones, xc, invstd, count, _sum_but_channels)
        else:
            full = ggI * gO * invstd
        gG = _sum_but_channels(full, False)

    ggO = None
    if ggI is not None:
        if training:
            ggO = _norm_grad_input(ggI, gamma_x, xc, invstd, count, _sum_but_channels)
        else:
            ggO = ggI * invstd * gamma_x
    if ggG is not None:
        ggO = _plus(ggO, ggG.reshape(view) * xc * invstd)
    if ggB is not None:
        ggO = _bias_term(ggO, ggB.reshape(view), affine)
    return gI, gG, ggO


# --- layer norm ---------------------------------------------------------------------------------


def layer_norm_double_backward(input: Tensor, gamma: Tensor | None, ggI: Tensor | None,
                               ggG: Tensor | None, ggB: Tensor | None, gO: Tensor,
                               save_mean: Tensor, save_invstd: Tensor,
                               normalized_shape: Sequence[int],
                               output_mask: Sequence[bool]) -> Grads3:
    """The gradients of native_layer_norm_backward: (input, weight, grad_out). The input is
    seen as M rows of N normalised elements."""
    axis = input.dim() - len(normalized_shape)
    rows = math.prod(input.shape[:axis])
    n = math.prod(input.shape[axis:])
    x = input.reshape(rows, n)
    g = gO.reshape(rows, n)
    affine = gamma is not None
    gamma_x = gamma.reshape(1, n) if affine else pyaten.ones((1,), dtype=input.dtype)
    ggI_x = ggI.reshape(rows, n) if ggI is not None else None
    xc = x - save_mean.to(input.dtype).reshape(rows, 1)
    invstd = save_invstd.to(input.dtype).reshape(rows, 1)
    invstd2 = invstd.pow(2)
    invstd3 = invstd.pow(3)
    xc_invstd3 = xc * invstd3

    def row_sum(t: Tensor) -> Tensor:
        return t.sum(1, True)

    gI = None
    if ggI_x is not None:
        gxhat = g * gamma_x
        gxhat_xc_sum = row_sum(gxhat * xc)
        gxhat_sum = row_sum(gxhat)
        ggI_sum = row_sum(ggI_x)
        ggI_xc_sum = row_sum(ggI_x * xc)
        inner = (ggI_sum * gxhat_sum / n - row_sum(ggI_x * gxhat)
                 + invstd2 * gxhat_xc_sum * ggI_xc_sum * (3.0 / n))
        term0 = xc_invstd3 * inner / n
        term1 = ggI_xc_sum * invstd3 / n * (gxhat_sum / n - gxhat)
        term2 = gxhat_xc_sum * invstd3 / n * (ggI_sum / n - ggI_x)
        gI = term0 + term1 + term2
    if affine and ggG is not None:
        g_ggG = g * ggG.reshape(1, n)
        g_term = (g_ggG * invstd - invstd * row_sum(g_ggG) / n
                  - xc_invstd3 * row_sum(g_ggG * xc) / n)
        gI = _plus(gI, g_term)
    if gI is not None:
        gI = gI.reshape(input.shape)

    gG = None
    if affine and ggI_x is not None:
        ones = pyaten.ones((), dtype=invstd.dtype)
        gG = (g * _norm_grad_input(ggI_x, ones, xc, invstd, n, row_sum)).sum(0)
        gG = gG.reshape(gamma.shape)

    ggO = None
    if ggI_x is not None:
        ggO = _norm_grad_input(ggI_x, gamma_x, xc, invstd, n, row_sum)
    if ggG is not None:
        ggO = _plus(ggO, ggG.reshape(1, n) * xc * invstd)
    if ggB is not None:
        ggO = _bias_term(ggO, ggB.reshape(1, n), affine)
    if ggO is not None:
        ggO = ggO.expand(rows, n).reshape(input.shape)
    return gI, gG, ggO


# --- group norm ---------------------------------------------------------------------------------


def infinitely_differentiable_native_group_norm_backward(
        dY: Tensor | None, dmean: Tensor | None, drstd: Tensor | None, X: Tensor,
        mean: Tensor, rstd: Tensor, gamma: Tensor | None, N: int, C: int, HxW: int,
        group: int, eps: float, grad_input_mask: Sequence[bool]) -> Grads3:
    """native_group_norm's gradients as differentiable pyaten operations. As in PyTorch, the
    gradients of the mean and rstd outputs count only when both reached them."""
    g = group
    d = C // g
    s = 1.0 / (d * HxW)
    x = X.reshape(N, g, d, HxW)
    mean_x = mean.reshape(N, g, 1, 1)
    rstd_x = rstd.reshape(N, g, 1, 1)
    gamma_x = gamma.reshape(1, g, d, 1) if gamma is not None else None
    dX = dgamma = dbeta = None
    ds = db = dy = None
    if dY is not None:
        dy = dY.reshape(N, g, d, HxW)
        ds = (dy * x).sum(3).unsqueeze(-1)
        db = dy.sum(3).unsqueeze(-1)
    both_stats = dmean is not None and drstd is not None
    if grad_input_mask[0]:
        stats_grad = None
        if both_stats:
            dvar = -0.5 * rstd_x.pow(3) * drstd.view(N, g, 1, 1)
            stats_grad = var_mean_backward(dvar, dmean.view(N, g, 1, 1), x, [2, 3], 0, True)
        if dy is not None:
            a = rstd_x * gamma_x if gamma_x is not None else rstd_x
            b = ((ds * gamma_x).sum(2) if gamma_x is not None else ds.sum(2)).unsqueeze(-2)
            c = ((db * gamma_x).sum(2) if gamma_x is not None else db.sum(2)).unsqueeze(-2)
            b = (c * mean_x - b) * rstd_x.pow(3) * s
            c = -b * mean_x - c * rstd_x * s
            dX = a * dy + b * x + c
            if stats_grad is not None:
                dX = dX + stats_grad
            dX = dX.reshape(X.shape)
        elif stats_grad is not None:
            dX = stats_grad.reshape(X.shape)
    if grad_input_mask[1] and dy is not None:
        dgamma = _like_gamma(((ds - db * mean_x) * rstd_x).sum(0), gamma)
    if grad_input_mask[2] and dy is not None:
        dbeta = _like_gamma(db.sum(0), gamma)
    return dX, dgamma, dbeta


def _like_gamma(t: Tensor, gamma: Tensor | None) -> Tensor:
    """`t` shaped as the weight; without one PyTorch reshapes to an undefined tensor's [0]."""
    if gamma is None:
        raise RuntimeError(f"shape '[0]' is invalid for input of size {t.numel()}")
    return t.reshape(gamma.shape)


def native_group_norm_grads(grads: Sequence[Tensor | None], input: Tensor, mean: Tensor,
                            rstd: Tensor, weight: Tensor | None, N: int, C: int, HxW: int,
                            group: int, eps: float, grad_input_mask: Sequence[bool]) -> Grads3:
    """native_group_norm's backward as PyTorch picks it: the differentiable formula when a
    graph is recorded or the statistics got gradients, else native_group_norm_backward."""
    dY, dmean, drstd = grads[0], grads[1], grads[2]
    if pyaten.is_grad_enabled() or dmean is not None or drstd is not None:
        return infinitely_differentiable_native_group_norm_backward(
            dY, dmean, drstd, input, mean, rstd, weight, N, C, HxW, group, eps,
            grad_input_mask)
    if dY is None:
        return None, None, None
    return pyaten.ops.aten.native_group_norm_backward.default(
        dY.contiguous(), input.contiguous(), mean, rstd, weight, N, C, HxW, group,
        list(grad_input_mask))


# --- forward mode -------------------------------------------------------------------------------


def _invstd_jvp(input_p: Tensor, input_t: Tensor, mean_p: Tensor, invstd_p: Tensor,
                dims: list[int], numel: int, keepdim: bool) -> Tensor:
    """The tangent of 1 / std(input) over `dims` (the biased variance)."""
    centred_t = input_t - input_t.mean(dims, True)
    return (-invstd_p.pow(3) * centred_t * (input_p - mean_p)).sum(dims, keepdim) / numel


def _norm_jvp(input_p: Tensor, input_t: Tensor, mean_p: Tensor, invstd_p: Tensor,
              dims: list[int], numel: int) -> Tensor:
    """The tangent of (input - mean) * invstd, both statistics over `dims`."""
    invstd_t = _invstd_jvp(input_p, input_t, mean_p, invstd_p, dims, numel, True)
    return (input_t - input_t.mean(dims, True)) * invstd_p + (input_p - mean_p) * invstd_t


def _affine_jvp(normed_p: Tensor | None, normed_t: Tensor, weight_p: Tensor | None,
                weight_t: Tensor | None, bias_t: Tensor | None) -> Tensor:
    """The tangent of normed * weight + bias (weight and bias optional)."""
    result = normed_t
    if weight_p is not None:
        result = result * weight_p
        if weight_t is not None:
            result = result + normed_p * weight_t
    if bias_t is not None:
        result = result + bias_t
    return result


def batch_norm_jvp(input_p: Tensor, input_t: Tensor, weight_p: Tensor | None,
                   weight_t: Tensor | None, bias_p: Tensor | None, bias_t: Tensor | None,
                   running_mean: Tensor | None, running_var: Tensor | None,
                   saved_mean: Tensor, saved_invstd: Tensor, train: bool,
                   eps: float) -> Tensor:
    """The tangent of native_batch_norm's output."""
    sizes = list(input_t.shape)
    dims = [d for d in range(len(sizes)) if d != 1]
    numel = math.prod(sizes[d] for d in dims)
    view = [1 if d != 1 else s for d, s in enumerate(sizes)]
    if train:
        mean_p = saved_mean.view(view)
        invstd_p = saved_invstd.view(view)
        result_t = _norm_jvp(input_p, input_t, mean_p, invstd_p, dims, numel)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(
                "Expect running_mean and running_var to have value when train=false")
        if running_mean._fw_grad is not None or running_var._fw_grad is not None:
            raise RuntimeError(
                "batch_norm is not differentiable wrt running_mean and running_var, they "
                "cannot have forward grad defined")
        mean_p = running_mean.view(view)
        invstd_p = (1 / pyaten.sqrt(running_var + eps)).view(view)
        result_t = input_t * invstd_p
    normed_p = (input_p - mean_p) * invstd_p if weight_p is not None else None
    return _affine_jvp(normed_p, result_t, _view(weight_p, view), _view(weight_t, view),
                       _view(bias_t, view))


def _view(t: Tensor | None, shape: list[int]) -> Tensor | None:
    return None if t is None else t.view(shape)


def layer_norm_jvp(input_p: Tensor, input_t: Tensor, weight_p: Tensor | None,
                   weight_t: Tensor | None, bias_p: Tensor | None, bias_t: Tensor | None,
                   saved_mean: Tensor, saved_invstd: Tensor,
                   normalized_shape: Sequence[int]) -> Tensor:
    """The tangent of native_layer_norm's output."""
    sizes = list(input_t.shape)
    axis = len(sizes) - len(normalized_shape)
    dims = list(range(axis, len(sizes)))
    numel = math.prod(sizes[axis:])
    view = sizes[:axis] + [1] * len(normalized_shape)
    view_affine = [1] * axis + sizes[axis:]
    mean_p = saved_mean.view(view)
    invstd_p = saved_invstd.view(view)
    result_t = _norm_jvp(input_p, input_t, mean_p, invstd_p, dims, numel)
    normed_p = (input_p - mean_p) * invstd_p if weight_p is not None else None
    return _affine_jvp(normed_p, result_t, _view(weight_p, view_affine),
                       _view(weight_t, view_affine), _view(bias_t, view_affine))


def _group_rows(t: Tensor, groups: int) -> Tensor:
    """(N, C, *) seen as one batch of N * groups channels: (1, N * groups, rest)."""
    n = t.shape[0]
    return t.view(1, n * groups, -1 if n else 1)


def group_norm_jvp(input_p: Tensor, input_t: Tensor, weight_p: Tensor | None,
                   weight_t: Tensor | None, bias_p: Tensor | None, bias_t: Tensor | None,
                   saved_mean: Tensor, saved_invstd: Tensor, groups: int) -> Tensor:
    """The tangent of native_group_norm's output: a batch norm over the groups, then the
    per-channel affine map."""
    shape = list(input_p.shape)
    x_t = _group_rows(input_t, groups)
    x_p = _group_rows(input_p, groups)
    result_t = batch_norm_jvp(x_p, x_t, None, None, None, None, None, None, saved_mean,
                              saved_invstd, True, 0.0).view(shape)
    normed_p = None
    if weight_p is not None:
        stat_view = [1, x_t.shape[1], 1]
        normed_p = ((x_p - saved_mean.view(stat_view)) * saved_invstd.view(stat_view)).view(
            shape)
    affine = _channel_shape(len(shape), shape[1])
    return _affine_jvp(normed_p, result_t, _view(weight_p, affine), _view(weight_t, affine),
                       _view(bias_t, affine))


def group_norm_mean_jvp(input_t: Tensor, mean_p: Tensor, groups: int) -> Tensor:
    """The tangent of native_group_norm's mean output."""
    return _group_rows(input_t, groups).mean([2], False).view(mean_p.shape)


def group_norm_invstd_jvp(input_p: Tensor, input_t: Tensor, mean_p: Tensor, invstd_p: Tensor,
                          groups: int) -> Tensor:
    """The tangent of native_group_norm's rstd output."""
    x_t = _group_rows(input_t, groups)
    x_p = _group_rows(input_p, groups)
    stat_view = [1, x_t.shape[1], 1]
    out = _invstd_jvp(x_p, x_t, mean_p.view(stat_view), invstd_p.view(stat_view), [2],
                      x_t.shape[2], False)
    return out.view(invstd_p.shape)


# --- grid sampling ------------------------------------------------------------------------------
# The double backward of grid_sampler_{2,3}d_backward differentiates twice a sampler written
# with differentiable pyaten operations: the sampling weights are polynomials of the grid, the
# neighbour indices (floor, round, padding of integer taps) carry no gradient.

_BILINEAR, _NEAREST, _BICUBIC = 0, 1, 2
_ZEROS, _BORDER, _REFLECTION = 0, 1, 2
_CUBIC_A = -0.75


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """A grid coordinate in [-1, 1] as a pixel coordinate."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """`coord` reflected into [twice_low / 2, twice_high / 2] as often as needed."""
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    extra = pyaten.fmod(dist, span)
    flips = pyaten.floor(dist / span)
    even = pyaten.remainder(flips, 2) == 0
    return pyaten.where(even, extra + low, span - extra + low)


def _pad_coordinate(coord: Tensor, size: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """The coordinate after the border or reflection padding rule (unchanged for zeros)."""
    if padding_mode == _ZEROS:
        return coord
    if padding_mode == _REFLECTION:
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
    return coord.clamp(0, size - 1)


def _gather_taps(flat: Tensor, taps: Sequence[Tensor], sizes: Sequence[int]) -> Tensor:
    """The input values at integer tap coordinates (one tensor per spatial dimension, x
    first, shaped like the grid without its last dimension), zero outside the input.
    `flat` is the input as (N, C, prod(sizes)); `sizes` are the spatial sizes, x last."""
    n, c = flat.shape[0], flat.shape[1]
    out_shape = list(taps[0].shape[1:])
    inside = None
    index = None
    for tap, size in zip(taps[::-1], sizes):  # the slowest-varying dimension first
        ok = (tap >= 0) & (tap <= size - 1)
        inside = ok if inside is None else inside & ok
        part = tap.clamp(0, size - 1).to(pyaten.int64)
        index = part if index is None else index * size + part
    count = math.prod(out_shape)
    picked = flat.gather(2, index.reshape(n, 1, count).expand(n, c, count))
    return picked.reshape([n, c, *out_shape]) * inside.unsqueeze(1).to(flat.dtype)


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """The four cubic-convolution weights of the taps at -1, 0, 1, 2 for the fraction `t`."""
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Tensor) -> Tensor:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample_composite(input: Tensor, grid: Tensor, interpolation_mode: int,
                          padding_mode: int, align_corners: bool) -> Tensor:
    """grid_sampler_2d / grid_sampler_3d over differentiable pyaten operations."""
    spatial = list(input.shape[2:])  # (H, W) or (D, H, W)
    dims = len(spatial)
    sizes_xyz = spatial[::-1]  # the grid's last dimension is (x, y[, z])
    flat = input.reshape(input.shape[0], input.shape[1], -1)
    coords = [_unnormalize(grid.select(-1, k), sizes_xyz[k], align_corners)
              for k in range(dims)]
    if interpolation_mode == _BICUBIC:
        return _bicubic(flat, coords, sizes_xyz, padding_mode, align_corners)
    coords = [_pad_coordinate(c, s, padding_mode, align_corners)
              for c, s in zip(coords, sizes_xyz)]
    if interpolation_mode == _NEAREST:
        taps = [pyaten.round(c).detach() for c in coords]
        return _gather_taps(flat, taps, spatial)
    lows = [pyaten.floor(c).detach() for c in coords]
    total = None
    for corner in range(2 ** dims):
        weight = None
        taps = []
        for k in range(dims):
            high = (corner >> k) & 1
            w = coords[k] - lows[k] if high else lows[k] + 1 - coords[k]
            weight = w if weight is None else weight * w
            taps.append(lows[k] + high)
        term = _gather_taps(flat, taps, spatial) * weight.unsqueeze(1)
        total = _plus(total, term)
    return total


def _bicubic(flat: Tensor, coords: Sequence[Tensor], sizes_xyz: Sequence[int],
             padding_mode: int, align_corners: bool) -> Tensor:
    """Bicubic sampling: 4 x 4 taps around the point, each tap padded on its own."""
    ix, iy = coords
    width, height = sizes_xyz
    x0, y0 = pyaten.floor(ix).detach(), pyaten.floor(iy).detach()
    wx, wy = _cubic_weights(ix - x0), _cubic_weights(iy - y0)
    total = None
    for i in range(4):
        ty = _pad_coordinate(y0 + (i - 1), height, padding_mode, align_corners).detach()
        row = None
        for j in range(4):
            tx = _pad_coordinate(x0 + (j - 1), width, padding_mode, align_corners).detach()
            term = _gather_taps(flat, [tx.trunc(), ty.trunc()], [height, width])
            row = _plus(row, term * wx[j].unsqueeze(1))
        total = _plus(total, row * wy[i].unsqueeze(1))
    return total


def grid_sampler_double_backward(ggI: Tensor | None, ggG: Tensor | None, grad_output: Tensor,
                                 input: Tensor, grid: Tensor, interpolation_mode: int,
                                 padding_mode: int, align_corners: bool,
                                 output_mask: Sequence[bool]) -> Grads3:
    """The gradients of grid_sampler_{2,3}d_backward: (grad_output, input, grid). The first
    backward of the composite sampler is differentiated again; under create_graph the
    result stays connected to the original tensors."""
    if ggI is None and ggG is None:
        return None, None, None
    create = pyaten.is_grad_enabled()
    originals = (grad_output, input, grid)
    with pyaten.enable_grad():
        leaves = [t if create and t.requires_grad else t.detach().requires_grad_()
                  for t in originals]
        g_out, x, g = leaves
        sampled = grid_sample_composite(x, g, interpolation_mode, padding_mode, align_corners)
        first = pyaten.autograd.grad(sampled, (x, g), g_out, create_graph=True,
                                     allow_unused=True)
        # ggI and ggG are cotangents of the first gradients, not part of their graph
        pairs = [(got, weight) for got, weight in zip(first, (ggI, ggG))
                 if weight is not None and got is not None and got.requires_grad]
        if not pairs:
            return None, None, None
        wanted = [i for i, t in enumerate(leaves) if t.requires_grad]
        found = pyaten.autograd.grad([got for got, _ in pairs], [leaves[i] for i in wanted],
                                     [weight for _, weight in pairs], allow_unused=True,
                                     create_graph=create)
    result: list[Tensor | None] = [None, None, None]
    for i, value in zip(wanted, found):
        if value is not None:
            result[i] = value if create else value.detach()
    if interpolation_mode == _NEAREST and ggI is not None and result[2] is None:
        result[2] = pyaten.zeros_like(grid)  # PyTorch's nearest grid gradient: zeros
    return result[0], result[1], result[2]
