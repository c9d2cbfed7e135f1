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

import warnings
from typing import Any

import numpy as np

from pyaten.core import dtypes as _dtypes
from pyaten.core.iterator import TensorIteratorConfig
from pyaten.core.storage import Storage
from pyaten.core.views import (
    contiguous_strides,
    empty_tensor,
    is_contiguous_strides,
    resize_tensor_,
)
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
                _new_output(sizes, dtype, device)
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
            if target._storage.data is not None:
                np.copyto(target._numpy(), proxy._numpy(), casting="unsafe")
            self.outputs[index] = target


def broadcast_shapes(op_name: str, *shapes: tuple) -> tuple:
    """Broadcast sizes with PyTorch's error text."""
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, size in enumerate(shape):
            j = offset + i
            current = result[j]
            if current == size or size == 1:
                continue
            if current == 1:
                result[j] = size
                continue
            # Find which earlier shape fixed this dimension, for the message.
            raise RuntimeError(
                f"The size of tensor a ({current}) must match the size of tensor b ({size}) "
                f"at non-singleton dimension {i}"
            )
    return tuple(result)


try:  # NumPy >= 2: set the floating-point error state directly, ~20x cheaper than errstate
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

    _QUIET_STATE = _make_extobj(all="ignore")
    _quiet_set = _extobj_contextvar.set
    _quiet_reset = _extobj_contextvar.reset

    def quiet_call(fn: Any, *args: Any, **kwargs: Any) -> Any:
        """`fn(*args)` with NumPy's floating-point warnings off (PyTorch gives inf/nan
        silently)."""
        token = _quiet_set(_QUIET_STATE)
        try:
            return fn(*args, **kwargs)
        finally:
            _quiet_reset(token)

except ImportError:  # pragma: no cover - older NumPy
    _QUIET_STATE = None

    def quiet_call(fn: Any, *args: Any, **kwargs: Any) -> Any:
        """`fn(*args)` with NumPy's floating-point warnings off."""
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)


# sizes -> (contiguous strides, numel, {itemsize: byte strides}): output shapes recur per call.
_GEOMETRY: dict[tuple, tuple[tuple, int, dict[int, tuple]]] = {}


def _geometry(sizes: tuple) -> tuple[tuple, int, dict[int, tuple]]:
    found = _GEOMETRY.get(sizes)
    if found is None:
        numel = 1
        for s in sizes:
            numel *= s
        found = (contiguous_strides(sizes), numel, {})
        if len(_GEOMETRY) < 4096:
            _GEOMETRY[sizes] = found
    return found


def _byte_strides(geometry: tuple, itemsize: int) -> tuple:
    found = geometry[2].get(itemsize)
    if found is None:
        found = geometry[2][itemsize] = tuple([s * itemsize for s in geometry[0]])
    return found


_U8 = np.dtype(np.uint8)
_np_empty = np.empty
_ndarray = np.ndarray
_make = Tensor._make
_storage_new = object.__new__


def _new_output(sizes: tuple, dtype: _dtypes.dtype, device: Any, geometry: tuple | None = None
                ) -> Tensor:
    """A contiguous output whose NumPy view is built with it (the impl writes through it)."""
    if geometry is None:
        geometry = _GEOMETRY.get(sizes) or _geometry(sizes)
    itemsize = dtype.itemsize
    if device.type != "cpu":
        strides, numel, _ = geometry
        return _make(Storage._fresh(numel * itemsize, device), sizes, strides, 0, dtype, device)
    # Storage._fresh written out: this runs for every new CPU result.
    storage = _storage_new(Storage)
    storage.nbytes = nbytes = geometry[1] * itemsize
    storage.device = device
    storage.resizable = True
    data = storage.data = _np_empty(nbytes, _U8)
    t = _make(storage, sizes, geometry[0], 0, dtype, device)
    found = geometry[2].get(itemsize)
    t._np = _ndarray(sizes, dtype.numpy, data, 0,
                     found if found is not None else _byte_strides(geometry, itemsize))
    return t


