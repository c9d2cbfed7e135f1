"""`SchemaError`: a `ValueError` that points at the column of the problem in the schema text."""

from __future__ import annotations


class SchemaError(ValueError):
    """A schema text that cannot be parsed or breaks a rule.

    `text` is the schema text, `column` the 0-based offset of the problem in it, `problem` the
    one-line description. `str(error)` shows all three, with a caret under the column.
    """

    def __init__(self, problem: str, text: str, column: int) -> None:
        column = max(0, min(column, len(text)))
        self.problem = problem
        self.text = text
        self.column = column
        # Keep the caret aligned even if the text holds tabs or newlines.
        shown = text.replace("\t", " ").replace("\n", " ").replace("\r", " ")
        super().__init__(f"{problem} (column {column})\n  {shown}\n  {' ' * column}^")

    def __reduce__(self):
        return (SchemaError, (self.problem, self.text, self.column))
