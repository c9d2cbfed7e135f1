"""Complex parts and float predicates: real imag view_as_real view_as_complex angle conj
conj_physical resolve_conj resolve_neg, isnan isinf isfinite isposinf isneginf isreal
nan_to_num.

`conj()` of a complex tensor and `_neg_view()` are lazy views that carry a math bit in their
key set (Note: math bits, in pyaten/native/mathbits.py); `resolve_conj()`/`resolve_neg()`
copy them out, `conj_physical()` conjugates eagerly.

`real`/`imag` of a complex tensor are views of its storage (`view_as_real(...).select(-1, i)`)
as in PyTorch; `Tensor.real` and `Tensor.imag` are properties with setters (`x.real = v`
copies `v` into the real parts).
"""

from __future__ import annotations

import math

import numpy as np

from pyaten.core import dtypes as dt
from pyaten.core.promotion import can_cast
from pyaten.core.tensor import write_fresh
from pyaten.core.views import as_strided_view, empty_tensor
from pyaten.native import family, mathbits
from pyaten.native.mathbits import CONJ_BIT, NEG_BIT, ZERO_BIT, with_bit
from pyaten.native.ops_handles import aten_ops
from pyaten.native.registry import native
from pyaten.native.runtime import Tensor
from pyaten.native.structured import TensorIteratorMeta, quiet_call, resize_output

mathbits.install()

# --- the conj and neg bits (Note: math bits) -----------------------------------------------


def _conj_bit(t: Tensor) -> bool:
    return bool(t._keyset & CONJ_BIT)


def _neg_bit(t: Tensor) -> bool:
    return bool(t._keyset & NEG_BIT)


@native
def is_conj(self: Tensor) -> bool:
    return bool(self._keyset & CONJ_BIT)


@native
def is_neg(self: Tensor) -> bool:
    return bool(self._keyset & NEG_BIT)


@native
def _is_zerotensor(self: Tensor) -> bool:
    return bool(self._keyset & ZERO_BIT)


@native
def _conj(self: Tensor) -> Tensor:
    """_conj (CompositeExplicitAutograd): an alias of self with the conj bit flipped."""
    if not self.dtype.is_complex:
        raise RuntimeError(
            "isComplexType(typeMetaToScalarType(dtype())) INTERNAL ASSERT FAILED: _conj of a "
            f"tensor of dtype {self.dtype} (only complex tensors have a conj bit)"
        )
    return with_bit(aten_ops().alias.default(self), CONJ_BIT, not _conj_bit(self))


@native
def conj(self: Tensor) -> Tensor:
    """conj (CompositeImplicitAutograd): self for real dtypes, else the lazy view `_conj`."""
    if not self.dtype.is_complex:
        return self
    return aten_ops()._conj.default(self)


@native
def resolve_conj(self: Tensor) -> Tensor:
    """resolve_conj (CompositeImplicitAutograd): self if unmarked, else a copy of the values
    it shows (clone's copy reads the bit)."""
    if not _conj_bit(self):
        return self
    return aten_ops().clone.default(self, None)


@native
def _neg_view(self: Tensor) -> Tensor:
    """_neg_view (CompositeExplicitAutograd): an alias of self with the neg bit flipped."""
    return with_bit(aten_ops().alias.default(self), NEG_BIT, not _neg_bit(self))


@native
def resolve_neg(self: Tensor) -> Tensor:
    """resolve_neg (CompositeImplicitAutograd): self if unmarked, else a resolved copy."""
    if not _neg_bit(self):
        return self
    return aten_ops().clone.default(self, None)


# --- conj_physical: the eager conjugate ---------------------------------------------------------


def _iterate(name: str, self: Tensor, out: Tensor | None, fn, *, float_op: bool = False):
    """A unary TensorIterator op outside the structured wrappers: PyTorch's `unary_op` (or
    `unary_float_op`) build with its checks and `out=` resizing, then `fn` (which takes
    `out=` as a ufunc does) on the arrays."""
    op = TensorIteratorMeta("functional" if out is None else "out", (out,), name, "CPU")
    if float_op:
        op.build_unary_float_op(self)
    else:
        op.build_unary_op(self)
    if op.outputs[0]._storage.data is not None:
        (a,) = op.input_arrays()
        op.compute(fn, a)  # `fn` takes `out=`: straight into the output when dtypes agree
    op.finish()
    return op.outputs[0]


