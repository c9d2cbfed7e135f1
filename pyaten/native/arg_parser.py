"""The runtime half of the generated bindings: matching Python arguments to a signature.

`ParsedSignature` is built once per `PythonSignature` (at import): each parameter gets a
converter that turns an accepted Python value into what the schema promises the kernel
(`int[]` -> tuple of ints, `Scalar` -> Python number, `ScalarType` -> dtype, ...) or returns
`FAIL`. `bind(signatures, args, kwargs)` tries the signatures in order, as PyTorch's parser
does, and raises PyTorch's `TypeError` when none matches. The generated binding calls the op
entry with every argument positionally in schema order.
"""

from __future__ import annotations

import builtins
import numbers
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pyaten.codegen.python_signature import PythonParam, PythonSignature
from pyaten.core import dtypes as _dtypes
from pyaten.core.device import as_device
from pyaten.core.device import device as _device_class
from pyaten.core.symbolic import SymFloat, SymInt
from pyaten.native import return_types, runtime
from pyaten.schema.model import NO_DEFAULT, BaseType, ListType, OptionalType, Type

FAIL: Any = object()  # a converter's "this value does not fit"
_MISSING: Any = object()

_PY_TYPES_AS_DTYPES = {
    builtins.float: _dtypes.float64,
    builtins.int: _dtypes.int64,
    builtins.bool: _dtypes.bool,
    builtins.complex: _dtypes.complex128,
}


class ArgumentParseError(TypeError):
    """A call matched no signature; Python operators turn it into NotImplemented."""


# --- converters: value -> converted value or FAIL --------------------------------------------

# Python ints PyTorch's parser refuses: an `int` outside int64 (ValueError, or TypeError
# naming the list position inside an int list); a `Scalar` outside [int64 min, uint64 max].
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1


class _IntOverflow(ValueError):
    """An int argument that does not fit int64 (`match` names the argument)."""

    def __init__(self) -> None:
        super().__init__("Overflow when unpacking long long")


def _scalar_int_overflow(obj: int) -> OverflowError:
    if obj < 0:
        return OverflowError("can't convert negative int to unsigned")
    return OverflowError("int too big to convert")


def _is_tensor(obj: object) -> bool:
    return isinstance(obj, runtime.Tensor)


def _conv_tensor(obj: object) -> object:
    return obj if isinstance(obj, runtime.Tensor) else FAIL


def _conv_tensor_or_number(obj: object) -> object:
    if isinstance(obj, runtime.Tensor):
        return obj
    if obj.__class__ is SymInt:  # a size where a Tensor goes: its hint computes, a capture
        wrapped = runtime.wrapped_number(obj.node.hint)  # records the size (make_fx)
        wrapped._symbolic_value = obj
        return wrapped
    if obj.__class__ is SymFloat:  # a float computed from sizes: specialised (a guard)
        return runtime.wrapped_number(builtins.float(obj))
    if isinstance(obj, (builtins.int, builtins.float, builtins.complex, np.number, np.bool_)):
        if obj.__class__ is builtins.int and not _INT64_MIN <= obj <= _UINT64_MAX:
            raise _scalar_int_overflow(obj)
        if isinstance(obj, (np.number, np.bool_)):  # `np.float32(2) * t`: a Python number
            obj = obj.item()
        return runtime.wrapped_number(obj)
    return FAIL


def _conv_int(obj: object) -> object:
    cls = obj.__class__
    if cls is builtins.int:
        if -0x8000000000000000 <= obj <= 0x7FFFFFFFFFFFFFFF:  # int64 (literals: no lookups)
            return obj
        raise _IntOverflow
    if cls is builtins.bool:
        return FAIL
    if isinstance(obj, runtime.Tensor):
        if obj.dim() == 0 and not obj.dtype.is_floating_point and not obj.dtype.is_complex \
                and obj.dtype is not _dtypes.bool:
            return builtins.int(obj.item())
        return FAIL
    if isinstance(obj, (builtins.float, builtins.complex, np.floating, np.complexfloating)):
        return FAIL
    try:
        return operator.index(obj)
    except TypeError:
        return FAIL


def _conv_symint(obj: object) -> object:
    if obj.__class__ is SymInt:  # a symbolic size stays symbolic (pyaten/core/symbolic.py)
        return obj
    return _conv_int(obj)


