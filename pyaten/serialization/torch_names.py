"""The names a checkpoint's pickle uses, and the pyaten objects behind them.

Note: PyTorch's names in the pickle
    A checkpoint pickles a tensor as a call of `torch._utils._rebuild_tensor_v2` on a storage
    (a persistent id naming a storage type such as `torch.FloatStorage`), an offset, sizes,
    strides, `requires_grad` and an empty `collections.OrderedDict` of hooks; a Parameter as
    `torch._utils._rebuild_parameter` of that; dtypes as globals `torch.float32`; devices as
    `torch.device('cpu')`; sizes as `torch.Size((2, 3))`. pyaten writes exactly these names so
    that PyTorch reads its files (its `weights_only` allow-list included), and maps them back
    to pyaten's objects when it reads. Classes of `pyaten.nn` and `pyaten.optim` are written
    under PyTorch's module paths (`torch.nn.modules.linear.Linear`), whose instances have the
    same attributes, and read back as pyaten's; any other global keeps its own name.

    Every rebuild function checks its arguments (types, non-negative sizes and strides, the
    view inside its storage) before anything is built, since the arguments come from a file.
"""

from __future__ import annotations

import importlib
import math
import weakref
from collections import Counter, OrderedDict
from types import FunctionType
from typing import Any

from pyaten.core import dtypes as dt
from pyaten.core.device import device as Device
from pyaten.core.size import Size, strided
from pyaten.core.storage import Storage
from pyaten.core.tensor import Tensor

__all__ = [
    "ALLOWED_GLOBALS", "STORAGE_TYPES", "StorageType", "TypedStorage", "global_name",
    "resolve_torch_global",
]

_MAX_ELEMENTS = 2**62


class StorageType:
    """A legacy typed-storage class name (`torch.FloatStorage`): the dtype a persistent id's
    storage holds."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype: dt.dtype) -> None:
        self.name = name
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"StorageType(dtype={self.dtype})"


class TypedStorage:
    """A storage read from a checkpoint with the dtype its persistent id gave it; what the
    rebuild functions receive, and what a checkpoint holding a bare storage loads as."""

    __slots__ = ("untyped", "dtype", "__weakref__")

    def __init__(self, untyped: Storage, dtype: dt.dtype) -> None:
        self.untyped = untyped
        self.dtype = dtype

    @property
    def device(self) -> Device:
        return self.untyped.device

    def size(self) -> int:
        return self.untyped.nbytes // self.dtype.itemsize

    def untyped_storage(self) -> Storage:
        return self.untyped

    def __len__(self) -> int:
        return self.size()

    def __repr__(self) -> str:
        return f"<pyaten.TypedStorage of {self.size()} {self.dtype} elements on {self.device}>"


# torch's storage class names (`torch.<Scalar>Storage`) -> dtype; UntypedStorage holds bytes.
STORAGE_TYPES: dict[str, StorageType] = {
    f"{d.scalar_name}Storage": StorageType(f"{d.scalar_name}Storage", d)
    for d in (*dt.ALL_DTYPES, *dt.QUANTIZED_DTYPES) if d is not dt.complex32
}
STORAGE_TYPES["UntypedStorage"] = StorageType("UntypedStorage", dt.uint8)
_STORAGE_BY_DTYPE = {t.dtype: t for name, t in STORAGE_TYPES.items() if name != "UntypedStorage"}


def storage_type_of(dtype: dt.dtype) -> StorageType:
    found = _STORAGE_BY_DTYPE.get(dtype)
    if found is None:
        raise RuntimeError(f"pyaten.save: tensors of dtype {dtype} cannot be saved")
    return found


# --- rebuild functions (PyTorch's `torch._utils` names) ----------------------------------------

def _bad(what: str) -> RuntimeError:
    return RuntimeError(f"pyaten.load: invalid checkpoint: {what}")


def _dims(value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or len(value) > 64:
        raise _bad(f"{what} is not a tuple of at most 64 integers")
    for v in value:
        if type(v) is not int or not 0 <= v < _MAX_ELEMENTS:
            raise _bad(f"{what} {tuple(value)!r} holds something other than a non-negative int")
    return tuple(value)


def _view_of(storage: object, offset: object, size: object, stride: object) -> Tensor:
    """A tensor over a checkpoint's storage, its geometry checked against the storage."""
    if not isinstance(storage, TypedStorage):
        raise _bad(f"a tensor is rebuilt from a {type(storage).__name__}, not a storage")
    sizes, strides = _dims(size, "size"), _dims(stride, "stride")
    if len(sizes) != len(strides):
        raise _bad(f"size {sizes} and stride {strides} differ in length")
    if type(offset) is not int or not 0 <= offset < _MAX_ELEMENTS:
        raise _bad(f"storage offset {offset!r} is not a non-negative int")
    dtype = storage.dtype
    capacity = storage.untyped.nbytes // dtype.itemsize
    if math.prod(sizes) >= _MAX_ELEMENTS:
        raise _bad(f"a tensor of size {list(sizes)} has too many elements")
    if math.prod(sizes) > 0:
        last = offset + sum((s - 1) * st for s, st in zip(sizes, strides))
        if last >= capacity:
            raise _bad(
                f"a tensor of size {list(sizes)}, stride {list(strides)} and offset {offset} "
                f"reaches past the end of its storage ({capacity} elements)"
            )
    elif offset > capacity:
        raise _bad(f"storage offset {offset} is past the end of its storage ({capacity})")
    device = storage.untyped.device
    return Tensor._make(storage.untyped, sizes, strides, offset, dtype, device)


