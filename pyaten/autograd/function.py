"""Custom autograd functions: `class F(pyaten.autograd.Function)` with forward and backward.

As in PyTorch, `F.apply(*args)` runs `forward` with grad mode off and, when an input
requires grad, records one node whose `backward` is the user's. The context `ctx` *is* that
node (`y.grad_fn`, named `FBackward`): `ctx.save_for_backward`, `ctx.saved_tensors` (checked
against in-place changes), `ctx.needs_input_grad`, `ctx.mark_dirty`,
`ctx.mark_non_differentiable`, `ctx.set_materialize_grads`. `forward` may take `ctx` itself
or leave it to a separate `setup_context(ctx, inputs, output)`.

Under pyaten.func's transforms `apply` first asks the hook that pyaten.func installs
(`set_functorch_hook`; Note: autograd.Function under the transforms, in
pyaten/func/_autograd_function.py), which runs the `vmap` staticmethod or the generated
vmap rule and raises torch's errors; this layer does not import the transforms.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from pyaten.autograd.forward_ad import FW, set_tangent
from pyaten.autograd.grad_mode import GRAD, no_grad
from pyaten.autograd.graph import Node, SavedTensor, gradient_edge, set_history
from pyaten.autograd.runtime import check_inplace, rebase_history
from pyaten.core.tensor import Tensor

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable"]

# Returned by the functorch hook when no transform concerns the call.
NOT_HANDLED = object()
_FUNCTORCH_HOOK: list[Callable | None] = [None]
_FUNCTORCH_BACKWARD: list[Callable | None] = [None]


def set_functorch_hook(hook: Callable | None, backward: Callable | None = None) -> None:
    """Install `hook(cls, args, kwargs)`, asked first by every `Function.apply`: it returns
    the call's result, or NOT_HANDLED for the ordinary path; and `backward(node, grads)`,
    asked first by a node that kept its inputs' shapes (`record_apply(keep_input_meta=True)`),
    which returns its gradients or NOT_HANDLED for the user's `backward`."""
    _FUNCTORCH_HOOK[0] = hook
    _FUNCTORCH_BACKWARD[0] = backward


class FunctionCtx:
    """What `forward`/`setup_context` and `backward` share (the node itself, in apply)."""

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    "save_for_backward can only save variables, but argument "
                    f"{tensors.index(t)} is of type {type(t).__name__}"
                )
        self.to_save = tensors

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors: Tensor) -> None:
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


class BackwardCFunction(Node, FunctionCtx):
    """The node of one `Function.apply` call; also the `ctx` its methods receive."""

    _forward_cls: type[Function]

    def __init__(self) -> None:
        Node.__init__(self)
        self.to_save: tuple = ()
        self.materialize_grads = True
        self._saved: list[SavedTensor | None] | None = None

    def name(self) -> str:
        return type(self).__name__

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        forward = self.__dict__.get("_in_jvp")
        if forward is not None:  # inside `jvp`: what save_for_forward saved (torch's rule)
            return forward
        if self._released:
            self._raise_released()
        if self._saved is None:
            return tuple(self.to_save)
        return tuple(None if s is None else s.unpack(self) for s in self._saved)

    def release_variables(self) -> None:
        super().release_variables()
        if self._saved is not None:
            for s in self._saved:
                if s is not None:
                    s.release()

    def apply(self, grads: tuple) -> tuple:
        cls = self._forward_cls
        hook = _FUNCTORCH_BACKWARD[0]
        if hook is not None and "_input_meta" in self.__dict__:
            result = hook(self, grads)
            if result is not NOT_HANDLED:
                return result
        grads = list(grads)
        if self.materialize_grads:
            from pyaten.autograd.engine import empty_strided

            for i, g in enumerate(grads):
                meta = self.input_meta[i] if i < len(self.input_meta) else None
                if g is None and meta is not None:
                    sizes, dtype, device = meta
                    z = empty_strided(sizes, None, _Like(dtype, device))
                    z.zero_()
                    grads[i] = z
        result = cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        expected = self._num_inputs
        if len(result) != expected:
            if len(result) > expected and all(r is None for r in result[expected:]):
                result = result[:expected]
            else:
                raise RuntimeError(
                    f"function {self.name()} returned an incorrect number of gradients "
                    f"(expected {expected}, got {len(result)})"
                )
        return tuple(result[i] for i in self._tensor_positions)


class _Like:
    # The dtype and device `empty_strided` needs, without a tensor.
    __slots__ = ("_dtype", "_device")

    def __init__(self, dtype: Any, device: Any) -> None:
        self._dtype = dtype
        self._device = device


