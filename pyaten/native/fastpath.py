"""Fast paths of structured CPU wrappers: the common call without the TensorIterator plan.

Note: the structured fast path
    Most calls of a pointwise operator are the plain case: CPU tensors of one dtype, one
    shape and row-major strides (or one such tensor and a Python number). Their plan is
    known without planning: the result has the inputs' shape, row-major strides and their
    dtype (bool for a comparison), and the computation is one NumPy call. The generated
    structured wrapper for a `CPU` functional or in-place variant asks the kernel registry
    for `fast_<wrapper name>`; when there is one and tracing is off, it calls it first with
    the wrapper's arguments, and takes the general path (meta, impl, finish) when it returns
    None. A fast function returns None, touching nothing, unless every condition holds:

    - each tensor is on the CPU, row-major or "row-major ordered" (`row_major_ordered`: a
      slice of a row-major tensor, such as an LSTM gate chunk), not a wrapped number (a
      Python int or float given as the second operand is, and is accepted with a floating
      or complex tensor, whose dtype it cannot change);
    - the dtype is one the fast function was made for (never float16, bfloat16, complex32,
      which compute in a wider dtype, nor one the operator refuses);
    - the operator's DispatchStub still has the kernel it was made with for "cpu" (a
      replaced loop is honoured by the general path);
    - in place, the other operand does not share `self`'s storage (overlap rules are the
      general path's).

    What the fast function computes is what the general path computes for that case: the
    same NumPy function on the same arrays, into a new row-major output or into `self` (whose
    version it bumps, as `finish` does). `tests/test_fastpath.py` runs every fast function and
    its general path on the same inputs and compares values, dtype, strides and versions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.accel import ACCEL as _ACCEL
from pyaten.core.broadcast import _GEOMETRY, _geometry, new_row_major
from pyaten.core.device import CPU
from pyaten.core.stub import DispatchStub
from pyaten.core.tensor import Tensor
from pyaten.native.registry import native_at
from pyaten.native.structured import _QUIET, _THREAD, quiet_call

# Dtypes NumPy computes in directly (no wider compute dtype, no storage quirks).
FLOATS = frozenset({dt.float32, dt.float64})
COMPLEX = frozenset({dt.complex64, dt.complex128})
INTEGERS = frozenset({dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64})
INEXACT = FLOATS | COMPLEX
DIRECT = INEXACT | INTEGERS

# The dtypes of wrapped Python ints and floats: neither changes a floating or complex dtype.
_NUMBERS = frozenset({dt.int64, dt.float64})


def _strides_of(sizes: tuple) -> tuple:
    geometry = _GEOMETRY.get(sizes)
    if geometry is None:
        geometry = _geometry(sizes)
    return geometry[0]


# (sizes, strides) -> whether the layout is "row-major ordered" (below); a few per program.
_ORDERED: dict[tuple, bool] = {}


def row_major_ordered(sizes: tuple, strides: tuple) -> bool:
    """Whether a tensor keeps its dims in row-major order without overlap: over the dims of
    size > 1, each stride at least the extent of the dims after it (a row-major tensor, and
    its slices such as an LSTM's gate chunks or `x[::2]`). For inputs laid out so,
    TensorIterator keeps the dims' order and the result of a same-shape pointwise operator is
    row-major, as for row-major inputs; NumPy reads the strided views as they are."""
    key = (sizes, strides)
    found = _ORDERED.get(key)
    if found is None:
        extent = 1
        found = True
        for size, stride in zip(reversed(sizes), reversed(strides)):
            if size == 1:
                continue
            if stride < extent:
                found = False
                break
            extent = stride * size
        if len(_ORDERED) < 4096:
            _ORDERED[key] = found
    return found


def array(t: Any) -> np.ndarray:
    """`t._numpy()`: its cached view, the validity test inline."""
    view = t._np
    if view is None or view.base is not t._storage.data:
        view = t._numpy()
    return view


def run_quiet(fn: Callable, *args: Any, out: np.ndarray) -> None:
    """`fn(*args, out=out)` with floating-point warnings off (Note: quiet floating point)."""
    context = _THREAD.context
    if context is None or _QUIET.get():
        quiet_call(fn, *args, out=out)
    elif len(args) == 2:
        context.run(fn, args[0], args[1], out=out)
    else:
        context.run(fn, *args, out=out)


def quiet(fn: Callable, *args: Any) -> Any:
    """`fn(*args)` with floating-point warnings off: `run_quiet` for positional calls."""
    context = _THREAD.context
    if context is None or _QUIET.get():
        return quiet_call(fn, *args)
    return context.run(fn, *args)


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


# The element loops the accelerator runs itself on small contiguous inputs, giving NumPy's
# bits without its call (Note: the small-operator loops, in csrc/accel.c): the loop's code
# there, by the NumPy function or the name a fast function declares.
_UNARY_LOOPS = {"relu": 1}
_BINARY_LOOPS = {np.add: 2, np.subtract: 3, np.multiply: 4}


def unary(
    fn: Callable, stub: DispatchStub | None, dtypes: frozenset, out_dtype: Any = None,
    loop: str | None = None, small: Any = None,
) -> tuple[Callable, Callable]:
    """Fast functional and in-place functions for `fn(self)` (`out=` taking, ufunc-like);
    `stub` None for an operator without one (relu). With the accelerator, its C functions
    (Note: the accelerator), running on small contiguous float inputs the C element loop
    `loop` ("relu": `fn` must compute `maximum(0, x)`), or the inner loop of `small`: the
    NumPy ufunc `fn` runs on them (`fn` itself when it is a unary ufunc), or a function of
    the element count returning that ufunc or None (Note: the small-operator loops, in
    csrc/accel.c); these closures otherwise, the reference."""
    kernels = stub._kernels if stub is not None else {}
    kernel = kernels.get("cpu")
    dtypes = dtypes & DIRECT
    if _ACCEL is not None:
        if small is None and isinstance(fn, np.ufunc) and fn.nin == 1 and out_dtype is None:
            small = fn
        return _ACCEL.unary(fn, None if stub is None else kernels, kernel, frozenset(dtypes),
                            out_dtype, _name(fn), _UNARY_LOOPS[loop] if loop else 0, small)
    return unary_reference(fn, kernels, kernel, dtypes, out_dtype)


def unary_reference(
    fn: Callable, kernels: dict, kernel: Any, dtypes: frozenset, out_dtype: Any
) -> tuple[Callable, Callable]:
    """`unary`'s pure-Python functions (the reference of the accelerator's)."""

    def functional(self: Any) -> Any:
        dtype = self._dtype
        if dtype not in dtypes or self._device is not CPU or kernels.get("cpu") is not kernel:
            return None
        sizes = self._sizes
        if self._strides != _strides_of(sizes) and not row_major_ordered(sizes, self._strides):
            return None
        x = self._np
        if x is None or x.base is not self._storage.data:
            x = self._numpy()
        out = new_row_major(sizes, dtype if out_dtype is None else out_dtype, CPU)
        # run_quiet, inline (this is the whole point of the fast path)
        context = _THREAD.context
        if context is None or _QUIET.get():
            quiet_call(fn, x, out=out._np)
        else:
            context.run(fn, x, out=out._np)
        return out

    def inplace(self: Any) -> Any:
        dtype = self._dtype
        if (dtype not in dtypes or out_dtype is not None or self._device is not CPU
                or kernels.get("cpu") is not kernel):
            return None
        if (self._strides != _strides_of(self._sizes)
                and not row_major_ordered(self._sizes, self._strides)):
            return None
        x = array(self)
        run_quiet(fn, x, out=x)
        self._version_counter.value += 1
        return self

    return functional, inplace


def binary(
    fn: Callable, stub: DispatchStub, dtypes: frozenset, out_dtype: Any = None,
    alpha: bool = False,
) -> tuple[Callable, Callable]:
    """Fast functional and in-place functions for `fn(self, other)`; with `alpha`, for
    `fn(self, other, alpha)` taking the plain operation when alpha is the int 1 (add, sub).
    With the accelerator, its C functions (Note: the accelerator); these closures otherwise."""
    kernels = stub._kernels
    kernel = kernels.get("cpu")
    dtypes = dtypes & DIRECT
    numbers = dtypes & (FLOATS | COMPLEX)  # a Python number never changes these dtypes
    if _ACCEL is not None:
        loop = _BINARY_LOOPS.get(fn, 0) if out_dtype is None else 0
        return _ACCEL.binary(fn, kernels, kernel, frozenset(dtypes), frozenset(numbers),
                             _NUMBERS, out_dtype, alpha, _name(fn), loop)
    functional, inplace = binary_reference(fn, kernels, kernel, dtypes, out_dtype)
    if alpha:
        return _alpha_one(functional), _alpha_one(inplace)
    return functional, inplace


def _alpha_one(fast: Callable) -> Callable:
    def with_alpha(self: Any, other: Any, alpha: Any) -> Any:
        # alpha 1 (an int, not True): the plain operation; any other alpha is checked and
        # scaled by the general path.
        return fast(self, other) if alpha.__class__ is int and alpha == 1 else None

    return with_alpha


def binary_reference(
    fn: Callable, kernels: dict, kernel: Any, dtypes: frozenset, out_dtype: Any
) -> tuple[Callable, Callable]:
    """`binary`'s pure-Python functions (the reference of the accelerator's)."""
    numbers = dtypes & (FLOATS | COMPLEX)

    def operands(self: Any, other: Any) -> tuple | None:
        dtype = self._dtype
        if other.__class__ is not Tensor and not isinstance(other, Tensor):
            return None  # a Scalar argument of the schema: the general path
        if (dtype not in dtypes or self._device is not CPU or self._wrapped_number
                or kernels.get("cpu") is not kernel):
            return None
        sizes = self._sizes
        strides = self._strides
        if strides != _strides_of(sizes) and not row_major_ordered(sizes, strides):
            return None
        if other._wrapped_number:
            if dtype not in numbers or other._dtype not in _NUMBERS:
                return None  # (a bool number: sub refuses it; let the general path decide)
            # A Python number: NumPy casts it to the array's dtype, as the general path does.
            return array(self), array(other).item()
        if other._dtype is not dtype or other._device is not CPU or other._sizes != sizes:
            return None
        if other._strides != strides and not row_major_ordered(sizes, other._strides):
            return None
        return array(self), array(other)

    def functional(self: Any, other: Any) -> Any:
        arrays = operands(self, other)
        if arrays is None:
            return None
        out = new_row_major(self._sizes, self._dtype if out_dtype is None else out_dtype, CPU)
        context = _THREAD.context  # run_quiet, inline
        if context is None or _QUIET.get():
            quiet_call(fn, arrays[0], arrays[1], out=out._np)
        else:
            context.run(fn, arrays[0], arrays[1], out=out._np)
        return out

    def inplace(self: Any, other: Any) -> Any:
        if out_dtype is not None or not isinstance(other, Tensor):
            return None  # (a Scalar argument: the general path)
        if other._storage is self._storage and other is not self:
            return None
        arrays = operands(self, other)
        if arrays is None:
            return None
        x = arrays[0]
        run_quiet(fn, x, arrays[1], out=x)
        self._version_counter.value += 1
        return self

    return functional, inplace


def with_scalars(
    fn: Callable, stub: DispatchStub, dtypes: frozenset, tensors: int
) -> tuple[Callable, Callable]:
    """Fast functional and in-place functions for `fn(t1, ..., tk, *numbers, out=)`: the
    first `tensors` arguments tensors of one dtype, shape and row-major strides, the rest
    Python numbers passed through (lerp's weight, addcmul's value)."""
    kernels = stub._kernels
    kernel = kernels.get("cpu")
    dtypes = dtypes & DIRECT

    def arrays(args: tuple) -> list | None:
        self = args[0]
        dtype = self._dtype
        if dtype not in dtypes or self._device is not CPU or kernels.get("cpu") is not kernel:
            return None
        sizes, strides = self._sizes, self._strides
        if strides != _strides_of(sizes):
            return None
        found = []
        for t in args[:tensors]:
            if (not isinstance(t, Tensor) or t._dtype is not dtype or t._device is not CPU
                    or t._sizes != sizes or t._strides != strides or t._wrapped_number):
                return None
            found.append(array(t))
        for number in args[tensors:]:
            if number.__class__ is not int and number.__class__ is not float:
                return None
            found.append(number)
        return found

    def functional(*args: Any) -> Any:
        found = arrays(args)
        if found is None:
            return None
        out = new_row_major(args[0]._sizes, args[0]._dtype, CPU)
        run_quiet(fn, *found, out=out._np)
        return out

    def inplace(*args: Any) -> Any:
        self = args[0]
        for t in args[1:tensors]:
            if t._storage is self._storage and t is not self:
                return None  # a partial overlap, maybe: the general path's rules
        found = arrays(args)
        if found is None:
            return None
        run_quiet(fn, *found, out=found[0])
        self._version_counter.value += 1
        return self

    return functional, inplace


# The accelerator's helpers replace these three (Note: the accelerator); the Python ones stay
# the reference.
array_reference, run_quiet_reference, quiet_reference = array, run_quiet, quiet
if _ACCEL is not None:
    _ACCEL.setup_quiet(row_major_ordered, quiet_call, _THREAD, _QUIET)
    array = _ACCEL.array  # noqa: F811
    run_quiet = quiet = _ACCEL.quiet  # noqa: F811 - `quiet(fn, *args, out=out)` is run_quiet


# operator name ("add.Tensor", "add_.Tensor") -> its fast function: for tests and tools.
REGISTERED: dict[str, Callable] = {}


def register(name: str, functional: Callable | None, inplace: Callable | None, site: str) -> None:
    """Register the fast functions of the CPU wrappers of `name` (`"add.Tensor"`): the
    functional variant's and the in-place one's (`add_.Tensor`)."""
    base, dot, overload = name.partition(".")
    suffix = f"_{overload}" if overload else ""
    if functional is not None:
        native_at(f"fast_wrapper_CPU_{base}{suffix}", functional, site)
        REGISTERED[name] = functional
    if inplace is not None:
        native_at(f"fast_wrapper_CPU_{base}_{suffix}", inplace, site)
        REGISTERED[f"{base}_{dot}{overload}"] = inplace
