"""Derivative helpers of the linear-algebra factorizations and of scatter_reduce.

Each helper is written over pyaten's differentiable operators, so the gradient it returns
records its own graph under `create_graph=True` (gradients of gradients). The math follows
PyTorch's `FunctionsManual` (the same gradients, including the gauge conventions of the
SVD and eigen decompositions); the notation: `mH` is the conjugate transpose, `g<X>` the
gradient of output X (None when no gradient reached it).
"""

from __future__ import annotations

from typing import Any

import pyaten
from pyaten.autograd.formulas_reduce import subclass_like
from pyaten.core.tensor import Tensor

__all__ = [
    "mm_mat1_backward",
    "mm_mat2_backward",
    "linalg_det_backward",
    "linalg_det_jvp",
    "slogdet_backward",
    "slogdet_jvp",
    "linalg_solve_backward",
    "linalg_solve_jvp",
    "cholesky_backward",
    "cholesky_jvp",
    "linalg_qr_backward",
    "svd_backward",
    "eigh_backward",
    "eig_backward",
    "lu_backward",
    "lu_factor_ex_backward",
    "lu_unpack_backward",
    "lu_solve_backward_LU",
    "matrix_exp_differential",
    "pinv_backward",
    "pinv_jvp",
    "lstsq_backward",
    "cholesky_solve_backward",
    "cholesky_inverse_backward",
    "euclidean_dist_backward",
    "householder_product_backward",
    "scatter_reduce_backward",
    "linalg_qr_jvp",
    "svd_jvp",
    "eigh_jvp",
    "eig_jvp",
    "lu_jvp",
    "lu_factor_ex_jvp",
    "lu_solve_jvp",
    "lstsq_jvp",
    "cholesky_solve_jvp",
    "cholesky_inverse_jvp",
    "scatter_reduce_jvp",
    "householder_product_jvp",
]


def _column_major(sizes: Any, strides: Any) -> bool:
    return strides[0] == 1 and strides[1] == sizes[0]


def _scaled(t: Tensor, alpha: Any) -> Tensor:
    """`t * conj(alpha)`, skipping the multiplication by one."""
    if isinstance(alpha, complex):
        alpha = alpha.conjugate()
    elif isinstance(alpha, Tensor):
        alpha = alpha.conj()
    if isinstance(alpha, bool):
        return t if alpha else t * 0
    if isinstance(alpha, (int, float)) and alpha == 1:
        return t
    return t * alpha


def mm_mat1_backward(grad: Tensor, mat2: Tensor, mat1_sizes: Any, mat1_strides: Any,
                     alpha: Any = 1) -> Tensor:
    """`grad @ mat2^H` (times conj(alpha)), computed in mat1's layout as PyTorch's
    mm_mat1_backward does: a column-major mat1 gets a column-major gradient."""
    other = mat2.conj() if mat2.is_complex() else mat2
    if _column_major(mat1_sizes, mat1_strides):
        return _scaled(other.mm(grad.t()).t(), alpha)
    return _scaled(grad.mm(other.t()), alpha)


def mm_mat2_backward(grad: Tensor, mat1: Tensor, mat2_sizes: Any, mat2_strides: Any,
                     alpha: Any = 1) -> Tensor:
    """`mat1^H @ grad` (times conj(alpha)) in mat2's layout (PyTorch's mm_mat2_backward): the
    weight of a Linear is used transposed, and its gradient then arrives in the weight's own
    layout, ready to become `.grad` without a copy."""
    other = mat1.conj() if mat1.is_complex() else mat1
    if _column_major(mat2_sizes, mat2_strides):
        return _scaled(grad.t().mm(other).t(), alpha)
    return _scaled(other.t().mm(grad), alpha)


def _eye_like(a: Tensor, n: int | None = None) -> Tensor:
    n = a.shape[-1] if n is None else n
    return pyaten.eye(n, dtype=a.dtype)


def _zeros_if_none(g: Tensor | None, like: Tensor) -> Tensor:
    return pyaten.zeros_like(like) if g is None else g


def _inv_h(A: Tensor) -> Tensor:  # noqa: N803
    """A^{-H}, differentiable in A."""
    return pyaten.linalg.solve(A.mH, _eye_like(A).expand(A.shape))


# --- det, slogdet, solve -------------------------------------------------------------------------

def _prod_of_others(s: Tensor) -> Tensor:
    """prod_{j != i} s_j for each i, without dividing (zeros allowed)."""
    ones = pyaten.ones_like(s[..., :1])
    left = pyaten.cat([ones, s[..., :-1]], -1).cumprod(-1)
    flipped = s.flip(-1)
    right = pyaten.cat([ones, flipped[..., :-1]], -1).cumprod(-1).flip(-1)
    return left * right


def linalg_det_backward(grad: Tensor | None, det: Tensor, A: Tensor) -> Tensor | None:  # noqa: N803
    """d det(A) = tr(adj(A) dA): gA = grad adj(A)^H, which is (grad det^*) A^{-H} for an
    invertible A and, through A = U diag(S) Vh, grad (det U det Vh)^* U diag(prod_{j!=i}
    S_j) Vh for a singular one, and for every one on tensors whose values it cannot read
    (`subclass_like`: a BatchedTensor under vmap(grad))."""
    if grad is None:
        return None
    if A.numel() and not subclass_like(grad, det, A) and not bool((det == 0).any()):
        c = (grad * det.conj()).unsqueeze(-1).unsqueeze(-1)
        return pyaten.linalg.solve(A.mH, c * _eye_like(A))
    U, S, Vh = pyaten.linalg.svd(A)  # noqa: N806
    phase = (pyaten.linalg.det(U) * pyaten.linalg.det(Vh)).conj()
    others = _prod_of_others(S).to(A.dtype)
    c = (grad * phase).unsqueeze(-1).unsqueeze(-1)
    return c * (U * others.unsqueeze(-2)).matmul(Vh)


