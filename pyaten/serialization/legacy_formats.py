"""PyTorch's formats before the zip: the legacy pickle sequence (PyTorch before 1.6, or
`_use_new_zipfile_serialization=False`), read and written, and the tar format of PyTorch
before 0.4, read (see checkpoint.py for the zip format and the shared rules).

A legacy file is five pickles in a row (a magic number, a protocol version, system
information, the object with storages by persistent id, the list of storage keys) followed
by each storage's element count and bytes. The pickles are interpreted in place (a read-only
map of the file, or a BytesIO's buffer); storages are allocated only when the rest of the
file can hold them, and filled with `readinto`.
"""

from __future__ import annotations

import io
import mmap
import os
import pickle
import struct
import sys
from typing import IO, Any

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.device import CPU
from pyaten.core.device import device as Device
from pyaten.core.storage import Storage
from pyaten.serialization import torch_names
from pyaten.serialization.checkpoint import (
    _LEGACY_PROTOCOL,
    _MAGIC,
    _UNSAFE_MESSAGE,
    _bad,
    _Options,
    _parse_pid,
    _restore,
    _unpickle,
)
from pyaten.serialization.pickler import CheckpointPickler, storage_bytes
from pyaten.serialization.torch_names import StorageType, TypedStorage
from pyaten.serialization.unpickler import FullUnpickler

__all__ = ["load_legacy", "load_tar", "save_legacy"]


class _LegacyPickler(CheckpointPickler):
    def persistent_id(self, obj: Any) -> tuple | None:
        pid = super().persistent_id(obj)
        return None if pid is None else (*pid, None)  # no storage view metadata


