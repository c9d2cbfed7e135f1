"""`pyaten.masked`'s reductions and normalisations: PyTorch's `torch.masked` functions on
strided tensors, each a short composition of pyaten operators.

Note: how a mask enters. Every function takes `mask=` (bool, or anything `.to(bool)` accepts,
broadcastable to the input, never of higher rank). The masked-out elements are replaced with
the operation's identity (0 for sum, 1 for prod, -inf or the dtype's minimum for amax/argmax/
logsumexp/softmax, +inf or the maximum for amin/argmin/softmin, NaN for median, 0 for norm,
+inf for the -inf norm) and the plain operator runs on the result. So a slice whose elements are
all masked out gives the identity (sum 0, amax -inf, ...); mean, var and std divide by the count
of masked-in elements, so theirs give NaN (0/0), and median's NaN. Gradients and Meta behaviour
come from the operators called (`where` routes no gradient to masked-out elements).
Only strided inputs are supported (a sparse COO/CSR mask of a strided input is made dense, as
PyTorch's); PyTorch's sparse-input paths are not.
"""

from __future__ import annotations

import sys
from typing import Any

import pyaten
from pyaten.core.tensor import Tensor

DimOrDims = Any  # int, a sequence of ints, or None

_SMALL_INTEGERS = ("uint8", "bool", "int8", "int16", "int32")


def _is_small_integer(dtype) -> bool:
    return str(dtype).rsplit(".", 1)[-1] in _SMALL_INTEGERS


def _canonical_dim(dim: DimOrDims, ndim: int) -> tuple[int, ...]:
    """`dim` as a sorted tuple of non-negative dims (None and () mean every dim)."""
    if dim == ():
        dim = None
    if dim is None:
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims: list[int] = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                f"but got {d})"
            )
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _check_strided(name: str, input: Tensor) -> None:  # noqa: A002
    if input.layout != pyaten.strided:
        raise ValueError(f"masked {name} expects strided tensor (got {input.layout} tensor)")


