"""The Tensor data model: storage + sizes + strides + offset + dtype + device + key set.

Note: the per-op path. `Tensor._make` builds a tensor with no validation; it is called for
every op result, so it only assigns slots. The NumPy view of a CPU tensor is built on first
use and cached in `_np`; it is rebuilt when the storage's buffer was replaced (resize) or
when `_np` is cleared (`set_`-style metadata changes call `_refresh`).

Ops (`add`, `view`, ...) are attached to this class by the native/codegen layers; this module
only holds data, properties, conversions and printing hooks.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.accel import ACCEL as _ACCEL
from pyaten.core.device import CPU, device
from pyaten.core.dtypes import dtype
from pyaten.core.size import (
    Size,
    VersionCounter,
    _Token,
    channels_last,
    channels_last_3d,
    contiguous_format,
    preserve_format,
    strided,
)
from pyaten.core.storage import Storage, is_host_memory, read_to_host
from pyaten.dispatch.keys import DispatchKeySet as _DispatchKeySet
from pyaten.dispatch.keys import functionality_bit
from pyaten.dispatch.python_key import PYTHON_KEYS
from pyaten.dispatch.tls import STATE as _TLS

_PYTHON_KEYSET = _DispatchKeySet.from_raw(PYTHON_KEYS)
_Device = device  # the class; `device` is also a parameter name below

__all__ = [
    "Tensor",
    "Size",
    "VersionCounter",
    "strided",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
    "preserve_format",
]


def _wrap_dim(dim: int, ndim: int) -> int:
    # Returns the non-negative dim or raises torch's IndexError.
    if ndim == 0:
        if dim in (0, -1):
            return 0
        raise IndexError(
            f"Dimension out of range (expected to be in range of [-1, 0], but got {dim})"
        )
    if -ndim <= dim < ndim:
        return dim + ndim if dim < 0 else dim
    raise IndexError(
        f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})"
    )


# The math bits (Note: math bits, in pyaten/native/mathbits.py): functionality bits of a
# tensor's key set that change what its stored values mean: conjugated, negated, all zero.
CONJ_BIT = functionality_bit("Conjugate")
NEG_BIT = functionality_bit("Negative")
ZERO_BIT = functionality_bit("ZeroTensor")
MATH_BITS = CONJ_BIT | NEG_BIT | ZERO_BIT


def math_bit_values(values: np.ndarray, bits: int) -> np.ndarray:
    """The values a tensor with math `bits` shows, given its stored `values` (a new array
    when any bit is set; conjugate and negate are their own inverses)."""
    if bits & ZERO_BIT:
        return np.zeros(values.shape, values.dtype)
    if values.dtype.fields is not None:  # complex32: (real, imag) float16 pairs
        values = values.copy(order="K")
        if bits & NEG_BIT:
            np.negative(values["real"], out=values["real"])
        if bool(bits & CONJ_BIT) != bool(bits & NEG_BIT):
            np.negative(values["imag"], out=values["imag"])
        return values
    if bits & CONJ_BIT and values.dtype.kind == "c":
        values = np.conjugate(values)
    if bits & NEG_BIT:
        values = np.negative(values)
    return values


def _resolve_copied_view(t: Tensor, bits: int) -> None:
    # `t` (a deep copy) gets its own storage holding the values it shows, and no bits.
    from pyaten.core.creation import share_array

    # (ufuncs write in the input's memory order, so a dense transpose keeps its strides)
    resolved = share_array(math_bit_values(t._numpy(), bits), t._dtype)
    t._storage, t._strides, t._offset = resolved._storage, resolved._strides, 0
    t._np = None
    t._keyset &= ~bits


def _refuse_math_bits_numpy(keyset: int, force: bool) -> None:
    # PyTorch's Tensor.numpy() words these checks so (force=True resolves conj and neg).
    if keyset & ZERO_BIT and not force:
        raise RuntimeError(
            " Cannot convert a ZeroTensor to numpy. Set force=True if you need the zero array."
        )
    if keyset & CONJ_BIT and not force:
        raise RuntimeError(
            "Can't call numpy() on Tensor that has conjugate bit set. Use "
            "tensor.resolve_conj().numpy() instead."
        )
    if keyset & NEG_BIT and not force:
        raise RuntimeError(
            "Can't call numpy() on Tensor that has negative bit set. Use "
            "tensor.resolve_neg().numpy() instead."
        )


class _ByteCount(int):
    """A storage's byte count as `untyped_storage()` hands it out: an int (pyaten's code reads
    `storage.nbytes`) that can also be called, as PyTorch's `untyped_storage().nbytes()`.
    Made there, not per allocation, so creating a tensor pays nothing for it."""

    __slots__ = ()

    def __call__(self) -> int:
        return int(self)


class Tensor:
    """A strided view of a Storage. Create with `pyaten.tensor`, factories or ops."""

    __slots__ = (
        "_storage",
        "_sizes",
        "_strides",
        "_offset",
        "_dtype",
        "_device",
        "_keyset",
        "_np",
        "_vc",  # the VersionCounter, made on first use (`_version_counter`)
        "_base",
        "_requires_grad",
        "grad_fn",
        "_grad",
        "_hooks",
        "retains_grad",
        "output_nr",
        "_wrapped_number",
        "_grad_acc",
        "_fw_grad",
        "__weakref__",
        "__dict__",
    )

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _make(
        storage: Storage,
        sizes: tuple,
        strides: tuple,
        offset: int,
        dtype: dtype,
        device: device,
    ) -> Tensor:
        """Fast internal constructor: no validation, a fresh version counter, no autograd."""
        t = _new(Tensor)
        t._storage = storage
        t._sizes = sizes
        t._strides = strides
        t._offset = offset
        t._dtype = dtype
        t._device = device
        t._keyset = device._keyset
        t._np = None
        t._vc = None
        t._base = None
        t._requires_grad = False
        t.grad_fn = None
        t._grad = None
        t._hooks = None
        t.retains_grad = False
        t.output_nr = 0
        t._wrapped_number = False
        t._grad_acc = None
        t._fw_grad = None
        return t

    @staticmethod
    def _make_view(base: Tensor, sizes: tuple, strides: tuple, offset: int) -> Tensor:
        """A view of `base`'s storage with new geometry: the version counter shared, `_base`
        the root base, the key set `base`'s (the per-view-op constructor)."""
        v = Tensor._make(base._storage, sizes, strides, offset, base._dtype, base._device)
        counter = base._vc
        if counter is None:
            counter = base._vc = VersionCounter()
        v._vc = counter
        root = base._base
        v._base = base if root is None else root
        v._keyset = base._keyset
        if base.__class__ is not Tensor:  # a subclass may keep its views its own (quantized)
            wrap = getattr(base.__class__, "_wrap_view", None)
            if wrap is not None:
                return wrap(base, v)
        return v

    @staticmethod
    def _make_subclass(cls: type, data: Tensor, require_grad: bool = False) -> Tensor:
        """An instance of the Tensor subclass `cls` sharing `data`'s storage, geometry and
        version counter, detached from autograd (how `nn.Parameter` is built)."""
        if not isinstance(data, Tensor):
            raise TypeError(f"_make_subclass(): data must be a Tensor, not {type(data).__name__}")
        t = Tensor._make(
            data._storage, data._sizes, data._strides, data._offset, data._dtype, data._device
        )
        if cls is not Tensor:
            sub = _new(cls)
            for name in Tensor.__slots__[:-2]:
                setattr(sub, name, getattr(t, name))
            t = sub
        t._version_counter = data._version_counter
        t._keyset = _subclass_keyset(cls, data._keyset)
        if require_grad:
            if not (data._dtype.is_floating_point or data._dtype.is_complex):
                raise RuntimeError(
                    "Only Tensors of floating point and complex dtype can require gradients"
                )
            t._requires_grad = True
        return t

    @staticmethod
    def _make_wrapper_subclass(
        cls: type,
        size: object,
        strides: object = None,
        storage_offset: int | None = None,
        memory_format: object = None,
        dtype: dtype | None = None,
        layout: object = None,
        device: object = None,
        pin_memory: bool = False,
        requires_grad: bool = False,
        dispatch_sizes_strides_policy: str | None = None,
        dispatch_device: bool = False,
        dispatch_layout: bool = False,
        _extra_dispatch_keys: object = None,
        storage_size: int | None = None,
    ) -> Tensor:
        """An instance of `cls` with the given geometry and no data of its own: a wrapper
        subclass, whose `__torch_dispatch__` computes every operator (usually on tensors it
        holds). Its key set is the device's plus the Python keys (Note: the Python key)."""
        from pyaten.core.views import contiguous_strides, storage_nbytes_needed

        sizes = tuple(builtins.int(s) for s in size)
        dtype = dt.get_default_dtype() if dtype is None else dtype
        where = device if isinstance(device, _Device) else CPU if device is None else _Device(
            device)
        strides = contiguous_strides(sizes) if strides is None else tuple(strides)
        offset = 0 if storage_offset is None else builtins.int(storage_offset)
        nbytes = storage_nbytes_needed(sizes, strides, offset, dtype.itemsize)
        if storage_size is not None:
            nbytes = storage_size * dtype.itemsize
        # the data lives wherever the subclass keeps it
        t = make_dataless(cls, sizes, strides, offset, dtype, where,
                          where._keyset | PYTHON_KEYS, nbytes)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def __new__(cls, *args: object) -> Tensor:
        # Legacy constructor: Tensor() / Tensor(2, 3) (uninitialised) / Tensor([1, 2]).
        from pyaten.core.creation import tensor as make_tensor
        from pyaten.core.views import empty_tensor

        default = dt.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], builtins.int):
            made = make_tensor(args[0], dtype=default)
        elif all(isinstance(a, builtins.int) for a in args):
            made = empty_tensor(tuple(args) if args else (0,), default, CPU)
        else:
            raise TypeError(f"Tensor(): invalid arguments {args!r}")
        return made if cls is Tensor else made.as_subclass(cls)  # `MyTensor([1, 2])`

    def _refresh(self) -> None:
        """Forget the cached NumPy view after sizes/strides/offset/storage changed."""
        self._np = None

    def _numpy(self) -> np.ndarray:
        """The (cached) writable NumPy view of this tensor's elements, any dtype."""
        view = self._np
        storage = self._storage
        if view is not None and view.base is storage.data:
            return view
        data = storage.data
        if data is None:
            raise RuntimeError(
                f"Cannot access data of a tensor on device '{self._device}' (it has no storage "
                "bytes)"
            )
        if type(data) is not np.ndarray:
            raise RuntimeError(
                f"Cannot access data of a tensor on device '{self._device}' from core: its "
                "memory belongs to the device (use .cpu() first)"
            )
        itemsize = self._dtype.itemsize
        offset = self._offset * itemsize
        if offset > data.nbytes and 0 in self._sizes:
            offset = 0  # an empty view may point past the end (torch allows it); NumPy may not
        view = np.ndarray(
            self._sizes,
            self._dtype.numpy,
            data,
            offset,
            tuple([s * itemsize for s in self._strides]),
        )
        self._np = view
        return view

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self) -> Size:
        return Size(self._sizes)

    def size(self, dim: int | None = None) -> Size | int:
        if dim is None:
            return Size(self._sizes)
        if not self._sizes:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self._sizes[_wrap_dim(operator.index(dim), len(self._sizes))]

    def stride(self, dim: int | None = None) -> tuple | int:
        if dim is None:
            return self._strides
        if not self._sizes:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self._strides[_wrap_dim(operator.index(dim), len(self._sizes))]

    def storage_offset(self) -> int:
        return self._offset

    def dim(self) -> int:
        return len(self._sizes)

    ndimension = dim

    @property
    def ndim(self) -> int:
        return len(self._sizes)

    def numel(self) -> int:
        n = 1
        for s in self._sizes:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self._dtype.itemsize

    @property
    def dtype(self) -> dtype:
        return self._dtype

    @property
    def device(self) -> device:
        return self._device

    @property
    def layout(self) -> _Token:
        return strided

    @property
    def is_cpu(self) -> bool:
        return self._device.type == "cpu"

    @property
    def is_meta(self) -> bool:
        return self._device.type == "meta"

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def is_sparse_csr(self) -> bool:
        return False

    @property
    def is_quantized(self) -> bool:
        return False

    @property
    def is_nested(self) -> bool:
        return False  # the nested tensor classes (pyaten/nested) say True

    def get_device(self) -> int:
        """-1 on the CPU, else the device index (0 when unset)."""
        if self._device.type == "cpu":
            return -1
        return self._device.index or 0

    def is_floating_point(self) -> bool:
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._dtype.is_complex

    def is_signed(self) -> bool:
        return self._dtype.is_signed

    def is_contiguous(self, memory_format: _Token = contiguous_format) -> bool:
        from pyaten.core.views import is_channels_last_strides, is_contiguous_strides

        if memory_format is channels_last or memory_format is channels_last_3d:
            return is_channels_last_strides(self._sizes, self._strides, memory_format.name)
        return is_contiguous_strides(self._sizes, self._strides)

    def is_non_overlapping_and_dense(self) -> bool:
        from pyaten.core.views import is_non_overlapping_and_dense

        return is_non_overlapping_and_dense(self._sizes, self._strides)

    def untyped_storage(self) -> Storage:
        storage = self._storage
        if storage.nbytes.__class__ is int:  # PyTorch's `nbytes()` is a method: see _ByteCount
            storage.nbytes = _ByteCount(storage.nbytes)
        return storage

    def data_ptr(self) -> int:
        return self._storage.data_ptr() + self._offset * self._dtype.itemsize

    def _is_view(self) -> bool:
        return self._base is not None

    def __hash__(self) -> int:
        return id(self)

    # ------------------------------------------------------------------ autograd fields
    # How a view was made, when autograd must remember it (PyTorch's CreationMeta): None, or
    # ("no_grad",) for a view of a tensor requiring grad made in no_grad mode, or
    # ("multi_output", "Unbind") for one of several views returned by one call.
    _view_creation: tuple | None = None

    @property
    def requires_grad(self) -> bool:
        if self._requires_grad:
            return True
        # a view made in no_grad mode still requires grad through its base, as in PyTorch
        return self._view_creation is not None and self._base is not None \
            and self._base.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self.grad_fn is not None:
            msg = "you can only change requires_grad flags of leaf variables."
            if not value:
                msg += (
                    " If you want to use a computed variable in a subgraph that doesn't "
                    "require differentiation use var_no_grad = var.detach()."
                )
            raise RuntimeError(msg)
        if value and not (self._dtype.is_floating_point or self._dtype.is_complex):
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients"
            )
        self._requires_grad = builtins.bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        # PyTorch's requires_grad_ words its dtype error differently from the attribute's.
        if requires_grad and not (self._dtype.is_floating_point or self._dtype.is_complex):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (None until a backward pass writes one)."""
        if self.grad_fn is not None and not self.retains_grad and self._grad is None:
            import warnings

            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version_counter(self) -> VersionCounter:
        """The in-place write counter shared by this tensor and its views; made when first
        asked for (most op results are never written in place nor saved for backward)."""
        counter = self._vc
        if counter is None:
            counter = self._vc = VersionCounter()
        return counter

    @_version_counter.setter
    def _version_counter(self, counter: VersionCounter) -> None:
        self._vc = counter

    @property
    def _version(self) -> int:
        return self._version_counter.value

    def _bump_version(self) -> None:
        """Record an in-place write (seen by every view sharing the counter)."""
        self._version_counter.value += 1

    @property
    def data(self) -> Tensor:
        """An alias sharing storage, detached from autograd and from the version counter."""
        alias = Tensor._make(
            self._storage, self._sizes, self._strides, self._offset, self._dtype, self._device
        )
        alias._keyset |= self._keyset & MATH_BITS  # a conj view's data is a conj view
        return alias

    @data.setter
    def data(self, other: Tensor) -> None:
        if not isinstance(other, Tensor):
            raise TypeError(f"data must be a Tensor, not {type(other).__name__}")
        self._storage = other._storage
        self._sizes = other._sizes
        self._strides = other._strides
        self._offset = other._offset
        self._dtype = other._dtype
        self._device = other._device
        self._keyset = other._keyset
        self._np = None

    # ------------------------------------------------------------------ Python conversions
    def _host_values(self) -> np.ndarray:
        """The values as a NumPy array: a view on the host, a copy from a plug-in device's own
        memory (`read_to_host`); a copy with the math bits applied when the tensor has any."""
        data = self._storage.data
        if data is None:
            raise NotImplementedError(f"Cannot copy out of {self._device.type} tensor; no data!")
        values = self._numpy() if is_host_memory(data) else read_to_host(self)
        bits = self._keyset & MATH_BITS
        return values if not bits else math_bit_values(values, bits)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A NumPy array sharing memory with this tensor (bfloat16 as ml_dtypes.bfloat16)."""
        # force=True also reads plug-in devices whose bytes live in host memory.
        on_host = self._device.type == "cpu" or force
        if self._storage.data is None or not on_host:
            raise TypeError(
                f"can't convert {self._device} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        if self._requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self._dtype is dt.complex32:
            # NumPy has no complex32 (see Note: complex32 in NumPy in pyaten.core.dtypes).
            raise TypeError("Got unsupported ScalarType ComplexHalf")
        if self._keyset & MATH_BITS:
            _refuse_math_bits_numpy(self._keyset, force)
            if force:
                return math_bit_values(self._numpy(), self._keyset & MATH_BITS)
        return self._numpy()

    def __array__(self, dtype: object = None, copy: bool | None = None) -> np.ndarray:
        array = self.numpy()
        if dtype is not None and np.dtype(dtype) != array.dtype:
            return array.astype(dtype)
        if copy:
            return array.copy()
        return array

    def tolist(self) -> object:
        """Nested Python lists of Python numbers (a number for a 0-dim tensor)."""
        array = self._host_values()
        if self._dtype is dt.bfloat16:
            array = array.astype(np.float32)
        elif self._dtype is dt.complex32:
            array = dt.compute_array(array)
        return array.tolist()

    def item(self) -> builtins.int | builtins.float | builtins.bool | builtins.complex:
        """The value of a one-element tensor as a Python number."""
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        if (self._keyset | _TLS.included) & PYTHON_KEYS and not _TLS.excluded & PYTHON_KEYS:
            # A mode or subclass sees `_local_scalar_dense`, as PyTorch's item() dispatches it.
            from pyaten.dispatch.registry import get_operator

            return get_operator("aten::_local_scalar_dense").call(self)
        if self._storage.data is None:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        value = self._host_values().reshape(())
        if self._dtype is dt.bfloat16:
            return builtins.float(value)
        if self._dtype is dt.complex32:
            return builtins.complex(dt.compute_array(value))
        return value.item()

    def __bool__(self) -> bool:
        n = self.numel()
        if n == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self.item())

    def __int__(self) -> int:
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        value = self.item()
        if isinstance(value, builtins.complex):
            # Only a complex with no imaginary part converts (c10's checked conversion).
            if value.imag:
                raise RuntimeError("value cannot be converted to type int64_t without overflow")
            value = value.real
        return builtins.int(value)

    def __float__(self) -> float:
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        value = self.item()
        if isinstance(value, builtins.complex):
            if value.imag:
                raise RuntimeError("value cannot be converted to type double without overflow")
            value = value.real
        return builtins.float(value)

    def __complex__(self) -> complex:
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return builtins.complex(self.item())

    def __index__(self) -> int:
        if self.numel() != 1 or self._dtype.category > dt.INT_CATEGORY:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __len__(self) -> int:
        if not self._sizes:
            raise TypeError("len() of a 0-d tensor")
        return self._sizes[0]

    def __iter__(self):  # noqa: ANN204
        if not self._sizes:
            raise TypeError("iteration over a 0-d tensor")
        if (self._keyset | _TLS.included) & PYTHON_KEYS:
            # PyTorch iterates over `unbind(0)`, which a mode or subclass sees.
            from pyaten.dispatch.registry import get_operator

            return iter(get_operator("aten::unbind.int").call(self, 0))
        from pyaten.core.views import select_view

        return (select_view(self, 0, i) for i in range(self._sizes[0]))

    def __format__(self, spec: str) -> str:
        if not self._sizes and self._storage.data is not None:
            return format(self.item(), spec)
        return object.__format__(self, spec) if spec == "" else format(repr(self), spec)

    def __repr__(self) -> str:
        from pyaten.core.printing import tensor_repr

        return tensor_repr(self)

    # No `__str__`: `str(t)` and `print(t)` use the class's `__repr__`, a subclass's included.

    # ------------------------------------------------------------------ copy / pickle
    __array_priority__ = 1000  # NumPy defers to our reflected operators

    def __deepcopy__(self, memo: dict) -> Tensor:
        if self.grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment.  If you were attempting to deepcopy a module, this may "
                "be because of a torch.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001"
            )
        found = memo.get(id(self))
        if found is not None:
            return found
        # Views deep-copied together keep sharing one copied storage.
        storage = memo.get(id(self._storage))
        if storage is None:
            old = self._storage
            if old.data is None or is_host_memory(old.data):
                data = None if old.data is None else old.data.copy()
                storage = Storage(old.nbytes, old.device, data=data)
                if data is None:
                    storage.data = None
            else:  # a plug-in device's own memory: a new storage, the bytes copied there
                storage = Storage(old.nbytes, old.device)
                whole = (old.nbytes,)
                Tensor._make(storage, whole, (1,), 0, dt.uint8, old.device).copy_(
                    Tensor._make(old, whole, (1,), 0, dt.uint8, old.device)
                )
            memo[id(old)] = storage
        new = _new(type(self))
        for name in Tensor.__slots__[:-2]:
            setattr(new, name, getattr(self, name))
        new._storage = storage
        new._np = None
        new._version_counter = VersionCounter()
        new._base = None
        new._grad = None if self._grad is None else self._grad.__deepcopy__(memo)
        new._hooks = None
        if hasattr(self, "__dict__") and self.__dict__:
            import copy

            new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        bits = self._keyset & (CONJ_BIT | NEG_BIT)
        if bits and storage.data is not None and is_host_memory(storage.data):
            _resolve_copied_view(new, bits)  # PyTorch deep-copies a conj/neg view resolved
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, protocol: int) -> tuple:
        # Pickles the values (a contiguous copy), dtype, device and requires_grad; a conj or
        # neg view keeps its bit (its stored values pickled, as PyTorch pickles its storage).
        values = None if self._storage.data is None else np.ascontiguousarray(self._host_values())
        args = (values, self._sizes, self._dtype.name, str(self._device), self._requires_grad)
        bits = self._keyset & (CONJ_BIT | NEG_BIT)
        if bits and values is not None:
            args = (math_bit_values(values, bits), *args[1:], bits)
        return (_rebuild_tensor, args)

    # ------------------------------------------------------------------ DLPack
    def __dlpack__(self, *, stream: object = None, max_version: tuple | None = None,
                   dl_device: tuple | None = None, copy: bool | None = None) -> object:
        from pyaten.core.interop import to_dlpack

        return to_dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device,
                         copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        from pyaten.core.interop import dlpack_device

        return dlpack_device(self)

    # ------------------------------------------------------------------ __torch_function__
    # The protocol lives in pyaten.core.torch_function (Note: the torch-function gate); here
    # only Tensor's own part: the default handler, as_subclass and subclass registration.
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN206
        """Run `func` with subclasses' handlers off and make its Tensor results `cls`, so a
        subclass that does not override this gets its own class back (PyTorch's default)."""
        return _torch_function().tensor_torch_function(cls, func, types, args, kwargs)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        handler = getattr(cls, "__torch_function__", None)
        if getattr(handler, "__name__", None) != "_disabled_torch_function_impl":
            # properties and Python-level methods start seeing subclasses
            _torch_function().install_routes(Tensor, again=True)

    def as_subclass(self, cls: type) -> Tensor:
        """A `cls` instance sharing this tensor's data and staying on its autograd graph."""
        return _torch_function().as_subclass(self, cls)


