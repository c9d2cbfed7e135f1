"""`__torch_function__`'s state and rules: which arguments overload a call, in which order their
handlers run, the mode stack, and the switches that turn it off (PyTorch's
`torch/csrc/utils/disable_torch_function.cpp` and `python_arg_parser.cpp`, in Python).

The public names live at PyTorch's paths: `pyaten.overrides` (`handle_torch_function`,
`TorchFunctionMode`, ...) and `pyaten._C` (`DisableTorchFunctionSubclass`, ...).

Note: the torch-function gate
    A call on exact `Tensor`s with no mode pushed must cost what it cost before
    `__torch_function__` existed. The generated bindings' fast paths accept exact tensors first
    (one class comparison), then subclasses whose `__torch_function__` is
    `_disabled_torch_function_impl` (`nn.Parameter`) or any subclass while `TLS.state` says
    subclasses are off (inside `Tensor.__torch_function__`), and read one module word,
    `ACTIVE`, which is true while any thread has a `TorchFunctionMode` pushed or a dispatch
    trace records. Everything else reaches the
    general path (`bind_and_call`), which asks `overloaded_args` and hands the call to
    `dispatch`. The mode count is process-wide while the stack is per thread, so a mode in one
    thread only sends the other threads' calls down the (correct, slower) general path.
    Properties and the Python-level Tensor methods are routed the same way once a class with
    `__torch_function__` exists (`install_routes`): until then they cost nothing.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable
from types import FunctionType, ModuleType
from typing import Any

from pyaten.core.device import device as _device
from pyaten.core.dtypes import dtype as _dtype
from pyaten.core.tensor import Size, Tensor, _subclass_keyset
from pyaten.dispatch import python_key as _python_key
from pyaten.dispatch import trace as _trace

# The torch-function state of a thread (PyTorch's TorchFunctionDisabledState).
ENABLED, SUBCLASSES_DISABLED, ALL_DISABLED = 0, 1, 2

ACTIVE = False  # Note: the torch-function gate
_modes_pushed = 0  # modes on every thread's stack, for ACTIVE
_lock = threading.Lock()


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.state = ENABLED
        self.stack: list[Any] = []


_TLS = _ThreadState()
TLS = _TLS  # the fast paths read `TLS.state` (non-zero: subclasses' handlers are off)


def _update_gate() -> None:
    global ACTIVE
    ACTIVE = bool(_modes_pushed) or _trace.ACTIVE


_trace._ON_TOGGLE.append(_update_gate)


# --- the disabled implementation and the switches ----------------------------------------------


class _DisabledTorchFunctionImpl:
    """`torch._C._disabled_torch_function_impl`: a class whose `__torch_function__` is this
    object has none (`nn.Parameter`). Called, it runs `func` with subclasses disabled. Not a
    function, so that it does not bind as a method on the classes that hold it."""

    __slots__ = ()
    __name__ = "_disabled_torch_function_impl"
    __qualname__ = "_disabled_torch_function_impl"

    def __call__(self, func: Callable, types: Any, args: Iterable = (),
                 kwargs: dict | None = None) -> Any:
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"expected List or Tuple (got {type(args).__name__})")
        old = _TLS.state
        if old == ENABLED:
            _TLS.state = SUBCLASSES_DISABLED
        try:
            return func(*args, **(kwargs or {}))
        finally:
            _TLS.state = old

    def __repr__(self) -> str:
        return "<built-in function _disabled_torch_function_impl>"


_disabled_torch_function_impl = _DisabledTorchFunctionImpl()
DISABLED = _disabled_torch_function_impl  # the fast paths' name for it


class DisableTorchFunctionSubclass:
    """`with DisableTorchFunctionSubclass():` subclasses' handlers are skipped; modes still run."""

    __slots__ = ("_old",)

    def __enter__(self) -> None:
        self._old = old = _TLS.state
        if old == ENABLED:
            _TLS.state = SUBCLASSES_DISABLED

    def __exit__(self, *exc: object) -> None:
        _TLS.state = self._old


class DisableTorchFunction:
    """`with DisableTorchFunction():` neither subclasses' handlers nor modes run."""

    __slots__ = ("_old",)

    def __enter__(self) -> None:
        self._old = _TLS.state
        _TLS.state = ALL_DISABLED

    def __exit__(self, *exc: object) -> None:
        _TLS.state = self._old


def _is_torch_function_enabled() -> bool:
    return _TLS.state == ENABLED


