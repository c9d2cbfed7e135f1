"""pyaten.schema: the function-schema language (`name.overload(args) -> returns`).

`parse(text)` returns an immutable, validated `FunctionSchema` whose `str()` is the canonical
text; `parse_type(text)` parses a single type. See docs/schema.md.
"""

from pyaten.schema.errors import SchemaError
from pyaten.schema.model import (
    NO_DEFAULT,
    Annotation,
    Argument,
    BaseType,
    CustomClassType,
    FunctionSchema,
    ListType,
    OperatorName,
    OptionalType,
    Return,
    SchemaKind,
    Type,
)
from pyaten.schema.parser import clear_caches, parse, parse_type

__all__ = [
    "NO_DEFAULT",
    "Annotation",
    "Argument",
    "BaseType",
    "CustomClassType",
    "FunctionSchema",
    "ListType",
    "OperatorName",
    "OptionalType",
    "Return",
    "SchemaError",
    "SchemaKind",
    "Type",
    "clear_caches",
    "parse",
    "parse_type",
]
