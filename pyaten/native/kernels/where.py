"""`where`: pick from `self` where `condition` is true, else from `other` (with broadcasting
and type promotion); `where(condition)` gives the indices of the true elements.

`where.self` is one kernel for CPU and Meta (a Meta tensor has no bytes, so only the output's
shape and dtype are computed); the Scalar overloads are composites that wrap the number.
"""

from __future__ import annotations

import warnings

import numpy as np

from pyaten.core import dtypes
from pyaten.core.creation import from_numpy
from pyaten.core.promotion import result_type
from pyaten.native.registry import native
from pyaten.native.runtime import empty_tensor, wrapped_number
from pyaten.native.structured import broadcast_shapes, resize_output


def _check_condition(condition) -> None:
    if condition.dtype.name == "uint8":
        warnings.warn(
            "where received a uint8 condition tensor. This behavior is deprecated and will be "
            "removed in a future version of PyTorch. Use a boolean condition instead.",
            UserWarning,
            stacklevel=4,
        )
        return
    if condition.dtype.name != "bool":
        raise RuntimeError(
            "where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{condition.dtype.scalar_name}"
        )


def _fill(out, condition, self, other) -> None:
    if out._storage.data is None:
        return
    # Select in the result dtype (float16/bfloat16 in float32, complex32 in complex64: NumPy
    # cannot mix them).
    compute = _COMPUTE.get(out.dtype.name, out.dtype.numpy)
    dtypes.store(
        out._numpy(),
        np.where(condition._numpy(), dtypes.compute_array(self._numpy(), compute),
                 dtypes.compute_array(other._numpy(), compute)),
    )


_COMPUTE = {"float16": np.float32, "bfloat16": np.float32, "complex32": np.complex64}


def _device(*tensors):
    for t in tensors:
        if not t._wrapped_number:
            return t.device
    return tensors[0].device


@native
def where_self(condition, self, other):
    _check_condition(condition)
    dtype = result_type(self, other)
    shape = broadcast_shapes("where", condition._sizes, self._sizes, other._sizes)
    out = empty_tensor(shape, dtype, _device(condition, self, other))
    _fill(out, condition, self, other)
    return out


@native
def where_self_out(condition, self, other, out):
    _check_condition(condition)
    dtype = result_type(self, other)
    if out.dtype is not dtype:
        raise RuntimeError(f"Expected out type to be {dtype.scalar_name} but got "
                           f"{out.dtype.scalar_name}")
    shape = broadcast_shapes("where", condition._sizes, self._sizes, other._sizes)
    resize_output(out, shape, "where.self_out")
    _fill(out, condition, self, other)
    out._bump_version()
    return out


def _aten():
    from pyaten.ops import aten

    return aten


def _scalar_operand(scalar, tensor):
    """PyTorch's composite: the result type of the pair, the tensor converted to it, the
    number made a 0-dim tensor of it with `scalar_tensor` (what a mode sees)."""
    aten = _aten()
    dtype = result_type(tensor, wrapped_number(scalar))
    if tensor.dtype is not dtype:
        tensor = aten._to_copy.default(tensor, dtype=dtype)
    return aten.scalar_tensor.default(scalar, dtype=dtype, device=tensor.device), tensor


@native
def where_ScalarSelf(condition, self, other):
    self_t, other_t = _scalar_operand(self, other)
    return _aten().where.self(condition, self_t, other_t)


@native
def where_ScalarOther(condition, self, other):
    other_t, self_t = _scalar_operand(other, self)
    return _aten().where.self(condition, self_t, other_t)


@native
def where_Scalar(condition, self, other):
    return _aten().where.self(condition, wrapped_number(self), wrapped_number(other))


@native
def where_condition(condition):
    indices = np.nonzero(condition._numpy())
    return tuple(from_numpy(np.ascontiguousarray(i, dtype=np.int64)) for i in indices)
