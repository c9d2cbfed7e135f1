"""`pyaten.autocast`: regions of mixed precision, as `torch.autocast` (docs/amp.md).

    with pyaten.autocast("cpu"):            # bfloat16 on the CPU by default
        y = model(x)                        # linear/matmul/conv in bfloat16, losses in float32

The region's state is thread-local, as PyTorch's: whether autocast is on for a device is
whether its Autocast key is out of the thread's excluded set; the dtype, the nesting depth
and whether weight casts are cached live in autocast_kernels.AUTOCAST. What the kernels do
is autocast_kernels.py's Note: how autocast runs.
"""

from __future__ import annotations

import collections.abc
import functools
import warnings
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from pyaten.amp import autocast_kernels as _k
from pyaten.core import dtypes
from pyaten.core.device import device as _device
from pyaten.core.dtypes import dtype as _dtype_class
from pyaten.core.tensor import Tensor
from pyaten.dispatch.registry import RegistrationHandle
from pyaten.dispatch.tls import STATE, _set

__all__ = [
    "autocast",
    "autocast_decrement_nesting",
    "autocast_increment_nesting",
    "clear_autocast_cache",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_dtype",
    "is_autocast_available",
    "is_autocast_cache_enabled",
    "is_autocast_enabled",
    "set_autocast_cache_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
]

# The names `pyaten` itself exports, as `torch` does.
_AMP_ONLY = ("custom_bwd", "custom_fwd", "is_autocast_available")
TOP_LEVEL = tuple(name for name in __all__ if name not in _AMP_ONLY)

F = TypeVar("F", bound=Callable[..., Any])