def _trace_inv_times(A: Tensor, A_t: Tensor) -> Tensor:  # noqa: N803
    return pyaten.linalg.solve(A, A_t).diagonal(0, -2, -1).sum(-1)


def linalg_det_jvp(A_t: Tensor, det: Tensor, A: Tensor) -> Tensor:  # noqa: N803
    return det * _trace_inv_times(A, A_t)


def slogdet_backward(g_sign: Tensor | None, g_logabsdet: Tensor | None, A: Tensor,  # noqa: N803
                     sign: Tensor) -> Tensor | None:
    """gA = c A^{-H}, c = g_logabsdet + i Im(g_sign sign^*) (the sign's part only if complex)."""
    if g_sign is None and g_logabsdet is None:
        return None
    if A.dtype.is_complex:
        c = pyaten.zeros_like(sign) if g_logabsdet is None else g_logabsdet.to(sign.dtype)
        if g_sign is not None:
            c = c + 1j * (g_sign * sign.conj()).imag
    else:
        if g_logabsdet is None:
            return pyaten.zeros_like(A)
        c = g_logabsdet
    return pyaten.linalg.solve(A.mH, c.unsqueeze(-1).unsqueeze(-1) * _eye_like(A))


def slogdet_jvp(A_t: Tensor, A: Tensor, sign: Tensor) -> tuple:  # noqa: N803
    t = _trace_inv_times(A, A_t)
    if A.dtype.is_complex:
        return sign * (1j * t.imag), t.real
    return pyaten.zeros_like(sign), t


def _solve_vector_case(A: Tensor, B: Tensor) -> bool:  # noqa: N803
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def linalg_solve_backward(grad: Tensor | None, X: Tensor, A: Tensor, left: bool,  # noqa: N803
                          mask: Any) -> tuple:
    """AX = B: gB = A^{-H} gX, gA = -gB X^H (XA = B: gB = gX A^{-H}, gA = -X^H gB)."""
    if grad is None:
        return None, None
    vector = _solve_vector_case(A, X) and left
    gB = pyaten.linalg.solve(A.mH, grad, left=left)  # noqa: N806
    gA = None  # noqa: N806
    if mask[0]:
        if vector:
            gA = -(gB.unsqueeze(-1) * X.conj().unsqueeze(-2))  # noqa: N806
        elif left:
            gA = -gB.matmul(X.mH)  # noqa: N806
        else:
            gA = -X.mH.matmul(gB)  # noqa: N806
    return gA, (gB if mask[1] else None)


def linalg_solve_jvp(A_t: Tensor, B_t: Tensor, X: Tensor, A: Tensor, left: bool) -> Tensor:  # noqa: N803
    if _solve_vector_case(A, X) and left:
        rhs = B_t - A_t.matmul(X.unsqueeze(-1)).squeeze(-1)
    elif left:
        rhs = B_t - A_t.matmul(X)
    else:
        rhs = B_t - X.matmul(A_t)
    return pyaten.linalg.solve(A, rhs, left=left)


# --- cholesky ------------------------------------------------------------------------------------

def cholesky_backward(gL: Tensor | None, upper: bool, L: Tensor) -> Tensor | None:  # noqa: N803
    """A = L L^H: gA = L^{-H} Phi(L^H gL) L^{-1}, Phi the Hermitian completion of tril with
    its diagonal halved (PyTorch's convention)."""
    if gL is None:
        return None
    if upper:
        L = L.mH  # noqa: N806
        gL = gL.mH  # noqa: N806
    phi = L.mH.matmul(gL).tril()
    phi = 0.5 * (phi + phi.tril(-1).mH)
    gA = pyaten.linalg.solve_triangular(L.mH, phi, upper=True, left=True)  # noqa: N806
    return pyaten.linalg.solve_triangular(L, gA, upper=False, left=False)


def cholesky_jvp(A_t: Tensor, L: Tensor, upper: bool) -> Tensor:  # noqa: N803
    Lo = L.mH if upper else L  # noqa: N806
    dA = A_t.mH if upper else A_t  # noqa: N806
    X = pyaten.linalg.solve_triangular(Lo, dA, upper=False, left=True)  # noqa: N806
    X = pyaten.linalg.solve_triangular(Lo.mH, X, upper=True, left=False)  # noqa: N806
    X = X.tril() - pyaten.diag_embed(0.5 * X.diagonal(0, -2, -1))  # noqa: N806
    dL = Lo.matmul(X)  # noqa: N806
    return dL.mH if upper else dL


# --- qr ------------------------------------------------------------------------------------------

def _qr_square_backward(gQ: Tensor, gR: Tensor, Q: Tensor, R: Tensor) -> Tensor:  # noqa: N803
    """m >= n: gA = (gQ + Q copyltu(M)) R^{-H}, M = triu(gR R^H - Q^H gQ), copyltu(M) =
    M + M^H with the real part of the diagonal once."""
    M = (gR.matmul(R.mH) - Q.mH.matmul(gQ)).triu()  # noqa: N806
    sym = M + M.mH
    d = sym.diagonal(0, -2, -1)
    sym = sym - pyaten.diag_embed(0.5 * (d.real if d.dtype.is_complex else d).to(sym.dtype))
    gA = gQ + Q.matmul(sym)  # noqa: N806
    return pyaten.linalg.solve_triangular(R.mH, gA, upper=False, left=False)


