"""Operators from the tail of PyTorch's OpInfo list: statistics (`cov`, `corrcoef`),
combinatorics (`cartesian_prod`, `combinations`, `block_diag`), integration (`trapezoid`,
`trapz`, `cumulative_trapezoid`), `renorm`, `frexp` and the unsafe splits.

As in PyTorch, most are `CompositeImplicitAutograd` functions over other operators, so they
get gradients and Meta behaviour from the operators they call. `block_diag`, the unsafe splits
and `frexp` are `CompositeExplicitAutograd` with derivatives.yaml entries; `renorm` is
structured (CPU, Meta), its gradient `renorm_backward` in autograd's formulas.
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.promotion import result_type
from pyaten.core.tensor import Tensor
from pyaten.core.views import empty_tensor
from pyaten.native.family import unsupported_dtype
from pyaten.native.kernels.copy import assign
from pyaten.native.kernels.gather import (
    _check_written,
    _compute_dtype,
    _index_source_shape,
    _index_vector_1d,
    _size1,
    _slices_first,
)
from pyaten.native.kernels.linalg_ops import (
    batches,
    column_major,
    lapack,
    raise_for_info,
    scipy_linalg,
)
from pyaten.native.kernels.shape import format_shape, wrap_dim
from pyaten.native.kernels.view_ops import _copy_pieces_out
from pyaten.native.ops_handles import aten_ops
from pyaten.native.reduction import reduction_dims
from pyaten.native.registry import native
from pyaten.native.structured import broadcast_shapes, quiet_call, resize_output

# --- cov, corrcoef --------------------------------------------------------------------------


def _check_weights(w: Tensor, kind: str, observations: int) -> None:
    if w.dim() > 1:
        raise RuntimeError(
            f"cov(): expected {kind} to have one or fewer dimensions but got {kind} with "
            f"{w.dim()} dimensions"
        )
    if kind == "fweights" and not (w._dtype.is_integral and w._dtype is not dt.bool):
        raise RuntimeError(
            f"cov(): expected fweights to have integral dtype but got fweights with "
            f"{w._dtype.scalar_name} dtype"
        )
    if kind == "aweights" and not w._dtype.is_floating_point:
        raise RuntimeError(
            f"cov(): expected aweights to have floating point dtype but got aweights with "
            f"{w._dtype.scalar_name} dtype"
        )
    if w.numel() != observations:
        raise RuntimeError(
            f"cov(): expected {kind} to have the same numel as there are observations in the "
            f"input but got {w.numel()} != {observations}"
        )
    if observations and w._device.type != "meta" and not bool(aten_ops().min.default(w) >= 0):
        raise RuntimeError(f"cov(): {kind} cannot be negative")


@native
def cov(self: Tensor, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    aten = aten_ops()
    if self.dim() > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{self.dim()} dimensions"
        )
    if self._dtype is dt.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    data = aten.view.default(self, (1, -1)) if self.dim() < 2 else self
    observations = data._sizes[1]
    weights = None
    if fweights is not None:
        _check_weights(fweights, "fweights", observations)
        weights = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", observations)
        weights = aweights if weights is None else aten.mul.Tensor(weights, aweights)
    meta = self._device.type == "meta"
    if weights is None:
        weight_sum = aten.scalar_tensor.default(observations, dtype=dt.int64,
                                                device=self._device)
    else:
        weight_sum = aten.sum.default(weights)
        if not meta and not bool(weight_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    weighted = data if weights is None else aten.mul.Tensor(data, weights)
    average = aten.div.Tensor(aten.sum.dim_IntList(weighted, [1]), weight_sum)
    if weights is None:
        norm_factor = aten.scalar_tensor.default(observations - correction, dtype=dt.int64,
                                                 device=self._device)
    elif correction == 0:
        norm_factor = weight_sum
    elif aweights is None:
        norm_factor = aten.sub.Scalar(weight_sum, correction)
    elif fweights is None and observations == 1 and correction == 1:
        norm_factor = aten.scalar_tensor.default(0, dtype=dt.int64, device=self._device)
    else:
        spread = aten.sum.default(aten.mul.Tensor(weights, aweights))
        norm_factor = aten.sub.Tensor(
            weight_sum, aten.div.Tensor(aten.mul.Scalar(spread, correction), weight_sum))
    if not meta and bool(norm_factor <= 0):
        import warnings

        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        norm_factor = aten.zeros_like.default(norm_factor)
    if observations == 1 and (fweights is None) != (aweights is None):
        # one observation with one kind of weights: the weighted mean is the observation
        centred = aten.zeros_like.default(data)
        if not (data._dtype.is_floating_point or data._dtype.is_complex):
            centred = aten.to.dtype(centred, dt.float32)
    else:
        centred = aten.sub.Tensor(data, aten.unsqueeze.default(average, 1))
    right = centred if weights is None else aten.mul.Tensor(centred, weights)
    product = aten.mm.default(centred, aten.conj.default(aten.t.default(right)))
    return aten.squeeze.default(aten.true_divide.Tensor(product, norm_factor))


@native
def corrcoef(self: Tensor) -> Tensor:
    aten = aten_ops()
    if self.dim() > 2:
        raise RuntimeError(
            "corrcoef(): expected input to have two or fewer dimensions but got an input with "
            f"{self.dim()} dimensions"
        )
    c = aten.cov.default(self)
    if c.dim() == 0:  # one variable: nan for a zero, inf or nan variance, else 1
        return aten.div.Tensor(c, c)
    d = aten.diagonal.default(c)
    stddev = aten.sqrt.default(aten.real.default(d) if d._dtype.is_complex else d)
    c = aten.div.Tensor(c, aten.view.default(stddev, (-1, 1)))
    c = aten.div.Tensor(c, aten.view.default(stddev, (1, -1)))
    if c._dtype.is_complex:  # rounding may leave |values| a little above 1: clip, as NumPy
        return aten.complex.default(aten.clip.default(aten.real.default(c), -1, 1),
                                    aten.clip.default(aten.imag.default(c), -1, 1))
    return aten.clip.default(c, -1, 1)


# --- cartesian_prod, combinations, block_diag -----------------------------------------------


def _check_vector(t: Tensor) -> None:
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {format_shape(t._sizes)}")


@native
def cartesian_prod(tensors: list) -> Tensor:
    aten = aten_ops()
    for t in tensors:
        _check_vector(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = aten.meshgrid.indexing(tensors, indexing="ij")
    return aten.stack.default([aten.flatten.using_ints(g) for g in grids], 1)


@native
def combinations(self: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    aten = aten_ops()
    _check_vector(self)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return aten.empty.memory_format((0,), dtype=self._dtype, device=self._device)
    n = self._sizes[0]
    # the index tuples i < j < k ... (i <= j <= k ... with replacement), in row-major order
    grids = np.meshgrid(*([np.arange(n)] * r), indexing="ij")
    mask = np.ones(grids[0].shape, dtype=bool)
    for left, right in zip(grids, grids[1:]):
        mask &= (left <= right) if with_replacement else (left < right)
    mask_tensor = aten.scalar_tensor.default(0, dtype=dt.bool, device=self._device)
    mask_tensor = aten.new_empty.default(mask_tensor, mask.shape)
    if self._device.type != "meta":
        assign(mask_tensor._numpy(), mask)
    expanded = aten.meshgrid.indexing([self] * r, indexing="ij")
    return aten.stack.default([aten.masked_select.default(g, mask_tensor) for g in expanded], 1)


def _block_extent(t: Tensor) -> tuple[int, int]:
    """Rows and columns of one block: a 0-d tensor is 1x1, a vector of n one row of n."""
    if t.dim() == 0:
        return 1, 1
    if t.dim() == 1:
        return 1, t._sizes[0]
    return t._sizes[0], t._sizes[1]


@native
def block_diag(tensors: list) -> Tensor:
    aten = aten_ops()
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(
                "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input "
                f"{i} has {t.dim()} dimensions"
            )
    if not tensors:
        return aten.empty.memory_format((1, 0))
    dtype = result_type(*tensors)
    device = tensors[0]._device
    extents = [_block_extent(t) for t in tensors]
    rows = sum(e[0] for e in extents)
    cols = sum(e[1] for e in extents)
    result = aten.zeros.default((rows, cols), dtype=dtype, device=device)
    r = c = 0
    for t, (h, w) in zip(tensors, extents):
        if t._device != device:
            raise RuntimeError(
                "torch.block_diag: input tensors must all be on the same device. Input 0 is "
                f"on device {device} and input {tensors.index(t)} is on device {t._device}."
            )
        block = aten.narrow.default(aten.narrow.default(result, 0, r, h), 1, c, w)
        aten.copy_.default(block, aten.view.default(t, (h, w)) if t.numel() else t)
        r, c = r + h, c + w
    return result


# --- trapezoid, trapz, cumulative_trapezoid ---------------------------------------------------


def _spacing(y: Tensor, x: Tensor, dim: int, name: str) -> Tensor:
    """The differences of the sample points `x`, shaped to broadcast against `y`'s pieces."""
    aten = aten_ops()
    if x.dim() == 1:
        if x._sizes[0] != y._sizes[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[dim] = x._sizes[0]
        x = aten.view.default(x, shape)
    elif x.dim() < y.dim():
        x = aten.view.default(x, (1,) * (y.dim() - x.dim()) + tuple(x._sizes))
    return aten.sub.Tensor(aten.slice.Tensor(x, dim, 1), aten.slice.Tensor(x, dim, 0, -1))


def _check_not_bool(y: Tensor, x: Tensor | None, name: str) -> None:
    if y._dtype is dt.bool or (x is not None and x._dtype is dt.bool):
        which = "`y`" if x is None else "`x` or `y`"
        raise RuntimeError(
            f"{name}: received a bool input for {which}, but bool is not supported")


def _check_real_dx(dx: object, name: str) -> float:
    if isinstance(dx, (bool, complex)):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
    return float(dx)


def _empty_integral(y: Tensor, dim: int) -> Tensor:
    sizes = list(y._sizes)
    del sizes[dim]
    return aten_ops().zeros.default(sizes, dtype=y._dtype, device=y._device)


@native
def trapezoid_x(y: Tensor, x: Tensor, dim: int = -1) -> Tensor:
    aten = aten_ops()
    dim = wrap_dim(dim, y.dim())
    if y._sizes[dim] == 0:  # the integral over no samples is 0, as NumPy
        return _empty_integral(y, dim)
    _check_not_bool(y, x, "trapezoid")
    dx = _spacing(y, x, dim, "trapezoid")
    pairs = aten.add.Tensor(aten.slice.Tensor(y, dim, 0, -1), aten.slice.Tensor(y, dim, 1))
    return aten.div.Scalar(aten.sum.dim_IntList(aten.mul.Tensor(pairs, dx), [dim]), 2.0)


@native
def trapezoid_dx(y: Tensor, dx: object = 1, dim: int = -1) -> Tensor:
    aten = aten_ops()
    if y._sizes[wrap_dim(dim, y.dim())] == 0:
        return _empty_integral(y, wrap_dim(dim, y.dim()))
    _check_not_bool(y, None, "trapezoid")
    step = _check_real_dx(dx, "trapezoid")
    # a constant step: dx * (the sum less half of each end)
    ends = aten.add.Tensor(aten.select.int(y, dim, 0), aten.select.int(y, dim, -1))
    inner = aten.sub.Tensor(aten.sum.dim_IntList(y, [dim]), aten.mul.Scalar(ends, 0.5))
    return aten.mul.Scalar(inner, step)


@native
def trapz_x(y: Tensor, x: Tensor, dim: int = -1) -> Tensor:
    return trapezoid_x(y, x, dim)


@native
def trapz_dx(y: Tensor, dx: float = 1, dim: int = -1) -> Tensor:
    return trapezoid_dx(y, dx, dim)


@native
def cumulative_trapezoid_x(y: Tensor, x: Tensor, dim: int = -1) -> Tensor:
    aten = aten_ops()
    dim = wrap_dim(dim, y.dim())
    _check_not_bool(y, x, "cumulative_trapezoid")
    dx = _spacing(y, x, dim, "cumulative_trapezoid")
    pairs = aten.add.Tensor(aten.slice.Tensor(y, dim, 0, -1), aten.slice.Tensor(y, dim, 1))
    return aten.div.Scalar(aten.cumsum.default(aten.mul.Tensor(pairs, dx), dim), 2.0)


@native
def cumulative_trapezoid_dx(y: Tensor, dx: object = 1, dim: int = -1) -> Tensor:
    aten = aten_ops()
    _check_not_bool(y, None, "cumulative_trapezoid")
    step = _check_real_dx(dx, "cumulative_trapezoid")
    pairs = aten.add.Tensor(aten.slice.Tensor(y, dim, 0, -1), aten.slice.Tensor(y, dim, 1))
    return aten.cumsum.default(aten.mul.Scalar(pairs, step / 2.0), dim)


# --- unsafe_chunk, unsafe_split, unsafe_split_with_sizes --------------------------------------
# The same pieces as chunk/split, but fresh tensors rather than views of `self`.


@native
def unsafe_split(self: Tensor, split_size: int, dim: int = 0) -> list:
    aten = aten_ops()
    return [aten.clone.default(p) for p in aten.split.Tensor(self, split_size, dim)]


@native
def unsafe_split_with_sizes(self: Tensor, split_sizes: tuple, dim: int = 0) -> list:
    aten = aten_ops()
    return [aten.clone.default(p)
            for p in aten.split_with_sizes.default(self, split_sizes, dim)]


@native
def unsafe_split_Tensor_out(self: Tensor, split_size: int, dim: int, out) -> None:
    _copy_pieces_out(aten_ops().unsafe_split.Tensor(self, split_size, dim), out,
                     "unsafe_split.Tensor_out")


@native
def unsafe_split_with_sizes_out(self: Tensor, split_sizes: tuple, dim: int, out) -> None:
    _copy_pieces_out(aten_ops().unsafe_split_with_sizes.default(self, split_sizes, dim), out,
                     "unsafe_split_with_sizes.out")


@native
def unsafe_chunk(self: Tensor, chunks: int, dim: int = 0) -> list:
    aten = aten_ops()
    if not self._sizes:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, len(self._sizes))
    size = self._sizes[d]
    split_size = (size + chunks - 1) // chunks
    if split_size == 0 and size == 0:  # `chunks` empty pieces
        return aten.unsafe_split_with_sizes.default(self, (0,) * chunks, d)
    return aten.unsafe_split.Tensor(self, split_size, d)


