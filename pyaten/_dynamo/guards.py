"""Guards: what must hold of a call for a captured graph to be reused.

A graph bakes in everything about its inputs that the capture run depended on, so its guard
set records it: for each tensor input its type, shape, strides, dtype, device and
`requires_grad`; for every other input its value (ints, floats, strings: capture
specializes on them, as PyTorch's does without `dynamic`) or its identity; the pytree
structure of the arguments; grad mode and CPU autocast; and for a compiled module the
identity of its parameters and buffers and every submodule's `training` flag. `check`
returns None when the call passes, else the first failure in words (PyTorch's wording),
which the report keeps. A dynamic capture's `DynamicGuardSet` checks a tensor's rank
instead of its sizes, and its sizes and strides through the capture's `ShapeEnv`
(pyaten/fx/experimental/symbolic_shapes.py), with one generated expression per call.

Note: the call guard
    Reading `.shape`, `stride()` and `requires_grad` through the public properties (which
    honour `__torch_function__`), building a key tuple per leaf and walking the module tree
    cost a compiled call more than a small graph's kernels. So each static entry also gets
    one generated straight-line function over the call's positional arguments
    (`call_guard`): exact class, the internal `_sizes`, `_strides`, `_dtype`, `_device`
    and `_requires_grad` fields, values and identities, the lifted constants'
    `_requires_grad`, and the module's registries read directly. It is a sufficient test
    only: True means `GuardSet.check` passes; False (or no such function: keyword or nested
    arguments) sends the call to `check`, which decides and says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyaten.core.tensor import Tensor

__all__ = ["DynamicGuardSet", "GuardSet", "build_dynamic_guards", "build_guards", "call_guard"]

_VALUE_TYPES = (bool, int, float, complex, str, bytes, type(None))


def _tensor_key(t: Tensor) -> tuple:
    return (type(t), tuple(t.shape), t.stride(), t.dtype, t.device, t.requires_grad)


def _leaf_key(value: Any) -> tuple:
    if isinstance(value, Tensor):
        return ("tensor",) + _tensor_key(value)
    if isinstance(value, _VALUE_TYPES):
        return ("value", type(value), value)
    return ("id", id(value))


def _module_state(module: Any) -> tuple:
    if module is None:
        return ()
    params = tuple((name, id(p)) for name, p in module.named_parameters())
    buffers = tuple((name, id(b)) for name, b in module.named_buffers())
    training = tuple(m.training for _, m in module.named_modules())
    return (params, buffers, training)


@dataclass(frozen=True)
class GuardSet:
    """The facts a captured graph depends on (see the module docstring)."""

    spec: Any
    leaves: tuple
    state: tuple  # (grad mode, CPU autocast on, its dtype)
    module_state: tuple

    @property
    def grad_enabled(self) -> bool:
        return self.state[0]

    def check(self, spec: Any, flat: list[Any], state: tuple,
              module: Any = None) -> str | None:
        if state[0] != self.state[0]:
            return f"grad mode changed: expected {self.state[0]}, got {state[0]}"
        if state != self.state:
            return f"autocast state changed: expected {self.state[1:]}, got {state[1:]}"
        if spec != self.spec or len(flat) != len(self.leaves):
            return "the structure of the arguments changed"
        for i, (value, expected) in enumerate(zip(flat, self.leaves)):
            got = _leaf_key(value)
            if got != expected:
                return _describe(i, expected, got)
        if module is not None and _module_state(module) != self.module_state:
            return _describe_module(self.module_state, _module_state(module))
        return None

    def describe(self) -> list[str]:
        """The guards as lines of text (`explain` prints them)."""
        lines = [f"grad mode is {'enabled' if self.grad_enabled else 'disabled'}"]
        if self.state[1]:
            lines.append(f"CPU autocast to {self.state[2]}")
        lines += [_leaf_line(i, key) for i, key in enumerate(self.leaves)]
        if self.module_state:
            lines.append(_module_line(self.module_state))
        return lines


def _leaf_line(i: int, key: tuple) -> str:
    if key[0] == "tensor":
        _, kind, shape, stride, dtype, device, requires_grad = key
        return (f"input {i}: {kind.__name__} size={list(shape)} stride={list(stride)} "
                f"dtype={dtype} device={device} requires_grad={requires_grad}")
    if key[0] == "value":
        return f"input {i}: {key[1].__name__} == {key[2]!r}"
    return f"input {i}: the same object (id {key[1]})"


def _module_line(module_state: tuple) -> str:
    params, buffers, training = module_state
    return (f"module: the same {len(params)} parameters and {len(buffers)} buffers; "
            f"training flags {list(training)}")


def build_guards(spec: Any, flat: list[Any], state: tuple, module: Any = None) -> GuardSet:
    return GuardSet(spec, tuple(_leaf_key(v) for v in flat), state, _module_state(module))


def call_guard(guards: GuardSet, n_args: int, module: Any,
               constants: list[Tensor]) -> Callable[[tuple, tuple], bool] | None:
    """The entry's generated call guard (Note: the call guard): `guard(args, state)` is True
    only when a call with these positional arguments (and no keyword ones) in the global
    `state` passes `guards.check` with `constants` keeping their `requires_grad`. None when
    the arguments are not `n_args` leaves in order."""
    from pyaten.utils import _pytree

    leaves = guards.leaves
    if isinstance(guards, DynamicGuardSet) or len(leaves) != n_args or \
            _pytree.tree_flatten((tuple(range(n_args)), {}))[1] != guards.spec or \
            module is not None and _module_state(module) != guards.module_state:
        return None  # (a module the capture run changed: its registries are not the guards')
    names = ", ".join(f"a{i}" for i in range(n_args))
    space: dict[str, Any] = {}

    def const(value: Any) -> str:
        name = f"k{len(space)}"
        space[name] = value
        return name

    tests = ["state != " + const(guards.state), f"len(args) != {n_args}"]
    lines = [f"    {names}{',' if n_args == 1 else ''} = args"] if n_args else []
    for i, key in enumerate(leaves):
        a = f"a{i}"
        if key[0] == "tensor":
            _, kind, shape, stride, dtype, device, requires_grad = key
            lines.append(
                f"    if {a}.__class__ is not {const(kind)} or {a}._sizes != {shape!r} or "
                f"{a}._strides != {stride!r} or {a}._dtype is not {const(dtype)} or "
                f"{a}._device != {const(device)}:\n        return False")
            lines.append(_requires_grad_test(a, requires_grad))
        elif key[0] == "value":
            lines.append(f"    if {a}.__class__ is not {const(key[1])} or "
                         f"{a} != {const(key[2])}:\n        return False")
        else:
            lines.append(f"    if id({a}) != {key[1]}:\n        return False")
    for c in constants:
        lines.append(_requires_grad_test(const(c), c.requires_grad))
    if module is not None:
        seen: set[int] = set()
        for _, m in module.named_modules():
            if id(m) in seen:
                continue
            seen.add(id(m))
            name = const(m)
            lines.append(f"    if {name}.training is not {m.training!r}:\n        return False")
            for registry in ("_parameters", "_buffers", "_modules"):
                table = getattr(m, registry)
                if not table:  # the common empty registry: no list built
                    lines.append(f"    if {name}.{registry}:\n        return False")
                    continue
                same = [f"[*{name}.{registry}] != {list(table)!r}"]
                same += [f"id({name}.{registry}[{key!r}]) != {id(value)}"
                         for key, value in table.items()]
                lines.append(f"    if {' or '.join(same)}:\n        return False")
    source = "\n".join([f"def guard(args, state):\n    if {' or '.join(tests)}:\n"
                        "        return False", *lines, "    return True\n"])
    exec(compile(source, "<pyaten._dynamo call guard>", "exec"), space)  # noqa: S102
    guard = space["guard"]
    guard.source = source
    return guard


def _requires_grad_test(name: str, expected: bool) -> str:
    """The line that leaves the guard when `name.requires_grad` is not `expected`, reading
    the field first (the property only for a view made under no_grad)."""
    if expected:
        return (f"    if not {name}._requires_grad and not {name}.requires_grad:\n"
                "        return False")
    return (f"    if {name}._requires_grad or {name}._view_creation is not None and "
            f"{name}.requires_grad:\n        return False")


def _dynamic_key(t: Tensor) -> tuple:
    return ("tensor", type(t), t.dim(), t.dtype, t.device, t.requires_grad)


@dataclass(frozen=True)
class DynamicGuardSet(GuardSet):
    """The guards of a dynamic capture (pyaten/_dynamo/symbolic_capture.py): for a tensor
    input its type, rank, dtype, device and `requires_grad`, and its sizes and strides
    through the ShapeEnv (each equal to its expression, every recorded guard holding);
    everything else as `GuardSet`."""

    fakes: tuple = ()  # per flattened argument: its FakeTensor, or None
    shape_env: Any = None
    fast: Any = None  # (guard count it was built for, its compiled check)

    def check(self, spec: Any, flat: list[Any], state: tuple,
              module: Any = None) -> str | None:
        if state == self.state and spec == self.spec and self._fast_check(flat) and (
                module is None or _module_state(module) == self.module_state):
            return None
        return self._check(spec, flat, state, module)

    def _fast_check(self, flat: list[Any]) -> bool:
        """The common case in one generated expression (ShapeEnv.compile_check)."""
        fast = self.fast
        if fast is None or fast[0] != len(self.shape_env.guards):
            expected: list[Any] = []
            for fake in self.fakes:
                if isinstance(fake, Tensor):
                    expected += list(fake._sizes) + list(fake._strides)
                elif fake is not None:  # a symbolic int argument
                    expected.append(fake)
            fast = (len(self.shape_env.guards), self.shape_env.compile_check(expected))
            object.__setattr__(self, "fast", fast)
        values: list[int] = []
        for value, expected, fake in zip(flat, self.leaves, self.fakes):
            if fake is None:
                if _leaf_key(value) != expected:
                    return False
            elif not isinstance(fake, Tensor):
                if value.__class__ is not int:
                    return False
                values.append(value)
            elif not isinstance(value, Tensor) or _dynamic_key(value) != expected:
                return False
            else:
                values += value.shape
                values += value.stride()
        return bool(fast[1](values))

    def _check(self, spec: Any, flat: list[Any], state: tuple,
               module: Any = None) -> str | None:
        if state != self.state:
            return GuardSet.check(self, spec, flat, state, module)
        if spec != self.spec or len(flat) != len(self.leaves):
            return "the structure of the arguments changed"
        pairs: list[tuple[Any, int]] = []
        for i, (value, expected, fake) in enumerate(zip(flat, self.leaves, self.fakes)):
            if fake is None:
                got = _leaf_key(value)
                if got != expected:
                    return _describe(i, expected, got)
                continue
            if not isinstance(fake, Tensor):  # a symbolic int argument
                if value.__class__ is not int:
                    return f"input {i}: expected an int, got {_kind(_leaf_key(value))}"
                pairs.append((fake, value))
                continue
            if not isinstance(value, Tensor):
                return f"input {i}: expected a tensor, got {_kind(_leaf_key(value))}"
            got = _dynamic_key(value)
            if got != expected:
                names = ("type", "dim", "dtype", "device", "requires_grad")
                for name, a, b in zip(names, expected[1:], got[1:]):
                    if a != b:
                        return f"tensor input {i}: {name} mismatch, expected {a}, actual {b}"
            pairs += zip(fake._sizes, value.shape)
            pairs += zip(fake._strides, value.stride())
        why = self.shape_env.check(pairs)
        if why is not None:
            return why
        if module is not None and _module_state(module) != self.module_state:
            return _describe_module(self.module_state, _module_state(module))
        return None

    def describe(self) -> list[str]:
        lines = [f"grad mode is {'enabled' if self.grad_enabled else 'disabled'}"]
        if self.state[1]:
            lines.append(f"CPU autocast to {self.state[2]}")
        for i, (key, fake) in enumerate(zip(self.leaves, self.fakes)):
            if fake is None:
                lines.append(_leaf_line(i, key))
                continue
            if not isinstance(fake, Tensor):
                lines.append(f"input {i}: int == {fake}")
                continue
            _, kind, _, dtype, device, requires_grad = key
            lines.append(f"input {i}: {kind.__name__} size={list(fake.shape)} "
                         f"stride={list(fake.stride())} dtype={dtype} device={device} "
                         f"requires_grad={requires_grad}")
        lines += [f"shape: {g}" for g in self.shape_env.format_guards()]
        if self.module_state:
            lines.append(_module_line(self.module_state))
        return lines


def build_dynamic_guards(spec: Any, flat: list[Any], state: tuple, module: Any,
                         fakes: list[Any], shape_env: Any) -> DynamicGuardSet:
    leaves = tuple(_leaf_key(v) if fake is None else _dynamic_key(v)
                   if isinstance(fake, Tensor) else ("symint", int)
                   for v, fake in zip(flat, fakes))
    return DynamicGuardSet(spec, leaves, state, _module_state(module), tuple(fakes), shape_env)


def _describe(i: int, expected: tuple, got: tuple) -> str:
    where = f"input {i}"
    if expected[0] != got[0] or expected[0] != "tensor":
        if expected[0] == got[0] == "value":
            return f"{where}: expected {expected[2]!r}, got {got[2]!r}"
        return f"{where}: expected {_kind(expected)}, got {_kind(got)}"
    names = ("type", "size", "stride", "dtype", "device", "requires_grad")
    for name, a, b in zip(names, expected[1:], got[1:]):
        if a != b:
            if name in ("size", "stride"):
                return f"tensor {where}: {name} mismatch, expected {list(a)}, actual {list(b)}"
            return f"tensor {where}: {name} mismatch, expected {a}, actual {b}"
    return f"{where} changed"


def _kind(key: tuple) -> str:
    if key[0] == "tensor":
        return "a tensor"
    if key[0] == "value":
        return repr(key[2])
    return "another object"


def _describe_module(expected: tuple, got: tuple) -> str:
    if expected[2] != got[2]:
        return "module training flag changed"
    if expected[0] != got[0]:
        return "module parameters changed (a parameter was replaced or added)"
    return "module buffers changed"
