"""pyaten.nn.functional: padding, interpolation and pixel shuffles.

The wrappers keep `torch.nn.functional`'s signatures and argument checks and call the
operators declared in native_functions.yaml (`pad`, the `upsample_*` `.vec` overloads,
`pixel_shuffle`, ...), so every call dispatches and autograd comes from derivatives.yaml.
"""

from __future__ import annotations

import math
import numbers
import warnings

from pyaten.core.symbolic import is_symbolic
from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten_ops as _aten
from pyaten.nn import _C

__all__: list[str] = [
    "pad",
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
    "native_channel_shuffle",
    "grid_sample",
    "affine_grid",
]

_GRID_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


def pad(input, pad, mode: str = "constant", value: float | None = None):
    """Pad the last `len(pad) // 2` dimensions of `input` (PyTorch's `F.pad`)."""
    return _C.pad(input, pad, mode, value)


def pixel_shuffle(input, upscale_factor: int):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    return _aten().pixel_shuffle.default(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor: int):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    return _aten().pixel_unshuffle.default(input, downscale_factor)


def channel_shuffle(input, groups: int):
    """Split the channels into `groups` groups and interleave them."""
    return _aten().channel_shuffle.default(input, groups)


def native_channel_shuffle(input, groups: int):
    """`channel_shuffle` through `aten::native_channel_shuffle`."""
    return _aten().native_channel_shuffle.default(input, groups)


def _is_integer(x) -> bool:
    if isinstance(x, Tensor):
        return not x.is_floating_point() and not x.is_complex()
    return isinstance(x, numbers.Integral)


_LINEAR_MODES = ("linear", "bilinear", "bicubic", "trilinear")


def _size_value(size):  # noqa: ANN001, ANN202
    """An output size as an int; a symbolic size stays symbolic (it is read at run time)."""
    return size if is_symbolic(size) else int(size)


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False):
    """Resize `input` (N, C, d1, ..., dK) to `size` or by `scale_factor` (PyTorch's
    `F.interpolate`)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size "
                    f"of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                    "and output size in (o1, o2, ...,oK) format."
                )
            if not all(_is_integer(x) for x in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    f"Tuple[int, int, int], but got size with types {[type(x) for x in size]}"
                )
            output_size = [_size_value(s) for s in size]
        else:
            output_size = [_size_value(size)] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in "
                    "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
                )
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [math.floor(float(input.size(i + 2)) * scale_factors[i])
                       for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            "requires a 4-D tensor as input"
        )
    nd = input.dim()
    if mode == "nearest" and nd in (3, 4, 5):
        op = getattr(_C, f"upsample_nearest{nd - 2}d")
        return op(input, output_size, scale_factors)
    if mode == "nearest-exact" and nd in (3, 4, 5):
        op = getattr(_C, f"_upsample_nearest_exact{nd - 2}d")
        return op(input, output_size, scale_factors)
    if mode == "area" and nd in (3, 4, 5):
        from pyaten.nn import functional

        pool = getattr(functional, f"adaptive_avg_pool{nd - 2}d", None)
        if pool is None:
            raise NotImplementedError("pyaten: mode='area' needs adaptive_avg_pool (not yet)")
        return pool(input, output_size)
    sized = {(3, "linear"): "upsample_linear1d", (4, "bilinear"): "upsample_bilinear2d",
             (5, "trilinear"): "upsample_trilinear3d", (4, "bicubic"): "upsample_bicubic2d"}
    if antialias and (nd, mode) in ((4, "bilinear"), (4, "bicubic")):
        op = getattr(_C, f"_upsample_{mode}2d_aa")
        return op(input, output_size, align_corners, scale_factors)
    if (nd, mode) in sized:
        return getattr(_C, sized[nd, mode])(input, output_size, align_corners, scale_factors)
    if nd == 4 and mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
        return _C._upsample_lanczos2d_aa(input, output_size, align_corners, scale_factors)
    needs = {"linear": 3, "bilinear": 4, "trilinear": 5}
    if nd in (3, 4, 5) and mode in needs:
        raise NotImplementedError(
            f"Got {nd}D input, but {mode} mode needs {needs[mode]}D input"
        )
    raise NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {nd}D) for the modes: "
        "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact "
        f"(got {mode})"
    )


def upsample(input, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None):
    """Deprecated alias of `interpolate`."""
    warnings.warn(
        "`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: `interpolate(..., mode="nearest")`."""
    warnings.warn(
        "`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` "
        "instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: `interpolate(..., mode="bilinear", align_corners=True)`."""
    warnings.warn(
        "`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` "
        "instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None):
    """Sample `input` (N, C, H, W) at the points of `grid` (N, Ho, Wo, 2) in [-1, 1]."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    mode_enum = ("bilinear", "nearest", "bicubic").index(mode)
    padding_enum = ("zeros", "border", "reflection").index(padding_mode)
    if align_corners is None:
        warnings.warn(_GRID_WARNING, stacklevel=2)
        align_corners = False
    return _aten().grid_sampler.default(input, grid, mode_enum, padding_enum, align_corners)


def affine_grid(theta, size: list[int], align_corners: bool | None = None):
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of a batch of affine matrices."""
    if align_corners is None:
        warnings.warn(_GRID_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                f"Got {theta.shape}."
            )
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                f"Got {theta.shape}."
            )
        spatial = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {size}."
        )
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return _aten().affine_grid_generator.default(theta, size, align_corners)
