"""Formula helpers of the reduce family (see pyaten/autograd/formulas.py and docs/autograd.md).

The reductions, scans, order statistics, softmax and FFT entries of derivatives.yaml call these
by name, with PyTorch's meaning (its FunctionsManual): a reduction's gradient is the output
gradient put back along the reduced dims (`unsqueeze_multiple`) and scaled per element; a
value-selecting reduction (`max.dim`, `median.dim`, `kthvalue`...) scatters it to the selected
index; a reduction without indices (`amax`, `max()`, `median()`) spreads it evenly among the
elements equal to the result. Each helper is a plain function over pyaten operators, so the
gradient it returns is itself differentiable (double backward).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import pyaten
from pyaten.core.subclass_like import subclass_like
from pyaten.core.tensor import Tensor

__all__ = [
    "unsqueeze_multiple",
    "safe_size",
    "mean_backward",
    "nansum_backward",
    "prod_backward",
    "prod_safe_zeros_backward",
    "scale_grad_by_count",
    "amax_amin_backward",
    "evenly_distribute_backward",
    "value_selecting_reduction_backward",
    "aminmax_backward",
    "var_backward",
    "std_backward",
    "var_mean_backward",
    "std_mean_backward",
    "logsumexp_backward",
    "norm_backward",
    "dist_backward",
    "cumsum_backward",
    "cumprod_backward",
    "cummaxmin_backward",
    "logcumsumexp_backward",
    "trace_backward",
    "softmax_double_backward",
    "log_softmax_double_backward_output",
    "fft_r2c_backward",
    "fft_c2r_backward",
    "amaxamin_jvp",
    "aminmax_jvp",
    "gather_with_keepdimed_indices",
    "evenly_read_jvp",
    "logsumexp_jvp",
    "safe_logsumexp_jvp",
    "norm_jvp",
    "cumprod_jvp",
    "logcumsumexp_jvp",
]

# `subclass_like` (pyaten/core/subclass_like.py): formulas that would choose a path by
# reading values take the path right for every value on a BatchedTensor, a wrapper
# subclass, a functional tensor (PyTorch's isTensorSubclassLike).


def _dim_list(dims: Any) -> list[int] | None:
    if dims is None:
        return None
    if isinstance(dims, int):
        return [dims]
    return list(dims)


def unsqueeze_multiple(t: Tensor, dims: Any, ndim: int) -> Tensor:
    """`t` with the dims a reduction over `dims` removed put back as size 1 (None: all of
    them; an empty list: none, PyTorch's `unsqueeze_multiple`)."""
    dims = _dim_list(dims)
    if dims is not None and len(dims) == 0:
        return t
    wanted = range(ndim) if dims is None else sorted({d % max(ndim, 1) for d in dims})
    for d in wanted:
        t = t.unsqueeze(d)
    return t


def safe_size(sizes: Sequence[int], dims: Any) -> int:
    """The number of elements a reduction over `dims` combines (1 for a 0-dim input)."""
    if len(sizes) == 0:
        return 1
    n = 1
    for d in _dim_list(dims) or []:
        n *= sizes[d % len(sizes)]
    return n


def _sum_backward(grad: Tensor, sizes: Sequence[int], dims: Any, keepdim: bool) -> Tensor:
    dims = _dim_list(dims)
    if not keepdim and len(sizes) and dims:
        grad = unsqueeze_multiple(grad, dims, len(sizes))
    return grad.expand(tuple(sizes))


def mean_backward(grad: Tensor, sizes: Sequence[int], dims: Any, numel: int,
                  keepdim: bool) -> Tensor:
    """The gradient of a mean over `dims` (None or []: over everything)."""
    dims = _dim_list(dims)
    n = numel if not dims else safe_size(sizes, dims)
    return _sum_backward(grad, sizes, dims, keepdim) / n


def nansum_backward(grad: Tensor, self: Tensor, dims: Any, keepdim: bool) -> Tensor:
    """The sum's gradient, zero where the input was NaN."""
    return _sum_backward(grad, self.shape, dims, keepdim) * self.isnan().logical_not()


# --- prod ---------------------------------------------------------------------------------------


def prod_safe_zeros_backward(grad: Tensor, inp: Tensor, dim: int) -> Tensor:
    """prod's gradient along `dim` as exclusive cumulative products from both ends, correct
    with zeros in the input: [a, b, c] -> [b*c, a*c, a*b]."""
    if inp.numel() == 0:
        return grad.expand(tuple(inp.shape))
    n = inp.shape[dim]
    if n == 1:
        return grad
    ones_size = list(inp.shape)
    ones_size[dim] = 1
    ones = pyaten.ones(ones_size, dtype=grad.dtype)
    exclusive_normal = pyaten.cat([ones, inp.narrow(dim, 0, n - 1)], dim).cumprod(dim)
    narrow_reverse = inp.narrow(dim, 1, n - 1).flip(dim)
    exclusive_reverse = pyaten.cat([ones, narrow_reverse], dim).cumprod(dim).flip(dim)
    return grad * (exclusive_normal * exclusive_reverse).conj()


def prod_backward(grad: Tensor, inp: Tensor, result: Tensor, dim: int | None = None,
                  keepdim: bool = False) -> Tensor:
    """The gradient of `prod` (over everything when `dim` is None): result / input where the
    input has no zero, the zero-safe exclusive products otherwise (and on tensors whose
    values it cannot read, `subclass_like`)."""
    if inp.dim() == 0:
        return grad
    if dim is None:
        if subclass_like(inp):
            return prod_safe_zeros_backward(grad, inp.contiguous().view(-1), 0).view(
                tuple(inp.shape))
        zeros = int((inp == 0).sum())
        if zeros == 0:
            return grad * (result / inp).conj()
        if not pyaten.is_grad_enabled() and zeros > 1:
            return pyaten.zeros_like(inp)
        flat = inp.contiguous().view(-1)
        return prod_safe_zeros_backward(grad, flat, 0).view(tuple(inp.shape))
    dim = dim % inp.dim()
    if not keepdim:
        grad = grad.unsqueeze(dim)
        result = result.unsqueeze(dim)
    if subclass_like(inp):
        return prod_safe_zeros_backward(grad, inp, dim)
    if not bool((inp == 0).any()):
        return grad * (result / inp).conj()
    return prod_safe_zeros_backward(grad, inp, dim)


# --- extremes and order statistics --------------------------------------------------------------


def _restore(t: Tensor, dims: Any, keepdim: bool, ndim: int) -> Tensor:
    """PyTorch's `restore_reduced_dims`: the reduced dims back as size 1 (an empty list
    leaves a 0-dim result as it is, broadcastable anyway)."""
    if keepdim:
        return t
    return unsqueeze_multiple(t, dims if dims is not None else [], ndim)


def scale_grad_by_count(grad: Tensor, mask: Tensor, dims: Any) -> Tensor:
    """`grad` shared evenly among the positions of `mask` within each reduced slice."""
    dims = _dim_list(dims) or []
    return (grad / mask.sum(dims, True)) * mask


def amax_amin_backward(grad: Tensor, self: Tensor, result: Tensor, dim: Any,
                       keepdim: bool) -> Tensor:
    """amax/amin: the gradient split evenly among the elements equal to the extreme."""
    ndim = self.dim()
    mask = _restore(result, dim, keepdim, ndim) == self
    return scale_grad_by_count(_restore(grad, dim, keepdim, ndim), mask, dim)


def evenly_distribute_backward(grad: Tensor, inp: Tensor, value: Tensor) -> Tensor:
    """max()/min()/median() of everything: the gradient split among the elements equal to
    the result (among the NaNs when the result is NaN)."""
    mask = (inp == value) | (inp.isnan() & value.isnan())  # no value read: vmap batches it
    return mask * (grad / mask.sum())


def value_selecting_reduction_backward(grad: Tensor, dim: int, indices: Tensor,
                                       sizes: Sequence[int], keepdim: bool) -> Tensor:
    """max.dim/min.dim/median.dim/mode/kthvalue: the gradient at the selected index."""
    grad_in = pyaten.zeros(tuple(sizes), dtype=grad.dtype)
    if not keepdim and len(sizes):
        grad = grad.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return grad_in.scatter(dim, indices, grad)


def aminmax_backward(self: Tensor, dim: int | None, keepdim: bool, grad_min: Tensor | None,
                     grad_max: Tensor | None, min: Tensor, max: Tensor) -> Tensor | None:  # noqa: A002
    """aminmax: each output's gradient spread evenly among the elements equal to it."""
    dims = [] if dim is None else [dim]
    ndim = self.dim()
    total = None
    for g, value in ((grad_min, min), (grad_max, max)):
        if g is None:
            continue
        mask = _restore(value, dims, keepdim, ndim) == self
        part = scale_grad_by_count(_restore(g, dims, keepdim, ndim), mask, dims)
        total = part if total is None else total + part
    return total


# --- variance and standard deviation ------------------------------------------------------------


def _correction(correction: Any) -> float:
    if correction is None:
        return 1.0
    if isinstance(correction, Tensor):
        return float(correction.item())
    return float(correction)


def var_backward(grad: Tensor, self: Tensor, dim: Any, correction: Any,
                 keepdim: bool) -> Tensor:
    """d var / d self = 2 (self - mean) / (n - correction), infinite (NaN at the mean) when
    there are no degrees of freedom left."""
    c = _correction(correction)
    dims = _dim_list(dim)
    if self.dim() == 0 or dims is None:
        dof = self.numel() - c
        if dof <= 0:
            edge = pyaten.where(self == self.mean(), math.nan, math.inf)
            return grad * edge
        return (2.0 / dof) * grad * (self - self.mean())
    if not keepdim and self.dim() > 1:
        grad = unsqueeze_multiple(grad, dims, self.dim())
    dof = safe_size(self.shape, dims) - c
    scale = 2.0 / dof if dof != 0 else math.inf  # C++'s 2.0 / 0.0
    return scale * grad * (self - self.mean(dims, True))


def std_backward(result: Tensor, grad: Tensor, self: Tensor, dim: Any, correction: Any,
                 keepdim: bool) -> Tensor:
    """d std = d var / (2 std), zero where std is zero."""
    grad_var = (grad / (result * 2)).masked_fill(result == 0, 0)
    return var_backward(grad_var, self, dim, correction, keepdim)


def var_mean_backward(gvar: Tensor | None, gmean: Tensor | None, self: Tensor, dim: Any,
                      correction: Any, keepdim: bool) -> Tensor | None:
    total = None
    if gvar is not None:
        total = var_backward(gvar, self, dim, correction, keepdim)
    if gmean is not None:
        part = mean_backward(gmean, self.shape, dim or [], self.numel(), keepdim)
        total = part if total is None else total + part
    return total


def std_mean_backward(gstd: Tensor | None, gmean: Tensor | None, self: Tensor, std: Tensor,
                      dim: Any, correction: Any, keepdim: bool) -> Tensor | None:
    total = None
    if gstd is not None:
        total = std_backward(std, gstd, self, dim, correction, keepdim)
    if gmean is not None:
        part = mean_backward(gmean, self.shape, dim or [], self.numel(), keepdim)
        total = part if total is None else total + part
    return total


# --- logsumexp, norms ---------------------------------------------------------------------------


def logsumexp_backward(grad: Tensor, self: Tensor, result: Tensor, dim: Any,
                       keepdim: bool) -> Tensor:
    """d logsumexp = softmax(self) along the reduced dims."""
    if not keepdim and self.dim() != 0:
        grad = unsqueeze_multiple(grad, dim, self.dim())
        result = unsqueeze_multiple(result, dim, self.dim())
    return grad * (self - result).exp().conj()


def norm_backward(grad: Tensor, self: Tensor, p: Any, norm: Tensor, dim: Any = (),
                  keepdim: bool = True) -> Tensor | None:
    """The gradient of the p-norm over `dim` (PyTorch's cases: p 0, 1, 2, inf, < 1, < 2,
    larger; subgradient 0 where the norm is 0)."""
    p = 2.0 if p is None else float(p.item() if isinstance(p, Tensor) else p)
    dims = list(_dim_list(dim) or [])
    if not keepdim and self.dim() != 0:
        grad = unsqueeze_multiple(grad, dims, self.dim())
        norm = unsqueeze_multiple(norm, dims, self.dim())
    if p == 0.0:
        return None
    if p == 1.0:
        return self.sgn() * grad
    if p == 2.0:
        return grad * (self / norm).masked_fill(norm == 0, 0)
    if math.isinf(p):
        self_abs = self.abs()
        mask = self_abs.eq(norm).logical_or(self_abs.isnan())
        return self.sgn() * ((grad / mask.sum(dims, True)) * mask)
    if p < 1.0:
        self_scaled = self.sgn() * self.abs().pow(p - 1).masked_fill(self == 0, 0)
        return self_scaled * grad * norm.pow(1 - p)
    if p < 2.0:
        self_scaled = self.sgn() * self.abs().pow(p - 1)
    else:
        self_scaled = self * self.abs().pow(p - 2)
    scale_v = (grad / norm.pow(p - 1)).masked_fill(norm == 0, 0)
    return self_scaled * scale_v


def dist_backward(grad: Tensor, self: Tensor, other: Tensor, p: Any,
                  result: Tensor) -> tuple[Tensor | None, Tensor | None]:
    """dist(self, other, p) = norm(self - other, p): the norm's gradient and its negation."""
    g = norm_backward(grad, self - other, p, result)
    return g, (None if g is None else -g)


# --- scans --------------------------------------------------------------------------------------


def cumsum_backward(grad: Tensor, dim: int) -> Tensor:
    """The gradient of a cumulative sum: the reversed cumulative sum of `grad`."""
    if grad.numel() <= 1 or grad.shape[dim] == 1:
        return grad
    return grad.flip(dim).cumsum(dim).flip(dim)


def _reversed_cumsum(w: Tensor, dim: int) -> Tensor:
    return w.flip(dim).cumsum(dim).flip(dim)


def cumprod_backward(grad: Tensor, inp: Tensor, dim: int, output: Tensor) -> Tensor:
    """The gradient of cumprod (PyTorch's cumprod_backward): reversed cumsum of
    grad * output over the input where no input is zero; otherwise, with a graph being
    recorded or on tensors whose values it cannot read (`subclass_like`), the O(n^2) sum of
    omitted products (itself differentiable), and without one the O(n) form around the
    first zero of each slice."""
    if inp.numel() <= 1:
        return grad
    dim = dim % inp.dim()
    n = inp.shape[dim]
    if n == 1:
        return grad
    inp_c = inp.conj()
    out_c = output.conj()
    w = out_c * grad
    is_zero = inp == 0
    unreadable = subclass_like(inp, grad, output)  # the O(n^2) form reads no value
    if not unreadable and not bool(is_zero.any()):
        return _reversed_cumsum(w, dim).div(inp_c)
    if not unreadable and not pyaten.is_grad_enabled():
        return _cumprod_backward_zeros(grad, inp_c, out_c, w, is_zero, dim)
    ones_size = list(inp.shape)
    ones_size[dim] = 1
    ones = pyaten.ones([1], dtype=grad.dtype).expand(tuple(ones_size))
    slices = []
    for k in range(n):
        if k == 0:
            omitted = pyaten.cat([ones, inp_c.narrow(dim, 1, n - 1).cumprod(dim)], dim)
        else:
            until_k = inp_c.narrow(dim, 0, k).prod(dim, True)
            if k == n - 1:
                omitted = until_k
            else:
                from_k1 = inp_c.narrow(dim, k + 1, n - k - 1).cumprod(dim)
                omitted = pyaten.cat([until_k, until_k.expand(tuple(from_k1.shape)) * from_k1],
                                     dim)
        slices.append((grad.narrow(dim, k, n - k) * omitted).sum(dim))
    return pyaten.stack(slices, dim)


def _cumprod_backward_zeros(grad, inp_c, out_c, w, is_zero, dim) -> Tensor:
    """cumprod's gradient with zeros, first order only (no graph is being recorded)."""
    cumsum = is_zero.cumsum(dim)
    before = cumsum == 0  # positions before the slice's first zero
    grad_input = pyaten.where(
        before, _reversed_cumsum(w.masked_fill(before.logical_not(), 0), dim) / inp_c, 0)
    between = cumsum == 1  # [first zero, second zero)
    first_zero_index = between.to(pyaten.int64).argmax(dim, True)
    first_zero = pyaten.zeros_like(between).scatter(dim, first_zero_index, True) & between
    after_first = between & first_zero.logical_not()
    # d y_j / d x_z1 for z1 <= j < z2: prod(x[:z1]) * cumprod(x[z1+1:j+1])
    partial = (inp_c.masked_fill(after_first.logical_not(), 1).cumprod(dim)
               * grad.masked_fill(cumsum != 1, 0)).sum(dim, True)
    prefix = out_c.gather(dim, (first_zero_index - 1).clamp_min(0))
    prefix = prefix.masked_fill(first_zero_index == 0, 1)
    return pyaten.where(first_zero, partial * prefix, grad_input)


def cummaxmin_backward(grad: Tensor, sizes: Sequence[int], indices: Tensor, dim: int) -> Tensor:
    """cummax/cummin: each output's gradient added at the index it came from."""
    result = pyaten.zeros(tuple(sizes), dtype=grad.dtype)
    if result.numel() == 0:
        return result
    return result.scatter_add(dim, indices, grad)


def logcumsumexp_backward(grad: Tensor, self: Tensor, result: Tensor, dim: int) -> Tensor:
    """The gradient of logcumsumexp, in log space: positive and negative parts of `grad`
    each through a reversed logcumsumexp (complex: in one go)."""
    if grad.dim() == 0 or grad.numel() == 0:
        return grad

    def reverse_logcumsumexp(x: Tensor) -> Tensor:
        return x.flip(dim).logcumsumexp(dim).flip(dim)

    if not grad.dtype.is_complex:
        lowest = float(np.finfo(grad.dtype.numpy).min)
        log_abs_grad = grad.abs().log()
        log_grad_positive = pyaten.where(grad > 0, log_abs_grad, lowest)
        log_grad_negative = pyaten.where(grad < 0, log_abs_grad, lowest)
        output_pos = (reverse_logcumsumexp(log_grad_positive - result) + self).exp()
        output_neg = (reverse_logcumsumexp(log_grad_negative - result) + self).exp()
        return output_pos - output_neg
    log_grad = grad.conj().log()
    return (reverse_logcumsumexp(log_grad - result) + self).exp().conj()


def trace_backward(grad: Tensor, sizes: Sequence[int]) -> Tensor:
    """The gradient of trace: `grad` on the diagonal, zero elsewhere."""
    rows, cols = sizes
    diagonal = pyaten.arange(rows).unsqueeze(1) == pyaten.arange(cols)
    return grad * diagonal


# --- softmax ------------------------------------------------------------------------------------


def softmax_double_backward(grad: Tensor, grad_output: Tensor, dim: int,
                            output: Tensor) -> Tensor:
    """d _softmax_backward_data(grad_output, output) / d output, against `grad`."""
    return (grad_output * grad - (output * grad_output).sum(dim, True) * grad
            - grad_output * (output * grad).sum(dim, True))


def log_softmax_double_backward_output(grad: Tensor, grad_output: Tensor, dim: int,
                                       output: Tensor) -> Tensor:
    """d _log_softmax_backward_data(grad_output, output) / d output, against `grad`."""
    return -grad_output.sum(dim, True) * output.exp() * grad


# --- fft ----------------------------------------------------------------------------------------


def fft_r2c_backward(grad: Tensor, dim: Sequence[int], normalization: int, onesided: bool,
                     last_dim_size: int) -> Tensor:
    """The adjoint of the real-to-complex transform: the dropped half of a one-sided result
    put back as zeros, the inverse complex transform (same scaling), the real part."""
    full = grad
    if onesided:
        last = dim[-1] % grad.dim()
        missing = last_dim_size - grad.shape[last]
        if missing > 0:
            pad_shape = list(grad.shape)
            pad_shape[last] = missing
            full = pyaten.cat([grad, pyaten.zeros(pad_shape, dtype=grad.dtype)], last)
    return pyaten._fft_c2c(full, list(dim), normalization, False).real


def fft_c2r_backward(grad: Tensor, dim: Sequence[int], normalization: int) -> Tensor:
    """The adjoint of the complex-to-real transform: the one-sided forward transform, with
    the entries that stand for a mirrored partner too (1 .. n - n//2 - 1) counted twice."""
    gi = pyaten._fft_r2c(grad, list(dim), normalization, True)
    last = dim[-1] % grad.dim()
    double_length = grad.shape[last] - gi.shape[last]
    if double_length <= 0:
        return gi
    weight = np.ones(gi.shape[last])
    weight[1:1 + double_length] = 2.0
    shape = [1] * gi.dim()
    shape[last] = gi.shape[last]
    return gi * pyaten.tensor(weight.reshape(shape), dtype=grad.dtype)


# --- forward mode (the `result:` lines): tangents of the outputs from those of the inputs ------


def amaxamin_jvp(x: Tensor, dx: Tensor, result: Tensor, dim: Any, keepdim: bool) -> Tensor:
    """amax/amin: the mean tangent of the elements equal to the extreme."""
    dims = _dim_list(dim) or []
    mask = x == _restore(result, dims, keepdim, x.dim())
    return pyaten.where(mask, dx, 0.0).sum(dims, keepdim) / mask.sum(dims, keepdim)


def aminmax_jvp(self_p: Tensor, self_t: Tensor, result: Tensor, dim: int | None,
                keepdim: bool) -> Tensor:
    return amaxamin_jvp(self_p, self_t, result, [] if dim is None else [dim], keepdim)


def gather_with_keepdimed_indices(inp: Tensor, dim: int, indices: Tensor,
                                  keepdim: bool) -> Tensor:
    """The tangent at the index a value-selecting reduction picked."""
    full = indices if keepdim else indices.unsqueeze(dim)
    out = inp.gather(dim, full)
    return out if keepdim else out.squeeze(dim)


def evenly_read_jvp(fw_grad: Tensor, inp: Tensor, value: Tensor) -> Tensor:
    mask = inp == value
    return (mask * (fw_grad / mask.sum())).sum()


def logsumexp_jvp(self_p: Tensor, self_t: Tensor, dim: Any, keepdim: bool) -> Tensor:
    """The softmax-weighted tangent (exp-normalised with the real part's maximum)."""
    dims = _dim_list(dim) or []
    if self_p.numel() > 0:
        real = self_p.real if self_p.dtype.is_complex else self_p
        self_p_exp = (self_p - real.amax(dims, True)).exp()
    else:
        self_p_exp = self_p.exp()
    return (self_p_exp * self_t).sum(dims, keepdim) / self_p_exp.sum(dims, keepdim)


def safe_logsumexp_jvp(self_p: Tensor, self_t: Tensor, dim: Any, keepdim: bool) -> Tensor:
    """`logsumexp_jvp`, 0 over the slices where every entry of `self_p` is -inf (the tangent
    of `_safe_softmax`, whose rows masked everywhere are 0)."""
    jvp = logsumexp_jvp(self_p, self_t, dim, keepdim)
    dead = (self_p == -math.inf).all(tuple(_dim_list(dim) or ()), True)
    return pyaten.where(dead, pyaten.zeros((), dtype=jvp.dtype), jvp)


def _real(t: Tensor) -> Tensor:
    return t.real if t.dtype.is_complex else t


def norm_jvp(self_p: Tensor, self_t: Tensor, p: Any, norm: Tensor, dim: Any = (),
             keepdim: bool = True) -> Tensor:
    """The tangent of the p-norm over `dim` (the cases of `norm_backward`)."""
    p = 2.0 if p is None else float(p.item() if isinstance(p, Tensor) else p)
    dims = list(_dim_list(dim) or [])
    ndim = self_p.dim()
    if p == 0.0:
        return pyaten.zeros_like(norm)
    if p == 1.0:
        return _real(self_p.sgn() * self_t.conj()).sum(dims, keepdim)
    if p == 2.0:
        out = _real(self_p * self_t.conj()).sum(dims, keepdim) / norm
        return out.masked_fill(norm == 0, 0)
    if math.isinf(p):
        if not keepdim and ndim != 0:
            norm = unsqueeze_multiple(norm, dims, ndim)
        is_max = ((self_p.abs() == norm) | (self_p.isnan() & norm.isnan())).to(norm.dtype)
        count = is_max.sum(dims, True)
        return (_real(self_p.sgn() * self_t.conj()) * is_max / count).sum(dims, keepdim)
    if p < 1.0:
        powered = self_p.abs().pow(p - 1).masked_fill(self_p == 0, 0)
        return (powered * _real(self_p.sgn() * self_t.conj())).sum(dims, keepdim) * \
            norm.pow(1 - p)
    if p < 2.0:
        total = (self_p.abs().pow(p - 1) * _real(self_p.sgn() * self_t.conj())).sum(dims,
                                                                                   keepdim)
    else:
        total = (self_p.abs().pow(p - 2) * _real(self_p * self_t.conj())).sum(dims, keepdim)
    return (total / norm.pow(p - 1)).masked_fill(norm == 0, 0)


def cumprod_jvp(self_t: Tensor, self_p: Tensor, result: Tensor, dim: int) -> Tensor:
    """cumprod's tangent: cumsum(t / x) * result, with the products of the tangent at the
    first zero carried past it."""
    gradient = (self_t / self_p).cumsum(dim) * result
    if self_p.dim() == 0:
        return pyaten.where(self_p == 0, self_t, gradient)
    zeros = self_p == 0
    first_zero = zeros & (zeros.cumsum(dim) == 1)
    carried = pyaten.where(first_zero, self_t, self_p).cumprod(dim)
    after_first_zero = first_zero.cumsum(dim) > 0
    return pyaten.where(after_first_zero, carried, gradient)


def logcumsumexp_jvp(self_p: Tensor, self_t: Tensor, dim: int) -> Tensor:
    if not self_p.dtype.is_complex:
        self_p_exp = (self_p - self_p.max(dim, True)[0]).exp()
    else:
        self_p_exp = self_p.exp()
    return (self_p_exp * self_t).cumsum(dim) / (self_p_exp.cumsum(dim) + 1e-13)
