"""The optional compiled recording calls of the generated autograd kernels.

Note: the compiled recording calls
    A generated autograd kernel that records a node (pyaten/codegen/gen_autograd.py) spends
    most of its own time in two steps that know nothing of the operator: making the node
    with one edge per differentiable input, and, after the call below autograd, making the
    result the node's output (`grad_fn`, `output_nr`, `requires_grad`, `input_meta`, and for
    a view, remembering it on its base). The kernels make each step one call:
    `make_node(Cls, *inputs)` and `run_recorded(node, below, *args)` (`run_recorded_view`
    for a view), whose Python versions in pyaten/autograd/runtime.py are the reference.

    `pyaten._accel_graph` (csrc/accel_graph.c, built at install time beside `pyaten._accel`,
    optional like it) is their C version: the same stores in the same order, through the
    classes' slot offsets. `runtime` binds the kernels' names to it when it loaded, so it
    replaces the Python layer rather than stacking on it; every case it does not take (a
    tensor subclass that redefines an attribute, a non-Tensor result) goes to the reference.
    `PYATEN_NO_ACCEL=1` turns it off with the other accelerator; tests/test_accel_graph.py
    and tests/test_recording_calls.py compare both ways.
"""

from __future__ import annotations

from types import ModuleType

from pyaten.dispatch.accel import load_extension

__all__ = ["ACCEL_GRAPH", "LOAD_ERROR"]

VERSION = 3  # the csrc/accel_graph.c API this module drives (its ACCEL_GRAPH_VERSION)
ACCEL_GRAPH: ModuleType | None
LOAD_ERROR: str | None  # why the built extension could not be used, if it was not
ACCEL_GRAPH, LOAD_ERROR = load_extension("_accel_graph", "csrc/accel_graph.c", VERSION)