_new = object.__new__


def make_dataless(cls: type, sizes: tuple, strides: tuple, offset: int, dtype: dtype,
                  device: device, keyset: object, nbytes: int) -> Tensor:
    """An instance of `cls` (a Tensor subclass) with this geometry over a Storage of `nbytes`
    that holds no bytes, its data living elsewhere (a wrapper's inner tensor, a sparse
    tensor's parts); every other field as `Tensor._make` sets it, the key set `keyset`."""
    storage = _new(Storage)
    storage.data = None
    storage.nbytes = nbytes
    storage.device = device
    storage.resizable = True
    t = _new(cls)
    t._storage = storage
    t._sizes = sizes
    t._strides = strides
    t._offset = offset
    t._dtype = dtype
    t._device = device
    t._keyset = keyset
    t._np = None
    t._vc = None
    t._base = None
    t._requires_grad = False
    t.grad_fn = None
    t._grad = None
    t._hooks = None
    t.retains_grad = False
    t.output_nr = 0
    t._wrapped_number = False
    t._grad_acc = None
    t._fw_grad = None
    return t


def _disabled_torch_dispatch_impl(func: Callable, types: object, args: tuple = (),
                                  kwargs: dict | None = None) -> object:
    """`Tensor.__torch_dispatch__`: run `func` with the Python keys excluded (a class that
    keeps this default does not take part in Python dispatch)."""
    from pyaten.dispatch.tls import ExcludeDispatchKeyGuard

    with ExcludeDispatchKeyGuard(_PYTHON_KEYSET):
        return func(*args, **(kwargs or {}))


