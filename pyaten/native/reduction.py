"""Reduction operator families: one row per operator, its meta, stub and impl made from it.

Note: the reduction row
    A reduction (`sum`, `prod`, `amax`, `all`, `argmax`, ...) is, in PyTorch, a structured
    kernel whose meta calls `resize_reduction` (dims wrapped and de-duplicated, `keepdim`) with
    a result dtype chosen by one of a handful of rules, and whose impl runs a `DispatchStub`
    over a reducing `TensorIterator`. What differs between operators is small and fits a row:

    - `fn`: the array reduction. A NumPy ufunc (`np.add`, `np.maximum`) reduces with
      `ufunc.reduce` straight into the output's memory when the dtypes agree; any other
      callable is called as `fn(array, axes, keepdim)` and its result written to the output.
    - `dtypes`: the input dtypes the operator's `AT_DISPATCH` accepts; another raises
      `"<dispatch_name>" not implemented for '<Dtype>'` (`NotImplementedError`).
    - `result`: the result-dtype rule (RESULT_RULES below), PyTorch's meta spelled once:
      `"promote"` (sum/prod: `dtype=`, else `out`'s dtype, else integers and bool to int64),
      `"keep"` (amax/amin: the input's dtype; `out` must match), `"bool"` (all/any: bool, but
      uint8 stays uint8; `out` must be bool or uint8), `"index"` (argmax: int64),
      `"float"` (mean: `dtype=` or the input's, which must be floating or complex).
    - `identity`: False for reductions without one (amax, argmax): an empty reduced dim raises
      `IndexError("<op>(): Expected reduction dim 0 to have non-zero size.")` and reducing every
      dim of an empty tensor raises `empty_all_error` (PyTorch's text differs per operator).
    - `check`: errors PyTorch raises before anything else (`argmax(): does not support bool
      input`), called as `check(self)`.

    `register(*rows)` makes what the YAML's structured entries look up: `meta_<name>[_<ovl>]`
    (dims, keepdim, result dtype, out= checks; this alone serves the Meta key), the
    `<name>_stub` DispatchStub with its `cpu` loop (dtype check, then NumPy in the accumulate
    dtype: float32 for float16/bfloat16, int64 for integer sums, so overflow wraps as in ATen),
    and the impl (default `<name>_out`) that calls the stub. One meta serves every overload
    schema of the family (`self, dim, keepdim[, dtype]`), whether `dim` is an `int`, `int?`,
    `int[1]` or `int[]?`: `None` and `[]` mean every dim.

    - `repeat`: how the reduction of `n` copies of a value follows from the value, for
      reductions over broadcast dims (Note: reductions over broadcast dims): `"scale"` (sum:
      `n * x`), `"power"` (prod: `x ** n`), `"same"` (amax, amin, all, any, mean: `x`),
      `"index"` (argmax, argmin: the first occurrence, an index into the whole flattened
      input when every dim is reduced); empty for rows that read every element.

    Operators that need more than a row (values+indices, std/var's correction, norm's `p`)
    use the helpers here (`reduction_dims`, `reduced_sizes`, `check_nonempty`) beside their
    table in `pyaten/native/kernels/reduce.py`; scans and order statistics can do the same.

Note: reductions over broadcast dims
    An expanded tensor (`zeros(1).expand(2**20, 2**20)`) has stride 0 along its broadcast
    dims: 2**40 elements that are one value. Reducing along such a dim reduces `n` copies of
    the same elements, which the row's `repeat` rule computes from one copy; a kept dim of
    stride 0 gives the same result at every position, computed once and broadcast into the
    output. So the loop cuts every stride-0 dim to length 1 before converting or reducing
    (the sum of 2**40 float32 ones is `2**40 * 1` in the float32 accumulator, as PyTorch's sum
    gives; integer sums wrap like PyTorch's int64 accumulator because `n * x` and `x ** n`
    wrap the same way modulo 2**64). Tensors without zero strides take the usual path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.accel import ACCEL
from pyaten.core.broadcast import new_row_major
from pyaten.core.device import CPU
from pyaten.core.stub import DispatchStub
from pyaten.native import fastpath
from pyaten.native.family import RowNames, caller_site, register_row, unsupported_dtype
from pyaten.native.runtime import Tensor
from pyaten.native.structured import StructuredMeta, quiet_call

# --- dtype groups: PyTorch's AT_DISPATCH_* sets -----------------------------------------------

INTEGRAL = frozenset({dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64})
FLOATING = frozenset({dt.float32, dt.float64})
COMPLEX = frozenset({dt.complex64, dt.complex128})
REDUCED = frozenset({dt.float16, dt.bfloat16})
ALL_AND_BOOL = INTEGRAL | FLOATING | REDUCED | {dt.bool}  # every real dtype
EVERY = ALL_AND_BOOL | COMPLEX
FLOATING_AND_COMPLEX = FLOATING | REDUCED | COMPLEX


def dtypes_and(group: Iterable[dt.dtype], *extra: dt.dtype) -> frozenset[dt.dtype]:
    """`AT_DISPATCH_<group>_AND<n>(extra...)`: a group plus some single dtypes."""
    return frozenset(group) | frozenset(extra)


# --- dims and sizes -------------------------------------------------------------------------


def wrap_dim(dim: int, ndim: int) -> int:
    """ATen's maybe_wrap_dim: negative dims count from the end; a 0-dim tensor takes 0 and -1."""
    bound = ndim if ndim > 0 else 1
    if dim < -bound or dim >= bound:
        if not -(1 << 63) <= dim < 1 << 63:  # PyTorch's parser refuses it before any check
            raise ValueError("Overflow when unpacking long long")
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], "
            f"but got {dim})"
        )
    return dim + bound if dim < 0 else dim


