"""Operator handles: `aten.add.Tensor` as an object that calls the dispatcher.

`pyaten.ops` publishes these (`pyaten.ops.aten.add.Tensor`, like `torch.ops`); kernels call
other operators through `aten_ops()` (composite kernels, like ATen's `at::_ops::add_Tensor::call`),
so every call still dispatches. They live in native, beside the argument parser they use, so
a kernel module imports them at its top: see Note: where operator handles live.

Note: where operator handles live
    A handle needs the dispatcher (to find the entry) and native's argument parser (to bind
    Python arguments by schema); kernels need handles. So handles sit in native, below the
    kernels, and `pyaten.ops` (above native in the import-linter contract) only re-exports
    them. Before, kernels reached `pyaten.ops` through function-local imports: a dependency
    on a higher layer that the contract could not see.

- `ops.<ns>` is a namespace; `ops.<ns>.<name>` an `OpOverloadPacket` (callable: it picks the
  overload from the arguments; `.overloads()` lists them); `packet.<overload>` (`default` for
  the empty overload name) an `OpOverload` with `_schema`, `name()`, `redispatch(keyset,
  ...)`, callable with positional or keyword arguments by schema name.
- Handles are looked up in the dispatcher when first used, so an operator defined at run time
  with `Library.define` has its handle (and its argument parsing) at once; handles of an
  operator that was deregistered stop resolving.
"""

from __future__ import annotations

import threading
from typing import Any

from pyaten.codegen.python_signature import PythonParam, PythonSignature, sort_signatures
from pyaten.dispatch.registry import DEFINITIONS, get_operator, list_operators
from pyaten.native.arg_parser import ParsedSignature
from pyaten.native.gen_support import Binding, Tensor, bind_and_call, direct_positional
from pyaten.schema.model import NO_DEFAULT, BaseType

__all__ = ["ops", "aten", "aten_ops", "aten_entry", "LazyEntry", "OpOverload",
           "OpOverloadPacket", "OpNamespace"]


def _signature_for(schema: Any) -> ParsedSignature:
    """A parser for one schema as torch.ops sees it: argument names as in the schema, numbers
    accepted for Tensor arguments, `out` as its own keyword."""
    params = tuple(
        PythonParam(a.name, a.type, a.kwarg_only or a.is_out, a.default, a.default_text, a.name)
        for a in schema.arguments
    )
    sig = PythonSignature(
        name=schema.name.name,
        method=False,
        functional=schema,
        out_variant=None,
        params=params,
        allow_numbers_as_tensors=True,
        has_requires_grad=False,
    )
    return ParsedSignature(sig)


