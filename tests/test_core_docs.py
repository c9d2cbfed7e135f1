"""The Python examples in the core's docs pages run as written."""

from __future__ import annotations

import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
PAGES = ["tensors.md", "type-promotion.md", "tensor-iterator.md"]
EXAMPLES = [
    (page, i, block)
    for page in PAGES
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S))
]


@pytest.mark.parametrize("page,index,code", EXAMPLES, ids=[f"{p}-{i}" for p, i, _ in EXAMPLES])
def test_doc_example_runs(page, index, code) -> None:
    exec(compile(code, f"{page}[{index}]", "exec"), {"__name__": "__doc_example__"})
