"""Pointwise operator families: one row per operator, its meta, stub and impl made from it.

Note: why a table and not `ufunc_inner_loop`
    PyTorch's `ufunc_inner_loop` key names C++ loop templates per dtype class (`Generic`,
    `ScalarOnly`, `Vectorized`); what it says is how to generate vectorised loops, not which
    dtypes an operator accepts or how its result dtype is chosen. pyaten's loops are NumPy
    calls, so the key would carry nothing we use. What an operator needs from us is exactly
    one row: the array function, the dtypes PyTorch's `AT_DISPATCH` accepts, the
    `TensorIterator` build (PyTorch's `build_borrowing_*_op`) that fixes broadcasting and the
    result dtype, and any error PyTorch raises before computing. The row sits in its family
    module beside the operators like it (`unary.py`, `binary.py`, ...), and `register` turns
    it into the three things the structured wrappers of the YAML look for:

    - `meta_<name>[_<overload>]`: the row's checks, then its build on `TensorIteratorMeta`;
    - the `<name>_stub` DispatchStub with a `cpu` kernel: the dtype check, then the array
      function in the compute dtype (float16/bfloat16 computed in float32, rounded on write);
    - `<name>_out` (the YAML's `CPU:` kernel name): calls the stub for the output's device.

    A plug-in device registers its own loop on the stub and reuses the meta and impl.
    An operator that needs more than a row keeps hand-written functions beside the table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.promotion import can_cast
from pyaten.core.stub import DispatchStub
from pyaten.dispatch import trace as _trace
from pyaten.native import fastpath
from pyaten.native.registry import native_at
from pyaten.native.runtime import Tensor
from pyaten.native.structured import COMPLEX32_LOOPS, TensorIteratorMeta, quiet_call

# --- dtype groups: PyTorch's AT_DISPATCH_* sets -----------------------------------------------

INTEGRAL = frozenset({dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64})
FLOATING = frozenset({dt.float32, dt.float64})
COMPLEX = frozenset({dt.complex64, dt.complex128})
REDUCED = frozenset({dt.float16, dt.bfloat16})  # computed in float32, rounded on write
ALL = INTEGRAL | FLOATING  # AT_DISPATCH_ALL_TYPES: integers and float/double


def dtypes_and(group: Iterable[dt.dtype], *extra: dt.dtype) -> frozenset[dt.dtype]:
    """`AT_DISPATCH_<group>_AND<n>(extra...)`: a group plus some single dtypes."""
    return frozenset(group) | frozenset(extra)


FLOATING_AND_REDUCED = FLOATING | REDUCED
FLOATING_COMPLEX_AND_REDUCED = FLOATING | COMPLEX | REDUCED
ALL_AND_REDUCED = ALL | REDUCED
ALL_AND_REDUCED_BOOL = ALL | REDUCED | {dt.bool}
EVERY = ALL | COMPLEX | REDUCED | {dt.bool}  # AT_DISPATCH_V2(..., AT_EXPAND(ALL), bool, half...)


# --- builds: how the TensorIterator of a row is configured (PyTorch's build_*_op) ------------


def same(op: TensorIteratorMeta, tensors: tuple[Tensor, ...]) -> None:
    """Result in the inputs' common dtype (`build_borrowing_unary_op`/`binary_op`)."""
    if len(tensors) == 1:
        op.build_unary_op(tensors[0])
    elif len(tensors) == 2:
        op.build_binary_op(tensors[0], tensors[1])
    else:
        op.build(tensors)


def to_float(op: TensorIteratorMeta, tensors: tuple[Tensor, ...]) -> None:
    """Integer and bool inputs promote to the default float dtype (`*_float_op`)."""
    if len(tensors) == 1:
        op.build_unary_float_op(tensors[0])
    elif len(tensors) == 2:
        op.build_binary_float_op(tensors[0], tensors[1])
    else:
        op.build(tensors, promote_integer_inputs_to_float=True)


