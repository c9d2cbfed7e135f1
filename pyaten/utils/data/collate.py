"""Turning a list of samples into a batch (`default_collate`) and a single sample's NumPy
arrays into tensors (`default_convert`), with PyTorch's rules for each element type."""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from pyaten.core import Tensor, as_tensor, float64, tensor
from pyaten.ops import aten

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

_STRING_OR_OBJECT = re.compile(r"[SaUO]")  # NumPy dtype codes collate refuses
_ERROR = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
    "found {}"
)

CollateMap = dict[type | tuple[type, ...], Callable]


def default_convert(data: Any) -> Any:
    """NumPy arrays and scalars inside `data` become tensors; containers are rebuilt (tuples
    as lists, as PyTorch does); anything else is returned unchanged."""
    kind = type(data)
    if isinstance(data, Tensor):
        return data
    if kind.__module__ == "numpy" and kind.__name__ not in ("str_", "string_"):
        if kind.__name__ == "ndarray" and _STRING_OR_OBJECT.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(data[k]) for k in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return kind(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def _rebuild_mapping(like: Any, items: dict) -> Any:
    """A mapping of `like`'s type holding `items` (a plain dict when the type will not)."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)
            clone.update(items)
            return clone
        return type(like)(items)
    except TypeError:
        return items


def _rebuild_sequence(like: Any, items: list) -> Any:
    """A sequence of `like`'s type holding `items` (a list when the type will not)."""
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(like)(items)
    except TypeError:
        return items


def collate(batch: list, *, collate_fn_map: CollateMap | None = None) -> Any:
    """Collate `batch` (a list of samples of one structure): leaves by the function that
    `collate_fn_map` registers for their type (exact type first, then the first
    `isinstance` match); mappings, named tuples and sequences element-wise."""
    elem = batch[0]
    kind = type(elem)
    if collate_fn_map is not None:
        if kind in collate_fn_map:
            return collate_fn_map[kind](batch, collate_fn_map=collate_fn_map)
        for registered, fn in collate_fn_map.items():
            if isinstance(elem, registered):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        items = {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem}
        return _rebuild_mapping(elem, items)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return kind(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(sample) == size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)]
        return columns if isinstance(elem, tuple) else _rebuild_sequence(elem, columns)
    raise TypeError(_ERROR.format(kind))


def collate_tensor_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return aten.stack.default(list(batch), 0)


def collate_numpy_array_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> Any:
    if _STRING_OR_OBJECT.search(batch[0].dtype.str):
        raise TypeError(_ERROR.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return as_tensor(np.array(batch))


def collate_float_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return tensor(batch, dtype=float64)


def collate_int_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return tensor(batch)


def collate_str_fn(batch: list, *, collate_fn_map: CollateMap | None = None) -> list:
    return batch


default_collate_fn_map: CollateMap = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch: list) -> Any:
    """PyTorch's default batching: tensors and NumPy arrays stacked along a new first
    dimension, Python floats to float64 tensors, ints to int64 (bools to bool), strings
    kept as a list, and dicts, named tuples, tuples and lists collated field by field."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
