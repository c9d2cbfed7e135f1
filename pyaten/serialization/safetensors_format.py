"""`save_safetensors` / `load_safetensors`: tensors and state dicts as safetensors
(docs/serialization.md). `pyaten.save` writes PyTorch's checkpoint format instead
(checkpoint.py); `pyaten.load` hands the safetensors files it meets to `load_safetensors`.

A file is a plain safetensors file. Its tensor table holds the bytes of every storage saved;
its `__metadata__` holds one JSON document (key `pyaten`) describing the saved object: the
container structure, and each tensor as (storage, dtype, offset, sizes, strides). Tensors that
share a storage are written once and share it again after loading. Nothing is pickled, so
loading a hostile file can fail, but never runs code.

A tensor that owns its storage alone (the common case: a state dict) is stored under its own
name and shape, so other safetensors readers see ordinary tensors; the storages of views are
stored as flat `uint8` entries named `__storage_<n>__`.
"""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict
from typing import IO, Any

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.device import device as Device
from pyaten.core.storage import Storage, is_host_memory
from pyaten.core.tensor import Size, Tensor

__all__ = ["save_safetensors", "load_safetensors"]

_FORMAT = "pyaten.safetensors"
_VERSION = 1
_MAX_HEADER = 100_000_000  # safetensors' own limit on the JSON header
_MAX_DEPTH = 200

# pyaten dtype name -> the safetensors dtype its bytes are stored as (complex128 as float64
# pairs: safetensors has no C128).
_STORED_AS = {
    "bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16", "int32": "int32",
    "int64": "int64", "float16": "float16", "bfloat16": "bfloat16", "float32": "float32",
    "float64": "float64", "complex64": "complex64", "complex128": "float64",
}
# safetensors' dtype codes -> pyaten dtype names (for files other writers made).
_FROM_CODE = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "I32": "int32",
    "I64": "int64", "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64",
    "C64": "complex64",
}
_TORCH_PICKLE_MESSAGE = (
    "pyaten.load_safetensors: {what} is a PyTorch checkpoint ({kind}), not a safetensors "
    "file: read it with `pyaten.load` (weights_only by default), or convert it in PyTorch "
    "with `safetensors.torch.save_file(torch.load(path), 'model.safetensors')`."
)


# ---------------------------------------------------------------------------- save