def _conv_float(obj: object) -> object:
    cls = obj.__class__
    if cls is builtins.float:
        return obj
    if cls is builtins.int or cls is builtins.bool:
        return builtins.float(obj)
    if isinstance(obj, (np.floating, np.integer)):
        return builtins.float(obj)
    if isinstance(obj, runtime.Tensor):
        if obj.dim() == 0 and not obj.requires_grad:
            return builtins.float(obj.item())
        return FAIL
    if cls is SymFloat or cls is SymInt:  # computed from sizes: specialised (a guard)
        return builtins.float(obj)
    return FAIL


def _conv_bool(obj: object) -> object:
    if obj.__class__ is builtins.bool:
        return obj
    if isinstance(obj, np.bool_):
        return builtins.bool(obj)
    return FAIL


def _conv_str(obj: object) -> object:
    return obj if isinstance(obj, str) else FAIL


def _conv_scalar(obj: object) -> object:
    cls = obj.__class__
    if cls is builtins.int:
        if -0x8000000000000000 <= obj <= 0xFFFFFFFFFFFFFFFF:  # int64 or uint64
            return obj
        raise _scalar_int_overflow(obj)
    if cls is builtins.float or cls is builtins.bool:
        return obj
    if cls is builtins.complex or cls is SymInt:  # a size stays symbolic (core/symbolic.py)
        return obj
    if cls is SymFloat:  # a float computed from sizes: specialised (a guard)
        return builtins.float(obj)
    if isinstance(obj, np.bool_):
        return builtins.bool(obj)
    if isinstance(obj, np.integer):
        return builtins.int(obj)
    if isinstance(obj, np.floating):
        return builtins.float(obj)
    if isinstance(obj, np.complexfloating):
        return builtins.complex(obj)
    if isinstance(obj, runtime.Tensor):
        if obj.dim() == 0 and not obj.requires_grad:
            return obj.item()
        return FAIL
    if isinstance(obj, numbers.Number):
        return obj
    return FAIL


def _conv_dtype(obj: object) -> object:
    if isinstance(obj, _dtypes.dtype):
        return obj
    if isinstance(obj, type) and obj in _PY_TYPES_AS_DTYPES:
        return _PY_TYPES_AS_DTYPES[obj]
    return FAIL


def _conv_device(obj: object) -> object:
    if isinstance(obj, _device_class):
        return obj
    if isinstance(obj, str):
        return as_device(obj)  # a bad device string raises PyTorch's RuntimeError here
    if obj.__class__ is builtins.int and obj >= 0:
        try:
            return as_device(f"cuda:{obj}")
        except AssertionError:  # a bare index names the accelerator; this build has none
            raise RuntimeError("Cannot access accelerator device when none is available.") \
                from None
        except (RuntimeError, ValueError):
            return FAIL
    return FAIL


def _conv_layout(obj: object) -> object:
    return obj if runtime.is_layout(obj) else FAIL


def _conv_memory_format(obj: object) -> object:
    return obj if runtime.is_memory_format(obj) else FAIL


def _conv_generator(obj: object) -> object:
    return obj if runtime.is_generator(obj) else FAIL


def _conv_any(obj: object) -> object:
    return obj


_BASE_CONVERTERS: dict[str, Callable[[object], object]] = {
    "Tensor": _conv_tensor,
    "int": _conv_int,
    "SymInt": _conv_symint,
    "float": _conv_float,
    "bool": _conv_bool,
    "str": _conv_str,
    "Scalar": _conv_scalar,
    "ScalarType": _conv_dtype,
    "Device": _conv_device,
    "Layout": _conv_layout,
    "MemoryFormat": _conv_memory_format,
    "Generator": _conv_generator,
    "Dimname": _conv_str,
}


def _optional(conv: Callable[[object], object]) -> Callable[[object], object]:
    def convert_optional(obj: object) -> object:
        return None if obj is None else conv(obj)

    return convert_optional


def _list_of(
    elem: Callable[[object], object], size: int | None, bare_ok: bool
) -> Callable[[object], object]:
    def convert_list(obj: object) -> object:
        if isinstance(obj, (tuple, list)):
            values = []
            for item in obj:
                value = elem(item)
                if value is FAIL:
                    return FAIL
                values.append(value)
            return tuple(values)
        if bare_ok and size is not None:
            # `int[2] stride=1` accepts a bare int, repeated to the list's size.
            value = elem(obj)
            if value is not FAIL and not isinstance(obj, runtime.Tensor):
                return (value,) * size
        return FAIL

    return convert_list


