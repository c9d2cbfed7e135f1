"""Gradients of PyTorch's OpInfo samples, pyaten against torch, in float64: the core set.

For every OpInfo whose name is in `GRAD_SURFACE` (and that pyaten has), each float64 sample
runs forward in both libraries with its floating-point tensors as leaves; the same random
cotangent is pulled back through every differentiable output, and the input gradients must
agree (`tests/_grad_helpers.py`). The first sample of each also passes
`pyaten.autograd.gradcheck` (fast mode), and operators in `SECOND_ORDER` compare their
gradients' gradients too. Each operator family has its own module (`test_autograd_<family>.py`)
with its own table; adding a derivative means adding its OpInfo name there (docs/autograd.md).
"""

from __future__ import annotations

import pytest
from _grad_helpers import check_opinfo_grads, opinfo_grad_cases

# OpInfo names whose gradients are compared here (the engine's own core set).
GRAD_SURFACE = frozenset("""
add sub mul div neg exp sum mm clone
addmm addmv addr baddbmm addbmm dot vdot mv linalg.cross linalg.vector_norm linalg.inv
linalg.solve_triangular
""".split())

# Second order (the gradient of the gradient) compared too.
SECOND_ORDER = GRAD_SURFACE - {"clone"}

# OpInfo variants left out, with the reason.
NOT_YET = {
    ("div", "trunc_rounding"): "rounding_mode's derivative comes with the binary family",
    ("div", "floor_rounding"): "rounding_mode's derivative comes with the binary family",
}


@pytest.mark.parametrize("info", opinfo_grad_cases(GRAD_SURFACE, NOT_YET))
def test_gradients_match_torch(info) -> None:
    check_opinfo_grads(info, info.name in SECOND_ORDER)