# --- frexp ------------------------------------------------------------------------------------


@native
def frexp(self: Tensor) -> tuple:
    aten = aten_ops()
    mantissa = aten.empty_like.default(self)
    exponent = aten.empty_like.default(self, dtype=dt.int32)
    return aten.frexp.Tensor_out(self, mantissa=mantissa, exponent=exponent)


@native
def frexp_out(self: Tensor, mantissa: Tensor, exponent: Tensor) -> tuple:
    if not self._dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    if mantissa._dtype is not self._dtype:
        raise RuntimeError(
            f"torch.frexp() expects mantissa to have dtype {self._dtype.cpp_name} but got "
            f"{mantissa._dtype.cpp_name}"
        )
    if exponent._dtype is not dt.int32:
        raise RuntimeError(
            f"torch.frexp() expects exponent to have int dtype but got {exponent._dtype.cpp_name}"
        )
    resize_output(mantissa, self._sizes, "frexp")
    resize_output(exponent, self._sizes, "frexp")
    if self._device.type != "meta" and self.numel():
        values = self._numpy()
        if values.dtype not in (np.float16, np.float32, np.float64):
            values = values.astype(np.float32)  # bfloat16: exact in float32
        m, e = quiet_call(np.frexp, values)
        assign(mantissa._numpy(), m)
        assign(exponent._numpy(), e.astype(np.int32))
    mantissa._bump_version()
    exponent._bump_version()
    return mantissa, exponent


