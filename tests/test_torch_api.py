"""A PyTorch name pyaten lacks raises an AttributeError that says so; other names keep Python's
message; normal attribute access is untouched (pyaten/utils/torch_api.py)."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest
import torch

import pyaten
from pyaten.utils.torch_api import public_names


def _missing_message(qualified_name: str) -> str:
    return f"pyaten does not implement {qualified_name} yet; see docs/coverage.md"


def _error(owner: object, name: str) -> AttributeError:
    with pytest.raises(AttributeError) as info:
        getattr(owner, name)
    return info.value


TORCH_NAMES = sorted(public_names("torch"))
TENSOR_NAMES = sorted(public_names("torch.Tensor"))


def test_the_name_lists_are_torchs() -> None:
    assert "linalg" in TORCH_NAMES and "add" in TORCH_NAMES and "abs_" in TENSOR_NAMES
    for name in TORCH_NAMES:
        assert hasattr(torch, name), name
    for name in TENSOR_NAMES:
        assert hasattr(torch.Tensor, name), name


def test_each_torch_name_is_there_or_says_it_is_not() -> None:
    missing = [name for name in TORCH_NAMES if not hasattr(pyaten, name)]
    assert missing  # while pyaten is incomplete, the check below has work to do
    for name in missing:
        assert str(_error(pyaten, name)) == _missing_message(f"torch.{name}")


def test_each_tensor_name_is_there_or_says_it_is_not() -> None:
    t = pyaten.ones(2)
    missing = [name for name in TENSOR_NAMES if not hasattr(pyaten.Tensor, name)]
    assert missing
    for name in missing:
        expected = _missing_message(f"torch.Tensor.{name}")
        assert not hasattr(t, name)
        assert str(_error(t, name)) == expected
        assert str(_error(pyaten.Tensor, name)) == expected
        assert name not in dir(t)


@pytest.mark.parametrize("name", ["not_a_torch_name", "linalg_"])
def test_other_module_names_keep_pythons_message(name: str) -> None:
    plain = _error(types.ModuleType("pyaten"), name)
    error = _error(pyaten, name)
    assert str(error) == str(plain)
    assert error.name == name and error.obj is pyaten  # so Python can suggest a close name


# cosine_similarity is a torch function but not a Tensor method.
@pytest.mark.parametrize("name", ["not_a_torch_name", "cosine_similarity"])
def test_other_tensor_names_keep_pythons_message(name: str) -> None:
    expected = str(_error(torch.ones(2), name))
    assert str(_error(pyaten.ones(2), name)) == expected


def test_issue_examples() -> None:
    if not hasattr(pyaten, "linalg"):
        assert str(_error(pyaten, "linalg")) == _missing_message("torch.linalg")
    if not hasattr(pyaten, "cosine_similarity"):
        message = _missing_message("torch.cosine_similarity")
        assert str(_error(pyaten, "cosine_similarity")) == message
    missing = next(n for n in TORCH_NAMES if not hasattr(pyaten, n))
    with pytest.raises(ImportError):
        exec(f"from pyaten import {missing}", {})


def test_instance_attribute_of_a_missing_name_works_as_in_torch() -> None:
    name = next(
        n for n in TENSOR_NAMES
        if not hasattr(pyaten.Tensor, n) and callable(getattr(torch.Tensor, n))
    )
    for t in (torch.ones(2), pyaten.ones(2)):
        setattr(t, name, 5)
        assert getattr(t, name) == 5 and name in dir(t)


def test_a_method_attached_later_replaces_the_placeholder(monkeypatch) -> None:
    name = next(n for n in TENSOR_NAMES if not hasattr(pyaten.Tensor, n))
    monkeypatch.setattr(pyaten.Tensor, name, lambda self: 42, raising=False)
    assert getattr(pyaten.ones(1), name)() == 42


def test_tensor_has_no_getattr_hook() -> None:
    # A `__getattr__` would slow every attribute read (see the Note in torch_api.py).
    assert "__getattr__" not in dir(pyaten.Tensor)
    assert pyaten.Tensor.__getattribute__ is object.__getattribute__


def test_a_subpackage_named_like_torchs_is_imported_on_first_use() -> None:
    # pyaten.autograd is a subpackage that `import pyaten` need not import.
    code = (
        "import sys, pyaten; m = pyaten.autograd; "
        "assert m is sys.modules['pyaten.autograd'] and hasattr(pyaten, 'autograd')"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