_DIMS: dict[tuple, tuple[int, ...]] = {}


def reduction_dims(dim: Any, ndim: int) -> tuple[int, ...]:
    """The wrapped, checked dims to reduce, in the order given. `dim` is None, an int or a
    sequence of ints; None or an empty sequence means every dim. A 0-dim tensor accepts dims
    0 and -1 but has nothing to reduce."""
    key = (dim, ndim)
    found = _DIMS.get(key) if dim.__class__ is not list else None
    if found is not None:
        return found
    if dim is None or (dim.__class__ is not int and len(dim) == 0):
        dims = tuple(range(ndim))
    else:
        seen: list[int] = []
        for d in ((dim,) if dim.__class__ is int else dim):
            w = wrap_dim(d, ndim)
            if w in seen:
                raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
            seen.append(w)
        dims = tuple(d for d in seen if d < ndim)
    if dim.__class__ is not list and len(_DIMS) < 4096:
        _DIMS[key] = dims
    return dims


def reduced_sizes(sizes: tuple, dims: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    """The result's sizes: reduced dims dropped, or kept as size 1 with `keepdim`."""
    if len(dims) == len(sizes):
        return (1,) * len(sizes) if keepdim else ()
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(sizes))
    return tuple(s for i, s in enumerate(sizes) if i not in dims)


def check_nonempty(label: str, self: Tensor, dim: Any, dims: tuple[int, ...],
                   empty_all: tuple[type, str], wrapped: bool = False) -> None:
    """The errors of a reduction without identity on empty input (PyTorch's
    `zero_numel_check_dims`): `empty_all` when every dim is reduced, else per dim."""
    sizes = self._sizes
    if dim is None or (dim.__class__ is not int and len(dim) == 0):
        numel = 1
        for s in sizes:
            numel *= s
        if numel == 0:
            kind, message = empty_all
            raise kind(message)
        return
    for given in ((dim,) if dim.__class__ is int else dim):
        d = wrap_dim(given, len(sizes))
        if sizes and sizes[d] == 0:
            # amax prints the dim as the caller wrote it, argmax the wrapped one
            raise IndexError(
                f"{label}: Expected reduction dim {d if wrapped else given} to have non-zero size."
            )


# --- result dtype rules ---------------------------------------------------------------------


def promoted(dtype: dt.dtype) -> dt.dtype:
    """Integers and bool sum to int64 (ATen's `get_dtype_from_self` with promotion)."""
    return dt.int64 if dtype.is_integral else dtype


def _result_promote(row: Reduction, self: Tensor, dtype: Any, out: Tensor | None) -> dt.dtype:
    if dtype is not None:
        return dtype
    return out._dtype if out is not None else promoted(self._dtype)


