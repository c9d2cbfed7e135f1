"""`pyaten.library`: define operators and register kernels, as `torch.library` does.

    lib = Library("myops", "DEF")
    lib.define("scale(Tensor x, float s) -> Tensor")

    @lib.impl("scale", dispatch_key="CPU")
    def scale_cpu(x, s): ...

Kinds: DEF claims a namespace (one live DEF per namespace) and may define and impl;
FRAGMENT may define and impl without claiming; IMPL may only impl, and on the wildcard
namespace "_" register fallbacks for every operator. Everything a Library registered is
removed by `close()`, on `with` exit, or when the Library is garbage collected; removing a
kernel restores the one it overrode.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from pyaten.dispatch import registry
from pyaten.dispatch.keys import DispatchKey, parse_dispatch_key
from pyaten.schema import parse

__all__ = ["Library", "define", "fallthrough_kernel"]

_RESERVED_NAMESPACES = ("prim",)
_BLOCK_NAME = {"DEF": "TORCH_LIBRARY", "FRAGMENT": "TORCH_LIBRARY_FRAGMENT",
               "IMPL": "TORCH_LIBRARY_IMPL"}  # fmt: skip
_CATCH_ALL = "CompositeImplicitAutograd"

_LOCK = threading.Lock()
_DEF_CLAIMS: dict[str, str] = {}  # namespace -> debug text of the live DEF library
_PYTHON_IMPLS: set[str] = set()  # "ns/op/key" registered from Python (for allow_override)
_KEEP_ALIVE: list[Library] = []  # libraries of the functional `define`


def fallthrough_kernel(*args: Any, **kwargs: Any) -> Any:
    """Register this to make a key fall through to the next one; it never runs."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


def _release(handles: list[registry.RegistrationHandle], impls: set[str], claim: list[str]):
    # Undo in reverse order so that stacked kernels come off newest first.
    for handle in reversed(handles):
        handle.remove()
    handles.clear()
    with _LOCK:
        _PYTHON_IMPLS.difference_update(impls)
        impls.clear()
        if claim and _DEF_CLAIMS.get(claim[0]) == claim[1]:
            del _DEF_CLAIMS[claim[0]]
        claim.clear()