def _device_type(fn: str, device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise TypeError(
            f"{fn}(): argument 'device_type' (position 1) must be str, not "
            f"{type(device_type).__name__}"
        )
    return _device(device_type).type  # PyTorch's "Expected one of cpu, ..." for a bad name


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can run on `device_type` (cpu, cuda, xpu, mps, privateuseone, ...)."""
    return _device_type("is_autocast_available", device_type) in _k.AUTOCAST_BITS


def _autocast_bit(fn: str, device_type: str) -> int:
    bit = _k.AUTOCAST_BITS.get(_device_type(fn, device_type))
    if bit is None:
        raise RuntimeError(
            "unknown device type for autocast in get_autocast_dispatch_key_from_device_type"
        )
    return bit


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    """Whether autocast is on for `device_type` in this thread."""
    return not STATE.excluded & _autocast_bit("is_autocast_enabled", device_type)


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Turn autocast on or off for `device_type` in this thread (what `autocast` does)."""
    bit = _autocast_bit("set_autocast_enabled", device_type)
    excluded = STATE.excluded & ~bit if enabled else STATE.excluded | bit
    _set(STATE.included, excluded)


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype autocast casts to on `device_type` in this thread."""
    dtype = _k.AUTOCAST.dtypes.get(_device_type("get_autocast_dtype", device_type))
    if dtype is None:
        raise RuntimeError("unsupported scalarType")
    return dtype


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """Set the dtype autocast casts to on `device_type` in this thread."""
    device_type = _device_type("set_autocast_dtype", device_type)
    if not isinstance(dtype, _dtype_class):
        raise TypeError(
            "set_autocast_dtype(): argument 'dtype' (position 2) must be torch.dtype, not "
            f"{type(dtype).__name__}"
        )
    _k.AUTOCAST.dtypes[device_type] = dtype


def is_autocast_cache_enabled() -> bool:
    return _k.AUTOCAST.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _k.AUTOCAST.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    _k.clear_cache()


def autocast_increment_nesting() -> int:
    _k.AUTOCAST.nesting += 1
    return _k.AUTOCAST.nesting


def autocast_decrement_nesting() -> int:
    _k.AUTOCAST.nesting -= 1
    return _k.AUTOCAST.nesting


# The dtypes each device can autocast to (PyTorch's list for devices not named here); a
# plug-in device names its own when it opts in (register_autocast_device).
_SUPPORTED_DTYPES: dict[str, tuple[Any, ...]] = {"cpu": (dtypes.bfloat16, dtypes.float16)}
_PLUGINS: set[str] = set()  # plug-in devices that opted in


def register_autocast_device(
    device_type: str,
    supported_dtypes: tuple[Any, ...] = (dtypes.bfloat16, dtypes.float16),
    policy: str = "cpu",
    dtype: Any = dtypes.float16,
) -> RegistrationHandle:
    """Let the plug-in device `device_type` (registered in the PrivateUse1 slot) autocast:
    its AutocastPrivateUse1 key gets a kernel for each operator of `policy`'s lists in
    autocast_policy.yaml and a fallthrough for the rest; `dtype` is its default autocast dtype
    (PyTorch's for PrivateUse1: float16), `supported_dtypes` what `autocast` accepts (PyTorch
    asks the backend module's `get_amp_supported_dtype`). The handle's `remove()` undoes it."""
    from pyaten.backends import devices, get_device

    if device_type not in devices() or get_device(device_type).slot != "PrivateUse1":
        raise RuntimeError(
            f"register_autocast_device: '{device_type}' is not a plug-in device registered in "
            "the PrivateUse1 slot (the only plug-in slot with an Autocast key)"
        )
    if device_type in _SUPPORTED_DTYPES:
        raise RuntimeError(
            f"register_autocast_device: autocast is already registered for '{device_type}'"
        )
    handles = _k.register_plugin_device(device_type, policy, dtype)
    _SUPPORTED_DTYPES[device_type] = tuple(supported_dtypes)
    _PLUGINS.add(device_type)

    def undo() -> None:
        for handle in reversed(handles):
            handle.remove()
        _k.forget_plugin_device(device_type)
        _SUPPORTED_DTYPES.pop(device_type, None)
        _PLUGINS.discard(device_type)

    return RegistrationHandle(undo, f"autocast {device_type}")


class autocast:  # noqa: N801 - named as torch.autocast
    """A region (or a decorated function) in which listed operators run in mixed precision.

    `device_type` "cpu" (or a plug-in device that opted in); `dtype` defaults to
    `get_autocast_dtype(device_type)` (bfloat16 on the CPU); `enabled=False` turns autocast
    off inside an enabled region; `cache_enabled` (default: the thread's setting) caches the
    casts of float32 weights for the region.
    """

    def __init__(
        self,
        device_type: str,
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(
                f"User specified an unsupported autocast device_type '{device_type}'"
            )
        self._bit = _k.AUTOCAST_BITS[_device(device_type).type]
        self._cache_enabled = (
            is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        )
        if enabled:
            supported = _SUPPORTED_DTYPES.get(device_type, (dtypes.bfloat16, dtypes.float16))
            if device_type == "cuda":  # as a CPU-only PyTorch build
                warnings.warn(
                    "CUDA is not available or torch_xla is imported. Disabling autocast.",
                    stacklevel=2,
                )
                enabled = False
            elif self.fast_dtype not in supported:
                # PyTorch names a plug-in device as registered, the others in capitals
                name = device_type if device_type in _PLUGINS else device_type.upper()
                warnings.warn(
                    f"In {name} autocast, but the target dtype is not supported. Disabling "
                    f"autocast.\n{name} Autocast only supports dtypes of "
                    + ", ".join(map(str, supported))
                    + " currently.",
                    stacklevel=2,
                )
                enabled = False
        self._enabled = enabled

    # __enter__ and __exit__ do what set_autocast_enabled / set_autocast_dtype / the nesting
    # and cache functions do, on the state directly (a region is entered once per step).
    def __enter__(self) -> autocast:
        if not isinstance(self.fast_dtype, _dtype_class):
            set_autocast_dtype(self.device, self.fast_dtype)  # raises PyTorch's TypeError
        state = _k.AUTOCAST
        bit = self._bit
        excluded = STATE.excluded
        self.prev_cache_enabled = state.cache_enabled
        self.prev = not excluded & bit
        self.prev_fastdtype = state.dtypes[self.device]
        _set(STATE.included, excluded & ~bit if self._enabled else excluded | bit)
        state.dtypes[self.device] = self.fast_dtype
        state.nesting += 1
        state.cache_enabled = self._cache_enabled
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        state = _k.AUTOCAST
        state.nesting -= 1
        if state.nesting == 0:
            _k.clear_cache()
        excluded = STATE.excluded
        _set(STATE.included, excluded & ~self._bit if self.prev else excluded | self._bit)
        state.dtypes[self.device] = self.prev_fastdtype
        state.cache_enabled = self.prev_cache_enabled
        return False

    def __call__(self, func: F) -> F:
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with torch.autocast(device_type=...):\n"
                "        output = model(input)"
            )

        @functools.wraps(func)
        def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return decorate_autocast  # type: ignore[return-value]


def _cast(value: Any, device_type: str, dtype: Any) -> Any:
    """Floating tensors (not float64) on the device cast to `dtype`, through containers."""
    if isinstance(value, Tensor):
        eligible = _k.is_eligible(value, device_type)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {
            _cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def _check_device_type(device_type: Any) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(
    fwd: Callable[..., Any] | None = None, *, device_type: str, cast_inputs: Any = None
) -> Any:
    """Decorate a custom autograd Function's `forward`: with `cast_inputs`, an enabled region
    casts floating inputs to it and runs `forward` with autocast off."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(
                *_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs)
            )

    return decorate_fwd


def custom_bwd(bwd: Callable[..., Any] | None = None, *, device_type: str) -> Any:
    """Decorate a custom autograd Function's `backward`: it runs with `forward`'s autocast
    state."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        with autocast(
            device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype
        ):
            return bwd(*args, **kwargs)

    return decorate_bwd

