"""Every row of every pointwise family table, on all 12 dtypes, against PyTorch.

The rows come from `pyaten.native.family.ROWS`, so an operator added to any family is tested
here without a line of test code: its functional overload runs through `pyaten.ops.aten` and
`torch.ops.aten` on the same inputs of each dtype, and the results (dtype, shape, values) or
the errors (kind and message: `"hypot_cpu" not implemented for 'Long'`) must agree, on CPU and
on Meta.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _helpers import DTYPE_NAMES, assert_same, run_both

import pyaten
from pyaten.native import family

# Values for required non-tensor arguments, by argument name.
ARGUMENTS = {"n": 1, "decimals": 1, "weight": 0.25, "value": 2, "alpha": 1, "exponent": 2,
             "other": 3, "self": 2, "p": 2, "eps": 1e-6, "min": -1.5, "max": 1.5}
# Loose comparisons where PyTorch's and SciPy's algorithms differ in the last bits.
TOLERANCE = {"float16": 2e-3, "bfloat16": 2e-2, "float32": 2e-5, "complex64": 2e-5,
             "float64": 1e-9, "complex128": 1e-9}


def values(shape, dtype: str, seed: int, nonzero: bool) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return torch.from_numpy(np.asarray(rng.integers(0, 2, shape).astype(bool)))
    if dtype == "uint8" or dtype.startswith("int"):
        low = 1 if dtype == "uint8" else -6
        ints = rng.integers(low, 7, shape)
        if nonzero:
            ints[ints == 0] = 2
        return torch.from_numpy(np.asarray(ints)).to(getattr(torch, dtype))
    real = rng.uniform(-0.9, 0.9, shape) * (3 if nonzero else 1)
    if dtype.startswith("complex"):
        real = real + 1j * rng.uniform(-0.9, 0.9, shape)
    return torch.from_numpy(np.asarray(real)).to(getattr(torch, dtype))


def to_pyaten(t: torch.Tensor):
    if t.dtype == torch.bfloat16:
        return pyaten.from_numpy(t.contiguous().view(torch.int16).numpy()).view(pyaten.bfloat16)
    return pyaten.from_numpy(t.contiguous().numpy())


def handles(name: str):
    """The functional overload's op handles (a row of a structured `x.out` is run through `x`)."""
    base, _, overload = name.partition(".")
    if overload.endswith("out"):
        overload = ""
    ours = getattr(getattr(pyaten.ops.aten, base), overload or "default")
    theirs = getattr(getattr(torch.ops.aten, base), overload or "default")
    return ours, theirs


def call_arguments(schema, dtype: str, device: str):
    """(pyaten args, torch args, keyword args) for the functional schema, or None if it can't
    be built."""
    ours, theirs, keywords = [], [], {}
    for index, arg in enumerate(schema.arguments):
        kind = str(arg.type)
        if kind == "Tensor":
            t = values((3, 4) if index == 0 else (4,), dtype, index, nonzero=index > 0)
            if device == "meta":
                ours.append(pyaten.empty(tuple(t.shape), dtype=getattr(pyaten, dtype),
                                         device="meta"))
                theirs.append(t.to("meta"))
            else:
                ours.append(to_pyaten(t))
                theirs.append(t)
        elif arg.has_default:
            continue  # keeps its default
        elif arg.name not in ARGUMENTS:
            return None
        elif arg.kwarg_only:
            keywords[arg.name] = ARGUMENTS[arg.name]
        else:
            ours.append(ARGUMENTS[arg.name])
            theirs.append(ARGUMENTS[arg.name])
    return ours, theirs, keywords


ROW_NAMES = sorted(family.ROWS)


@pytest.mark.parametrize("name", ROW_NAMES)
def test_row_on_every_dtype(name) -> None:
    ours_op, theirs_op = handles(name)
    compared = 0
    for dtype in DTYPE_NAMES:
        built = call_arguments(ours_op._schema, dtype, "cpu")
        if built is None:
            pytest.skip(f"{name}: a required argument has no value in ARGUMENTS")
        ours_args, theirs_args, kw = built
        if _onednn_fails(theirs_op, theirs_args, kw):
            continue
        pair = run_both(lambda a=ours_args, k=kw: ours_op(*a, **k),
                        lambda a=theirs_args, k=kw: theirs_op(*a, **k))
        if pair is not None:
            tol = TOLERANCE.get(str(pair[1].dtype).removeprefix("torch."))
            assert_same(*pair, rtol=tol, atol=tol)
            compared += 1
    assert compared, f"{name} ran on no dtype"


def _onednn_fails(op, args, kw) -> bool:
    """torch's CPU build refuses some bfloat16 backward kernels on CPUs without the oneDNN
    primitive (gelu_backward here): an environment limit, not a behaviour to compare."""
    try:
        op(*args, **kw)
    except RuntimeError as error:
        return "primitive descriptor" in str(error)
    except Exception:  # noqa: BLE001 - torch's ordinary refusals are compared by run_both
        return False
    return False


@pytest.mark.parametrize("name", ROW_NAMES)
def test_row_on_meta(name) -> None:
    """Meta gives torch's shape and dtype wherever the CPU op accepts the dtype (torch's Python
    meta kernels check less than its CPU ones, so refusals are compared on CPU only)."""
    ours_op, theirs_op = handles(name)
    for dtype in DTYPE_NAMES:
        built = call_arguments(ours_op._schema, dtype, "cpu")
        if built is None:
            pytest.skip(f"{name}: a required argument has no value in ARGUMENTS")
        try:
            theirs_op(*built[1], **built[2])
        except Exception:  # noqa: BLE001 - a dtype the op refuses: nothing to shape
            continue
        ours_args, theirs_args, kw = call_arguments(ours_op._schema, dtype, "meta")
        assert_same(ours_op(*ours_args, **kw), theirs_op(*theirs_args, **kw))
