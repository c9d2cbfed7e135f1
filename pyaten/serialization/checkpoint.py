"""`pyaten.save` and `pyaten.load`: PyTorch's checkpoint formats (docs/serialization.md).

Note: memory while loading
    A storage's bytes go from the file into the array that becomes the storage, once: a
    record is read with `readinto` into a fresh array of its size, or, with `mmap=True`,
    mapped copy-on-write straight out of the file (records are stored uncompressed and
    aligned, zip_archive.py), so nothing is read until a tensor's values are used. Every size
    a file declares is checked against the bytes the file holds before anything is
    allocated: a storage's element count against its record, a record against the file, a
    legacy storage against what is left of the file. The pickle is interpreted in place.
"""

from __future__ import annotations

import io
import os
import pickle
import sys
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.device import CPU
from pyaten.core.device import device as Device
from pyaten.core.storage import _ALLOCATORS, Storage
from pyaten.core.tensor import Tensor
from pyaten.serialization.pickler import CheckpointPickler, storage_bytes
from pyaten.serialization.torch_names import StorageType, TypedStorage
from pyaten.serialization.unpickler import FullUnpickler, WeightsUnpickler, unsafe_globals
from pyaten.serialization.zip_archive import ZipReader, ZipWriter

__all__ = ["get_unsafe_globals_in_checkpoint", "load", "save"]

_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001
_UNSAFE_MESSAGE = (
    "Re-running `pyaten.load` with `weights_only` set to `False` will likely succeed, but it "
    "can result in arbitrary code execution. Do it only if you got the file from a trusted "
    "source."
)
_DOCS_MESSAGE = (
    "\n\nCheck docs/serialization.md to learn more about types accepted by default with "
    "weights_only."
)

FileLike = str | os.PathLike | IO[bytes]


# ---------------------------------------------------------------------------- save

