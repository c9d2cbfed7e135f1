"""DLPack exchange (zero-copy with NumPy, PyTorch and any DLPack producer/consumer).

Export goes through NumPy's own DLPack support on the tensor's NumPy view. NumPy has no
bfloat16 and no complex32 in DLPack, so for those we export a uint16 (uint32) view and patch
the dtype code in the DLTensor to kDLBfloat (kDLComplex), and the reverse on import: the bytes
are shared either way.
"""

from __future__ import annotations

import ctypes

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.tensor import CONJ_BIT

__all__ = ["to_dlpack", "dlpack_device", "from_dlpack"]

_K_DL_CPU = 1
_K_DL_UINT = 1
_K_DL_BFLOAT = 4
_K_DL_COMPLEX = 5


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.c_void_p),
        ("strides", ctypes.c_void_p),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = ctypes.c_void_p
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _dltensor(capsule: object) -> _DLTensor:
    # Legacy capsules start with the DLTensor; versioned ones embed it after a header.
    name = _get_name(capsule)
    pointer = _get_pointer(capsule, name)
    if name == b"dltensor_versioned":
        return _DLManagedTensorVersioned.from_address(pointer).dl_tensor
    if name == b"dltensor":
        return _DLTensor.from_address(pointer)
    raise BufferError(f"from_dlpack: not an unconsumed DLPack capsule (name {name!r})")


def to_dlpack(
    t: object,
    *,
    stream: object = None,
    max_version: tuple | None = None,
    dl_device: tuple | None = None,
    copy: bool | None = None,
) -> object:
    """A DLPack capsule sharing `t`'s memory (the `__dlpack__` protocol)."""
    if t._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if t._storage.data is None:
        raise BufferError(f"Cannot export a tensor on device '{t._device}' (it has no data)")
    if t._keyset & CONJ_BIT:  # a lazy conj view (Note: math bits, native/mathbits.py)
        raise BufferError("Can't export tensors with the conjugate bit set")
    array = t._numpy()
    patched_code = _EXPORT_CODES.get(t._dtype.name)
    if patched_code is not None:
        array = array.view(np.uint16 if t._dtype is dt.bfloat16 else np.uint32)
    kwargs: dict = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    if stream is not None and stream != -1:
        raise BufferError("__dlpack__: stream must be None for CPU tensors")
    capsule = array.__dlpack__(**kwargs)
    if patched_code is not None:
        _dltensor(capsule).dtype.code = patched_code
    return capsule


# dtypes NumPy cannot export, sent as unsigned integers of their size with this DLPack code.
_EXPORT_CODES = {"bfloat16": _K_DL_BFLOAT, "complex32": _K_DL_COMPLEX}


def dlpack_device(t: object) -> tuple[int, int]:
    """`__dlpack_device__`: (kDLCPU, 0) for every device whose bytes are host memory."""
    if t._storage.data is None:
        raise BufferError(f"Cannot export a tensor on device '{t._device}' (it has no data)")
    return (_K_DL_CPU, 0)


class _CapsuleHolder:
    # Hands NumPy a capsule we already hold (possibly with a patched dtype).
    def __init__(self, capsule: object) -> None:
        self._capsule = capsule

    def __dlpack__(self, **kwargs: object) -> object:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_K_DL_CPU, 0)


def from_dlpack(ext: object) -> object:
    """A tensor sharing memory with a DLPack producer (object with `__dlpack__`, or a
    legacy capsule). CPU memory only."""
    from pyaten.core.creation import from_numpy, share_array
    from pyaten.core.tensor import Tensor

    if isinstance(ext, Tensor):
        if ext._storage.data is None:
            return ext
        return share_array(ext._numpy(), ext._dtype)
    if hasattr(ext, "__dlpack__"):
        if hasattr(ext, "__dlpack_device__"):
            device_type, _ = ext.__dlpack_device__()
            if int(device_type) != _K_DL_CPU:
                raise RuntimeError(
                    f"from_dlpack: only CPU memory can be imported (got DLPack device type "
                    f"{int(device_type)})"
                )
        capsule = ext.__dlpack__()
    elif type(ext).__name__ == "PyCapsule":
        capsule = ext
    else:
        raise TypeError(
            f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got "
            f"{type(ext).__name__}"
        )
    tensor = _dltensor(capsule)
    code, bits = tensor.dtype.code, tensor.dtype.bits
    special = {(_K_DL_BFLOAT, 16): dt.bfloat16, (_K_DL_COMPLEX, 32): dt.complex32}.get(
        (code, bits)
    )
    if special is not None:
        tensor.dtype.code = _K_DL_UINT
    array = np.from_dlpack(_CapsuleHolder(capsule))
    if not array.flags.writeable:
        array = _writable_alias(array)
    if special is not None:
        return share_array(array.view(special.numpy), special)
    return from_numpy(array)


class _WritableAlias:
    # Re-describes the same memory without NumPy's read-only flag, keeping the owner alive.
    def __init__(self, array: np.ndarray) -> None:
        self.owner = array
        interface = dict(array.__array_interface__)
        interface["data"] = (interface["data"][0], False)
        self.__array_interface__ = interface


def _writable_alias(array: np.ndarray) -> np.ndarray:
    # Legacy DLPack has no read-only bit and PyTorch shares such memory writable; so do we.
    return np.asarray(_WritableAlias(array))