class OpOverload:
    """One overload, e.g. `pyaten.ops.aten.add.Tensor`."""

    __slots__ = ("_qualified", "_entry", "_packet", "_overloadname", "_parser", "_nargs",
                 "_tensor_positions", "_npositional", "_nall", "_kwarg_names", "_mode_kernels",
                 "_kwarg_set", "_names", "_nrequired", "_raw_defaults_ok")

    def __init__(self, packet: OpOverloadPacket, overload: str, entry: Any) -> None:
        self._packet = packet
        self._overloadname = overload or "default"
        self._qualified = entry.name if hasattr(entry, "name") else str(entry)
        self._entry = entry
        self._parser: ParsedSignature | None = None
        self._mode_kernels: dict[type, Any] = {}
        arguments = entry.schema.arguments
        # Arguments after `*` (out= included) are keyword-only, as in torch.ops.
        self._npositional = sum(1 for a in arguments if not (a.kwarg_only or a.is_out))
        # The all-positional fast path only applies when no argument is keyword-only.
        self._nargs = len(arguments) if self._npositional == len(arguments) else -1
        self._nall = len(arguments)
        self._kwarg_names = tuple(a.name for a in arguments[self._npositional:])
        self._kwarg_set = frozenset(self._kwarg_names)
        self._names = tuple(a.name for a in arguments)
        self._nrequired = 0  # leading positional arguments without a default
        while (self._nrequired < self._npositional
               and arguments[self._nrequired].default is NO_DEFAULT):
            self._nrequired += 1
        # The entry fills missing arguments with the schema's raw defaults, which only the
        # parser converts (`int[2] padding=0`, `MemoryFormat ...=contiguous_format`,
        # `int reduction=Mean`): bind through the entry only where none needs that.
        self._raw_defaults_ok = not any(
            (a.type.is_list() and a.default is not None and a.default is not NO_DEFAULT)
            or (isinstance(a.default, str) and str(a.type) not in ("str", "str?"))
            for a in arguments
        )
        # Positions that must already be tensors for the fast path (numbers get wrapped).
        self._tensor_positions = tuple(
            i for i, a in enumerate(entry.schema.arguments)
            if isinstance(a.type, BaseType) and a.type.name == "Tensor"
        )

    @property
    def _schema(self) -> Any:
        return self._entry.schema

    @property
    def overloadpacket(self) -> OpOverloadPacket:
        return self._packet

    def name(self) -> str:
        """`aten::add.Tensor` (`aten::exp` for a default overload)."""
        return str(self._entry.schema.name.qualified) if hasattr(
            self._entry.schema.name, "qualified") else self._qualified

    def _parse(self) -> ParsedSignature:
        parser = self._parser
        if parser is None:
            parser = self._parser = _signature_for(self._entry.schema)
            parser.functional_entry = self._entry
        return parser

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and len(args) == self._nargs:
            for i in self._tensor_positions:
                if not isinstance(args[i], Tensor):
                    break
            else:
                return self._entry.call(*args)  # already in schema order: the fast path
        n = len(args)
        if self._nrequired <= n <= self._npositional and self._raw_defaults_ok and (
            not kwargs or self._kwarg_set.issuperset(kwargs)
        ):
            # Trailing defaults and keyword-only arguments, every tensor given as a tensor (a
            # `__torch_dispatch__` handler's `func(*args, **kwargs)`): the entry binds them.
            for i in self._tensor_positions:
                value = args[i] if i < n else kwargs.get(self._names[i], Tensor)
                if not isinstance(value, Tensor) and value is not Tensor:
                    break
            else:
                return self._entry.call(*args, **kwargs)
        if len(args) > self._npositional:
            schema = self._entry.schema
            ns = schema.name.namespace or self._qualified.partition("::")[0]
            declaration = str(schema) if schema.name.namespace else f"{ns}::{schema}"
            raise RuntimeError(
                f"{ns}::{schema.name.name}() takes {self._npositional} positional argument(s) "
                f"but {len(args)} was/were given.  Declaration: {declaration}"
            )
        parser = self._parse()
        values = parser.match(args, kwargs)
        if values.__class__ is str:
            raise RuntimeError(f"{self.name()}(): {values}")
        return self._entry.call(*values)

    def call_positional(self, *args: Any, **kwargs: Any) -> Any:
        """The call kernels make, like ATen's C++ API: every argument may be positional in
        schema order, keyword-only ones (`alpha`, `out`) included."""
        if not kwargs and len(args) == self._nall:
            for i in self._tensor_positions:
                if not isinstance(args[i], Tensor):
                    break
            else:
                return self._entry.call(*args)
        npos = self._npositional
        if len(args) > npos:
            kwargs.update(zip(self._kwarg_names, args[npos:]))
            args = args[:npos]
        return self(*args, **kwargs)

    def redispatch(self, keyset: Any, *args: Any, **kwargs: Any) -> Any:
        """Call the kernel for `keyset` as is (below the current key)."""
        return self._entry.redispatch(keyset, *args, **kwargs)

    # -- what `__torch_dispatch__` handlers read (PyTorch's torch._ops.OpOverload) -----------

    @property
    def namespace(self) -> str:
        return self._packet._ns

    @property
    def __name__(self) -> str:  # noqa: PLW3201 - PyTorch's attribute name
        """`add.Tensor` (`exp.default`)."""
        return f"{self._packet._name}.{self._overloadname}"

    @property
    def _opname(self) -> str:
        return self._packet._name

    @property
    def tags(self) -> tuple[str, ...]:
        """The operator's tags from native_functions.yaml (`pointwise`, `core`, ...)."""
        return tuple(self._entry.tags)

    @property
    def is_view(self) -> bool:
        """Whether the first return aliases an input without writing it (`Tensor(a)`)."""
        returns = self._entry.schema.returns
        alias = returns[0].annotation if returns else None
        return alias is not None and not alias.is_write

    def decompose(self, *args: Any, **kwargs: Any) -> Any:
        """Run the operator's CompositeImplicitAutograd kernel, or return NotImplemented when
        it has none (as PyTorch's `OpOverload.decompose`)."""
        for key, kernel in self._entry.active_kernels().items():
            if key.name == "CompositeImplicitAutograd" and not kernel.fallthrough:
                values = self._parse().match(args, kwargs)
                if values.__class__ is str:
                    raise RuntimeError(f"{self.name()}(): {values}")
                return kernel.fn(*values)
        return NotImplemented

    def py_impl(self, k: Any) -> Any:
        """Decorator registering a Python kernel for this operator: for a TorchDispatchMode
        subclass, `fn(mode, *args, **kwargs)` runs instead of that mode's
        `__torch_dispatch__` for this operator; for a dispatch key name (`"Python"`, `"CPU"`,
        `"CompositeImplicitAutograd"`...), `fn(*args)` is registered on that key as
        `Library.impl` does."""

        def register(fn: Any) -> Any:
            if isinstance(k, type):
                self._mode_kernels[k] = fn
            else:
                _py_impl_library(self._packet._ns).impl(
                    self._entry.schema_name, fn, str(getattr(k, "name", k)),
                    allow_override=True,
                )
            return fn

        return register

    def mode_kernel(self, mode_class: type) -> Any:
        """The `py_impl` kernel registered for `mode_class` (or a base of it), or None."""
        kernels = self._mode_kernels
        if kernels:
            for cls in mode_class.__mro__:
                fn = kernels.get(cls)
                if fn is not None:
                    return fn
        return None

    def __repr__(self) -> str:
        return f"<OpOverload(op='{self._packet._ns}.{self._packet._name}', " \
               f"overload='{self._overloadname}')>"

    def __str__(self) -> str:
        """`aten.add.Tensor`, as PyTorch prints an overload (its `name()` is `aten::add.Tensor`)."""
        return f"{self._packet._ns}.{self._packet._name}.{self._overloadname}"


