"""The math bits: lazy conjugate and negative views, and ZeroTensor (PyTorch's
ConjugateFallback.cpp, NegateFallback.cpp, MathBitsFallback.h and ZeroTensorFallback.cpp).

Note: math bits
    Three functionality keys of a tensor's key set change what its stored values mean:
    `Conjugate` (read them conjugated), `Negative` (read them negated) and `ZeroTensor`
    (read zeros, whatever is stored). `x.conj()` of a complex tensor is therefore a view: it
    shares `x`'s storage and adds the Conjugate key (`_conj`), so a write through one is seen
    through the other, and every view of it (a slice, a transpose) keeps the key, because
    `Tensor._make_view` copies its base's key set. `x.conj().imag` is a view with the
    Negative key (`_neg_view`), as in PyTorch.

    The dispatcher does the rest, as in PyTorch. Each key has a boxed fallback below
    autograd: it resolves every input carrying the bit (`clone`, whose copy honours it), runs
    the operator below the key, and for a mutable input with the bit (in-place, `out=`) runs
    on a resolved clone and copies the result back with `copy_`, which writes through the bit
    (`_math_bit_fallback`). View operators (their outputs alias an input without writing)
    skip the fallback: the view keeps the bit. The operators PyTorch registers as
    fallthrough on these keys (views, `copy_`, `clone`, factories `*_like`, the BLAS calls
    mm/addmm/bmm/baddbmm/dot/vdot, ...) reach their backend kernel with the bit still set,
    and those kernels read it: `copy_` and `clone` through
    `pyaten.core.tensor.math_bit_values`, dot/vdot by PyTorch's rewrites
    (`dot_reads_math_bits`), the other BLAS kernels by resolving first (`reads_math_bits`).
    The lists are PyTorch 2.13's, read off `torch._C._dispatch_dump_table`, so `dump_table`
    matches PyTorch's on these keys for every operator (tests/test_conj_neg.py compares).

    One rule follows for kernel authors: a CompositeImplicitAutograd kernel runs above these
    keys (it serves the Autograd keys), so its tensors may carry a bit. It must compute by
    calling operators, or read values with `Tensor._host_values()` (which applies the bits),
    never with `_numpy()` (the stored values). Backend and CompositeExplicitAutograd kernels
    run below the fallbacks and see resolved tensors, except on the fallthrough operators.

    ZeroTensor: `_efficientzerotensor` makes a tensor with the ZeroTensor key. Its fallback
    replaces each ZeroTensor input by `zeros([]).expand(size)` and refuses a mutable one
    ("ZeroTensors are immutable"); `add`, `sub`, `mul`, `div` and `linalg_cross` have
    ZeroTensor kernels that answer without computing (a ZeroTensor times anything is a
    ZeroTensor of the broadcast shape and promoted dtype). Unlike PyTorch's (which has no
    memory at all) a pyaten ZeroTensor owns a zero-filled buffer from `np.zeros` (calloc:
    pages the OS hands out lazily, never written since the tensor is immutable), so code that
    reads values outside the dispatcher (printing) needs no special case.

    Outside the dispatcher the bits are honoured by `Tensor._host_values` (printing, `item`,
    `tolist`, pickling, which keeps the conj/neg bit), and `Tensor.numpy()` refuses a tensor
    with a bit as PyTorch does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from pyaten.core.device import device as _device
from pyaten.core.tensor import CONJ_BIT, MATH_BITS, NEG_BIT, ZERO_BIT, Tensor, math_bit_values
from pyaten.core.views import empty_tensor
from pyaten.dispatch import register_fallback, register_kernel
from pyaten.dispatch.keys import KEY_BY_NAME, DispatchKeySet, full_after
from pyaten.dispatch.registry import RegistrationHandle
from pyaten.native.ops_handles import aten_ops
from pyaten.native.registry import native

F = TypeVar("F", bound=Callable[..., Any])
META = _device("meta")

__all__ = [
    "CONJ_BIT",
    "CONJUGATE_FALLTHROUGH",
    "MATH_BITS",
    "NEGATIVE_FALLTHROUGH",
    "NEG_BIT",
    "ZERO_BIT",
    "ZEROTENSOR_FALLTHROUGH",
    "copy_source_values",
    "dot_reads_math_bits",
    "install",
    "reads_math_bits",
    "resolved",
    "with_bit",
]

# Views, factories and metadata queries: fallthrough on all three keys in PyTorch 2.13
# (MathBitFallThroughLists.h, ZeroTensorFallback.cpp). Registered by name whether or not pyaten
# declares the operator yet (size.int, stride.int, is_complex...), as PyTorch registers them:
# an operator declared later gets its fallthrough at once.
_VIEWS_AND_UTILITIES = (
    "_conj", "_unsafe_view", "alias", "as_strided", "as_strided_", "chunk", "clone", "conj",
    "copy_", "detach", "detach_", "diagonal", "dsplit.array", "dsplit.int", "empty.memory_format",
    "empty.out", "empty_like", "empty_strided", "expand", "expand_as", "full_like",
    "hsplit.array", "hsplit.int", "imag", "movedim.int", "movedim.intlist", "narrow", "permute",
    "real", "reshape", "resize_", "select.int", "split.Tensor", "split_with_sizes", "squeeze",
    "squeeze_", "swapaxes", "swapdims", "t", "t_", "transpose.int", "transpose_", "unbind.int",
    "unflatten.int", "unfold", "unsqueeze", "unsqueeze_", "view", "view_as", "view_as_real",
    "vsplit.array", "vsplit.int", "is_complex", "is_floating_point", "requires_grad_",
    "size.int", "stride.int",
)  # fmt: skip

_MATH_BIT_COMMON = _VIEWS_AND_UTILITIES + (
    "linalg_solve_triangular", "linalg_solve_triangular.out", "linalg_svd", "linalg_svd.U",
    "repeat_interleave.Tensor", "repeat_interleave.self_Tensor", "repeat_interleave.self_int",
    "resolve_conj", "resolve_neg", "set_", "set_.source_Storage_storage_offset",
    "set_.source_Tensor", "_has_same_storage_numel", "_new_zeros_with_same_feature_meta",
)  # fmt: skip

CONJUGATE_FALLTHROUGH = _MATH_BIT_COMMON + (
    "_conj_physical", "addmm", "addmm.out", "addmm_", "baddbmm", "baddbmm.out", "baddbmm_",
    "bmm", "bmm.out", "conj_physical", "conj_physical_", "dot", "dot.out", "mm", "mm.out",
    "vdot", "vdot.out",
)  # fmt: skip

NEGATIVE_FALLTHROUGH = _MATH_BIT_COMMON + ("neg_",)

ZEROTENSOR_FALLTHROUGH = tuple(
    name for name in _VIEWS_AND_UTILITIES if name not in ("as_strided", "view")
) + ("add.Scalar", "dot", "mul.Scalar", "vdot", "zeros_like")

_ZEROTENSOR_IMMUTABLE = (
    "ZeroTensors are immutable. Please use the materialized zero tensor obtained using "
    ".clone() if you want a mutable tensor."
)


def with_bit(t: Tensor, bit: int, value: bool) -> Tensor:
    """`t` itself, its key set with `bit` set or cleared (the view constructors use this)."""
    t._keyset = t._keyset | bit if value else t._keyset & ~bit
    return t


def resolved(t: Tensor) -> Tensor:
    """`t`, or a copy holding the values it shows when it has a math bit (for kernels of
    fallthrough operators that read storage: mm, dot, ...)."""
    if t._keyset & MATH_BITS:
        return aten_ops().clone.default(t, None)
    return t


def _materialized_zeros(t: Tensor) -> Tensor:
    zero = aten_ops().zeros.default((), t._dtype, None, t._device, None)
    return aten_ops().expand.default(zero, t._sizes, False)


def _schema_name(op: Any) -> str:
    return op.name.partition(".")[0]  # `aten::add`, as PyTorch's schema().name()


_ALIAS_KIND: dict[Any, bool | None] = {}  # per operator schema: what _view_or_write found


def _view_or_write(op: Any, label: str) -> bool | None:
    """None (no alias), True (the aliased arguments are written) or False (a view op);
    PyTorch's check that an operator does not mix the two."""
    schema = op.schema
    try:
        return _ALIAS_KIND[schema]
    except KeyError:
        pass
    is_write = None
    for argument in op.schema.arguments:
        annotation = argument.annotation
        if annotation is None:
            continue
        if is_write is None:
            is_write = annotation.is_write
        elif is_write != annotation.is_write:
            raise RuntimeError(
                f"Unsupported operator for {label} fallback: {_schema_name(op)}{label} fallback "
                "doesn't work for operators with a mix mutable and non-mutable inputs that "
                "alias with outputs, this must be implemented manually.  If you got this "
                "error on a core op, please report a bug to PyTorch."
            )
    _ALIAS_KIND[schema] = is_write
    return is_write


