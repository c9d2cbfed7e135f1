"""The kernel registry: `@native` records a Python function under its `__name__`.

A name under `dispatch:` in `native_functions.yaml` (`CPU: add_out`, `Meta: view_meta`,
`CompositeImplicitAutograd: matmul`) resolves to the function of that name decorated with
`@native` in any module of `pyaten.native.kernels`. Structured ops also resolve their meta
function here, by the name `meta_<functional name>[_<overload>]` (see docs/codegen.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# kernel name -> function; filled at import of pyaten.native.kernels, read by the loader.
NATIVE: dict[str, Callable[..., Any]] = {}
# kernel name -> `file:line` for functions made from a table row (see `native_at`).
_SITES: dict[str, str] = {}


def _site(fn: Callable[..., Any]) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return "<unknown>"
    return f"{code.co_filename}:{code.co_firstlineno}"


def native(fn: F) -> F:
    """Register `fn` as the kernel named `fn.__name__`; a second function of that name raises."""
    name = fn.__name__
    previous = NATIVE.get(name)
    if previous is not None and previous is not fn:
        raise RuntimeError(
            f"@native: kernel name '{name}' is registered twice: at {_site(previous)} "
            f"and at {_site(fn)}; kernel names must be unique across pyaten/native/kernels"
        )
    NATIVE[name] = fn
    return fn


def native_at(name: str, fn: Callable[..., Any], where: str) -> None:
    """Register a made function (a family row's meta or impl) under `name`, reported at
    `where` (the row's line) rather than at the code that made it."""
    fn.__name__ = name
    native(fn)
    _SITES[name] = where


def lookup(name: str) -> Callable[..., Any] | None:
    """The kernel registered under `name`, or None."""
    return NATIVE.get(name)


def site(name: str) -> str:
    """`file:line` where the kernel `name` is defined (for tracing and `pyaten codegen show`)."""
    fn = NATIVE.get(name)
    if fn is None:
        return "<missing>"
    if name in _SITES:
        return _SITES[name]
    try:
        return f"{_source_file(fn)}:{fn.__code__.co_firstlineno}"
    except (TypeError, AttributeError):
        return _site(fn)


# Source file by code filename: import asks for ~3,000 kernels' sites, from ~100 files.
_SOURCE_FILES: dict[str, str] = {}


def _source_file(fn: Callable[..., Any]) -> str | None:
    filename = fn.__code__.co_filename
    source = _SOURCE_FILES.get(filename)
    if source is None:
        source = inspect.getsourcefile(fn)
        if source == filename:  # a plain source file: the answer depends only on its name
            _SOURCE_FILES[filename] = source
    return source
