"""pyaten.overrides: PyTorch's `torch.overrides` — the `__torch_function__` protocol's public
API (docs/torch-function.md).

A Tensor subclass, or any object, that defines `__torch_function__(cls, func, types, args=(),
kwargs=None)` is handed every call of the public API that it takes part in: `pyaten.add`,
`Tensor.add`, `a + b`, `a[0]`, properties such as `a.shape`, `pyaten.nn.functional.relu`. A
`TorchFunctionMode` pushed with `with` is handed every such call in its scope. The rules
(which arguments, in which order, NotImplemented, modes first) live in
`pyaten.core.torch_function`; this module names them as PyTorch does.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pyaten.core import torch_function as _tf
from pyaten.core.tensor import Tensor
from pyaten.core.torch_function import (
    _get_function_stack_at,
    _has_torch_function,
    _has_torch_function_unary,
    _has_torch_function_variadic,
    _len_torch_function_stack,
    _pop_torch_function_stack,
    _push_on_torch_function_stack,
    handle_torch_function,
)

__all__ = [
    "BaseTorchFunctionMode",
    "TorchFunctionMode",
    "enable_reentrant_dispatch",
    "get_default_nowrap_functions",
    "get_ignored_functions",
    "get_overridable_functions",
    "get_testing_overrides",
    "handle_torch_function",
    "has_torch_function",
    "has_torch_function_unary",
    "has_torch_function_variadic",
    "is_tensor_like",
    "is_tensor_method_or_property",
    "resolve_name",
    "wrap_torch_function",
]

has_torch_function = _has_torch_function
has_torch_function_unary = _has_torch_function_unary
has_torch_function_variadic = _has_torch_function_variadic


def is_tensor_like(inp: Any) -> bool:
    """True for an exact Tensor and for anything whose class has `__torch_function__`."""
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def wrap_torch_function(dispatcher: Callable[..., Iterable[Any]]) -> Callable:
    """Decorate a function so that the objects `dispatcher(*args, **kwargs)` returns may
    override it through `__torch_function__`."""

    def inner(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            relevant = tuple(dispatcher(*args, **kwargs))
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)

        return wrapped

    return inner


# --- modes ---------------------------------------------------------------------------------------


class TorchFunctionMode:
    """Overrides every `__torch_function__`-overridable call inside `with mode:` — factories
    too, and calls on plain tensors. Modes stack: the innermost runs first, with itself popped,
    so the calls it makes reach the next mode out (or the plain implementation)."""

    inner: TorchFunctionMode

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func: Callable, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        raise NotImplementedError

    def __enter__(self) -> TorchFunctionMode:
        _push_mode(self)
        return self

    def __exit__(self, exc_type: object, exc_val: object, exc_tb: object) -> None:
        _pop_mode()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchFunctionMode:
        import warnings

        warnings.warn(
            "`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
            stacklevel=2,
        )
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs each call as it is (subclass it and override what you need)."""

    def __torch_function__(self, func: Callable, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        return func(*args, **(kwargs or {}))


def _get_current_function_mode() -> TorchFunctionMode | None:
    n = _len_torch_function_stack()
    return _get_function_stack_at(n - 1) if n else None


def _get_current_function_mode_stack() -> list[TorchFunctionMode]:
    return [_get_function_stack_at(i) for i in range(_len_torch_function_stack())]


def _push_mode(mode: TorchFunctionMode) -> None:
    _push_on_torch_function_stack(mode)


def _pop_mode() -> TorchFunctionMode:
    return _pop_torch_function_stack()


@contextlib.contextmanager
def _pop_mode_temporarily() -> Iterator[TorchFunctionMode]:
    old = _pop_mode()
    try:
        yield old
    finally:
        _push_mode(old)


@contextlib.contextmanager
def enable_reentrant_dispatch() -> Iterator[None]:
    """PyTorch restores the Python dispatch state captured at the Python key here; pyaten's
    Python key keeps no such snapshot, so the block runs as it is."""
    yield


# --- which functions take part -------------------------------------------------------------------
# PyTorch's lists of what cannot be overridden (no Tensor argument, or not a tensor operation),
# by namespace: the names pyaten has are looked up when asked.
_IGNORED = {
    "pyaten": (
        "arange as_strided as_tensor asarray bartlett_window blackman_window broadcast_shapes "
        "can_cast device dtype empty empty_permuted empty_strided enable_grad eye fill finfo "
        "from_numpy frombuffer full get_default_device get_default_dtype get_num_threads "
        "get_rng_state hamming_window hann_window iinfo inference_mode initial_seed "
        "is_anomaly_check_nan_enabled is_anomaly_enabled is_grad_enabled "
        "is_inference_mode_enabled is_storage is_tensor kaiser_window layout linspace load "
        "logspace manual_seed memory_format no_grad normal ones promote_types rand rand_like "
        "randint randint_like randn randn_like randperm range result_type save scalar_tensor "
        "seed set_anomaly_enabled set_default_device set_default_dtype set_grad_enabled "
        "set_num_threads set_printoptions set_rng_state tensor tril_indices triu_indices "
        "typename vander zeros"
    ),
    "pyaten.Tensor": (
        "stride new new_empty new_empty_strided new_full new_ones new_tensor new_zeros "
        "as_subclass unflatten to_sparse_coo to_sparse_csr to_sparse_csc to_sparse_bsr "
        "to_sparse_bsc __iter__ __hash__ __init_subclass__ __torch_function__ __new__ __dir__ "
        "__delitem__ __init__ __setattr__ __delattr__ __getattribute__"
    ),
    "pyaten.nn.functional": (
        "handle_torch_function hardsigmoid hardswish sigmoid tanh upsample upsample_bilinear "
        "upsample_nearest"
    ),
    "pyaten.fft": "fftfreq rfftfreq",
}


def _namespaces() -> list[tuple[str, Any]]:
    import pyaten

    return [
        ("pyaten", pyaten), ("pyaten.nn.functional", pyaten.nn.functional),
        ("pyaten.Tensor", Tensor), ("pyaten.linalg", pyaten.linalg),
        ("pyaten.fft", pyaten.fft), ("pyaten.special", pyaten.special),
    ]


def _attribute(namespace: Any, name: str) -> Any:
    """`namespace.name` as stored (a property, not its value), None when missing."""
    if isinstance(namespace, type):
        for klass in namespace.__mro__:
            if name in vars(klass):
                return vars(klass)[name]
        return None
    return vars(namespace).get(name)


@functools.cache
def get_ignored_functions() -> set[Callable]:
    """The public functions that cannot be overridden by `__torch_function__`."""
    found: set[Callable] = set()
    for label, namespace in _namespaces():
        for name in _IGNORED.get(label, "").split():
            value = _attribute(namespace, name)
            if isinstance(value, property):
                found.add(value.__get__)
            elif callable(value):
                found.add(value)
    return found


def _public_names(label: str, namespace: Any) -> list[str]:
    if label == "pyaten.Tensor":
        return sorted(name for klass in reversed(Tensor.__mro__[:-1]) for name in vars(klass))
    listed = getattr(namespace, "__all__", None)
    names = listed if listed is not None else list(vars(namespace))
    return sorted(n for n in names if not n.startswith("_") and n[:1].islower())


@functools.cache
def _overridable() -> tuple[dict[Any, list[Callable]], dict[Callable, str]]:
    _tf.install_routes()
    ignored = get_ignored_functions()
    found: dict[Any, list[Callable]] = {}
    index: dict[Callable, str] = {}
    for label, namespace in _namespaces():
        for name in _public_names(label, namespace):
            value = _attribute(namespace, name)
            if value is None or isinstance(value, type) or type(value).__name__ == "module":
                continue
            if label == "pyaten.Tensor" and (name.startswith("_") and not (
                name.startswith("__") and name.endswith("__")
            )):
                continue
            if isinstance(value, property):
                index[value.__get__] = f"{label}.{name}.__get__"
                if value.__get__ not in ignored:
                    found.setdefault(value, []).append(value.__get__)
                continue
            if not callable(value) or getattr(object, name, None) is value:
                continue
            if label != "pyaten.Tensor" and name.endswith("_"):
                continue
            index[value] = f"{label}.{name}"
            if value not in ignored:
                found.setdefault(namespace, []).append(value)
    return found, index


def get_overridable_functions() -> dict[Any, list[Callable]]:
    """The functions a `__torch_function__` may override, by namespace (`pyaten`,
    `pyaten.Tensor`, `pyaten.nn.functional`, ...); a property's getter under the property."""
    return _overridable()[0]


def resolve_name(f: Callable) -> str | None:
    """`pyaten.add`'s name as a string (`"pyaten.add"`), None when not overridable."""
    return _overridable()[1].get(f)


def is_tensor_method_or_property(func: Callable) -> bool:
    """Whether `func` is a Tensor method or a property getter, as handlers receive them."""
    return func in set(get_overridable_functions().get(Tensor, ())) or getattr(
        func, "__name__", None
    ) == "__get__"


def get_default_nowrap_functions() -> set[Callable]:
    """The functions whose results `Tensor.__torch_function__` does not convert (field reads
    such as `Tensor.grad.__get__`)."""
    return set(_tf.default_nowrap_functions())


def get_testing_overrides() -> dict[Callable, Callable]:
    """A dummy override (returning -1) with the signature of each overridable function, for
    testing `__torch_function__` coverage. Partial: every overridable function gets a lambda
    taking any arguments."""
    overrides: dict[Callable, Callable] = {}
    for functions in get_overridable_functions().values():
        for func in functions:
            overrides[func] = lambda *args, **kwargs: -1
    return overrides
