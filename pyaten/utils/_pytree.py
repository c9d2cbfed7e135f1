"""Pytrees: nested containers flattened to leaves and rebuilt (PyTorch's `torch.utils._pytree`).

Tuples, lists, dicts (insertion order), named tuples, OrderedDicts, defaultdicts and deques
are nodes; everything else is a leaf unless registered with `register_pytree_node`. A
`TreeSpec` records a tree's shape, so `tree_unflatten(tree_flatten(t)[0], spec)` rebuilds it.
Subclass authors and transforms (`__torch_dispatch__`, vmap, capture) map over arguments
with `tree_map`.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

__all__ = [
    "TreeSpec",
    "LeafSpec",
    "SUPPORTED_NODES",
    "register_pytree_node",
    "tree_flatten",
    "tree_unflatten",
    "tree_leaves",
    "tree_structure",
    "tree_map",
    "tree_map_",
    "tree_map_only",
    "tree_all",
    "tree_any",
    "tree_all_only",
    "tree_any_only",
    "tree_is_leaf",
]


class NodeDef(NamedTuple):
    type: type
    flatten_fn: Callable[[Any], tuple[list[Any], Any]]
    unflatten_fn: Callable[[Iterable[Any], Any], Any]


SUPPORTED_NODES: dict[type, NodeDef] = {}


def register_pytree_node(
    cls: type,
    flatten_fn: Callable[[Any], tuple[list[Any], Any]],
    unflatten_fn: Callable[[Iterable[Any], Any], Any],
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context: Any = None,
    from_dumpable_context: Any = None,
    flatten_with_keys_fn: Any = None,
) -> None:
    """Make `cls` a node: `flatten_fn(x) -> (children, context)`,
    `unflatten_fn(children, context) -> x`."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and hasattr(cls, "_fields") and hasattr(cls, "_make")


def _node_type(tree: Any) -> type:
    cls = type(tree)
    if cls not in SUPPORTED_NODES and _is_namedtuple(cls):
        return _NamedTupleNode
    return cls


class _NamedTupleNode:
    """Stands for every named tuple class (the class itself is the context)."""


register_pytree_node(tuple, lambda t: (list(t), None), lambda c, _: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda c, _: list(c))
register_pytree_node(
    dict, lambda d: (list(d.values()), list(d.keys())), lambda c, keys: dict(zip(keys, c))
)
register_pytree_node(
    _NamedTupleNode, lambda t: (list(t), type(t)), lambda c, cls: cls(*c)
)
register_pytree_node(
    collections.OrderedDict,
    lambda d: (list(d.values()), list(d.keys())),
    lambda c, keys: collections.OrderedDict(zip(keys, c)),
)
register_pytree_node(
    collections.defaultdict,
    lambda d: (list(d.values()), (d.default_factory, list(d.keys()))),
    lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c)),
)
register_pytree_node(
    collections.deque,
    lambda d: (list(d), d.maxlen),
    lambda c, maxlen: collections.deque(c, maxlen=maxlen),
)


@dataclasses.dataclass(frozen=True)
class TreeSpec:
    """The shape of a pytree: a node's type and context, and its children's specs."""

    type: Any
    context: Any
    children_specs: list[TreeSpec]

    @property
    def num_leaves(self) -> int:
        return sum(c.num_leaves for c in self.children_specs)

    @property
    def num_children(self) -> int:
        return len(self.children_specs)

    def is_leaf(self) -> bool:
        return False

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        return tree_unflatten(leaves, self)

    def __repr__(self) -> str:
        name = self.type.__name__ if isinstance(self.type, type) else str(self.type)
        children = ", ".join(repr(c) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context!r}, [{children}])"


class LeafSpec(TreeSpec):
    """The spec of one leaf (`*`)."""

    def __init__(self) -> None:
        super().__init__(None, None, [])

    @property
    def num_leaves(self) -> int:
        return 1

    def is_leaf(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "*"


_LEAF = LeafSpec()


def tree_is_leaf(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_type(tree) not in SUPPORTED_NODES


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], TreeSpec]:
    """The leaves of `tree`, left to right, and its spec."""
    leaves: list[Any] = []

    def walk(node: Any) -> TreeSpec:
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return _LEAF
        kind = _node_type(node)
        children, context = SUPPORTED_NODES[kind].flatten_fn(node)
        return TreeSpec(kind, context, [walk(c) for c in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> Any:
    """Rebuild a tree of `treespec`'s shape from its leaves."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(
            f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of "
            f"TreeSpec but got item of type {type(treespec)}."
        )
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(
            f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec "
            f"refers to a pytree that holds {treespec.num_leaves} items ({treespec})."
        )
    position = iter(leaves)

    def build(spec: TreeSpec) -> Any:
        if spec.is_leaf():
            return next(position)
        children = [build(c) for c in spec.children_specs]
        return SUPPORTED_NODES[spec.type].unflatten_fn(children, spec.context)

    return build(treespec)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: Any, *rests: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """`tree` with `func` applied to each leaf (and the matching leaves of `rests`)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec_leaves(r, spec, is_leaf) for r in rests]
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others)], spec)


def spec_leaves(tree: Any, spec: TreeSpec, is_leaf: Callable[[Any], bool] | None) -> list:
    leaves, other = tree_flatten(tree, is_leaf)
    if other != spec:
        raise ValueError(f"Tree structure mismatch: {other} vs {spec}")
    return leaves


def tree_map_(func: Callable[..., Any], tree: Any, *rests: Any,
              is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Call `func` on each leaf for its effect; return `tree`."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec_leaves(r, spec, is_leaf) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def _only(types: type | tuple[type, ...], func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def apply(x: Any) -> Any:
        return func(x) if isinstance(x, types) else x

    return apply


def tree_map_only(types: type | tuple[type, ...], func: Callable[[Any], Any], tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """`tree_map` applied only to leaves that are instances of `types`."""
    return tree_map(_only(types, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred: Callable[[Any], bool], tree: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return any(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_all_only(types: type | tuple[type, ...], pred: Callable[[Any], bool], tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, types))


def tree_any_only(types: type | tuple[type, ...], pred: Callable[[Any], bool], tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None) -> bool:
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, types))
