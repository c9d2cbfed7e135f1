"""The width the explanation texts wrap at: 100 columns, or the terminal's under the CLI.

    with use_width(shutil.get_terminal_size((80, 24)).columns):
        print(pyaten.dispatch.explain("aten::add.Tensor"))   # wrapped to the terminal

`str()` of a dispatch table or an explain() tree wraps at `text_width()`; the `pyaten` command
sets it to the terminal's width (COLUMNS, else 80 when stdout is not a terminal).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["DEFAULT_WIDTH", "MIN_WIDTH", "text_width", "use_width"]

DEFAULT_WIDTH = 100
MIN_WIDTH = 40  # narrower than this, the wrapped columns stop making sense

_WIDTH = [DEFAULT_WIDTH]


def text_width() -> int:
    """The current wrapping width."""
    return _WIDTH[-1]


@contextlib.contextmanager
def use_width(columns: int) -> Iterator[int]:
    """Wrap at `columns` (at least MIN_WIDTH) inside the block."""
    _WIDTH.append(max(MIN_WIDTH, int(columns)))
    try:
        yield _WIDTH[-1]
    finally:
        _WIDTH.pop()