def _math_bit_fallback(key: str, bit: int, label: str):
    below = full_after(key).raw

    def fallback(op: Any, keyset: DispatchKeySet, *args: Any) -> Any:
        if _view_or_write(op, label) is False:  # a view keeps the bit in its key set
            return op.redispatch(keyset.raw & below, *args)
        args = list(args)
        written: tuple[Tensor, Tensor] | None = None  # (mutable input, its resolved clone)
        for i, (value, argument) in enumerate(zip(args, op.schema.arguments)):
            if isinstance(value, Tensor):
                if not value._keyset & bit:
                    continue
                clone = aten_ops().clone.default(value, None)
                if argument.is_write:
                    if written is not None:
                        raise RuntimeError(
                            f"{label} fallback does not support operators with more than one "
                            f"mutable tensors with {label}bit set to true."
                        )
                    written = (value, clone)
                args[i] = clone
            elif isinstance(value, (list, tuple)) and any(
                isinstance(v, Tensor) and v._keyset & bit for v in value
            ):
                if argument.is_write:
                    raise RuntimeError(
                        f" fallback doesn't currently support mutable TensorLists with {label} "
                        f"inputs. Please materialize all the {label} input tensor(s) in the "
                        f"mutable TensorList inputs before calling {_schema_name(op)}"
                    )
                args[i] = [resolved(v) if isinstance(v, Tensor) else v for v in value]
        result = op.redispatch(keyset.raw & below, *args)
        if written is None:
            return result
        original, clone = written
        if original._sizes != clone._sizes:  # an out= argument the kernel resized
            aten_ops().resize_.default(original, clone._sizes, None)
        aten_ops().copy_.default(original, clone, False)
        if result is clone:
            return original
        if isinstance(result, tuple):
            return tuple(original if r is clone else r for r in result)
        return result

    fallback.__qualname__ = f"{key}_fallback"
    return fallback


