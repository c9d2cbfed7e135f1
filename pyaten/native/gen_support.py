"""The names a generated module imports: everything its wrappers and bindings call.

Kept in one place so the generated source reads plainly (`bind_and_call(B_add, args, kwargs)`)
and a change of runtime API touches the generator's header and this file only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from types import FunctionType
from typing import Any

import numpy as np

from pyaten.core import torch_function as TF  # noqa: N812 - read as a constant in generated code
from pyaten.core.device import CPU as _CPU
from pyaten.core.device import as_device
from pyaten.core.dtypes import dtype as DType
from pyaten.core.dtypes import float32 as _float32
from pyaten.core.tensor import Size
from pyaten.core.torch_function import TorchFunctionNotImplemented
from pyaten.dispatch import trace as TRACE  # noqa: N812 - read as a constant in generated code
from pyaten.dispatch.keys import full_after
from pyaten.dispatch.tls import DEFAULT_INCLUDED, DEFAULT_KEEP, NONDEFAULT
from pyaten.dispatch.tls import STATE as TLS
from pyaten.native.arg_parser import (
    ArgumentParseError,
    ParsedSignature,
    raise_no_match,
    value_type_name,
)
from pyaten.native.registry import NATIVE as K
from pyaten.native.runtime import Tensor, empty_tensor, wrapped_number
from pyaten.native.structured import StructuredMeta, TensorIteratorMeta, resize_output

__all__ = [
    "TF",
    "TorchFunctionNotImplemented",
    "TRACE",
    "Tensor",
    "TensorIteratorMeta",
    "StructuredMeta",
    "ArgumentParseError",
    "Binding",
    "bind_and_call",
    "copy_to_out",
    "wrapped_number",
    "CLONE",
    "K",
    "DType",
    "Size",
    "Direct",
    "NONDEFAULT",
    "PLAIN_CPU",
    "set_direct_calls",
    "plain_list",
    "direct_positional",
]


# Note: the direct call
#     The commonest call of an operator is its binding's positional fast path with plain CPU
#     tensors: the exact `Tensor` class, the key set of a dense CPU tensor (no Python key, no
#     conjugate/negative/zero bit, no other layout or backend), no input that requires grad
#     or carries a forward-mode tangent, every thread in the default thread-local key sets (no
#     mode, autocast, no_grad, vmap... : `NONDEFAULT` is empty) and no torch-function mode or
#     trace (`TF.ACTIVE`, tested first by the binding). The dispatcher would then compute
#     that key set, find the AutogradCPU kernel, which passes the call below (no input
#     requires grad), to the structured CPU wrapper, which calls its fast function (Note: the
#     structured fast path). The binding calls that fast function itself: one Python frame
#     instead of four. Which function is the operator's dispatcher's own answer: a `Direct`
#     per operator remembers the dispatcher's cached kernel for the plain CPU key set and the
#     function found behind it (below an `ag_` kernel of the generated autograd module: the
#     fast function of a `wrapper_CPU_<op>`, or the CPU kernel itself; for a composite, the
#     composite). A registration that changes the operator's kernels clears the dispatcher's
#     cache, so the binding sees another object and checks again (a user's kernel is then
#     what it finds and calls, as the dispatcher would). Anything else (a mutable or view
#     schema, a boxed fallback, a kernel given the key set, or a fast function declining
#     with None) takes the dispatcher's path.
#     `tests/test_fastpath.py` compares the direct calls with the dispatcher's path, with
#     modes, subclasses, grad and overriding kernels.
PLAIN_CPU: int = empty_tensor((0,), _float32, _CPU)._keyset  # a dense CPU tensor's key set
PLAIN_KEY: int = (PLAIN_CPU | DEFAULT_INCLUDED) & DEFAULT_KEEP  # the dispatcher's cache key


_UNCHECKED = object()  # a `checked` that no cached kernel is: the next call checks again
_DIRECT: list[Direct] = []  # every Direct, for set_direct_calls
# PYATEN_NO_DIRECT_CALL=1 turns the direct calls off (the dispatcher's path is the reference)
_DIRECT_ON = [os.environ.get("PYATEN_NO_DIRECT_CALL", "") in ("", "0")]


def set_direct_calls(enabled: bool) -> bool:
    """Turn the bindings' direct calls on or off (Note: the direct call); returns the previous
    setting. Results are the same either way; benchmarks compare the two."""
    previous = _DIRECT_ON[0]
    _DIRECT_ON[0] = bool(enabled)
    for direct in _DIRECT:
        direct.fast = None
        direct.checked = _UNCHECKED
    return previous


class Direct:
    """The binding's direct call of one operator (Note: the direct call): `checked` is the
    dispatcher's cached kernel for the plain CPU key set when `fast` was derived from it."""

    __slots__ = ("checked", "fast")

    def __init__(self) -> None:
        self.checked: Any = _UNCHECKED
        self.fast: Callable[..., Any] | None = None
        _DIRECT.append(self)

    def check(self, entry: Any) -> Callable[..., Any] | None:
        """The fast function behind `entry`'s cached kernel for the plain CPU key set, or None
        (then the binding calls the dispatcher)."""
        kernel = entry._cache.get(PLAIN_KEY)
        self.fast = None  # before `checked`: a reader that sees the new `checked` sees this
        self.checked = kernel
        fast = _fast_behind(entry, kernel) if _DIRECT_ON[0] else None
        self.fast = fast
        return fast