# --- renorm -----------------------------------------------------------------------------------


@native
def meta_renorm(op, self: Tensor, p: object, dim: int, maxnorm: object) -> None:
    if isinstance(p, complex):
        raise RuntimeError("renorm: p must be real-valued")
    if not float(p) > 0.0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if isinstance(maxnorm, complex):
        raise RuntimeError("renorm: maxnorm must be real-valued")
    if not float(maxnorm) >= 0.0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {float(maxnorm):g}")
    if self.dim() <= 1:
        raise RuntimeError(
            f"renorm: input needs at least 2 dimensions, got {self.dim()} dimensions")
    op.set_output(0, self._sizes, self._dtype, self._device)


def renorm_factor(self: Tensor, p: object, dim: int, maxnorm: object) -> Tensor:
    """`maxnorm / (norm + 1e-7)` for each slice along `dim` whose `p`-norm exceeds `maxnorm`,
    else 1; shaped to broadcast against `self`."""
    aten = aten_ops()
    dim = wrap_dim(dim, self.dim())
    others = [d for d in range(self.dim()) if d != dim]
    norm = aten.linalg_vector_norm.default(self, p, others, True)
    scale = aten.reciprocal.default(aten.add.Scalar(norm, 1e-7))
    scale = aten.mul.Scalar(scale, maxnorm)
    return aten.where.ScalarOther(aten.gt.Scalar(norm, maxnorm), scale, 1.0)


@native
def renorm_out(op, self: Tensor, p: object, dim: int, maxnorm: object, out: Tensor) -> None:
    aten = aten_ops()
    factor = renorm_factor(self, p, dim, maxnorm)
    if self._device.type == "meta" or not self.numel():
        return
    result = aten.mul.Tensor(self, aten.to.dtype(factor, self._dtype))
    assign(out._numpy(), result._numpy())


# --- gradient ---------------------------------------------------------------------------------
# Second-order central differences inside, first- or second-order one-sided ones at the two
# ends (`edge_order`), along each requested dim; the spacing is a number per dim or the sample
# coordinates (a 1-d tensor per dim). Seven overloads, as PyTorch's, share two helpers.


def _check_gradient(self: Tensor, spacing_size: int | None, dims: list | None,
                    edge_order: int) -> None:
    if self._dtype is dt.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if spacing_size is not None and dims is None and spacing_size != self.dim():
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
            f"equal to 'self.dim() = {self.dim()}', since dim argument was not given, but got "
            f"a list of length {spacing_size}"
        )
    if spacing_size is not None and dims is not None and spacing_size != len(dims):
        raise RuntimeError(
            "torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
            f"dim arguments to have the same length, but got a spacing argument of length "
            f"{spacing_size} and a dim argument of length {len(dims)}."
        )
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dims is not None:
        reduction_dims(list(dims), self.dim())  # range and repeats, as PyTorch checks them
    for d in (range(self.dim()) if dims is None else dims):
        if self._sizes[d] < edge_order + 1:
            raise RuntimeError(
                "torch.gradient expected each dimension size to be at least edge_order+1")


def _ends_joined(center: Tensor, first: Tensor, last: Tensor, dim: int) -> Tensor:
    return aten_ops().cat.default([first, center, last], dim)


def _gradient_uniform(self: Tensor, spacing: list, dims: list, edge_order: int) -> list:
    aten = aten_ops()
    results = []
    for d, step in zip(dims, spacing):
        d = wrap_dim(d, self.dim())

        def part(start, end=None, d=d):
            return aten.slice.Tensor(self, d, start, end)

        center = aten.div.Scalar(aten.sub.Tensor(part(2), part(0, -2)), step)
        if edge_order == 1:
            first = aten.div.Scalar(aten.sub.Tensor(part(1, 2), part(0, 1)), step)
            last = aten.div.Scalar(aten.sub.Tensor(part(-1), part(-2, -1)), step)
        else:
            first = aten.add.Tensor(aten.add.Tensor(aten.mul.Scalar(part(0, 1), -1.5),
                                                    aten.mul.Scalar(part(1, 2), 2)),
                                    aten.mul.Scalar(part(2, 3), -0.5))
            first = aten.div.Scalar(first, step)
            last = aten.add.Tensor(aten.add.Tensor(aten.mul.Scalar(part(-3, -2), 0.5),
                                                   aten.mul.Scalar(part(-2, -1), -2)),
                                   aten.mul.Scalar(part(-1), 1.5))
            last = aten.div.Scalar(last, step)
        results.append(_ends_joined(aten.div.Scalar(center, 2), first, last, d))
    return results


