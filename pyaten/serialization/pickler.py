"""Writing a checkpoint's pickle: any picklable object, with tensors, storages, dtypes, devices
and sizes written under PyTorch's names (see Note: PyTorch's names in the pickle, in
torch_names.py), storages as persistent ids.

Python's own pickler (pure-Python form, so that a pyaten object can be written under a global
name that is not its own: PyTorch's) does the walking, memoizing and sharing; this module only
says how a tensor reduces and which storage a persistent id names. Storages are numbered in
the order they are first met, as PyTorch numbers them; views of one storage share its record.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from typing import IO, Any

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.device import device as Device
from pyaten.core.size import Size, _Token
from pyaten.core.sparse import COMPRESSED_LAYOUTS, sparse_coo
from pyaten.core.storage import Storage, is_host_memory
from pyaten.core.tensor import CONJ_BIT, NEG_BIT, Tensor, strided
from pyaten.serialization import torch_names

__all__ = ["CheckpointPickler", "storage_bytes"]

# instance-dict entries that are pyaten's bookkeeping, not user state
_BITS = ("_conj_bit", "_neg_bit")
_LAYOUT_NAMES = frozenset(t.name for t in (strided, sparse_coo, *COMPRESSED_LAYOUTS))


class CheckpointPickler(pickle._Pickler):
    """Pickles `obj` with PyTorch's names; `storages` lists (key, Storage) in key order."""

    def __init__(self, out: IO[bytes], protocol: int) -> None:
        super().__init__(out, protocol)
        self.storages: list[tuple[str, Storage]] = []
        self.storage_keys: dict[int, str] = {}
        self.storage_dtypes: dict[int, dt.dtype] = {}

    # ------------------------------------------------------------------ names
    def save_global(self, obj: Any, name: str | None = None) -> None:
        written = torch_names.global_name(obj)
        if written is None:
            return super().save_global(obj, name)
        module, qualname = written
        if self.proto >= 4:
            self.save(module)
            self.save(qualname)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{module}\n{qualname}\n".encode())
        self.memoize(obj)

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is dt.dtype:
            return obj.name  # a global: save_global writes `torch.<name>`
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if kind is _Token and obj.name in _LAYOUT_NAMES:  # as PyTorch's copyreg entry
            return (torch_names._get_layout, ("torch." + obj.name,))
        if kind is torch_names.StorageType:
            return obj.name
        if kind is Device:
            # a string of its own, as PyTorch's, not the memoized location string
            return (Device, ((str(obj) + " ")[:-1],))
        if kind is Size:
            return (Size, (tuple(obj),))
        if torch_names.global_name(obj) is not None:
            return getattr(obj, "__qualname__", "")  # classes and functions: save_global
        return NotImplemented

    def persistent_id(self, obj: Any) -> tuple | None:
        if type(obj) is not Storage:
            return None
        key = self.storage_keys.get(id(obj))
        if key is None:
            key = str(len(self.storages))
            self.storage_keys[id(obj)] = key
            self.storages.append((key, obj))
        dtype = self.storage_dtypes.get(id(obj), dt.uint8)
        storage_type = (
            torch_names.STORAGE_TYPES["UntypedStorage"] if id(obj) not in self.storage_dtypes
            else torch_names.storage_type_of(dtype)
        )
        return ("storage", storage_type, key, _location(obj), obj.nbytes // dtype.itemsize)

    # ------------------------------------------------------------------ tensors
    def _reduce_tensor(self, t: Tensor) -> tuple:
        from pyaten.nn.parameter import Parameter

        if t.is_quantized:
            return self._reduce_quantized(t)
        if t.is_nested:
            return self._reduce_nested(t)
        if t.layout is not strided:  # a sparse tensor: its parts (pyaten/core/sparse.py)
            parts = tuple(Tensor._make_subclass(Tensor, p) for p in t._parts)
            data = parts + (Size(t._sizes), t._coalesced) if len(parts) == 2 else parts + (
                Size(t._sizes),)
            return (torch_names._rebuild_sparse_tensor, (t.layout, data))
        state = {k: v for k, v in t.__dict__.items() if k not in _BITS}
        if isinstance(t, Parameter):
            data = Tensor._make_subclass(Tensor, t, False)
            if state:
                return (torch_names._rebuild_parameter_with_state,
                        (data, t.requires_grad, OrderedDict(), state))
            return (torch_names._rebuild_parameter, (data, t.requires_grad, OrderedDict()))
        func, args = self._plain_reduce(t)
        if type(t) is not Tensor or state:
            return (torch_names._rebuild_from_type_v2, (func, type(t), args, state))
        return func, args

    def _reduce_quantized(self, q: Tensor) -> tuple:
        """As PyTorch pickles a quantized tensor: its integer storage typed with the quantized
        dtype, its geometry, and the quantizer's parameters (a per-channel float-qparams
        quantizer is written under `per_channel_affine`, as PyTorch writes it)."""
        from pyaten.core import quantized as qz

        scheme = q._qscheme
        if scheme is qz.per_tensor_affine:
            params: tuple = (scheme, q._q_scale, q._q_zero_point)
        elif scheme in (qz.per_channel_affine, qz.per_channel_affine_float_qparams):
            params = (qz.per_channel_affine, q._q_scales, q._q_zero_points, q._q_axis)
        else:
            raise RuntimeError(f"Serialization is not supported for tensors of type {scheme}")
        self._claim_storage(q._storage, q.dtype)
        return (torch_names._rebuild_qtensor,
                (q._storage, int(q._offset), tuple(int(s) for s in q._sizes),
                 tuple(int(s) for s in q._strides), params, q.requires_grad, OrderedDict()))

    def _reduce_nested(self, nt: Tensor) -> tuple:
        """As PyTorch pickles a strided nested tensor: its 1-D buffer and the size, stride
        and offset tables of its components."""
        from pyaten.native.kernels.nested_tensor import is_strided_nested

        if not is_strided_nested(nt):  # jagged: PyTorch's subclass, rebuilt from keywords
            kwargs = {"values": nt._values.detach(), "offsets": nt._offsets, "lengths": None,
                      "_ragged_idx": nt._ragged_idx, "_metadata_cache": {},
                      "requires_grad": nt.requires_grad}
            return (torch_names._rebuild_from_type_v2,
                    (torch_names._rebuild_njt, type(nt), (kwargs,), {}))
        buffer = nt._nt_buffer
        return (torch_names._rebuild_nested_tensor,
                (Tensor._make_subclass(Tensor, buffer), nt._nested_tensor_size(),
                 nt._nested_tensor_strides(), nt._nested_tensor_storage_offsets()))

    def _claim_storage(self, storage: Storage, dtype: dt.dtype) -> None:
        seen = self.storage_dtypes.get(id(storage))
        if seen is None:
            self.storage_dtypes[id(storage)] = dtype
        elif seen is not dtype:
            raise RuntimeError(
                "Cannot save multiple tensors or storages that view the same data as different "
                "types"
            )

    def _plain_reduce(self, t: Tensor) -> tuple:
        sizes = tuple(int(s) for s in t._sizes)
        strides = tuple(int(s) for s in t._strides)
        if t._storage.data is None:  # meta: no storage, as PyTorch writes it
            return (torch_names._rebuild_meta_tensor_no_storage,
                    (t.dtype, sizes, strides, t.requires_grad))
        storage = t._storage
        self._claim_storage(storage, t.dtype)
        args = (storage, int(t._offset), sizes, strides, t.requires_grad, OrderedDict())
        # a lazy conj/neg view: its stored values and PyTorch's metadata for the bit
        bits = {name: True for name, bit in (("conj", CONJ_BIT), ("neg", NEG_BIT))
                if t._keyset & bit}
        return (torch_names._rebuild_tensor_v2, args + (bits,) if bits else args)


def _location(storage: Storage) -> str:
    device = storage.device
    return device.type if device.type == "cpu" else str(device)


def storage_bytes(storage: Storage) -> np.ndarray:
    """A storage's bytes as a host uint8 array (no copy on the CPU; a plug-in device's memory
    is copied through the device)."""
    if is_host_memory(storage.data):
        return storage.data[: storage.nbytes]
    whole = Tensor._make(storage, (storage.nbytes,), (1,), 0, dt.uint8, storage.device)
    return whole.cpu()._numpy()
