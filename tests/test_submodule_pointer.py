"""`import pyaten.X` for a submodule PyTorch has as `torch.X` and pyaten lacks raises
ModuleNotFoundError with the coverage pointer; other missing modules keep Python's error."""

from __future__ import annotations

import importlib

import pytest
import torch  # noqa: F401 - the list below is generated from it (tools/coverage.py)

import pyaten
from pyaten.utils import torch_api

LACKING = ["pyaten.jit", "pyaten.utils.mobile_optimizer", "pyaten.nn.utils.fusion",
           "pyaten.export.dynamic_shapes"]


@pytest.mark.parametrize("name", LACKING)
def test_missing_torch_submodule_points_at_coverage(name) -> None:
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module(name)
    missing = info.value.name  # the first missing package on the way (pyaten.export for .export.x)
    assert name == missing or name.startswith(missing + ".")
    torch_name = "torch" + missing[len("pyaten"):]
    assert str(info.value) == (
        f"No module named {missing!r}: pyaten does not implement {torch_name} yet; "
        "see docs/coverage.md"
    )
    assert torch_name in torch_api.torch_submodules()


def test_other_missing_modules_keep_pythons_error() -> None:
    with pytest.raises(ModuleNotFoundError) as info:
        importlib.import_module("pyaten.no_such_module")
    assert str(info.value) == "No module named 'pyaten.no_such_module'"
    with pytest.raises(ModuleNotFoundError, match="No module named 'nonexistent_pkg'"):
        importlib.import_module("nonexistent_pkg")


def test_attribute_lookup_still_answers_attribute_error() -> None:
    assert hasattr(pyaten, "jit") is False
    with pytest.raises(AttributeError, match="pyaten does not implement torch.jit yet"):
        pyaten.jit  # noqa: B018


def test_implemented_submodules_import() -> None:
    for name in ("pyaten.profiler", "pyaten.utils.checkpoint", "pyaten.nn.utils.parametrize",
                 "pyaten.nn.utils.prune", "pyaten.optim.swa_utils", "pyaten.autograd.profiler",
                 "pyaten.nn.parallel", "pyaten.ao.quantization", "pyaten.distributed",
                 "pyaten.sparse", "pyaten.nested", "pyaten.masked"):
        assert importlib.import_module(name).__name__ == name
        assert "torch" + name[len("pyaten"):] in torch_api.torch_submodules()
