"""The device registry: a plug-in name bound to a PrivateUse slot, with its runtime and kernels.

    dev = register_device("openreg", allocator=pool.allocate, runtime=OpenRegRuntime())
    dev.register_kernel("empty.memory_format", empty_memory_format)
    dev.load_manifest("openreg.yaml", kernels_module)

Registration does, once, what PyTorch's `rename_privateuse1_backend` and
`generate_methods_for_privateuse1_backend` do, without their single-slot limit: the name
becomes a device type (`pyaten.device("openreg:1")`), the slot's keys print as `openreg` /
`Autogradopenreg` / `Sparseopenreg` (as c10 prints a renamed slot), `Tensor.openreg()` /
`Tensor.is_openreg` / `Module.openreg()` appear,
`pyaten.openreg` is the runtime module, and the slot gets the CPU fallback and the glue
kernels of pyaten/backends/required.py. `unregister_device` undoes all of it (for tests).

Note: where the device check lives
    A CPU-only call must not pay for plug-in devices, so nothing is added to the dispatcher's
    call path. Every call that involves a plug-in tensor selects the plug-in's slot (its
    backend bit is above CPU's), so it lands in one of three places that this package owns:
    a kernel registered through `Device.register_kernel` (wrapped, by pyaten/backends/
    device_check.py, with the check that `device_check:` asks for), a structured wrapper whose
    upstream `meta` runs `TensorIterator` (which checks devices itself), or the boxed
    fallback (which checks before copying anything to the CPU).
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any

from pyaten.backends import device_check, required
from pyaten.backends import fallback as _fallback
from pyaten.backends import runtime as _runtime
from pyaten.core import storage as _storage
from pyaten.core.device import forget_device_type
from pyaten.dispatch import keys as _keys
from pyaten.dispatch import registry as _registry
from pyaten.dispatch.fallbacks import autograd_fallback
from pyaten.dispatch.keys import KEY_BY_NAME, DispatchKeySet
from pyaten.library import Library

__all__ = ["Device", "SLOTS", "devices", "get_device", "register_device", "unregister_device"]

SLOTS: tuple[str, ...] = ("PrivateUse1", "PrivateUse2", "PrivateUse3")
# functionalities a device may register layout kernels for (`register_kernel(layout=...)`)
LAYOUT_FUNCTIONALITIES: tuple[str, ...] = ("Sparse", "SparseCsr")

_LOCK = threading.RLock()
_DEVICES: dict[str, Device] = {}


class Device:
    """The handle `register_device` returns: the device's name, slot, keys and registrations."""

    def __init__(self, name: str, slot: str, runtime_obj: Any, default_policy: str) -> None:
        self.name = name
        self.slot = slot
        self.keys = DispatchKeySet([slot, "Autograd" + slot])
        # IMPL registrations for aten on the slot's backend key (kernels, glue).
        self.library = Library("aten", "IMPL", slot)
        self._fallback_library = Library("_", "IMPL", slot)
        self._extra_handles: list[Any] = []
        self.runtime = runtime_obj
        self.module: types.ModuleType | None = None
        self.policy = _fallback.check_policy(default_policy, "register_device", "fallback")
        self.overrides: dict[str, str] = {}
        self.kernels: dict[str, Callable] = {}  # "name.overload" -> the device's own function
        # ("Sparse" | "SparseCsr", "name.overload") -> the device's kernel for that layout
        self.layout_kernels: dict[tuple[str, str], Callable] = {}
        self._layout_libraries: dict[str, Library] = {}
        self._glue: dict[str, Library] = {}  # glue kernels a device kernel may replace
        self.registered = True
        self.methods_attached = False
        self.forced: set[str] = set()  # operators sent to the fallback by force_fallback
        self._boxed: Callable = _fallback.make_fallback(self)

    def __repr__(self) -> str:
        return f"<pyaten.backends.Device {self.name!r} on {self.slot}>"

    @property
    def key(self) -> str:
        """The slot's backend key name (`PrivateUse1`)."""
        return self.slot

    # -- kernels -----------------------------------------------------------------------------

    def register_kernel(
        self, op_name: str, fn: Callable, *, check: bool = True, layout: str | None = None
    ) -> Callable:
        """Register `fn` as this device's kernel of `aten::op_name` (`"add.Tensor"`, `"mm"`).

        The kernel is wrapped with the device check the operator's `device_check:` asks for
        (Note: where the device check lives); `check=False` registers it as is. `layout=`
        "Sparse" or "SparseCsr" registers it for sparse COO / compressed tensors on the device
        (the slot's `SparsePrivateUse1` / `SparseCsrPrivateUse1` key) instead.
        """
        self._check_alive()
        entry = required.aten_operator(op_name, "register_kernel")
        name = required.short_name(entry.name)
        if layout is not None:
            if layout not in LAYOUT_FUNCTIONALITIES:
                raise ValueError(
                    f"register_kernel(): layout must be one of "
                    f"{', '.join(LAYOUT_FUNCTIONALITIES)} or None, got {layout!r}"
                )
            key = layout + self.slot  # the wrapper is named for it: wrapper_SparsePrivateUse1_...
            kernel = device_check.wrap(entry, fn, key, self._guard()) if check else fn
            lib = self._layout_libraries.get(layout)
            if lib is None:  # one IMPL block per key, as PyTorch's TORCH_LIBRARY_IMPL
                lib = self._layout_libraries[layout] = Library("aten", "IMPL", key)
                self._extra_handles.append(lib)
            lib.impl(name, kernel, key)
            self.layout_kernels[(layout, name)] = fn
            return fn
        glue = self._glue.pop(name, None)
        if glue is not None:  # the device's own kernel replaces the generic one
            glue.close()
        kernel = device_check.wrap(entry, fn, self.slot, self._guard()) if check else fn
        self.library.impl(name, kernel, self.slot)
        self.kernels[name] = fn
        self.forced.discard(name)
        return fn

    def _guard(self) -> Any:
        """The runtime module when the device has several indices (device guards needed)."""
        module = self.module
        if module is None:
            return None
        try:
            return module if int(module.device_count()) > 1 else None
        except Exception:  # a runtime that cannot count yet: no guard
            return None

    def register_structured(self, op_name: str, fn: Callable) -> None:
        """Register a structured wrapper built by codegen (it checks devices in `meta`)."""
        self._check_alive()
        entry = required.aten_operator(op_name, "register_structured")
        name = required.short_name(entry.name)
        glue = self._glue.pop(name, None)
        if glue is not None:
            glue.close()
        self.library.impl(name, fn, self.slot)
        self.kernels[name] = fn

    def register_autograd(self, op_name: str, fn: Callable) -> None:
        """Register `fn` on the slot's autograd key (`autograd:` in a manifest)."""
        self._check_alive()
        entry = required.aten_operator(op_name, "register_autograd")
        lib = Library("aten", "IMPL", "Autograd" + self.slot)
        lib.impl(required.short_name(entry.name), fn, "Autograd" + self.slot)
        self._extra_handles.append(lib)

    def force_fallback(self, op_name: str) -> None:
        """Send `op_name` to the device's fallback even though a composite kernel would serve
        it (for a composite that reads memory directly instead of calling operators)."""
        self._check_alive()
        entry = required.aten_operator(op_name, "force_fallback")
        boxed = self._boxed

        def through_fallback(*args: Any) -> Any:
            return boxed(entry, self.keys, *args)

        through_fallback.__qualname__ = f"{self.name}_fallback"
        self.library.impl(required.short_name(entry.name), through_fallback, self.slot)
        self.forced.add(required.short_name(entry.name))

    def check_required(self) -> None:
        """RuntimeError listing the REQUIRED_KERNELS this device has not registered."""
        required.check_required(self)

    def load_manifest(self, path: str, kernels: Any) -> Any:
        """Register the kernels a backend YAML names, found in `kernels` by the naming rule
        of docs/backends.md; returns the `Manifest` read (see pyaten/backends/manifest.py)."""
        from pyaten.backends.manifest import load_manifest

        return load_manifest(self, path, kernels)

    # -- fallback ----------------------------------------------------------------------------

    def set_fallback(self, policy: str, op: str | None = None) -> None:
        """The policy ("error", "warn", "cpu") for every operator, or for one (`op`)."""
        set_fallback(self.name, policy, op=op)

    def policy_for(self, qualified: str) -> str:
        """The fallback policy of `aten::name.overload` on this device."""
        found = self.overrides.get(qualified)
        if found is None:
            found = self.overrides.get(qualified.split(".", 1)[0])
        return self.policy if found is None else found

    def _check_alive(self) -> None:
        if not self.registered:
            raise RuntimeError(f"device '{self.name}' was unregistered")