class _Writer:
    """Walks the object once, numbering tensors and storages, building the JSON tree."""

    def __init__(self) -> None:
        self.tensors: list[dict] = []
        self.tensor_ids: dict[int, int] = {}
        self.storage_users: dict[int, list[Tensor]] = {}
        self.paths: dict[int, str] = {}
        self.keep: list[object] = []  # holds objects whose id() we use

    def node(self, obj: Any, path: str, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise ValueError(
                f"pyaten.save_safetensors: the object is nested deeper than {_MAX_DEPTH} levels"
            )
        if isinstance(obj, Tensor):
            return {"t": "tensor", "i": self.tensor(obj, path)}
        leaf = _leaf_node(obj)
        if leaf is not None:
            return leaf
        if isinstance(obj, dict):
            kind = "odict" if isinstance(obj, OrderedDict) else "dict"
            keys = [_key_node(k) for k in obj]
            values = [self.node(v, _join(path, k), depth + 1) for k, v in obj.items()]
            return {"t": kind, "k": keys, "v": values}
        if isinstance(obj, Size):
            return {"t": "size", "v": [int(s) for s in obj]}
        if isinstance(obj, (list, tuple)) and (type(obj) in (list, tuple)):
            items = [self.node(v, _join(path, i), depth + 1) for i, v in enumerate(obj)]
            return {"t": "list" if isinstance(obj, list) else "tuple", "v": items}
        raise TypeError(
            f"pyaten.save_safetensors: cannot save an object of type {type(obj).__name__} at "
            f"'{path or '<root>'}': only tensors, dicts, lists, tuples and int, float, "
            "complex, str, bool, None, dtype and device leaves are saved"
        )

    def tensor(self, t: Tensor, path: str) -> int:
        found = self.tensor_ids.get(id(t))
        if found is not None:
            return found
        if t._storage.data is None:
            raise RuntimeError(
                f"pyaten.save_safetensors: the tensor at '{path or '<root>'}' is on {t.device}, "
                "which has no data to save"
            )
        index = len(self.tensors)
        self.tensor_ids[id(t)] = index
        self.keep.append(t)
        self.storage_users.setdefault(id(t._storage), []).append(t)
        self.paths[id(t)] = path
        self.tensors.append({
            "dtype": t.dtype.name,
            "offset": int(t._offset),
            "sizes": [int(s) for s in t._sizes],
            "strides": [int(s) for s in t._strides],
            "device": str(t.device),
            "requires_grad": bool(t.requires_grad),
            "parameter": _is_parameter(t),
        })
        return index


def _is_parameter(t: Tensor) -> bool:
    if type(t) is Tensor:
        return False
    from pyaten.nn.parameter import Parameter

    return isinstance(t, Parameter)


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def _leaf_node(obj: Any) -> dict | None:
    """The JSON node of a scalar leaf, or None when `obj` is no leaf."""
    if obj is None:
        return {"t": "none"}
    if isinstance(obj, bool):
        return {"t": "bool", "v": obj}
    if isinstance(obj, int):
        return {"t": "int", "v": str(int(obj))}
    if isinstance(obj, float):
        return {"t": "float", "v": float(obj).hex()}
    if isinstance(obj, complex):
        return {"t": "complex", "v": [obj.real.hex(), obj.imag.hex()]}
    if isinstance(obj, str):
        return {"t": "str", "v": str(obj)}
    if isinstance(obj, dt.dtype):
        return {"t": "dtype", "v": obj.name}
    if isinstance(obj, Device):
        return {"t": "device", "v": str(obj)}
    return None


def _key_node(key: object) -> dict:
    node = _leaf_node(key)
    if node is None or node["t"] in ("dtype", "device"):
        raise TypeError(
            f"pyaten.save_safetensors: cannot save a dict key of type {type(key).__name__}: keys "
            "must be str, int, float, bool or None"
        )
    return node


def _storage_bytes(t: Tensor) -> np.ndarray:
    """The bytes of `t`'s storage as a host uint8 array (copied from a plug-in device's own
    memory through the device)."""
    storage = t._storage
    if is_host_memory(storage.data):
        return storage.data[: storage.nbytes]
    whole = Tensor._make(storage, (storage.nbytes,), (1,), 0, dt.uint8, storage.device)
    return whole.cpu()._numpy()


def _storage_entries(writer: _Writer) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
    """The safetensors table (name -> array) and each storage's description."""
    arrays: dict[str, np.ndarray] = {}
    storages: dict[str, dict] = {}
    used = set()
    for users in writer.storage_users.values():
        first = users[0]
        data = _storage_bytes(first)
        if len(users) == 1 and _owns_storage(first):
            name = _unique_name(writer.paths[id(first)], used)
            dtype = first.dtype
            values = data.view(dt.BY_NAME[_STORED_AS[dtype.name]].numpy)
            shape = [*first._sizes, 2] if dtype.name == "complex128" else list(first._sizes)
            arrays[name] = values.reshape(shape)
        else:
            name = _unique_name(f"__storage_{len(storages)}__", used)
            arrays[name] = np.ascontiguousarray(data)
        storages[name] = {"nbytes": int(first._storage.nbytes)}
        for t in users:
            writer.tensors[writer.tensor_ids[id(t)]]["storage"] = name
    return arrays, storages


def _owns_storage(t: Tensor) -> bool:
    """Whether `t` is exactly its whole storage, laid out contiguously."""
    return (
        t._offset == 0
        and t.is_contiguous()
        and t.numel() * t.dtype.itemsize == t._storage.nbytes
        and t.numel() > 0
    )


def _unique_name(name: str, used: set[str]) -> str:
    if not name or name == "__metadata__" or name.startswith("__storage_"):
        name = f"tensor{len(used)}"
    candidate, n = name, 1
    while candidate in used:
        candidate, n = f"{name}#{n}", n + 1
    used.add(candidate)
    return candidate


def _serialize(arrays: dict[str, np.ndarray], metadata: dict[str, str]) -> bytes:
    import safetensors

    if hasattr(safetensors, "TensorSpec"):  # safetensors >= 0.7: pointers, no copies
        table = {
            name: safetensors.TensorSpec(
                dtype=a.dtype.name, shape=list(a.shape), data_ptr=a.ctypes.data,
                data_len=a.nbytes,
            )
            for name, a in arrays.items()
        }
    else:
        table = {
            name: {"dtype": a.dtype.name, "shape": list(a.shape), "data": a.tobytes()}
            for name, a in arrays.items()
        }
    return bytes(safetensors.serialize(table, metadata=metadata))


def save_safetensors(obj: object, f: str | os.PathLike | IO[bytes]) -> None:
    """Save a tensor, a state dict or a nested container of tensors and scalars to `f` (a
    path or a binary file object) as a safetensors file. Views keep sharing storage."""
    writer = _Writer()
    root = writer.node(obj, "", 0)
    arrays, storages = _storage_entries(writer)
    document = {
        "format": _FORMAT, "version": _VERSION, "root": root,
        "tensors": writer.tensors, "storages": storages,
    }
    payload = _serialize(arrays, {"pyaten": json.dumps(document, separators=(",", ":"))})
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as handle:
            handle.write(payload)
    else:
        f.write(payload)


# ---------------------------------------------------------------------------- load

def _bad(problem: str) -> RuntimeError:
    return RuntimeError(f"pyaten.load: invalid safetensors file: {problem}")


_ITEMSIZE = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2,
    "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8,
}
_MAX_DOCUMENT = 16 << 20  # pyaten's JSON document: ~100k tensor descriptions at most