class _FunctionMeta(type):
    """Gives each Function subclass its node class, `<Name>Backward`."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        backward_cls = type(
            name + "Backward", (BackwardCFunction,), {"_forward_cls": cls, "__slots__": ()}
        )
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=_FunctionMeta):
    """Base class of custom differentiable operations (use `apply`, never the instance)."""

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    # vmap support (docs/func.md): a `vmap(info, in_dims, *args)` staticmethod returning
    # `(outputs, out_dims)`, or `generate_vmap_rule = True` to run forward on the batch
    generate_vmap_rule = False

    @staticmethod
    def vmap(info: Any, in_dims: Any, *args: Any) -> Any:
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the vmap "
            "staticmethod or set generate_vmap_rule=True."
        )

    @staticmethod
    def jvp(ctx: Any, *grad_inputs: Any) -> Any:
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please "
            "use new-style autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        if cls.setup_context is not Function.setup_context:
            args, kwargs = _bind_to_forward(cls, args, kwargs)
        hook = _FUNCTORCH_HOOK[0]
        if hook is not None:
            result = hook(cls, args, kwargs)
            if result is not NOT_HANDLED:
                return result
        return record_apply(cls, args, kwargs)


def _bind_to_forward(cls: type[Function], args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Keywords and defaults bound to `forward`'s positions, as torch binds them for a
    Function with `setup_context` (its `inputs` hold them)."""
    signature = cls.__dict__.get("_forward_signature")
    if signature is None:
        signature = inspect.signature(cls.forward)
        cls._forward_signature = signature
    if not kwargs and len(args) >= len(signature.parameters):
        return args, kwargs
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def record_apply(
    cls: type[Function], args: tuple, kwargs: dict, forward: Callable | None = None,
    keep_input_meta: bool = False,
) -> Any:
    """`cls.apply`'s ordinary path: run the forward without grad (`forward()` when given,
    which must return what `cls.forward` would), record one node when an input requires
    grad, and give the outputs the tangents of `cls.jvp` when an input carries one (forward
    AD). `keep_input_meta` keeps the inputs' shapes on the node (what pyaten.func's jvp
    needs: Note: autograd.Function under the transforms)."""
    ctx = cls._backward_cls()
    positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    recording = GRAD.enabled and any(ctx.needs_input_grad)
    dual = FW[0] != -1 and any(args[i]._fw_grad is not None for i in positions)
    uses_setup = cls.setup_context is not Function.setup_context
    level = FW[0]
    FW[0] = -1  # forward sees primals only, as in torch
    try:
        with no_grad():
            if uses_setup:
                output = cls.forward(*args, **kwargs) if forward is None else forward()
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
    finally:
        FW[0] = level
    if not recording and not dual:
        return output
    outputs = output if isinstance(output, tuple) else (output,)
    dirty = getattr(ctx, "dirty_tensors", ())
    frozen = getattr(ctx, "non_differentiable", ())
    inputs = [args[i] for i in positions]
    chosen: list[Tensor | None] = []
    new_outputs = []
    for t in outputs:
        if not isinstance(t, Tensor):
            new_outputs.append(t)
            chosen.append(None)
            continue
        if any(t is d for d in dirty):
            if recording:
                check_inplace(t)
        elif any(t is i for i in inputs):
            t = _alias(t)  # an input returned as is becomes a new output (PyTorch: a view)
        differentiable = (t._dtype.is_floating_point or t._dtype.is_complex) and not any(
            t is f for f in frozen
        )
        new_outputs.append(t)
        chosen.append(t if differentiable else None)
    if recording:
        _record_node(ctx, args, positions, chosen, dirty, forward is None, keep_input_meta)
    if dual:  # after recording, as torch: a tangent computed from outputs has their history
        _forward_tangents(cls, ctx, args, outputs, new_outputs, chosen, dirty)
    if isinstance(output, tuple):
        return tuple(new_outputs)
    return new_outputs[0]


def _record_node(ctx: BackwardCFunction, args: tuple, positions: tuple, chosen: list,
                 dirty: tuple, own_forward: bool, keep_input_meta: bool) -> None:
    """Make `ctx` the node of the differentiable outputs `chosen` and save what it saved."""
    ctx._num_inputs = len(args)
    ctx._tensor_positions = positions
    ctx.next_functions = tuple(gradient_edge(args[i]) for i in positions)
    if keep_input_meta:
        ctx._input_meta = tuple((args[i]._sizes, args[i]._dtype) for i in positions)
    set_history(chosen, ctx)
    for t in chosen:
        if t is not None and any(t is d for d in dirty) and t._base is not None:
            rebase_history(t, ctx)
    # with a `forward` of its own (a node on BatchedTensors), a saved output is kept itself:
    # an alias without history would detach its batch, which keeps the levels below's history
    ctx._saved = [
        None if t is None else SavedTensor(
            t, is_output=own_forward and any(t is o for o in chosen))
        for t in ctx.to_save
    ]
    ctx.to_save = ()


