"""Default values as PyTorch's C++ schema printer writes them, and the enum words they name.

Note: two spellings of a schema
    `native_functions.yaml` spells defaults as people write them (`float eps=1e-05`,
    `int reduction=Mean`, `SymInt[2] stride=1`); torchgen's `str()` keeps that text. PyTorch's
    C++ printer (`str(torch._C.parse_schema(s))`, the text of `torch.ops.*._schema`, of error
    messages and of `Library.define`d operators) writes the parsed values instead:

    - a float that is a whole number fitting int64 as `2.` (`-0.0` as `0.`), any other as
      C's `%.17g` (`1.0000000000000001e-05`), `inf`/`-inf`/`nan` bare;
    - the words `Mean`, `contiguous_format`, `strided` and dtype names as their c10 enum
      values (`1`, `0`, `0`, `long` -> `4`);
    - lists as `[a, b]`; an `int` list (not `SymInt`) of two or more equal items as the bare
      item (`int[2] x=1`, even `int[] x=[1,1]` -> `x=1`), a bare item of a fixed-size list
      of another type expanded (`SymInt[2] x=1` -> `[1, 1]`, `int[1] x=0` -> `[0]`);
    - strings double-quoted with C escapes (non-ASCII bytes as three signed octal digits, as
      c10's printQuotedString does), a `Device` bare (`cpu`);
    - the type `DeviceIndex` as `int`.

    `str(schema)` is the C++ printer's text, so it equals what PyTorch shows for the same
    schema; `schema.yaml_text()` is the YAML spelling, so `parse(s).yaml_text() == s` for every
    `func:` of PyTorch's file. Both parse back to the same schema.
"""

from __future__ import annotations

import math

__all__ = ["ENUM_VALUES", "cpp_default_text", "cpp_type_name", "yaml_default_text"]

# c10's enum value for each bare word the default grammar accepts: ScalarType names (and
# torch's aliases), Layout, MemoryFormat, and at::Reduction.
_SCALAR_TYPE_VALUES = {
    "uint8": 0, "int8": 1, "int16": 2, "short": 2, "int32": 3, "int": 3, "int64": 4, "long": 4,
    "float16": 5, "half": 5, "float32": 6, "float": 6, "float64": 7, "double": 7,
    "complex32": 8, "chalf": 8, "complex64": 9, "cfloat": 9, "complex128": 10, "cdouble": 10,
    "bool": 11, "bfloat16": 15, "float8_e5m2": 23, "float8_e4m3fn": 24,
    "float8_e5m2fnuz": 25, "float8_e4m3fnuz": 26, "uint16": 27, "uint32": 28, "uint64": 29,
}  # fmt: skip
ENUM_VALUES: dict[str, int] = {
    **_SCALAR_TYPE_VALUES,
    "strided": 0,
    "contiguous_format": 0,
    "Mean": 1,
}

# Base types the C++ printer names differently (the JIT parses DeviceIndex as int).
_CPP_TYPE_NAMES = {"DeviceIndex": "int"}

_INT64_LIMIT = 2.0**63


def cpp_type_name(name: str) -> str:
    """The name the C++ printer gives base type `name`."""
    return _CPP_TYPE_NAMES.get(name, name)


def _cpp_float(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.isnan(value):
        return "nan"
    if value == math.floor(value) and abs(value) < _INT64_LIMIT:
        return f"{int(value)}."
    return format(value, ".17g")


def _octal_byte(byte: int) -> str:
    # c10 prints an unprintable char as three octal digits computed on a *signed* char,
    # with C's truncating division: bytes >= 0x80 come out as odd characters (kept as is).
    s = byte - 256 if byte >= 128 else byte
    digits = []
    for _ in range(2):
        digits.append(chr(ord("0") + int(math.fmod(s, 8))))
        s = int(s / 8)
    digits.append(chr(ord("0") + s))
    return "\\" + "".join(reversed(digits))


_C_ESCAPES = {
    "\\": "\\\\", "'": "\\'", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
    "\r": "\\r", "\t": "\\t", "\v": "\\v",
}  # fmt: skip


def _quoted(text: str) -> str:
    out = ['"']
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(_octal_byte(byte))
    out.append('"')
    return "".join(out)


def _cpp_scalar(base: str, value: object) -> str:
    """One non-list value of base type `base`."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return _cpp_float(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        if base == "str":
            return _quoted(value)
        if base == "Device":
            return value
        return str(ENUM_VALUES.get(value, value))
    return str(value)


def cpp_default_text(base: str, list_size: int | None, is_list: bool, value: object) -> str:
    """`value` as the C++ printer writes it, for an argument whose type (seen through `?`)
    has base type `base` and is a list (`is_list`, fixed size `list_size`) or not."""
    if not is_list or value is None:
        return _cpp_scalar(base, value)
    if not isinstance(value, tuple | list):
        value = (value,) * (list_size or 1)  # `int[2] x=1` holds [1, 1]
    items = [_cpp_scalar(base, v) for v in value]
    if base == "int" and len(items) > 1 and len(set(items)) == 1:
        return items[0]
    return "[" + ", ".join(items) + "]"


def yaml_default_text(value: object) -> str:
    """A default value in native_functions.yaml's spelling, for arguments built without
    source text (the parser keeps the text it read)."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, tuple | list):
        return "[" + ",".join(yaml_default_text(v) for v in value) + "]"
    if isinstance(value, str):
        return value  # enum-like words (Mean, long, contiguous_format) print bare
    return repr(value)
