"""docs/coverage.md, pyaten/_torch_api.json and the README's count are what `tools/coverage.py`
generates now, and the tool sorts PyTorch's names as its Note says."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "coverage.py"


def _tool():
    spec = importlib.util.spec_from_file_location("coverage_tool", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_files_are_fresh() -> None:
    # A fresh process: other tests register operators and attach methods in this one.
    run = [sys.executable, str(TOOL), "--check"]
    result = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr  # names each stale file and the command


def test_readme_count_is_the_pages() -> None:
    headline = re.compile(r"pyaten has \d+ of PyTorch's \d+ public functions")
    page = headline.findall((ROOT / "docs" / "coverage.md").read_text())
    readme = headline.findall((ROOT / "README.md").read_text())
    assert page and readme
    assert set(readme) == {page[0]}, "run `python tools/coverage.py` to update the README"


@pytest.fixture(scope="module")
def api() -> dict[str, dict[str, list[str]]]:
    version, api = _tool().torch_api()
    assert version == torch.__version__.split("+")[0]
    return api


# (namespace, kind, name): where the Note says each name belongs.
KNOWN = [
    ("torch", "functions", "add"),
    ("torch", "functions", "broadcast_shapes"),  # a Python function, not in torch.__all__
    ("torch", "classes", "Tensor"),
    ("torch", "classes", "no_grad"),
    ("torch", "modules", "linalg"),
    ("torch", "values", "float32"),
    ("torch", "values", "pi"),
    ("torch.Tensor", "functions", "add_"),
    ("torch.Tensor", "properties", "shape"),
    ("torch.Tensor", "properties", "T"),
    ("torch.linalg", "functions", "vector_norm"),
    ("torch.special", "functions", "erfcx"),
    ("torch.fft", "functions", "rfft"),
    ("torch.nn.functional", "functions", "cosine_similarity"),
    ("torch.nn.functional", "functions", "relu"),  # a Python function
]
# (namespace, name): names a namespace shows that are not its own public API.
LEFT_OUT = [
    ("torch", "os"),  # a module torch imports
    ("torch", "_C"),
    ("torch.Tensor", "__add__"),
    ("torch.special", "Tensor"),  # torch's, re-exported
    ("torch.linalg", "common_notes"),  # a docstring table
    ("torch.nn.functional", "Callable"),  # from typing
    ("torch.nn.functional", "np"),
]


@pytest.mark.parametrize("namespace,kind,name", KNOWN)
def test_kind_of_known_names(api, namespace: str, kind: str, name: str) -> None:
    kinds = [k for k, names in api[namespace].items() if name in names]
    assert kinds == [kind]


@pytest.mark.parametrize("namespace,name", LEFT_OUT)
def test_names_left_out(api, namespace: str, name: str) -> None:
    assert all(name not in names for names in api[namespace].values())


def test_every_function_is_torchs_and_callable(api) -> None:
    for namespace, kinds in api.items():
        owner = torch.Tensor if namespace == "torch.Tensor" else importlib.import_module(namespace)
        for name in kinds.get("functions", []):
            value = getattr(owner, name)
            assert callable(value) and not isinstance(value, type), f"{namespace}.{name}"