def _result_keep(row: Reduction, self: Tensor, dtype: Any, out: Tensor | None) -> dt.dtype:
    if out is not None and out._dtype is not self._dtype:
        raise RuntimeError(
            f"Expected the dtype for input and out to match, but got {self._dtype.scalar_name} "
            f"for input's dtype and {out._dtype.scalar_name} for out's dtype."
        )
    return self._dtype


def _result_bool(row: Reduction, self: Tensor, dtype: Any, out: Tensor | None) -> dt.dtype:
    if out is not None:
        if out._dtype is not dt.bool and out._dtype is not dt.uint8:
            raise RuntimeError(
                f"{row.base_name} only supports bool tensor for result, got: "
                f"{out._dtype.scalar_name}"
            )
        return out._dtype
    return dt.uint8 if self._dtype is dt.uint8 else dt.bool


def _result_index(row: Reduction, self: Tensor, dtype: Any, out: Tensor | None) -> dt.dtype:
    return dt.int64


def _result_float(row: Reduction, self: Tensor, dtype: Any, out: Tensor | None) -> dt.dtype:
    in_dtype = promoted(self._dtype) if dtype is None else dtype
    if not (in_dtype.is_floating_point or in_dtype.is_complex):
        what, name = ("Optional", dtype.scalar_name) if dtype is not None else (
            "Input", self._dtype.scalar_name
        )
        raise RuntimeError(
            f"{row.base_name}(): could not infer output dtype. {what} dtype must be either a "
            f"floating point or complex dtype. Got: {name}"
        )
    if dtype is not None or out is None:
        return in_dtype
    if not dt_can_cast(in_dtype, out._dtype):
        raise RuntimeError(
            f"result type {in_dtype.scalar_name} can't be cast to the desired output type "
            f"{out._dtype.scalar_name}"
        )
    return out._dtype


def dt_can_cast(src: dt.dtype, dst: dt.dtype) -> bool:
    """PyTorch's `canCast`: no complex to real, float to integral or non-bool to bool."""
    if src.is_complex and not dst.is_complex:
        return False
    if src.is_floating_point and dst.is_integral:
        return False
    return not (src is not dt.bool and dst is dt.bool)


RESULT_RULES: dict[str, Callable[..., dt.dtype]] = {
    "promote": _result_promote,
    "keep": _result_keep,
    "bool": _result_bool,
    "index": _result_index,
    "float": _result_float,
}


def accumulate_dtype(dtype: dt.dtype) -> np.dtype:
    """The NumPy dtype a reduction into `dtype` accumulates in (ATen's `acc_type` on CPU for
    sums: float32 for float16/bfloat16, int64 for integers, so integer overflow wraps)."""
    found = _ACCUMULATE.get(dtype)
    if found is None:
        if dtype is dt.float16 or dtype is dt.bfloat16:
            found = np.dtype(np.float32)
        elif dtype is dt.complex32:
            found = np.dtype(np.complex64)
        elif dtype.is_integral:
            found = np.dtype(np.int64)
        else:
            found = dtype.numpy
        _ACCUMULATE[dtype] = found
    return found


_ACCUMULATE: dict[dt.dtype, np.dtype] = {}


# --- the row --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reduction(RowNames):
    """One reduction operator of a family table (see Note: the reduction row).

    - `name`: the structured group's functional name with its overload
      (`"sum.dim_IntList"`); the meta is `meta_<name>_<overload>`, the stub `<base>_stub`
      (shared by rows of one base name), the impl `impl` or `<base>_out`.
    """

    name: str
    fn: Callable[..., Any]
    dtypes: frozenset[dt.dtype]
    result: str = "promote"
    identity: bool = True
    empty_all_error: tuple[type, str] | None = None
    check: Callable[[Tensor], None] | None = None
    impl: str | None = None
    dispatch_name: str | None = None
    compute: str = "accumulate"  # or "input": reduce in the input's dtype (max, argmax, all)
    empty_dims_reduce_all: bool = True  # False for all.dims/any.dims: `dim=[]` reduces nothing
    wrapped_dim_in_error: bool = False  # argmax's empty-dim error prints the wrapped dim
    repeat: str = ""  # "scale", "power", "same", "index" (Note: reductions over broadcast dims)
    site: str = field(default="", compare=False)



