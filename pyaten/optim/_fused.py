"""SGD's update of one parameter as one compiled pass (Numba).

Note: one SGD pass
    PyTorch's single-tensor SGD is `p.add_(grad, alpha=-lr)`, and with momentum
    `buf.mul_(momentum).add_(grad, alpha=1 - dampening)` before it: here each operator is a
    dispatcher call and two NumPy passes (the product into a temporary, then the sum). When
    Numba is installed and every tensor is a plain row-major CPU float tensor of one dtype
    and shape (no mode, trace, subclass or tangent: what the operators would see), the same
    arithmetic runs as one loop over the elements: each product rounded to the dtype, then
    each sum, in the operators' order (no fused multiply-add), so the results are the
    operators' bit for bit, with the same version-counter bumps. The operators stay the
    reference: weight decay, Nesterov, `maximize`, `differentiable`, `foreach=False`, a
    first momentum step (the buffer is a clone of the gradient) and everything else take
    them. `tests/test_compile_speed_paths.py` compares both.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.core.views import is_contiguous_strides
from pyaten.native import compiled
from pyaten.optim.adam import _plain
from pyaten.optim.optimizer import to_float

__all__ = ["sgd_update"]

_STATE: dict[str, Any] = {"loops": None, "built": False}


def _loops() -> SimpleNamespace | None:
    if compiled.available() is None:  # no Numba, or switched off (PYATEN_NO_NUMBA)
        return None
    if not _STATE["built"]:
        _STATE["built"] = True
        _STATE["loops"] = _compile()
    return _STATE["loops"]


def _compile() -> SimpleNamespace:
    import numba

    jit = numba.njit(cache=True, nogil=True)

    @jit
    def step(param, grad, alpha):
        # param.add_(grad, alpha=alpha)
        for i in range(param.size):
            param[i] = param[i] + grad[i] * alpha

    @jit
    def momentum_step(param, grad, buf, momentum, damp, scaled, alpha):
        # buf.mul_(momentum).add_(grad, alpha=damp); param.add_(buf, alpha=alpha)
        for i in range(param.size):
            g = grad[i] * damp if scaled else grad[i]
            b = buf[i] * momentum + g
            buf[i] = b
            param[i] = param[i] + b * alpha

    return SimpleNamespace(step=step, momentum_step=momentum_step)


def fusable(group: dict[str, Any]) -> bool:
    """Whether a parameter group's options allow the one pass (Note: one SGD pass)."""
    return (group["foreach"] is not False and not group["differentiable"]
            and not group["maximize"] and not group["nesterov"]
            and group["weight_decay"] == 0)


def sgd_update(p: Tensor, grad: Tensor, state: dict[str, Any], group: dict[str, Any]) -> bool:
    """The update of `p` in one compiled pass; False: not taken, nothing written (Note: one
    SGD pass). `group` must be `fusable`."""
    momentum = group["momentum"]
    buf = state.get("momentum_buffer") if momentum != 0 else None
    if momentum != 0 and buf is None:
        return False
    tensors = (p, grad) if buf is None else (p, grad, buf)
    dtype = p._dtype
    if dtype.name not in ("float32", "float64") or not _plain(*tensors):
        return False
    sizes = p._sizes
    for t in tensors:
        if t._dtype is not dtype or t._sizes != sizes or \
                not is_contiguous_strides(sizes, t._strides):
            return False
    loops = _loops()
    if loops is None:
        return False
    param, gradient = p._numpy().reshape(-1), grad._numpy().reshape(-1)
    kind = param.dtype.type
    alpha = kind(-to_float(group["lr"]))
    if buf is None:
        loops.step(param, gradient, alpha)
    else:
        damp = 1 - group["dampening"]
        loops.momentum_step(param, gradient, buf._numpy().reshape(-1), kind(momentum),
                            kind(damp), not (damp == 1 and damp.__class__ is not complex),
                            alpha)
        buf._version_counter.value += 2
    p._version_counter.value += 1
    return True