def _input_tangent(a: Any) -> Tensor | None:
    """What `jvp` receives for one argument: its tangent, zeros for a floating tensor that
    has none, None for anything else."""
    if not isinstance(a, Tensor):
        return None
    if a._fw_grad is not None:
        return a._fw_grad
    if a._dtype.is_floating_point or a._dtype.is_complex:
        return a.detach().new_zeros(a.shape)
    return None


def run_jvp(cls: type[Function], ctx: Any, tangents: list, n_outputs: int) -> tuple:
    """`cls.jvp(ctx, *tangents)` with `ctx.saved_tensors` reading what `save_for_forward`
    saved, its result as a tuple of `n_outputs` (torch's count error otherwise)."""
    ctx._in_jvp = tuple(getattr(ctx, "saved_for_forward", ()))
    try:
        result = cls.jvp(ctx, *tangents)
    finally:
        ctx._in_jvp = None
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) != n_outputs:
        raise RuntimeError(
            "Function's jvp returned an invalid number of forward gradients (expected "
            f"{n_outputs} but got {len(result)})"
        )
    return result


def _forward_tangents(cls: type[Function], ctx: Any, args: tuple, outputs: tuple,
                      new_outputs: list, chosen: list, dirty: tuple) -> None:
    """Forward AD through a Function: the outputs get the tangents its `jvp` returns for
    the inputs' tangents, checked as torch checks them."""
    if cls.jvp is Function.jvp:
        Function.jvp(ctx)  # torch's NotImplementedError
    tangents = [_input_tangent(a) for a in args]
    level = FW[0]
    FW[0] = -1  # jvp computes tangents from primals; its own ops need none
    try:
        result = run_jvp(cls, ctx, tangents, len(outputs))
    finally:
        FW[0] = level
    for i, r in enumerate(result):
        if r is None:
            continue
        if not isinstance(r, Tensor):
            raise RuntimeError(
                f"expected Variable or None (got {type(r).__name__}) for grad output {i}."
            )
        out, original = new_outputs[i], outputs[i]
        if chosen[i] is None:
            raise RuntimeError(
                f"Function's jvp returned a gradient at position {i}, but  the corresponding "
                "forward output is not a differentiable Tensor.You should return None at that "
                "position instead."
            )
        if any(original is d for d in dirty):
            source = next(t for a, t in zip(args, tangents, strict=True) if a is original)
            if r is not source:
                raise RuntimeError(
                    "An inplace custom Function is not modifying the forward mode gradients "
                    "inplace. If the forward is modifying an input inplace, then the jvp "
                    "function must modify the corresponding gradient inplace."
                )
        elif out is not original and r._base is None:
            raise RuntimeError(
                "A custom Function's forward is returning a view (or an input as-is) but the "
                "jvp is not returning a view."
            )
        if tuple(r.shape) != tuple(out.shape):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size {list(out.shape)} "
                f"while the given forward gradient is of size {list(r.shape)}."
            )
        set_tangent(out, r)


def _alias(t: Tensor) -> Tensor:
    out = Tensor._make(t._storage, t._sizes, t._strides, t._offset, t._dtype, t._device)
    out._version_counter = t._version_counter
    out._keyset = t._keyset
    out._base = t if t._base is None else t._base
    return out


class _DoubleBackwardError(Node):
    __slots__ = ()

    def apply(self, grads: tuple) -> tuple:
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with "
            "@once_differentiable"
        )


def once_differentiable(backward: Callable) -> Callable:
    """Run `backward` without recording; differentiating its result again raises."""

    @functools.wraps(backward)
    def wrapper(ctx: Any, *grads: Any) -> Any:
        with no_grad():
            outputs = backward(ctx, *grads)
        if not GRAD.enabled:
            return outputs
        needs = any(isinstance(g, Tensor) and g.requires_grad for g in grads)
        if not needs:
            return outputs
        items = outputs if isinstance(outputs, tuple) else (outputs,)
        node = _DoubleBackwardError()
        node.next_functions = tuple(
            gradient_edge(g) for g in grads if isinstance(g, Tensor)
        )
        set_history([t if isinstance(t, Tensor) else None for t in items], node)
        return outputs

    return wrapper