def linalg_qr_backward(gQ: Tensor | None, gR: Tensor | None, Q: Tensor, R: Tensor,  # noqa: N803
                       mode: str) -> Tensor | None:
    if gQ is None and gR is None:
        return None
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
            "through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError(
            "The QR decomposition is not differentiable when mode='complete' and "
            "nrows > ncols.")
    gQ = _zeros_if_none(gQ, Q)  # noqa: N806
    gR = _zeros_if_none(gR, R)  # noqa: N806
    if m >= n:
        return _qr_square_backward(gQ, gR, Q, R)
    # A = Q [R1 R2] with R2 = Q^H A2: A2 adds A2 gR2^H to Q's gradient and Q gR2 to its own
    A2 = Q.matmul(R[..., :, m:])  # noqa: N806
    gR2 = gR[..., :, m:]  # noqa: N806
    gA1 = _qr_square_backward(gQ + A2.matmul(gR2.mH), gR[..., :, :m], Q, R[..., :, :m])  # noqa: N806
    return pyaten.cat([gA1, Q.matmul(gR2)], -1)


# --- svd, eigh, eig ------------------------------------------------------------------------------

def _skew(X: Tensor) -> Tensor:  # noqa: N803
    return X - X.mH


def _off_diagonal_inverse(E: Tensor) -> Tensor:  # noqa: N803
    """1/E off the diagonal, 0 on it."""
    n = E.shape[-1]
    eye = pyaten.eye(n, dtype=pyaten.bool)
    safe = pyaten.where(eye, pyaten.ones_like(E), E)
    return pyaten.where(eye, pyaten.zeros_like(E), 1 / safe)


def svd_backward(gU: Tensor | None, gS: Tensor | None, gVh: Tensor | None,  # noqa: N803
                 U: Tensor, S: Tensor, Vh: Tensor) -> Tensor | None:  # noqa: N803
    """Reduced SVD A = U diag(S) Vh (U: m x k, Vh: k x n).

    gA = U [J + diag(gS) + i diag(Im(diag(U^H gU)) / S)] Vh + (I - UU^H) gU S^{-1} Vh
         + U S^{-1} gVh (I - V V^H),
    J = (skew(U^H gU) S + S skew(V^H gV)) / (S_j^2 - S_i^2) off the diagonal.
    """
    if gU is None and gS is None and gVh is None:
        return None
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    if gU is None and gVh is None:
        return (U * gS.to(U.dtype).unsqueeze(-2)).matmul(Vh)
    if U.numel() == 0 and k > 0:
        raise RuntimeError(
            "linalg.svd: the derivative of the singular values alone needs the singular "
            "vectors (compute_uv=False)")
    Sc = S.to(U.dtype)  # noqa: N806
    S2 = S * S  # noqa: N806
    F = _off_diagonal_inverse(S2.unsqueeze(-2) - S2.unsqueeze(-1)).to(U.dtype)  # noqa: N806
    inner = pyaten.zeros(tuple(S.shape[:-1]) + (k, k), dtype=U.dtype)
    V = Vh.mH  # noqa: N806
    gV = None if gVh is None else gVh.mH  # noqa: N806
    if gU is not None:
        UhgU = U.mH.matmul(gU)  # noqa: N806
        inner = inner + F * _skew(UhgU) * Sc.unsqueeze(-2)
        if U.dtype.is_complex:
            im = UhgU.diagonal(0, -2, -1).imag
            inner = inner + pyaten.diag_embed(1j * im / S)
    if gV is not None:
        VhgV = V.mH.matmul(gV)  # noqa: N806
        inner = inner + Sc.unsqueeze(-1) * (F * _skew(VhgV))
    if gS is not None:
        inner = inner + pyaten.diag_embed(gS.to(U.dtype))
    gA = U.matmul(inner).matmul(Vh)  # noqa: N806
    if gU is not None and m > k:
        proj = gU - U.matmul(U.mH.matmul(gU))
        gA = gA + (proj / Sc.unsqueeze(-2)).matmul(Vh)  # noqa: N806
    if gV is not None and n > k:
        proj = gV - V.matmul(V.mH.matmul(gV))
        gA = gA + U.matmul((proj / Sc.unsqueeze(-2)).mH)  # noqa: N806
    return gA


def eigh_backward(gL: Tensor | None, gV: Tensor | None, L: Tensor, V: Tensor) -> Tensor | None:  # noqa: N803
    """A = V diag(L) V^H: gA = V (diag(gL) + (skew(V^H gV) / 2) / E) V^H, E_ij = L_j - L_i."""
    if gL is None and gV is None:
        return None
    n = L.shape[-1]
    inner = pyaten.zeros(tuple(L.shape[:-1]) + (n, n), dtype=V.dtype)
    if gV is not None:
        F = _off_diagonal_inverse(L.unsqueeze(-2) - L.unsqueeze(-1)).to(V.dtype)  # noqa: N806
        inner = inner + F * (0.5 * _skew(V.mH.matmul(gV)))
    if gL is not None:
        inner = inner + pyaten.diag_embed(gL.to(V.dtype))
    return V.matmul(inner).matmul(V.mH)


