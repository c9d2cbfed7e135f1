"""`functional_call` and `stack_module_state`: a module run with parameters and buffers
given by the caller (torch.func), the basis of model ensembles under vmap."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pyaten

__all__ = ["functional_call", "stack_module_state"]

_MISSING = object()


def _owner(module: Any, path: str) -> tuple[Any, str]:
    *parents, leaf = path.split(".")
    owner = module
    for part in parents:
        owner = getattr(owner, part)
    return owner, leaf


def _tie(module: Any, tensors: dict[str, Any]) -> dict[str, Any]:
    """Names that share one tensor in the module take the tensor given for any of them."""
    by_id: dict[int, list[str]] = {}
    for name, t in [*module.named_parameters(remove_duplicate=False),
                    *module.named_buffers(remove_duplicate=False)]:
        by_id.setdefault(id(t), []).append(name)
    tied = dict(tensors)
    for names in by_id.values():
        given = [n for n in names if n in tensors]
        if len(given) > 1 and any(tensors[n] is not tensors[given[0]] for n in given):
            raise ValueError(
                f"functional_call got multiple values for keys {given}, which are tied. "
                "Consider using tie_weights=False"
            )
        if given:
            for n in names:
                tied.setdefault(n, tensors[given[0]])
    return tied


@contextmanager
def _swapped(module: Any, tensors: dict[str, Any], strict: bool) -> Iterator[None]:
    known = {name for name, _ in module.named_parameters(remove_duplicate=False)}
    known |= {name for name, _ in module.named_buffers(remove_duplicate=False)}
    if strict:
        missing = sorted(known - tensors.keys())
        unexpected = sorted(tensors.keys() - known)
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected))
            if missing:
                parts.append("Missing key(s): " + ", ".join(repr(k) for k in missing))
            raise RuntimeError(
                f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                + ".\n\t".join(parts) + "."
            )
    saved: list[tuple[Any, str, str, Any]] = []
    try:
        for path, tensor in tensors.items():
            owner, leaf = _owner(module, path)
            for registry in ("_parameters", "_buffers"):
                table = owner.__dict__.get(registry, {})
                if leaf in table:
                    saved.append((owner, registry, leaf, table[leaf]))
                    table[leaf] = tensor
                    break
            else:
                saved.append((owner, "", leaf, owner.__dict__.get(leaf, _MISSING)))
                object.__setattr__(owner, leaf, tensor)
        yield
    finally:
        for owner, registry, leaf, old in reversed(saved):
            if registry:
                owner.__dict__[registry][leaf] = old
            elif old is _MISSING:
                object.__delattr__(owner, leaf)
            else:
                object.__setattr__(owner, leaf, old)


def functional_call(
    module: Any,
    parameter_and_buffer_dicts: dict[str, Any] | Sequence[dict[str, Any]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Call `module(*args, **kwargs)` with its parameters and buffers replaced by those named
    in `parameter_and_buffer_dicts`; the module's own are back in place afterwards."""
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        tensors = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(
                    "Expected all elements of parameter_and_buffer_dicts to be dictionaries"
                )
            overlap = tensors.keys() & d.keys()
            if overlap:
                raise ValueError(
                    f"{sorted(overlap)} appeared in multiple dictionaries; behavior of "
                    "functional call is ambiguous"
                )
            tensors.update(d)
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but "
            f"got {type(parameter_and_buffer_dicts)}"
        )
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    if tie_weights:
        tensors = _tie(module, tensors)
    with _swapped(module, tensors, strict):
        return module(*args, **(kwargs or {}))


def stack_module_state(models: Sequence[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parameters and buffers of same-shaped `models`, each stacked along a new leading
    dimension: `(params, buffers)` for `functional_call` under `vmap`."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError(
            "stack_module_state: Expected all models to be of the same class."
        )
    training = {m.training for m in models}
    if len(training) > 1:
        raise RuntimeError(
            "stack_module_state: Expected all models to have the same training/eval mode."
        )
    params = {}
    for name, _ in models[0].named_parameters():
        members = [dict(m.named_parameters())[name] for m in models]
        stacked = pyaten.stack([p.detach() for p in members])
        params[name] = stacked.requires_grad_(all(p.requires_grad for p in members))
    buffers = {}
    for name, _ in models[0].named_buffers():
        buffers[name] = pyaten.stack([dict(m.named_buffers())[name] for m in models])
    return params, buffers
