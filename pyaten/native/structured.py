"""Runtime of structured kernels: the object a generated wrapper hands to `meta` and `impl`.

See Note: structured wrappers in `pyaten.codegen.gen_native`. A wrapper creates
`StructuredMeta(kind, preset_outputs, op_name, key)`; `meta` calls `set_output(...)` (or, for
`structured_inherits: TensorIteratorBase`, one of the `build_*_op` helpers of
`TensorIteratorMeta`) and `impl` computes into `op.outputs`. `finish()` copies proxies back.

What `set_output` means per wrapper kind:
- functional: allocate a new tensor with the sizes, strides and dtype meta asked for;
- inplace: `self` must already have those sizes and dtype; meta's strides differing from
  self's make a proxy that is copied back after `impl`;
- out: `out` must have the dtype and device; it is resized (PyTorch's deprecation warning
  when it had elements) and, when meta asked strides `out` lacks, a proxy is used.
"""

from __future__ import annotations

import contextvars
import threading
import warnings
from typing import Any

import numpy as np

from pyaten.core import dtypes as _dtypes
from pyaten.core.broadcast import infer_sizes, new_row_major, row_major_plan
from pyaten.core.iterator import TensorIteratorConfig
from pyaten.core.views import contiguous_strides, empty_tensor, resize_tensor_
from pyaten.dispatch import trace as _trace
from pyaten.native.runtime import Tensor

KINDS = ("functional", "inplace", "out")


def _shape_text(sizes: tuple) -> str:
    return "[" + ", ".join(str(s) for s in sizes) + "]"


def resize_output(out: Tensor, sizes: tuple, op_name: str) -> bool:
    """Resize `out` to `sizes` as PyTorch's resize_output does; True if it changed shape."""
    if tuple(out._sizes) == tuple(sizes):
        return False
    numel = 1
    for s in out._sizes:
        numel *= s
    if numel != 0:
        warnings.warn(
            f"An output with one or more elements was resized since it had shape "
            f"{_shape_text(out._sizes)}, which does not match the required output shape "
            f"{_shape_text(sizes)}. This behavior is deprecated, and in a future PyTorch "
            "release outputs will not be resized unless they have zero elements. You can "
            "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
            "t.resize_(0).",
            UserWarning,
            stacklevel=6,
        )
    resize_tensor_(out, tuple(sizes))
    return True