def _has_torch_dispatch(cls: type) -> bool:
    """Whether `cls` defines its own `__torch_dispatch__` (not the disabled default)."""
    handler = getattr(cls, "__torch_dispatch__", None)
    return getattr(handler, "__func__", handler) is not _disabled_torch_dispatch_impl


_TORCH_FUNCTION = None


def _torch_function():  # noqa: ANN202 - pyaten.core.torch_function, which imports this module
    global _TORCH_FUNCTION
    if _TORCH_FUNCTION is None:
        from pyaten.core import torch_function

        _TORCH_FUNCTION = torch_function
    return _TORCH_FUNCTION


def _subclass_keyset(cls: type, keyset: int) -> int:
    """A tensor of class `cls` made from one with `keyset`: the Python keys added when the
    class defines `__torch_dispatch__`, removed otherwise."""
    if cls is not Tensor and _has_torch_dispatch(cls):
        return keyset | PYTHON_KEYS
    return keyset & ~PYTHON_KEYS


Tensor.__torch_dispatch__ = staticmethod(_disabled_torch_dispatch_impl)

_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information."
)


def write_fresh(write: Callable[..., object], fresh: Tensor, *args: object) -> object:
    """`write(fresh, *args)`, an in-place or out= call on a tensor the calling kernel just
    made, without bumping `fresh`'s version.

    PyTorch bumps versions in its ADInplaceOrView kernels, and every kernel below autograd
    runs below that key, so the fill inside `ones`, or the `abs.out` a functional `abs` writes
    its new result with, is no user write (`torch.ones(3)._version == 0`). pyaten's in-place
    kernels bump the counter themselves; kernels that write into their own new tensors call
    through here. `write` is still a dispatched call, seen by tracing and modes."""
    counter = fresh._version_counter
    version = counter.value
    result = write(fresh, *args)
    counter.value = version
    return result


