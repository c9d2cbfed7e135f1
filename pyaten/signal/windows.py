"""`torch.signal.windows`: tapering windows of length `M`, as SciPy defines them.

Each is built from pyaten's factories and pointwise operators (so `requires_grad=True` windows
carry gradients), in float32 or float64. `sym=True` gives the symmetric window (filter design);
`sym=False` the periodic one (spectral analysis), which is the symmetric window of length
`M + 1` without its last point. See docs/signal.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pyaten

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]


def _checked_dtype(name: str, M: int, dtype: Any, layout: Any) -> Any:  # noqa: N803
    dtype = pyaten.get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not pyaten.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (pyaten.float32, pyaten.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _trivial(M: int, dtype: Any, device: Any, requires_grad: bool) -> Any:  # noqa: N803
    """The windows of length 0 (empty) and 1 (a single 1); None for longer ones."""
    if M == 0:
        return pyaten.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    if M == 1:
        return pyaten.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)
    return None


def _points(first: float, step: float, M: int, dtype: Any, device: Any,  # noqa: N803
            requires_grad: bool) -> Any:
    """`first, first + step, ...`: M evenly spaced points (through linspace, as PyTorch)."""
    return pyaten.linspace(first, first + (M - 1) * step, M, dtype=dtype, device=device,
                           requires_grad=requires_grad)


def _span(M: int, sym: bool) -> int:  # noqa: N803
    """The symmetric window's length less one: M - 1, or M for a periodic window."""
    return M if not sym and M > 1 else M - 1


def exponential(M: int, *, center: float | None = None, tau: float = 1.0,  # noqa: N803
                sym: bool = True, dtype: Any = None, layout: Any = pyaten.strided,
                device: Any = None, requires_grad: bool = False) -> Any:
    """`exp(-|n - center| / tau)`."""
    dtype = _checked_dtype("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    center = _span(M, sym) / 2.0 if center is None else center
    k = _points(-center / tau, 1 / tau, M, dtype, device, requires_grad)
    return pyaten.exp(-pyaten.abs(k))


def cosine(M: int, *, sym: bool = True, dtype: Any = None,  # noqa: N803
           layout: Any = pyaten.strided, device: Any = None, requires_grad: bool = False) -> Any:
    """`sin(pi (n + 1/2) / M)` (a half period of a sine)."""
    dtype = _checked_dtype("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return pyaten.sin(_points(0.5 * step, step, M, dtype, device, requires_grad))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None,  # noqa: N803
             layout: Any = pyaten.strided, device: Any = None,
             requires_grad: bool = False) -> Any:
    """`exp(-(n - center)^2 / (2 std^2))`."""
    dtype = _checked_dtype("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    scale = 1 / (std * math.sqrt(2))
    k = _points(-_span(M, sym) / 2.0 * scale, scale, M, dtype, device, requires_grad)
    return pyaten.exp(-(k**2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None,  # noqa: N803
           layout: Any = pyaten.strided, device: Any = None,
           requires_grad: bool = False) -> Any:
    """`I0(beta sqrt(1 - (2n / span - 1)^2)) / I0(beta)`."""
    dtype = _checked_dtype("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    b = pyaten.tensor(beta, dtype=dtype, device=device)
    step = 2.0 * b / (M if not sym else M - 1)
    last = pyaten.minimum(b, -b + (M - 1) * step)  # rounding must not pass beta
    k = pyaten.linspace(-b, last, M, dtype=dtype, device=device, requires_grad=requires_grad)
    return pyaten.i0(pyaten.sqrt(b * b - pyaten.pow(k, 2))) / pyaten.i0(b)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype: Any = None,  # noqa: N803
                   layout: Any = pyaten.strided, device: Any = None,
                   requires_grad: bool = False) -> Any:
    """`sum_i (-1)^i a_i cos(2 pi i n / span)`."""
    dtype = _checked_dtype("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M if not sym else M - 1)
    k = _points(0, step, M, dtype, device, requires_grad)
    signed = pyaten.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device,
                           requires_grad=requires_grad)
    orders = pyaten.arange(signed.shape[0], dtype=dtype, device=device,
                           requires_grad=requires_grad)
    return (signed.unsqueeze(-1) * pyaten.cos(orders.unsqueeze(-1) * k)).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True,  # noqa: N803
                    dtype: Any = None, layout: Any = pyaten.strided, device: Any = None,
                    requires_grad: bool = False) -> Any:
    """`alpha - (1 - alpha) cos(2 pi n / span)`."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: Any = None,  # noqa: N803
            layout: Any = pyaten.strided, device: Any = None, requires_grad: bool = False) -> Any:
    """`general_hamming` with alpha 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None,  # noqa: N803
         layout: Any = pyaten.strided, device: Any = None, requires_grad: bool = False) -> Any:
    """`general_hamming` with alpha 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None,  # noqa: N803
             layout: Any = pyaten.strided, device: Any = None,
             requires_grad: bool = False) -> Any:
    """`general_cosine` with a = (0.42, 0.5, 0.08)."""
    dtype = _checked_dtype("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None,  # noqa: N803
            layout: Any = pyaten.strided, device: Any = None,
            requires_grad: bool = False) -> Any:
    """Nuttall's minimum 4-term Blackman-Harris window."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None,  # noqa: N803
             layout: Any = pyaten.strided, device: Any = None,
             requires_grad: bool = False) -> Any:
    """The triangle `1 - |2n / span - 1|`."""
    dtype = _checked_dtype("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    k = _points(-1, 2 / (M if not sym else M - 1), M, dtype, device, requires_grad)
    return 1 - pyaten.abs(k)