def _gradient_coordinates(self: Tensor, coordinates: list, dims: list,
                          edge_order: int) -> list:
    aten = aten_ops()
    for c in coordinates:
        if c._device != self._device:
            raise RuntimeError(
                "torch.gradient expected each tensor to be on the same device, but got devices "
                f"{self._device} and {c._device}!"
            )
    results = []
    for d, coords in zip(dims, coordinates):
        if coords.dim() != 1:
            raise RuntimeError(
                "torch.gradient expected each element of spacing to have one dimension, but "
                f"got an element with {coords.dim()} dimensions!"
            )
        d = wrap_dim(d, self.dim())
        shape = [1] * self.dim()
        shape[d] = -1

        def part(start, end=None, d=d):
            return aten.slice.Tensor(self, d, start, end)

        h = aten.diff.default(coords, 1, 0)

        def at(i, h=h):
            return aten.select.int(h, 0, i)

        h1, h2 = aten.slice.Tensor(h, 0, 0, -1), aten.slice.Tensor(h, 0, 1)
        total = aten.add.Tensor(h1, h2)
        a = aten.div.Tensor(aten.neg.default(h2), aten.mul.Tensor(h1, total))
        b = aten.div.Tensor(aten.sub.Tensor(h2, h1), aten.mul.Tensor(h1, h2))
        c = aten.div.Tensor(h1, aten.mul.Tensor(h2, total))
        center = aten.add.Tensor(
            aten.add.Tensor(aten.mul.Tensor(aten.reshape.default(a, shape), part(0, -2)),
                            aten.mul.Tensor(aten.reshape.default(b, shape), part(1, -1))),
            aten.mul.Tensor(aten.reshape.default(c, shape), part(2)))
        if edge_order == 1:
            first = aten.div.Tensor(aten.sub.Tensor(part(1, 2), part(0, 1)), at(0))
            last = aten.div.Tensor(aten.sub.Tensor(part(-1), part(-2, -1)), at(-1))
        else:
            first = _three_point(part(0, 1), part(1, 2), part(2, 3), at(0), at(1), False)
            last = _three_point(part(-3, -2), part(-2, -1), part(-1), at(-1), at(-2), True)
        results.append(_ends_joined(center, first, last, d))
    return results


def _three_point(y0: Tensor, y1: Tensor, y2: Tensor, h0: Tensor, h1: Tensor,
                 backward: bool) -> Tensor:
    """The second-order one-sided difference at an end: `h0` is the step next to the end."""
    aten = aten_ops()
    mul, add, div = aten.mul.Tensor, aten.add.Tensor, aten.div.Tensor
    both = add(h0, h1)
    if not backward:  # at the start: y0 is the end
        a = div(aten.neg.default(add(aten.mul.Scalar(h0, 2.0), h1)), mul(h0, both))
        b = div(both, mul(h0, h1))
        c = div(aten.neg.default(h0), mul(h1, both))
    else:  # at the end: y2 is the end, h0 the last step, h1 the one before
        a = div(h0, mul(h1, both))
        b = div(aten.neg.default(both), mul(h0, h1))
        c = div(add(aten.mul.Scalar(h0, 2), h1), mul(h0, both))
    return add(add(mul(a, y0), mul(b, y1)), mul(c, y2))


def _all_dims(self: Tensor, dim: int | None) -> list:
    return list(range(self.dim())) if dim is None else [dim]


@native
def gradient_scalarint(self: Tensor, spacing: object = None, dim: int | None = None,
                       edge_order: int = 1) -> list:
    dims = _all_dims(self, dim)
    steps = [1.0 if spacing is None else spacing] * (1 if dim is not None else self.dim())
    _check_gradient(self, None if spacing is None else len(steps),
                    None if dim is None else dims, edge_order)
    return _gradient_uniform(self, steps, dims, edge_order)


@native
def gradient_scalararray(self: Tensor, spacing: object, dim: tuple,
                         edge_order: int = 1) -> list:
    steps = [spacing] * len(dim)
    _check_gradient(self, len(steps), list(dim), edge_order)
    return _gradient_uniform(self, steps, list(dim), edge_order)


@native
def gradient_array(self: Tensor, dim: tuple, edge_order: int = 1) -> list:
    steps = [1.0] * len(dim)
    _check_gradient(self, len(steps), list(dim), edge_order)
    return _gradient_uniform(self, steps, list(dim), edge_order)


@native
def gradient_scalarrayint(self: Tensor, spacing: tuple, dim: int | None = None,
                          edge_order: int = 1) -> list:
    dims = _all_dims(self, dim)
    _check_gradient(self, len(spacing), None if dim is None else dims, edge_order)
    return _gradient_uniform(self, list(spacing), dims, edge_order)


@native
def gradient_scalarrayarray(self: Tensor, spacing: tuple, dim: tuple,
                            edge_order: int = 1) -> list:
    _check_gradient(self, len(spacing), list(dim), edge_order)
    return _gradient_uniform(self, list(spacing), list(dim), edge_order)


@native
def gradient_tensorarrayint(self: Tensor, spacing: list, dim: int | None = None,
                            edge_order: int = 1) -> list:
    dims = _all_dims(self, dim)
    _check_gradient(self, len(spacing), None if dim is None else dims, edge_order)
    return _gradient_coordinates(self, list(spacing), dims, edge_order)


@native
def gradient_tensorarray(self: Tensor, spacing: list, dim: tuple, edge_order: int = 1) -> list:
    _check_gradient(self, len(spacing), list(dim), edge_order)
    return _gradient_coordinates(self, list(spacing), list(dim), edge_order)


# --- _chunk_cat -------------------------------------------------------------------------------
# Each tensor cut into `num_chunks` along `dim` (zero-padded to a multiple of it), each chunk
# flattened from `dim` on, and the i-th chunks of all tensors joined: FSDP's gradient layout.


