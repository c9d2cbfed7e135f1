"""gradcheck / gradgradcheck: analytical gradients against finite differences.

The slow mode compares whole Jacobians: column j of the numerical one is the central
difference `(f(x + eps e_j) - f(x - eps e_j)) / 2 eps`, row i of the analytical one the
backward of the unit cotangent `e_i`. The fast mode (PyTorch's `fast_mode=True`) compares
one number per input and output: `v^T J u` for random `u` and `v`, numerically along `u`
and analytically as the backward of `v` dotted with `u`. Inputs should be float64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pyaten.autograd import engine
from pyaten.autograd.grad_mode import no_grad
from pyaten.core.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when the analytical and numerical gradients disagree."""


def _as_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable_outputs(func: Callable, inputs: tuple) -> tuple[Tensor, ...]:
    return tuple(
        o for o in _as_tuple(func(*inputs))
        if isinstance(o, Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex)
    )


def _evaluate(func: Callable, inputs: tuple) -> list[np.ndarray]:
    # Grad mode stays on: `func` may itself differentiate (gradgradcheck's first order).
    outs = _differentiable_outputs(func, inputs)
    with no_grad():
        # numpy(force=True): an output may be a conj or neg view (its values resolved)
        return [o.detach().numpy(force=True)
                .astype(np.complex128 if o.dtype.is_complex else np.float64).copy() for o in outs]


def _perturbed(func: Callable, inputs: tuple, t: Tensor, direction: np.ndarray,
               eps: float) -> list[np.ndarray]:
    """Central difference of the outputs along `direction` in input `t`."""
    values = t.detach().numpy()
    original = values.copy()
    try:
        values[...] = original + eps * direction
        plus = _evaluate(func, inputs)
        values[...] = original - eps * direction
        minus = _evaluate(func, inputs)
    finally:
        values[...] = original
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def _fail(message: str, raise_exception: bool) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradcheck(
    func: Callable,
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    fast_mode: bool = False,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_backward_ad: bool = True,
    check_forward_ad: bool = False,
    masked: bool | None = None,
) -> bool:
    """True when `func`'s backward agrees with finite differences at `inputs`."""
    inputs = _as_tuple(inputs)
    wanted = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not wanted:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of the "
            "them have requires_grad=True."
        )
    for t in wanted:
        if t.dtype not in (_float64(), _complex128()):
            import warnings

            warnings.warn(
                f"Input #{inputs.index(t)} requires gradient and is not a double precision "
                "floating point or complex. This check will likely fail if all the inputs are "
                "not of double precision floating point or complex.",
                stacklevel=2,
            )
    outputs = _differentiable_outputs(func, inputs)
    if not outputs:
        return True
    rng = np.random.default_rng(0)
    for i, out in enumerate(outputs):
        for j, t in enumerate(wanted):
            if fast_mode:
                u = rng.standard_normal(t.shape)
                v = rng.standard_normal(out.shape)
                numeric = _perturbed(func, inputs, t, u, eps)[i]
                expected = float(np.real(np.sum(v * numeric)))
                got = _vjp(func, inputs, i, v, t)
                analytic = 0.0 if got is None else float(np.real(np.sum(got * u)))
                if abs(analytic - expected) > atol + rtol * abs(expected):
                    return _fail(
                        f"Jacobian mismatch for output {i} with respect to input {j}: "
                        f"numerical v^T J u = {expected}, analytical = {analytic}",
                        raise_exception,
                    )
                continue
            numeric_jac = np.zeros((max(t.numel(), 1), max(out.numel(), 1)))
            flat = np.zeros(t.numel())
            for k in range(t.numel()):
                flat[:] = 0
                flat[k] = 1
                column = _perturbed(func, inputs, t, flat.reshape(t.shape), eps)[i]
                numeric_jac[k] = np.real(column).reshape(-1)
            analytic_jac = np.zeros_like(numeric_jac)
            unit = np.zeros(out.numel())
            for m in range(out.numel()):
                unit[:] = 0
                unit[m] = 1
                got = _vjp(func, inputs, i, unit.reshape(out.shape), t)
                if got is not None:
                    analytic_jac[:, m] = np.real(got).reshape(-1)
            if not np.allclose(analytic_jac, numeric_jac, rtol=rtol, atol=atol):
                return _fail(
                    f"Jacobian mismatch for output {i} with respect to input {j},\n"
                    f"numerical:{numeric_jac}\nanalytical:{analytic_jac}\n",
                    raise_exception,
                )
    return True


def _vjp(func: Callable, inputs: tuple, index: int, cotangent: np.ndarray,
         t: Tensor) -> np.ndarray | None:
    from pyaten.core.creation import tensor as make_tensor

    outs = _differentiable_outputs(func, inputs)
    out = outs[index]
    if out.grad_fn is None and not out.requires_grad:
        return None
    grad_out = make_tensor(cotangent, dtype=out.dtype)
    (got,) = engine.grad(out, t, grad_out, allow_unused=True)
    return None if got is None else got.detach().numpy(force=True).copy()


def gradgradcheck(
    func: Callable,
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """gradcheck of the gradient of `func` (second derivatives) at `inputs`."""
    from pyaten.core.creation import tensor as make_tensor

    inputs = _as_tuple(inputs)
    wanted = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    outputs = _differentiable_outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(1)
        grad_outputs = tuple(
            make_tensor(rng.standard_normal(o.shape), dtype=o.dtype, requires_grad=True)
            for o in outputs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_order(*args: Any) -> tuple:
        ins, cots = args[:n], args[n:]
        outs = _differentiable_outputs(func, ins)
        used = [t for t in ins if isinstance(t, Tensor) and t.requires_grad]
        pairs = [(o, c) for o, c in zip(outs, cots) if o.requires_grad]
        grads = engine.grad([o for o, _ in pairs], used, [c for _, c in pairs],
                            create_graph=True, allow_unused=True, materialize_grads=True)
        return grads

    del wanted
    return gradcheck(first_order, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, fast_mode=fast_mode)


def _float64() -> Any:
    from pyaten.core import dtypes

    return dtypes.float64


def _complex128() -> Any:
    from pyaten.core import dtypes

    return dtypes.complex128