class _Source:
    """A safetensors file opened for reading: its header parsed and checked, each tensor's
    bytes read on request straight into a new array (never the whole file at once)."""

    def __init__(self, handle: IO[bytes], what: str) -> None:
        self.handle = handle
        start = handle.tell()
        handle.seek(0, os.SEEK_END)
        self.file_size = handle.tell() - start
        handle.seek(start)
        head = handle.read(8)
        if not isinstance(head, (bytes, bytearray)):
            raise TypeError(
                "pyaten.load: f must be a path or a file object opened in binary mode"
            )
        _check_not_torch(head + handle.read(1), what, self.file_size)
        handle.seek(start + 8)
        if len(head) < 8:
            raise _bad(f"the file is {len(head)} bytes long, shorter than the 8-byte header "
                       "length")
        size = int.from_bytes(head, "little")
        if size > _MAX_HEADER:
            raise _bad(f"the header length {size} is larger than the limit of {_MAX_HEADER} "
                       "bytes")
        if size > self.file_size - 8:
            raise _bad(
                f"the header length {size} is larger than the file ({self.file_size} bytes): "
                "the file is truncated or not a safetensors file"
            )
        try:
            header = json.loads(handle.read(size).decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            raise _bad(f"the header is not valid JSON ({error})") from None
        if not isinstance(header, dict):
            raise _bad("the header is not a JSON object")
        self.header = header
        self.data_start = start + 8 + size
        self.entries = self._check_entries(self.file_size - 8 - size)

    def _check_entries(self, data_size: int) -> dict[str, dict]:
        entries: dict[str, dict] = {}
        spans = []
        for name, entry in self.header.items():
            if name == "__metadata__":
                continue
            if not isinstance(entry, dict) or entry.get("dtype") not in _ITEMSIZE:
                raise _bad(f"tensor '{name}' has no known dtype")
            shape, offsets = entry.get("shape"), entry.get("data_offsets")
            if not isinstance(shape, list) or not all(_is_count(v) for v in shape):
                raise _bad(f"tensor '{name}' has a malformed shape")
            if not isinstance(offsets, list) or len(offsets) != 2 or \
                    not all(_is_count(v) for v in offsets) or offsets[0] > offsets[1]:
                raise _bad(f"tensor '{name}' has malformed data offsets")
            nbytes = math.prod(shape) * _ITEMSIZE[entry["dtype"]]
            if offsets[1] - offsets[0] != nbytes:
                raise _bad(f"tensor '{name}' has {offsets[1] - offsets[0]} bytes for shape "
                           f"{shape}")
            spans.append((offsets[0], offsets[1], name))
            entries[name] = {"dtype": entry["dtype"], "shape": shape, "offsets": offsets}
        end = 0
        for begin, stop, name in sorted(spans):
            if begin != end:
                raise _bad(f"tensor '{name}' does not start where the previous one ends")
            end = stop
        if end != data_size:
            raise _bad(f"the tensors cover {end} bytes of the {data_size} the file holds")
        return entries

    def read(self, name: str) -> np.ndarray:
        begin, stop = self.entries[name]["offsets"]
        values = np.empty(stop - begin, np.uint8)
        self.handle.seek(self.data_start + begin)
        view, done = memoryview(values), 0
        while done < values.nbytes:
            got = self.handle.readinto(view[done:])
            if not got:
                raise _bad(f"tensor '{name}' is truncated")
            done += got
        return values


def _check_not_torch(head: bytes, what: str, file_size: int) -> None:
    size = int.from_bytes(head[:8], "little")
    if head[8:9] == b"{" and size <= file_size - 8:
        return  # a safetensors header (whose length may begin like a pickle's opcodes)
    if head[:4] == b"PK\x03\x04":
        raise RuntimeError(_TORCH_PICKLE_MESSAGE.format(what=what, kind="a zip archive of pickles"))
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        raise RuntimeError(_TORCH_PICKLE_MESSAGE.format(what=what, kind="a legacy pickle"))


def load_safetensors(f: str | os.PathLike | IO[bytes], map_location: object = None) -> Any:
    """Load what `save_safetensors` saved (or any safetensors file, as a dict of tensors) from
    a path or binary file object. `map_location`: a device, a device string, or a dict
    mapping saved device strings to new ones. Nothing is unpickled; each tensor's bytes are
    read once, into its storage."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as handle:
            return _load(_Source(handle, repr(os.fspath(f))), map_location)
    if not hasattr(f, "read") or not hasattr(f, "seek"):
        raise TypeError("pyaten.load: f must be a path or a file object opened in binary mode")
    return _load(_Source(f, "the file"), map_location)


def _load(source: _Source, map_location: object) -> Any:
    metadata = source.header.get("__metadata__") or {}
    if not isinstance(metadata, dict):
        raise _bad("__metadata__ is not a JSON object")
    text = metadata.get("pyaten")
    if text is None:
        return {name: _plain_tensor(name, source, map_location) for name in source.entries}
    if not isinstance(text, str):
        raise _bad("the pyaten metadata is not a string")
    if len(text) > _MAX_DOCUMENT:
        raise _bad(f"the pyaten metadata is {len(text)} characters long, more than the limit "
                   f"of {_MAX_DOCUMENT}")
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise _bad(f"the pyaten metadata is not valid JSON ({error})") from None
    return _Reader(document, source, map_location).load()


def _plain_tensor(name: str, source: _Source, map_location: object) -> Tensor:
    entry = source.entries[name]
    code = entry["dtype"]
    dtype_name = _FROM_CODE.get(code)
    if dtype_name is None:
        raise RuntimeError(f"pyaten.load: tensor '{name}' has dtype {code}, which pyaten lacks")
    dtype = dt.BY_NAME[dtype_name]
    sizes = tuple(int(s) for s in entry["shape"])
    values = source.read(name)
    storage = Storage(values.nbytes, Device("cpu"), data=values)
    t = Tensor._make(storage, sizes, _contiguous_strides(sizes), 0, dtype, Device("cpu"))
    return _relocate(t, "cpu", map_location)


def _contiguous_strides(sizes: tuple) -> tuple:
    strides, step = [], 1
    for s in reversed(sizes):
        strides.append(step)
        step *= max(int(s), 1)
    return tuple(reversed(strides))


def _relocate(t: Tensor, saved_device: str, map_location: object) -> Tensor:
    target = saved_device
    if isinstance(map_location, dict):
        target = map_location.get(saved_device, saved_device)
    elif callable(map_location):
        raise TypeError("pyaten.load: a callable map_location is not supported")
    elif map_location is not None:
        target = map_location
    target = Device(target) if not isinstance(target, Device) else target
    return t if target.type == "cpu" else t.to(target)


class _Reader:
    """Checks the JSON document against the tensor table, then rebuilds the object."""

    def __init__(self, document: object, source: _Source, map_location: object):
        if not isinstance(document, dict) or document.get("format") != _FORMAT:
            raise _bad("the pyaten metadata has no recognised format")
        if document.get("version") != _VERSION:
            raise _bad(f"the pyaten metadata version {document.get('version')!r} is unknown")
        self.document = document
        self.source = source
        self.entries = source.entries
        self.map_location = map_location
        self.storages: dict[str, Storage] = {}
        self.tensors = [self.tensor(spec) for spec in _list(document.get("tensors"), "tensors")]

    def load(self) -> Any:
        return self.node(self.document.get("root"), 0)

    def storage(self, name: object) -> Storage:
        if not isinstance(name, str) or name not in self.entries:
            raise _bad(f"a tensor names storage {name!r}, which is not in the file")
        found = self.storages.get(name)
        if found is None:
            spec = self.document.get("storages")
            if not isinstance(spec, dict) or not isinstance(spec.get(name), dict):
                raise _bad(f"storage {name!r} is not described")
            values = self.source.read(name)
            found = Storage(values.nbytes, Device("cpu"), data=values)
            if spec[name].get("nbytes") != found.nbytes:
                raise _bad(f"storage {name!r} does not have the bytes its description says")
            self.storages[name] = found
        return found

    def tensor(self, spec: object) -> Tensor:
        if not isinstance(spec, dict):
            raise _bad("a tensor description is not a JSON object")
        dtype = dt.BY_NAME.get(spec.get("dtype")) if isinstance(spec.get("dtype"), str) else None
        if dtype is None or dtype.name not in _STORED_AS:
            raise _bad(f"unknown tensor dtype {spec.get('dtype')!r}")
        sizes = tuple(_ints(spec.get("sizes"), "sizes"))
        strides = tuple(_ints(spec.get("strides"), "strides"))
        offset = spec.get("offset")
        if len(sizes) != len(strides) or not _is_count(offset):
            raise _bad("a tensor's sizes, strides and offset do not fit together")
        storage = self.storage(spec.get("storage"))
        if math.prod(sizes) >= 2**62:
            raise _bad(f"a tensor of sizes {list(sizes)} has too many elements")
        if math.prod(sizes) > 0:
            last = offset + sum((s - 1) * st for s, st in zip(sizes, strides))
            if (last + 1) * dtype.itemsize > storage.nbytes:
                raise _bad(
                    f"a tensor of sizes {list(sizes)} reaches past the end of its storage "
                    f"({storage.nbytes} bytes)"
                )
        t = Tensor._make(storage, sizes, strides, offset, dtype, Device("cpu"))
        device = spec.get("device", "cpu")
        if not isinstance(device, str):
            raise _bad("a tensor's device is not a string")
        t = _relocate(t, device, self.map_location)
        grad = spec.get("requires_grad") is True and (dtype.is_floating_point or dtype.is_complex)
        if spec.get("parameter") is True:
            from pyaten.nn.parameter import Parameter

            return Parameter(t, requires_grad=grad)
        return t.requires_grad_(True) if grad else t

    def node(self, node: object, depth: int) -> Any:
        if depth > _MAX_DEPTH or not isinstance(node, dict):
            raise _bad("the object tree is malformed or nested too deeply")
        kind, value = node.get("t"), node.get("v")
        try:
            if kind == "tensor":
                return self.tensors[_index(node.get("i"), len(self.tensors))]
            if kind == "size":
                return Size(_ints(value, "a size"))
            if kind in ("list", "tuple"):
                items = [self.node(v, depth + 1) for v in _list(value, kind)]
                return items if kind == "list" else tuple(items)
            if kind in ("dict", "odict"):
                keys = [_scalar(k) for k in _list(node.get("k"), "keys")]
                values = [self.node(v, depth + 1) for v in _list(value, "values")]
                if len(keys) != len(values):
                    raise _bad("a dict has different numbers of keys and values")
                return (OrderedDict if kind == "odict" else dict)(zip(keys, values))
            return _scalar(node)
        except (TypeError, ValueError, OverflowError) as error:
            raise _bad(f"a {kind!r} node is malformed ({error})") from None


def _scalar(node: object) -> Any:
    if not isinstance(node, dict):
        raise _bad("a leaf is not a JSON object")
    kind, value = node.get("t"), node.get("v")
    if kind == "none":
        return None
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "int" and isinstance(value, str) and len(value) < 5000:
        return int(value)
    if kind == "float" and isinstance(value, str):
        return float.fromhex(value)
    if kind == "complex" and isinstance(value, list) and len(value) == 2:
        return complex(float.fromhex(value[0]), float.fromhex(value[1]))
    if kind == "str" and isinstance(value, str):
        return value
    if kind == "dtype" and value in _STORED_AS:
        return dt.BY_NAME[value]
    if kind == "device" and isinstance(value, str):
        return Device(value)
    raise _bad(f"unknown leaf {kind!r}")


def _list(value: object, what: str) -> list:
    if not isinstance(value, list):
        raise _bad(f"{what} is not a JSON list")
    return value


def _ints(value: object, what: str) -> list[int]:
    items = _list(value, what)
    if not all(_is_count(v) for v in items):
        raise _bad(f"{what} holds something other than non-negative integers")
    return items


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**62


def _index(value: object, bound: int) -> int:
    if not _is_count(value) or value >= bound:
        raise _bad(f"tensor index {value!r} is out of range")
    return value
