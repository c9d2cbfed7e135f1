"""YAML reading with line numbers: PyYAML's C composer, then a small walk over its nodes.

Note: why not `yaml.load` with a line-tracking Loader subclass. torchgen adds a `__line__`
key inside every mapping through a Python `construct_mapping` override, which puts the
generic constructor machinery on the hot path and mixes a fake key into the data. Composing
the node graph in C and walking it here is faster, and keeps lines apart from the data: each
mapping is a `YamlMap` (a dict) that also knows its own line and the line of every key.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import yaml

_STR = "tag:yaml.org,2002:str"

try:  # the C composer when libyaml is present; the pure-Python one otherwise
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _BaseLoader

# First characters after which a plain scalar may be a bool, number, null... (not a string).
_MAYBE_TYPED = frozenset(_BaseLoader.yaml_implicit_resolvers)


class _Loader(_BaseLoader):
    """The safe loader with a shortcut: a plain scalar whose first character starts no
    implicit type (most of these files: names, schemas, formulas) is a string at once."""

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode and implicit[0] and value[:1] not in _MAYBE_TYPED:
            return _STR
        return super().resolve(kind, value, implicit)


__all__ = ["paused_gc", "YamlList", "YamlMap", "YamlSyntaxError", "load_yaml", "C_LOADER"]

C_LOADER: bool = _BaseLoader.__name__.startswith("C")

_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_TRUE = frozenset({"yes", "true", "on", "y"})
_constructor = yaml.constructor.SafeConstructor()
_ScalarNode = yaml.ScalarNode
_SequenceNode = yaml.SequenceNode


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a file's records are built.

    Reading PyTorch's native file creates ~200k small objects and no reference cycles;
    the collections they trigger cost more than the reading (about 1.5x the time).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class YamlMap(dict):
    """A YAML mapping: a plain dict plus `line` (its first line) and `key_lines` (per key).

    `duplicates` lists `(key, line)` for keys written twice (YAML keeps the last value).
    """

    __slots__ = ("line", "key_lines", "duplicates")

    def __init__(self, line: int = 0) -> None:
        super().__init__()
        self.line = line
        self.key_lines: dict[object, int] = {}
        self.duplicates: list[tuple[object, int]] = []

    def line_of(self, key: object) -> int:
        """The 1-based line of `key`, or of the mapping itself when the key is absent."""
        return self.key_lines.get(key, self.line)


class YamlList(list):
    """A YAML sequence: a plain list plus `lines`, the 1-based line of each item."""

    __slots__ = ("lines",)

    def line_of(self, index: int) -> int:
        return self.lines[index]


class YamlSyntaxError(ValueError):
    """The text is not YAML; `line` and `column` are 1-based (0 when unknown)."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def _scalar(node: yaml.ScalarNode) -> object:
    tag = node.tag
    if tag == _STR:
        return node.value
    if tag == _BOOL:
        return node.value.lower() in _TRUE
    if tag == _NULL:
        return None
    # ints, floats, timestamps...: rare in these files, so the generic constructor is fine
    return _constructor.construct_object(node, deep=True)


def _build(node: yaml.Node, active: set[int]) -> object:
    """Plain data for `node`; `active` holds the collections being built (alias loops)."""
    if type(node) is _ScalarNode:
        return _scalar(node)
    if id(node) in active:  # `&a [*a]`: an alias inside its own anchor
        mark = node.start_mark
        raise YamlSyntaxError("invalid YAML: an alias refers to itself", mark.line + 1, 0)
    active.add(id(node))
    try:
        if type(node) is _SequenceNode:
            out_list = YamlList(_build(item, active) for item in node.value)
            out_list.lines = [item.start_mark.line + 1 for item in node.value]
            return out_list
        out = YamlMap(node.start_mark.line + 1)
        key_lines = out.key_lines
        for key_node, value_node in node.value:
            key = _build(key_node, active)
            if isinstance(key, (list, dict)):
                key = str(key)  # unhashable keys are an error later; keep them printable
            line = key_node.start_mark.line + 1
            if key in out:
                out.duplicates.append((key, line))
            out[key] = _build(value_node, active)
            key_lines[key] = line
        return out
    finally:
        active.discard(id(node))


def load_yaml(text: str) -> object:
    """Parse YAML text into dicts (`YamlMap`), lists and scalars; raise `YamlSyntaxError`."""
    try:
        node = yaml.compose(text, Loader=_Loader)
        return None if node is None else _build(node, set())
    except yaml.MarkedYAMLError as exc:  # syntax, or a tag such as `!x` with no constructor
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        column = mark.column + 1 if mark is not None else 0
        problem = exc.problem or exc.context or "invalid YAML"
        raise YamlSyntaxError(f"invalid YAML: {problem}", line, column) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(f"invalid YAML: {exc}", 0, 0) from None
    except RecursionError:
        raise YamlSyntaxError("invalid YAML: nested too deeply", 0, 0) from None