_PY_IMPL_LIBRARIES: dict[str, Any] = {}


def _py_impl_library(ns: str) -> Any:
    """The Library that keeps `py_impl` registrations of namespace `ns` alive."""
    lib = _PY_IMPL_LIBRARIES.get(ns)
    if lib is None:
        from pyaten.library import Library

        lib = _PY_IMPL_LIBRARIES[ns] = Library(ns, "IMPL")
    return lib


class OpOverloadPacket:
    """All overloads of one name, e.g. `pyaten.ops.aten.add`."""

    __slots__ = ("_ns", "_name", "_qualified", "_overloads", "_binding", "_lock", "__dict__")

    def __init__(self, ns: str, name: str) -> None:
        self._ns = ns
        self._name = name
        self._qualified = f"{ns}::{name}"
        self._overloads: dict[str, OpOverload] = {}
        self._binding: tuple[int, Binding] | None = None
        self._lock = threading.Lock()

    def overloads(self) -> list[str]:
        """Overload names (`default` for the empty one), in the order of their names."""
        return list(_overload_index(self._ns).get(self._qualified, ()))

    def __getattr__(self, overload: str) -> OpOverload:
        if overload.startswith("__"):
            raise AttributeError(overload)
        cached = self._overloads.get(overload)
        if cached is not None and get_operator(cached._entry.name) is cached._entry:
            return cached
        real = "" if overload == "default" else overload
        qualified = f"{self._qualified}.{real}" if real else self._qualified
        entry = get_operator(qualified)
        if entry is None or entry.schema is None:
            raise AttributeError(
                f"The underlying op of '{self._qualified}' has no overload name '{overload}'"
            )
        handle = OpOverload(self, real, entry)
        self._overloads[overload] = handle
        return handle

    def _current_binding(self) -> Binding:
        cached = self._binding
        generation = DEFINITIONS[0]
        if cached is not None and cached[0] == generation:
            return cached[1]
        names = tuple(self.overloads())
        parsers = {id(p.signature): p for p in (getattr(self, o)._parse() for o in names)}
        # Tensor before Scalar, as the Python bindings order them (Note: overload order).
        ordered = sort_signatures([p.signature for p in parsers.values()])
        binding = Binding(self._name, False, [parsers[id(sig)] for sig in ordered])
        self._binding = (generation, binding)
        return binding

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Pick the first overload whose schema accepts the arguments, and call it."""
        binding = self._current_binding()
        try:
            return bind_and_call(binding, args, kwargs)
        except TypeError as error:
            raise RuntimeError(f"{self._qualified}: {error}") from None

    @property
    def __name__(self) -> str:  # noqa: PLW3201 - PyTorch's attribute name
        return self._name

    @property
    def _schemas(self) -> dict[str, Any]:
        return {o: getattr(self, o)._schema for o in self.overloads()}

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='{self._ns}.{self._name}')>"

    def __str__(self) -> str:
        """`aten.add`, as PyTorch prints a packet."""
        return f"{self._ns}.{self._name}"


# namespace -> (DEFINITIONS generation, {"ns::name": (overload names, sorted)}): one scan
# of the operator table per namespace and generation, not one per new name looked up
_OVERLOADS: dict[str, tuple[int, dict[str, tuple[str, ...]]]] = {}


def _overload_index(namespace: str) -> dict[str, tuple[str, ...]]:
    generation = DEFINITIONS[0]
    cached = _OVERLOADS.get(namespace)
    if cached is not None and cached[0] == generation:
        return cached[1]
    index: dict[str, list[str]] = {}
    for qualified in list_operators(namespace):
        base, _, overload = qualified.partition(".")
        index.setdefault(base, []).append(overload or "default")
    frozen = {base: tuple(names) for base, names in index.items()}
    _OVERLOADS[namespace] = (generation, frozen)
    return frozen


class OpNamespace:
    """`pyaten.ops.<ns>`: packets by operator name."""

    def __init__(self, name: str) -> None:
        self._ns_name = name
        self._packets: dict[str, OpOverloadPacket] = {}

    def __getattr__(self, name: str) -> OpOverloadPacket:
        if name in ("__origin__", "__self__"):
            raise AttributeError(name)  # typing/inspect probes; operators like __lshift__ pass
        packet = self._packets.get(name)
        if packet is None:
            if f"{self._ns_name}::{name}" not in _overload_index(self._ns_name):
                raise AttributeError(
                    f"'_OpNamespace' '{self._ns_name}' object has no attribute '{name}'"
                )
            packet = OpOverloadPacket(self._ns_name, name)
            self._packets[name] = packet
        return packet

    def __repr__(self) -> str:
        return f"<OpNamespace '{self._ns_name}'>"


class _Ops:
    """`pyaten.ops`: namespaces by name (`aten`, or any namespace a Library defined)."""

    def __init__(self) -> None:
        self._namespaces: dict[str, OpNamespace] = {}

    def __getattr__(self, name: str) -> OpNamespace:
        if name.startswith("__"):
            raise AttributeError(name)
        ns = self._namespaces.get(name)
        if ns is None:
            ns = self._namespaces[name] = OpNamespace(name)
        return ns


ops = _Ops()
aten = ops.aten


# ---- the kernels' view: `aten_ops().add.Tensor(a, b, 1)` ---------------------------------


class _OverloadHandles:
    """One operator's overload handles, each looked up once and then kept as an attribute."""

    def __init__(self, packet: OpOverloadPacket) -> None:
        self._packet = packet

    def __getattr__(self, overload: str) -> Any:
        # Kernels call like ATen's C++ API: keyword-only arguments positionally too.
        handle = direct_positional(getattr(self._packet, overload))
        setattr(self, overload, handle)
        return handle