def converter_for(t: Type, numbers_as_tensors: bool = False) -> Callable[[object], object]:
    """The converter for a schema type."""
    if isinstance(t, OptionalType):
        return _optional(converter_for(t.elem, numbers_as_tensors))
    if isinstance(t, ListType):
        elem_type = t.elem
        elem = converter_for(elem_type, False)
        base = elem_type.elem if isinstance(elem_type, OptionalType) else elem_type
        bare = isinstance(base, BaseType) and base.name in ("int", "SymInt", "float", "bool")
        return _list_of(elem, t.size, bare)
    if isinstance(t, BaseType):
        if t.name == "Tensor" and numbers_as_tensors:
            return _conv_tensor_or_number
        return _BASE_CONVERTERS.get(t.name, _conv_any)
    return _conv_any


def convert_default(t: Type, value: object) -> object:
    """A schema default as the kernel expects it (`long` -> int64, `[0, 1]` -> (0, 1))."""
    if value is None or value is NO_DEFAULT:
        return value
    base = t.elem if isinstance(t, OptionalType) else t
    if isinstance(base, BaseType):
        if base.name == "ScalarType" and isinstance(value, str):
            return runtime.dtype_by_schema_name(value)
        if base.name == "MemoryFormat" and isinstance(value, str):
            return runtime.memory_format_by_name(value)
        if base.name == "Layout" and isinstance(value, str):
            return runtime.layout_by_name(value)
        if base.name == "Device" and isinstance(value, str):
            return as_device(value)
        if base.name in ("int", "SymInt") and value == "Mean":
            return 1  # at::Reduction::Mean (`int reduction=Mean`)
    if isinstance(base, ListType):
        if isinstance(value, (list, tuple)):
            return tuple(value)
        if base.size is not None:
            return (value,) * base.size
    return value


# --- python type names for messages ------------------------------------------------------------


def value_type_name(obj: object) -> str:
    """How PyTorch names a value's type in "got (Tensor, str)"."""
    if isinstance(obj, runtime.Tensor):
        return "Tensor"
    if isinstance(obj, _dtypes.dtype):
        return "pyaten.dtype"
    if isinstance(obj, _device_class):
        return "pyaten.device"
    if isinstance(obj, (tuple, list)):
        inner = ", ".join(value_type_name(v) for v in obj)
        return f"{type(obj).__name__} of {inner}" if obj else type(obj).__name__
    return type(obj).__name__


# --- signatures -------------------------------------------------------------------------------


# The NumPy spellings PyTorch's parser accepts for a keyword (its
# numpy_compatibility_arg_names): `t.sum(axis=0, keepdims=True)`, `cat(ts, axis=1)`. A
# parameter's own name wins; an alias given besides it, or besides a positional value, is
# left over and refused as an unexpected keyword, as in PyTorch.
NUMPY_ALIASES: dict[str, tuple[str, ...]] = {
    "dim": ("axis",),
    "keepdim": ("keepdims",),
    "input": ("x", "a", "x1"),
    "other": ("x2",),
}


class ParsedParam:
    __slots__ = ("name", "convert", "required", "default", "keyword_only", "type_name",
                 "schema_name", "is_int_list", "aliases", "scalar")

    def __init__(self, param: PythonParam, numbers_as_tensors: bool) -> None:
        self.name = param.name
        self.aliases = NUMPY_ALIASES.get(param.name, ())
        self.schema_name = param.schema_name
        self.keyword_only = param.keyword_only
        self.required = param.required
        self.type_name = param.type_name()
        if param.name == "out" and isinstance(param.type, ListType):
            self.convert = _optional(_list_of(_conv_tensor, None, False))
        else:
            self.convert = converter_for(param.type, numbers_as_tensors)
        self.default = convert_default(param.type, param.default)
        t = param.type
        self.is_int_list = isinstance(t, ListType) and str(t.elem) in ("int", "SymInt")
        # a Scalar (or Scalar?): a 0-dim tensor given for it is read only once the whole
        # signature matched (Note: a tensor for a Number)
        base = t.elem if isinstance(t, OptionalType) else t
        self.scalar = isinstance(base, BaseType) and base.name == "Scalar"