def _set_requires_grad(t: Tensor, requires_grad: object) -> Tensor:
    if type(requires_grad) is not bool:
        raise _bad(f"requires_grad is {type(requires_grad).__name__}, not bool")
    if requires_grad:
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise _bad(f"a tensor of dtype {t.dtype} cannot require grad")
        t.requires_grad_(True)
    return t


def _rebuild_tensor(storage: object, storage_offset: object, size: object,
                    stride: object) -> Tensor:
    return _view_of(storage, storage_offset, size, stride)


def _rebuild_tensor_v2(storage: object, storage_offset: object, size: object, stride: object,
                       requires_grad: object, backward_hooks: object,
                       metadata: object = None) -> Tensor:
    t = _view_of(storage, storage_offset, size, stride)
    if metadata:
        if not isinstance(metadata, dict):
            raise _bad("tensor metadata is not a dict")
        # the stored values with the bit set again: a lazy conj / neg view of the storage
        if metadata.get("conj") and t.dtype.is_complex:
            t = t.conj()
        if metadata.get("neg"):
            t = t._neg_view()
    return _set_requires_grad(t, requires_grad)


def _rebuild_tensor_v3(storage: object, storage_offset: object, size: object, stride: object,
                       requires_grad: object, backward_hooks: object, dtype: object,
                       metadata: object = None) -> Tensor:
    if not isinstance(dtype, dt.dtype) or not isinstance(storage, TypedStorage):
        raise _bad("_rebuild_tensor_v3 needs a storage and a dtype")
    retyped = TypedStorage(storage.untyped, dtype)
    return _rebuild_tensor_v2(retyped, storage_offset, size, stride, requires_grad,
                              backward_hooks, metadata)


def _rebuild_parameter(data: object, requires_grad: object, backward_hooks: object) -> Tensor:
    from pyaten.nn.parameter import Parameter

    if not isinstance(data, Tensor) or type(requires_grad) is not bool:
        raise _bad("a Parameter is rebuilt from something other than a tensor and a bool")
    return Parameter(data, requires_grad)


# torch.compile's marks on a tensor (PyTorch's jagged tensors carry them in their state):
# read, since they are in the file, and dropped, since pyaten has no compiler to read them
_DYNAMO_STATE = frozenset({
    "_dynamo_dynamic_indices", "_dynamo_dynamic_range", "_dynamo_hint_overrides",
    "_dynamo_propagated_dynamic_indices", "_has_dynamo_dim_marking", "_specialize_on",
    "_dynamo_weak_dynamic_indices", "_dynamo_unbacked_indices", "_dynamo_static_indices",
})


class _DimRange:
    """`torch._dynamo.decorators._DimRange` as read from a file (a dimension's marked range):
    its state kept, never used (Note: see _DYNAMO_STATE)."""

    __slots__ = ("state",)

    def __setstate__(self, state: object) -> None:
        self.state = state


# the classes a file may BUILD (set the state of) besides those a user allowed
BUILDABLE = frozenset({_DimRange})


