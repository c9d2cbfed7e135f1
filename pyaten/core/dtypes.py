"""Scalar types: the thirteen dtypes, their NumPy twins, and the default dtype.

A `dtype` is an immutable singleton (compare with `is`). Each knows its PyTorch name
(`float32`), its C++ ScalarType name (`Float`, used in error messages), its NumPy dtype
and its promotion category.

Note: complex32 in NumPy
    NumPy has no complex32 (PyTorch's `chalf`, two float16s). Its storage is viewed through a
    structured NumPy dtype of two float16 fields, `real` and `imag` (4 bytes an element, laid
    out as c10::complex<c10::Half>), so views, copies, indexing and concatenation work on it
    unchanged, while NumPy refuses to compute on it: an operator that does not convert on
    purpose fails loudly instead of computing something wrong. Kernels that support it (as
    PyTorch's `add`, `mul`, `where`, copies and fills do on the CPU) compute in complex64
    (`compute_array`) and round each part to float16 on write (`store`), as float16 is computed
    in float32. `Tensor.numpy()` refuses it, as PyTorch does.
"""

from __future__ import annotations

import os
import sys
import warnings

import ml_dtypes
import numpy as np

__all__ = [
    "dtype",
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "complex32",
    "half",
    "float",
    "double",
    "short",
    "int",
    "long",
    "cfloat",
    "cdouble",
    "chalf",
    "qint8",
    "quint8",
    "qint32",
    "get_default_dtype",
    "set_default_dtype",
]

_builtin_bool = bool

# Promotion categories, lowest first (docs/type-promotion.md).
BOOL_CATEGORY = 0
INT_CATEGORY = 1
FLOAT_CATEGORY = 2
COMPLEX_CATEGORY = 3
# Quantized dtypes take part in no promotion (they are kept out of ALL_DTYPES).
QUANTIZED_CATEGORY = 4


class dtype:  # noqa: N801 - named like torch.dtype
    """A tensor element type; one instance per type, compared by identity."""

    __slots__ = (
        "name",
        "scalar_name",
        "itemsize",
        "is_floating_point",
        "is_complex",
        "is_signed",
        "category",
        "index",
        "numpy",
        "_to_real",
        "_to_complex",
    )

    def __init__(
        self, name: str, scalar_name: str, np_dtype: np.dtype, category: int, signed: bool
    ) -> None:
        self.name = name
        self.scalar_name = scalar_name
        self.numpy = np.dtype(np_dtype)
        self.itemsize = self.numpy.itemsize
        self.category = category
        self.is_floating_point = category == FLOAT_CATEGORY
        self.is_complex = category == COMPLEX_CATEGORY
        self.is_signed = signed
        self.index = len(_ALL)
        self._to_real = self
        self._to_complex = self
        _ALL.append(self)

    def __repr__(self) -> str:
        return "pyaten." + self.name

    __str__ = __repr__

    def __reduce__(self) -> str:
        # Pickle as the module-level singleton.
        return self.name

    def __copy__(self) -> dtype:
        return self

    def __deepcopy__(self, memo: dict) -> dtype:
        return self

    def to_real(self) -> dtype:
        """The real counterpart (complex64 -> float32); identity for real dtypes."""
        return self._to_real

    def to_complex(self) -> dtype:
        """The complex counterpart (float32 -> complex64); identity for complex dtypes."""
        return self._to_complex

    @property
    def cpp_name(self) -> str:
        """c10's TypeMeta name (`float`, `long int`), which ATen's out/in-place checks print."""
        return _TYPEMETA_NAMES[self.name]

    @property
    def is_integral(self) -> _builtin_bool:
        """True for bool and the integer types (torch's isIntegralType(includeBool=True))."""
        return self.category <= INT_CATEGORY


_ALL: list[dtype] = []

# c10 TypeMeta names per dtype: what `<< dtype` prints in ATen's C++ error messages.
_TYPEMETA_NAMES = {
    "bool": "bool",
    "uint8": "unsigned char",
    "int8": "signed char",
    "int16": "short int",
    "int32": "int",
    "int64": "long int",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "float32": "float",
    "float64": "double",
    "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
    "complex32": "c10::complex<c10::Half>",
}

# complex32's storage as NumPy sees it (see Note: complex32 in NumPy).
COMPLEX32_NUMPY = np.dtype([("real", np.float16), ("imag", np.float16)])

bool = dtype("bool", "Bool", np.bool_, BOOL_CATEGORY, False)  # noqa: A001
uint8 = dtype("uint8", "Byte", np.uint8, INT_CATEGORY, False)
int8 = dtype("int8", "Char", np.int8, INT_CATEGORY, True)
int16 = dtype("int16", "Short", np.int16, INT_CATEGORY, True)
int32 = dtype("int32", "Int", np.int32, INT_CATEGORY, True)
int64 = dtype("int64", "Long", np.int64, INT_CATEGORY, True)
float16 = dtype("float16", "Half", np.float16, FLOAT_CATEGORY, True)
bfloat16 = dtype("bfloat16", "BFloat16", ml_dtypes.bfloat16, FLOAT_CATEGORY, True)
float32 = dtype("float32", "Float", np.float32, FLOAT_CATEGORY, True)
float64 = dtype("float64", "Double", np.float64, FLOAT_CATEGORY, True)
complex64 = dtype("complex64", "ComplexFloat", np.complex64, COMPLEX_CATEGORY, True)
complex128 = dtype("complex128", "ComplexDouble", np.complex128, COMPLEX_CATEGORY, True)
complex32 = dtype("complex32", "ComplexHalf", COMPLEX32_NUMPY, COMPLEX_CATEGORY, True)

