"""Activation checkpointing: run a piece of a model without keeping what its backward needs,
and run it again during backward (docs/checkpointing.md).

Note: the two modes, and how pyaten finds what the segment differentiates
    `use_reentrant=True` is PyTorch's `CheckpointFunction`: an autograd Function whose inputs
    are the call's tensor arguments; forward runs the segment without grad, backward runs it
    again with grad and calls `backward()` on the recomputed outputs, so parameters used
    inside get their `.grad` through that inner backward (which is why PyTorch refuses it
    under `autograd.grad`). `use_reentrant=False` must also answer `autograd.grad(loss,
    params)`, which PyTorch does with saved-tensor hooks that pyaten's autograd does not
    have. So here the forward runs without grad under a torch-function mode that notes every
    tensor from outside the segment that requires grad (arguments, parameters, captured
    tensors); those become inputs of the Function node, and backward recomputes the segment
    and returns `autograd.grad` of the outputs with respect to all of them: the gradients
    flow on through the outer graph's own edges. Either way the segment keeps only its inputs
    between forward and backward.

Both recompute with the random state the forward started from (`preserve_rng_state`), so
dropout draws the same mask, and leave the generator as the backward found it.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from pyaten.autograd import engine
from pyaten.autograd.function import Function
from pyaten.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from pyaten.core.generator import get_rng_state, set_rng_state
from pyaten.core.tensor import Tensor
from pyaten.core.torch_function import (
    _pop_torch_function_stack,
    _push_on_torch_function_stack,
)
from pyaten.utils._pytree import (
    tree_flatten,
    tree_map,  # noqa: F401 (PyTorch's module has it too)
    tree_unflatten,
)

__all__ = [
    "CheckpointError", "DefaultDeviceType", "check_backward_validity", "checkpoint",
    "checkpoint_sequential", "detach_variable", "get_device_states", "noop_context_fn",
    "set_checkpoint_debug_enabled", "set_checkpoint_early_stop", "set_device_states",
]


class CheckpointError(RuntimeError):
    """A checkpointed segment recomputed differently from its forward."""


class DefaultDeviceType:
    """The device type whose random state checkpointing saves ("cpu": pyaten's only one)."""

    _default_device_type = "cpu"

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        return DefaultDeviceType._default_device_type


def detach_variable(inputs: tuple) -> tuple:
    """Each tensor of the tuple detached, keeping its `requires_grad`."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(
            "Only tuple of tensors is supported. Got Unsupported input type: "
            f"{type(inputs).__name__}"
        )
    out = []
    for item in inputs:
        if isinstance(item, Tensor):
            detached = item.detach()
            detached.requires_grad = item.requires_grad
            item = detached
        out.append(item)
    return tuple(out)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    if not any(t.requires_grad for t in inputs if isinstance(t, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def get_device_states(*args: Any) -> tuple[list[int], list[Any]]:
    """The accelerator random states of the devices the tensors are on: none in pyaten."""
    return [], []


def set_device_states(devices: list[int], states: list[Any], *,
                      device_type: str | None = None) -> None:
    """Restore accelerator random states (pyaten has no accelerator: nothing to do)."""


_EARLY_STOP = [True]
_DEBUG = [False]


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):  # noqa: ANN201 (a generator context manager)
    """Accepted as PyTorch's (pyaten's recomputation always runs the whole segment)."""
    previous, _EARLY_STOP[0] = _EARLY_STOP[0], enable
    try:
        yield
    finally:
        _EARLY_STOP[0] = previous


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):  # noqa: ANN201
    """Accepted as PyTorch's (pyaten's checkpoint keeps no debug trace)."""
    previous, _DEBUG[0] = _DEBUG[0], enabled
    try:
        yield
    finally:
        _DEBUG[0] = previous

_REENTRANT_WARNING = (
    "pyaten.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
    "exception. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants."
)
_SEQUENTIAL_WARNING = (
    "pyaten.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
    "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
    "passed. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
    "the differences between the two variants."
)


def noop_context_fn() -> tuple[contextlib.AbstractContextManager, ...]:
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def _rng_state(state: object | None):  # noqa: ANN202 (a generator context manager)
    """Run with the generator at `state` (when not None), then put back the one found."""
    if state is None:
        yield
        return
    current = get_rng_state()
    set_rng_state(state)
    try:
        yield
    finally:
        set_rng_state(current)


def _tensors_requiring_grad(outputs: Any) -> list[Tensor]:
    items = outputs if isinstance(outputs, tuple) else (outputs,)
    return [t for t in items if isinstance(t, Tensor) and t.requires_grad]


class CheckpointFunction(Function):
    """The reentrant checkpoint (PyTorch's `CheckpointFunction`)."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        ctx.run_function = run_function
        ctx.rng_state = get_rng_state() if preserve_rng_state else None
        ctx.inputs = []
        ctx.tensor_indices = []
        tensors = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensors)
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = [
            (x.detach().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x)
            for x in inputs
        ]
        with _rng_state(ctx.rng_state), enable_grad():
            outputs = ctx.run_function(*detached)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        with_grad, their_grads = [], []
        for out, grad in zip(outputs, grads):
            if isinstance(out, Tensor) and out.requires_grad:
                with_grad.append(out)
                their_grads.append(grad)
        if not with_grad:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        engine.backward(with_grad, their_grads)
        return (None, None, *(x.grad if isinstance(x, Tensor) else None for x in detached))


