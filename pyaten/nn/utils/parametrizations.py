"""`nn.utils.parametrizations`: `weight_norm`, `spectral_norm` and `orthogonal` as
parametrizations (pyaten/nn/utils/parametrize.py; docs/parametrizations.md).

Note: the orthogonal maps
    `orthogonal` stores an unconstrained matrix X and returns Q(X): with `matrix_exp` or
    `cayley`, X's lower triangle becomes a skew-symmetric A (padded to square for a tall
    matrix) and Q is exp(A), or (I - A/2)^{-1}(I + A/2); with `householder`, X's strictly
    lower triangle holds the reflectors and its diagonal signs the columns. With
    `use_trivialization` (the default) the module also keeps `base`, the orthogonal matrix
    last assigned, and returns base @ Q(X); assigning a matrix makes it orthogonal (the Q of
    its QR, with R's diagonal positive), stores it as `base` and X as -I (Q(-I) is I).
"""

from __future__ import annotations

import enum
from typing import Any

from pyaten.autograd.grad_mode import no_grad
from pyaten.core.creation import from_numpy
from pyaten.core.tensor import Tensor
from pyaten.nn.functional import normalize
from pyaten.nn.modules._ops import ops
from pyaten.nn.modules.module import Module
from pyaten.nn.utils import parametrize
from pyaten.type_info import finfo

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# --- weight norm ---------------------------------------------------------------------------


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """The `pow`-norm of `v` over every dimension but `dim` (kept as size 1); dim=-1: over
    all of it."""
    if dim == -1:
        return ops.linalg.vector_norm(v, pow)
    dims = [d for d in range(v.dim()) if d != dim]
    return ops.linalg.vector_norm(v, pow, dim=dims, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    return v * (g / norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Split `module.<name>` into a magnitude (`original0`, PyTorch's `weight_g`) and a
    direction (`original1`, `weight_v`): `weight = g * v / ||v||`."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def load_old_keys(
        module: Module, state_dict: dict, prefix: str, *args: Any
    ) -> None:  # state dicts written by the older nn.utils.weight_norm
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(load_old_keys)
    return module


# --- spectral norm -------------------------------------------------------------------------


class _SpectralNorm(Module):
    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            matrix = self._reshape_weight_to_matrix(weight)
            h, w = matrix.size()
            u = matrix.new_empty(h).normal_(0, 1)
            v = matrix.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(matrix, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, matrix: Tensor, n_power_iterations: int) -> None:
        # u and v are updated in place, so the buffers stay the tensors state_dict holds
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(ops.mv(matrix, self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(ops.mv(matrix.mH, self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        matrix = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(matrix, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = ops.vdot(u, ops.mv(matrix, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Divide `module.<name>` by its largest singular value, estimated by power iteration
    (one step per training-mode read)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")
        dim = 1 if parametrize.type_before_parametrizations(module).__name__ in transposed else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module


# --- orthogonal ----------------------------------------------------------------------------


class _OrthMaps(enum.Enum):
    matrix_exp = enum.auto()
    cayley = enum.auto()
    householder = enum.auto()


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.size(-2), q.size(-1)
    eye = ops.eye(k, dtype=q.dtype)
    eps = 10.0 * n * finfo(q.dtype).eps
    return bool(ops.allclose(q.mH @ q, eye, atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a tall `a` = QR with R's diagonal real and non-negative."""
    q, r = ops.linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's compact QR (reflectors below the diagonal, R on and above it, and tau)."""
    import numpy as np
    import scipy.linalg

    array = a.numpy()
    batch = array.shape[:-2]
    flat = array.reshape(-1, *array.shape[-2:])
    packed, taus = [], []
    for matrix in flat:
        (qr, tau), _ = scipy.linalg.qr(matrix, mode="raw")
        packed.append(qr)
        taus.append(tau)
    k = min(array.shape[-2:])
    qr_all = np.stack(packed).reshape(*batch, *array.shape[-2:]) if flat.shape[0] else array
    tau_all = np.stack(taus).reshape(*batch, k) if flat.shape[0] else np.zeros((*batch, k))
    return (
        from_numpy(np.ascontiguousarray(qr_all, dtype=array.dtype)),
        from_numpy(np.ascontiguousarray(tau_all, dtype=array.dtype)),
    )


class _Orthogonal(Module):
    base: Tensor

    def __init__(
        self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True
    ) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.size(-2), x.size(-1)
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            x = x.tril()
            if n != k:  # pad the tall matrix to a square one
                x = ops.cat([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)], dim=-1)
            a = x - x.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                q = ops.matrix_exp(a)
            else:
                eye = ops.eye(n, dtype=a.dtype)
                q = ops.linalg.solve(
                    ops.add(eye, a, alpha=-0.5), ops.add(eye, a, alpha=0.5)
                )
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = ops.linalg.householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            q = self.base @ q
        if transposed:
            q = q.mT
        return q

    def right_inverse(self, q: Tensor) -> Tensor:
        with no_grad():
            if q.shape != self.shape:
                raise ValueError(
                    f"Expected a matrix or batch of matrices of shape {self.shape}. "
                    f"Got a tensor of shape {q.shape}."
                )
            q_init = q
            n, k = q.size(-2), q.size(-1)
            transpose = n < k
            if transpose:
                q = q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False."
                    )
                a, tau = _geqrf(q)
                diagonal = a.diagonal(dim1=-2, dim2=-1)
                signs = diagonal.sign()
                signs = ops.where(tau == 0.0, -signs, signs)
                diagonal.copy_(signs)
                return a.mT if transpose else a
            if n == k:
                q = _make_orthogonal(q) if not _is_orthogonal(q) else q.clone()
            else:  # complete q to a square orthogonal matrix
                extra = ops.randn(*(q.size()[:-2] + (n, n - k)), dtype=q.dtype)
                q = _make_orthogonal(ops.cat([q, extra], dim=-1))
            self.base = q
            neg_eye = ops.zeros_like(q_init)
            neg_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_eye


def orthogonal(
    module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
    use_trivialization: bool = True,
) -> Module:
    """Keep `module.<name>` an orthogonal (or unitary) matrix, or batch of them: see the Note
    at the top of this module for the maps."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