def to_bool(op: TensorIteratorMeta, tensors: tuple[Tensor, ...]) -> None:
    """A bool result computed in the inputs' common dtype (`comparison_op`, `force_boolean`)."""
    if len(tensors) == 2:
        op.build_comparison_op(tensors[0], tensors[1])
    else:
        op.build(tensors, output_dtype=dt.bool, enforce_safe_casting_to_output=False)


def exact(op: TensorIteratorMeta, tensors: tuple[Tensor, ...]) -> None:
    """Like `same`, but a given output must already have the first input's dtype (PyTorch's
    default `TensorIteratorConfig`, `check_all_same_dtype`: `lerp`)."""
    out = op.maybe_get_output()
    expected = tensors[0].dtype
    if out is not None and out.dtype is not expected:
        raise RuntimeError(
            f"Found dtype {out.dtype.scalar_name} but expected {expected.scalar_name}"
        )
    same(op, tensors)


BUILDS: dict[str, Callable[[TensorIteratorMeta, tuple[Tensor, ...]], None]] = {
    "same": same,
    "float": to_float,
    "bool": to_bool,
    "exact": exact,
}


def complex_to_real(op: TensorIteratorMeta, tensors: tuple[Tensor, ...]) -> None:
    """A complex input gives a new output of its real dtype (`abs`:
    `unary_op_impl_with_complex_to_float_out`); an `out=` may be real or complex. Other
    dtypes build as `same`."""
    (self,) = tensors
    out = op.maybe_get_output()
    if not self.dtype.is_complex or (out is not None and out.dtype.is_complex):
        op.build_unary_op(self)
        return
    real = self.dtype.to_real()
    if out is not None and not can_cast(real, out.dtype):
        raise RuntimeError(
            f"result type {real.scalar_name} can't be cast to the desired output type "
            f"{out.dtype.scalar_name}"
        )
    op.build(tensors, output_dtype=real, enforce_safe_casting_to_output=False)


BUILDS["complex_to_real"] = complex_to_real


# --- the row --------------------------------------------------------------------------------


class RowNames:
    """What a family row (`Pointwise` here, `reduction.Reduction`) is registered as, from its
    `name` with overload (`"lerp.Scalar"`) and its optional `impl` and `dispatch_name`."""

    name: str
    impl: str | None
    dispatch_name: str | None
    site: str

    def __post_init__(self) -> None:
        # The row's own line in its table (the nearest module-level frame up the stack, also
        # through helpers that build rows): what `pyaten explain` prints for meta and impl.
        if not self.site:
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_name != "<module>":
                frame = frame.f_back
            if frame is not None:
                where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
                object.__setattr__(self, "site", where)

    @property
    def base_name(self) -> str:
        return self.name.partition(".")[0]

    @property
    def meta_name(self) -> str:
        base, _, overload = self.name.partition(".")
        return f"meta_{base}_{overload}" if overload else f"meta_{base}"

    @property
    def impl_name(self) -> str:
        return self.impl or f"{self.base_name}_out"

    @property
    def error_name(self) -> str:
        return self.dispatch_name or f"{self.base_name}_cpu"