def _free_slot(name: str) -> str:
    taken = _keys.backend_names()
    for slot in SLOTS:
        if slot not in taken:
            return slot
    used = ", ".join(f"{s} ({taken[s]})" for s in SLOTS)
    raise RuntimeError(
        f"register_device('{name}'): every PrivateUse slot is taken: {used}; "
        "unregister one first"
    )


def register_device(
    name: str,
    slot: str | None = None,
    runtime: Any = None,
    allocator: Callable[[int, int], Any] | None = None,
    fallback: str = "cpu",
    grow: Callable[[Any, int], None] | None = None,
) -> Device:
    """Bind `name` to a PrivateUse slot and make it a device type (see the module doc).

    `allocator(nbytes, index)` returns the buffer object a `Storage` of the device holds;
    `runtime` supplies `is_available`, `device_count`, `current_device`, `set_device`,
    `synchronize`, `manual_seed` (defaults for any missing); `fallback` is the policy of
    operators the device has no kernel for: "error", "warn" or "cpu"; `grow(storage,
    nbytes)` gives a storage a bigger buffer holding its bytes (resizing `out=` tensors and
    `kernel_api.resize_storage` use it).
    """
    if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
        raise ValueError(
            f"register_device(): name must be a lower-case identifier such as 'openreg', "
            f"got {name!r}"
        )
    if slot is not None and slot not in SLOTS:
        raise ValueError(
            f"register_device(): slot must be one of {', '.join(SLOTS)} or None, got {slot!r}"
        )
    if allocator is not None and not callable(allocator):
        raise TypeError(
            f"register_device(): allocator must be callable (nbytes, index) -> buffer, "
            f"got {type(allocator).__name__}"
        )
    _fallback.check_policy(fallback, "register_device", "fallback")
    with _LOCK:
        if name in _DEVICES:
            raise RuntimeError(f"register_device(): device '{name}' is already registered")
        if slot is None:
            slot = _free_slot(name)
        elif slot in _keys.backend_names():
            raise RuntimeError(
                f"register_device('{name}'): slot {slot} is already used by device "
                f"'{_keys.backend_names()[slot]}'"
            )
        pyaten = sys.modules["pyaten"]
        # A device type the build has no backend for ("cuda") can be taken over: its
        # CPU-build module (pyaten.cuda) and methods (Tensor.cuda) come back on unregister.
        shadowed = getattr(pyaten, name, None) if name in _keys.SHADOWABLE_DEVICE_TYPES \
            else None
        if hasattr(pyaten, name) and shadowed is None and not _is_device_type(name) \
                and name not in _keys.backend_names().values():  # (a device type: below)
            raise RuntimeError(
                f"register_device(): 'pyaten.{name}' already exists; choose another device name"
            )
        _keys.register_backend_name(name, slot)
        if shadowed is not None:
            forget_device_type(name)  # interned devices of the type carry the old key set
        try:
            dev = Device(name, slot, runtime, fallback)
        except BaseException:
            _forget_backend_name(name, slot)
            raise
        dev.shadowed_module = shadowed
        try:
            if allocator is not None:
                _storage.register_device_allocator(name, allocator, grow)
            _storage.register_host_reader(name, _read_to_host)
            _install_autograd_fallback(dev)
            dev._fallback_library.fallback(dev._boxed, slot)
            required.install_glue(dev)
            dev.module = runtime_module = runtime_module_for(dev)
            setattr(sys.modules["pyaten"], name, runtime_module)
            sys.modules[f"pyaten.{name}"] = runtime_module
            _runtime.attach_methods(name, replace=shadowed is not None)
            dev.methods_attached = True
        except BaseException:
            _teardown(dev)
            raise
        _DEVICES[name] = dev
        return dev