def _check_grad(t: Tensor, grad: object) -> None:
    # The checks and messages of PyTorch's `Tensor.grad = ...`.
    if not isinstance(grad, Tensor):
        raise TypeError(
            "assigned grad expected to be a Tensor or None but got grad of type "
            f"{type(grad).__name__}"
        )
    if grad._dtype is not t._dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{grad._dtype.cpp_name}' "
            f"to a tensor with grad_dtype '{t._dtype.scalar_name}'. The gradient must match the "
            "tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
            "grad_dtype attribute with a specific dtype, or None to allow any dtype. Set "
            "grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may "
            "break downstream systems that assume they match."
        )
    if grad._device.type != t._device.type:
        raise RuntimeError(
            f"attempting to assign a gradient with device type '{grad._device.type}' to a "
            f"tensor with device type '{t._device.type}'. Please ensure that the gradient and "
            "the tensor are on the same device"
        )
    if grad._sizes != t._sizes:
        raise RuntimeError(
            f"attempting to assign a gradient of size '{list(grad._sizes)}' to a tensor of "
            f"size '{list(t._sizes)}'. Please ensure that the gradient and the tensor are the "
            "same size"
        )


def _rebuild_tensor(
    values: np.ndarray | None, sizes: tuple, dtype_name: str, device_text: str,
    requires_grad: bool, math_bits: int = 0,
) -> Tensor:
    from pyaten.core.views import empty_tensor

    target = device(device_text)
    t = empty_tensor(tuple(sizes), dt.BY_NAME[dtype_name], target if target.type in (
        "cpu", "meta") else CPU)
    if values is not None and t._storage.data is not None:
        t._numpy()[...] = values
    if t._device is not target:  # a plug-in device: its memory is filled by its copy
        t = t.to(target)
    t._keyset |= math_bits
    t._requires_grad = requires_grad
    return t


# The compiled accelerator's constructors replace `_make` and `_make_view` (Note: the
# accelerator, in pyaten/core/accel.py); the Python ones stay the reference.
make_reference = Tensor._make
make_view_reference = Tensor._make_view
if _ACCEL is not None:
    _ACCEL.setup_core(Tensor, Storage, VersionCounter, CPU, make_view_reference)
    Tensor._make = staticmethod(_ACCEL.make)  # type: ignore[method-assign]
    Tensor._make_view = staticmethod(_ACCEL.make_view)  # type: ignore[method-assign]