_ZERO_BELOW = full_after("ZeroTensor").raw


def zerotensor_fallback(op: Any, keyset: DispatchKeySet, *args: Any) -> Any:
    """Run an operator on ZeroTensor inputs as on `zeros([]).expand(size)` (refusing to write
    into one); views keep the key."""
    if _view_or_write(op, "ZeroTensor") is False:
        return op.redispatch(keyset.raw & _ZERO_BELOW, *args)
    args = list(args)
    for i, (value, argument) in enumerate(zip(args, op.schema.arguments)):
        if isinstance(value, Tensor):
            if value._keyset & ZERO_BIT:
                if argument.is_write:
                    raise RuntimeError(_ZEROTENSOR_IMMUTABLE)
                args[i] = _materialized_zeros(value)
        elif isinstance(value, (list, tuple)) and any(
            isinstance(v, Tensor) and v._keyset & ZERO_BIT for v in value
        ):
            if argument.is_write:
                raise RuntimeError(_ZEROTENSOR_IMMUTABLE)
            args[i] = [
                _materialized_zeros(v) if isinstance(v, Tensor) and v._keyset & ZERO_BIT else v
                for v in value
            ]
    return op.redispatch(keyset.raw & _ZERO_BELOW, *args)


_HANDLES: list[RegistrationHandle] = []


def _site(fn: Any) -> str:
    code = fn.__code__
    return f"registered at {code.co_filename}:{code.co_firstlineno}"