class _GradInputs:
    """A torch-function mode (as `pyaten.overrides.TorchFunctionMode`, pushed on PyTorch's
    mode stack) noting each tensor an overridable call receives that requires grad (see the
    Note)."""

    def __init__(self) -> None:
        self.seen: dict[int, Tensor] = {}

    def __enter__(self) -> _GradInputs:
        _push_on_torch_function_stack(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _pop_torch_function_stack()

    def _note(self, value: Any) -> None:
        if isinstance(value, Tensor):
            if value.requires_grad and id(value) not in self.seen:
                self.seen[id(value)] = value
        elif isinstance(value, (list, tuple)):
            for item in value:
                self._note(item)
        elif isinstance(value, dict):
            for item in value.values():
                self._note(item)

    def __torch_function__(self, func: Callable, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        self._note(args)
        if kwargs:
            self._note(kwargs)
        return func(*args, **(kwargs or {}))


def _differentiable(leaves: list[Any]) -> list[int]:
    return [i for i, t in enumerate(leaves)
            if isinstance(t, Tensor) and (t.is_floating_point() or t.is_complex())]


def _metadata(t: Tensor) -> dict[str, Any]:
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


class _NonReentrantCheckpoint(Function):
    """The non-reentrant checkpoint: inputs are every outside tensor requiring grad; outputs
    the segment's floating-point tensors (`ctx.positions` in its flattened output)."""

    @staticmethod
    def forward(ctx: Any, run: Callable, rng_state: object, check: bool, positions: list[int],
                outputs: tuple, *inputs: Tensor) -> Any:
        ctx.run = run
        ctx.rng_state = rng_state
        ctx.positions = positions
        ctx.forward_metadata = [_metadata(t) for t in outputs] if check else None
        ctx.save_for_backward(*inputs)
        return outputs

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> tuple:
        inputs = ctx.saved_tensors
        with _rng_state(ctx.rng_state), enable_grad():
            leaves, _ = tree_flatten(ctx.run())
        outputs = [leaves[i] if i < len(leaves) else None for i in ctx.positions]
        if ctx.forward_metadata is not None:
            _check_recomputed(ctx.forward_metadata, outputs)
        with_grad, their_grads = [], []
        for out, grad in zip(outputs, grads):
            if isinstance(out, Tensor) and out.requires_grad and grad is not None:
                with_grad.append(out)
                their_grads.append(grad)
        wanted = [t for t in inputs if t.requires_grad]
        found = iter(
            engine.grad(with_grad, wanted, their_grads, allow_unused=True)
            if with_grad and wanted else ()
        )
        return (None, None, None, None, None,
                *(next(found) if t.requires_grad else None for t in inputs))


def _check_recomputed(forward: list[dict[str, Any]], outputs: list[Any]) -> None:
    """`determinism_check="default"`: the recomputed outputs must look as the forward's."""
    wrong = []
    for i, (before, after) in enumerate(zip(forward, outputs)):
        now = _metadata(after) if isinstance(after, Tensor) else None
        if now != before:
            wrong.append(f"tensor at position {i}:\nsaved metadata: {before}\n"
                         f"recomputed metadata: {now}\n")
    if wrong:
        raise CheckpointError(
            "pyaten.utils.checkpoint: Recomputed values for the following tensors have "
            "different metadata than during the forward pass.\n" + "".join(wrong)
        )


def _checkpoint_without_reentrant(
    function: Callable, preserve_rng_state: bool, context_fn: Callable, args: tuple,
    kwargs: dict, determinism_check: str,
) -> Any:
    rng_state = get_rng_state() if preserve_rng_state else None
    forward_context, recompute_context = context_fn()
    finder = _GradInputs()
    for arg in (*args, *kwargs.values()):
        finder._note(arg)
    with forward_context, no_grad(), finder:
        outputs = function(*args, **kwargs)
    inputs = list(finder.seen.values())
    if not is_grad_enabled() or not inputs:
        return outputs

    def run() -> Any:
        with recompute_context:
            return function(*args, **kwargs)

    # any structure of outputs (a tensor, tuples, lists, dicts): its floating-point tensors
    # are returned by the node, as new tensors attached to it, and put back in place
    leaves, spec = tree_flatten(outputs)
    positions = _differentiable(leaves)
    if not positions:
        return outputs
    marked = _NonReentrantCheckpoint.apply(
        run, rng_state, determinism_check == "default", positions,
        tuple(leaves[i] for i in positions), *inputs,
    )
    marked = marked if isinstance(marked, tuple) else (marked,)
    for i, t in zip(positions, marked):
        leaves[i] = t
    return tree_unflatten(leaves, spec)


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    preserve_rng_state: bool = True,
    **kwargs: Any,
) -> Any:
    """Run `function(*args, **kwargs)` keeping only its inputs for backward, which runs it
    again (with the random state it first saw when `preserve_rng_state`)."""
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, stacklevel=2)
        use_reentrant = True
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        check_backward_validity(args)
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    return _checkpoint_without_reentrant(
        function, preserve_rng_state, context_fn, args, kwargs, determinism_check
    )


def checkpoint_sequential(
    functions: Any,
    segments: int,
    input: Any,  # noqa: A002 (PyTorch's name)
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Run a `Sequential` (or a list of modules/functions) in `segments` chunks, checkpointing
    all but the last."""
    if use_reentrant is None:
        warnings.warn(_SEQUENTIAL_WARNING, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and callable(functions.children):  # a Sequential
        functions = list(functions.children())
    functions = list(functions) if isinstance(functions, Iterable) else [functions]

    def run_function(start: int, end: int) -> Callable:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(  # noqa: A001
            run_function(start, end), input, use_reentrant=use_reentrant,
            preserve_rng_state=preserve,
        )
    return run_function(end + 1, len(functions) - 1)(input)


def __getattr__(name: str) -> object:
    """A PyTorch name pyaten lacks says so (docs/coverage.md)."""
    from pyaten.utils.torch_api import module_getattr

    return module_getattr(__name__, "torch.utils.checkpoint", name)