def _set_state(obj: Any, state: object) -> Any:
    slots = None
    if isinstance(state, tuple):
        if len(state) != 2:
            raise _bad(f"invalid serialized state of length {len(state)}")
        state, slots = state
    for part in (state, slots):
        if part is None:
            continue
        if not isinstance(part, dict):
            raise _bad("serialized state is not a dict")
        for key, value in part.items():
            if not isinstance(key, str):
                raise _bad("serialized state has a non-str attribute name")
            if key in _DYNAMO_STATE:
                continue
            if key.startswith("_") and key in Tensor.__slots__:
                raise _bad(f"serialized state may not set the tensor field '{key}'")
            setattr(obj, key, value)
    return obj


def _rebuild_parameter_with_state(data: object, requires_grad: object, backward_hooks: object,
                                  state: object) -> Tensor:
    return _set_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func: object, new_type: object, args: object, state: object) -> Any:
    if func not in _REBUILDERS or not isinstance(args, tuple):
        raise _bad("_rebuild_from_type_v2 is given an unknown rebuild function")
    result = func(*args)
    if func is _rebuild_njt:  # its state repeats the constructor's parts (and dynamo's notes)
        if new_type is not type(result):
            raise _bad("_rebuild_njt is given a type other than the jagged NestedTensor")
        return result
    if new_type is not type(result):
        if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
            raise _bad(f"_rebuild_from_type_v2 is given {new_type!r}, not a Tensor subclass")
        result = Tensor._make_subclass(new_type, result, result.requires_grad)
    return _set_state(result, state)


def _rebuild_meta_tensor_no_storage(dtype: object, size: object, stride: object,
                                    requires_grad: object) -> Tensor:
    if not isinstance(dtype, dt.dtype):
        raise _bad("a meta tensor's dtype is not a dtype")
    sizes, strides = _dims(size, "size"), _dims(stride, "stride")
    if len(sizes) != len(strides):
        raise _bad(f"size {sizes} and stride {strides} differ in length")
    extent = 1 + sum((s - 1) * st for s, st in zip(sizes, strides)) if all(sizes) else 0
    meta = Device("meta")
    t = Tensor._make(Storage(extent * dtype.itemsize, meta), sizes, strides, 0, dtype, meta)
    return _set_requires_grad(t, requires_grad)


def _rebuild_device_tensor_from_cpu_tensor(data: object, dtype: object, device: object,
                                           requires_grad: object) -> Tensor:
    if not isinstance(data, Tensor) or not isinstance(dtype, dt.dtype):
        raise _bad("a device tensor is rebuilt from something other than a tensor")
    return _set_requires_grad(data.to(dtype=dtype, device=Device(device)), requires_grad)


def _unsupported(kind: str):
    def rebuild(*args: object) -> Any:
        raise RuntimeError(f"pyaten.load: the checkpoint holds {kind}, which pyaten does not have")

    return rebuild


def _get_layout(name: object) -> object:
    from pyaten.core.sparse import COMPRESSED_LAYOUTS, sparse_coo

    layouts = {f"torch.{t.name}": t for t in (strided, sparse_coo, *COMPRESSED_LAYOUTS)}
    if name not in layouts:
        raise RuntimeError(f"pyaten.load: the checkpoint uses layout {name!r}, which pyaten "
                           "does not have")
    return layouts[name]


def _rebuild_sparse_tensor(layout: object, data: object) -> Tensor:
    """A sparse tensor from its parts, as PyTorch pickles one: COO `(indices, values, size
    [, is_coalesced])`, compressed `(compressed_indices, plain_indices, values, size)`."""
    from pyaten.core.sparse import COMPRESSED_LAYOUTS, make_compressed, make_coo, sparse_coo

    if not isinstance(data, tuple) or not all(isinstance(p, Tensor) for p in data[:-2]):
        raise _bad("_rebuild_sparse_tensor is given parts that are not tensors")
    if layout is sparse_coo and len(data) in (3, 4):
        indices, values, size = data[:3]
        if indices.dim() != 2 or indices.dtype is not dt.int64 or not isinstance(
                values, Tensor) or indices.shape[1] != values.shape[0]:
            raise _bad("_rebuild_sparse_tensor is given inconsistent COO indices and values")
        if len(tuple(size)) != indices.shape[0] + values.dim() - 1:
            raise _bad("_rebuild_sparse_tensor is given a size of the wrong rank")
        return make_coo(indices, values, tuple(size), bool(data[3]) if len(data) == 4 else False)
    if layout in COMPRESSED_LAYOUTS and len(data) == 4 and isinstance(data[2], Tensor):
        compressed, plain, values, size = data
        if compressed.dim() != 1 or plain.dim() != 1 or plain.shape[0] != values.shape[0]:
            raise _bad("_rebuild_sparse_tensor is given inconsistent compressed parts")
        return make_compressed(layout, compressed, plain, values, tuple(size))
    raise _bad(f"_rebuild_sparse_tensor is given an unknown layout {layout!r}")


