"""The Python examples of every docs page run as written (from the repository root)."""

from __future__ import annotations

import pathlib
import re
import textwrap

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
EXAMPLES = [
    (page, i, block)
    for page in PAGES
    # blocks inside list items are indented: dedent them
    for i, block in enumerate(
        textwrap.dedent(b) for b in re.findall(r" *```python\n(.*?)```", (DOCS / page).read_text(),
                                               re.S)
    )
]


@pytest.mark.parametrize("page,index,code", EXAMPLES, ids=[f"{p}-{i}" for p, i, _ in EXAMPLES])
def test_doc_example_runs(page, index, code, monkeypatch) -> None:
    monkeypatch.chdir(DOCS.parent)  # examples name files relative to the repository root
    exec(compile(code, f"{page}[{index}]", "exec"), {"__name__": "__doc_example__"})
