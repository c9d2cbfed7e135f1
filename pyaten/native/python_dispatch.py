"""The Python key's handler: an operator call handed to `__torch_dispatch__`.

`pyaten.dispatch.python_key` owns the mode stack and the fallback (Note: the Python key);
this module turns the call into what a handler receives and checks what it returns:
- `func` is the operator's `OpOverload` (`pyaten.ops.aten.add.Tensor`, the same object
  each time, so handlers may compare with `is` or key dicts by it);
- `args` holds the arguments before the first keyword-only one, trailing ones equal to their
  defaults left out; `kwargs` the keyword-only ones that differ from their defaults; numbers
  the binding wrapped into tensors (`a * 2`) come back as Python numbers; lists as lists
  (PyTorch's `parseIValuesToPyArgsKwargs`);
- `types` the classes of the tensor arguments that define `__torch_dispatch__`, each once,
  subclasses before their parents.
The innermost mode is asked first (with itself popped), then each of those classes, until
one returns something other than NotImplemented.
"""

from __future__ import annotations

from typing import Any

from pyaten.core.tensor import Tensor
from pyaten.dispatch import python_key, trace
from pyaten.native.ops_handles import OpOverload, ops
from pyaten.schema.model import NO_DEFAULT

__all__ = ["overload_of", "python_arguments", "dispatch_types", "handle"]


def overload_of(entry: Any) -> OpOverload:
    """The `OpOverload` handle of an operator entry (cached on the entry)."""
    handle = entry.__dict__.get("_python_overload")
    if handle is None:
        ns, _, rest = entry.name.partition("::")
        name, _, overload = rest.partition(".")
        handle = getattr(getattr(getattr(ops, ns), name), overload or "default")
        entry._python_overload = handle
    return handle


def _split_point(schema: Any) -> int:
    arguments = schema.arguments
    start = len(arguments)
    while start > 0 and (arguments[start - 1].kwarg_only or arguments[start - 1].is_out):
        start -= 1
    return start


def _is_default(arg: Any, value: Any) -> bool:
    default = arg.default
    if default is NO_DEFAULT:
        return False
    if default is None or value is None:
        return default is None and value is None
    if isinstance(value, Tensor):
        return False
    if isinstance(value, (list, tuple)):
        if isinstance(default, (list, tuple)):
            return list(value) == list(default)
        return all(v == default for v in value)  # `int[2] stride=1` means [1, 1]
    return type(value) is type(default) and value == default


def _to_python(value: Any) -> Any:
    if isinstance(value, Tensor):
        if value._wrapped_number:
            symbolic = value.__dict__.get("_symbolic_value")  # a size stays symbolic
            return value._numpy().item() if symbolic is None else symbolic
        return value
    if isinstance(value, tuple):
        return [_to_python(v) for v in value]
    if isinstance(value, list):
        return [_to_python(v) for v in value]
    return value


def python_arguments(entry: Any, values: tuple) -> tuple[tuple, dict[str, Any]]:
    """Schema-ordered values as the `(args, kwargs)` a `__torch_dispatch__` handler sees."""
    plan = entry.__dict__.get("_python_arguments")
    if plan is None:
        plan = entry._python_arguments = (entry.schema.arguments, _split_point(entry.schema))
    arguments, split = plan
    end = split
    while end > 0 and end <= len(values) and _is_default(arguments[end - 1], values[end - 1]):
        end -= 1
    args = tuple(_to_python(v) for v in values[:end])
    kwargs = {}
    for i in range(split, min(len(arguments), len(values))):
        if not _is_default(arguments[i], values[i]):
            kwargs[arguments[i].name] = _to_python(values[i])
    return args, kwargs


def dispatch_types(values: tuple) -> list[type]:
    """Classes of the tensor arguments that carry the Python key, subclasses first."""
    found: list[type] = []
    for value in values:
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if isinstance(item, Tensor) and item._keyset & python_key.PYTHON_BIT:
                cls = type(item)
                if cls in found:
                    continue
                # A subclass goes before the first of its parents already listed.
                for i, other in enumerate(found):
                    if issubclass(cls, other):
                        found.insert(i, cls)
                        break
                else:
                    found.append(cls)
    return found


def _check_result(entry: Any, result: Any) -> Any:
    returns = entry.schema.returns
    if len(returns) == 1:
        type_ = returns[0].type
        if str(type_) == "Tensor" and not isinstance(result, Tensor):
            raise RuntimeError(f"Unable to cast {result!r} to Tensor")
        return result
    if len(returns) > 1:
        if not isinstance(result, (tuple, list)):
            raise RuntimeError(
                f"Object of type '{type(result).__name__}' is not an instance of 'sequence'"
            )
        if len(result) != len(returns):
            raise RuntimeError(
                f"{entry.name}: __torch_dispatch__ returned {len(result)} values, the schema "
                f"returns {len(returns)}"
            )
        return tuple(result)
    return result


def handle(entry: Any, values: tuple) -> Any:
    """Run the innermost mode's `__torch_dispatch__`, else the subclasses' (see the module
    docstring); TypeError when every handler returns NotImplemented."""
    func = overload_of(entry)
    args, kwargs = python_arguments(entry, values)
    classes = dispatch_types(values)
    types = tuple(classes)
    tried: list[str] = []
    if trace.ACTIVE:  # explain/trace show who handles the call
        modes = [type(m).__name__ for m in python_key.mode_stack()]
        trace.note(
            "python dispatch",
            modes=" > ".join(modes) if modes else "none",
            subclasses=", ".join(c.__name__ for c in classes) or "none",
            handler=f"mode {modes[-1]}" if modes else f"subclass {classes[0].__name__}"
            if classes else "none",
        )
    if python_key.stack_len():
        mode = python_key.pop_mode()  # the handler runs with its mode popped
        try:
            kernel = func.mode_kernel(type(mode))  # a `py_impl` for this mode's class
            if kernel is not None:
                result = kernel(mode, *args, **kwargs)
            else:
                result = mode.__torch_dispatch__(func, types, args, kwargs)
        finally:
            python_key.push_mode(mode)
        if result is not NotImplemented:
            return _check_result(entry, result)
        tried.append(f"mode object {mode!r}")
    for cls in classes:
        result = cls.__torch_dispatch__(func, types, args, kwargs)
        if result is not NotImplemented:
            return _check_result(entry, result)
        tried.append(f"tensor subclass {cls!r}")
    if not tried:
        raise RuntimeError(
            f"{entry.name}: reached the Python key, but no mode is active and no argument is a "
            "tensor subclass with __torch_dispatch__"
        )
    listed = "\n".join(f"  - {t}" for t in tried)
    raise TypeError(
        f"Multiple dispatch failed for 'pyaten._ops.{func}'; all __torch_dispatch__ handlers "
        f"returned NotImplemented:\n\n{listed}\n\n"
        "For more information, try re-running with TORCH_LOGS=not_implemented"
    )


python_key.set_handler(handle)