def _input_mask(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:  # noqa: A002
    """The mask as a bool tensor of the input's shape."""
    mask = kwargs.get("mask")
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if mask.layout != pyaten.strided and input.layout == pyaten.strided:
        mask = mask.to_dense()  # a sparse mask of a strided input: its unspecified are False
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError(
                "_input_mask expected broadcastable mask (got mask dimensionality higher than "
                "of the input)"
            )
        mask = pyaten.broadcast_to(mask.clone(), input.shape)
    return mask.to(dtype=pyaten.bool)


def _reduction_identity(op_name: str, input: Tensor, *args: Any) -> Tensor | None:  # noqa: A002
    """The value a masked-out element is replaced with for `op_name` (PyTorch's table), or None
    when the operation has none (mean, var, std)."""
    dtype, device = input.dtype, input.device
    op_name = op_name.rsplit(".", 1)[-1]
    floating = input.is_floating_point()
    integral_ok = input.is_signed() or dtype == pyaten.uint8

    def scalar(value: Any, as_dtype=dtype) -> Tensor:
        return pyaten.tensor(value, dtype=as_dtype, device=device)

    if op_name in ("sum", "cumsum"):
        return scalar(0)
    if op_name in ("prod", "cumprod"):
        return scalar(1)
    if op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if floating:
            return scalar(-float("inf"))
        if op_name == "logsumexp" and input.is_complex():
            return scalar(complex(-float("inf"), 0))
        if integral_ok:
            return scalar(pyaten.iinfo(dtype).min)
    elif op_name in ("amin", "argmin"):
        if floating:
            return scalar(float("inf"))
        if integral_ok:
            return scalar(pyaten.iinfo(dtype).max)
    elif op_name in ("mean", "var", "std"):
        return None
    elif op_name == "norm":
        order = args[0] if args else 2
        if order == float("-inf"):
            if not floating:
                raise AssertionError(f"input must be floating point, got {dtype}")
            return scalar(float("inf"))
        return scalar(0)
    elif op_name == "median":
        return scalar(float("nan"), dtype if floating else pyaten.float32)
    raise NotImplementedError(f"identity of {op_name} on {dtype} input")


def _where(mask: Tensor, input: Tensor, fill_value: Tensor) -> Tensor:  # noqa: A002
    if mask.layout != pyaten.strided:
        raise ValueError(f"_where expects strided tensor but got {mask.layout}")
    return pyaten.where(mask, input, fill_value)


def _combine_input_and_mask(op: Any, input: Tensor, mask: Tensor | None,  # noqa: A002
                            *args: Any) -> Tensor:
    """The input with its masked-out elements replaced by `op`'s identity. A MaskedTensor
    brings its own mask (the `mask` argument is then ignored, as PyTorch does)."""
    if _is_masked_tensor(input):
        name = op if isinstance(op, str) else op.__name__
        data, own = input._masked_data, input._masked_mask
        return _where(own, data, _reduction_identity(name, data, *args))
    if mask is None:
        return input
    canonical = _input_mask(input, mask=mask)
    name = op if isinstance(op, str) else op.__name__
    return _where(canonical, input, _reduction_identity(name, input, *args))


def _is_masked_tensor(t: object) -> bool:
    # the class exists only once its module is imported (pyaten.masked.maskedtensor)
    module = sys.modules.get("pyaten.masked.maskedtensor")
    return module is not None and isinstance(t, module.MaskedTensor)


def _reduced_dtype(input: Tensor, dtype) -> Any:  # noqa: A002
    if dtype is not None:
        return dtype
    return pyaten.int64 if _is_small_integer(input.dtype) else input.dtype


# --- reductions --------------------------------------------------------------------------------


def sum(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A001,A002
        dtype=None, mask: Tensor | None = None) -> Tensor:
    """Sum of the masked-in elements (0 where all are masked out); small integers sum to int64."""
    dtype = _reduced_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    combined = _combine_input_and_mask("sum", input, mask)
    _check_strided("sum", combined)
    return pyaten.sum(combined, dims, bool(keepdim), dtype=dtype)


def prod(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A002
         dtype=None, mask: Tensor | None = None) -> Tensor:
    """Product of the masked-in elements (1 where all are masked out)."""
    dtype = _reduced_dtype(input, dtype)
    dims = _canonical_dim(dim, input.ndim)
    combined = _combine_input_and_mask("prod", input, mask)
    _check_strided("prod", combined)
    result = combined.to(dtype=dtype)
    for d in reversed(dims):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def cumsum(input: Tensor, dim: int, *, dtype=None,  # noqa: A002
           mask: Tensor | None = None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    combined = _combine_input_and_mask("sum", input, mask)
    _check_strided("cumsum", combined)
    return pyaten.cumsum(combined, d, dtype=dtype).to(dtype=dtype)


def cumprod(input: Tensor, dim: int, *, dtype=None,  # noqa: A002
            mask: Tensor | None = None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    combined = _combine_input_and_mask("prod", input, mask)
    _check_strided("cumprod", combined)
    return pyaten.cumprod(combined, d, dtype=dtype).to(dtype=dtype)


def amax(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A002
         dtype=None, mask: Tensor | None = None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    combined = _combine_input_and_mask("amax", input, mask)
    _check_strided("amax", combined)
    return pyaten.amax(combined, _canonical_dim(dim, combined.ndim), bool(keepdim)).to(
        dtype=dtype)


def amin(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A002
         dtype=None, mask: Tensor | None = None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    combined = _combine_input_and_mask("amin", input, mask)
    _check_strided("amin", combined)
    return pyaten.amin(combined, _canonical_dim(dim, combined.ndim), bool(keepdim)).to(
        dtype=dtype)


def argmax(input: Tensor, dim: int | None = None, *, keepdim: bool | None = False,  # noqa: A002
           dtype=None, mask: Tensor | None = None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    combined = _combine_input_and_mask("argmax", input, mask)
    _check_strided("argmax", combined)
    return pyaten.argmax(combined, dim, bool(keepdim)).to(dtype=dtype)


def argmin(input: Tensor, dim: int | None = None, *, keepdim: bool | None = False,  # noqa: A002
           dtype=None, mask: Tensor | None = None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    combined = _combine_input_and_mask("argmin", input, mask)
    _check_strided("argmin", combined)
    return pyaten.argmin(combined, dim, bool(keepdim)).to(dtype=dtype)


def _count(input: Tensor, dim: DimOrDims, keepdim: bool, mask: Tensor | None):  # noqa: A002
    """How many elements are masked in along `dim`, and the canonical mask."""
    if mask is None:
        ones = pyaten.ones(input.shape, dtype=pyaten.int64, device=input.device)
        return sum(ones, dim, keepdim=keepdim), None
    inmask = _input_mask(input, mask=mask)
    return inmask.sum(dim=_canonical_dim(dim, input.ndim), keepdim=bool(keepdim)), inmask


def mean(input: Tensor, dim: DimOrDims = None, *, keepdim: bool | None = False,  # noqa: A002
         dtype=None, mask: Tensor | None = None) -> Tensor:
    """Mean of the masked-in elements; NaN where all are masked out."""
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(
            f"mean(): Could not infer output dtype. {source} dtype must be either a floating "
            f"point or complex dtype. Got: {dtype}"
        )
    _check_strided("mean", input)
    count, inmask = _count(input, dim, bool(keepdim), mask)
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False,  # noqa: A002
           dtype=None, mask: Tensor | None = None) -> Tensor:
    """`nanmedian` of the masked-in elements; NaN where all are masked out (an error for
    integer inputs, as PyTorch)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.is_floating_point()
    if not is_float:
        input = input.to(dtype=pyaten.float32)  # noqa: A001
    combined = _combine_input_and_mask("median", input, mask)
    _check_strided("median", combined)
    output = pyaten.nanmedian(combined, d, keepdim).values
    if is_float:
        return output
    if not bool(pyaten.isnan(output).any()):
        return output.to(dtype=dtype)
    raise ValueError(
        "masked median expects no fully masked out rows if dtype is not floating point"
    )


def logsumexp(input: Tensor, dim: DimOrDims = None, *, keepdim: bool = False,  # noqa: A002
              dtype=None, mask: Tensor | None = None) -> Tensor:
    """log(sum(exp)) of the masked-in elements; -inf where all are masked out."""
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.ndim)
    combined = _combine_input_and_mask("logsumexp", input, mask)
    _check_strided("logsumexp", combined)
    return pyaten.logsumexp(combined, dims, keepdim=keepdim).to(dtype=dtype)


def logaddexp(input: Tensor, other: Tensor, *, dtype=None,  # noqa: A002
              input_mask: Tensor | None = None, other_mask: Tensor | None = None) -> Tensor:
    """logaddexp of two tensors, each with its own mask (a masked-out element counts as -inf)."""
    dtype = input.dtype if dtype is None else dtype
    if input.layout != pyaten.strided or other.layout != pyaten.strided:
        raise ValueError(
            f"masked logaddexp expects strided tensors (got {input.layout} tensor for input, "
            f"{other.layout} for other)"
        )
    left = _combine_input_and_mask("logaddexp", input, input_mask)
    right = _combine_input_and_mask("logaddexp", other, other_mask)
    return pyaten.logaddexp(left, right).to(dtype=dtype)


def norm(input: Tensor, ord: float | None = 2.0, dim: DimOrDims = None, *,  # noqa: A002
         keepdim: bool | None = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Vector norm of the masked-in elements (0 where all are masked out; inf for ord=-inf)."""
    dtype = input.dtype if dtype is None else dtype
    combined = _combine_input_and_mask("norm", input, mask, ord)
    _check_strided("norm", combined)
    dims = _canonical_dim(dim, input.ndim)
    return pyaten.linalg.vector_norm(combined, ord, dims, bool(keepdim), dtype=dtype)


def _std_var(input: Tensor, dim: DimOrDims, unbiased: bool | None, *,  # noqa: A002
             correction_opt: float | None, keepdim: bool | None, dtype, mask: Tensor | None,
             take_sqrt: bool) -> Tensor:
    if unbiased is not None and correction_opt is not None:
        raise AssertionError("Only one of unbiased and correction may be given")
    correction = 1.0
    if unbiased is not None:
        correction = 1.0 if unbiased else 0.0
    if correction_opt is not None:
        correction = float(correction_opt)
    if dtype is None:
        dtype = input.dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = pyaten.float32
    compute_dtype = dtype
    if not (compute_dtype.is_floating_point or compute_dtype.is_complex):
        compute_dtype = pyaten.float32
    _check_strided("std/var", input)
    count, inmask = _count(input, dim, True, mask)
    sample_total = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask)
    sample_mean = pyaten.divide(sample_total, count)
    x = pyaten.subtract(input, sample_mean)
    total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if correction != 0:
        real_dtype = compute_dtype.to_real() if compute_dtype.is_complex else compute_dtype
        count = count.to(real_dtype)
        count = pyaten.subtract(count, correction)
        count = pyaten.maximum(count, count.new_zeros([]))
    output = pyaten.divide(total, count).to(dtype=dtype)
    return pyaten.sqrt(output) if take_sqrt else output


def var(input: Tensor, dim: DimOrDims = None, unbiased: bool | None = None, *,  # noqa: A002
        correction: float | None = None, keepdim: bool | None = False, dtype=None,
        mask: Tensor | None = None) -> Tensor:
    """Variance of the masked-in elements; NaN where all are masked out."""
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=False)


def std(input: Tensor, dim: DimOrDims = None, unbiased: bool | None = None, *,  # noqa: A002
        correction: int | None = None, keepdim: bool | None = False, dtype=None,
        mask: Tensor | None = None) -> Tensor:
    """Standard deviation of the masked-in elements; NaN where all are masked out."""
    return _std_var(input, dim, unbiased, correction_opt=correction, keepdim=keepdim,
                    dtype=dtype, mask=mask, take_sqrt=True)


# --- normalisations ----------------------------------------------------------------------------


def softmax(input: Tensor, dim: int, *, dtype=None,  # noqa: A002
            mask: Tensor | None = None) -> Tensor:
    """Softmax over the masked-in elements (0 at masked-out ones; NaN where all are out)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    combined = _combine_input_and_mask("amax", input, mask)
    _check_strided("softmax", combined)
    return pyaten.nn.functional.softmax(combined, d, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None,  # noqa: A002
                mask: Tensor | None = None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    combined = _combine_input_and_mask("amax", input, mask)
    _check_strided("log_softmax", combined)
    return pyaten.nn.functional.log_softmax(combined, d, dtype=dtype)


def softmin(input: Tensor, dim: int, *, dtype=None,  # noqa: A002
            mask: Tensor | None = None) -> Tensor:
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    combined = _combine_input_and_mask("amin", input, mask)
    _check_strided("softmin", combined)
    return pyaten.nn.functional.softmin(combined, d, dtype=dtype)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12,  # noqa: A002
              dtype=None, mask: Tensor | None = None) -> Tensor:
    """The input divided by the norm of its masked-in elements (masked-out elements are 0)."""
    dtype = input.dtype if dtype is None else dtype
    combined = _combine_input_and_mask("sum", input, mask)
    _check_strided("normalize", combined)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = pyaten.maximum(nrm, nrm.new_full([], eps))
    return pyaten.divide(combined, denom)