STUBS: dict[str, DispatchStub] = {}
# (dim, sizes, keepdim, `[]` reduces all) -> (wrapped dims, result sizes): shapes recur
_PLANS: dict[tuple, tuple[tuple[int, ...], tuple[int, ...]]] = {}


def register(*rows: Reduction) -> dict[str, DispatchStub]:
    """Make each row's meta, stub (with its `cpu` loop) and impl; return the stubs by name."""
    site = caller_site(2)
    made = {}
    for row in rows:
        stub = _stub_for(row)
        register_row(row, make_meta(row), _make_impl(row, stub), site)
        _register_fast(row, stub, site)
        made[stub.name] = stub
    return made


def _register_fast(row: Reduction, stub: DispatchStub, site: str) -> None:
    """The row's fast CPU function (Note: the structured fast path): a ufunc's reduce of a
    floating or complex tensor into a new row-major result of its dtype, when the shape's
    plan is known (the general path made it) and nothing is left to check."""
    ufunc = row.fn
    if not isinstance(ufunc, np.ufunc) or row.check is not None or row.result not in (
        "promote", "keep"
    ):
        return
    dtypes = row.dtypes & (fastpath.FLOATS | fastpath.COMPLEX)
    kernels = stub._kernels
    kernel = kernels.get("cpu")
    reduces_all = row.empty_dims_reduce_all
    identity = row.identity
    blocked = ufunc is np.add  # large all-dims sums: the loop's blocked sum, not this
    reduce = ufunc.reduce
    # small contiguous float sums: NumPy's pairwise sum in C (Note: the small-operator loops)
    small = ACCEL.sum_small if ACCEL is not None and ufunc is np.add else None

    def fast(self: Tensor, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
        if (dtype is not None or self._dtype not in dtypes or self._device is not CPU
                or kernels.get("cpu") is not kernel):
            return None
        plan = _PLANS.get((tuple(dim) if dim.__class__ is list else dim, self._sizes, keepdim,
                           reduces_all))
        if plan is None:
            return None
        x = self._np
        if x is None or x.base is not self._storage.data:
            x = self._numpy()
        size = x.size
        if (size == 0 and not identity) or (blocked and size >= _BLOCKED_MIN) or (
            0 in plan[1]
        ) or (size >= _BLOCKED_MIN and 0 in x.strides):  # broadcast dims: the loop's rule
            return None
        out = new_row_major(plan[1], self._dtype, CPU)
        if small is None or not small(x, plan[0], out._np):
            fastpath.quiet(reduce, x, plan[0], None, out._np, keepdim)
        return out

    fastpath.register(row.name, fast, None, row.site or site)


def _stub_for(row: Reduction) -> DispatchStub:
    """The `<base>_stub` of a row; rows of one base name (`all`, `all.dim`) share it."""
    stub_name = f"{row.base_name}_stub"
    stub = STUBS.get(stub_name)
    if stub is None:
        stub = STUBS[stub_name] = DispatchStub(stub_name)
        stub.register("cpu", cpu_loop(row))
    return stub


def plain(row: Reduction) -> tuple[Callable[..., None], DispatchStub]:
    """A row's meta and stub without registering kernel names, for `run`."""
    return make_meta(row), _stub_for(row)


def make_meta(row: Reduction) -> Callable[..., None]:
    """The structured meta of a row: `meta(op, self, dim, keepdim=False, dtype=None)`."""
    rule = RESULT_RULES[row.result]
    check = row.check
    label = f"{row.base_name}()"
    empty_all = row.empty_all_error or (
        RuntimeError,
        f"{label}: Expected reduction dim to be specified for input.numel() == 0. Specify the "
        "reduction dim with the 'dim' argument.",
    )
    identity = row.identity
    empty_reduces_all = row.empty_dims_reduce_all
    wrapped = row.wrapped_dim_in_error

    def meta(op: Any, self: Tensor, dim: Any = None, keepdim: bool = False,
             dtype: Any = None) -> None:
        if check is not None:
            check(self)
        sizes = self._sizes
        key = (dim, sizes, keepdim, empty_reduces_all)
        plan = _PLANS.get(key) if dim.__class__ is not list else None
        if plan is None:
            if not empty_reduces_all and dim is not None and len(dim) == 0:
                dims = ()
            else:
                dims = reduction_dims(dim, len(sizes))
            plan = (dims, reduced_sizes(sizes, dims, keepdim))
            if dim.__class__ is not list and len(_PLANS) < 4096:
                _PLANS[key] = plan
        if not identity:
            check_nonempty(label, self, dim, plan[0], empty_all, wrapped)
        out_dtype = rule(row, self, dtype, op.outputs[0])
        op.set_output(0, plan[1], out_dtype, self._device)

    meta.__name__ = meta.__qualname__ = row.meta_name
    return meta


def _make_impl(row: Reduction, stub: DispatchStub) -> Callable[..., None]:
    empty_reduces_all = row.empty_dims_reduce_all

    def impl(op: Any, self: Tensor, *args: Any) -> None:
        # (self, out) for all-dims schemas, else (self, dim, keepdim[, dtype], out)
        out = op.outputs[0]
        dim, keepdim = (args[0], args[1]) if len(args) > 1 else (None, False)
        if not empty_reduces_all and dim is not None and len(dim) == 0:
            dims = ()
        else:
            dims = reduction_dims(dim, len(self._sizes))
        stub(self._device.type, self, dims, keepdim, out)

    impl.__name__ = impl.__qualname__ = stub.name.removesuffix("_stub") + "_out"
    return impl


def source_array(self: Tensor, dtype: np.dtype) -> np.ndarray:
    """`self`'s values as a NumPy array of `dtype` (a view when it already has it)."""
    view = self._np
    if view is None or view.base is not self._storage.data:
        view = self._numpy()
    return view if view.dtype == dtype else dt.compute_array(view, dtype)  # complex32 too


def output_array(out: Tensor) -> np.ndarray:
    view = out._np
    if view is None or view.base is not out._storage.data:
        view = out._numpy()
    return view


# Note: summing a large contiguous float array
#     NumPy's pairwise sum along a contiguous axis runs about 2.5-3.5x slower than ATen's
#     vectorised cascade sum. Viewing the array as rows of 1024 and multiplying by a vector of
#     ones (a BLAS gemv: fused multiply-adds over whole rows) leaves one partial sum per row for
#     one pairwise reduction: about 1.5x ATen's time (benchmarks/bench_reduce.py) and the same
#     accuracy class (each partial sums 1024 terms in blocked registers). Reducing the
#     `(-1, 1024)` view along axis 0 is the second best, and what other dtypes use.
_BLOCK = 1024
_BLOCKED_MIN = 1 << 16
_ONES: dict[np.dtype, np.ndarray] = {}


def sum_all(source: np.ndarray) -> np.ndarray:
    """The sum of every element of `source` (see Note: summing a large contiguous float
    array); integers and non-contiguous arrays take NumPy's own loop."""
    if source.dtype.kind not in "fc" or not source.flags.c_contiguous:
        return np.add.reduce(source, axis=None)
    flat = source.reshape(-1)
    whole = flat.size - flat.size % _BLOCK
    ones = _ONES.get(source.dtype)
    if ones is None:
        ones = _ONES[source.dtype] = np.ones(_BLOCK, source.dtype)
    total = np.add.reduce(np.matmul(flat[:whole].reshape(-1, _BLOCK), ones))
    if whole != flat.size:
        total = total + np.add.reduce(flat[whole:])
    return total


def collapse_broadcast(view: np.ndarray, dims: tuple) -> tuple[np.ndarray, int, bool]:
    """`view` with every dim of stride 0 (and length > 1) cut to length 1; the number of
    copies of each element the reduced dims held; whether a kept dim was cut (its result is
    then broadcast into the output). See Note: reductions over broadcast dims."""
    strides = view.strides
    if 0 not in strides:
        return view, 1, False
    shape = view.shape
    index: list = [slice(None)] * view.ndim
    copies = 1
    kept_cut = False
    for d, (n, step) in enumerate(zip(shape, strides)):
        if step == 0 and n > 1:
            index[d] = slice(0, 1)
            if d in dims:
                copies *= n
            else:
                kept_cut = True
    return view[tuple(index)], copies, kept_cut


def broadcast_source(self: Tensor, dims: tuple, dtype: np.dtype) -> tuple[np.ndarray, int]:
    """`self`'s values as an array of `dtype` with every stride-0 dim cut to length 1, and
    how many copies of each element the reduced `dims` held (Note: reductions over broadcast
    dims); for kernels beside the table (std/var, logsumexp). Results computed from it have
    length 1 along a cut kept dim and broadcast into the output."""
    view = self._np
    if view is None or view.base is not self._storage.data:
        view = self._numpy()
    view, copies, _ = collapse_broadcast(view, dims)
    return (view if view.dtype == dtype else dt.compute_array(view, dtype)), copies


def _repeated(rule: str, value: Any, copies: int, acc: np.dtype) -> Any:
    """The reduction of `copies` copies from the reduction of one (Note: reductions over
    broadcast dims), in the accumulate dtype."""
    if rule == "scale":
        return np.multiply(value, np.asarray(copies, acc), dtype=acc)
    if rule == "power":
        return np.power(value, np.asarray(copies, acc if acc.kind != "b" else np.int64),
                        dtype=acc)
    return value


def cpu_loop(row: Reduction) -> Callable[[Tensor, tuple, bool, Tensor], None]:
    """The row's NumPy loop: `loop(self, dims, keepdim, out)` writes the reduction into out."""
    fn = row.fn
    dtypes = row.dtypes
    error_name = row.error_name
    ufunc = fn if isinstance(fn, np.ufunc) else None
    by_input = row.compute == "input"
    repeat = row.repeat

    def loop(self: Tensor, dims: tuple, keepdim: bool, out: Tensor) -> None:
        target = output_array(out)
        if target.size == 0:
            return  # ATen runs no kernel for an empty result: no dtype check either
        checked = self._dtype if by_input else out._dtype  # the dtype ATen dispatches on
        if checked not in dtypes:
            raise unsupported_dtype(error_name, checked)
        acc = accumulate_dtype(self._dtype if by_input else out._dtype)
        if by_input and self._dtype.is_integral:
            acc = self._dtype.numpy  # compare in the input's own integers
        if repeat and 0 in self._strides:
            view = self._np
            if view is None or view.base is not self._storage.data:
                view = self._numpy()
            whole = view.shape
            view, copies, kept_cut = collapse_broadcast(view, dims)
            if copies > 1 or kept_cut:
                source = view if view.dtype == acc else dt.compute_array(view, acc)
                if ufunc is not None:
                    value = quiet_call(ufunc.reduce, source, dims, acc, None, keepdim)
                else:
                    value = quiet_call(fn, source, dims, keepdim)
                if repeat == "index":
                    if len(dims) == len(whole) and copies > 1:  # flat index of the whole input
                        value = np.ravel_multi_index(np.unravel_index(value, view.shape), whole)
                elif copies > 1:
                    value = quiet_call(_repeated, repeat, value, copies, acc)
                quiet_call(dt.store, target, value)  # kept cut dims broadcast here
                return
        source = source_array(self, acc)
        if ufunc is np.add and len(dims) == source.ndim and source.size >= _BLOCKED_MIN:
            value = quiet_call(sum_all, source)
        elif ufunc is not None:
            if target.dtype == acc:
                if acc.kind in "iub":  # integer loops wrap silently: no FP state to set
                    ufunc.reduce(source, dims, acc, target, keepdim)
                else:
                    quiet_call(ufunc.reduce, source, dims, acc, target, keepdim)
                return
            value = quiet_call(ufunc.reduce, source, dims, acc, None, keepdim)
        else:
            value = quiet_call(fn, source, dims, keepdim)
        quiet_call(dt.store, target, value)  # complex32 targets too

    loop.__name__ = loop.__qualname__ = f"{row.base_name}_kernel"
    return loop


def run(row_meta: Callable[..., None], stub: DispatchStub, name: str, self: Tensor, dim: Any,
        keepdim: bool, dtype: Any = None, out: Tensor | None = None) -> Tensor:
    """A row run outside a structured wrapper (PyTorch declares some reductions, `prod` and
    `nansum`, as plain CPU kernels): the row's meta on a `StructuredMeta`, then its stub
    unless the tensor is on the meta device. Returns the result (`out` when given)."""
    op = StructuredMeta("functional" if out is None else "out", (out,), name, "CPU")
    row_meta(op, self, dim, keepdim, dtype)
    result = op.outputs[0]
    if self._device.type != "meta":
        stub(self._device.type, self, reduction_dims(dim, len(self._sizes)), keepdim, result)
    op.finish()
    return result