class StructuredMeta:
    """State shared by a structured op's `meta` and `impl` for one call."""

    __slots__ = ("kind", "outputs", "op_name", "key", "proxies", "decisions")

    def __init__(self, kind: str, preset: tuple, op_name: str, key: str) -> None:
        self.kind = kind
        self.outputs: list[Any] = list(preset)
        self.op_name = op_name
        self.key = key
        self.proxies: list[tuple[int, Tensor]] | None = None
        self.decisions: dict[str, Any] | None = None

    def maybe_get_output(self, index: int = 0) -> Tensor | None:
        """The output the caller supplied (`self` for in-place, `out`), or None (functional)."""
        return self.outputs[index]

    def set_output(
        self,
        index: int,
        sizes: tuple,
        dtype: _dtypes.dtype,
        device: Any,
        strides: tuple | None = None,
    ) -> Tensor:
        """Set output `index` as the wrapper kind says (see the module docstring)."""
        sizes = tuple(sizes)
        if self.kind == "functional":
            # Contiguous outputs come with their NumPy view built (the impl writes through it).
            result = (
                new_row_major(sizes, dtype, device)
                if strides is None
                else empty_tensor(sizes, dtype, device, strides)
            )
            self.outputs[index] = result
            action = "allocated"
        elif self.kind == "inplace":
            target = self.outputs[index]
            if target._dtype is not dtype:
                raise RuntimeError(
                    f"{self.op_name}: Bad in-place call: input tensor dtype "
                    f"{target._dtype.cpp_name} and output tensor dtype {dtype.cpp_name} "
                    "should match"
                )
            if tuple(target._sizes) != sizes:
                raise RuntimeError(
                    f"{self.op_name}: Bad in-place call: input tensor size "
                    f"{_shape_text(target._sizes)} and output tensor size {_shape_text(sizes)} "
                    "should match"
                )
            action = "checked in place"
            self._maybe_proxy(index, target, sizes, strides)
        else:
            target = self.outputs[index]
            if target._dtype is not dtype:
                raise RuntimeError(
                    f"Expected out tensor to have dtype {dtype.cpp_name}, but got "
                    f"{target._dtype.cpp_name} instead"
                )
            if target._device != device:
                raise RuntimeError(
                    f"Expected out tensor to have device {device}, but got {target._device} "
                    "instead"
                )
            resized = resize_output(target, sizes, self.op_name)
            action = "resized" if resized else "reused"
            if resized and strides is not None:
                resize_tensor_(target, sizes, strides)
            self._maybe_proxy(index, target, sizes, strides)
        if _trace.ACTIVE:
            _trace.note(
                "structured.meta",
                wrapper=self.kind,
                output=index,
                sizes=list(sizes),
                dtype=str(dtype),
                action=action,
                proxy=bool(self.proxies),
                **(self.decisions or {}),
            )
        return self.outputs[index]

    def _maybe_proxy(self, index: int, target: Tensor, sizes: tuple, strides: tuple | None):
        if strides is None or tuple(target._strides) == tuple(strides):
            return
        proxy = empty_tensor(sizes, target._dtype, target._device, strides)
        if self.proxies is None:
            self.proxies = []
        self.proxies.append((index, target))
        self.outputs[index] = proxy

    def note_impl(self, impl_name: str) -> None:
        _trace.note("structured.impl", wrapper=self.kind, impl=impl_name, key=self.key)

    def finish(self) -> None:
        """After `impl`: copy proxies back into the tensors the caller gave; a written
        `self`/`out` gets a new version (autograd checks saved tensors against it)."""
        if self.kind != "functional":
            for t in self.outputs:
                t._version_counter.value += 1
        if self.proxies is None:
            return
        for index, target in self.proxies:
            proxy = self.outputs[index]
            data = target._storage.data
            if type(data) is np.ndarray:
                np.copyto(target._numpy(), proxy._numpy(), casting="unsafe")
            elif data is not None:  # a plug-in device's own memory: its copy kernel
                from pyaten.native.ops_handles import aten_ops

                aten_ops().copy_.default(target, proxy, False)
            self.outputs[index] = target


# A new row-major output with its NumPy view built (kernels/reduce.py imports this name).
_new_output = new_row_major


def broadcast_shapes(op_name: str, *shapes: tuple) -> tuple:
    """Broadcast sizes with PyTorch's error text: core's `infer_sizes` (`op_name` is taken for
    the callers that pass it; the message does not name the op, as PyTorch's does not)."""
    return infer_sizes(*shapes)


# ---- floating-point errors: silent, as in PyTorch --------------------------------------------
#
# Note: quiet floating point
#     PyTorch gives inf/nan silently where NumPy warns ("overflow encountered in add"), so every
#     floating-point kernel runs with NumPy's error state at "ignore". `np.errstate` per call
#     costs ~1 us, the size of a whole small op. NumPy (>= 2) keeps its error state in a context
#     variable, so the state can live in a `contextvars.Context` made once per thread, in which
#     `np.seterr(all="ignore")` was called; `Context.run(fn, ...)` runs a kernel in it at almost
#     no cost. Inside, other context variables read as they were when the thread's context was
#     made (pyaten keeps none; NumPy's print options are one), and a nested call runs directly
#     (the `_QUIET` flag says the context is entered). NumPy 1.x keeps the state per thread, not
#     per context: there `quiet_call` enters `np.errstate` each call.
#     Measured (benchmarks/bench_ops.py rows add, sigmoid; `compute` alone A/B): no slower than
#     setting NumPy's private error-state variable directly, which this replaced.