def _chunk_cat_dim(tensors: list, dim: int, num_chunks: int) -> int:
    if num_chunks < 1:
        raise RuntimeError("_chunk_cat expects positive num_chunks")
    if not tensors:
        raise RuntimeError("_chunk_cat expects a non-empty input tensor list")
    first = tensors[0]
    for t in tensors:
        if t.numel() == 0:
            raise RuntimeError("_chunk_cat expects non-empty tensor")
        if t._dtype is not first._dtype:
            raise RuntimeError("_chunk_cat expects all input tensors with the same dtype")
        if t._device != first._device:
            raise RuntimeError("_chunk_cat expects all inputs tensors on the same device")
    if all(t.dim() == first.dim() for t in tensors):
        dim = wrap_dim(dim, first.dim())
    else:
        if dim < 0:
            raise RuntimeError(
                "_chunk_cat expects non-negative dim when input tensors have different ndims")
        if any(dim >= t.dim() for t in tensors):
            raise RuntimeError("_chunk_cat expects dim < ndim for all input tensors")
    for t in tensors:
        if tuple(t._sizes[:dim]) != tuple(first._sizes[:dim]):
            raise RuntimeError(
                "_chunk_cat expects same sizes of 0,...,dim-1 dimensions for all tensors")
    return dim


def _chunked_rows(tensors: list, dim: int, num_chunks: int) -> list:
    aten = aten_ops()
    pieces = []
    for t in tensors:
        size = t._sizes[dim]
        padded = (size + num_chunks - 1) // num_chunks * num_chunks
        if padded != size:
            shape = list(t._sizes)
            shape[dim] = padded
            grown = aten.new_zeros.default(t, shape)
            aten.copy_.default(aten.narrow.default(grown, dim, 0, size), t)
            t = grown
        pieces.append(aten.reshape.default(t, tuple(t._sizes[:dim]) + (num_chunks, -1)))
    return pieces


@native
def _chunk_cat(tensors: list, dim: int, num_chunks: int) -> Tensor:
    dim = _chunk_cat_dim(tensors, dim, num_chunks)
    return aten_ops().cat.default(_chunked_rows(tensors, dim, num_chunks), dim + 1)


@native
def _chunk_cat_out(tensors: list, dim: int, num_chunks: int, out: Tensor) -> Tensor:
    dim = _chunk_cat_dim(tensors, dim, num_chunks)
    return aten_ops().cat.out(_chunked_rows(tensors, dim, num_chunks), dim + 1, out=out)


# --- index_reduce -----------------------------------------------------------------------------
# self's slices along `dim` at `index[i]` reduced with source's i-th slice (prod, mean, amax,
# amin), duplicates included; `include_self=False` starts each indexed slice from the
# reduction's identity instead of self's values. A structured kernel, as PyTorch's.

_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")
_WARNED_BETA: list[bool] = []


@native
def meta_index_reduce(op, self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str,
                      include_self: bool = True) -> dict:
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(
            "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}.")
    dim = wrap_dim(dim, self.dim())
    _index_vector_1d("index_reduce_", index)
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(
            "index_reduce_(): Expected dtype int32/int64 for index but got: "
            f"{index._dtype.scalar_name}")
    if self._dtype is not source._dtype:
        raise RuntimeError(
            f"index_reduce_(): self ({self._dtype.scalar_name}) and source "
            f"({source._dtype.scalar_name}) must have the same scalar type")
    along = _size1(source, dim if source.dim() else 0)
    if index.numel() != along:
        raise RuntimeError(
            f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim): ({along}), for dim: {dim}")
    _index_source_shape(self, dim, source)
    _check_written(op, self)
    op.set_output(0, self._sizes, self._dtype, self._device)
    return {"dim": dim}


def _reduction_identity(reduce: str, dtype: np.dtype) -> object:
    if reduce == "prod":
        return 1
    if reduce == "mean":
        return 0
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


@native
def index_reduce_cpu_out(op, self: Tensor, dim: int, index: Tensor, source: Tensor,
                         reduce: str, include_self: bool, out: Tensor) -> None:
    if not _WARNED_BETA:
        import warnings

        _WARNED_BETA.append(True)
        warnings.warn("index_reduce() is in beta and the API may change at any time.",
                      UserWarning, stacklevel=2)
    if out is not self:
        assign(out._numpy(), self._numpy())
    if index.numel() == 0 or out.numel() == 0:
        return
    positions = index._numpy().reshape(-1).astype(np.int64)
    size = _size1(self, dim)
    if positions.min() < 0 or positions.max() >= size:
        raise IndexError("index out of range in self")
    if reduce in ("amax", "amin") and self._dtype.is_complex:
        kernel = "maximum_cpu" if reduce == "amax" else "minimum_cpu"
        raise NotImplementedError(
            f'"{kernel}" not implemented for \'{self._dtype.scalar_name}\'')
    compute = _compute_dtype(out._dtype)
    target = out._numpy()
    work = _slices_first(target.astype(compute), dim)
    values = _slices_first(source._numpy(), dim).astype(compute, copy=False)
    if not include_self:
        work[np.unique(positions)] = _reduction_identity(reduce, compute)
    if reduce == "prod":
        np.multiply.at(work, positions, values)
    elif reduce == "amax":
        np.maximum.at(work, positions, values)
    elif reduce == "amin":
        np.minimum.at(work, positions, values)
    else:
        np.add.at(work, positions, values)
        counts = np.ones(size, np.int64) if include_self else np.zeros(size, np.int64)
        np.add.at(counts, positions, 1)
        counts[counts == 0] = 1
        shape = (size,) + (1,) * (work.ndim - 1)
        if compute.kind in "fc":
            work /= counts.reshape(shape).astype(compute)
        else:
            work //= counts.reshape(shape).astype(compute)
    assign(target, np.moveaxis(work, 0, dim) if target.ndim else work.reshape(()))


# --- triangular_solve (deprecated in PyTorch for linalg.solve_triangular) ---------------------

_WARNED_TRIANGULAR: list[bool] = []


@native
def meta_triangular_solve(op, self: Tensor, A: Tensor, upper: bool = True,  # noqa: N803
                          transpose: bool = False, unitriangular: bool = False) -> None:
    for name, t in (("b", self), ("A", A)):
        if t.dim() < 2:
            raise RuntimeError(
                f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it "
                f"has {t.dim()} dimensions instead")
    if self._dtype is not A._dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type "
            f"{self._dtype.scalar_name} and A of type {A._dtype.scalar_name} instead.")
    n = A._sizes[-1]
    if A._sizes[-2] != n:
        raise RuntimeError(
            f"A must be batches of square matrices, but they are {A._sizes[-2]} by {n} matrices")
    if self._sizes[-2] != n:
        raise RuntimeError(
            f"Incompatible matrix sizes for triangular_solve: each A matrix is {n} by {n} but "
            f"each b matrix is {self._sizes[-2]} by {self._sizes[-1]}")
    batch = broadcast_shapes("triangular_solve", tuple(self._sizes[:-2]), tuple(A._sizes[:-2]))
    solution = batch + tuple(self._sizes[-2:])
    coefficient = batch + (n, n)
    op.set_output(0, solution, self._dtype, self._device, column_major(solution))
    op.set_output(1, coefficient, A._dtype, A._device, column_major(coefficient))


