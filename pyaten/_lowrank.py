"""`svd_lowrank` and `pca_lowrank` (torch's `_lowrank.py`): randomized low-rank SVD and PCA
after Halko, Martinsson and Tropp (2009), Algorithms 4.4 and 5.1, for dense tensors.

The random test matrix is drawn with `pyaten.randn` from the global generator, whose stream is
PyTorch's: under the same seed, the factors equal torch's up to rounding.
"""

from __future__ import annotations

from typing import Any

import pyaten


def _floating(dtype: Any) -> Any:
    return dtype if dtype in (pyaten.float16, pyaten.float32, pyaten.float64) else pyaten.float32


def get_approximate_basis(A: Any, q: int, niter: int | None = 2, M: Any = None) -> Any:  # noqa: N803
    """An orthonormal basis (`q` columns) approximately spanning the range of `A - M`: a
    random projection, refined by `niter` subspace iterations."""
    niter = 2 if niter is None else niter
    dtype = A.dtype if A.is_complex() else _floating(A.dtype)

    def minus_m(x: Any, basis: Any, adjoint: bool = False) -> Any:
        if M is None:
            return x
        return x - (M.mH if adjoint else M).matmul(basis)

    probe = pyaten.randn(A.shape[-1], q, dtype=dtype, device=A.device)
    Q = pyaten.linalg.qr(minus_m(A.matmul(probe), probe)).Q  # noqa: N806
    for _ in range(niter):
        Q = pyaten.linalg.qr(minus_m(A.mH.matmul(Q), Q, adjoint=True)).Q  # noqa: N806
        Q = pyaten.linalg.qr(minus_m(A.matmul(Q), Q)).Q  # noqa: N806
    return Q


def _svd_lowrank(A: Any, q: int | None = 6, niter: int | None = 2, M: Any = None) -> tuple:  # noqa: N803
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())  # noqa: N806
    wide = m < n
    if wide:  # work on the tall adjoint, swap the factors back at the end
        A = A.mH  # noqa: N806
        M = None if M is None else M.mH  # noqa: N806
    Q = get_approximate_basis(A, q, niter=niter, M=M)  # noqa: N806
    B = Q.mH.matmul(A)  # noqa: N806
    if M is not None:
        B = B - Q.mH.matmul(M)  # noqa: N806
    U, S, Vh = pyaten.linalg.svd(B, full_matrices=False)  # noqa: N806
    V, U = Vh.mH, Q.matmul(U)  # noqa: N806
    return (V, S, U) if wide else (U, S, V)


def svd_lowrank(A: Any, q: int | None = 6, niter: int | None = 2, M: Any = None) -> tuple:  # noqa: N803
    """`(U, S, V)` with `A - M ~= U diag(S) V^H`, of rank `q` (default 6)."""
    return _svd_lowrank(A, q=q, niter=niter, M=M)


def pca_lowrank(A: Any, q: int | None = None, center: bool = True, niter: int = 2) -> tuple:  # noqa: N803
    """Principal components of `A`'s rows: `svd_lowrank` of `A` less its column means
    (`center=True`), `q` defaulting to `min(6, m, n)`."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(
            f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter=niter, M=None)