def install() -> None:
    """Register the three fallbacks and PyTorch's fallthrough kernels (once, at import)."""
    if _HANDLES:
        return
    conjugate = _math_bit_fallback("Conjugate", CONJ_BIT, "conjugate")
    negative = _math_bit_fallback("Negative", NEG_BIT, "negation")
    for key, fn in (("Conjugate", conjugate), ("Negative", negative),
                    ("ZeroTensor", zerotensor_fallback)):
        _HANDLES.append(register_fallback(KEY_BY_NAME[key], fn, debug=_site(fn)))
    here = _site(install)
    for key, names in (("Conjugate", CONJUGATE_FALLTHROUGH), ("Negative", NEGATIVE_FALLTHROUGH),
                       ("ZeroTensor", ZEROTENSOR_FALLTHROUGH)):
        for name in names:
            _HANDLES.append(
                register_kernel(f"aten::{name}", KEY_BY_NAME[key], None, fallthrough=True,
                                debug=here)
            )


# --- kernels of fallthrough operators that read storage ------------------------------------


def copy_source_values(dst: Tensor, src: Tensor, values: np.ndarray) -> np.ndarray:
    """What `copy_` stores into `dst` given `src`'s stored `values`: the bits `src` and `dst`
    do not share applied (a conj `dst` stores conjugates), zeros from a ZeroTensor."""
    if dst._keyset & ZERO_BIT:
        raise RuntimeError(
            "ZeroTensors are immutable. Please materialize the tensor using `.clone()`, if you "
            "want a mutable zero tensor."
        )
    bits = ((src._keyset ^ dst._keyset) & (CONJ_BIT | NEG_BIT)) | (src._keyset & ZERO_BIT)
    return math_bit_values(values, bits) if bits else values