class ParsedSignature:
    """One Python signature, ready to match calls; `call(values)` runs the op."""

    __slots__ = ("name", "method", "text", "params", "by_name", "max_pos", "min_args",
                 "max_args", "varargs_intlist", "functional_entry", "out_entry",
                 "functional_name", "out_name", "self_index", "functional_order", "out_order",
                 "n_outs", "requires_grad_index", "out_index", "signature",
                 "functional_get", "out_get", "functional_tuple", "out_tuple")

    def __init__(self, sig: PythonSignature) -> None:
        self.signature = sig
        self.name = sig.name
        self.method = sig.method
        self.text = sig.signature_text()
        self.params = tuple(ParsedParam(p, sig.allow_numbers_as_tensors) for p in sig.params)
        self.by_name = {p.name: i for i, p in enumerate(self.params)}
        self.max_pos = sum(1 for p in self.params if not p.keyword_only)
        self.min_args = sum(1 for p in self.params if p.required)
        self.max_args = len(self.params)
        self.varargs_intlist = sig.allow_varargs_intlist
        self.functional_name = sig.functional.name.qualified if sig.functional else None
        self.out_name = sig.out_variant.name.qualified if sig.out_variant else None
        self.functional_entry = None
        self.out_entry = None
        self.requires_grad_index = self.by_name.get("requires_grad") if sig.has_requires_grad \
            else None
        self.out_index = self.by_name.get("out") if sig.out_variant is not None else None
        self.n_outs = len(sig.out_variant.out) if sig.out_variant is not None else 0
        # Where each schema argument comes from: a parameter index, or -1 for `self`.
        schema_index = {p.schema_name: i for i, p in enumerate(self.params) if p.schema_name}
        self.functional_order = self._order(sig.functional, schema_index)
        self.out_order = self._order(sig.out_variant, schema_index)
        # Getters that pick the entry's arguments out of `values + [self] + outs` in one C call.
        self.functional_get = self._getter(self.functional_order)
        self.out_get = self._getter(self.out_order)
        # Named returns (`values, indices`) come back as pyaten.return_types named tuples.
        self.functional_tuple = return_types.for_schema(sig.functional, out=False)
        self.out_tuple = return_types.for_schema(sig.out_variant, out=True)

    def _order(self, schema, schema_index) -> tuple[int, ...] | None:
        if schema is None:
            return None
        order = []
        out_k = 0
        for arg in schema.arguments:
            if arg.is_out and (self.out_index is not None or arg.name not in schema_index):
                order.append(-2 - out_k)  # -2, -3, ...: the k-th tensor of `out=`
                out_k += 1
            elif self.method and arg.name == "self":
                order.append(-1)
            else:
                order.append(schema_index[arg.name])
        return tuple(order)

    def _getter(self, order: tuple[int, ...] | None) -> Callable[[list], tuple] | None:
        if order is None:
            return None
        size = len(self.params)
        # -1 (self) sits right after the parameters' values, the k-th out tensor after it.
        slots = [k if k >= 0 else (size if k == -1 else size - 1 - k) for k in order]
        if len(slots) == 1:
            only = slots[0]
            return lambda values: (values[only],)
        if not slots:
            return lambda values: ()
        return operator.itemgetter(*slots)

    def resolve(self, get_operator: Callable[[str], Any]) -> None:
        """Look up the operator entries (once, after registration)."""
        if self.functional_name is not None:
            self.functional_entry = get_operator(self.functional_name)
        if self.out_name is not None:
            self.out_entry = get_operator(self.out_name)

    # -- matching ----------------------------------------------------------------------------

    def match(self, args: Sequence[object], kwargs: dict[str, object],
              raise_errors: bool = False) -> list[object] | str:
        """Converted values (one per parameter), or a reason string when the call doesn't fit."""
        nargs = len(args)
        params = self.params
        if self.varargs_intlist and nargs >= 1 and not isinstance(args[0], (tuple, list)) \
                and params[0].name not in kwargs:
            first = params[0]
            try:
                value = first.convert(tuple(args))
            except _IntOverflow:
                raise self._overflow(first, tuple(args)) from None
            if value is not FAIL:
                args = (tuple(args),)
                nargs = 1
        if nargs > self.max_pos:
            if self.min_args != self.max_pos and self.min_args < self.max_pos:
                why = (f"{self.name}() takes from {self.min_args} to {self.max_pos} positional "
                       f"arguments but {nargs} were given")
            else:
                why = (f"{self.name}() takes {self.max_pos} positional argument"
                       f"{'' if self.max_pos == 1 else 's'} but {nargs} "
                       f"{'was' if nargs == 1 else 'were'} given")
            return self._fail(why, raise_errors)
        values: list[object] = [None] * len(params)
        used = 0
        later: tuple[int, ...] = ()
        for i, param in enumerate(params):
            if i < nargs and not param.keyword_only:
                obj = args[i]
                positional = True
                if param.name in kwargs:
                    return self._fail(
                        f"{self.name}() got multiple values for argument '{param.name}'",
                        raise_errors,
                    )
            else:
                obj = kwargs.get(param.name, _MISSING)
                positional = False
                if obj is _MISSING and param.aliases:
                    obj = _numpy_alias(param, kwargs)
                if obj is not _MISSING:
                    used += 1
            if obj is _MISSING:
                if param.required:
                    return self._fail(
                        f'{self.name}() missing 1 required positional arguments: "{param.name}"'
                        if not param.keyword_only else
                        f"{self.name}() missing required keyword argument '{param.name}'",
                        raise_errors,
                    )
                values[i] = param.default
                continue
            if obj is None and not param.required and param.default is None:
                values[i] = None
                continue
            if param.scalar and isinstance(obj, runtime.Tensor):
                # Note: a tensor for a Number. PyTorch's parser checks a tensor given for a
                # Number without reading it; its value is read for the signature that
                # matched only (a later argument may reject this one: `linspace(t, 0, 3)`
                # tries (Number start, Tensor end) first, where t is a batched sample)
                if obj.dim() == 0 and not obj.requires_grad:
                    values[i] = obj
                    later = (*later, i) if later else (i,)
                    continue
                value = FAIL
            else:
                try:
                    value = param.convert(obj)
                except _IntOverflow:
                    raise self._overflow(param, obj) from None
            if value is FAIL:
                if param.is_int_list and positional and not isinstance(obj, (tuple, list)):
                    pass
                where = f" (position {i + 1})" if positional else ""
                return self._fail(
                    f"{self.name}(): argument '{param.name}'{where} must be {param.type_name}, "
                    f"not {value_type_name(obj)}",
                    raise_errors,
                )
            values[i] = value
        if used != len(kwargs):
            for key in kwargs:
                if key not in self.by_name:
                    return self._fail(
                        f"{self.name}() got an unexpected keyword argument '{key}'", raise_errors
                    )
        for i in later:
            values[i] = values[i].item()
        return values

    def _overflow(self, param: ParsedParam, obj: object) -> Exception:
        """PyTorch's error for an int argument outside int64: ValueError for an int, TypeError
        naming the (1-based) position inside an int list."""
        if not isinstance(obj, (tuple, list)):
            return ValueError("Overflow when unpacking long long")
        pos = next(i for i, v in enumerate(obj, 1)
                   if v.__class__ is builtins.int and not _INT64_MIN <= v <= _INT64_MAX)
        return ArgumentParseError(
            f"{self.name}(): argument '{param.name}' failed to unpack the object at pos {pos} "
            'with error "Overflow when unpacking long long"'
        )

    def _fail(self, why: str, raise_errors: bool) -> str:
        if raise_errors:
            raise ArgumentParseError(why)
        return why

    # -- calling -----------------------------------------------------------------------------

    def call(self, values: list[object], self_tensor: object = None) -> object:
        """Run the op: functional entry when `out` is None, else the out entry."""
        out = values[self.out_index] if self.out_index is not None else None
        if out is None:
            entry = self.functional_entry
            outs = ()
        else:
            entry = self.out_entry
            outs = out if self.n_outs > 1 else (out,)
            if self.requires_grad_index is not None:
                _check_out_options(self, values, out)
            if self.n_outs > 1 and len(outs) != self.n_outs:
                raise ArgumentParseError(
                    f"{self.name}(): argument 'out' must be tuple of {self.n_outs} Tensors, "
                    f"not tuple of {len(outs)}"
                )
        if entry is None:
            raise RuntimeError(f"{self.name}(): operator is not registered")
        values.append(self_tensor)
        if outs:
            values.extend(outs)
        call_args = (self.functional_get if out is None else self.out_get)(values)
        result = entry.call(*call_args)
        wrap = self.functional_tuple if out is None else self.out_tuple
        if wrap is not None:
            result = wrap(*result)
        if self.requires_grad_index is not None and values[self.requires_grad_index]:
            runtime.set_requires_grad(result)
        return result