def eig_backward(gL: Tensor | None, gV: Tensor | None, L: Tensor, V: Tensor,  # noqa: N803
                 self_dtype: Any) -> Tensor | None:
    """A V = V diag(L), unit-norm columns: gA = V^{-H} (diag(gL) + (V^H gV - V^H V
    diag(Re diag(V^H gV))) / E^*) V^H, E_ij = L_j - L_i."""
    if gL is None and gV is None:
        return None
    n = L.shape[-1]
    inner = pyaten.zeros(tuple(L.shape[:-1]) + (n, n), dtype=V.dtype)
    if gV is not None:
        VhgV = V.mH.matmul(gV)  # noqa: N806
        re = VhgV.diagonal(0, -2, -1).real.to(V.dtype)
        W = VhgV - V.mH.matmul(V * re.unsqueeze(-2))  # noqa: N806
        F = _off_diagonal_inverse((L.unsqueeze(-2) - L.unsqueeze(-1)).conj())  # noqa: N806
        inner = inner + F * W
    if gL is not None:
        inner = inner + pyaten.diag_embed(gL.to(V.dtype))
    gA = pyaten.linalg.solve(V.mH, inner.matmul(V.mH))  # noqa: N806
    if not self_dtype.is_complex:
        return gA.real
    return gA


# --- lu ------------------------------------------------------------------------------------------

def lu_backward(gL: Tensor | None, gU: Tensor | None, P: Tensor, L: Tensor, U: Tensor,  # noqa: N803
                pivot: bool) -> Tensor | None:
    """A = P L U; m == n: gA = P L^{-H} (tril(L^H gL, -1) + triu(gU U^H)) U^{-H}; the wide
    and tall cases reduce to it through the extra block of U (or L)."""
    if gL is None and gU is None:
        return None
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    gL = _zeros_if_none(gL, L)  # noqa: N806
    gU = _zeros_if_none(gU, U)  # noqa: N806

    def square(LhgL: Tensor, gUUh: Tensor, L1: Tensor, U1: Tensor) -> Tensor:  # noqa: N803
        inner = LhgL.tril(-1) + gUUh.triu()
        x = pyaten.linalg.solve_triangular(L1.mH, inner, upper=True, left=True,
                                           unitriangular=True)
        return pyaten.linalg.solve_triangular(U1.mH, x, upper=False, left=False)

    if m == n:
        gB = square(L.mH.matmul(gL), gU.matmul(U.mH), L, U)  # noqa: N806
    elif m < n:
        U1, U2 = U[..., :, :k], U[..., :, k:]  # noqa: N806
        gU1, gU2 = gU[..., :, :k], gU[..., :, k:]  # noqa: N806
        LhgL = L.mH.matmul(gL) - gU2.matmul(U2.mH)  # noqa: N806
        gB1 = square(LhgL, gU1.matmul(U1.mH), L, U1)  # noqa: N806
        gB2 = pyaten.linalg.solve_triangular(L.mH, gU2, upper=True, left=True,  # noqa: N806
                                             unitriangular=True)
        gB = pyaten.cat([gB1, gB2], -1)  # noqa: N806
    else:
        L1, L2 = L[..., :k, :], L[..., k:, :]  # noqa: N806
        gL1, gL2 = gL[..., :k, :], gL[..., k:, :]  # noqa: N806
        gUUh = gU.matmul(U.mH) - L2.mH.matmul(gL2)  # noqa: N806
        gB1 = square(L1.mH.matmul(gL1), gUUh, L1, U)  # noqa: N806
        gB2 = pyaten.linalg.solve_triangular(U.mH, gL2, upper=False, left=False)  # noqa: N806
        gB = pyaten.cat([gB1, gB2], -2)  # noqa: N806
    if pivot:
        return P.matmul(gB)
    return gB


def lu_factor_ex_backward(grad: Tensor | None, LU: Tensor, pivots: Tensor,  # noqa: N803
                          pivot: bool) -> Tensor | None:
    if grad is None:
        return None
    P, L, U = pyaten.lu_unpack(LU, pivots)  # noqa: N806
    k = min(LU.shape[-2], LU.shape[-1])
    gL = grad[..., :, :k].tril(-1)  # noqa: N806
    gU = grad[..., :k, :].triu()  # noqa: N806
    return lu_backward(gL, gU, P, L, U, pivot)


def lu_unpack_backward(gL: Tensor | None, gU: Tensor | None, m: int, n: int) -> Tensor | None:  # noqa: N803
    """The packed LU's gradient: L's strictly lower part and U's upper part, zero-padded."""
    if gL is None and gU is None:
        return None
    like = gL if gL is not None else gU
    out = pyaten.zeros(tuple(like.shape[:-2]) + (m, n), dtype=like.dtype)
    k = min(m, n)
    if gL is not None and gL.numel():
        out = out + pyaten.nn.functional.pad(gL.tril(-1), (0, n - k, 0, 0))
    if gU is not None and gU.numel():
        out = out + pyaten.nn.functional.pad(gU.triu(), (0, 0, 0, m - k))
    return out


def lu_solve_backward_LU(grad: Tensor | None, LU: Tensor, pivots: Tensor, X: Tensor,  # noqa: N802, N803
                         left: bool, adjoint: bool) -> Tensor | None:
    """op(A) X = B (or X op(A) = B) with A = P L U: A's gradient from the solve's, then L's
    and U's through A = P L U, packed back into LU's triangles."""
    if grad is None:
        return None
    gB = pyaten.linalg.lu_solve(LU, pivots, grad, left=left, adjoint=not adjoint)  # noqa: N806
    if left:
        gA = -(X.matmul(gB.mH)) if adjoint else -(gB.matmul(X.mH))  # noqa: N806
    else:
        gA = -(gB.mH.matmul(X)) if adjoint else -(X.mH.matmul(gB))  # noqa: N806
    P, L, U = pyaten.lu_unpack(LU, pivots)  # noqa: N806
    PtgA = P.mT.matmul(gA)  # noqa: N806
    return PtgA.matmul(U.mH).tril(-1) + L.mH.matmul(PtgA).triu()


