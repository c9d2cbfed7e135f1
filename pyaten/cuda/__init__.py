"""`pyaten.cuda` as a CPU-only PyTorch build has it (docs/cuda-and-compat.md).

    device = "cuda" if pyaten.cuda.is_available() else "cpu"   # "cpu"
    pyaten.cuda.manual_seed_all(0)                             # a no-op, as without CUDA

pyaten has no CUDA backend, so every answer is the one PyTorch 2.13's CPU wheel gives:
queries about devices say there are none, seeding and cache functions do nothing, memory
counters read 0, and what needs a device raises `AssertionError: Torch not compiled with CUDA
enabled`. Making or moving a tensor to "cuda" raises that same error where the device is
received (Note: a device this build cannot use, in pyaten/core/device.py).

Where CPU PyTorch fails with an internal AttributeError or KeyError of its own (its
`reset_peak_memory_stats`, `memory_summary`, `set_device(0)`), pyaten raises the
AssertionError instead: DESIGN.md's rule that no internal error reaches a user.
"""

from __future__ import annotations

import collections
from typing import Any

from pyaten.core.device import device as _device_class

__all__ = [
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "Event",
    "FloatTensor", "HalfTensor", "IntTensor", "LongTensor", "OutOfMemoryError", "ShortTensor",
    "Stream", "StreamContext", "can_device_access_peer", "current_blas_handle",
    "current_device", "current_stream", "default_generators", "default_stream", "device",
    "device_count", "device_of", "empty_cache", "get_arch_list", "get_device_capability",
    "get_device_name", "get_device_properties", "get_gencode_flags",
    "get_per_process_memory_fraction", "get_rng_state", "get_rng_state_all",
    "get_sync_debug_mode", "has_half", "has_magma", "init", "initial_seed", "ipc_collect",
    "is_available", "is_bf16_supported", "is_initialized", "is_tf32_supported",
    "manual_seed", "manual_seed_all", "max_memory_allocated", "max_memory_cached",
    "max_memory_reserved", "mem_get_info", "memory_allocated", "memory_cached",
    "memory_reserved", "memory_snapshot", "memory_stats", "memory_stats_as_nested_dict",
    "memory_summary", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
    "reset_max_memory_cached", "reset_peak_memory_stats", "seed", "seed_all", "set_device",
    "set_per_process_memory_fraction", "set_rng_state", "set_rng_state_all",
    "set_sync_debug_mode", "stream", "synchronize",
]

NOT_COMPILED = "Torch not compiled with CUDA enabled"

has_half = True
has_magma = False
default_generators: tuple = ()


class OutOfMemoryError(RuntimeError):
    """Raised by a CUDA allocation that fails (never, in a CPU build; programs catch it)."""