class _OpHandles:
    """`aten` with every `name.overload` resolved once (the per-call path)."""

    def __getattr__(self, name: str) -> _OverloadHandles:
        handles = _OverloadHandles(getattr(aten, name))
        setattr(self, name, handles)
        return handles


_HANDLES = _OpHandles()


def aten_ops() -> _OpHandles:
    """The `aten` operators for composite kernels, called positionally in schema order
    (`aten_ops().clone.default(t, None)`); every call still dispatches."""
    return _HANDLES


def aten_entry(name: str, overload: str = "default") -> Any:
    """The operator entry of `aten::name.overload`, for the hot paths of view kernels and
    indexing: `entry.call(...)` with every argument positional in schema order, tensors where
    the schema has them, dispatches as the handle does without the handle's argument checks."""
    return getattr(getattr(_HANDLES, name), overload).__self__._entry


class LazyEntry:
    """`aten_entry(name, overload)` found on first use (kernel modules are imported before
    the operators are defined): `(handle.entry or handle.resolve()).call(...)`."""

    __slots__ = ("name", "overload", "entry")

    def __init__(self, name: str, overload: str = "default") -> None:
        self.name = name
        self.overload = overload
        self.entry: Any = None

    def resolve(self) -> Any:
        self.entry = aten_entry(self.name, self.overload)
        return self.entry