@dataclass(frozen=True)
class Pointwise(RowNames):
    """One pointwise operator of a family table.

    - `name`: the functional name, with `.overload` when the group's functional has one
      (`"add.Tensor"`); the meta is `meta_<name>_<overload>`, the stub `<name>_stub`.
    - `fn`: the array function. It is called with the operator's arguments in schema order,
      tensors replaced by NumPy arrays in the compute dtype, other arguments as given; a
      NumPy ufunc with only tensor arguments writes straight into the output.
    - `dtypes`: the compute dtypes PyTorch's `AT_DISPATCH` accepts; another raises
      `"<dispatch_name>" not implemented for '<Dtype>'` (`NotImplementedError`).
    - `build`: `"same"`, `"float"`, `"bool"` or `"complex_to_real"` (see BUILDS):
      broadcasting and result dtype.
    - `check`: called as `check(*arguments)` before the build, for the errors PyTorch raises
      in its meta function (bool or complex inputs refused, argument ranges).
    - `impl`: the YAML's `CPU:` kernel name (default `<name>_out`).
    - `dispatch_name`: the name in the dtype error (default `<name>_cpu`).
    - `stub`: the DispatchStub's name (default `<name>_stub`), for two rows of one name
      (`lerp.Scalar`, `lerp.Tensor`) or PyTorch's own stub name.
    - `upcast`: False to hand float16/bfloat16 arrays to `fn` in their own dtype rather than
      in float32 (`nextafter`, whose answer depends on the dtype's spacing).
    """

    name: str
    fn: Callable[..., Any]
    dtypes: frozenset[dt.dtype]
    build: str = "same"
    check: Callable[..., None] | None = None
    impl: str | None = None
    dispatch_name: str | None = None
    site: str = field(default="", compare=False)
    stub: str | None = None
    upcast: bool = True
    # `takes_out`: `fn` accepts `out=` as a ufunc does, so its result lands in the output
    # without a copy (`fn(*arguments, out=array)`). `meta_check`: called as
    # `meta_check(op, *arguments)` before the build, for checks that read the caller's output
    # (`op.maybe_get_output()`, `op.kind`), such as signbit's bool-only `out=`.
    takes_out: bool = False
    meta_check: Callable[..., None] | None = None

    @property
    def stub_name(self) -> str:
        return self.stub or f"{self.base_name}_stub"


_SAME_SIZE_INT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}

# Below this many elements np.where is as fast (its per-element branch costs on large,
# unpredictable masks: 8 ms for 8M float32 against 1.3 ms for the bit masks).
SELECT_MIN_ELEMENTS = 4096


def select(condition: np.ndarray, a: Any, b: Any) -> np.ndarray:
    """`np.where(condition, a, b)` for real numeric operands of one dtype, bit for bit (NaNs,
    infinities and signed zeros of the chosen operand kept), computed with integer masks."""
    a, b = np.asarray(a), np.asarray(b)
    kind = _SAME_SIZE_INT.get(a.dtype.itemsize)
    if (kind is None or a.dtype != b.dtype or a.dtype.kind in "bc"
            or condition.size < SELECT_MIN_ELEMENTS):
        return np.where(condition, a, b)
    mask = condition.astype(kind)
    np.negative(mask, out=mask)  # all bits set where `condition`
    result = np.bitwise_and(a.view(kind), mask)
    if b.ndim or b.view(kind) != 0:  # (0-d b of all-zero bits: nothing to add)
        np.invert(mask, out=mask)
        result = np.bitwise_or(result, np.bitwise_and(b.view(kind), mask))
    return result.view(a.dtype)


def unsupported_dtype(op_name: str, dtype: dt.dtype) -> NotImplementedError:
    """PyTorch's AT_DISPATCH error for a dtype its switch has no case for."""
    return NotImplementedError(f'"{op_name}" not implemented for \'{dtype.scalar_name}\'')


def caller_site(depth: int) -> str:
    """`file:line` of the frame `depth` calls up: where a family's `register(...)` was called."""
    frame = sys._getframe(depth)
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def register_row(
    row: RowNames, meta: Callable[..., None], impl: Callable[..., Any], site: str
) -> None:
    """Register a row's meta and impl under the names the structured wrappers look up, with
    the row's own line, else `site`, as their site (what `pyaten explain` and `codegen show`
    print)."""
    native_at(row.meta_name, meta, row.site or site)
    native_at(row.impl_name, impl, row.site or site)


def register(*rows: Pointwise) -> dict[str, DispatchStub]:
    """Make each row's meta, stub (with its `cpu` loop) and impl; return the stubs by name."""
    site = caller_site(2)
    stubs = {}
    for row in rows:
        stub = DispatchStub(row.stub_name)
        stub.register("cpu", _cpu_loop(row))
        register_row(row, _meta(row), _impl(stub), site)
        _register_fast(row, stub, site)
        stubs[stub.name] = stub
        ROWS[row.name] = row
        if dt.complex32 in row.dtypes:
            COMPLEX32_LOOPS.add(row.base_name)
    return stubs