# --- matrix_exp, pinv, lstsq, cholesky_solve, cholesky_inverse ------------------------------------

def matrix_exp_differential(A: Tensor, E: Tensor, adjoint: bool) -> Tensor:  # noqa: N803
    """The Frechet derivative of exp at A applied to E (or its adjoint): the upper-right
    block of exp([[A, E], [0, A]])."""
    if adjoint:
        A = A.mH  # noqa: N806
    n = A.shape[-1]
    zeros = pyaten.zeros_like(A)
    top = pyaten.cat([A, E.to(A.dtype)], -1)
    bottom = pyaten.cat([zeros, A], -1)
    big = pyaten.linalg.matrix_exp(pyaten.cat([top, bottom], -2))
    return big[..., :n, n:]


def pinv_backward(grad: Tensor | None, P: Tensor, A: Tensor) -> Tensor | None:  # noqa: N803
    """P = A^+: gA = -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A)."""
    if grad is None:
        return None
    Ph = P.mH  # noqa: N806
    Gh = grad.mH  # noqa: N806
    first = -Ph.matmul(grad).matmul(Ph)
    left = (Gh - A.matmul(P.matmul(Gh))).matmul(P).matmul(Ph)
    right = Ph.matmul(P).matmul(Gh - Gh.matmul(P).matmul(A))
    return first + left + right


def pinv_jvp(A: Tensor, P: Tensor, A_t: Tensor) -> Tensor:  # noqa: N803
    Ph = P.mH  # noqa: N806
    dAh = A_t.mH  # noqa: N806
    return (-P.matmul(A_t).matmul(P) + P.matmul(Ph).matmul(dAh - dAh.matmul(A).matmul(P))
            + (dAh - P.matmul(A).matmul(dAh)).matmul(Ph).matmul(P))


def lstsq_backward(gX: Tensor | None, gR: Tensor | None, A: Tensor, B: Tensor,  # noqa: N803
                   X: Tensor, mask: Any) -> tuple:
    """X = A^+ B: gB = A^{+H} gX, gA through pinv; the residuals |A X - B|^2 add
    2 (A X - B) diag(gR) X^H to A and -2 (A X - B) diag(gR) to B."""
    vector = B.dim() == A.dim() - 1
    if vector:
        B = B.unsqueeze(-1)  # noqa: N806
        X = X.unsqueeze(-1)  # noqa: N806
        gX = None if gX is None else gX.unsqueeze(-1)  # noqa: N806
    gA = gB = None  # noqa: N806
    if gX is not None:
        pinvA = pyaten.linalg.pinv(A)  # noqa: N806
        if mask[0]:
            gA = pinv_backward(gX.matmul(B.mH), pinvA, A)  # noqa: N806
        if mask[1]:
            gB = pinvA.mH.matmul(gX)  # noqa: N806
    if gR is not None and gR.numel() and not vector:
        res = A.matmul(X) - B
        w = 2 * res * gR.unsqueeze(-2)
        if mask[0]:
            extra = w.matmul(X.mH)
            gA = extra if gA is None else gA + extra  # noqa: N806
        if mask[1]:
            gB = -w if gB is None else gB - w  # noqa: N806
    if vector and gB is not None:
        gB = gB.squeeze(-1)  # noqa: N806
    return gA, gB


def cholesky_solve_backward(grad: Tensor | None, B: Tensor, L: Tensor, X: Tensor,  # noqa: N803
                            upper: bool, mask: Any) -> tuple:
    """X = (L L^H)^{-1} B: gB = cholesky_solve(gX), gL = -(gB X^H + X gB^H) L (U (...))."""
    if grad is None:
        return None, None
    gB = pyaten.cholesky_solve(grad, L, upper)  # noqa: N806
    gL = None  # noqa: N806
    if mask[1]:
        common = gB.matmul(X.mH)
        common = common + common.mH
        gL = -L.matmul(common) if upper else -common.matmul(L)  # noqa: N806
    return (gB if mask[0] else None), gL


def cholesky_inverse_backward(grad: Tensor | None, L: Tensor, upper: bool,  # noqa: N803
                              X: Tensor) -> Tensor | None:
    """X = (L L^H)^{-1}: gL = -X (G + G^H) X L (upper: -U X (G + G^H) X)."""
    if grad is None:
        return None
    common = -X.matmul(grad + grad.mH).matmul(X)
    return L.matmul(common) if upper else common.matmul(L)


# --- cdist ---------------------------------------------------------------------------------------

def euclidean_dist_backward(grad: Tensor | None, x1: Tensor, x2: Tensor,  # noqa: N803
                            res: Tensor) -> tuple:
    """|x1_i - x2_j|: ratio = grad / res (0 where res is 0)."""
    if grad is None:
        return None, None
    safe = pyaten.where(res == 0, pyaten.ones_like(res), res)
    ratio = pyaten.where(res == 0, pyaten.zeros_like(grad), grad / safe)
    g1 = x1 * ratio.sum(-1, keepdim=True) - ratio.matmul(x2)
    g2 = x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT.matmul(x1)
    return g1, g2


# --- householder_product -------------------------------------------------------------------------