class Library:
    """A set of registrations in one namespace that lives and dies together."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("IMPL", "DEF", "FRAGMENT"):
            raise ValueError(f"Unsupported kind: {kind}")
        if ns in _RESERVED_NAMESPACES and kind in ("DEF", "FRAGMENT"):
            raise ValueError(
                f"{ns} is a reserved namespace. Please try creating a library with another name."
            )
        frame = sys._getframe(1)
        self.debug = f"registered at {frame.f_code.co_filename}:{frame.f_lineno}"
        self._where = f"(Error occurred while processing {_BLOCK_NAME[kind]} block at " + (
            self.debug[len("registered at ") :] + ")"
        )
        if ns == "_" and kind != "IMPL":
            if kind == "FRAGMENT":
                raise RuntimeError(
                    "TORCH_LIBRARY_FRAGMENT: cannot define TORCH_LIBRARY_FRAGMENT with the "
                    "wildcard namespace _ (every TORCH_LIBRARY_FRAGMENT defines operators for a "
                    "distinct namespace!) Did you mean to use TORCH_LIBRARY_IMPL instead?  "
                    + self._where
                )
            raise RuntimeError(
                "TORCH_LIBRARY: the wildcard namespace _ cannot be claimed by a DEF library; "
                "use Library('_', 'IMPL') to register fallbacks"
            )
        self._key: DispatchKey | None = parse_dispatch_key(dispatch_key) if dispatch_key else None
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._handles: list[registry.RegistrationHandle] = []
        self._impls: set[str] = set()
        self._claim: list[str] = []
        if kind == "DEF":
            with _LOCK:
                previous = _DEF_CLAIMS.get(ns)
                if previous is not None:
                    raise RuntimeError(
                        f"Only a single TORCH_LIBRARY can be used to register the namespace "
                        f"{ns}; please put all of your definitions in a single TORCH_LIBRARY "
                        "block.  If you were trying to specify implementations, consider using "
                        "TORCH_LIBRARY_IMPL (which can be duplicated).  If you really intended "
                        "to define operators for a single namespace in a distributed way, you "
                        "can use TORCH_LIBRARY_FRAGMENT to explicitly indicate this.  Previous "
                        f"registration of TORCH_LIBRARY was {previous}; latest registration was "
                        f"{self.debug}"
                    )
                _DEF_CLAIMS[ns] = self.debug
                self._claim[:] = [ns, self.debug]
        self._alive = True
        self._finalizer = weakref.finalize(self, _release, self._handles, self._impls, self._claim)

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    # -- lifetime ----------------------------------------------------------------------------

    def _check_alive(self) -> None:
        if not self._alive:
            raise AssertionError("Library object has been destroyed")

    def close(self) -> None:
        """Remove everything this library registered (idempotent)."""
        self._alive = False
        self._finalizer()

    _destroy = close  # torch.library's name

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- define ------------------------------------------------------------------------------

    def define(
        self, schema: str, alias_analysis: str = "", *, tags: Iterable[str] | str = ()
    ) -> str:
        """Define an operator from its full schema text; returns its name (no overload)."""
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        self._check_alive()
        head = schema.split("(", 1)[0].strip()
        if self.kind == "IMPL":
            raise RuntimeError(
                f'def("{head}"): Cannot define an operator inside of a TORCH_LIBRARY_IMPL '
                "block.  All def()s should be placed in the (unique) TORCH_LIBRARY block for "
                f"their namespace.  {self._where}"
            )
        if "(" not in schema:
            raise RuntimeError(
                "Tried to parse a function schema but only the operator name was given"
            )
        try:
            parsed = parse(schema, validate_rules=False)  # torch.library checks only the grammar
        except ValueError as exc:  # torch reports schema syntax errors as RuntimeError
            raise RuntimeError(str(exc)) from exc
        given_ns = parsed.name.namespace
        if given_ns and given_ns != self.ns:
            raise RuntimeError(
                f"Explicitly provided namespace ({given_ns}) in schema string does not match "
                f"namespace of enclosing {_BLOCK_NAME[self.kind]} block ({self.ns}).  Move this "
                "definition to the (unique) TORCH_LIBRARY block corresponding to this namespace "
                "(and consider deleting the namespace from your schema string.)  " + self._where
            )
        parsed = registry.with_namespace(parsed, self.ns)
        tag_tuple = (tags,) if isinstance(tags, str) else tuple(tags)
        self._handles.append(registry.define(parsed, debug=self.debug, tags=tag_tuple))
        return head.split(".", 1)[0]

    # -- impl --------------------------------------------------------------------------------

    def impl(
        self,
        op_name: Any,
        fn: Callable | None = None,
        dispatch_key: str = "",
        *,
        with_keyset: bool = False,
        allow_override: bool = True,
    ) -> Any:
        """Register `fn` for `op_name` under `dispatch_key` (usable as a decorator)."""
        if fn is None:

            def decorator(f: Callable) -> Callable:
                self.impl(op_name, f, dispatch_key, with_keyset=with_keyset,
                          allow_override=allow_override)  # fmt: skip
                return f

            return decorator
        if not callable(fn):
            raise TypeError(
                f"Input function is required to be a callable but found type {type(fn)}"
            )
        if dispatch_key == "":
            dispatch_key = self.dispatch_key
        name = self._resolve_op_name(op_name)
        impl_key = f"{self.ns}/{name.split('::')[-1]}/{dispatch_key}"
        if not allow_override and impl_key in _PYTHON_IMPLS:
            raise RuntimeError(
                "This is not allowed since there's already a kernel registered from python "
                f"overriding {name.split('::')[-1]}'s behavior for {dispatch_key} dispatch key "
                f"and {self.ns} namespace."
            )
        qualified = name if "::" in name else f"{self.ns}::{name}"
        if dispatch_key == "Meta":
            entry = registry.find_operator(qualified)
            if entry is None:
                # torch's CIA lookup fails for an operator it has never heard of.
                raise RuntimeError(f"operator {qualified} does not exist")
            if entry.kernels.get(registry.CATCH_ALL):
                raise RuntimeError(
                    f"We should not register a meta kernel directly to the operator '{name}', "
                    "because it has a CompositeImplicitAutograd kernel in core. Instead we should "
                    "let the operator decompose, and ensure that we have meta kernels for the "
                    "base ops that it decomposes into."
                )
        self._check_alive()
        key = parse_dispatch_key(dispatch_key or _CATCH_ALL)
        if key.value == 0:
            key = registry.CATCH_ALL  # nothing can target Undefined: it means catch-all
        if self._key is not None and key != self._key and self._key.value != 0:
            raise RuntimeError(
                f'impl("{name}", ...): Explicitly provided dispatch key ({key.name}) is '
                "inconsistent with the dispatch key of the enclosing TORCH_LIBRARY_IMPL block "
                f"({self._key.name}).  Please declare a separate TORCH_LIBRARY_IMPL block for "
                f"this dispatch key and move your impl() there.  {self._where}"
            )
        handle = registry.register_kernel(
            qualified,
            key,
            None if fn is fallthrough_kernel else fn,
            fallthrough=fn is fallthrough_kernel,
            with_keyset=with_keyset,
            debug=self.debug,
        )
        self._handles.append(handle)
        with _LOCK:
            _PYTHON_IMPLS.add(impl_key)
            self._impls.add(impl_key)
        return fn

    def _resolve_op_name(self, op_name: Any) -> str:
        if not isinstance(op_name, str):
            # An operator entry or handle: use its qualified name.
            qualified = getattr(op_name, "name", None)
            if callable(qualified):  # an OpOverload: `op.name()` is "ns::name.overload"
                qualified = qualified()
            if not isinstance(qualified, str):
                raise TypeError(
                    f"impl(): op_name must be a str or an operator, got {type(op_name).__name__}"
                )
            op_name = qualified
        if "::" in op_name:
            ns = op_name.split("::", 1)[0]
            if ns != self.ns:
                block = _BLOCK_NAME[self.kind]
                raise RuntimeError(
                    f'impl("{op_name}", ...): Explicitly provided namespace ({ns}) in operator '
                    f"name does not match namespace of enclosing {block} block ({self.ns}).  "
                    f"Move this definition to the {block} block corresponding to this "
                    "namespace (and consider deleting the namespace from your schema string.)  "
                    + self._where
                )
        return op_name

    # -- fallback ----------------------------------------------------------------------------

    def fallback(self, fn: Callable, dispatch_key: str = "", *, with_keyset: bool = False) -> None:
        """Register a boxed kernel `fn(op, keyset, *args)` for every operator on one key.

        `op` is the operator entry (its `.name`, `.schema`, `.redispatch`). `with_keyset` is
        accepted for torch.library compatibility; pyaten always passes the key set.
        """
        if dispatch_key == "":
            dispatch_key = self.dispatch_key
        if self.ns != "_":
            raise RuntimeError(
                "Fallback can only be registered using library fragment on the global "
                f'namespace "_" but it is {self.ns}'
            )
        if dispatch_key == "":
            raise AssertionError("dispatch_key must not be empty for fallback")
        self._check_alive()
        if not callable(fn):
            raise TypeError(
                f"Input function is required to be a callable but found type {type(fn)}"
            )
        key = parse_dispatch_key(dispatch_key)
        registry.register_fallback(
            key,
            None if fn is fallthrough_kernel else fn,
            fallthrough=fn is fallthrough_kernel,
            debug=self.debug,
            handles=self._handles,
        )


def define(qualname: str, schema: str, *, lib: Library | None = None, tags: Iterable[str] = ()):
    """`define("ns::name", "(Tensor x) -> Tensor")`: define in a FRAGMENT kept alive forever."""
    if "::" not in qualname:
        raise ValueError(f"define(qualname, schema): expected qualname 'ns::name', got {qualname}")
    if not schema.lstrip().startswith("("):
        raise ValueError(
            f"define(qualname, schema, ...): expected schema to look like e.g. "
            f'"(Tensor x) -> Tensor" but got "{schema}"'
        )
    ns, name = qualname.split("::", 1)
    if lib is None:
        lib = Library(ns, "FRAGMENT")
        _KEEP_ALIVE.append(lib)
    lib.define(name + schema, tags=tags)