def _fast_behind(entry: Any, kernel: Any) -> Callable[..., Any] | None:
    """What the dispatcher would end up calling for plain CPU tensors that need no grad: the
    kernel below the generated autograd kernel (or the kernel itself, for a composite or an
    operator whose autograd key falls through), and for a structured CPU wrapper its fast
    function; None for anything else."""
    if kernel is None:
        return None
    schema = entry.schema
    if schema is None or any(a.is_write for a in schema.arguments) or schema.is_view:
        return None  # in-place, out= and view operators keep the dispatcher's path
    below = kernel
    if kernel.__class__ is partial:
        # the generated autograd kernel: with no input requiring grad it calls `below` only
        if (kernel.keywords or len(kernel.args) != 1 or not kernel.func.__name__.startswith("ag_")
                or not kernel.func.__module__.startswith("pyaten._generated.autograd")):
            return None
        below = kernel.args[0]
    if below.__class__ is not FunctionType:
        return None  # a boxed fallback, a kernel given the key set: the dispatcher's path
    name = below.__name__
    if name.startswith("wrapper_CPU_") and below.__module__.startswith("pyaten._generated"):
        fast = below.__globals__.get(f"fast_{name}")
        if fast is not None:
            return fast
    return below  # functional, returning tensors: never None, the direct call's "declined"


def plain_list(tensors: Any) -> bool:
    """Whether a `Tensor[]` argument (a list or tuple) holds only plain CPU tensors (Note: the
    direct call): what `cat([a, b])` tests before calling its fast function."""
    if tensors.__class__ is not list and tensors.__class__ is not tuple:
        return False
    for t in tensors:
        if (t.__class__ is not Tensor or t._keyset != PLAIN_CPU or t._requires_grad
                or t._fw_grad is not None):
            return False
    return True


Direct.plain_list = staticmethod(plain_list)  # where generated bindings read it


class _NoVmap:
    """The class no argument has: `Direct.vmap_class` while vmap's route is off."""


# Note: vmap's binding route
#     A binding whose first argument is a `BatchedTensor` (pyaten/func/_batched.py) hands the
#     call, with the values it would give the dispatcher, to `Direct.vmap_route(entry,
#     values)` (pyaten/func/_key.py, Note: the binding route) just before `entry.call`; the
#     route answers NotImplemented unless the dispatcher would run vmap's fast entry, and
#     the binding then calls the dispatcher. pyaten.func sets both attributes when imported
#     (until then no argument's class is `_NoVmap`).
Direct.vmap_class = _NoVmap
Direct.vmap_route = None


# Note: the direct call of a composite
#     A composite kernel calls the operators it is made of positionally through
#     `aten_ops().<name>.<overload>(...)` (`sum()` calls `sum.dim_IntList`, `softmax.int`
#     calls `_softmax`, `linear` calls `addmm`), and each such call would go through the
#     dispatcher, the autograd kernel and the CPU wrapper again. When the direct call's
#     conditions hold (no trace or torch-function mode, `NONDEFAULT` empty, every tensor
#     argument plain) the handle calls what the dispatcher would end up calling, found by a
#     `Direct` exactly as a binding finds it; anything else goes to `OpOverload.call_positional`.
#     Below an autograd kernel (a call recording a graph) `NONDEFAULT` is not empty, so those
#     calls keep the dispatcher's path. `direct_positional` builds one small function per
#     operator, its source shared by every operator of the same argument shape.
_POSITIONAL_CODE: dict[str, Any] = {}