def _householder_product(A: Tensor, tau: Tensor) -> Tensor:  # noqa: N803
    """Q = H_1 ... H_k (first n columns), H_i = I - tau_i v_i v_i^H, in differentiable ops."""
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    eye = pyaten.eye(m, dtype=A.dtype)
    Q = eye.expand(tuple(A.shape[:-2]) + (m, m))  # noqa: N806
    below = pyaten.ones(m, n, dtype=pyaten.bool).tril(-1)
    diag = pyaten.eye(m, n, dtype=pyaten.bool)
    V = pyaten.where(below, A, pyaten.zeros_like(A)) + diag.to(A.dtype)  # noqa: N806
    for i in range(k):
        v = V[..., :, i]
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        Q = Q - (Q.matmul(v.unsqueeze(-1)) * t).matmul(v.conj().unsqueeze(-2))  # noqa: N806
    return Q[..., :, :n]


def householder_product_jvp(A_t: Tensor, tau_t: Tensor, A: Tensor, tau: Tensor) -> Tensor:  # noqa: N803
    """Q_i = Q_{i-1} H_i: dQ_i = dQ_{i-1} H_i + Q_{i-1} dH_i,
    dH_i = -(dtau_i v v^H + tau_i dv v^H + tau_i v dv^H)."""
    m, n = A.shape[-2], A.shape[-1]
    batch = tuple(A.shape[:-2])
    below = pyaten.ones(m, n, dtype=pyaten.bool).tril(-1)
    diag = pyaten.eye(m, n, dtype=pyaten.bool)
    zeros = pyaten.zeros_like(A)
    V = pyaten.where(below, A, zeros) + diag.to(A.dtype)  # noqa: N806
    dV = pyaten.where(below, A_t, zeros)  # noqa: N806
    Q = pyaten.eye(m, dtype=A.dtype).expand(batch + (m, m))  # noqa: N806
    dQ = pyaten.zeros(batch + (m, m), dtype=A.dtype)  # noqa: N806
    for i in range(tau.shape[-1]):
        v, dv = V[..., :, i].unsqueeze(-1), dV[..., :, i].unsqueeze(-1)
        t = tau[..., i].unsqueeze(-1).unsqueeze(-1)
        dt = tau_t[..., i].unsqueeze(-1).unsqueeze(-1)
        vh, dvh = v.conj().mT, dv.conj().mT
        dH = -(dt * v.matmul(vh) + t * dv.matmul(vh) + t * v.matmul(dvh))  # noqa: N806
        dQ = dQ - (dQ.matmul(v) * t).matmul(vh) + Q.matmul(dH)  # noqa: N806
        Q = Q - (Q.matmul(v) * t).matmul(vh)  # noqa: N806
    return dQ[..., :, :n]


def householder_product_backward(grad: Tensor | None, A: Tensor, tau: Tensor) -> tuple:  # noqa: N803
    """The vector-Jacobian product of `_householder_product` (recomputed in pyaten ops)."""
    if grad is None:
        return None, None
    create = pyaten.is_grad_enabled()
    with pyaten.enable_grad():
        a = A if (create and A.requires_grad) else A.detach().requires_grad_(True)
        t = tau if (create and tau.requires_grad) else tau.detach().requires_grad_(True)
        Q = _householder_product(a, t)  # noqa: N806
        if not Q.requires_grad:  # no reflector: Q is the identity
            return pyaten.zeros_like(A), pyaten.zeros_like(tau)
        ga, gt = pyaten.autograd.grad(Q, [a, t], grad, allow_unused=True, create_graph=create)
    return ga, gt


# --- scatter_reduce ------------------------------------------------------------------------------

def scatter_reduce_backward(grad: Tensor | None, self: Tensor, dim: int, index: Tensor,
                            src: Tensor, reduce: str, include_self: bool,
                            result: Tensor) -> tuple:
    if grad is None:
        return None, None
    if reduce == "sum":
        g_self = grad
        g_src = grad.gather(dim, index)
    elif reduce == "prod":
        masked_self = self.masked_fill(self == 0, 1)
        masked_self_result = masked_self.scatter_reduce(dim, index, src, reduce,
                                                        include_self=include_self)
        g_self = grad * masked_self_result / masked_self
        src_zero = src == 0
        zeros_at = pyaten.zeros_like(self).scatter_add(dim, index, src_zero.to(self.dtype))
        single = src_zero & (zeros_at.gather(dim, index) == 1)
        masked_src = src.masked_fill(single, 1)
        masked_src_result = self.scatter_reduce(dim, index, masked_src, reduce,
                                                include_self=include_self)
        g_src = pyaten.where(single, (grad * masked_src_result).gather(dim, index),
                             (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1))
    elif reduce == "mean":
        count = pyaten.ones_like(grad) if include_self else pyaten.zeros_like(grad)
        count = count.scatter_add(dim, index, pyaten.ones_like(src))
        count = count.masked_fill(count == 0, 1)
        g_self = grad / count
        g_src = (grad / count).gather(dim, index)
    elif reduce in ("amax", "amin"):
        value = result.gather(dim, index)
        self_is = (self == result).to(self.dtype)
        src_is = (src == value).to(self.dtype)
        share = self_is.scatter_add(dim, index, src_is)
        distributed = grad / share
        g_self = self_is * distributed
        g_src = src_is * distributed.gather(dim, index)
    else:
        raise RuntimeError(
            f"Expected 'reduce' argument to be one of 'sum', 'prod', 'mean', 'amax', 'amin' "
            f"but got {reduce}.")
    if not include_self:
        g_self = g_self.scatter(dim, index, 0)
    return g_self, g_src


# --- forward-mode formulas (jvp) -----------------------------------------------------------------

def _syminv(X: Tensor) -> Tensor:  # noqa: N803
    """The upper-triangular T with a real diagonal such that T + T^H = X + X^H."""
    S = X + X.mH  # noqa: N806
    d = S.diagonal(0, -2, -1)
    return S.triu() - pyaten.diag_embed(0.5 * d)