def save_legacy(obj: object, out: IO[bytes], protocol: int) -> None:
    sys_info = {"protocol_version": _LEGACY_PROTOCOL, "little_endian": sys.byteorder == "little",
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    for header in (_MAGIC, _LEGACY_PROTOCOL, sys_info):
        pickle.dump(header, out, protocol=protocol)
    pickler = _LegacyPickler(out, protocol)
    pickler.dump(obj)
    pickle.dump([key for key, _ in pickler.storages], out, protocol=protocol)
    for _, storage in pickler.storages:
        dtype = pickler.storage_dtypes.get(id(storage), dt.uint8)
        out.write(struct.pack("<q", storage.nbytes // dtype.itemsize))
        out.write(memoryview(storage_bytes(storage)))


# --- the legacy format (PyTorch before 1.6, or _use_new_zipfile_serialization=False) -----------

def load_legacy(handle: IO[bytes], options: _Options) -> Any:
    with _whole_file(handle) as data:
        return _read_legacy(handle, data, options)


class _whole_file:  # noqa: N801 - a context manager
    """The file's bytes without reading them: a read-only map of a real file, the buffer of a
    BytesIO, or (other file objects) their contents read once."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.mapping: mmap.mmap | None = None
        self.view: memoryview | None = None

    def __enter__(self) -> memoryview:
        handle = self.handle
        try:
            fileno = handle.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            fileno = None
        if fileno is not None and os.fstat(fileno).st_size > 0:
            self.mapping = mmap.mmap(fileno, 0, access=mmap.ACCESS_READ)
            self.view = memoryview(self.mapping)
        elif isinstance(handle, io.BytesIO):
            self.view = handle.getbuffer()
        else:
            position = handle.tell()
            handle.seek(0)
            self.view = memoryview(handle.read())
            handle.seek(position)
        return self.view

    def __exit__(self, *exc: object) -> None:
        try:
            if self.view is not None:
                self.view.release()
            if self.mapping is not None:
                self.mapping.close()
        except BufferError:
            pass  # an error's traceback still holds a slice: the map closes when it is freed


def _read_legacy(handle: IO[bytes], data: memoryview, options: _Options) -> Any:
    end = len(data)
    position = [handle.tell()]
    plain = _Options(None, True, False, options.encoding, {})
    plain.what = options.what

    def no_storages(pid: object) -> None:
        raise pickle.UnpicklingError("a legacy checkpoint's header holds a persistent id")

    def header() -> object:
        ends: list[int] = []
        try:
            value = _unpickle(data, no_storages, plain, position[0], ends)
        except pickle.UnpicklingError as error:
            raise _bad(options, f"not a PyTorch checkpoint ({error})") from None
        position[0] = ends[0]
        return value

    if header() != _MAGIC:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol_version = header()
    if protocol_version != _LEGACY_PROTOCOL:
        raise RuntimeError(f"Invalid protocol version: {protocol_version}")
    sys_info = header()
    if not isinstance(sys_info, dict) or sys_info.get("little_endian") is not True:
        raise _bad(options, "only little-endian legacy checkpoints are supported")
    roots: dict[str, tuple[TypedStorage, str]] = {}

    def persistent_load(pid: object) -> TypedStorage:
        dtype, key, location, numel, view = _parse_pid(pid, options, legacy=True)
        if location != "cpu" or options.map_location not in (None, "cpu", CPU):
            _legacy_location(location, options)
        root = roots.get(key)
        if root is None:
            nbytes = numel * dtype.itemsize
            if nbytes > end - position[0]:
                raise _bad(options, f"storage '{key}' declares {nbytes} bytes, more than the "
                           "rest of the file holds")
            root = (TypedStorage(Storage(nbytes, CPU, data=np.empty(nbytes, np.uint8)), dtype),
                    location)
            roots[key] = root
        typed = root[0]
        if view is None:
            return typed if typed.dtype is dtype else TypedStorage(typed.untyped, dtype)
        if type(view) is not tuple or len(view) != 3:
            raise _bad(options, "a storage view record is malformed")
        _, offset, size = view
        if not all(type(v) is int and v >= 0 for v in (offset, size)) or \
                (offset + size) * dtype.itemsize > typed.untyped.nbytes:
            raise _bad(options, f"a view of storage '{key}' lies outside it")
        part = typed.untyped.data[offset * dtype.itemsize : (offset + size) * dtype.itemsize]
        return TypedStorage(Storage(part.nbytes, CPU, data=part), dtype)

    if options.weights_only:
        ends: list[int] = []
        result = _unpickle(data, persistent_load, options, position[0], ends)
        position[0] = ends[0]
    else:
        handle.seek(position[0])
        result = _unpickle(handle, persistent_load, options)
        position[0] = handle.tell()
    keys = header()
    if not isinstance(keys, list) or len(keys) != len(set(map(str, keys))):
        raise _bad(options, "the storage key list is malformed")
    handle.seek(position[0])
    for key in keys:
        root = roots.get(key if isinstance(key, str) else str(key))
        if root is None:
            raise _bad(options, f"storage '{key}' is listed but never used")
        typed = root[0]
        counted = handle.read(8)
        if len(counted) != 8:
            raise _bad(options, "the file is truncated")
        numel = struct.unpack("<q", counted)[0]
        if numel * typed.dtype.itemsize != typed.untyped.nbytes:
            raise _bad(options, f"storage '{key}' holds {numel} elements, not the declared "
                       f"{typed.untyped.nbytes // typed.dtype.itemsize}")
        view = memoryview(typed.untyped.data)
        done = 0
        while done < view.nbytes:
            got = handle.readinto(view[done:])
            if not got:
                raise _bad(options, "the file is truncated")
            done += got
    if len(keys) != len(roots):
        raise _bad(options, "a storage has no data in the file")
    return result


# --- the tar format (PyTorch before 0.4) -------------------------------------------------------

def load_tar(handle: IO[bytes], options: _Options) -> Any:
    """A tar of `storages` (pickled (key, location, type) headers, each followed by its
    element count and bytes, then the storage views), `tensors` (pickled headers and packed
    geometry) and `pickle` (the object, tensors and storages by persistent id). Its pickles
    call constructors freely, so, as PyTorch, only `weights_only=False` reads it."""
    if options.weights_only:
        raise RuntimeError(
            "Cannot use ``weights_only=True`` with files saved in the legacy .tar format. "
            + _UNSAFE_MESSAGE
        )
    import tarfile

    objects: dict[int, Any] = {}
    try:
        archive = tarfile.open(fileobj=handle, mode="r:")
    except tarfile.TarError as error:
        raise _bad(options, f"the tar archive is unreadable ({error})") from None
    with archive:
        def member(name: str) -> IO[bytes]:
            try:
                found = archive.extractfile(name)
            except KeyError:
                found = None
            if found is None:
                raise _bad(options, f"the tar archive has no '{name}' member")
            return found

        def unpickle(stream: IO[bytes]) -> Any:
            return _TarUnpickler(stream, _no_persistent, encoding=options.encoding).load()

        stream = member("storages")
        size = archive.getmember("storages").size
        for _ in range(_count(unpickle(stream), options)):
            key, location, storage_type = unpickle(stream)
            if not isinstance(storage_type, StorageType) or not isinstance(location, str):
                raise _bad(options, "a storage header is malformed")
            numel = struct.unpack("<q", _read_exactly(stream, 8, options))[0]
            nbytes = numel * storage_type.dtype.itemsize
            if not 0 <= nbytes <= size:
                raise _bad(options, f"storage {key!r} declares {numel} elements")
            data = np.empty(nbytes, np.uint8)
            view, done = memoryview(data), 0
            while done < nbytes:
                got = stream.readinto(view[done:])
                if not got:
                    raise _bad(options, "the tar checkpoint is truncated")
                done += got
            storage = _restore(Storage(nbytes, CPU, data=data), location, options.map_location)
            objects[key] = TypedStorage(storage, storage_type.dtype)
        for target, root, offset, numel in unpickle(stream):
            typed = objects[root]
            size_ = typed.dtype.itemsize
            part = typed.untyped.data[offset * size_ : (offset + numel) * size_]
            objects[target] = TypedStorage(Storage(part.nbytes, CPU, data=part), typed.dtype)
        stream = member("tensors")
        for _ in range(_count(unpickle(stream), options)):
            key, storage_id, _ = unpickle(stream)
            ndim = struct.unpack("<i", _read_exactly(stream, 4, options))[0]
            if not 0 <= ndim <= 64:
                raise _bad(options, f"tensor {key!r} has {ndim} dimensions")
            _read_exactly(stream, 4, options)  # ndim was written as 8 bytes
            sizes = struct.unpack(f"<{ndim}q", _read_exactly(stream, 8 * ndim, options))
            strides = struct.unpack(f"<{ndim}q", _read_exactly(stream, 8 * ndim, options))
            offset = struct.unpack("<q", _read_exactly(stream, 8, options))[0]
            objects[key] = torch_names._rebuild_tensor(objects.get(storage_id), offset, sizes,
                                                       strides)

        def persistent_load(saved_id: object) -> Any:
            if isinstance(saved_id, tuple):
                return saved_id[0]  # a module class with its source: the class
            return objects[int(saved_id)]

        return _TarUnpickler(member("pickle"), persistent_load,
                             encoding=options.encoding).load()


class _TarUnpickler(FullUnpickler):
    """The tar format names tensor classes (`torch.FloatTensor`) it never calls."""

    def find_class(self, module: str, name: str) -> object:
        if module == "torch" and name.endswith("Tensor") and name != "Tensor":
            found = torch_names.resolve_torch_global(module, name)
            return found if found is not None else name
        return super().find_class(module, name)


def _no_persistent(pid: object) -> None:
    raise pickle.UnpicklingError("a tar checkpoint's header holds a persistent id")


def _count(value: object, options: _Options) -> int:
    if type(value) is not int or not 0 <= value < 2**31:
        raise _bad(options, f"a count is {value!r}")
    return value


def _read_exactly(stream: IO[bytes], n: int, options: _Options) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise _bad(options, "the tar checkpoint is truncated")
    return data


def _legacy_location(location: str, options: _Options) -> None:
    target = location if options.map_location is None else options.map_location
    if isinstance(target, dict):
        target = target.get(location, location)
    if callable(target):
        return  # called with the CPU storage, which it may keep
    if Device(str(target)).type != "cpu":
        raise RuntimeError(
            f"pyaten.load: a legacy checkpoint's storages load on the CPU only (the file says "
            f"'{location}'): pass map_location='cpu' and move the result"
        )



