"""The `Optimizer` base class: parameter groups, per-parameter state, state dicts, hooks.

A subclass gives its defaults to `Optimizer.__init__` and implements `_init_state(p, group)`
(the state a parameter gets before its first update) and `_update(p, grad, state, group)`
(one parameter's update, in place, PyTorch's single-tensor formula). `Optimizer.step` runs
the closure with grad enabled, then, under `no_grad`, each parameter that has a gradient.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

from pyaten.autograd.grad_mode import enable_grad, no_grad
from pyaten.autograd.graph import RemovableHandle
from pyaten.core import dtypes
from pyaten.core.creation import tensor
from pyaten.core.tensor import Tensor
from pyaten.native.ops_handles import aten
from pyaten.profiler._recorder import active as _profiling
from pyaten.profiler._recorder import record_function

__all__ = ["Optimizer", "required"]

StateDict = dict[str, Any]

# The instance attributes that hold each kind of hook, in registration order.
_HOOK_LISTS = (
    "_step_pre_hooks",
    "_step_post_hooks",
    "_state_dict_pre_hooks",
    "_state_dict_post_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


class _RequiredParameter:
    """The default of a hyper-parameter every group must give (PyTorch's `required`)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def typename(obj: object) -> str:
    """`torch.typename`: a tensor's type string, else the object's qualified type name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = type(obj).__module__ or ""
        qualname = type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def scalar_state(value: float) -> Tensor:
    """A 0-d state tensor (`step`, `mu_product`) as PyTorch stores it: float32, or float64
    when that is the default dtype."""
    wide = dtypes.get_default_dtype() == dtypes.float64
    return tensor(value, dtype=dtypes.float64 if wide else dtypes.float32)


def check_lr(lr: float | Tensor) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def check_betas(betas: tuple[float, float]) -> None:
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def check_nonnegative(name: str, value: float) -> None:
    """PyTorch's "Invalid <name> value: <value>" for a negative hyper-parameter."""
    if not 0.0 <= value:
        raise ValueError(f"Invalid {name} value: {value}")


def to_float(value: float | Tensor) -> float:
    """A hyper-parameter as a Python number (a 1-element tensor lr through `item()`)."""
    return value.item() if isinstance(value, Tensor) else value


def _hooked_step(step: Callable) -> Callable:
    """Wrap a subclass's `step` so the step pre- and post-hooks run around it."""

    @functools.wraps(step)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _profiling() is not None:  # PyTorch's event around the step, hooks included
            with record_function(f"Optimizer.step#{type(args[0]).__name__}.step"):
                return _step_with_hooks(step, args, kwargs)
        return _step_with_hooks(step, args, kwargs)

    wrapper._hooked = True  # type: ignore[attr-defined]
    return wrapper


def _step_with_hooks(step: Callable, args: tuple, kwargs: dict) -> Any:
    # as in PyTorch, the hooks' `args` start with the optimizer itself
    self = args[0]
    for pre_hook in list(self._step_pre_hooks):
        result = pre_hook(self, args, kwargs)
        if result is not None:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(
                    f"{step} must return None or a tuple of (new_args, new_kwargs), "
                    f"but got {result}."
                )
            args, kwargs = result
    out = step(*args, **kwargs)
    for post_hook in list(self._step_post_hooks):
        post_hook(self, args, kwargs)
    return out


class Optimizer:
    """The base of every optimizer: `param_groups`, `state`, `defaults`."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _hooked_step(step)  # type: ignore[method-assign]

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        for name in _HOOK_LISTS:
            setattr(self, name, [])
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got " + typename(params)
            )
        self.state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        # a copy or an unpickled optimizer starts without hooks
        for name in _HOOK_LISTS:
            self.__dict__.setdefault(name, [])

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # --- groups ------------------------------------------------------------------------------

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own options) to `param_groups`."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        tensors, names = _split_names(list(params))
        param_group["params"] = tensors
        if names:
            param_group["param_names"] = names
        for param in tensors:
            _check_param(param, self.defaults.get("differentiable", None))
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization "
                    f"parameter {name}"
                )
            param_group.setdefault(name, default)
        if len({id(p) for p in tensors}) != len(tensors):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                "information",
                stacklevel=3,
            )
        self._check_disjoint(param_group)
        self.param_groups.append(param_group)

    def _check_disjoint(self, param_group: dict[str, Any]) -> None:
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")

    # --- gradients and steps -----------------------------------------------------------------

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients: to None (the default), or to zeros in place."""
        if _profiling() is not None:
            with record_function(f"Optimizer.zero_grad#{type(self).__name__}.zero_grad"):
                return self._zero_grad(set_to_none)
        return self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none: bool) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _step_group(self, group: dict[str, Any]) -> None:
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if len(state) == 0:
                self._init_state(p, group, state)
            self._update(p, p.grad, state, group)

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        """Fill a parameter's empty state before its first update."""

    def _update(self, p: Tensor, grad: Tensor, state: dict[str, Any], group: dict) -> None:
        raise NotImplementedError

    # --- hooks -------------------------------------------------------------------------------

    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` runs before each `step`; it may return new
        `(args, kwargs)`."""
        return _add_hook(self._step_pre_hooks, hook, False)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` runs after each `step`."""
        return _add_hook(self._step_post_hooks, hook, False)

    def register_state_dict_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """`hook(optimizer)` runs before `state_dict()` builds the dict."""
        return _add_hook(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """`hook(optimizer, state_dict)` runs on the built dict; it may return a new one."""
        return _add_hook(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """`hook(optimizer, state_dict)` runs on a shallow copy of the dict being loaded; it
        may return the dict to load instead."""
        return _add_hook(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """`hook(optimizer)` runs after `load_state_dict()`."""
        return _add_hook(self._load_state_dict_post_hooks, hook, prepend)

    # --- state dicts -------------------------------------------------------------------------

    def state_dict(self) -> StateDict:
        """`{'state': {param id: state}, 'param_groups': [group options with 'params' as
        ids]}`; ids number the parameters in group order."""
        for pre_hook in list(self._state_dict_pre_hooks):
            pre_hook(self)
        ids: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                ids.setdefault(id(p), len(ids))
            packed["params"] = [ids[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {
            (ids[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()
        }
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in list(self._state_dict_post_hooks):
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: StateDict) -> None:
        """Load a `state_dict()`: groups must match in number and size; floating state
        tensors are cast to their parameter's dtype (`step` excepted)."""
        state_dict = state_dict.copy()
        for pre_hook in list(self._load_state_dict_pre_hooks):
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(self.param_groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(
            len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)
        ):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in self.param_groups),
            )
        )
        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                state[id_map[key]] = _cast_state(id_map[key], value)
            else:
                state[key] = value
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for post_hook in list(self._load_state_dict_post_hooks):
            post_hook(self)