def direct_positional(handle: Any) -> Callable[..., Any]:
    """The kernels' call of `handle` (an `OpOverload`): its `call_positional` with the direct
    call in front (Note: the direct call of a composite), or `call_positional` itself for an
    operator the direct call can never apply to (in-place, `out=`, views, no tensors)."""
    positional = handle.call_positional
    entry = handle._entry
    schema = entry.schema
    if schema is None or schema.is_view or any(a.is_write for a in schema.arguments):
        return positional
    gate: list[str] = []  # exact tensors: `call_positional` would call `entry.call(*args)`
    tests: list[str] = []  # and plain ones: the direct call
    for i, kind in entry._positions:
        if kind == "list":
            tests.append(f"plain_list(a{i})")
            continue
        exact = f"a{i}.__class__ is Tensor"
        test = f"a{i}._keyset == PLAIN_CPU and not a{i}._requires_grad and a{i}._fw_grad is None"
        if kind == "tensor":
            gate.append(exact)
            tests.append(test)
        else:
            gate.append(f"(a{i} is None or {exact})")
            tests.append(f"(a{i} is None or {test})")
    if not tests:
        return positional
    n = len(schema.arguments)
    names = "".join(f"a{i}, " for i in range(n))
    source = "\n".join([
        "def call(*args, **kwargs):",
        f"    if len(args) == {n} and not kwargs:",
        f"        {names}= args",
        f"        if {' and '.join(gate) or 'True'}:",
        f"            if not NONDEFAULT and not TF.ACTIVE and {' and '.join(tests)}:",
        "                fast = direct.fast if cache.get(PLAIN_KEY) is direct.checked else "
        "direct.check(entry)",
        "                if fast is not None:",
        "                    result = fast(*args)",
        "                    if result is not None:",
        "                        return result",
        "            return entry.call(*args)",
        "    return positional(*args, **kwargs)",
    ])
    code = _POSITIONAL_CODE.get(source)
    if code is None:
        code = _POSITIONAL_CODE[source] = compile(source, "<pyaten direct call>", "exec")
    namespace: dict[str, Any] = {
        "NONDEFAULT": NONDEFAULT, "TF": TF, "Tensor": Tensor, "PLAIN_CPU": PLAIN_CPU,
        "PLAIN_KEY": PLAIN_KEY, "plain_list": plain_list, "direct": Direct(),
        "cache": entry._cache, "entry": entry, "positional": positional,
    }
    exec(code, namespace)  # noqa: S102 - source built above from the schema
    call = namespace["call"]
    call.__qualname__ = call.__name__ = f"direct_{entry.name.replace('::', '_')}"
    call.__self__ = handle  # as `call_positional`'s: `aten_entry` and nested read the handle
    return call


class Binding:
    """The parsed signatures of one Python name, in the order they are tried.

    `signatures` may be given as a function that builds them: they are then built on the
    first call that needs the parser (fast paths never do), which keeps `import pyaten` short.
    """

    __slots__ = ("name", "method", "_signatures", "_build")

    def __init__(
        self,
        name: str,
        method: bool,
        signatures: Sequence[ParsedSignature] | Callable[[], Sequence[ParsedSignature]],
    ) -> None:
        self.name = name
        self.method = method
        if callable(signatures):
            self._signatures: tuple[ParsedSignature, ...] | None = None
            self._build = signatures
        else:
            self._signatures = tuple(signatures)
            self._build = None

    @property
    def signatures(self) -> tuple[ParsedSignature, ...]:
        found = self._signatures
        if found is None:
            found = self._signatures = tuple(self._build())
        return found

    def default(self, index: int, param: int) -> Any:
        """Parameter `param`'s default in signature `index`, as the kernel takes it
        (`memory_format=contiguous_format`): for fast paths where it has no literal."""
        return self.signatures[index].params[param].default

    def named(self, index: int) -> type:
        """The named tuple type signature `index` wraps its results in (`values, indices`):
        what a fast path for it returns, as the parser's call does."""
        return self.signatures[index].functional_tuple

    def __repr__(self) -> str:
        kind = "method" if self.method else "function"
        return f"<binding {kind} {self.name}>"


def bind_and_call(
    binding: Binding, args: tuple, kwargs: dict[str, Any], self_tensor: Any = None,
    public: Callable[..., Any] | None = None,
) -> Any:
    """Match the call against each signature in order and run the first that accepts it;
    first, when an argument overloads `__torch_function__` or a mode is pushed, hand the call
    of `public` (the binding, as `pyaten.add` or `Tensor.add`) to the handlers."""
    if public is not None and _overloads(self_tensor, args, kwargs):
        values = args if self_tensor is None else (self_tensor, *args)
        overloaded = TF.overloaded_args(values + tuple(kwargs.values()) if kwargs else values)
        return TF.dispatch(public, overloaded, values, kwargs or None, c_style=True)
    rejected: list[tuple[str, str]] | None = [] if TRACE.ACTIVE else None
    signatures = binding._signatures
    if signatures is None:
        signatures = binding.signatures
    for sig in signatures:
        values = sig.match(args, kwargs)
        if values.__class__ is str:
            if rejected is not None:
                rejected.append((sig.text, values))
            continue
        if rejected is not None:
            return _traced_call(binding, sig, values, rejected, self_tensor)
        return sig.call(values, self_tensor)
    raise_no_match(binding.name, signatures, args, kwargs)
    raise AssertionError("unreachable")