def _is_device_type(name: str) -> bool:
    """Whether `name` is already a device type (`register_backend_name` then says so)."""
    try:
        _keys.backend_keyset_bits(name)
    except RuntimeError:
        return False
    return True


def _read_to_host(t: Any) -> Any:
    """A host copy of a device tensor's values for printing, `tolist()`, `item()`: the
    device's own `_copy_from` called directly, so printing inside a trace records nothing."""
    from pyaten.core.device import CPU
    from pyaten.core.views import empty_tensor

    dev = _DEVICES.get(t._device.type)
    copy = dev.kernels.get("_copy_from") if dev is not None else None
    if copy is None:
        from pyaten.backends.cpu_fallback import to_cpu

        return to_cpu(t)._numpy()
    cpu = empty_tensor(t._sizes, t._dtype, CPU)
    copy(t, cpu, False)
    return cpu._numpy()


def runtime_module_for(dev: Device) -> types.ModuleType:
    return _runtime.build_module(dev.name, dev.runtime)


def _install_autograd_fallback(dev: Device) -> None:
    # The baseline has an autograd fallback on AutogradPrivateUse1 only (as PyTorch).
    key = KEY_BY_NAME["Autograd" + dev.slot]
    slot = _keys.slot_of(key)
    if _registry.global_fallback(slot) is None:
        handle = _registry.register_fallback(
            key, autograd_fallback, debug=f"registered by pyaten.backends for '{dev.name}'"
        )
        dev._extra_handles.append(handle)


