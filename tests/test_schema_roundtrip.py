"""Every `func:` of PyTorch 2.13's native_functions.yaml parses and prints back unchanged."""

from __future__ import annotations

import pathlib
import re

import pytest

from pyaten.schema import parse

torchgen = pytest.importorskip("torchgen")

YAML = pathlib.Path(torchgen.__file__).parent / "packaged/ATen/native/native_functions.yaml"
FUNC = re.compile(r"^- func: (.*)$", re.MULTILINE)


def real_schemas() -> list[str]:
    return FUNC.findall(YAML.read_text())


def test_real_file_has_all_entries():
    assert len(real_schemas()) == 2584


def test_every_real_schema_round_trips():
    mismatched = [s for s in real_schemas() if str(parse(s)) != s]
    assert mismatched == []
