"""Compiled (Numba) loops for the hot samplers: raw mt19937 words, float32 uniforms, the
float32 normal fill, integers from 32-bit draws and randperm's shuffle.

Note: compiled random loops.
    NumPy reaches PyTorch's float32 `uniform_` and `normal_` in many passes (raw words,
    mask, convert, scale; then some sixty float32 passes for Box-Muller with the Cephes
    polynomials), several times PyTorch's cost on a million elements. These loops run the
    same Mersenne Twister on a copy of the generator's 624 words (read from and written back
    to NumPy's bit generator around the call, so both paths draw the same words) and repeat
    the NumPy path's float32 arithmetic operation for operation, in loops LLVM vectorises:
    Numba keeps IEEE semantics without `fastmath`, and a fused multiply-add is LLVM's `fma`
    (one rounding: the NumPy path's exact float64 sum rounded to float32).
    `tests/test_random_streams.py` runs both paths against
    PyTorch. They run when pyaten's compiled loops are on (pyaten/native/compiled.py): the
    normal fill at every size, the uniforms, integers and shuffles from
    `compiled.MIN_ELEMENTS` elements.
"""

from __future__ import annotations

from types import SimpleNamespace

from pyaten.native import compiled

__all__ = ["loops"]

_STATE: dict[str, object] = {"loops": None, "decided": False}


def loops(elements: int, any_size: bool = False) -> SimpleNamespace | None:
    """The compiled loops, or None when the NumPy path should run this call. `any_size`:
    also below `compiled.MIN_ELEMENTS` (the normal fill, whose NumPy path makes some hundred
    calls whatever the size)."""
    wanted = compiled.available() if any_size else compiled.loops(elements)
    if wanted is None:
        return None
    if not _STATE["decided"]:
        _STATE["decided"] = True
        _STATE["loops"] = _compile()
    return _STATE["loops"]  # type: ignore[return-value]


def _compile() -> SimpleNamespace | None:
    try:
        from pyaten.native.kernels import _random_numba as loops_module
    except ImportError:  # no Numba
        return None
    return SimpleNamespace(words=loops_module.words, uniforms=loops_module.uniforms,
                           normal_fill=loops_module.normal_fill,
                           integers32=loops_module.integers32,
                           permutation32=loops_module.permutation32)
