"""`nn.utils.prune`: zero out parts of a parameter through a mask (docs/parametrizations.md).

Pruning `module.weight` moves the parameter to `weight_orig`, adds the buffer `weight_mask`,
and a forward pre-hook (the pruning method itself) that sets the plain attribute
`weight = weight_orig * weight_mask` before each call. Pruning the same tensor again
combines the masks in a `PruningContainer` (the new method only sees the entries the old
mask kept); `remove` makes the pruned value the parameter again.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.nn.modules._ops import ops
from pyaten.nn.modules.module import Module

__all__ = [
    "BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured",
    "PruningContainer", "RandomStructured", "RandomUnstructured", "custom_from_mask",
    "global_unstructured", "identity", "is_pruned", "l1_unstructured", "ln_structured",
    "random_structured", "random_unstructured", "remove",
]


class BasePruningMethod(ABC):
    """A way to compute a mask; as a forward pre-hook it re-applies the mask each call."""

    _tensor_name: str
    PRUNING_TYPE: str

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for `t`, given the mask already in place."""

    def apply_mask(self, module: Module) -> Tensor:
        name = getattr(self, "_tensor_name", None)
        if name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        return getattr(module, name + "_orig") * getattr(module, name + "_mask")

    @classmethod
    def apply(
        cls, module: Module, name: str, *args: Any, importance_scores: Tensor | None = None,
        **kwargs: Any,
    ) -> BasePruningMethod:
        """Prune `module.<name>` with `cls(*args, **kwargs)`, composed with any pruning
        already on it."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(
                    f"importance_scores should have the same shape as parameter {name} of "
                    f"{module}"
                )
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ops.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):  # put the parameter back
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(
        self, t: Tensor, default_mask: Tensor | None = None,
        importance_scores: Tensor | None = None,
    ) -> Tensor:
        """`t` times the mask this method computes for it (nothing is registered)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError("importance_scores should have the same shape as tensor t")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ops.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruned value `module.<name>` a parameter again (the `_orig` object)."""
        name = getattr(self, "_tensor_name", None)
        if name is None:
            raise AssertionError(
                f"Module {module} has to be pruned before pruning can be removed"
            )
        weight = self.apply_mask(module)
        if name in module.__dict__:
            delattr(module, name)
        orig = module._parameters[name + "_orig"]
        orig.data = weight.data
        del module._parameters[name + "_orig"]
        del module._buffers[name + "_mask"]
        setattr(module, name, orig)


def _composite_method(
    cls: type[BasePruningMethod], module: Module, name: str, *args: Any, **kwargs: Any
) -> BasePruningMethod:
    old_method = None
    found = [k for k, hook in module._forward_pre_hooks.items()
             if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(found) > 1:
        raise AssertionError(
            f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
            f"{module}. Use a PruningContainer."
        )
    for key in found:
        old_method = module._forward_pre_hooks.pop(key)
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if old_method is not None:
        if isinstance(old_method, PruningContainer):
            old_method.add_pruning_method(method)
            method = old_method
        else:
            container = PruningContainer(old_method)
            container.add_pruning_method(method)
            method = container
    return method


class PruningContainer(BasePruningMethod):
    """Pruning methods applied one after the other to the same tensor."""

    def __init__(self, *args: BasePruningMethod) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod | None) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and getattr(self, "_tensor_name", None) != method._tensor_name:
            raise ValueError(
                "Can only add pruning methods acting on the parameter named "
                f"'{getattr(self, '_tensor_name', None)}' to PruningContainer {self}. "
                f"Found '{method._tensor_name}'"
            )
        if method is not None:
            self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self) -> Any:
        return iter(self._pruning_methods)

    def __getitem__(self, idx: int) -> BasePruningMethod:
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask, computed on the part of `t` the current mask keeps."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            where: Any = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(
                    "Pruning methods of PRUNING_TYPE 'structured' need to have the attribute "
                    "`dim` defined."
                )
            n_dims = t.dim()
            dim = method.dim if method.dim >= 0 else n_dims + method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor of size {n_dims}")
            keep = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            where = tuple(keep if d == dim else slice(None) for d in range(n_dims))
        elif kind == "global":
            where = tuple(slice(None) for _ in range(t.dim()))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[where], default_mask=default_mask[where])
        new_mask[where] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing (the mask is all ones)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name)


def _validate_pruning_amount_init(amount: Any) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0
    ):
        raise ValueError(
            f"amount={amount} should either be a float in the range [0, 1] or a non-negative "
            "integer"
        )


def _validate_pruning_amount(amount: int, tensor_size: int) -> None:
    if amount > tensor_size:
        raise ValueError(
            f"amount={amount} should be smaller than the number of parameters to "
            f"prune={tensor_size}"
        )


def _validate_structured_pruning(t: Tensor) -> None:
    if t.dim() <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. Found tensor "
            f"of shape {t.shape} with {t.dim()} dims"
        )


def _compute_nparams_toprune(amount: Any, tensor_size: int) -> int:
    if isinstance(amount, numbers.Integral):
        return int(amount)
    return round(amount * tensor_size)


def _validate_pruning_dim(t: Tensor, dim: int) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t: Tensor, n: Any, dim: int) -> Tensor:
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    return ops.norm(t, p=n, dim=dims)


class RandomUnstructured(BasePruningMethod):
    """Prune `amount` (a fraction or a count) of the entries, chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = t.nelement()
        count = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(count, size)
        mask = default_mask.clone()
        if count != 0:
            chosen = ops.topk(ops.rand_like(t).view(-1), k=count).indices
            mask.view(-1)[chosen] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount: float) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prune `amount` of the entries with the smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount: float) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        size = t.nelement()
        count = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(count, size)
        mask = default_mask.clone()
        if count != 0:
            smallest = ops.topk(ops.abs(t).view(-1), k=count, largest=False).indices
            mask.view(-1)[smallest] = 0
        return mask

    @classmethod
    def apply(  # type: ignore[override]
        cls, module: Module, name: str, amount: float, importance_scores: Tensor | None = None
    ) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t: Tensor, dim: int, index: Tensor) -> Tensor:
    mask = ops.zeros_like(t)
    where = tuple(index if d == dim else slice(None) for d in range(t.dim()))
    mask[where] = 1
    return mask