_QSCHEME_NAMES = ("per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
                  "per_channel_symmetric", "per_channel_affine_float_qparams")


def _rebuild_qtensor(storage: object, storage_offset: object, size: object, stride: object,
                     quantizer_params: object, requires_grad: object,
                     backward_hooks: object) -> Tensor:
    """A quantized tensor as PyTorch pickles one: a view of its integer storage (typed with
    the quantized dtype) and `(qscheme, scale, zero_point)` per tensor or `(qscheme, scales,
    zero_points, axis)` per channel."""
    from pyaten.core import quantized as qz

    if not isinstance(storage, TypedStorage) or storage.dtype not in dt.QUANTIZED_DTYPES:
        raise _bad("_rebuild_qtensor is given a storage that is not of a quantized dtype")
    if not isinstance(quantizer_params, tuple) or not quantizer_params:
        raise _bad("_rebuild_qtensor is given quantizer parameters that are not a tuple")
    qdtype = storage.dtype
    ints = TypedStorage(storage.untyped, dt.from_numpy_dtype(qdtype.numpy))
    plain = _view_of(ints, storage_offset, size, stride)
    scheme = quantizer_params[0]
    if scheme is qz.per_tensor_affine and len(quantizer_params) == 3:
        _, scale, zero_point = quantizer_params
        if type(scale) is not float or type(zero_point) is not int:
            raise _bad("_rebuild_qtensor is given a scale or zero point of the wrong type")
        q = qz.wrap_quantized(plain, qdtype, scheme, scale, zero_point)
    elif scheme in (qz.per_channel_affine, qz.per_channel_affine_float_qparams) and len(
            quantizer_params) == 4:
        _, scales, zero_points, axis = quantizer_params
        if type(axis) is not int or not 0 <= axis < plain.dim():
            raise ValueError(f"_rebuild_qtensor: per_channel axis {axis} out of range for "
                             f"size {tuple(plain.shape)}")
        if isinstance(scales, list) and isinstance(zero_points, list):
            from pyaten.core.creation import tensor as make_tensor

            floats = scheme is qz.per_channel_affine_float_qparams
            scales = make_tensor(scales, dtype=dt.float32 if floats else dt.float64)
            zero_points = make_tensor(zero_points, dtype=dt.float32 if floats else dt.int64)
        if not isinstance(scales, Tensor) or not isinstance(zero_points, Tensor) or (
                scales.dim() != 1 or zero_points.dim() != 1):
            raise _bad("_rebuild_qtensor is given per-channel parameters that are not 1-d "
                       "tensors")
        expected = plain.shape[axis]
        if scales.numel() != expected or zero_points.numel() != expected:
            raise ValueError(
                "_rebuild_qtensor: per_channel scales/zero_points length must equal "
                f"size[axis]={expected}, got scales={scales.numel()}, "
                f"zero_points={zero_points.numel()}")
        if zero_points.dtype.is_floating_point:  # as PyTorch's empty_per_channel_affine
            scheme = qz.per_channel_affine_float_qparams
        q = qz.wrap_quantized(plain, qdtype, scheme, scales, zero_points, axis)
    else:
        raise RuntimeError(f"Can't deserialize quantized tensor with qscheme {scheme}")
    if type(requires_grad) is not bool:
        raise _bad(f"requires_grad is {type(requires_grad).__name__}, not bool")
    if requires_grad:
        raise _bad("a quantized tensor cannot require grad")
    return q