@native
def conj_physical_out(self: Tensor, out: Tensor) -> Tensor:
    """conj_physical.out (CPU, Meta): same-dtype unary op (real dtypes copy)."""
    return _iterate("conj_physical", self, out, _conj_values)


def _conj_values(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    if a.dtype.kind == "c":
        return np.conjugate(a, out=out)
    if out is None:
        return a.copy()
    np.copyto(out, a)
    return out


@native
def _conj_physical(self: Tensor) -> Tensor:
    """_conj_physical (CompositeExplicitAutograd; fallthrough on Conjugate): a conj view's
    conjugate is a copy of its stored values."""
    if _conj_bit(self):
        return aten_ops().clone.default(aten_ops().conj.default(self), None)
    out = aten_ops().empty_like.default(self, None, None, None, None, None)
    return write_fresh(lambda fresh: aten_ops().conj_physical.out(self, fresh), out)


@native
def conj_physical(self: Tensor) -> Tensor:
    """conj_physical (CompositeImplicitAutograd): self for real dtypes."""
    if not self.dtype.is_complex:
        return self
    return aten_ops()._conj_physical.default(self)


@native
def conj_physical_(self: Tensor) -> Tensor:
    """conj_physical_ (CompositeExplicitAutograd): in place; real dtypes are left alone."""
    if not self.dtype.is_complex:
        self._bump_version()  # still a user write (PyTorch's ADInplaceOrView bumps it)
        return self
    return aten_ops().conj_physical.out(self, self)


# --- views between complex and real -----------------------------------------------------------


def _retyped_view(t: Tensor, sizes: tuple, strides: tuple, offset: int, dtype) -> Tensor:
    view = as_strided_view(t, sizes, strides, offset)
    view._dtype = dtype
    return view


@native
def view_as_real(self: Tensor) -> Tensor:
    """view_as_real (CPU, Meta): a complex tensor's storage seen as (..., 2) real values."""
    if not self.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if _conj_bit(self):
        raise RuntimeError(
            "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the "
            "conjugate tensor so you can view it as real, use self.resolve_conj(); however, "
            "be warned that the resulting tensor will NOT alias the original."
        )
    strides = tuple(2 * s for s in self._strides) + (1,)
    return _retyped_view(
        self, self._sizes + (2,), strides, 2 * self._offset, self.dtype.to_real()
    )


_COMPLEX_OF = {dt.float32: dt.complex64, dt.float64: dt.complex128}


@native
def view_as_complex(self: Tensor) -> Tensor:
    """view_as_complex (CPU, Meta): a real (..., 2) tensor's storage seen as complex."""
    if self.dtype not in _COMPLEX_OF:
        if self.dtype is dt.float16:
            raise RuntimeError("view_as_complex: pyaten has no complex32 (ComplexHalf) dtype")
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a "
            f"tensor of scalar type: {self.dtype.scalar_name}"
        )
    sizes, strides = self._sizes, self._strides
    if not sizes:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if sizes[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if self._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return _retyped_view(
        self, sizes[:-1], tuple(s // 2 for s in strides[:-1]), self._offset // 2,
        _COMPLEX_OF[self.dtype],
    )


def _pairs(self: Tensor, imaginary: bool) -> Tensor:
    """`view_as_real` of the values `self` shows, through recorded operators (so gradients
    flow), as PyTorch's real/imag: a conjugate-marked tensor goes through `_conj` first, and
    for the imaginary parts its pairs are negated (`_neg_view`)."""
    if not _conj_bit(self):
        return aten_ops().view_as_real.default(self)
    pairs = aten_ops().view_as_real.default(aten_ops()._conj.default(self))
    return aten_ops()._neg_view.default(pairs) if imaginary else pairs


@native
def real(self: Tensor) -> Tensor:
    """real (CompositeImplicitAutograd): a view of the real parts; self for real dtypes."""
    if not self.dtype.is_complex:
        return self
    return aten_ops().select.int(_pairs(self, False), -1, 0)


@native
def imag(self: Tensor) -> Tensor:
    """imag (CompositeImplicitAutograd): a view of the imaginary parts (complex only)."""
    if not self.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return aten_ops().select.int(_pairs(self, True), -1, 1)


def _set_part(part: Tensor, value: object) -> None:
    if isinstance(value, Tensor):
        aten_ops().copy_.default(part, value, False)
    else:
        aten_ops().fill_.Scalar(part, value)


def _get_real(self: Tensor) -> Tensor:
    return aten_ops().real.default(self)


def _set_real(self: Tensor, value: object) -> None:
    _set_part(aten_ops().real.default(self), value)


def _get_imag(self: Tensor) -> Tensor:
    return aten_ops().imag.default(self)


def _set_imag(self: Tensor, value: object) -> None:
    _set_part(aten_ops().imag.default(self), value)


Tensor.real = property(_get_real, _set_real, doc="The real parts (a view; self if real).")
Tensor.imag = property(_get_imag, _set_imag, doc="The imaginary parts (a view; complex only).")


# --- angle: complex to real, real to 0 or pi ----------------------------------------------------


def _angle_complex(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return np.arctan2(a.imag, a.real, out=out)


def _angle_real(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    # 0 for x >= 0 (and -0.0), pi below 0, NaN kept. (A product with the bool mask is ~10x
    # faster than np.where with scalar branches.)
    result = np.empty(a.shape, a.dtype) if out is None else out
    np.multiply(a < 0, a.dtype.type(math.pi), out=result)
    np.copyto(result, a, where=np.isnan(a))
    return result


@native
def angle_out(self: Tensor, out: Tensor) -> Tensor:
    """angle.out (CPU, Meta): a complex input's angle goes to a real or complex `out`."""
    if self.dtype.is_complex and not out.dtype.is_complex:
        real = self.dtype.to_real()
        if not can_cast(real, out.dtype):
            raise RuntimeError(
                f"result type {real.scalar_name} can't be cast to the desired output type "
                f"{out.dtype.scalar_name}"
            )
        values = aten_ops().angle.default(self)
        resize_output(out, tuple(values.shape), "angle")
        return aten_ops().copy_.default(out, values, False)
    fn = _angle_complex if self.dtype.is_complex else _angle_real
    return _iterate("angle", self, out, fn, float_op=True)


@native
def angle(self: Tensor) -> Tensor:
    """angle (CPU, Meta): the argument of complex values; 0 or pi (NaN kept) for real ones."""
    if self.dtype.is_complex:
        op = TensorIteratorMeta("functional", (None,), "angle", "CPU")
        op.build((self,), output_dtype=self.dtype.to_real(),
                 enforce_safe_casting_to_output=False)
        result = op.outputs[0]
        if result._storage.data is not None:
            (a,) = op.input_arrays()
            _angle_complex(a, out=result._numpy())
        return result
    return _iterate("angle", self, None, _angle_real, float_op=True)


# --- float predicates -----------------------------------------------------------------------------


def _bool_result(self: Tensor, fn) -> Tensor:
    """A new bool tensor of self's shape holding `fn(values)` (CPU), or just the shape."""
    result = empty_tensor(self._sizes, dt.bool, self.device)
    if result._storage.data is not None and result.numel():
        fn(self._numpy(), out=result._numpy())
    return result


def _is_integral(t: Tensor) -> bool:
    return not (t.dtype.is_floating_point or t.dtype.is_complex)


def _fill_false(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    out[...] = False
    return out


def _fill_true(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    out[...] = True
    return out


def _values(fn):
    """A predicate over float arrays computed in float32 for bfloat16 (NumPy's own loops
    lack it)."""

    def apply(a: np.ndarray, out: np.ndarray) -> np.ndarray:
        if a.dtype.kind not in "fc":  # bfloat16, and complex32 (read as complex64)
            a = dt.compute_array(a, np.complex64 if a.dtype == dt.COMPLEX32_NUMPY else np.float32)
        return fn(a, out=out)

    return apply


@native
def isnan(self: Tensor) -> Tensor:
    """isnan (CPU, Meta): `self != self`."""
    if _is_integral(self):
        return _bool_result(self, _fill_false)
    return _bool_result(self, _values(np.isnan))


@native
def isinf(self: Tensor) -> Tensor:
    """isinf (CompositeExplicitAutograd): either part infinite; integers never."""
    if _is_integral(self):
        return _bool_result(self, _fill_false)
    return _bool_result(self, _values(np.isinf))


@native
def isfinite(self: Tensor) -> Tensor:
    """isfinite (CompositeImplicitAutograd): both parts finite; integers always."""
    if _is_integral(self):
        return _bool_result(self, _fill_true)
    return _bool_result(self, _values(np.isfinite))


@native
def isreal(self: Tensor) -> Tensor:
    """isreal (CompositeImplicitAutograd): imag == 0 for complex, all True otherwise."""
    if not self.dtype.is_complex:
        return _bool_result(self, _fill_true)
    if self.device.type == "cpu":
        return _bool_result(self, _imag_is_zero)
    return aten_ops().eq.Scalar(aten_ops().imag.default(self), 0)


def _imag_is_zero(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    return np.equal(dt.compute_array(a).imag, 0, out=out)  # complex32 too


def _refuse_complex(name: str):
    def check(self: Tensor) -> None:
        if self.dtype.is_complex:
            if self.device.type == "meta":  # PyTorch's Python meta function words it so
                raise RuntimeError(
                    f"Complex dtype is not supported for {name}, got dtype {self.dtype}"
                )
            raise RuntimeError(f"{name} does not support complex inputs.")

    return check


def _bool_out_only(name: str):
    def meta_check(op: TensorIteratorMeta, self: Tensor) -> None:
        out = op.maybe_get_output()
        if out is not None and out.dtype is not dt.bool:
            raise RuntimeError(f"{name} does not support non-boolean outputs.")

    return meta_check


def _equals(value: float):
    # One comparison, for every real dtype (integers and bool are never infinite).
    def fn(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        return np.equal(a, value, out=out)

    return fn


family.register(
    *(
        family.Pointwise(
            name, _equals(value), family.ALL_AND_REDUCED_BOOL, build="bool", takes_out=True,
            check=_refuse_complex(name), meta_check=_bool_out_only(name),
        )
        for name, value in (("isposinf", math.inf), ("isneginf", -math.inf))
    )
)


# --- nan_to_num -----------------------------------------------------------------------------


def _finfo(dtype) -> np.finfo:
    import ml_dtypes

    return ml_dtypes.finfo(dtype.numpy) if dtype is dt.bfloat16 else np.finfo(dtype.numpy)


def _nan_to_num_values(a: np.ndarray, dtype, nan, posinf, neginf, copy=True) -> np.ndarray:
    info = _finfo(dtype.to_real())
    compute = a if dtype is not dt.bfloat16 else a.astype(np.float32)
    return np.nan_to_num(
        compute,
        copy=copy,
        nan=0.0 if nan is None else nan,
        posinf=float(info.max) if posinf is None else posinf,
        neginf=float(info.min) if neginf is None else neginf,
    )


@native
def nan_to_num_out(self: Tensor, nan, posinf, neginf, out: Tensor) -> Tensor:
    """nan_to_num.out (CPU, Meta): NaN, +inf and -inf replaced (each part of a complex)."""
    if self.dtype is not out.dtype:
        raise RuntimeError(
            f"nan_to_num: dtype of out: {out.dtype.scalar_name} should be same as input: "
            f"{self.dtype.scalar_name}"
        )
    if _is_integral(self):
        resize_output(out, tuple(self.shape), "nan_to_num")
        return aten_ops().copy_.default(out, self, False)
    op = TensorIteratorMeta("out", (out,), "nan_to_num", "CPU")
    op.build_unary_op(self)
    result = op.outputs[0]
    if result._storage.data is not None:
        (a,) = op.input_arrays(self.dtype.numpy)
        target = result._numpy()
        if target.dtype == a.dtype and self.dtype is not dt.bfloat16:
            # one copy, then replace in place (what np.nan_to_num itself does)
            np.copyto(target, a)
            quiet_call(_nan_to_num_values, target, self.dtype, nan, posinf, neginf, False)
        else:
            op.write(quiet_call(_nan_to_num_values, a, self.dtype, nan, posinf, neginf))
    op.finish()
    return out


@native
def nan_to_num(self: Tensor, nan=None, posinf=None, neginf=None) -> Tensor:
    """nan_to_num (CompositeExplicitAutograd): into a new tensor like self."""
    out = aten_ops().empty_like.default(self, None, None, None, None, None)
    return write_fresh(
        lambda fresh: aten_ops().nan_to_num.out(self, nan, posinf, neginf, fresh), out
    )


@native
def nan_to_num_(self: Tensor, nan=None, posinf=None, neginf=None) -> Tensor:
    """nan_to_num_ (CompositeExplicitAutograd): in place."""
    return aten_ops().nan_to_num.out(self, nan, posinf, neginf, self)