def reads_math_bits(outputs: int = 0) -> Callable[[F], F]:
    """Decorator for a backend kernel of an operator that falls through the math-bit keys
    but reads storage (mm, addmm, dot...): inputs with a bit are resolved first; each of the
    last `outputs` tensor arguments that has a bit gets the kernel's values stored through
    its bit afterwards (PyTorch's BLAS kernels fold the bits into their calls instead)."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def kernel(*args: Any) -> Any:
            for a in args:  # the common case first: no bits, one test per argument
                if isinstance(a, Tensor) and a._keyset & MATH_BITS:
                    break
            else:
                return fn(*args)
            n = len(args)
            marked = [a for a in args[n - outputs:] if isinstance(a, Tensor)
                      and a._keyset & (CONJ_BIT | NEG_BIT)] if outputs else []
            for a in marked:
                if a._keyset & ZERO_BIT:
                    raise RuntimeError(_ZEROTENSOR_IMMUTABLE)
            inputs = [resolved(a) if isinstance(a, Tensor) and a._keyset & MATH_BITS
                      and i < n - outputs else a for i, a in enumerate(args)]
            result = fn(*inputs)
            for a in marked:
                if a._storage.data is not None and a.numel():
                    stored = a._numpy()
                    stored[...] = math_bit_values(stored, a._keyset & (CONJ_BIT | NEG_BIT))
            return result

        return kernel  # type: ignore[return-value]

    return decorate


def dot_reads_math_bits(fn: F) -> F:
    """Decorator for the kernels of dot and vdot, which fall through Conjugate and ZeroTensor:
    PyTorch's rewrites, so the result's conj bit is PyTorch's (dot(conj a, conj b) is
    conj(dot(a, b)), a view; dot(conj a, b) is vdot(a, b)...); a ZeroTensor operand gives
    a ZeroTensor."""
    is_vdot = fn.__name__ == "vdot"

    @functools.wraps(fn)
    def kernel(self: Tensor, other: Tensor) -> Tensor:
        if not (self._keyset | other._keyset) & MATH_BITS:
            return fn(self, other)
        aten = aten_ops()
        if (self._keyset | other._keyset) & ZERO_BIT:
            return _efficientzerotensor((), self._dtype, None, self._device, None)
        if not self._dtype.is_complex:
            return fn(resolved(self), resolved(other))
        self_conj, other_conj = self._keyset & CONJ_BIT, other._keyset & CONJ_BIT
        if self_conj and other_conj and not is_vdot:
            return aten.conj.default(aten.dot.default(aten.conj.default(self),
                                                      aten.conj.default(other)))
        if self_conj:  # vdot with a conj `other` goes on to dot's rewrite
            swap = aten.dot if is_vdot else aten.vdot
            return swap.default(aten.conj.default(self), other)
        if is_vdot:
            return aten.conj.default(aten.dot.default(self, aten.conj.default(other)))
        return aten.vdot.default(aten.conj.default(other), self)

    return kernel  # type: ignore[return-value]


# --- ZeroTensor: the factory and the kernels PyTorch registers on the key -------------------


@native
def _efficientzerotensor(size, dtype=None, layout=None, device=None, pin_memory=None) -> Tensor:
    """_efficientzerotensor (CPU): an immutable tensor of zeros with the ZeroTensor key."""
    zeros = aten_ops().zeros.default(size, dtype, layout, device, pin_memory)
    return with_bit(zeros, ZERO_BIT, True)


@native
def _efficientzerotensor_meta_symint(size, dtype=None, layout=None, device=None,
                                     pin_memory=None) -> Tensor:
    """_efficientzerotensor (Meta): the shape only, with the key."""
    return _efficientzerotensor(size, dtype, layout, device, pin_memory)


def _on_meta(t: Tensor) -> Tensor:
    meta = empty_tensor(t._sizes, t._dtype, META)
    meta._wrapped_number = t._wrapped_number
    return meta


def _out_device(self: Tensor, other: Tensor):
    # PyTorch's correct_out_device: a CPU scalar does not decide the device
    if self._device.type == "cpu" and not self._sizes:
        return other._device
    return self._device


def _zerotensor_like(meta: Tensor, where) -> Tensor:
    return _efficientzerotensor(meta._sizes, meta._dtype, None, where, None)


def _copy_like(t: Tensor, meta: Tensor, where) -> Tensor:
    expanded = aten_ops().expand.default(t, meta._sizes, False)
    return aten_ops()._to_copy.default(expanded, meta._dtype, None, where, None, False, None)


def _add_or_sub(self: Tensor, other: Tensor, alpha) -> Tensor:
    where = _out_device(self, other)
    meta = aten_ops().add.Tensor(_on_meta(self), _on_meta(other), alpha)
    if self._keyset & ZERO_BIT:
        if other._keyset & ZERO_BIT:
            return _zerotensor_like(meta, where)
        result = _copy_like(other, meta, where)
        return result if alpha == 1 else aten_ops().mul.Scalar(result, alpha)
    return _copy_like(self, meta, where)


@native
def add_zerotensor(self: Tensor, other: Tensor, alpha=1) -> Tensor:
    """add.Tensor (ZeroTensor): the other operand (times alpha), or a ZeroTensor."""
    return _add_or_sub(self, other, alpha)


@native
def sub_zerotensor(self: Tensor, other: Tensor, alpha=1) -> Tensor:
    """sub.Tensor (ZeroTensor): as add with -alpha."""
    return _add_or_sub(self, other, -alpha)


@native
def mul_zerotensor(self: Tensor, other: Tensor) -> Tensor:
    """mul.Tensor (ZeroTensor): a ZeroTensor of the broadcast shape and promoted dtype."""
    meta = aten_ops().mul.Tensor(_on_meta(self), _on_meta(other))
    return _zerotensor_like(meta, _out_device(self, other))


@native
def div_zerotensor(self: Tensor, other: Tensor) -> Tensor:
    """div.Tensor (ZeroTensor): 0/0 is NaN, 0/x a ZeroTensor, x/0 inf (as PyTorch)."""
    where = _out_device(self, other)
    meta = aten_ops().div.Tensor(_on_meta(self), _on_meta(other))
    if not self._keyset & ZERO_BIT:
        value = math.inf
    elif other._keyset & ZERO_BIT:
        value = math.nan
    else:
        return _zerotensor_like(meta, where)
    return aten_ops().full.default(meta._sizes, value, meta._dtype, None, where, None)


@native
def linalg_cross_zerotensor(self: Tensor, other: Tensor, dim: int = -1) -> Tensor:
    """linalg_cross (ZeroTensor): a ZeroTensor of the result's shape and dtype."""
    meta = aten_ops().linalg_cross.default(_on_meta(self), _on_meta(other), dim)
    return _zerotensor_like(meta, _out_device(self, other))
