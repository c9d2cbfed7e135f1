"""Optional compiled loops (Numba) for kernels that NumPy cannot do in one pass.

Note: compiled loops
    Gathering and scattering along a dim take several NumPy passes (bounds, flat positions,
    `take` or `ufunc.at`), and `ufunc.at` is slow; a compiled loop does each in one pass. The
    NumPy path stays the reference: the compiled one runs only when Numba is installed (the
    `fast` extra), `PYATEN_NO_NUMBA` is not set, and the call moves at least `MIN_ELEMENTS`
    elements (a small call is cheaper in NumPy than Numba's argument unboxing).
    `tests/test_compiled.py` runs the kernels through both paths and compares them.

The loops see every tensor as a 3-d view (the dims before `dim`, `dim`, the dims after), so
they apply when the index spans the other tensors in every other dim (the common case); the
NumPy path takes the rest. Every index is checked before anything is written, so a bad index
leaves every tensor unchanged, as on the NumPy path.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np

__all__ = ["MIN_ELEMENTS", "loops", "may_run", "set_enabled", "same_size_uint"]

MIN_ELEMENTS = 4096

_STATE: dict[str, object] = {"loops": None, "decided": False, "enabled": None}


def set_enabled(enabled: bool | None) -> None:
    """Force the compiled path on (True) or off (False); None: decide from the environment."""
    _STATE["enabled"] = enabled


def may_run(elements: int) -> bool:
    """Whether a call moving `elements` may take the compiled loops (cheap: no import, no
    compile): a small call runs on NumPy unless the compiled path is forced on."""
    forced = _STATE["enabled"]
    return forced is not False and (elements >= MIN_ELEMENTS or forced is True)


def loops(elements: int) -> SimpleNamespace | None:
    """The compiled loops, or None when the NumPy path should run this call."""
    if _STATE["enabled"] is None and elements < MIN_ELEMENTS:
        return None
    return available()


def available() -> SimpleNamespace | None:
    """The compiled loops whatever the call's size (for the loops that beat NumPy on small
    arrays, where NumPy's per-call cost dominates), or None without Numba."""
    forced = _STATE["enabled"]
    if forced is False:
        return None
    if not _STATE["decided"]:
        _STATE["decided"] = True
        if forced or not os.environ.get("PYATEN_NO_NUMBA"):
            _STATE["loops"] = _compile()
    return _STATE["loops"]  # type: ignore[return-value]


_UINT_BY_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def same_size_uint(arr: np.ndarray) -> np.ndarray | None:
    """`arr`'s bytes as unsigned integers of its item size (a copy needs no arithmetic), or
    None for 16-byte items."""
    kind = _UINT_BY_SIZE.get(arr.dtype.itemsize)
    return None if kind is None else arr.view(kind)