def _not_compiled(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError(NOT_COMPILED)


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _zero(device: Any = None) -> int:
    return 0


def _named(fn: Any, name: str, doc: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__module__ = __name__
    call.__doc__ = doc
    return call


# -- questions about the devices: there are none ---------------------------------------------

def is_available() -> bool:
    """False: this build has no CUDA backend."""
    return False


def device_count() -> int:
    """0 CUDA devices."""
    return 0


def is_initialized() -> bool:
    """False: CUDA is never initialised without a backend."""
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False without a CUDA device."""
    return False


def is_tf32_supported() -> bool:
    """False without a CUDA device."""
    return False


def get_arch_list() -> list[str]:
    """The CUDA architectures the build was compiled for: none."""
    return []


def get_gencode_flags() -> str:
    """The build's `-gencode` flags: none."""
    return ""


def set_device(device: Any) -> None:
    """Select the current CUDA device; a negative index is a no-op, as in PyTorch."""
    if isinstance(device, (str, _device_class)):
        dev = _device_class(device) if isinstance(device, str) else device
        if dev.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {dev}")
        index = -1 if dev.index is None else dev.index
    elif isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        raise ValueError(f"Expected a cuda device, but got: {device}")
    if index >= 0:
        raise AssertionError(NOT_COMPILED)


init = _named(_not_compiled, "init", "Initialise CUDA: not compiled in this build.")
current_device = _named(_not_compiled, "current_device", "The current CUDA device's index.")
synchronize = _named(_not_compiled, "synchronize", "Wait for a CUDA device's work to finish.")
get_device_name = _named(_not_compiled, "get_device_name", "A CUDA device's name.")
get_device_capability = _named(
    _not_compiled, "get_device_capability", "A CUDA device's (major, minor) capability."
)
get_device_properties = _named(
    _not_compiled, "get_device_properties", "A CUDA device's properties."
)
can_device_access_peer = _named(
    _not_compiled, "can_device_access_peer", "Whether one CUDA device can read another's memory."
)
current_blas_handle = _named(_not_compiled, "current_blas_handle", "The cuBLAS handle.")
current_stream = _named(_not_compiled, "current_stream", "The current CUDA stream.")
default_stream = _named(_not_compiled, "default_stream", "The default CUDA stream.")
get_sync_debug_mode = _named(_not_compiled, "get_sync_debug_mode", "The sync debug mode.")
set_sync_debug_mode = _named(_not_compiled, "set_sync_debug_mode", "Set the sync debug mode.")
ipc_collect = _named(_not_compiled, "ipc_collect", "Free CUDA IPC memory.")

# -- random state: seeding does nothing; reading a device's state needs a device -----------

manual_seed = _named(_nothing, "manual_seed", "Seed the current CUDA device: a no-op here.")
manual_seed_all = _named(_nothing, "manual_seed_all", "Seed every CUDA device: a no-op here.")
seed = _named(_nothing, "seed", "Seed the current CUDA device randomly: a no-op here.")
seed_all = _named(_nothing, "seed_all", "Seed every CUDA device randomly: a no-op here.")
set_rng_state = _named(_nothing, "set_rng_state", "Set a CUDA device's RNG state: a no-op.")
set_rng_state_all = _named(
    _nothing, "set_rng_state_all", "Set every CUDA device's RNG state: a no-op."
)
initial_seed = _named(_not_compiled, "initial_seed", "The current CUDA device's seed.")
get_rng_state = _named(_not_compiled, "get_rng_state", "A CUDA device's RNG state.")


def get_rng_state_all() -> list:
    """Every CUDA device's RNG state: an empty list."""
    return []


# -- memory: nothing allocated, nothing cached -------------------------------------------------

empty_cache = _named(_nothing, "empty_cache", "Release cached CUDA memory: a no-op here.")
memory_allocated = _named(_zero, "memory_allocated", "Bytes held by tensors on a device: 0.")
max_memory_allocated = _named(_zero, "max_memory_allocated", "Peak bytes held by tensors: 0.")
memory_reserved = _named(_zero, "memory_reserved", "Bytes the caching allocator holds: 0.")
max_memory_reserved = _named(_zero, "max_memory_reserved", "Peak bytes the allocator held: 0.")
memory_cached = _named(_zero, "memory_cached", "Deprecated name of memory_reserved: 0.")
max_memory_cached = _named(_zero, "max_memory_cached", "Deprecated max_memory_reserved: 0.")
mem_get_info = _named(_not_compiled, "mem_get_info", "A CUDA device's (free, total) bytes.")
get_per_process_memory_fraction = _named(
    _not_compiled, "get_per_process_memory_fraction", "The process's memory fraction."
)
set_per_process_memory_fraction = _named(
    _not_compiled, "set_per_process_memory_fraction", "Limit the process's memory fraction."
)
reset_peak_memory_stats = _named(
    _not_compiled, "reset_peak_memory_stats", "Reset the peak memory counters."
)
reset_max_memory_allocated = _named(
    _not_compiled, "reset_max_memory_allocated", "Reset the peak allocated bytes."
)
reset_max_memory_cached = _named(
    _not_compiled, "reset_max_memory_cached", "Reset the peak reserved bytes."
)
reset_accumulated_memory_stats = _named(
    _not_compiled, "reset_accumulated_memory_stats", "Reset the accumulated counters."
)
memory_summary = _named(_not_compiled, "memory_summary", "A table of the allocator's counters.")
memory_snapshot = _named(_not_compiled, "memory_snapshot", "The allocator's segments.")


def memory_stats(device: Any = None) -> collections.OrderedDict:
    """The caching allocator's counters: none without CUDA."""
    return collections.OrderedDict()


def memory_stats_as_nested_dict(device: Any = None) -> dict:
    """The caching allocator's counters, nested: none without CUDA."""
    return {}


# -- devices, streams and events as context objects ------------------------------------------

class device:  # noqa: N801 - named like torch.cuda.device
    """`with pyaten.cuda.device(i):` selects device `i`; -1 (or a non-CUDA device) is a
    no-op, anything else needs CUDA."""

    def __init__(self, device: Any) -> None:
        if isinstance(device, (str, _device_class)):
            dev = _device_class(device) if isinstance(device, str) else device
            self.idx = -1 if dev.type != "cuda" or dev.index is None else dev.index
        elif device is None:
            self.idx = -1
        else:
            self.idx = int(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx >= 0:
            raise RuntimeError("PyTorch was compiled without CUDA support")

    def __exit__(self, *exc: object) -> bool:
        return False


class device_of(device):  # noqa: N801 - named like torch.cuda.device_of
    """`with pyaten.cuda.device_of(t):` the device of `t` when it is a CUDA tensor (never)."""

    def __init__(self, obj: Any) -> None:
        super().__init__(-1)


class Stream:
    """A CUDA stream: needs CUDA."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Stream:
        raise RuntimeError("torch.cuda.Stream requires CUDA support")


class Event:
    """A CUDA event: needs CUDA."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Event:
        raise RuntimeError("Tried to instantiate dummy base class Event")


class StreamContext:
    """`with pyaten.cuda.stream(s):`: a no-op for `None`, as in PyTorch."""

    def __init__(self, stream: Any) -> None:
        if stream is not None:
            raise AssertionError(NOT_COMPILED)
        self.stream = stream

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def stream(stream: Any) -> StreamContext:
    """The context that makes `stream` current (`None`: nothing changes)."""
    return StreamContext(stream)


# -- the legacy CUDA tensor types: they exist, and cannot be built --------------------------

class _CudaTensorType(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return False  # no tensor is a CUDA tensor in this build

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            f"type torch.cuda.{cls.__name__} not available. Torch not compiled with CUDA "
            "enabled."
        )

    def __repr__(cls) -> str:
        return f"<class 'torch.cuda.{cls.__name__}'>"


def _cuda_type(name: str) -> type:
    return _CudaTensorType(name, (), {"__module__": __name__, "is_cuda": True})


FloatTensor = _cuda_type("FloatTensor")
DoubleTensor = _cuda_type("DoubleTensor")
HalfTensor = _cuda_type("HalfTensor")
BFloat16Tensor = _cuda_type("BFloat16Tensor")
ByteTensor = _cuda_type("ByteTensor")
CharTensor = _cuda_type("CharTensor")
ShortTensor = _cuda_type("ShortTensor")
IntTensor = _cuda_type("IntTensor")
LongTensor = _cuda_type("LongTensor")
BoolTensor = _cuda_type("BoolTensor")


def __getattr__(name: str) -> Any:
    # `pyaten.cuda.amp` loads on first use (it stands on pyaten.amp).
    if name == "amp":
        import importlib

        return importlib.import_module("pyaten.cuda.amp")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