Optimizer.step = _hooked_step(Optimizer.step)  # type: ignore[method-assign]


def _add_hook(hooks: list[Callable], hook: Callable, prepend: bool) -> RemovableHandle:
    if prepend:
        hooks.insert(0, hook)
    else:
        hooks.append(hook)
    return RemovableHandle(hooks, hook)


def _split_names(params: list[Any]) -> tuple[list[Any], list[Any]]:
    """Separate `(name, tensor)` pairs (from `named_parameters()`) from bare tensors."""
    tensors, names = [], []
    for param in params:
        if isinstance(param, tuple):
            names.append(param[0])
            tensors.append(param[1])
        else:
            tensors.append(param)
    if names and len(names) != len(tensors):
        raise ValueError(
            "all optimizer params should be with/without names. Some param names are missing"
        )
    return tensors, names


def _check_param(param: object, differentiable: object) -> None:
    if not isinstance(param, Tensor):
        raise TypeError(
            "optimizer can only optimize Tensors, but one of the params is " + typename(param)
        )
    if not differentiable and not (param.is_leaf or param.retains_grad):
        raise ValueError("can't optimize a non-leaf Tensor")


def _cast_state(param: Tensor, value: Any, key: Any = None) -> Any:
    """A loaded state value with its tensors on the parameter's device (floating ones in its
    dtype; `step` as saved). As in PyTorch, a tensor that needs no conversion is not copied:
    the optimizer then shares it with the state dict."""
    if isinstance(value, Tensor):
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value


def real_view(t: Tensor) -> Tensor:
    """A complex tensor as its real view (a trailing dimension of 2); others as they are.
    PyTorch's optimizers update complex parameters component by component this way."""
    return aten.view_as_real.default(t) if t.is_complex() else t