def _is_torch_function_mode_enabled() -> bool:
    return bool(_TLS.stack) and _TLS.state != ALL_DISABLED


# --- the mode stack ------------------------------------------------------------------------------


def _push_on_torch_function_stack(mode: Any) -> None:
    install_routes()
    _push(mode)


def _push(mode: Any) -> None:
    global _modes_pushed
    _TLS.stack.append(mode)
    with _lock:
        _modes_pushed += 1
        _update_gate()


def _pop_torch_function_stack() -> Any:
    global _modes_pushed
    if not _TLS.stack:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = _TLS.stack.pop()
    with _lock:
        _modes_pushed -= 1
        _update_gate()
    return mode


def _len_torch_function_stack() -> int:
    return len(_TLS.stack)


def _get_function_stack_at(index: int) -> Any:
    return _TLS.stack[index]


# --- which arguments overload a call ------------------------------------------------------------

# Classes never asked for `__torch_function__` (PyTorch's is_basic_python_type, and Tensor),
# and the Tensor subclasses registered by `never_overloads` (a set, read by generated code).
_PLAIN = {
    Tensor, bool, int, float, complex, str, bytes, dict, set, frozenset, slice, type(None),
    type(Ellipsis), type(NotImplemented), ModuleType, Size, _dtype, _device,
}


_PLAIN_SETS: list[set[type]] = [_PLAIN]  # every such set, `never_overloads` adds to each
_NEVER_OVERLOADING: list[type] = []


def plain_classes(classes: set[type]) -> set[type]:
    """`classes` as a set of classes a layer's argument check passes over, kept up to date
    with the classes `never_overloads` registers (now and later)."""
    kept = set(classes) | set(_NEVER_OVERLOADING)
    _PLAIN_SETS.append(kept)
    return kept