def _teardown(dev: Device) -> None:
    pyaten = sys.modules["pyaten"]
    dev.registered = False
    for lib in dev._glue.values():
        lib.close()
    dev._glue.clear()
    for handle in reversed(dev._extra_handles):
        (handle.close if isinstance(handle, Library) else handle.remove)()
    dev._extra_handles.clear()
    dev.library.close()
    dev._fallback_library.close()
    if dev.methods_attached:
        _runtime.detach_methods(dev.name)
    if getattr(pyaten, dev.name, None) is dev.module and dev.module is not None:
        delattr(pyaten, dev.name)
    sys.modules.pop(f"pyaten.{dev.name}", None)
    shadowed = getattr(dev, "shadowed_module", None)
    if shadowed is not None:  # the CPU-build module the device took over
        setattr(pyaten, dev.name, shadowed)
        sys.modules[f"pyaten.{dev.name}"] = shadowed
    _storage.unregister_allocator(dev.name)
    forget_device_type(dev.name)
    _forget_backend_name(dev.name, dev.slot)
    _fallback.forget_device(dev.name)


def _forget_backend_name(name: str, slot: str) -> None:
    _keys.unregister_backend_name(name)


def unregister_device(name: str) -> None:
    """Undo `register_device(name)`: kernels, fallback, methods, runtime module, name."""
    with _LOCK:
        dev = _DEVICES.pop(name, None)
        if dev is None:
            raise _unknown_device(name)
        _teardown(dev)


def _unknown_device(name: str) -> ValueError:
    known = ", ".join(sorted(_DEVICES)) or "none"
    return ValueError(f"no plug-in device named '{name}' is registered (registered: {known})")


def get_device(name: str) -> Device:
    """The registered device `name` (ValueError naming the registered ones otherwise)."""
    dev = _DEVICES.get(name)
    if dev is None:
        raise _unknown_device(name)
    return dev


def devices() -> Mapping[str, Device]:
    """The registered plug-in devices by name."""
    return types.MappingProxyType(_DEVICES)


def set_fallback(device: str, policy: str, op: str | None = None) -> None:
    """Set `device`'s fallback policy for every operator (`op=None`) or for one operator
    (`"aten::add.Tensor"`, `"add.Tensor"`, or a name such as `"topk"` for all overloads)."""
    dev = get_device(device)
    policy = _fallback.check_policy(policy, "set_fallback", "policy")
    if op is None:
        dev.policy = policy
        return
    if not isinstance(op, str) or not op:
        raise TypeError(f"set_fallback(): op must be an operator name, got {op!r}")
    qualified = op if "::" in op else "aten::" + op
    dev.overrides[qualified] = policy
    for entry in _overloads(qualified):
        name = required.short_name(entry.name)
        if name not in dev.kernels and name not in dev.forced and _composite_serves(entry):
            # a composite kernel would serve the device before its fallback: route it there
            dev.force_fallback(name)


def _overloads(qualified: str) -> list[Any]:
    """The entries `aten::name.overload` names, or every overload of `aten::name`."""
    entry = _registry.get_operator(qualified)
    if entry is not None:
        return [entry]
    if "." in qualified.split("::", 1)[1]:
        return []
    prefix = qualified + "."
    return [
        e for n in _registry.list_operators("aten") if n.startswith(prefix)
        if (e := _registry.get_operator(n)) is not None
    ]


def _composite_serves(entry: Any) -> bool:
    # CompositeExplicitAutogradNonFunctional kernels are codegen's structured wrappers, which
    # call the out operator: that one reaches the fallback itself.
    return any(k.name == "CompositeExplicitAutograd" and v for k, v in entry.kernels.items())
