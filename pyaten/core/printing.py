"""Printing tensors the way PyTorch prints them.

Note: the formatter. One formatter is chosen per tensor from the (summarised) values:
integers print as they are; floats print in "int mode" (`1.`) when every finite non-zero
value is whole, in scientific notation when the finite non-zero magnitudes span more than
1000x, exceed 1e8 or fall below 1e-4 (or as `sci_mode` forces), else with `precision` decimals.
Every element is right-aligned to the widest one. Complex tensors use one formatter for the
real parts and one for the imaginary parts.

Note: printing reads only what it shows. A tensor of more than `threshold` elements is
summarised first: one fancy index (`np.ix_` of the `edgeitems` first and last positions of
every long dim) reads the elements that will be printed, and the formatter, the dtype
conversion and the text are made from that small array, with the original sizes deciding
where `...` goes. So an expanded view (`zeros(1).expand(2**20, 2**20)`, zero strides, 2**40
elements) prints as fast as PyTorch's, without materialising the view.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pyaten.core import dtypes as dt

__all__ = ["set_printoptions", "get_printoptions", "tensor_repr", "printoptions"]


@dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80),
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set printing options (same names and profiles as torch.set_printoptions)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): unknown profile {profile!r}")
        for key, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, key, value)
    given = dict(precision=precision, threshold=threshold, edgeitems=edgeitems, linewidth=linewidth)
    for key, value in given.items():
        if value is not None:
            setattr(PRINT_OPTS, key, value)
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current printing options as a dict."""
    return dict(PRINT_OPTS.__dict__)


class printoptions:  # noqa: N801 - a context manager named like torch's
    """`with printoptions(precision=2): ...` restores the previous options on exit."""

    def __init__(self, **kwargs: object) -> None:
        self._kwargs = kwargs
        self._saved: dict | None = None

    def __enter__(self) -> None:
        self._saved = get_printoptions()
        set_printoptions(**self._kwargs)

    def __exit__(self, *exc: object) -> None:
        assert self._saved is not None
        set_printoptions(**self._saved)


class _Formatter:
    def __init__(self, values: np.ndarray, floating: bool) -> None:
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        p = PRINT_OPTS.precision
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        magnitudes = np.abs(finite.astype(np.float64))
        lo = float(magnitudes.min())
        hi = float(magnitudes.max())
        items = finite.tolist()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        if self.sci_mode:
            widths = (len(f"{v:.{p}e}") for v in items)
        elif self.int_mode:
            widths = (len(f"{v:.0f}") + 1 for v in items)
        else:
            widths = (len(f"{v:.{p}f}") for v in items)
        self.max_width = max(self.max_width, max(widths))

    def width(self) -> int:
        return self.max_width

    def format(self, value: object) -> str:
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                text = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{p}f}"
        else:
            text = f"{value}"
        return " " * (self.max_width - len(text)) + text


def _summarized(values: np.ndarray) -> np.ndarray:
    # Keeps `edgeitems` from each end of every long dim (what gets printed), reading only
    # those elements (Note: printing reads only what it shows).
    e = PRINT_OPTS.edgeitems
    if values.ndim == 0:
        return values
    if values.ndim > 1 and not e:
        return values[(slice(0, 0),) * values.ndim]
    index = [
        np.r_[0:e, n - e:n] if n > 2 * e and e else np.arange(n) for n in values.shape
    ]
    return values[np.ix_(*index)]


def _element(value: object, f1: _Formatter, f2: _Formatter | None) -> str:
    if f2 is None:
        return f1.format(value)
    real = f1.format(value.real)
    imag = (f2.format(value.imag) + "j").lstrip()
    if imag[0] in "+-":
        return real + imag
    return real + "+" + imag


def _vector(values: np.ndarray, sizes: tuple, indent: int, summarize: bool, f1: _Formatter,
            f2: _Formatter | None) -> str:
    element_length = f1.width() + 2
    if f2 is not None:
        element_length += f2.width() + 1
    per_line = max(1, int(math.floor((PRINT_OPTS.linewidth - indent) / element_length)))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and sizes[0] > 2 * e:
        data = [_element(v, f1, f2) for v in values[:e].tolist()]
        data.append(" ...")
        data += [_element(v, f1, f2) for v in values[-e:].tolist()]
    else:
        data = [_element(v, f1, f2) for v in values.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values: np.ndarray, sizes: tuple, indent: int, summarize: bool, f1: _Formatter,
            f2: _Formatter | None) -> str:
    # `values` is the tensor's array or its summary; `sizes` are the tensor's own sizes, which
    # say where `...` goes (a summary holds the first and last `edgeitems` of each long dim).
    ndim = values.ndim
    if ndim == 0:
        return _element(values.item(), f1, f2)
    if ndim == 1:
        return _vector(values, sizes, indent, summarize, f1, f2)
    e = PRINT_OPTS.edgeitems
    n = values.shape[0]
    inner = sizes[1:]
    if summarize and sizes[0] > 2 * e:
        rows = [_nested(values[i], inner, indent + 1, summarize, f1, f2) for i in range(e)]
        rows.append("...")
        rows += [_nested(values[i], inner, indent + 1, summarize, f1, f2)
                 for i in range(n - e, n)]
    else:
        rows = [_nested(values[i], inner, indent + 1, summarize, f1, f2) for i in range(n)]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def tensor_body(values: np.ndarray, d: dt.dtype, indent: int) -> str:
    """The bracketed element text for a NumPy array holding a tensor's values."""
    if values.size == 0:
        return "[]"
    summarize = values.size > PRINT_OPTS.threshold
    sizes = values.shape
    if summarize:
        values = _summarized(values)  # Note: printing reads only what it shows
    if d is dt.float16 or d is dt.bfloat16:
        values = values.astype(np.float32)
    elif d is dt.complex32:
        values = dt.compute_array(values)  # float16 parts, exact in complex64
    if d.is_complex:
        f1 = _Formatter(values.real, True)
        f2 = _Formatter(values.imag, True)
        return _nested(values, sizes, indent, summarize, f1, f2)
    f1 = _Formatter(values, d.is_floating_point)
    return _nested(values, sizes, indent, summarize, f1, None)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _grad_fn_name(grad_fn: object) -> str:
    name = getattr(grad_fn, "name", None)
    if callable(name):
        return str(name()).rsplit("::", 1)[-1]
    return type(grad_fn).__name__


def tensor_repr(t: object) -> str:
    """`repr(t)` as PyTorch writes it (`tensor([1., 2.], requires_grad=True)`)."""
    cls = type(t)
    prefix = "tensor(" if cls.__name__ == "Tensor" else f"{cls.__name__}("
    indent = len(prefix)
    suffixes: list[str] = []
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    default = dt.get_default_dtype()
    d = t._dtype
    has_default_dtype = d in (default, dt.default_complex_dtype(), dt.int64, dt.bool)
    shape_text = str(tuple(t._sizes))
    if t._storage.data is None:
        suffixes.append("size=" + shape_text)
        if d is not default:
            suffixes.append(f"dtype={d}")
        body = "..."
    elif t.numel() == 0:
        if len(t._sizes) != 1:
            suffixes.append("size=" + shape_text)
        if d is not default:
            suffixes.append(f"dtype={d}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + shape_text)
        if not has_default_dtype:
            suffixes.append(f"dtype={d}")
        body = tensor_body(t._host_values(), d, indent)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{_grad_fn_name(t.grad_fn)}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