@native
def triangular_solve_out(op, self: Tensor, A: Tensor, upper: bool, transpose: bool,  # noqa: N803
                         unitriangular: bool, X: Tensor, M: Tensor) -> None:  # noqa: N803
    if not _WARNED_TRIANGULAR:
        import warnings

        _WARNED_TRIANGULAR.append(True)
        warnings.warn(
            "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular"
            "and will be removed in a future PyTorch release.\ntorch.linalg.solve_triangular "
            "has its arguments reversed and does not return a copy of one of the inputs.\n"
            "X = torch.triangular_solve(B, A).solution\nshould be replaced with\n"
            "X = torch.linalg.solve_triangular(A, B).", UserWarning, stacklevel=2)
    if not (self._dtype.is_floating_point or self._dtype.is_complex) or self._dtype in (
            dt.float16, dt.bfloat16):
        raise unsupported_dtype("triangular_solve_cpu", self._dtype)
    if self._device.type == "meta":
        return
    batch = tuple(X._sizes[:-2])
    n = A._sizes[-1]
    coefficients = np.broadcast_to(A._numpy(), batch + (n, n))
    assign(M._numpy(), coefficients)
    if X.numel() == 0:
        return
    rhs = np.broadcast_to(self._numpy(), tuple(X._sizes))
    solve = scipy_linalg.load().solve_triangular
    x = np.empty(tuple(X._sizes), rhs.dtype)
    for index in batches(batch):
        if n == 0:
            continue
        x[index] = solve(coefficients[index], rhs[index], trans=1 if transpose else 0,
                         lower=not upper, unit_diagonal=unitriangular, check_finite=False)
    quiet_call(assign, X._numpy(), x)


# --- geqrf, ormqr: LAPACK's QR in Householder form, and multiplying by its Q ------------------


def _geqrf_outputs(self: Tensor) -> tuple[tuple, tuple]:
    if self.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    m, n = self._sizes[-2:]
    return tuple(self._sizes), tuple(self._sizes[:-2]) + (min(m, n),)


def _geqrf_fill(self: Tensor, a: Tensor, tau: Tensor) -> None:
    if not (self._dtype.is_floating_point or self._dtype.is_complex) or self._dtype in (
            dt.float16, dt.bfloat16):
        raise unsupported_dtype("geqrf_cpu", self._dtype)
    if self._device.type == "meta" or self.numel() == 0:
        return
    source = self._numpy()
    routine = lapack("geqrf", source)
    factors = np.empty(source.shape, source.dtype)
    scales = np.empty(tuple(tau._sizes), source.dtype)
    for index in batches(source.shape[:-2]):
        qr, t, _, _ = routine(np.asfortranarray(source[index]))
        factors[index], scales[index] = qr, t
    assign(a._numpy(), factors)
    assign(tau._numpy(), scales)


@native
def geqrf(self: Tensor) -> tuple:
    a_shape, tau_shape = _geqrf_outputs(self)
    a = empty_tensor(a_shape, self._dtype, self._device, column_major(a_shape))
    tau = empty_tensor(tau_shape, self._dtype, self._device)
    _geqrf_fill(self, a, tau)
    return a, tau


@native
def geqrf_out(self: Tensor, a: Tensor, tau: Tensor) -> tuple:
    result, scales = geqrf(self)
    for target, value in ((a, result), (tau, scales)):
        if target._dtype is not self._dtype:
            raise RuntimeError(
                f"Expected out tensor to have dtype {self._dtype.cpp_name}, but got "
                f"{target._dtype.cpp_name} instead")
        resize_output(target, value._sizes, "geqrf")
        aten_ops().copy_.default(target, value)
    return a, tau


def _ormqr_checks(self: Tensor, input2: Tensor, input3: Tensor, left: bool) -> None:
    if self.dim() < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if input3.dim() < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if input3._sizes[side] != self._sizes[-2]:
        raise RuntimeError(
            f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    if not input2.dim() or input2._sizes[-1] != min(input3._sizes[side], self._sizes[-1]):
        raise RuntimeError(
            f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], "
            "input.shape[-1])")
    if self.dim() - input2.dim() != 1:
        raise RuntimeError(
            "torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim "
            f"equal to {input2.dim()} and input.ndim is equal to {self.dim()}")
    if self.dim() != input3.dim():
        raise RuntimeError(
            "torch.ormqr: Expected other to have the same number of dimensions as input, but "
            f"got other.ndim equal to {input3.dim()} and input.ndim is equal to {self.dim()}")
    batch = tuple(self._sizes[:-2])
    for name, got in (("tau", tuple(input2._sizes[:-1])), ("other", tuple(input3._sizes[:-2]))):
        if got != batch:
            raise RuntimeError(
                f"torch.ormqr: Expected batch dimensions of {name} to be equal to "
                f"input.shape[:-2], but got {format_shape(got)}")
    for name, t in (("tau", input2), ("other", input3)):
        if t._dtype is not self._dtype:
            raise RuntimeError(
                f"torch.ormqr: Expected input and {name} to have the same dtype, but input has "
                f"dtype{self._dtype.scalar_name} and {name} has dtype {t._dtype.scalar_name}")
    if not (self._dtype.is_floating_point or self._dtype.is_complex) or self._dtype in (
            dt.float16, dt.bfloat16):
        raise unsupported_dtype("ormqr_cpu", self._dtype)


@native
def ormqr(self: Tensor, input2: Tensor, input3: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    _ormqr_checks(self, input2, input3, left)
    shape = tuple(input3._sizes)
    result = empty_tensor(shape, input3._dtype, input3._device, column_major(shape))
    if input3._device.type == "meta" or result.numel() == 0:
        return result
    reflectors, scales, other = self._numpy(), input2._numpy(), input3._numpy()
    complex_ = reflectors.dtype.kind == "c"
    routine = lapack("unmqr" if complex_ else "ormqr", reflectors)
    trans = ("C" if complex_ else "T") if transpose else "N"
    value = np.empty(shape, other.dtype)
    k = scales.shape[-1]
    for index in batches(shape[:-2]):
        if k == 0:
            value[index] = other[index]
            continue
        c = np.asfortranarray(other[index])
        lwork = max(1, c.shape[1] if left else c.shape[0]) * 64
        q_c, _, info = routine("L" if left else "R", trans,
                               np.asfortranarray(reflectors[index][:, :k]), scales[index], c,
                               lwork)
        value[index] = q_c
    assign(result._numpy(), value)
    return result


@native
def ormqr_out(self: Tensor, input2: Tensor, input3: Tensor, left: bool, transpose: bool,
              out: Tensor) -> Tensor:
    result = ormqr(self, input2, input3, left, transpose)
    if out._dtype is not result._dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {result._dtype.cpp_name}, but got "
            f"{out._dtype.cpp_name} instead")
    resize_output(out, result._sizes, "ormqr")
    aten_ops().copy_.default(out, result)
    return out


