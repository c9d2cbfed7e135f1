"""Hook plumbing for `Module`: removable handles and full backward hooks.

Note: full backward hooks. A module's backward hooks need the gradients with respect to
its inputs and outputs together. Around the forward call the module routes the tensors that
require grad through an identity autograd Function, once on the way in and once on the way
out. The node of the output identity sees the gradients of the outputs first (the backward
pre-hooks run there and may replace them); the node of the input identity then sees the
gradients of the inputs, and the backward hooks run there with both. When no input requires
grad, the hooks run at the output node with a grad_input of Nones, as in PyTorch.
"""

from __future__ import annotations

import itertools
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from pyaten.autograd.function import Function
from pyaten.autograd.grad_mode import is_grad_enabled
from pyaten.core.tensor import Tensor

_handle_ids = itertools.count()


class RemovableHandle:
    """Removes the hook it was returned for (`handle.remove()`, or leaving a `with` block)."""

    def __init__(self, hooks: dict, *, extra_dict: dict | list[dict] | None = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks)
        self.id = next(_handle_ids)
        extras = [] if extra_dict is None else extra_dict
        extras = [extras] if isinstance(extras, dict) else extras
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self) -> None:
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            hooks = ref()
            if hooks is not None:
                hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


class _Identity(Function):
    """Passes tensors through unchanged; its node is where module backward hooks attach."""

    @staticmethod
    def forward(ctx: Any, *tensors: Tensor) -> tuple[Tensor, ...]:
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple[Tensor, ...]:
        return grads


def _route(values: tuple) -> tuple[tuple, list[int], Any]:
    """`values` with its tensors that require grad replaced by identities, their positions,
    and the identity node (None when nothing requires grad or grad mode is off)."""
    positions = [
        i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad
    ]
    if not positions or not is_grad_enabled():
        return values, [], None
    routed = _Identity.apply(*(values[i] for i in positions))
    out = list(values)
    for i, t in zip(positions, routed):
        out[i] = t
    return tuple(out), positions, routed[0].grad_fn


def _spread(positions: Sequence[int], grads: Sequence, size: int) -> tuple:
    """Gradients of the routed tensors placed at their positions, None elsewhere."""
    full: list = [None] * size
    for i, g in zip(positions, grads):
        full[i] = g
    return tuple(full)


class BackwardHook:
    """One forward call's backward hooks (Note: full backward hooks)."""

    def __init__(self, module: Any, hooks: list[Callable], pre_hooks: list[Callable]) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs: tuple | None = None
        self.n_inputs = 0
        self.input_node: Any = None

    def setup_input_hook(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        routed, positions, node = _route(args)
        self.input_node = node
        if node is not None:
            node.register_hook(self._input_hook(positions))
        return routed

    def _input_hook(self, positions: list[int]) -> Callable:
        def hook(grad_inputs: tuple, _grad_outputs: tuple) -> tuple | None:
            if self.grad_outputs is None:
                return None  # the gradient reached the inputs without passing the outputs
            current = _spread(positions, grad_inputs, self.n_inputs)
            for user_hook in self.hooks:
                replaced = user_hook(self.module, current, self.grad_outputs)
                if replaced is None:
                    continue
                if len(replaced) != len(current):
                    raise RuntimeError(
                        "Backward hook returned an invalid number of grad_input, "
                        f"got {len(replaced)}, but expected {len(current)}"
                    )
                current = replaced
            self.grad_outputs = None
            return tuple(current[i] for i in positions)

        return hook

    def setup_output_hook(self, result: Any) -> Any:
        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        routed, positions, node = _route(outputs)
        if node is not None:
            node.register_hook(self._output_hook(positions, len(outputs)))
        return routed[0] if single else routed

    def _output_hook(self, positions: list[int], n_outputs: int) -> Callable:
        def hook(_grad_inputs: tuple, grad_outputs: tuple) -> tuple:
            current = _spread(positions, grad_outputs, n_outputs)
            for pre_hook in self.pre_hooks:
                replaced = pre_hook(self.module, current)
                if replaced is None:
                    continue
                if len(replaced) != len(current):
                    raise RuntimeError(
                        "Backward pre hook returned an invalid number of grad_output, "
                        f"got {len(replaced)}, but expected {len(current)}"
                    )
                current = replaced
            self.grad_outputs = current
            if self.input_node is None:
                self._run_without_input_grads()
            return tuple(current[i] for i in positions)

        return hook

    def _run_without_input_grads(self) -> None:
        warnings.warn(
            "Full backward hook is firing when gradients are computed with respect to module "
            "outputs since no inputs require gradients. See "
            "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
            "#torch.nn.Module.register_full_backward_hook for more details.",
            stacklevel=5,
        )
        nones = (None,) * self.n_inputs
        for user_hook in self.hooks:
            replaced = user_hook(self.module, nones, self.grad_outputs)
            if replaced is not None and not (
                isinstance(replaced, tuple) and all(g is None for g in replaced)
            ):
                raise RuntimeError(
                    "Backward hook for Modules where no input requires gradient should always "
                    "return None or None for all gradients."
                )
        self.grad_outputs = None


def call_with_hooks(module: Any, args: tuple, kwargs: dict) -> Any:
    """One call through forward pre-hooks, backward-hook routing, forward and forward hooks."""
    result = None
    called: set[int] = set()
    try:
        args, kwargs = _run_pre_hooks(module, args, kwargs)
        backward_hook = None
        if module._backward_hooks or module._backward_pre_hooks:
            backward_hook = BackwardHook(
                module, list(module._backward_hooks.values()),
                list(module._backward_pre_hooks.values()),
            )
            args = backward_hook.setup_input_hook(args)
        result = module.forward(*args, **kwargs)
        for hook_id, hook in module._forward_hooks.items():
            if hook_id in module._forward_hooks_always_called:
                called.add(hook_id)
            result = _run_forward_hook(module, hook_id, hook, args, kwargs, result)
        if backward_hook is not None:
            result = backward_hook.setup_output_hook(result)
        return result
    except Exception:
        _run_always_called(module, called, args, kwargs, result)
        raise


def _run_pre_hooks(module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    for hook_id, hook in module._forward_pre_hooks.items():
        if hook_id in module._forward_pre_hooks_with_kwargs:
            out = hook(module, args, kwargs)
            if out is None:
                continue
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(
                    "forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                    f"but got {out}."
                )
            args, kwargs = out
        else:
            out = hook(module, args)
            if out is not None:
                args = out if isinstance(out, tuple) else (out,)
    return args, kwargs


def _run_forward_hook(
    module: Any, hook_id: int, hook: Callable, args: tuple, kwargs: dict, result: Any
) -> Any:
    if hook_id in module._forward_hooks_with_kwargs:
        out = hook(module, args, kwargs, result)
    else:
        out = hook(module, args, result)
    return result if out is None else out


def _run_always_called(
    module: Any, called: set[int], args: tuple, kwargs: dict, result: Any
) -> None:
    """After forward raised: the `always_call` hooks that did not run yet, errors silenced."""
    for hook_id, hook in module._forward_hooks.items():
        if hook_id not in module._forward_hooks_always_called or hook_id in called:
            continue
        try:
            result = _run_forward_hook(module, hook_id, hook, args, kwargs, result)
        except Exception as error:  # noqa: BLE001 - the forward's error is the one raised
            warnings.warn(
                "module forward hook with ``always_call=True`` raised an exception that was "
                f"silenced as another error was raised in forward: {error}",
                stacklevel=2,
            )