_FAST_BUILDS = {"same": None, "float": None, "bool": dt.bool}


def _register_fast(row: Pointwise, stub: DispatchStub, site: str) -> None:
    """The row's fast CPU functions (Note: the structured fast path), for a NumPy ufunc of
    one or two tensors with a plain build; its `check` runs first, as in its meta."""
    fn = row.fn
    if (not isinstance(fn, np.ufunc) or fn.nin not in (1, 2) or row.meta_check is not None
            or row.build not in _FAST_BUILDS or row.name.endswith(".out") or not row.upcast):
        return
    out_dtype = _FAST_BUILDS[row.build]
    dtypes = row.dtypes if row.build != "float" else row.dtypes - fastpath.INTEGERS
    make = fastpath.unary if fn.nin == 1 else fastpath.binary
    functional, inplace = make(fn, stub, dtypes, out_dtype)
    check = row.check
    if check is not None:
        functional, inplace = _checked(check, functional), _checked(check, inplace)
    fastpath.register(row.name, functional, inplace, row.site or site)


def _checked(check: Callable[..., None], fast: Callable[..., Any]) -> Callable[..., Any]:
    def checked(*args: Any) -> Any:
        check(*args)
        return fast(*args)

    return checked


# Every registered row by name (`"hypot"`, `"lerp.Scalar"`): for tests and introspection.
ROWS: dict[str, Pointwise] = {}


_UNARY_BUILDS = {
    "same": TensorIteratorMeta.build_unary_op,
    "float": TensorIteratorMeta.build_unary_float_op,
}


def _meta(row: Pointwise) -> Callable[..., None]:
    build = BUILDS[row.build]
    check = row.check
    meta_check = row.meta_check
    # A one-argument operator (`exp(self)`) goes to its unary build directly: the same call
    # `same`/`to_float` make, without collecting the tensors (~0.5 us of a 4x4 call).
    unary_build = _UNARY_BUILDS.get(row.build)

    def meta(op: TensorIteratorMeta, *args: Any) -> None:
        if check is not None:
            check(*args)
        if meta_check is not None:
            meta_check(op, *args)
        if unary_build is not None and len(args) == 1:
            unary_build(op, args[0])
            return
        tensors = tuple(a for a in args if isinstance(a, Tensor))
        build(op, tensors)

    meta.__name__ = meta.__qualname__ = row.meta_name
    return meta


def _impl(stub: DispatchStub) -> Callable[..., None]:
    kernel_for = stub.kernel

    def impl(op: TensorIteratorMeta, *args: Any) -> None:
        # The stub's kernel called directly unless tracing (which records the stub hop);
        # an unknown device goes through the stub for its error.
        kernel = kernel_for(op.device.type)
        if kernel is None or _trace.ACTIVE:
            stub(op.device.type, op, args[:-1])
        else:
            kernel(op, args[:-1])

    impl.__name__ = impl.__qualname__ = stub.name.removesuffix("_stub") + "_out"
    return impl


def _cpu_loop(row: Pointwise) -> Callable[[TensorIteratorMeta, tuple], None]:
    fn = row.fn
    dtypes = row.dtypes
    error_name = row.error_name
    writes_directly = isinstance(fn, np.ufunc) or row.takes_out
    takes_out = row.takes_out
    upcast = row.upcast

    def loop(op: TensorIteratorMeta, args: tuple) -> None:
        common = op.common_dtype
        if common not in dtypes:
            raise unsupported_dtype(error_name, common)
        arrays = op.input_arrays() if upcast else op.input_arrays(common.numpy)
        if len(arrays) == len(args):
            if writes_directly:
                op.compute(fn, *arrays)
                return
            op.write(quiet_call(fn, *arrays))
            return
        # Non-tensor arguments (scalars, options) keep their schema positions.
        it = iter(arrays)
        call = [next(it) if isinstance(a, Tensor) else a for a in args]
        if takes_out:
            op.compute(fn, *call)
            return
        op.write(quiet_call(fn, *call))

    loop.__name__ = loop.__qualname__ = f"{row.base_name}_kernel"
    return loop