# --- _lu_with_info (torch.lu's operator, deprecated for linalg.lu_factor_ex) ------------------

_WARNED_LU: list[bool] = []


@native
def _lu_with_info(self: Tensor, pivot: bool = True, check_errors: bool = True) -> tuple:
    if not _WARNED_LU:
        import warnings

        _WARNED_LU.append(True)
        warnings.warn(
            "torch.lu is deprecated in favor of torch.linalg.lu_factor / "
            "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.\n"
            "LU, pivots = torch.lu(A, compute_pivots)\nshould be replaced with\n"
            "LU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\n"
            "LU, pivots, info = torch.lu(A, compute_pivots, get_infos=True)\n"
            "should be replaced with\nLU, pivots, info = torch.linalg.lu_factor_ex(A, "
            "compute_pivots)", UserWarning, stacklevel=2)
    return aten_ops().linalg_lu_factor_ex.default(self, pivot=pivot, check_errors=False)


# --- segment_reduce (torch._segment_reduce) ---------------------------------------------------
# Consecutive runs of `data` along `axis` (their lengths, or their start offsets, given per
# leading index) reduced to one value each; `initial` starts every reduction and fills empty
# segments (else the reduction's identity; NaN for an empty mean).

_SEGMENT_REDUCTIONS = ("sum", "mean", "max", "min", "prod", "amax", "amin")


def _segment_bounds(data: Tensor, reduce: str, lengths: Tensor | None, indices: Tensor | None,
                    offsets: Tensor | None, axis: int, unsafe: bool) -> tuple:
    """The checked axis, the segments' (start, stop) per leading index, and the output shape."""
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    axis = wrap_dim(axis, data.dim())
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    given = lengths if lengths is not None else offsets
    if given._dtype not in (dt.int32, dt.int64):
        kernel = "lengths" if lengths is not None else "offsets"
        raise unsupported_dtype(f"_segment_reduce_{kernel}_cpu_kernel1", given._dtype)
    if given.dim() - 1 != axis:
        raise RuntimeError(
            f"segment_reduce(): Expected axis to be the last dimension of "
            f"{'lengths' if lengths is not None else 'offsets'} but got {axis}.")
    segments = given._sizes[-1] - (0 if lengths is not None else 1)
    shape = tuple(data._sizes[:axis]) + (segments,) + tuple(data._sizes[axis + 1:])
    if data._device.type == "meta":
        return axis, None, shape
    values = given._numpy().astype(np.int64)
    if lengths is not None:
        if not unsafe:
            if values.size and values.min() < 0:
                raise RuntimeError("lengths contains negative value!")
            if not np.all(values.sum(-1) == data._sizes[axis]):
                raise RuntimeError(
                    "segment_reduce(): Expected all rows of lengths along axis to sum to "
                    "data.size(lengths.dim()-1) when !unsafe.")
        stops = np.cumsum(values, -1)
        starts = stops - values
    else:
        starts, stops = values[..., :-1], values[..., 1:]
    return axis, (starts, stops), shape


def _segment_identity(reduce: str) -> float:
    return {"sum": 0.0, "mean": math.nan, "max": -math.inf, "amax": -math.inf,
            "min": math.inf, "amin": math.inf, "prod": 1.0}[reduce]


@native
def segment_reduce_kernel(data: Tensor, reduce: str, lengths: Tensor | None = None,
                          indices: Tensor | None = None, offsets: Tensor | None = None,
                          axis: int = 0, unsafe: bool = False,
                          initial: object = None) -> Tensor:
    axis, bounds, shape = _segment_bounds(data, reduce, lengths, indices, offsets, axis, unsafe)
    if not data._dtype.is_floating_point:
        raise unsupported_dtype("_segment_reduce_cpu", data._dtype)
    result = empty_tensor(shape, data._dtype, data._device)
    if bounds is None or result.numel() == 0:
        return result
    compute = _compute_dtype(data._dtype)
    source = data._numpy().astype(compute, copy=False)
    out = np.empty(shape, compute)
    starts, stops = bounds
    size = data._sizes[axis]
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "max": np.fmax,
             "amax": np.fmax, "min": np.fmin, "amin": np.fmin}[reduce]
    for outer in np.ndindex(*data._sizes[:axis]):
        for s in range(starts.shape[-1]):
            lo = min(max(int(starts[outer + (s,)]), 0), size)
            hi = min(max(int(stops[outer + (s,)]), lo), size)
            part = source[outer + (slice(lo, hi),)]
            target = outer + (s,)
            if hi == lo:
                out[target] = _segment_identity(reduce) if initial is None else initial
                continue
            if reduce in ("max", "amax", "min", "amin"):  # NaN propagates, as PyTorch's
                value = (np.max if reduce in ("max", "amax") else np.min)(part, axis=0)
            else:
                value = ufunc.reduce(part, axis=0)
            if initial is not None:
                value = ufunc(value, compute.type(initial))
            if reduce == "mean":
                value = value / (hi - lo)
            out[target] = value
    quiet_call(assign, result._numpy(), out)
    return result


@native
def _segment_reduce_backward_kernel(grad: Tensor, output: Tensor, data: Tensor, reduce: str,
                                    lengths: Tensor | None = None,
                                    offsets: Tensor | None = None, axis: int = 0,
                                    initial: object = None) -> Tensor:
    axis, bounds, _ = _segment_bounds(data, reduce, lengths, None, offsets, axis, True)
    result = aten_ops().zeros_like.default(data)
    if bounds is None or result.numel() == 0:
        return result
    compute = _compute_dtype(data._dtype)
    g, y = grad._numpy().astype(compute), output._numpy().astype(compute)
    x = data._numpy().astype(compute)
    gx = np.zeros(x.shape, compute)
    starts, stops = bounds
    size = data._sizes[axis]
    for outer in np.ndindex(*data._sizes[:axis]):
        for s in range(starts.shape[-1]):
            lo = min(max(int(starts[outer + (s,)]), 0), size)
            hi = min(max(int(stops[outer + (s,)]), lo), size)
            if hi == lo:
                continue
            where, at = outer + (slice(lo, hi),), outer + (s,)
            part, gs = x[where], g[at]
            if reduce == "sum":
                gx[where] = gs
            elif reduce == "mean":
                gx[where] = gs / (hi - lo)
            elif reduce in ("max", "amax", "min", "amin"):
                hit = np.isnan(part) | (part == y[at])
                share = np.where(hit, gs, 0)
                count = hit.sum(axis=0)
                # PyTorch divides among ties only where the gradient is positive
                share = np.where((count >= 2) & (share > 0), share / np.maximum(count, 1),
                                 share)
                gx[where] = share
            else:
                with np.errstate(all="ignore"):
                    plain = gs * y[at] / part
                special = np.isnan(part) | (part == 0)
                if special.any():
                    start = 1 if initial is None else initial
                    for k in np.argwhere(special):
                        others = np.delete(part, k[0], axis=0)
                        column = (slice(None),) + tuple(k[1:])
                        exclusive = compute.type(start) * np.prod(others[column], axis=0)
                        plain[tuple(k)] = (gs[tuple(k[1:])] if gs.ndim else gs) * exclusive
                gx[where] = plain
    quiet_call(assign, result._numpy(), gx)
    return result