def _rebuild_nested_tensor(buffer: object, sizes: object, strides: object,
                           offsets: object) -> Tensor:
    """A strided nested tensor as PyTorch pickles one: a 1-D buffer, its components' sizes
    and strides (2-D int64 tables, a row per component) and their offsets in the buffer."""
    from pyaten.native.kernels.nested_tensor import make_nested

    if not all(isinstance(p, Tensor) and not p.is_nested and not p.is_quantized
               and p.layout is strided for p in (buffer, sizes, strides, offsets)):
        raise _bad("_rebuild_nested_tensor is given parts that are not strided tensors")
    if buffer.dim() != 1:
        raise _bad("_rebuild_nested_tensor is given a buffer that is not 1-D")
    if any(p.dtype is not dt.int64 for p in (sizes, strides, offsets)):
        raise _bad("_rebuild_nested_tensor is given size, stride or offset tables that are "
                   "not int64")
    if sizes.dim() != 2 or tuple(strides.shape) != tuple(sizes.shape) or offsets.dim() != 1 or (
            offsets.shape[0] != sizes.shape[0]):
        raise _bad("_rebuild_nested_tensor is given size, stride and offset tables of "
                   "inconsistent shapes")
    size_rows = [tuple(int(v) for v in row) for row in sizes.tolist()]
    stride_rows = [tuple(int(v) for v in row) for row in strides.tolist()]
    starts = [int(v) for v in offsets.tolist()]
    extent = buffer.shape[0]
    for size, stride, start in zip(size_rows, stride_rows, starts):
        if min(size, default=0) < 0 or min(stride, default=0) < 0 or start < 0:
            raise _bad("_rebuild_nested_tensor is given a negative size, stride or offset")
        if math.prod(size) and start + sum((n - 1) * st for n, st in zip(size, stride)) >= extent:
            raise _bad("_rebuild_nested_tensor is given a component that reaches past the end "
                       "of its buffer")
    return make_nested(buffer, tuple(size_rows), tuple(stride_rows), tuple(starts))


_RAGGED_BY_OFFSETS: dict[int, tuple[weakref.ref, object]] = {}


def _jagged_type() -> type:
    # The jagged layout's class lives in pyaten.nested, above this layer: found by name at
    # run time, as resolve_torch_global finds pyaten's other classes.
    return importlib.import_module("pyaten.nested._jagged").NestedTensor


def _rebuild_njt(constructor_kwargs: object) -> Tensor:
    """A jagged nested tensor as PyTorch pickles one (`torch.nested._internal.nested_tensor
    ._rebuild_njt` of its constructor's keywords): its values and offsets."""
    Jagged = _jagged_type()
    if not isinstance(constructor_kwargs, dict):
        raise _bad("_rebuild_njt is given something other than a dict")
    values, offsets = constructor_kwargs.get("values"), constructor_kwargs.get("offsets")
    ragged_idx = constructor_kwargs.get("_ragged_idx", 1)
    requires_grad = constructor_kwargs.get("requires_grad", False)
    if not isinstance(values, Tensor) or not isinstance(offsets, Tensor) or values.is_nested:
        raise _bad("_rebuild_njt is given values or offsets that are not tensors")
    if constructor_kwargs.get("lengths") is not None:
        raise RuntimeError("pyaten.load: the checkpoint holds a jagged nested tensor with "
                           "lengths (holes), which pyaten does not have")
    if offsets.dim() != 1 or offsets.dtype is not dt.int64 or offsets.numel() < 1:
        raise _bad("_rebuild_njt is given offsets that are not a 1-D int64 tensor")
    if type(ragged_idx) is not int or not 1 <= ragged_idx <= values.dim():
        raise _bad(f"_rebuild_njt is given a ragged dim {ragged_idx!r} outside the values")
    ends = offsets.tolist()
    if ends[0] != 0 or any(b < a for a, b in zip(ends, ends[1:])) or (
            ends[-1] != values.shape[ragged_idx - 1]):
        raise _bad("_rebuild_njt is given offsets that do not split the values")
    # tensors that share their offsets share their ragged size (`j<n>`), as PyTorch's do
    known = _RAGGED_BY_OFFSETS.get(id(offsets))
    ragged = known[1] if known is not None and known[0]() is offsets else None
    t = Jagged(values, offsets, ragged_idx, ragged)
    if ragged is None:
        for key in [k for k, (ref, _) in _RAGGED_BY_OFFSETS.items() if ref() is None]:
            del _RAGGED_BY_OFFSETS[key]
        _RAGGED_BY_OFFSETS[id(offsets)] = (weakref.ref(offsets), t._ragged)
    if type(requires_grad) is not bool:
        raise _bad(f"requires_grad is {type(requires_grad).__name__}, not bool")
    return t.requires_grad_(True) if requires_grad else t


_REBUILDERS = {
    _rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
    _rebuild_parameter_with_state, _rebuild_meta_tensor_no_storage,
    _rebuild_device_tensor_from_cpu_tensor, _rebuild_sparse_tensor, _rebuild_qtensor,
    _rebuild_nested_tensor, _rebuild_njt,
}