_COMPUTE_UPCAST = {"float16": np.float32, "bfloat16": np.float32}


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
        if not _trace.ACTIVE:
            if out is None:
                if self._build_same(inputs, promote_integer_inputs_to_float, output_dtype):
                    return
            elif out is inputs[0] and output_dtype is None and self._inplace_same(
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

    def _build_same(self, inputs, promote_to_float: bool, output_dtype) -> bool:
        """The common case, decided in a few comparisons: a new output, inputs of one shape and
        one dtype, no wrapped numbers, no float promotion needed. True if it applied."""
        first = inputs[0]
        sizes = first._sizes
        strides = first._strides
        dtype = first._dtype
        if first._wrapped_number:
            return False
        direct = dtype.name not in _COMPUTE_UPCAST
        for t in inputs[1:]:
            if t._wrapped_number:
                # A Python scalar of the tensor's category or lower does not change the dtype.
                if t._dtype.category > dtype.category:
                    return False
                direct = False
            elif t._sizes != sizes or t._dtype is not dtype or t._strides != strides:
                return False
        geometry = _GEOMETRY.get(sizes)
        if geometry is None:
            geometry = _geometry(sizes)
        if len(sizes) > 1 and strides != geometry[0]:
            return False  # the output's layout follows the inputs': let the planner decide
        if promote_to_float and not (dtype.is_floating_point or dtype.is_complex):
            return False
        self.common_dtype = dtype
        self.shape = sizes
        device = self.device = first._device
        self._direct = direct
        self.outputs[0] = _new_output(
            sizes, output_dtype if output_dtype is not None else dtype, device, geometry
        )
        return True

    def _inplace_same(self, inputs, promote_to_float: bool) -> bool:
        """`a.op_(b)` with `b` like `a` (or a lower-category Python scalar): nothing to check."""
        first = inputs[0]
        sizes, strides, dtype = first._sizes, first._strides, first._dtype
        if promote_to_float and not (dtype.is_floating_point or dtype.is_complex):
            return False
        if len(sizes) > 1 and strides != (_GEOMETRY.get(sizes) or _geometry(sizes))[0] and (
            not is_contiguous_strides(sizes, strides)
        ):
            return False
        direct = dtype.name not in _COMPUTE_UPCAST
        for t in inputs[1:]:
            if t._wrapped_number:
                if t._dtype.category > dtype.category:
                    return False
                direct = False
            elif t._sizes != sizes or t._dtype is not dtype or t._strides != strides or (
                t._storage is first._storage and t._offset != first._offset
            ):
                return False
        self.common_dtype = dtype
        self.shape = sizes
        self.device = first._device
        self._direct = direct
        return True

    def build_binary_op(self, a: Tensor, b: Tensor) -> None:
        if not _trace.ACTIVE:  # the two common cases of `build`, tested here directly
            out = self.outputs[0]
            inputs = self.inputs = (a, b)
            if out is None:
                if self._build_same(inputs, False, None):
                    return
            elif out is a and self._inplace_same(inputs, False):
                return
        self.build((a, b))

    def build_binary_float_op(self, a: Tensor, b: Tensor) -> None:
        if self.outputs[0] is None and not _trace.ACTIVE:  # `build`'s common case, directly
            inputs = self.inputs = (a, b)
            if self._build_same(inputs, True, None):
                return
        self.build((a, b), promote_integer_inputs_to_float=True)

    def build_comparison_op(self, a: Tensor, b: Tensor) -> None:
        if self.outputs[0] is None and not _trace.ACTIVE:  # `build`'s common case, directly
            inputs = self.inputs = (a, b)
            if self._build_same(inputs, False, _dtypes.bool):
                return
        self.build((a, b), output_dtype=_dtypes.bool, enforce_safe_casting_to_output=False)

    def build_unary_op(self, a: Tensor) -> None:
        if self.outputs[0] is None and not _trace.ACTIVE:  # `build`'s common case, directly
            inputs = self.inputs = (a,)
            if self._build_same(inputs, False, None):
                return
        self.build((a,), check_all_same_dtype=True, enforce_safe_casting_to_output=False)

    def build_unary_float_op(self, a: Tensor) -> None:
        if self.outputs[0] is None and not _trace.ACTIVE:  # `build`'s common case, directly
            inputs = self.inputs = (a,)
            if self._build_same(inputs, True, None):
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
        target = self.compute_dtype() if dtype is None else dtype
        arrays = []
        for t in self.inputs:
            arr = t._numpy()
            if arr.dtype != target:
                arr = arr.astype(target)
            arrays.append(arr)
        return arrays

    def write(self, value: np.ndarray, index: int = 0) -> None:
        """Store `value` (broadcast as needed) into output `index`, casting to its dtype."""
        out = self.outputs[index]
        np.copyto(out._numpy(), value, casting="unsafe")

    def compute(self, ufunc: np.ufunc, *arrays: np.ndarray) -> None:
        """`ufunc(*arrays)` into output 0: straight into its memory when the dtypes agree."""
        out = self.outputs[0]
        target = out._np
        if target is None or target.base is not out._storage.data:
            target = out._numpy()
        if self._direct or (target.dtype == arrays[0].dtype and target.shape == self.shape):
            fp = target.dtype.kind in "fc"
            if fp and _QUIET_STATE is not None:
                token = _quiet_set(_QUIET_STATE)
                try:
                    ufunc(*arrays, out=target)
                finally:
                    _quiet_reset(token)
            elif fp:
                quiet_call(ufunc, *arrays, out=target)
            else:
                ufunc(*arrays, out=target)  # integer and bool loops raise no FP warnings
        else:
            np.copyto(target, quiet_call(ufunc, *arrays), casting="unsafe")


def contiguous(sizes: tuple) -> tuple:
    return contiguous_strides(tuple(sizes))