def _numpy_alias(param: ParsedParam, kwargs: dict[str, object]) -> object:
    """The value given under one of `param`'s NumPy spellings, else _MISSING."""
    for alias in param.aliases:
        obj = kwargs.get(alias, _MISSING)
        if obj is not _MISSING:
            return obj
    return _MISSING


def _check_out_options(parsed: ParsedSignature, values: list, out: object) -> None:
    """A factory given `out=` and `dtype=`/`layout=`/`device=`: they must describe `out`
    (PyTorch's check_out_type_matches, with its messages). A schema default (`randint`'s
    `dtype=long`) counts as not given."""
    def given(name: str) -> object:
        index = parsed.by_name.get(name)
        if index is None or values[index] is parsed.params[index].default:
            return None
        return values[index]

    dtype, layout, device = given("dtype"), given("layout"), given("device")
    if dtype is not None and dtype is not out.dtype:
        raise RuntimeError(
            f"dtype {dtype.scalar_name} does not match dtype of out parameter "
            f"({out.dtype.scalar_name})"
        )
    if layout is not None and layout is not out.layout:
        raise RuntimeError(
            f"layout {layout} does not match layout of out parameter ({out.layout})"
        )
    if device is not None and device.type != out.device.type:
        raise RuntimeError(
            f"device type {device.type} does not match device type of out parameter "
            f"({out.device.type})"
        )