def linalg_qr_jvp(A_t: Tensor, Q: Tensor, R: Tensor, mode: str, which: int) -> Tensor:  # noqa: N803
    """dA = dQ R + Q dR, Q^H dQ skew: dR R^{-1} = syminv(Q^H dA R^{-1}), dQ = dA R^{-1} - Q ..."""
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                           "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are "
                           "going to differentiate through linalg.qr.")
    k = min(m, n)
    R1 = R[..., :, :k]  # noqa: N806
    dA1 = A_t[..., :, :k]  # noqa: N806
    dAR = pyaten.linalg.solve_triangular(R1, dA1, upper=True, left=False)  # noqa: N806
    T = _syminv(Q.mH.matmul(dAR))  # noqa: N806
    dQ = dAR - Q.matmul(T)  # noqa: N806
    if which == 0:
        return dQ
    dR1 = T.matmul(R1)  # noqa: N806
    if m >= n:
        return dR1
    dR2 = Q.mH.matmul(A_t[..., :, k:]) - Q.mH.matmul(dQ).matmul(R[..., :, k:])  # noqa: N806
    return pyaten.cat([dR1, dR2], -1)


def svd_jvp(A_t: Tensor, U: Tensor, S: Tensor, Vh: Tensor, full_matrices: bool,  # noqa: N803
            which: int) -> Tensor:
    """P = U^H dA V: dS = Re diag(P); U^H dU = F o (P S + S P^H) (+ i Im diag(P) / S),
    V^H dV = F o (S P + P^H S), F_ij = 1 / (S_j^2 - S_i^2); plus the parts off the spans."""
    m, n = A_t.shape[-2], A_t.shape[-1]
    k = S.shape[-1]
    if full_matrices and m != n and which != 1:
        raise NotImplementedError(
            "linalg.svd: the forward derivative of U and Vh with full_matrices=True is not "
            "implemented for non-square matrices")
    U = U[..., :, :k]  # noqa: N806
    Vh = Vh[..., :k, :]  # noqa: N806
    V = Vh.mH  # noqa: N806
    P = U.mH.matmul(A_t).matmul(V)  # noqa: N806
    dP = P.diagonal(0, -2, -1)
    if which == 1:
        return dP.real if dP.dtype.is_complex else dP
    Sc = S.to(U.dtype)  # noqa: N806
    S2 = S * S  # noqa: N806
    F = _off_diagonal_inverse(S2.unsqueeze(-2) - S2.unsqueeze(-1)).to(U.dtype)  # noqa: N806
    if which == 0:
        omega = F * (P * Sc.unsqueeze(-2) + Sc.unsqueeze(-1) * P.mH)
        if U.dtype.is_complex:
            omega = omega + pyaten.diag_embed(1j * dP.imag / S)
        dU = U.matmul(omega)  # noqa: N806
        if m > k:
            dU = dU + (A_t.matmul(V) - U.matmul(P)) / Sc.unsqueeze(-2)  # noqa: N806
        return dU
    omega = F * (Sc.unsqueeze(-1) * P + P.mH * Sc.unsqueeze(-2))
    dV = V.matmul(omega)  # noqa: N806
    if n > k:
        dV = dV + (A_t.mH.matmul(U) - V.matmul(P.mH)) / Sc.unsqueeze(-2)  # noqa: N806
    return dV.mH


def eigh_jvp(A_t: Tensor, L: Tensor, V: Tensor, which: int) -> Tensor:  # noqa: N803
    """P = V^H dA V: dL = Re diag(P), dV = V (F o P), F_ij = 1 / (L_j - L_i)."""
    P = V.mH.matmul(A_t).matmul(V)  # noqa: N806
    if which == 0:
        d = P.diagonal(0, -2, -1)
        return d.real if d.dtype.is_complex else d
    F = _off_diagonal_inverse(L.unsqueeze(-2) - L.unsqueeze(-1)).to(V.dtype)  # noqa: N806
    return V.matmul(F * P)


def eig_jvp(A_t: Tensor, L: Tensor, V: Tensor, which: int) -> Tensor:  # noqa: N803
    """P = V^{-1} dA V: dL = diag(P), dV = V (P / E) kept at unit norm, E_ij = L_j - L_i."""
    P = pyaten.linalg.solve(V, A_t.to(V.dtype).matmul(V))  # noqa: N806
    if which == 0:
        return P.diagonal(0, -2, -1)
    F = _off_diagonal_inverse(L.unsqueeze(-2) - L.unsqueeze(-1))  # noqa: N806
    dV = V.matmul(F * P)  # noqa: N806
    re = (V.conj() * dV).sum(-2).real.to(V.dtype)
    return dV - V * re.unsqueeze(-2)


