"""`nn.utils.parametrize`: a tensor of a module computed from other tensors on every read
(docs/parametrizations.md).

`register_parametrization(module, "weight", P)` moves `module.weight` to
`module.parametrizations.weight.original` (or `original0, original1, ...` when `P`'s
`right_inverse` returns several tensors), gives the module a subclass
`Parametrized<Class>` whose `weight` is a property returning `P(original)`, and assigning
`module.weight = X` stores `P.right_inverse(X)`. Inside `with cached():` each parametrized
tensor is computed once.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Sequence
from typing import Any

from pyaten.autograd.grad_mode import no_grad
from pyaten.core.tensor import Tensor
from pyaten.nn.modules.container import ModuleDict, ModuleList
from pyaten.nn.modules.module import Module
from pyaten.nn.parameter import Parameter

__all__ = [
    "ParametrizationList", "cached", "is_parametrized", "register_parametrization",
    "remove_parametrizations", "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Compute each parametrized tensor at most once inside the block (for a module used
    several times per step, e.g. the weight of a recurrent layer)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(target: Tensor, value: Tensor) -> None:
    """Make `target` hold `value` (its shape too), keeping the object an optimizer holds."""
    with no_grad():
        target.data = value.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and its unparametrized
    `original` (or `original0, original1, ...`)."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new: Any = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\n"
                    f"right_inverse(original).dtype: {new.dtype}"
                )
            if new is not original:
                _set_in_place(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, item in enumerate(new):
                if not isinstance(item, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {i} of the sequence with type "
                        f"{type(item).__name__}."
                    )
                if isinstance(original, Parameter):
                    item = Parameter(item, original.requires_grad)
                item.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", item)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(
                    f"A parametrization must return a tensor. Got {type(z).__name__}."
                )
            if z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized dtype: {original_dtype}\n"
                    f"parametrized dtype: {z.dtype}"
                )
            if z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized shape: {original_shape}\n"
                    f"parametrized shape: {z.shape}"
                )

    def right_inverse(self, value: Tensor) -> None:
        """Store `value` as the parametrized tensor: each parametrization's `right_inverse`,
        last first, gives the originals."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement "
                        "right_inverse."
                    )
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(
                        f"`right_inverse` should return a tensor. Got {type(value).__name__}"
                    )
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} "
                        f"while `original` has dtype {self.original.dtype}"
                    )
                _set_in_place(self.original, value)
            else:
                if not isinstance(value, Sequence):
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors. "
                        f"Got {type(value).__name__}."
                    )
                if len(value) != self.ntensors:
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors of length "
                        f"{self.ntensors}. Got a sequence of length {len(value)}."
                    )
                for i, tensor in enumerate(value):
                    _set_in_place(getattr(self, f"original{i}"), tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _parametrized_getstate(self: Module) -> Any:
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
    )


def _parametrized_deepcopy(self: Module, memo: dict) -> Module:
    clone = self.__new__(type(self))
    memo[id(self)] = clone
    for key, value in self.__dict__.items():
        object.__setattr__(clone, key, copy.deepcopy(value, memo))
    return clone


def _inject_new_class(module: Module) -> None:
    """Give `module` its own subclass, to hold the properties of its parametrized tensors."""
    cls = module.__class__
    namespace: dict[str, Any] = {"__getstate__": _parametrized_getstate}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _parametrized_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _check_result(what: str, tensor_name: str, y: Tensor, x: Any) -> None:
    if not isinstance(x, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
    if x.dtype != y.dtype:
        raise ValueError(
            f"Registering a parametrization may not change the dtype of the tensor, unless "
            f"the `unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\n"
            f"{what}.dtype: {x.dtype}"
        )
    if x.shape != y.shape:
        raise ValueError(
            f"Registering a parametrization may not change the shape of the tensor, unless "
            f"the `unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {y.shape}\n"
            f"{what}.shape: {x.shape}"
        )


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Make `module.<tensor_name>` the output of `parametrization` applied to the stored
    original; a second call on the same name chains another parametrization."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            _check_result(f"parametrization(module.{tensor_name})", tensor_name, y, x)
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor):
                        raise ValueError(
                            f"parametrization.right_inverse must return a tensor. "
                            f"Got: {type(z).__name__}"
                        )
                    _check_result(
                        "returned by parametrization.right_inverse", tensor_name, y, z
                    )
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized "
            f"element with name '{tensor_name}'"
        )
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether `module` has a parametrization (on `tensor_name`, when given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Undo `register_parametrization` on `tensor_name`, keeping the current parametrized
    value (`leave_parametrized=True`) or the stored original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            _set_in_place(original, value)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                "parametrized in terms of a sequence of tensors."
            )
        value = getattr(module, tensor_name)
        original = (
            Parameter(value.detach(), value.requires_grad) if value.requires_grad
            else value.detach()
        )
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrizations gave it a `Parametrized...` subclass."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: str | None = None
) -> Module:
    """Copy `from_module`'s parametrizations (of `tensor_name`, or all) and their originals
    to `to_module`."""
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in from_module.parametrizations[name]:
            register_parametrization(to_module, name, parametrization)
        source = from_module.parametrizations[name]
        target = to_module.parametrizations[name]
        if source.is_tensor:
            _set_in_place(target.original, source.original)
        else:
            for i in range(source.ntensors):
                _set_in_place(getattr(target, f"original{i}"), getattr(source, f"original{i}"))
    return to_module