# torch's aliases
half = float16
float = float32  # noqa: A001
double = float64
short = int16
int = int32  # noqa: A001
long = int64
cfloat = complex64
cdouble = complex128
chalf = complex32

complex64._to_real = float32
complex128._to_real = float64
complex32._to_real = float16
float32._to_complex = complex64
float64._to_complex = complex128
float16._to_complex = complex32
bfloat16._to_complex = complex64  # there is no complex bfloat16; torch says complex64 too

ALL_DTYPES: tuple[dtype, ...] = tuple(_ALL)
BY_NAME: dict[str, dtype] = {d.name: d for d in ALL_DTYPES}
# complex32 has no NumPy twin: a structured array is not converted to it.
_BY_NUMPY: dict[np.dtype, dtype] = {d.numpy: d for d in ALL_DTYPES if d is not complex32}

# Quantized element types (docs/quantization.md): the storage holds their integer
# representation; they stay out of ALL_DTYPES, so promotion and NumPy lookups never see them.
qint8 = dtype("qint8", "QInt8", np.int8, QUANTIZED_CATEGORY, True)
quint8 = dtype("quint8", "QUInt8", np.uint8, QUANTIZED_CATEGORY, False)
qint32 = dtype("qint32", "QInt32", np.int32, QUANTIZED_CATEGORY, True)
QUANTIZED_DTYPES: tuple[dtype, ...] = (qint8, quint8, qint32)
_TYPEMETA_NAMES.update(qint8="c10::qint8", quint8="c10::quint8", qint32="c10::qint32")


def from_numpy_dtype(np_dtype: np.dtype) -> dtype:
    """The pyaten dtype for a NumPy dtype; TypeError naming it when there is none."""
    found = _BY_NUMPY.get(np.dtype(np_dtype))
    if found is None:
        # Named by its scalar type, as PyTorch does (`numpy.str_`, `numpy.uint16`).
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).type.__name__}. "
            "The only supported types "
            "are: float64, float32, float16, complex64, complex128, int64, int32, int16, "
            "int8, uint8, and bool."
        )
    return found


_default_dtype: list[dtype] = [float32]


def get_default_dtype() -> dtype:
    """The dtype Python floats become (float32 unless changed)."""
    return _default_dtype[0]


def set_default_dtype(d: dtype) -> None:
    """Set the dtype Python floats become; only float dtypes are allowed, as in torch."""
    if not isinstance(d, dtype):
        raise TypeError(
            f"set_default_dtype(): argument 'd' must be pyaten.dtype, not {type(d).__name__}"
        )
    if d not in (float16, bfloat16, float32, float64):
        raise TypeError("only floating-point types are supported as the default type")
    _default_dtype[0] = d


def default_complex_dtype() -> dtype:
    """The dtype Python complex numbers become: complex128 iff the default is float64."""
    return complex128 if _default_dtype[0] is float64 else complex64


# --- complex32 arrays (see Note: complex32 in NumPy) ----------------------------------------

_warned_complex_half: list[bool] = []


def warn_complex_half() -> None:
    """PyTorch's once-per-process warning on allocating the first complex32 tensor, shown at
    the first line outside pyaten."""
    if _warned_complex_half:
        return
    _warned_complex_half.append(True)
    level, frame = 2, sys._getframe(1)  # stacklevel 2 is our caller
    while frame is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE_DIR)
        or frame.f_code.co_filename.startswith("<pyaten")  # generated call wrappers
    ):
        level, frame = level + 1, frame.f_back
    warnings.warn(
        "ComplexHalf support is experimental and many operators don't support it yet.",
        UserWarning,
        stacklevel=level,
    )


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compute_array(array: np.ndarray, target: np.dtype | None = None) -> np.ndarray:
    """`array` as a NumPy array of `target` (default: the dtype NumPy computes it in), where
    complex32 storage reads as complex64. A new array unless `array` already is one."""
    if array.dtype == COMPLEX32_NUMPY:
        values = np.empty(array.shape, np.complex64)
        values.real = array["real"]
        values.imag = array["imag"]
        if target is None or target == values.dtype:
            return values
        array = values
    elif target is None or array.dtype == target:
        return array
    if target == COMPLEX32_NUMPY:
        out = np.empty(array.shape, COMPLEX32_NUMPY)
        store(out, array)
        return out
    if array.dtype.kind == "c" and np.dtype(target).kind != "c":
        array = array.real  # complex to real keeps the real part, as in PyTorch
    return array.astype(target)


def store(out: np.ndarray, values: object) -> None:
    """`np.copyto(out, values, casting="unsafe")` that also reads and writes complex32 storage
    (each part rounded to float16 once)."""
    if out.dtype != COMPLEX32_NUMPY:  # NumPy's own cast (bfloat16 is kind "V" too)
        if isinstance(values, np.ndarray) and values.dtype == COMPLEX32_NUMPY:
            values = compute_array(values)
        np.copyto(out, values, casting="unsafe")
        return
    if isinstance(values, np.ndarray) and values.dtype == COMPLEX32_NUMPY:
        np.copyto(out, values)
        return
    values = np.asarray(values)
    with np.errstate(over="ignore"):  # too-large parts become inf, as in PyTorch
        if values.dtype.kind == "c":
            real, imag = values.real, values.imag
        else:
            real, imag = values, 0
        # Through float32, as c10::Half is made from a float (a double is rounded twice).
        out["real"] = np.asarray(real, np.float32)
        out["imag"] = np.asarray(imag, np.float32)