def lu_jvp(A_t: Tensor, P: Tensor, L: Tensor, U: Tensor, pivot: bool, which: int) -> Tensor:  # noqa: N803
    """A = P L U: X = L^{-1} P^T dA U^{-1} on the square block gives dL = L tril(X, -1),
    dU = triu(X) U; the extra block of U (wide) or L (tall) follows."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    dB = P.mT.to(A_t.dtype).matmul(A_t) if pivot else A_t  # noqa: N806
    L1, U1 = L[..., :k, :], U[..., :, :k]  # noqa: N806
    X = pyaten.linalg.solve_triangular(L1, dB[..., :k, :k], upper=False, left=True,  # noqa: N806
                                       unitriangular=True)
    X = pyaten.linalg.solve_triangular(U1, X, upper=True, left=False)  # noqa: N806
    dL1 = L1.matmul(X.tril(-1))  # noqa: N806
    dU1 = X.triu().matmul(U1)  # noqa: N806
    if which == 0:
        if m <= n:
            return dL1
        dL2 = pyaten.linalg.solve_triangular(  # noqa: N806
            U1, dB[..., k:, :] - L[..., k:, :].matmul(dU1), upper=True, left=False)
        return pyaten.cat([dL1, dL2], -2)
    if m >= n:
        return dU1
    dU2 = pyaten.linalg.solve_triangular(  # noqa: N806
        L1, dB[..., :, k:] - dL1.matmul(U[..., :, k:]), upper=False, left=True,
        unitriangular=True)
    return pyaten.cat([dU1, dU2], -1)


def lu_factor_ex_jvp(A_t: Tensor, LU: Tensor, pivots: Tensor, pivot: bool) -> Tensor:  # noqa: N803
    P, L, U = pyaten.lu_unpack(LU, pivots)  # noqa: N806
    m, n = LU.shape[-2], LU.shape[-1]
    dL = lu_jvp(A_t, P, L, U, pivot, 0)  # noqa: N806
    dU = lu_jvp(A_t, P, L, U, pivot, 1)  # noqa: N806
    return lu_unpack_backward(dL, dU, m, n)


def lu_solve_jvp(X: Tensor, LU: Tensor, pivots: Tensor, LU_t: Tensor, B_t: Tensor,  # noqa: N803
                 left: bool, adjoint: bool) -> Tensor:
    """dA = P (dL U + L dU) from LU's tangent; dX solves with the same factors."""
    P, L, U = pyaten.lu_unpack(LU, pivots)  # noqa: N806
    dA = P.to(LU.dtype).matmul(LU_t.tril(-1).matmul(U) + L.matmul(LU_t.triu()))  # noqa: N806
    op = dA.mH if adjoint else dA
    rhs = B_t - op.matmul(X) if left else B_t - X.matmul(op)
    return pyaten.linalg.lu_solve(LU, pivots, rhs, left=left, adjoint=adjoint)


def lstsq_jvp(A: Tensor, B: Tensor, A_t: Tensor, B_t: Tensor, X: Tensor,  # noqa: N803
              residuals: Tensor | None, which: int) -> Tensor:
    """X = A^+ B: dX = d(A^+) B + A^+ dB; residuals: 2 Re sum conj(A X - B) (dA X - dB)."""
    vector = B.dim() == A.dim() - 1
    if vector:
        B, B_t, X = B.unsqueeze(-1), B_t.unsqueeze(-1), X.unsqueeze(-1)  # noqa: N806
    if which == 0:
        pinvA = pyaten.linalg.pinv(A)  # noqa: N806
        dX = pinv_jvp(A, pinvA, A_t).matmul(B) + pinvA.matmul(B_t)  # noqa: N806
        return dX.squeeze(-1) if vector else dX
    if residuals is None or residuals.numel() == 0:
        return pyaten.zeros_like(residuals)
    r = A.matmul(X) - B
    d = (r.conj() * (A_t.matmul(X) - B_t)).sum(-2)
    return 2 * (d.real if d.dtype.is_complex else d)


def _cholesky_dA(L: Tensor, L_t: Tensor, upper: bool) -> Tensor:  # noqa: N802, N803
    if upper:
        return L_t.mH.matmul(L) + L.mH.matmul(L_t)
    return L_t.matmul(L.mH) + L.matmul(L_t.mH)


def cholesky_solve_jvp(X: Tensor, L: Tensor, L_t: Tensor, B_t: Tensor, upper: bool) -> Tensor:  # noqa: N803
    """X = A^{-1} B, A = L L^H: dX = A^{-1} (dB - dA X)."""
    return pyaten.cholesky_solve(B_t - _cholesky_dA(L, L_t, upper).matmul(X), L, upper)


def cholesky_inverse_jvp(L: Tensor, L_t: Tensor, X: Tensor, upper: bool) -> Tensor:  # noqa: N803
    """X = A^{-1}: dX = -X dA X."""
    return -X.matmul(_cholesky_dA(L, L_t, upper)).matmul(X)


def scatter_reduce_jvp(self: Tensor, self_t: Tensor, dim: int, index: Tensor, src: Tensor,
                       src_t: Tensor, reduce: str, include_self: bool,
                       result: Tensor) -> Tensor:
    if reduce in ("sum", "mean"):
        return self_t.scatter_reduce(dim, index, src_t, reduce, include_self=include_self)
    if reduce in ("amax", "amin"):
        value = result.gather(dim, index)
        self_is = (self == result).to(self.dtype)
        if not include_self:
            self_is = self_is.scatter(dim, index, 0)
        src_is = (src == value).to(self.dtype)
        total = (self_t * self_is).scatter_add(dim, index, src_t * src_is)
        count = self_is.scatter_add(dim, index, src_is)
        picked = total / count.masked_fill(count == 0, 1)
        touched = pyaten.zeros_like(self_is).scatter(dim, index, 1) > 0
        return pyaten.where(touched, picked, self_t)
    # prod: each output is a product of its own inputs, so J t = the backward's partial
    # derivatives (the backward of a ones cotangent) times the tangents, scattered
    g_self, g_src = scatter_reduce_backward(pyaten.ones_like(result), self, dim, index, src,
                                            reduce, include_self, result)
    used = src_t[tuple(slice(0, n) for n in index.shape)]
    return self_t * g_self + pyaten.zeros_like(result).scatter_add(dim, index, used * g_src)