def _overloads(self_tensor: Any, args: tuple, kwargs: dict[str, Any]) -> bool:
    """Whether a call goes to `__torch_function__`: the arguments of the usual classes are
    passed over with one test each (Note: the torch-function gate)."""
    plain = _PLAIN
    if self_tensor is not None and self_tensor.__class__ is not Tensor:
        return TF.wants_torch_function((self_tensor, *args, *kwargs.values()))
    for value in args:
        if value.__class__ not in plain:
            return TF.wants_torch_function((*args, *kwargs.values()))
    if kwargs:
        for value in kwargs.values():
            if value.__class__ not in plain:
                return TF.wants_torch_function(kwargs.values())
    return TF.ACTIVE and TF.wants_torch_function(())


_PLAIN = frozenset({Tensor, int, float, bool, type(None), str, DType})


def _describe(value: Any) -> str:
    if isinstance(value, Tensor):
        if value._wrapped_number:  # a Python number the binding wrapped: show the number
            number = value._numpy().item() if value._storage.data is not None else "?"
            return f"Tensor(wrapped number {number!r}, dtype={value._dtype})"
        layout = getattr(value, "layout", None)  # sparse and jagged tensors say which
        extra = f", layout={layout}" if layout is not None and layout.name != "strided" else ""
        return (f"Tensor(shape={list(value._sizes)}, dtype={value._dtype}, "
                f"device={value._device}{extra})")
    return f"{value_type_name(value)} {value!r}"


def _traced_call(binding, sig, values, rejected, self_tensor) -> Any:
    out = values[sig.out_index] if sig.out_index is not None else None
    chosen = sig.out_name if out is not None else sig.functional_name
    bound = {p.name: _describe(v) for p, v in zip(sig.params, values)}
    if self_tensor is not None:
        bound = {"self": _describe(self_tensor), **bound}
    note = {
        "kind": "binding",
        "python_name": ("Tensor." if binding.method else "pyaten.") + binding.name,
        "overload": chosen,
        "signature": sig.text,
        "arguments": bound,
        "rejected": [{"signature": text, "why": why} for text, why in rejected],
    }
    TRACE.note_next(**note)
    try:
        return sig.call(values, self_tensor)
    finally:
        TRACE.clear_next()


_AFTER_BACKEND_SELECT = full_after("BackendSelect").raw


def backend_select_keys(device: Any, tensors: tuple = ()) -> int:
    """The key set a factory's BackendSelect kernel redispatches with: the backend of its
    `device` argument (None: CPU), joined with its tensor arguments' keys and the thread's
    included/excluded sets when it has any, masked to the keys below BackendSelect."""
    raw = as_device(device)._keyset
    if not tensors:
        return raw & _AFTER_BACKEND_SELECT  # the backend only (a tensor's autograd keys go)
    for t in tensors:
        if t is not None:
            raw |= t._keyset
    return (raw | TLS.included) & TLS.keep & _AFTER_BACKEND_SELECT


def copy_to_out(result: Tensor, out: Tensor, op_name: str) -> Tensor:
    """Autogen out kernels: resize `out` to the result and copy into it (same dtype)."""
    if out._dtype is not result._dtype:
        # as PyTorch's generated out kernels: no casting into `out`
        raise RuntimeError(
            f"Expected out tensor to have dtype {result._dtype.cpp_name}, but got "
            f"{out._dtype.cpp_name} instead"
        )
    resize_output(out, tuple(result._sizes), op_name)
    if out._storage.data is not None and result._storage.data is not None:
        np.copyto(out._numpy(), result._numpy(), casting="unsafe")
    out._bump_version()
    return out


def CLONE(t: Tensor) -> Tensor:  # noqa: N802 - a constant-like helper in generated code
    """A contiguous copy of `t` (autogen kernels built from in-place ops run on it)."""
    copy = empty_tensor(tuple(t._sizes), t._dtype, t._device)
    if t._storage.data is not None:
        np.copyto(copy._numpy(), t._numpy())
    return copy