class RandomStructured(BasePruningMethod):
    """Prune `amount` of the channels along `dim`, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: float, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        size = t.shape[self.dim]
        count = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(count, size)
        if count == 0:
            return default_mask
        prob = ops.rand(size)
        threshold = ops.kthvalue(prob, k=count).values
        mask = _channel_mask(t, self.dim, prob > threshold)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(  # type: ignore[override]
        cls, module: Module, name: str, amount: float, dim: int = -1
    ) -> BasePruningMethod:
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prune `amount` of the channels along `dim` with the smallest L`n` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount: float, n: Any, dim: int = -1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        size = t.shape[self.dim]
        count = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(count, size)
        if count == 0:
            return default_mask
        norm = _compute_norm(t, self.n, self.dim)
        kept = ops.topk(norm, k=size - count, largest=True).indices
        mask = _channel_mask(t, self.dim, kept)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(  # type: ignore[override]
        cls, module: Module, name: str, amount: float, n: Any, dim: int,
        importance_scores: Tensor | None = None,
    ) -> BasePruningMethod:
        return super().apply(
            module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores
        )


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask (combined with the mask already in place)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(
                f"mask shape {self.mask.shape} does not match the tensor's {default_mask.shape}"
            )
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:  # type: ignore[override]
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount: float) -> Module:
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(
    module: Module, name: str, amount: float, importance_scores: Tensor | None = None
) -> Module:
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount: float, dim: int) -> Module:
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(
    module: Module, name: str, amount: float, n: Any, dim: int,
    importance_scores: Tensor | None = None,
) -> Module:
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(
    parameters: Iterable[tuple[Module, str]], pruning_method: type[BasePruningMethod],
    importance_scores: dict | None = None, **kwargs: Any,
) -> None:
    """Prune the (module, name) tensors together, as if they were one vector: e.g. the 20%
    smallest entries across all of them with `L1Unstructured, amount=0.2`."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    from pyaten.nn.utils.convert_parameters import parameters_to_vector

    scores = parameters_to_vector(
        [importance_scores.get((m, n), getattr(m, n)) for m, n in parameters]
    )
    default_mask = parameters_to_vector([
        getattr(m, n + "_mask", None) if hasattr(m, n + "_mask")
        else ops.ones_like(getattr(m, n)) for m, n in parameters
    ])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
            f"{pruning_method} of type {method.PRUNING_TYPE}"
        )
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for m, n in parameters:
        param = getattr(m, n)
        count = param.numel()
        custom_from_mask(m, n, mask=final_mask[start : start + count].view_as(param))
        start += count


def remove(module: Module, name: str) -> Module:
    """Make the pruning of `module.<name>` permanent: the masked value becomes the parameter
    and the mask, `_orig` and the hook go."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(
        f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed"
    )


def is_pruned(module: Module) -> bool:
    """Whether any submodule of `module` has a pruning hook."""
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