def _allowed_globals() -> dict[str, object]:
    from pyaten.nn.parameter import Parameter

    names: dict[str, object] = {
        "collections.OrderedDict": OrderedDict,
        "collections.Counter": Counter,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.serialization._get_layout": _get_layout,
        "torch.Size": Size,
        "torch.Tensor": Tensor,
        "torch.device": Device,
        "_codecs.encode": _encode,
        "builtins.bytearray": _bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    }
    for fn in _REBUILDERS - {_rebuild_njt}:  # that one is torch.nested's (below)
        names[f"torch._utils.{fn.__name__}"] = fn
    for kind, name in (
        ("tensor subclasses without storage", "_rebuild_wrapper_subclass"),
        ("NumPy-backed device tensors", "_rebuild_device_tensor_from_numpy"),
    ):
        names[f"torch._utils.{name}"] = _unsupported(kind)
    for d in (*dt.ALL_DTYPES, *dt.QUANTIZED_DTYPES):
        names[f"torch.{d.name}"] = d
    from pyaten.core import quantized as qz

    for name in _QSCHEME_NAMES:
        names[f"torch.{name}"] = getattr(qz, name)
    names["torch.nested._internal.nested_tensor.NestedTensor"] = _jagged_type()
    names["torch.nested._internal.nested_tensor._rebuild_njt"] = _rebuild_njt
    names["torch._dynamo.decorators._DimRange"] = _DimRange
    for name, storage_type in STORAGE_TYPES.items():
        names[f"torch.{name}"] = storage_type
    names["torch.storage.UntypedStorage"] = STORAGE_TYPES["UntypedStorage"]  # as PyTorch writes
    return names


def _bytearray(data: object = b"", encoding: object = None) -> bytearray:
    # what pickle writes for a bytearray: its bytes (or latin1 text); never a length to fill
    if isinstance(data, (bytes, bytearray)) and encoding is None:
        return bytearray(data)
    if isinstance(data, str) and encoding in ("latin1", "latin-1"):
        return bytearray(data, "latin-1")
    raise _bad("builtins.bytearray is called with something other than bytes")


def _encode(text: object, encoding: object = "utf-8") -> bytes:
    # `_codecs.encode` as pickle's protocol 2 writes bytes: (latin1 text, 'latin1')
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8"):
        raise _bad("_codecs.encode is called with something other than text and latin1")
    return text.encode(encoding)


ALLOWED_GLOBALS: dict[str, object] = _allowed_globals()
_ALLOWED_IDS = {id(v) for v in ALLOWED_GLOBALS.values()}

# pyaten object -> the (module, name) written for it
_WRITTEN_AS: dict[int, tuple[str, str]] = {}
for _full, _obj in ALLOWED_GLOBALS.items():
    if _full.startswith(("torch.", "collections.")) and _full != "torch.Tensor":
        _module, _, _name = _full.rpartition(".")
        _WRITTEN_AS.setdefault(id(_obj), (_module, _name))
_WRITTEN_AS[id(Tensor)] = ("torch", "Tensor")
_WRITTEN_AS[id(STORAGE_TYPES["UntypedStorage"])] = ("torch.storage", "UntypedStorage")
_MAPPED_PACKAGES = ("pyaten.nn", "pyaten.optim")


def global_name(obj: object) -> tuple[str, str] | None:
    """The (module, name) a checkpoint names `obj` by, when it is not its own."""
    found = _WRITTEN_AS.get(id(obj))
    if found is not None:
        return found
    if not isinstance(obj, (type, FunctionType)):
        return None
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and (
        module in _MAPPED_PACKAGES or module.startswith(tuple(p + "." for p in _MAPPED_PACKAGES))
    ):
        return "torch" + module[len("pyaten"):], qualname
    return None


def resolve_torch_global(module: str, name: str) -> object | None:
    """The pyaten object for a global a checkpoint names under `torch`, or None."""
    found = ALLOWED_GLOBALS.get(f"{module}.{name}")
    if found is not None:
        return found
    if module != "torch" and not module.startswith("torch."):
        return None
    try:
        target = importlib.import_module("pyaten" + module[len("torch"):])
    except ImportError:
        return None
    for part in name.split("."):
        target = getattr(target, part, None)
        if target is None:
            return None
    return target


def is_tensor_type(obj: object) -> bool:
    return isinstance(obj, type) and issubclass(obj, Tensor)


def is_allowed(obj: object) -> bool:
    return id(obj) in _ALLOWED_IDS