def format_invalid(name: str, signatures: Sequence[ParsedSignature], args: Sequence[object],
                   kwargs: dict[str, object]) -> str:
    """PyTorch's "received an invalid combination of arguments" message."""
    got = [value_type_name(a) for a in args]
    got += [f"{k}={value_type_name(v)}" for k, v in kwargs.items()]
    header = f"{name}() received an invalid combination of arguments - got ({', '.join(got)}), "
    if len(signatures) == 1:
        return header + f"but expected {signatures[0].text}"
    lines = [header + "but expected one of:"]
    for sig in signatures:
        lines.append(f" * {sig.text}")
        if not kwargs and len(args) == sig.max_pos and sig.min_args <= len(args):
            marks = []
            mismatch = False
            for param, obj in zip(sig.params, args):
                if param.convert(obj) is FAIL:
                    marks.append(f"!{value_type_name(obj)}!")
                    mismatch = True
                else:
                    marks.append(value_type_name(obj))
            if mismatch:
                lines.append("      didn't match because some of the arguments have invalid "
                             f"types: ({', '.join(marks)})")
    return "\n".join(lines) + "\n"


def bind(name: str, signatures: Sequence[ParsedSignature], args: Sequence[object],
         kwargs: dict[str, object]) -> tuple[ParsedSignature, list[object], list[str]]:
    """The first signature that accepts the call, its values, and why earlier ones did not."""
    rejected: list[str] = []
    for sig in signatures:
        result = sig.match(args, kwargs)
        if not isinstance(result, str):
            return sig, result, rejected
        rejected.append(result)
    raise_no_match(name, signatures, args, kwargs)
    raise AssertionError("unreachable")


def raise_no_match(name: str, signatures: Sequence[ParsedSignature], args: Sequence[object],
                   kwargs: dict[str, object]) -> None:
    """Raise PyTorch's TypeError: the specific reason when one signature is plausible."""
    nargs = len(args) + len(kwargs)
    plausible = [s for s in signatures if s.min_args <= nargs <= s.max_args]
    if len(signatures) == 1:
        signatures[0].match(args, kwargs, raise_errors=True)
    elif len(plausible) == 1:
        plausible[0].match(args, kwargs, raise_errors=True)
    raise ArgumentParseError(format_invalid(name, signatures, args, kwargs))