def save(
    obj: object,
    f: FileLike,
    pickle_module: Any = pickle,
    pickle_protocol: int = 2,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    """Save `obj` (anything picklable: tensors, modules, state dicts, NumPy arrays, nested
    containers) to `f` (a path or a binary file object) in PyTorch's checkpoint format, which
    `torch.load` reads. Tensors that share a storage keep sharing it."""
    if pickle_module not in (None, pickle):
        raise ValueError("pyaten.save: only Python's pickle module is supported as pickle_module")
    if type(pickle_protocol) is not int or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(
            f"pyaten.save: pickle_protocol must be an int from 2 to {pickle.HIGHEST_PROTOCOL}, "
            f"got {pickle_protocol!r}"
        )
    if isinstance(f, (str, os.PathLike)):
        name = os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
        with open(f, "wb") as handle:
            _save_to(obj, handle, name, pickle_protocol, _use_new_zipfile_serialization,
                     _disable_byteorder_record)
    else:
        if not hasattr(f, "write"):
            raise AttributeError(
                f"pyaten.save: f must be a path or a file object with write(), got "
                f"{type(f).__name__}"
            )
        _save_to(obj, f, "archive", pickle_protocol, _use_new_zipfile_serialization,
                 _disable_byteorder_record)


def _save_to(obj: object, out: IO[bytes], archive: str, protocol: int, zipped: bool,
             no_byteorder: bool) -> None:
    if not zipped:
        from pyaten.serialization.legacy_formats import save_legacy

        save_legacy(obj, out, protocol)
        return
    buffer = io.BytesIO()
    pickler = CheckpointPickler(buffer, protocol)
    pickler.dump(obj)
    writer = ZipWriter(out, archive)
    writer.write_record("data.pkl", buffer.getbuffer())
    writer.write_record(".format_version", b"1")
    writer.write_record(".storage_alignment", b"64")
    if not no_byteorder:
        writer.write_record("byteorder", sys.byteorder.encode())
    for key, storage in pickler.storages:
        writer.write_record(f"data/{key}", storage_bytes(storage))
    writer.write_record("version", b"3\n")
    serial = int.from_bytes(os.urandom(16), "little")
    writer.write_record(".data/serialization_id", f"{serial:040d}"[:40].encode())
    writer.close()


# ---------------------------------------------------------------------------- load

def load(
    f: FileLike,
    map_location: object = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    """Load an object saved by `torch.save` or `pyaten.save` (zip or legacy format; a
    safetensors file too). `weights_only` (the default) unpickles only tensors, containers
    and allow-listed globals; `weights_only=False` unpickles anything and may run code.
    `mmap=True` maps storages from the file instead of reading them. `map_location`: a
    device or device string, a dict from saved locations to new ones, or a callable
    `(storage, location) -> storage or None`."""
    if weights_only is None:
        weights_only = pickle_module is None
    elif weights_only and pickle_module is not None:
        raise RuntimeError(
            "Can not safely load weights when explicit pickle_module is specified"
        )
    encoding = pickle_load_args.pop("encoding", "utf-8")
    if mmap and not isinstance(f, (str, os.PathLike)):
        raise ValueError("f must be a file path in order to use the mmap argument")
    _check_map_location(map_location)
    options = _Options(map_location, bool(weights_only), bool(mmap), encoding, pickle_load_args)
    if isinstance(f, (str, os.PathLike)):
        options.path = os.fspath(f)
        options.what = repr(options.path)
        with open(f, "rb") as handle:
            return _load_from(handle, options)
    if not hasattr(f, "read"):
        raise AttributeError(
            f"pyaten.load: f must be a path or a binary file object, got {type(f).__name__}"
        )
    try:
        f.seek(f.tell())
    except (io.UnsupportedOperation, AttributeError) as error:
        raise type(error)(
            f"{error}. You can only pyaten.load from a file that is seekable. Please pre-load "
            "the data into a buffer like io.BytesIO and try to load from it instead."
        ) from None
    return _load_from(f, options)


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list[str]:
    """The globals of a zip checkpoint's pickle that `weights_only` loading would refuse
    (neither PyTorch's allow-list nor `add_safe_globals` has them), found without loading."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:
            return get_unsafe_globals_in_checkpoint(handle)
    reader = ZipReader(f, "the file")
    if not reader.has("data.pkl"):
        raise RuntimeError("pyaten.load: the file is not a valid checkpoint: it has no data.pkl")
    try:
        return unsafe_globals(reader.read("data.pkl", reader.file_size))
    except pickle.UnpicklingError as error:
        raise pickle.UnpicklingError(f"get_unsafe_globals_in_checkpoint: {error}") from None


class _Options:
    def __init__(self, map_location: object, weights_only: bool, mmap: bool, encoding: str,
                 extra: dict) -> None:
        self.map_location = map_location
        self.weights_only = weights_only
        self.mmap = mmap
        self.encoding = encoding
        self.extra = extra
        self.path: str | None = None
        self.what = "the file"


def _check_map_location(map_location: object) -> None:
    if map_location is None or callable(map_location):
        return
    if isinstance(map_location, (str, Device)):
        return
    if isinstance(map_location, dict):
        for key, value in map_location.items():
            if not isinstance(key, str) or not isinstance(value, (str, Device)):
                raise TypeError(
                    "pyaten.load: map_location as a dict maps location strings to devices or "
                    "device strings"
                )
        return
    raise TypeError(
        "pyaten.load: map_location must be None, a str, a device, a dict or a callable, got "
        f"{type(map_location).__name__}"
    )


def _load_from(handle: IO[bytes], options: _Options) -> Any:
    start = handle.tell()
    head = handle.read(512)
    handle.seek(start)
    if not isinstance(head, bytes):
        raise TypeError(
            f"pyaten.load: f must be opened in binary mode ('rb'), its read() returned "
            f"{type(head).__name__}"
        )
    if head[:4] == b"PK\x03\x04":
        return _load_zip(handle, options)
    if len(head) >= 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") < 1 << 32:
        from pyaten.serialization.safetensors_format import load_safetensors

        return load_safetensors(handle, options.map_location)
    if options.mmap:
        raise RuntimeError(
            "mmap can only be used with files saved with "
            "`pyaten.save(_use_new_zipfile_serialization=True)`, please pyaten.save your "
            "checkpoint with this option in order to use mmap."
        )
    from pyaten.serialization.legacy_formats import load_legacy, load_tar

    if head[257:262] == b"ustar":
        return load_tar(handle, options)
    return load_legacy(handle, options)


def _unpickle(source: Any, persistent_load: Callable, options: _Options, start: int = 0,
              ends: list | None = None) -> Any:
    """The object pickled at `start` in `source` (a bytes-like object; with
    `weights_only=False` also a file positioned there); its end position goes to `ends`."""
    if not options.weights_only:
        stream = io.BytesIO(source) if not hasattr(source, "read") else source
        return FullUnpickler(stream, persistent_load, encoding=options.encoding,
                             **options.extra).load()
    unpickler = WeightsUnpickler(source, persistent_load, options.encoding, start)
    try:
        result = unpickler.load()
    except pickle.UnpicklingError as error:
        raise pickle.UnpicklingError(_weights_only_message(str(error))) from None
    if ends is not None:
        ends.append(unpickler.end_position)
    return result


def _weights_only_message(message: str) -> str:
    if "was not an allowed global by default" in message:
        text = (
            "Weights only load failed. This file can still be loaded, to do so you have two "
            "options, do those steps only if you trust the source of the checkpoint. "
            f"\n\t(1) {_UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` "
            "please check the recommended steps in the following error message.\n\t"
            "WeightsUnpickler error: " + message
        )
    else:
        text = f"Weights only load failed. {_UNSAFE_MESSAGE}\n"
        if "is blocked" not in message:
            text += "Please file an issue with the following so that we can make " \
                    "`weights_only=True` compatible with your use case: WeightsUnpickler error: "
        text += "\n\n" + message
    return text + _DOCS_MESSAGE


def _bad(options: _Options, problem: str) -> RuntimeError:
    return RuntimeError(f"pyaten.load: {options.what} is not a valid checkpoint: {problem}")


def _parse_pid(pid: object, options: _Options, legacy: bool) -> tuple:
    if type(pid) is not tuple or len(pid) != (6 if legacy else 5):
        raise _bad(options, f"a persistent id is not a storage record: {pid!r:.80}")
    _, storage_type, key, location, numel = pid[:5]
    if isinstance(key, bytes):
        key = key.decode("ascii", "replace")
    if isinstance(location, bytes):
        location = location.decode("ascii", "replace")
    if not isinstance(storage_type, StorageType):
        raise _bad(options, f"storage type {storage_type!r:.60} is not a storage class")
    if not isinstance(key, str) or not isinstance(location, str) or len(key) > 256:
        raise _bad(options, "a storage key or location is not a short string")
    if type(numel) is not int or not 0 <= numel < 2**62:
        raise _bad(options, f"storage '{key}' declares {numel!r:.40} elements")
    return storage_type.dtype, key, location, numel, (pid[5] if legacy else None)


# --- map_location -------------------------------------------------------------------------------

def _restore(storage: Storage, location: str, map_location: object) -> Storage:
    if map_location is None:
        target: object = location
    elif isinstance(map_location, (str, Device)):
        target = map_location
    elif isinstance(map_location, dict):
        target = map_location.get(location, location)
    else:
        result = map_location(storage, location)
        if result is None:
            target = location
        elif isinstance(result, Storage):
            return result
        elif isinstance(result, TypedStorage):
            return result.untyped
        else:
            raise TypeError(
                "pyaten.load: a callable map_location must return a storage or None, got "
                f"{type(result).__name__}"
            )
    return _move(storage, target)


def _move(storage: Storage, target: object) -> Storage:
    device = target if isinstance(target, Device) else Device(str(target))
    if device.type == "cpu":
        return storage
    if device.type not in _ALLOCATORS:
        raise RuntimeError(
            f"Attempting to deserialize object on a {device.type.upper()} device but "
            f"pyaten.{device.type}.is_available() is False. If you are running on a CPU-only "
            "machine, please use pyaten.load with map_location=pyaten.device('cpu') to map "
            "your storages to the CPU."
        )
    whole = Tensor._make(storage, (storage.nbytes,), (1,), 0, dt.uint8, CPU)
    return whole.to(device)._storage


# --- the zip format -----------------------------------------------------------------------------

def _load_zip(handle: IO[bytes], options: _Options) -> Any:
    reader = ZipReader(handle, options.what)
    if not reader.has("data.pkl"):
        if reader.has("constants.pkl"):
            raise RuntimeError(
                f"pyaten.load: {options.what} is a TorchScript archive, which pyaten cannot load"
            )
        raise _bad(options, "the archive has no data.pkl")
    byteorder = reader.read("byteorder", 16) if reader.has("byteorder") else b"little"
    if byteorder not in (b"little", b"big"):
        raise _bad(options, f"unknown byteorder {byteorder!r}")
    swap = byteorder.decode() != sys.byteorder
    mapped = None
    if options.mmap:
        mapped = np.memmap(options.path, dtype=np.uint8, mode="c").view(np.ndarray)
        start = reader.data_offset("data.pkl")
        pickled: Any = mapped[start : start + reader.size("data.pkl")]  # read in place
    else:
        pickled = reader.read("data.pkl", reader.file_size)
    loaded: dict[str, TypedStorage] = {}

    def persistent_load(pid: object) -> TypedStorage:
        dtype, key, location, numel, _ = _parse_pid(pid, options, legacy=False)
        found = loaded.get(key)
        if found is not None:
            return found if found.dtype is dtype else TypedStorage(found.untyped, dtype)
        record = f"data/{key}"
        if not reader.has(record):
            raise _bad(options, f"storage '{key}' has no record in the archive")
        nbytes = numel * dtype.itemsize
        if reader.size(record) != nbytes:
            raise _bad(
                options,
                f"storage '{key}' declares {numel} elements of {dtype} ({nbytes} bytes) but its "
                f"record holds {reader.size(record)} bytes",
            )
        if mapped is not None:
            offset = reader.data_offset(record)
            data = mapped[offset : offset + nbytes]
            if swap and dtype.itemsize > 1:
                data = data.copy()
        else:
            data = np.empty(nbytes, np.uint8)
            reader.read_into(record, data)
        if swap and dtype.itemsize > 1:
            data.view(dtype.numpy).byteswap(inplace=True)
        storage = _restore(Storage(nbytes, CPU, data=data), location, options.map_location)
        typed = TypedStorage(storage, dtype)
        loaded[key] = typed
        return typed

    return _unpickle(pickled, persistent_load, options)
