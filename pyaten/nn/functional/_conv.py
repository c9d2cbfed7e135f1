"""pyaten.nn.functional: linear, bilinear, convolution and pooling.

The signatures, defaults and argument checks of torch/nn/functional.py; each function calls
the operator PyTorch's calls (`pyaten.conv2d`, `pyaten.nn._C.max_pool2d_with_indices`...), so
every call dispatches and autograd comes from the operators' derivatives.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyaten.nn import _C
from pyaten.nn._bindings import ops as pyaten

__all__ = [
    "linear", "bilinear",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "avg_pool1d", "avg_pool2d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "lp_pool1d", "lp_pool2d", "unfold", "fold",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "max_unpool1d", "max_unpool2d",
    "max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "max_unpool3d",
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
]




def _ntuple(value, n: int) -> tuple:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return tuple(value)
    return (value,) * n


# y = x W^T + b. As PyTorch's `F.linear` is `torch._C._nn.linear`, this is the generated
# binding itself: it makes the `__torch_function__` check and its direct call (Note: the
# direct call) with no Python frame in front.
linear = _C.linear


def bilinear(input1, input2, weight, bias=None):
    """y = x1^T A x2 + b (`torch.bilinear`)."""
    return pyaten.bilinear(input1, input2, weight, bias)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return pyaten.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return pyaten.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return pyaten.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return pyaten.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                                   dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return pyaten.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                                   dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return pyaten.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                                   dilation)


# --- pooling -----------------------------------------------------------------------------------


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    if stride is None:
        stride = []
    return pyaten.max_pool1d_with_indices(input, kernel_size, stride, padding, dilation,
                                          ceil_mode)


def _max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    if stride is None:
        stride = []
    return pyaten.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """PyTorch's boolean dispatch: `(values, indices)` with `return_indices=True`."""
    pick = max_pool1d_with_indices if return_indices else _max_pool1d
    return pick(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    if stride is None:
        stride = []
    return _C.max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


def _max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    if stride is None:
        stride = []
    return pyaten.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """PyTorch's boolean dispatch: `(values, indices)` with `return_indices=True`."""
    pick = max_pool2d_with_indices if return_indices else _max_pool2d
    return pick(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return pyaten.avg_pool1d(input, kernel_size, [] if stride is None else stride, padding,
                             ceil_mode, count_include_pad)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _C.avg_pool2d(input, kernel_size, [] if stride is None else stride, padding,
                         ceil_mode, count_include_pad, divisor_override)


def _list_with_default(out_size, defaults):
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def adaptive_avg_pool1d(input, output_size):
    return pyaten.adaptive_avg_pool1d(input, output_size)


def adaptive_avg_pool2d(input, output_size):
    return _C.adaptive_avg_pool2d(input, _list_with_default(output_size, input.size()))


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return pyaten.adaptive_max_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """PyTorch's boolean dispatch: `(values, indices)` with `return_indices=True`."""
    result = adaptive_max_pool1d_with_indices(input, output_size)
    return result if return_indices else result[0]


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _C.adaptive_max_pool2d(input, _list_with_default(output_size, input.size()))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """PyTorch's boolean dispatch: `(values, indices)` with `return_indices=True`."""
    result = adaptive_max_pool2d_with_indices(input, output_size)
    return result if return_indices else result[0]


def _unpool_output_size(input, kernel_size, stride, padding, output_size) -> list:
    input_size = input.size()
    default_size = [(input_size[-len(kernel_size) + d] - 1) * stride[d] + kernel_size[d]
                    - 2 * padding[d] for d in range(len(kernel_size))]
    if output_size is None:
        return default_size
    if len(output_size) == len(kernel_size) + 2:
        output_size = output_size[2:]
    if len(output_size) != len(kernel_size):
        raise ValueError(
            f"output_size should be a sequence containing {len(kernel_size)} or "
            f"{len(kernel_size) + 2} elements, but it has a length of '{len(output_size)}'"
        )
    for d in range(len(kernel_size)):
        low, high = default_size[d] - stride[d], default_size[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(
                f'invalid output_size "{output_size}" (dim {d} must be between {low} and '
                f'{high})'
            )
    for d in range(len(kernel_size)):
        if output_size[d] < 0:
            raise ValueError(
                "max_unpooling: output_size must contain non-negative spatial dimensions, "
                f"but got output_size[{d}]={output_size[d]}"
            )
    return output_size


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _ntuple(kernel_size, 1)
    stride = kernel_size if stride is None else _ntuple(stride, 1)
    padding = _ntuple(padding, 1)
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _C.max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1),
                           list(size) + [1]).squeeze(-1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _ntuple(kernel_size, 2)
    stride = kernel_size if stride is None else _ntuple(stride, 2)
    padding = _ntuple(padding, 2)
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _C.max_unpool2d(input, indices, size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    kernel_size = _ntuple(kernel_size, 3)
    stride = kernel_size if stride is None else _ntuple(stride, 3)
    padding = _ntuple(padding, 3)
    size = _unpool_output_size(input, kernel_size, stride, padding, output_size)
    return _C.max_unpool3d(input, indices, size, stride, padding)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _C.adaptive_max_pool3d(input, _list_with_default(output_size, input.size()))


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """PyTorch's boolean dispatch: `(values, indices)` with `return_indices=True`."""
    result = adaptive_max_pool3d_with_indices(input, output_size)
    return result if return_indices else result[0]


def _fractional_output_size(name: str, input, output_size, output_ratio, nd: int) -> list:
    if output_size is None and output_ratio is None:
        raise ValueError(
            f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is not None:
        return output_size
    if nd == 2 and len(output_ratio) > 2:  # as PyTorch: a bare float has no len()
        raise ValueError(
            f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
    ratio = _ntuple(output_ratio, nd)
    return [int(input.size(d - nd) * ratio[d]) for d in range(nd)]


def _fractional(name: str, op, input, kernel_size, output_size, output_ratio,
                _random_samples, nd: int):
    output_size = _fractional_output_size(name, input, output_size, output_ratio, nd)
    if _random_samples is None:
        # one sample per pooled dim and plane, drawn as PyTorch draws them (same stream)
        n_batch = 1 if input.dim() == nd + 1 else input.size(0)
        _random_samples = pyaten.rand(n_batch, input.size(-nd - 1), nd, dtype=input.dtype,
                                      device=input.device)
    return op(input, kernel_size, output_size, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling over (N, C, H, W) windows of `kernel_size` placed by random
    samples (drawn with `rand` unless `_random_samples` is given): `(values, indices)`."""
    return _fractional("fractional_max_pool2d", _C.fractional_max_pool2d, input, kernel_size,
                       output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """PyTorch's boolean dispatch: `(values, indices)` with `return_indices=True`."""
    result = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                return_indices, _random_samples)
    return result if return_indices else result[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """Fractional max pooling over (N, C, T, H, W): `(values, indices)`."""
    return _fractional("fractional_max_pool3d", _C.fractional_max_pool3d, input, kernel_size,
                       output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """PyTorch's boolean dispatch: `(values, indices)` with `return_indices=True`."""
    result = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                                return_indices, _random_samples)
    return result if return_indices else result[0]


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    if stride is None:
        stride = []
    return _C.max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """PyTorch's boolean dispatch: `(values, indices)` with `return_indices=True`."""
    if return_indices:
        return max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return pyaten.max_pool3d(input, kernel_size, [] if stride is None else stride, padding,
                             dilation, ceil_mode)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _C.avg_pool3d(input, kernel_size, [] if stride is None else stride, padding,
                         ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool3d(input, output_size):
    return _C.adaptive_avg_pool3d(input, _list_with_default(output_size, input.size()))


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over the window of x^p)^(1/p), from avg_pool1d as PyTorch composes it."""
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool1d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (pyaten.sign(out) * pyaten.relu(pyaten.abs(out))).mul(kernel_size).pow(
        1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over the window of x^p)^(1/p), from avg_pool2d as PyTorch composes it."""
    kw, kh = _ntuple(kernel_size, 2)
    if isinstance(norm_type, (int, float)):
        if norm_type == float("inf"):
            return max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool2d(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (pyaten.sign(out) * pyaten.relu(pyaten.abs(out))).mul(kw * kh).pow(1.0 / norm_type)


# --- unfold / fold -------------------------------------------------------------------------


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks of a (N, C, H, W) input as columns (N, C*kh*kw, L): im2col."""
    return _C.im2col(input, _ntuple(kernel_size, 2), _ntuple(dilation, 2),
                     _ntuple(padding, 2), _ntuple(stride, 2))


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sums columns (N, C*kh*kw, L) back into an image (N, C, *output_size): col2im."""
    return _C.col2im(input, _ntuple(output_size, 2), _ntuple(kernel_size, 2),
                     _ntuple(dilation, 2), _ntuple(padding, 2), _ntuple(stride, 2))