_QUIET = contextvars.ContextVar("pyaten_quiet_floating_point", default=False)


class _QuietThread(threading.local):
    context: contextvars.Context | None = None  # this thread's quiet context, made on first use


_THREAD = _QuietThread()
_CONTEXT_ERRSTATE = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _enter_quiet() -> contextvars.Context:
    np.seterr(all="ignore")
    _QUIET.set(True)
    return contextvars.copy_context()


def quiet_call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` with NumPy's floating-point warnings off (PyTorch gives inf/nan
    silently). See Note: quiet floating point."""
    context = _THREAD.context
    if context is None:
        if not _CONTEXT_ERRSTATE:
            with np.errstate(all="ignore"):
                return fn(*args, **kwargs)
        context = _THREAD.context = contextvars.copy_context().run(_enter_quiet)
    if _QUIET.get():
        return fn(*args, **kwargs)  # already inside: a context is entered once at a time
    # Spelled out by arity: `run(fn, *args)` costs ~0.25 us more than `run(fn, a, b)`.
    if kwargs:
        return context.run(fn, *args, **kwargs)
    n = len(args)
    if n == 1:
        return context.run(fn, args[0])
    if n == 2:
        return context.run(fn, args[0], args[1])
    return context.run(fn, *args)


_COMPUTE_UPCAST = {"float16": np.float32, "bfloat16": np.float32, "complex32": np.complex64}

_COMPLEX32 = _dtypes.complex32
# Operators whose CPU loops compute complex32 (PyTorch's AT_DISPATCH lists kComplexHalf for
# them); any other loop raises PyTorch's "not implemented for 'ComplexHalf'" when it reads its
# inputs (see Note: complex32 in NumPy in pyaten.core.dtypes). A family row that lists
# complex32 in its dtypes is added by `family.register`.
COMPLEX32_LOOPS = {"add", "sub", "mul", "rsub", "eq", "ne"}


class TensorIteratorMeta(StructuredMeta):
    """Structured meta for ops with `structured_inherits: TensorIteratorBase`: elementwise
    broadcasting, type promotion and output checks, then NumPy views for `impl`."""

    __slots__ = ("inputs", "common_dtype", "shape", "device", "_direct")

    def __init__(self, kind: str, preset: tuple, op_name: str, key: str) -> None:
        # Written out rather than calling the base __init__: this runs on every op call.
        self.kind = kind
        self.outputs = list(preset)
        self.op_name = op_name
        self.key = key
        self.proxies = None
        self.decisions = None
        self.inputs: tuple[Tensor, ...] = ()
        self.common_dtype: _dtypes.dtype | None = None
        self.shape: tuple = ()
        self.device: Any = None
        self._direct = False  # inputs are already arrays of the compute dtype

    def build(
        self,
        inputs: tuple[Tensor, ...],
        *,
        promote_integer_inputs_to_float: bool = False,
        output_dtype: _dtypes.dtype | None = None,
        check_all_same_dtype: bool = False,
        enforce_safe_casting_to_output: bool = True,
    ) -> None:
        """Broadcast `inputs`, compute the common dtype and set output 0.

        The decisions (shape, dtypes, output strides following the inputs' layout, overlap,
        in-place and safe-cast checks with PyTorch's messages) are core's TensorIterator's, run
        in planning mode; the output itself is set through `set_output`, so the wrapper kind
        decides whether it is allocated, checked or resized. `output_dtype` fixes the dtype
        of a new output (bool for comparisons).
        """
        self.inputs = inputs
        out = self.outputs[0]
        if not _trace.ACTIVE and (not check_all_same_dtype or len(inputs) == 1):
            if out is None:
                if self._shortcut(inputs, promote_integer_inputs_to_float, output_dtype):
                    return
            elif out is inputs[0] and output_dtype is None and self._shortcut_inplace(
                inputs, promote_integer_inputs_to_float
            ):
                return
        config = TensorIteratorConfig().add_output(out)
        for t in inputs:
            config.add_input(t)
        if check_all_same_dtype:
            config.check_all_same_dtype(True)
        else:
            config.allow_cpu_scalars(True).promote_inputs_to_common_dtype(True)
            if output_dtype is None:
                config.cast_common_dtype_to_outputs(True)
                config.enforce_safe_casting_to_output(enforce_safe_casting_to_output)
            elif out is None:
                config.declare_static_dtype(output_dtype)
        if promote_integer_inputs_to_float:
            config.promote_integer_inputs_to_float(True)
        plan = config.metadata_only(True).build()
        common = plan.common_dtype if plan.common_dtype is not None else inputs[0]._dtype
        self.common_dtype = common
        self.shape = tuple(plan.shape)
        self.device = plan.device
        if _trace.ACTIVE:
            self.decisions = {"broadcast_shape": list(plan.shape), "common_dtype": str(common)}
        strides = plan.output_strides  # for new outputs; None = contiguous
        if strides is not None and tuple(strides) == contiguous_strides(self.shape):
            strides = None
        self.set_output(0, self.shape, plan.output_dtypes[0], plan.device, strides)

    def _shortcut(
        self, inputs: tuple, promote_to_float: bool, output_dtype: _dtypes.dtype | None
    ) -> bool:
        """A new output by core's row-major shortcut (Note: the row-major shortcut, in
        `pyaten.core.broadcast`); True if it applied."""
        plan = row_major_plan(inputs, promote_to_float)
        if plan is None:
            return False
        shape, dtype, self._direct = plan
        self.common_dtype = dtype
        self.shape = shape
        device = self.device = inputs[0]._device
        self.outputs[0] = new_row_major(
            shape, output_dtype if output_dtype is not None else dtype, device
        )
        return True

    def _shortcut_inplace(self, inputs: tuple, promote_to_float: bool) -> bool:
        """`a.op_(b)` by the same shortcut: nothing to check or allocate. True if it applied."""
        plan = row_major_plan(inputs, promote_to_float, True)
        if plan is None:
            return False
        self.shape, self.common_dtype, self._direct = plan
        self.device = inputs[0]._device
        return True

    def build_binary_op(self, a: Tensor, b: Tensor) -> None:
        if not _trace.ACTIVE:  # the two common cases of `build`, tested here directly
            out = self.outputs[0]
            inputs = self.inputs = (a, b)
            if out is None:
                if self._shortcut(inputs, False, None):
                    return
            elif out is a and self._shortcut_inplace(inputs, False):
                return
        self.build((a, b))

    def build_binary_float_op(self, a: Tensor, b: Tensor) -> None:
        if self.outputs[0] is None and not _trace.ACTIVE:  # `build`'s common case, directly
            inputs = self.inputs = (a, b)
            if self._shortcut(inputs, True, None):
                return
        self.build((a, b), promote_integer_inputs_to_float=True)

    def build_comparison_op(self, a: Tensor, b: Tensor) -> None:
        if self.outputs[0] is None and not _trace.ACTIVE:  # `build`'s common case, directly
            inputs = self.inputs = (a, b)
            if self._shortcut(inputs, False, _dtypes.bool):
                return
        self.build((a, b), output_dtype=_dtypes.bool, enforce_safe_casting_to_output=False)

    def build_unary_op(self, a: Tensor) -> None:
        if self.outputs[0] is None and not _trace.ACTIVE:  # `build`'s common case, directly
            inputs = self.inputs = (a,)
            if self._shortcut(inputs, False, None):
                return
        self.build((a,), check_all_same_dtype=True, enforce_safe_casting_to_output=False)

    def build_unary_float_op(self, a: Tensor) -> None:
        if self.outputs[0] is None and not _trace.ACTIVE:  # `build`'s common case, directly
            inputs = self.inputs = (a,)
            if self._shortcut(inputs, True, None):
                return
        self.build((a,), promote_integer_inputs_to_float=True)

    # -- for impl ----------------------------------------------------------------------------

    def compute_dtype(self) -> np.dtype:
        """The NumPy dtype computations run in (float16/bfloat16 computed in float32)."""
        common = self.common_dtype
        upcast = _COMPUTE_UPCAST.get(common.name)
        return common.numpy if upcast is None else np.dtype(upcast)

    def input_arrays(self, dtype: np.dtype | None = None) -> list[np.ndarray]:
        """Each input as a NumPy array in the compute dtype (not broadcast; NumPy does that)."""
        if self._direct and dtype is None:
            arrays = []
            for t in self.inputs:
                # The cached view when it is current (Tensor._numpy's test, inline).
                view = t._np
                arrays.append(
                    view if view is not None and view.base is t._storage.data else t._numpy()
                )
            return arrays
        if self.common_dtype is _COMPLEX32:
            self._check_complex32()
        target = self.compute_dtype() if dtype is None else dtype
        arrays = []
        for t in self.inputs:
            arr = t._numpy()
            if arr.dtype != target:
                try:
                    arr = arr.astype(target)
                except TypeError:  # complex32 storage: NumPy refuses to cast it
                    arr = _dtypes.compute_array(arr, target)
            arrays.append(arr)
        return arrays

    def _check_complex32(self) -> None:
        name = self.op_name.partition(".")[0].removesuffix("_")
        if name not in COMPLEX32_LOOPS:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'ComplexHalf\'')

    def write(self, value: np.ndarray, index: int = 0) -> None:
        """Store `value` (broadcast as needed) into output `index`, casting to its dtype."""
        out = self.outputs[index]
        target = out._numpy()
        value = self._in_common_dtype(value, target.dtype)
        if out._dtype is _COMPLEX32:
            _dtypes.store(target, value)  # NumPy would write both parts (Note: complex32...)
        else:
            np.copyto(target, value, casting="unsafe")

    def _in_common_dtype(self, value: Any, target: np.dtype) -> Any:
        """A float16/bfloat16 op's float32 result rounded to its dtype before it is cast to an
        output of another dtype (`exp(half, out=float)` holds half values, as in PyTorch)."""
        common = self.common_dtype
        if common is None or common.name not in _COMPUTE_UPCAST or target == common.numpy:
            return value
        value = np.asarray(value)
        if common is _COMPLEX32:
            return _dtypes.compute_array(_dtypes.compute_array(value, common.numpy))
        return value.astype(common.numpy) if value.dtype == np.float32 else value

    def compute(self, ufunc: np.ufunc, *arrays: np.ndarray) -> None:
        """`ufunc(*arrays)` into output 0: straight into its memory when the dtypes agree."""
        out = self.outputs[0]
        target = out._np
        if target is None or target.base is not out._storage.data:
            target = out._numpy()
        if self._direct or (
            target.dtype == arrays[0].dtype and target.shape == self.shape
            and self.common_dtype.name not in _COMPUTE_UPCAST
        ):
            if target.dtype.kind in "fc":
                # quiet_call, inline: this runs for every floating-point op
                context = _THREAD.context
                n = len(arrays)
                if context is None or n > 2 or _QUIET.get():
                    quiet_call(ufunc, *arrays, out=target)
                elif n == 2:
                    context.run(ufunc, arrays[0], arrays[1], out=target)
                else:
                    context.run(ufunc, arrays[0], out=target)
            else:
                ufunc(*arrays, out=target)  # integer and bool loops raise no FP warnings
        else:
            value = self._in_common_dtype(quiet_call(ufunc, *arrays), target.dtype)
            if out._dtype is _COMPLEX32:
                _dtypes.store(target, value)
            else:
                np.copyto(target, value, casting="unsafe")


def contiguous(sizes: tuple) -> tuple:
    return contiguous_strides(tuple(sizes))
