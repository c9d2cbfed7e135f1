"""Random operators inside vmap and jacfwd: kernels on the FuncTorchVmapMode key.

A random call on tensors no vmap batches (a factory such as `pyaten.rand(3)`, or
`rand_like`/`bernoulli_`/`randperm` on a plain tensor) never meets a BatchedTensor. As in
PyTorch (BatchRulesRandomness), vmap puts FuncTorchVmapMode in the thread's included set
while user code runs, and every random operator that torch registers there has a kernel on
that key which follows the innermost vmap's `randomness`: "error" raises, "same" draws once
for every sample, "different" draws a batch (a factory draws it at once, any other operator
once per sample) and returns it as a BatchedTensor of that level, except in place on a
plain tensor, which torch refuses. Out variants are refused in every mode, and the functional
forms of the in-place samplers (`cauchy`) draw once in every mode, as torch does.

jacfwd's per-vector loop (pyaten/func/_transforms.py) runs the function without a vmap
level, under a "jacfwd" autograd layer that carries its `randomness` and with this key on:
there "error" raises, and the loop itself draws alike ("same": the generator's state put
back for each vector) or anew ("different") for each basis vector.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyaten
from pyaten._functorch.levels import layers
from pyaten.dispatch.tls import ExcludeDispatchKeyGuard
from pyaten.func._batched import BatchedTensor, VmapLevel
from pyaten.func._rules import _RANDOM_ERROR
from pyaten.library import Library
from pyaten.utils._pytree import tree_flatten

__all__ = ["RANDOM_FACTORIES", "RANDOM_OPERATORS", "DRAWN_ONCE", "REFUSED_RANDOM",
           "governing_randomness"]

VMAP_MODE_KEY = "FuncTorchVmapMode"
# overload -> index of its `size` argument
RANDOM_FACTORIES = {
    "rand": 0, "rand.generator": 0, "randn": 0, "randn.generator": 0, "randint": 1,
    "randint.generator": 1, "randint.low": 2, "randint.low_generator": 2,
    "normal.float_float": 2,
}
# the other random operators torch registers on FuncTorchVmapMode
RANDOM_OPERATORS = (
    "bernoulli", "bernoulli.p", "bernoulli.Tensor", "bernoulli_.Tensor", "bernoulli_.float",
    "random_", "random_.from", "random_.to", "cauchy_", "exponential_", "geometric_",
    "log_normal_", "normal_", "uniform_", "randperm", "randperm.generator", "rand_like",
    "rand_like.generator", "randn_like", "randn_like.generator", "randint_like",
    "randint_like.Tensor", "randint_like.Tensor_generator", "randint_like.generator",
    "randint_like.low_dtype", "randint_like.low_generator_dtype", "normal.Tensor_Tensor",
    "normal.Tensor_float", "normal.float_Tensor", "poisson", "binomial", "multinomial",
    "_standard_gamma", "_sample_dirichlet", "native_dropout",
)
RANDOM_OUT_VARIANTS = (
    "rand.out", "randn.out", "randint.out", "randint.generator_out", "randint.low_out",
    "randint.low_generator_out", "randperm.out", "randperm.generator_out", "bernoulli.out",
    "normal.Tensor_Tensor_out", "normal.Tensor_float_out", "normal.float_Tensor_out",
    "normal.float_float_out", "multinomial.out",
)
DROPOUTS = (
    "dropout", "dropout_", "feature_dropout", "feature_dropout_", "alpha_dropout",
    "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
)
# functional forms of the in-place samplers: torch does not see their draws under vmap (they
# draw once, whatever the randomness)
DRAWN_ONCE = (
    "cauchy", "exponential", "geometric", "log_normal", "normal_functional", "random",
    "random.from", "random.to",
)
_INPLACE_DIFFERENT = (
    "vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will "
    "appear like same randomness. If this is necessary for your usage, please file an issue "
    "with functorch."
)
_INPLACE_WIDER = (
    "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a "
    "Tensor `other` in extra_args that has more elements than `self`. This happened due to "
    "`other` being vmapped over but `self` not being vmapped over in a vmap. Please try to use "
    "out-of-place operators instead of inplace arithmetic. If said operator is being called "
    "inside the PyTorch framework, please file a bug report instead."
)
_OUT_VARIANT = (
    "vmap: We do not support calling out variants of random operations inside of vmap. "
    "Please use non-out variants as a workaround"
)

# the messages of the random calls vmap refuses (jacfwd lets them through: its per-vector
# loop would refuse them too)
REFUSED_RANDOM = frozenset((_RANDOM_ERROR, _INPLACE_DIFFERENT, _INPLACE_WIDER, _OUT_VARIANT))


def governing_randomness() -> tuple[str, VmapLevel | None]:
    """The `randomness` a random call follows, and the vmap level it draws a batch for:
    the innermost vmap's, or that of a jacfwd whose per-vector loop runs inside it (no
    level: the loop draws). ("same", None) outside both."""
    for layer in reversed(layers()):
        if isinstance(layer, VmapLevel):
            return layer.randomness, layer
        if layer.kind == "jacfwd":
            return layer.randomness, None
    return "same", None


def _split(func: Any) -> Callable[[tuple], tuple[tuple, dict]]:
    # a kernel receives every argument in schema order; the handle takes keywords
    arguments = func._schema.arguments
    positional = sum(1 for a in arguments if not a.kwarg_only)
    keywords = [a.name for a in arguments[positional:]]
    return lambda boxed: (boxed[:positional], dict(zip(keywords, boxed[positional:],
                                                       strict=False)))


def _factory_kernel(func: Any, size_index: int) -> Callable:
    split = _split(func)

    def kernel(*boxed: Any) -> Any:
        args, kwargs = split(boxed)
        randomness, entry = governing_randomness()
        with ExcludeDispatchKeyGuard(VMAP_MODE_KEY):
            if randomness == "error":
                raise RuntimeError(_RANDOM_ERROR)
            if randomness == "same" or entry is None:
                return func(*args, **kwargs)
            args = list(args)
            args[size_index] = [entry.batch_size, *args[size_index]]
            return BatchedTensor(func(*args, **kwargs), entry.level)

    return kernel


def _batched_at(entry: VmapLevel | None, args: tuple, kwargs: dict) -> bool:
    """Whether an argument is batched at the vmap level `entry` (None: jacfwd's loop, which
    batches nothing)."""
    return entry is not None and any(isinstance(x, BatchedTensor) and x.level == entry.level
                                     for x in tree_flatten((args, kwargs))[0])


def _operator_kernel(func: Any) -> Callable:
    split = _split(func)
    returns = func._schema.returns
    inplace = bool(returns) and returns[0].annotation is not None
    eval_dropout = func.overloadpacket.__name__ == "native_dropout"

    def kernel(*boxed: Any) -> Any:
        args, kwargs = split(boxed)
        randomness, entry = governing_randomness()
        with ExcludeDispatchKeyGuard(VMAP_MODE_KEY):
            if _batched_at(entry, args, kwargs) or (
                    eval_dropout and len(args) > 2 and args[2] is False):
                # a batch of this level goes to its batching rule (pyaten/func/_rules.py),
                # which follows the same `randomness`; eval mode draws nothing
                return func(*args, **kwargs)
            if randomness == "error":
                raise RuntimeError(_RANDOM_ERROR)
            if randomness == "different" and inplace:
                raise RuntimeError(_INPLACE_DIFFERENT)
            if randomness == "same" or entry is None:
                return func(*args, **kwargs)
            samples = [func(*args, **kwargs) for _ in range(entry.batch_size)]
        if isinstance(samples[0], tuple):
            return tuple(BatchedTensor(pyaten.stack(list(column)), entry.level)
                         for column in zip(*samples, strict=True))
        return BatchedTensor(pyaten.stack(samples), entry.level)

    return kernel


def _dropout_kernel(func: Any) -> Callable:
    """The dropouts that decompose (`dropout`, `feature_dropout`, their alpha and in-place
    forms): "different" on a plain tensor runs them on it expanded to a batch (the in-place
    forms would write that batch to it: refused as torch refuses it)."""
    split = _split(func)
    inplace = func.overloadpacket.__name__.endswith("_")

    def kernel(*boxed: Any) -> Any:
        args, kwargs = split(boxed)
        x, p, train = args[0], args[1], args[2]
        randomness, entry = governing_randomness()
        with ExcludeDispatchKeyGuard(VMAP_MODE_KEY):
            if not train or p == 0 or _batched_at(entry, (x,), {}):
                return func(*args, **kwargs)
            if randomness == "error":
                raise RuntimeError(_RANDOM_ERROR)
            if randomness == "same" or entry is None:
                return func(*args, **kwargs)
            if inplace:
                raise RuntimeError(_INPLACE_WIDER)
            batch = BatchedTensor(x.expand(entry.batch_size, *x.shape), entry.level)
            return func(batch, *args[1:], **kwargs)

    return kernel


def _once_kernel(func: Any) -> Callable:
    split = _split(func)

    def kernel(*boxed: Any) -> Any:
        args, kwargs = split(boxed)
        with ExcludeDispatchKeyGuard(VMAP_MODE_KEY):
            return func(*args, **kwargs)

    return kernel


def _out_kernel(*boxed: Any) -> Any:
    raise RuntimeError(_OUT_VARIANT)


def _handle(name: str) -> Any:
    packet, _, overload = name.partition(".")
    return getattr(getattr(pyaten.ops.aten, packet), overload or "default")


_LIBRARY = Library("aten", "IMPL")
for _name, _index in RANDOM_FACTORIES.items():
    _LIBRARY.impl(_name, _factory_kernel(_handle(_name), _index), VMAP_MODE_KEY)
for _name in RANDOM_OPERATORS:
    _LIBRARY.impl(_name, _operator_kernel(_handle(_name)), VMAP_MODE_KEY)
for _name in DROPOUTS:
    _LIBRARY.impl(_name, _dropout_kernel(_handle(_name)), VMAP_MODE_KEY)
for _name in DRAWN_ONCE:
    _LIBRARY.impl(_name, _once_kernel(_handle(_name)), VMAP_MODE_KEY)
for _name in RANDOM_OUT_VARIANTS:
    _LIBRARY.impl(_name, _out_kernel, VMAP_MODE_KEY)