# --- linalg.ldl_factor(_ex), linalg.ldl_solve: LAPACK's Bunch-Kaufman LDL^T / LDL^H ---------


def _ldl_square(A: Tensor, api: str) -> None:  # noqa: N803
    if A.dim() < 2:
        raise RuntimeError(f"{api}: The input tensor A must have at least 2 dimensions.")
    if A._sizes[-1] != A._sizes[-2]:
        raise RuntimeError(
            f"{api}: A must be batches of square matrices, but they are {A._sizes[-2]} by "
            f"{A._sizes[-1]} matrices")
    if not (A._dtype.is_floating_point or A._dtype.is_complex) or A._dtype in (
            dt.float16, dt.bfloat16):
        raise RuntimeError(
            f"{api}: Expected a floating point or complex tensor as input. Got "
            f"{A._dtype.scalar_name}")


def _ldl_routine(name: str, a: np.ndarray, hermitian: bool):
    prefix = "he" if hermitian and a.dtype.kind == "c" else "sy"
    return lapack(prefix + name, a)


@native
def meta_linalg_ldl_factor_ex(op, self: Tensor, hermitian: bool = False,
                              check_errors: bool = False) -> None:
    _ldl_square(self, "torch.linalg.ldl_factor_ex")
    batch = tuple(self._sizes[:-2])
    op.set_output(0, tuple(self._sizes), self._dtype, self._device, column_major(self._sizes))
    op.set_output(1, batch + (self._sizes[-1],), dt.int32, self._device)
    op.set_output(2, batch, dt.int32, self._device)


@native
def linalg_ldl_factor_ex_out(op, self: Tensor, hermitian: bool, check_errors: bool,
                             LD: Tensor, pivots: Tensor, info: Tensor) -> None:  # noqa: N803
    if self._device.type == "meta" or self.numel() == 0:
        if info.numel() and self._device.type != "meta":
            info._numpy()[...] = 0
        return
    a = self._numpy()
    routine = _ldl_routine("trf", a, hermitian)
    factors = np.empty(a.shape, a.dtype)
    pivot_values = np.empty(tuple(pivots._sizes), np.int32)
    codes = np.empty(tuple(info._sizes), np.int32)
    for index in batches(a.shape[:-2]):
        ld, piv, code = routine(np.asfortranarray(a[index]), lower=1)[:3]
        factors[index] = np.tril(ld)
        pivot_values[index], codes[index] = piv, code
    assign(LD._numpy(), factors)
    assign(pivots._numpy(), pivot_values)
    assign(info._numpy(), codes)
    if check_errors:
        raise_for_info(info, "torch.linalg.ldl_factor_ex", self.dim() == 2)


@native
def linalg_ldl_factor(self: Tensor, hermitian: bool = False) -> tuple:
    LD, pivots, info = aten_ops().linalg_ldl_factor_ex.default(self, hermitian=hermitian)  # noqa: N806
    raise_for_info(info, "torch.linalg.ldl_factor", self.dim() == 2)
    return LD, pivots


@native
def linalg_ldl_factor_out(self: Tensor, hermitian: bool = False, LD: Tensor = None,  # noqa: N803
                          pivots: Tensor = None) -> tuple:
    info = empty_tensor((0,), dt.int32, self._device)
    aten_ops().linalg_ldl_factor_ex.out(self, hermitian=hermitian, LD=LD, pivots=pivots,
                                        info=info)
    raise_for_info(info, "torch.linalg.ldl_factor", self.dim() == 2)
    return LD, pivots


@native
def meta_linalg_ldl_solve(op, LD: Tensor, pivots: Tensor, B: Tensor,  # noqa: N803
                          hermitian: bool = False) -> None:
    api = "torch.linalg.ldl_solve"
    _ldl_square(LD, api)
    if B._dtype is not LD._dtype:
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type "
            f"{B._dtype.scalar_name} and A of type {LD._dtype.scalar_name} instead.")
    if B.dim() < 2:  # PyTorch reads B.size(-2) before checking B's dims
        top = max(B.dim(), 1)
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-top}, {top - 1}], but got -2)")
    n = LD._sizes[-1]
    if B._sizes[-2] != n:
        raise RuntimeError(
            f"Incompatible matrix sizes for {api}: each A matrix is {n} by {n} but each b "
            f"matrix is {B._sizes[-2]} by {B._sizes[-1]}")
    if tuple(pivots._sizes) != tuple(LD._sizes[:-1]):
        raise RuntimeError(
            f"{api}: Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots "
            f"with shape {format_shape(pivots._sizes)} instead")
    if not pivots._dtype.is_integral or pivots._dtype is dt.bool:
        raise RuntimeError(
            f"{api}: Expected pivots to be integers. Got {pivots._dtype.scalar_name}")
    batch = broadcast_shapes("linalg.ldl_solve", tuple(B._sizes[:-2]), tuple(LD._sizes[:-2]))
    shape = batch + tuple(B._sizes[-2:])
    op.set_output(0, shape, B._dtype, B._device, column_major(shape))


@native
def linalg_ldl_solve_out(op, LD: Tensor, pivots: Tensor, B: Tensor, hermitian: bool,  # noqa: N803
                         out: Tensor) -> None:
    if out._device.type == "meta" or out.numel() == 0:
        return
    batch = tuple(out._sizes[:-2])
    n = LD._sizes[-1]
    factors = np.broadcast_to(LD._numpy(), batch + (n, n))
    piv = np.broadcast_to(pivots._numpy().astype(np.int32), batch + (n,))
    rhs = np.broadcast_to(B._numpy(), tuple(out._sizes))
    routine = _ldl_routine("trs", factors, hermitian)
    x = np.empty(tuple(out._sizes), rhs.dtype)
    for index in batches(batch):
        x[index] = routine(np.asfortranarray(factors[index]), piv[index],
                           np.asfortranarray(rhs[index]), lower=1)[0]
    quiet_call(assign, out._numpy(), x)