def never_overloads(cls: type) -> None:
    """Register `cls`, a Tensor subclass whose own `__torch_function__` is the disabled one
    and stays so (vmap's BatchedTensor), among the classes the argument checks skip without
    looking its handler up: what `_has_handler` would answer, once instead of per call."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)
            and cls.__dict__.get("__torch_function__") is DISABLED):
        raise TypeError(f"never_overloads({cls!r}): not a Tensor subclass whose own "
                        "__torch_function__ is the disabled one")
    _NEVER_OVERLOADING.append(cls)
    for kept in _PLAIN_SETS:
        kept.add(cls)


def _has_handler(cls: type) -> bool:
    """`cls` defines a `__torch_function__` that is not the disabled one."""
    if cls in _PLAIN:
        return False
    handler = getattr(cls, "__torch_function__", None)
    return handler is not None and handler is not DISABLED


def overloaded_args(values: Iterable[Any]) -> list[Any]:
    """The arguments whose handlers run, in PyTorch's order: argument order, each class once,
    a subclass before its parents (NEP 18). Tuples and lists are looked into one level deep,
    as the parser looks into `Tensor[]` arguments and index tuples. Empty when subclasses'
    handlers are disabled on this thread."""
    if _TLS.state != ENABLED:
        return []
    found: list[Any] = []
    classes: list[type] = []
    for value in values:
        cls = value.__class__
        if cls is tuple or cls is list:
            for item in value:
                _add(item, found, classes)
        else:
            _add(value, found, classes)
    return found


def _add(value: Any, found: list[Any], classes: list[type]) -> None:
    cls = value.__class__
    if cls in _PLAIN or cls in classes or not _has_handler(cls):
        return
    at = len(found)
    for i, old in enumerate(classes):
        if issubclass(cls, old):
            at = i
            break
    found.insert(at, value)
    classes.insert(at, cls)


def wants_torch_function(values: Iterable[Any]) -> bool:
    """Whether a call on these arguments goes to `__torch_function__` (a mode is enabled or an
    argument overloads it): the test behind `has_torch_function`."""
    if ACTIVE and _TLS.stack and _TLS.state != ALL_DISABLED:
        return True
    for value in values:
        cls = value.__class__
        if cls is tuple or cls is list:
            if any(_has_handler(item.__class__) for item in value):
                return _TLS.state == ENABLED
        elif _has_handler(cls):
            return _TLS.state == ENABLED
    return False


# --- running the handlers ------------------------------------------------------------------------


class TorchFunctionNotImplemented(TypeError):
    """Every handler of a call returned NotImplemented (Python operators return NotImplemented
    on it, as PyTorch's do)."""


def dispatch(public_api: Callable, overloaded: list[Any], args: tuple,
             kwargs: dict | None, c_style: bool = False) -> Any:
    """Run the current mode's handler (with that mode popped), then each overloaded argument's,
    until one returns something other than NotImplemented. `c_style`: the error of PyTorch's
    generated bindings ("Multiple dispatch failed ..."), else that of its Python functions."""
    types = tuple([type(a) for a in overloaded])
    mode = None
    if _TLS.stack and _TLS.state != ALL_DISABLED:
        mode = _pop_torch_function_stack()
        try:
            result = mode.__torch_function__(public_api, types, args, kwargs)
        finally:
            _push(mode)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        handler = arg.__torch_function__
        if getattr(handler, "__self__", None) is arg:
            warnings.warn(
                "Defining your `__torch_function__` as a plain method is deprecated and will "
                "be an error in future, please define it as a classmethod.",
                UserWarning if c_style else DeprecationWarning,
                stacklevel=3,
            )
        result = handler(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    if c_style:
        lines = [f"  - mode object {mode!r}"] if mode is not None else []
        lines += [f"  - tensor subclass {t}" for t in types]
        raise TorchFunctionNotImplemented(
            f"Multiple dispatch failed for '{api_name(public_api)}'; all __torch_function__ "
            "handlers returned NotImplemented:\n\n" + "\n".join(lines) + "\n\nFor more "
            "information, try re-running with TORCH_LOGS=not_implemented"
        )
    message = (
        f"no implementation found for '{public_api.__module__}.{public_api.__name__}' on types "
        f"that implement __torch_function__: {list(types)}"
    )
    if mode is not None:
        message += f" nor in mode {mode}"
    raise TorchFunctionNotImplemented(message)


def api_name(func: Callable) -> str:
    """`pyaten.add`, `pyaten.Tensor.add`, `pyaten.Tensor.shape.__get__` (for messages)."""
    owner = getattr(func, "__self__", None)
    if isinstance(owner, property) and owner.fget is not None:
        return f"pyaten.Tensor.{owner.fget.__name__}.{func.__name__}"
    qualname = getattr(func, "__qualname__", getattr(func, "__name__", repr(func)))
    if qualname.startswith("Tensor."):
        return f"pyaten.{qualname}"
    return f"{getattr(func, '__module__', None) or 'pyaten'}.{qualname}"


def handle_torch_function(public_api: Callable, relevant_args: Iterable[Any], *args: Any,
                          **kwargs: Any) -> Any:
    """PyTorch's `handle_torch_function`: call the handlers of `relevant_args` (and the current
    mode's) for `public_api(*args, **kwargs)`."""
    return dispatch(public_api, overloaded_args(relevant_args), args, kwargs)


# --- properties and Python-level methods ---------------------------------------------------------
# Generated bindings test for overloads themselves; the properties and the methods written in
# Python are wrapped, once a class with `__torch_function__` or a mode exists (Note: the
# torch-function gate). What PyTorch does not route (`stride`, `new_*`, `__iter__`, ...) is left.

_NOT_ROUTED = frozenset({
    "stride", "new_empty", "new_empty_strided", "new_full", "new_ones", "new_zeros",
    "new_tensor", "as_subclass", "unflatten", "to_sparse", "__iter__", "__hash__", "__new__",
    "__init_subclass__", "__torch_function__", "__torch_dispatch__", "__dir__", "__delitem__",
    "__class_getitem__", "__getattr__", "__setattr__", "__init__", "__reduce__",
})
# Dunders PyTorch routes when pyaten writes them in Python (generated ones route themselves).
_ROUTED_DUNDERS = frozenset({
    "__getitem__", "__setitem__", "__len__", "__repr__", "__format__", "__bool__", "__float__",
    "__int__", "__index__", "__complex__", "__array__", "__contains__", "__deepcopy__",
    "__reduce_ex__", "__reversed__", "__setstate__", "__dlpack__", "__dlpack_device__",
    "__rsub__", "__rdiv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__ifloordiv__",
    "__rmod__", "__rpow__", "__rlshift__", "__rrshift__", "__rmatmul__", "__invert__",
    "__ilshift__", "__irshift__", "__iand__", "__ior__", "__ixor__", "__idiv__",
})
# Operators whose failure makes Python try the other operand, as PyTorch's do.
_OPERATORS = frozenset({
    "__rsub__", "__rdiv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__ifloordiv__",
    "__rmod__", "__rpow__", "__rlshift__", "__rrshift__", "__rmatmul__", "__ilshift__",
    "__irshift__", "__iand__", "__ior__", "__ixor__", "__idiv__",
})
# The Tensor methods PyTorch writes in Python (torch/_tensor.py): their failure reads as its
# Python `handle_torch_function`'s; the others' as its generated bindings'.
_PYTHON_WRITTEN = frozenset((
    "__array__ __contains__ __deepcopy__ __dlpack__ __dlpack_device__ __floordiv__ __format__ "
    "__len__ __rdiv__ __reduce_ex__ __repr__ __reversed__ __rfloordiv__ __rlshift__ "
    "__rmatmul__ __rmod__ __rpow__ __rrshift__ __rsub__ __rtruediv__ __setstate__ backward "
    "dim_order is_shared istft lu module_load norm register_hook "
    "register_post_accumulate_grad_hook resize resize_as share_memory_ split stft storage "
    "storage_type unique unique_consecutive"
).split())
_INDEXING = frozenset({"__getitem__", "__setitem__"})
_ROUTED_MARK = "__torch_function_routed__"
_scanned: dict[type, int] = {}  # class -> its attribute count when last wrapped


def _routable(name: str, value: Any) -> bool:
    if name in _NOT_ROUTED or (name.startswith("_") and name not in _ROUTED_DUNDERS):
        return False
    if isinstance(value, property):
        return value.fget is not None and not getattr(value.fget, _ROUTED_MARK, False)
    if not isinstance(value, FunctionType) or getattr(value, _ROUTED_MARK, False):
        return False
    return not (getattr(value, "__module__", None) or "").startswith("pyaten._generated")


def _route_method(name: str, fn: Callable) -> Callable:
    operator = name in _OPERATORS
    c_style = name not in _PYTHON_WRITTEN
    indexing = name in _INDEXING

    def routed(self: Any, *args: Any, **kwargs: Any) -> Any:
        # indexing also looks at the index (`plain[subclass_index]`), as PyTorch's does
        if self.__class__ is not Tensor or ACTIVE or indexing and _index_overloads(args):
            if wants_torch_function((self,) + args) or (
                kwargs and wants_torch_function(kwargs.values())
            ):
                overloaded = overloaded_args((self,) + args + tuple(kwargs.values()))
                try:
                    return dispatch(routed, overloaded, (self,) + args,
                                    (kwargs or None) if c_style else kwargs, c_style)
                except TorchFunctionNotImplemented:
                    if operator:
                        return NotImplemented
                    raise
        return fn(self, *args, **kwargs)

    routed.__name__ = name
    routed.__qualname__ = f"Tensor.{name}"
    routed.__module__ = "pyaten._tensor"
    routed.__doc__ = fn.__doc__
    routed.__wrapped__ = fn
    setattr(routed, _ROUTED_MARK, True)
    return routed


def _index_overloads(args: tuple) -> bool:
    """An index (or an element of an index tuple), or the value of `t[i] = v`, overloads."""
    for value in args:
        cls = value.__class__
        if cls is tuple:
            if any(item.__class__ not in _PLAIN and _has_handler(item.__class__)
                   for item in value):
                return True
        elif cls not in _PLAIN and _has_handler(cls):
            return True
    return False


def _route_property(prop: property) -> property:
    fget, fset, fdel = prop.fget, prop.fset, prop.fdel

    def get(self: Any) -> Any:
        if (self.__class__ is not Tensor or ACTIVE) and wants_torch_function((self,)):
            return dispatch(routed.__get__, overloaded_args((self,)), (self,), None, True)
        return fget(self)

    def set_(self: Any, value: Any) -> None:
        if (self.__class__ is not Tensor or ACTIVE) and wants_torch_function((self, value)):
            dispatch(routed.__set__, overloaded_args((self, value)), (self, value), None, True)
            return
        fset(self, value)

    def delete(self: Any) -> None:
        if (self.__class__ is not Tensor or ACTIVE) and wants_torch_function((self,)):
            dispatch(routed.__delete__, overloaded_args((self,)), (self,), None, True)
            return
        fdel(self)

    setattr(get, _ROUTED_MARK, True)
    get.__name__ = fget.__name__
    routed = property(get, set_ if fset else None, delete if fdel else None, prop.__doc__)
    return routed


def _route_iter(fn: Callable) -> Callable:
    """`iter(t)`: PyTorch does not route `__iter__` itself but iterates `t.unbind(0)`, so a
    subclass gets its own class back and modes see `dim` and `unbind`."""

    def __iter__(self: Any) -> Any:  # noqa: N807
        if self.__class__ is Tensor and not ACTIVE:
            return fn(self)
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    setattr(__iter__, _ROUTED_MARK, True)
    __iter__.__qualname__ = "Tensor.__iter__"
    return __iter__


def install_routes(cls: type = Tensor, again: bool = False) -> None:
    """Wrap `cls`'s properties and Python-level methods so that subclasses and modes see them;
    `again`: also those attached since the last call."""
    if not again and _scanned.get(cls) == len(vars(cls)):
        return
    with _lock:
        for name, value in list(vars(cls).items()):
            if name == "__iter__" and isinstance(value, FunctionType) and not getattr(
                value, _ROUTED_MARK, False
            ):
                setattr(cls, name, _route_iter(value))
            if not _routable(name, value):
                continue
            if isinstance(value, property):
                setattr(cls, name, _route_property(value))
            else:
                setattr(cls, name, _route_method(name, value))
        _scanned[cls] = len(vars(cls))


# --- Tensor.__torch_function__ -------------------------------------------------------------------


_nowrap: set[Callable] | None = None


def default_nowrap_functions() -> set[Callable]:
    """Results `Tensor.__torch_function__` returns as they are: field reads (`a.grad is
    a.grad` must hold), PyTorch's `get_default_nowrap_functions`."""
    global _nowrap
    if _nowrap is None:
        install_routes()
        _nowrap = {Tensor.grad.__get__}
    return _nowrap


def convert(result: Any, cls: type) -> Any:
    """PyTorch's `_convert`: Tensor results (also inside tuples and lists) made `cls`."""
    if cls is Tensor:
        return result
    if isinstance(result, Tensor) and not isinstance(result, cls):
        return result.as_subclass(cls)
    if isinstance(result, (tuple, list)):
        items = [convert(r, cls) for r in result]
        if type(result) in (tuple, list):
            return type(result)(items)
        if hasattr(result, "_fields"):  # a named tuple: fields positionally
            return type(result)(*items)
        return type(result)(items)
    return result


def as_subclass(tensor: Tensor, cls: type) -> Tensor:
    """`Tensor.as_subclass`: a `cls` instance sharing `tensor`'s data, made by `alias` (so it
    stays on the autograd graph) that no mode sees, as in PyTorch."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(
            "Creating a Tensor subclass from a class that does not inherit from Tensor is not "
            "possible. Make sure your class inherits from Tensor."
        )
    stashed = [_python_key.pop_mode() for _ in range(_python_key.stack_len())]
    old = _TLS.state
    _TLS.state = ALL_DISABLED
    try:
        alias = tensor.alias()
    finally:
        _TLS.state = old
        for mode in reversed(stashed):
            _python_key.push_mode(mode)
    if alias.__class__ is not cls:
        try:
            alias.__class__ = cls
        except TypeError:  # `cls` adds slots: a new object of it, the fields copied
            sub = object.__new__(cls)
            for name in Tensor.__slots__[:-2]:
                if hasattr(alias, name):
                    setattr(sub, name, getattr(alias, name))
            alias = sub
    alias._keyset = _subclass_keyset(cls, alias._keyset)  # the Python key for __torch_dispatch__
    return alias


def tensor_torch_function(cls: type, func: Callable, types: Iterable[type], args: Iterable = (),
                          kwargs: dict | None = None) -> Any:
    """The default `Tensor.__torch_function__`: run `func` with subclasses disabled, and make
    its Tensor results `cls` (not for field reads)."""
    if kwargs is None:
        kwargs = {}
    if not all(issubclass(cls, t) for t in types):
        return NotImplemented
    old = _TLS.state
    if old == ENABLED:
        _TLS.state = SUBCLASSES_DISABLED
    try:
        result = func(*args, **kwargs)
        if func in (_nowrap or default_nowrap_functions()):
            return result
        return convert(result, cls)
    finally:
        _TLS.state = old


# --- has_torch_function ----------------------------------------------------------------------


def _has_torch_function(args: Iterable[Any]) -> bool:
    """`has_torch_function(args)`: a mode is enabled, or one of `args` (not an exact Tensor,
    not a builtin value) has a `__torch_function__` other than the disabled one."""
    if _TLS.stack and _TLS.state != ALL_DISABLED:
        return True
    if _TLS.state != ENABLED:
        return False
    for value in args:
        if _has_handler(value.__class__):
            return True
    return False


def _has_torch_function_unary(value: Any) -> bool:
    return _has_torch_function((value,))


def _has_torch_function_variadic(*args: Any) -> bool:
    return _has_torch_function(args)