def _compile() -> SimpleNamespace | None:
    try:
        import numba
    except ImportError:
        return None
    jit = numba.njit(cache=True, nogil=True)

    @jit
    def check(index, size):
        """-1, or the flat position of the first index outside [0, size)."""
        flat = index.reshape(-1)
        for i in range(flat.size):
            j = flat[i]
            if j < 0 or j >= size:
                return i
        return -1

    @jit
    def gather_last(src, index, out):
        """out[a, k] = src[a, index[a, k]]: `dim` is the last dim (2-d views)."""
        for a in range(index.shape[0]):
            row = src[a]
            for k in range(index.shape[1]):
                out[a, k] = row[index[a, k]]

    @jit
    def gather_inner(src, index, out):
        """out[a, k, b] = src[a, index[a, k, b], b] (3-d views: before, along, after)."""
        for a in range(index.shape[0]):
            for k in range(index.shape[1]):
                for b in range(index.shape[2]):
                    out[a, k, b] = src[a, index[a, k, b], b]

    @jit
    def scatter_last(out, index, src, mode):
        """out[a, index[a, k]] (=, +=, *=) src[a, k] for `mode` 0, 1, 2; a (1, 1) source is
        one value for every position."""
        one = src.shape[0] == 1 and src.shape[1] == 1
        for a in range(index.shape[0]):
            row = out[a]
            for k in range(index.shape[1]):
                v = src[0, 0] if one else src[a, k]
                j = index[a, k]
                if mode == 0:
                    row[j] = v
                elif mode == 1:
                    row[j] += v
                else:
                    row[j] *= v

    @jit
    def scatter_inner(out, index, src, mode):
        """As scatter_last over 3-d views (before, along, after `dim`)."""
        one = src.shape[0] == 1 and src.shape[1] == 1 and src.shape[2] == 1
        for a in range(index.shape[0]):
            for k in range(index.shape[1]):
                for b in range(index.shape[2]):
                    v = src[0, 0, 0] if one else src[a, k, b]
                    j = index[a, k, b]
                    if mode == 0:
                        out[a, j, b] = v
                    elif mode == 1:
                        out[a, j, b] += v
                    else:
                        out[a, j, b] *= v

    @jit
    def index_add(work, positions, values):
        """work[a, positions[i], b] += values[a, i, b] (3-d views: before, along, after)."""
        for a in range(work.shape[0]):
            for i in range(positions.size):
                p = positions[i]
                for b in range(work.shape[2]):
                    work[a, p, b] += values[a, i, b]

    norm_jit = numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})

    @norm_jit
    def layer_norm(x, weight, bias, eps, out, mean, rstd):
        """Rows of `x` (m, n) normalised into `out`, times `weight` plus `bias` (empty arrays
        for None); each row's mean and 1/std into `mean`, `rstd`. Sums in float64."""
        m, n = x.shape
        has_w, has_b = weight.size > 0, bias.size > 0
        for i in range(m):
            row = x[i]
            total = 0.0
            for j in range(n):
                total += row[j]
            mu = total / n
            spread = 0.0
            for j in range(n):
                d = row[j] - mu
                spread += d * d
            r = 1.0 / np.sqrt(spread / n + eps)
            mean[i] = mu
            rstd[i] = r
            o = out[i]
            for j in range(n):
                y = (row[j] - mu) * r
                if has_w:
                    y *= weight[j]
                if has_b:
                    y += bias[j]
                o[j] = y

    @norm_jit
    def layer_norm_backward(dy, x, mean, rstd, weight, dx, dw, db):
        """layer_norm's gradients: `dx` (m, n) when it has rows, `dw` and `db` (n,) summed
        over rows when non-empty (float64 accumulators); `weight` empty for None."""
        m, n = x.shape
        has_w = weight.size > 0
        want_x, want_w, want_b = dx.shape[0] > 0, dw.size > 0, db.size > 0
        for i in range(m):
            mu, r = mean[i], rstd[i]
            row, grow = x[i], dy[i]
            sum_g = 0.0
            sum_gx = 0.0
            for j in range(n):
                xhat = (row[j] - mu) * r
                g = grow[j] * weight[j] if has_w else grow[j]
                sum_g += g
                sum_gx += g * xhat
                if want_w:
                    dw[j] += grow[j] * xhat
                if want_b:
                    db[j] += grow[j]
            if want_x:
                a, b = sum_g / n, sum_gx / n
                target = dx[i]
                for j in range(n):
                    xhat = (row[j] - mu) * r
                    g = grow[j] * weight[j] if has_w else grow[j]
                    target[j] = r * (g - a - xhat * b)

    def gather(src, index, out):
        """3-d views; -1, or the flat position of the first bad index (nothing written)."""
        bad = check(index, src.shape[1])
        if bad < 0:
            if index.shape[2] == 1:
                gather_last(src[:, :, 0], index[:, :, 0], out[:, :, 0])
            else:
                gather_inner(src, index, out)
        return bad

    def scatter(out, index, src, mode):
        """3-d views, indices already checked."""
        if index.shape[2] == 1:
            scatter_last(out[:, :, 0], index[:, :, 0], src[:, :, 0], mode)
        else:
            scatter_inner(out, index, src, mode)

    @numba.njit(cache=True, nogil=True, error_model="numpy")
    def softmax_rows(x, out, log):
        """softmax (or log_softmax) of each row of x (m, n) into out: the row's max
        subtracted (NaN propagates), exponentials summed in float64."""
        m, n = x.shape
        for i in range(m):
            top = x[i, 0]
            for j in range(1, n):
                v = x[i, j]
                if v > top or v != v:
                    top = v
            total = 0.0
            for j in range(n):
                e = np.exp(x[i, j] - top)
                total += e
                if not log:
                    out[i, j] = e
            if log:
                shift = top + np.log(total)
                for j in range(n):
                    out[i, j] = x[i, j] - shift
            else:
                for j in range(n):
                    out[i, j] = out[i, j] / total

    return SimpleNamespace(check=check, gather=gather, scatter=scatter, index_add=index_add,
                           layer_norm=layer_norm, layer_norm_backward=layer_norm_backward,
                           softmax_rows=softmax_rows)
