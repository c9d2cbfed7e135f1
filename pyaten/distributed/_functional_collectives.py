"""Functional collectives: `all_reduce(t, "sum", group)` returns a new tensor, as
`torch.distributed._functional_collectives` does.

They are the `_c10d_functional` operators (PyTorch 2.13's schemas), so capture sees each as
one graph node with a Meta kernel for its shape; the CPU kernels run the collective on a copy
and wait for it, which makes `wait_tensor` the identity here.
"""

from __future__ import annotations

from typing import Any

from pyaten.distributed import distributed_c10d as c10d
from pyaten.distributed._types import as_red_op
from pyaten.library import Library

__all__ = ["all_reduce", "all_gather_tensor", "reduce_scatter_tensor", "wait_tensor",
           "broadcast", "all_to_all_single"]  # fmt: skip

_SCHEMAS = {
    "all_reduce": "(Tensor input, str reduce_op, Any group_name) -> Tensor",
    "all_gather_into_tensor": "(Tensor input, int group_size, Any group_name) -> Tensor",
    "reduce_scatter_tensor": "(Tensor input, str reduce_op, int group_size, Any group_name) "
    "-> Tensor",
    "wait_tensor": "(Tensor tensor) -> Tensor",
    "broadcast": "(Tensor input, int src, Any group_name) -> Tensor",
    "all_to_all_single": "(Tensor input, SymInt[] output_split_sizes, SymInt[] "
    "input_split_sizes, Any group_name) -> Tensor",
}


def _group(group_name: Any) -> Any:
    return c10d._resolve(group_name)


def _all_reduce(input: Any, reduce_op: str, group_name: Any) -> Any:
    out = input.clone()
    c10d.all_reduce(out, as_red_op(reduce_op), group=_group(group_name))
    return out


def _all_gather_into_tensor(input: Any, group_size: int, group_name: Any) -> Any:
    out = input.new_empty([input.shape[0] * group_size, *input.shape[1:]] if input.dim() else
                          [group_size])  # fmt: skip
    c10d.all_gather_into_tensor(out, input.contiguous(), group=_group(group_name))
    return out


def _reduce_scatter_tensor(input: Any, reduce_op: str, group_size: int, group_name: Any) -> Any:
    if input.shape[0] % group_size:
        raise ValueError(
            f"reduce_scatter_tensor: input dim 0 ({input.shape[0]}) must be divisible by the "
            f"group size {group_size}"
        )
    out = input.new_empty([input.shape[0] // group_size, *input.shape[1:]])
    c10d.reduce_scatter_tensor(out, input.contiguous(), as_red_op(reduce_op),
                               group=_group(group_name))  # fmt: skip
    return out


def _wait_tensor(tensor: Any) -> Any:
    return tensor


def _broadcast(input: Any, src: int, group_name: Any) -> Any:
    out = input.clone()
    c10d.broadcast(out, src, group=_group(group_name))
    return out


def _all_to_all_single(input: Any, output_split_sizes: Any, input_split_sizes: Any,
                       group_name: Any) -> Any:  # fmt: skip
    rows = sum(output_split_sizes) if output_split_sizes else input.shape[0]
    out = input.new_empty([rows, *input.shape[1:]])
    c10d.all_to_all_single(out, input.contiguous(), list(output_split_sizes),
                           list(input_split_sizes), group=_group(group_name))  # fmt: skip
    return out


def _meta_all_gather(input: Any, group_size: int, group_name: Any) -> Any:
    return input.new_empty([input.shape[0] * group_size, *input.shape[1:]] if input.dim() else
                           [group_size])  # fmt: skip


def _meta_reduce_scatter(input: Any, reduce_op: str, group_size: int, group_name: Any) -> Any:
    return input.new_empty([input.shape[0] // group_size, *input.shape[1:]])


def _meta_all_to_all(input: Any, output_split_sizes: Any, input_split_sizes: Any,
                     group_name: Any) -> Any:  # fmt: skip
    rows = sum(output_split_sizes) if output_split_sizes else input.shape[0]
    return input.new_empty([rows, *input.shape[1:]])


_CPU = {"all_reduce": _all_reduce, "all_gather_into_tensor": _all_gather_into_tensor,
        "reduce_scatter_tensor": _reduce_scatter_tensor, "wait_tensor": _wait_tensor,
        "broadcast": _broadcast, "all_to_all_single": _all_to_all_single}  # fmt: skip
_META = {"all_reduce": lambda input, *a: input.new_empty(input.shape),
         "all_gather_into_tensor": _meta_all_gather,
         "reduce_scatter_tensor": _meta_reduce_scatter, "wait_tensor": _wait_tensor,
         "broadcast": lambda input, *a: input.new_empty(input.shape),
         "all_to_all_single": _meta_all_to_all}  # fmt: skip

_LIBRARY = Library("_c10d_functional", "FRAGMENT")
for _name, _rest in _SCHEMAS.items():
    _LIBRARY.define(_name + _rest)
    _LIBRARY.impl(_name, _CPU[_name], "CPU")
    _LIBRARY.impl(_name, _META[_name], "Meta")


def _ops() -> Any:
    from pyaten.ops import ops

    return ops._c10d_functional


def _name(group: Any) -> Any:
    pg = c10d._resolve(group)
    return pg.group_name


def _size(group: Any) -> int:
    return c10d._resolve(group).size()


def _op(reduce_op: Any) -> str:
    return reduce_op if isinstance(reduce_op, str) else as_red_op(reduce_op).name.lower()


def all_reduce(self: Any, reduceOp: Any, group: Any, tag: str = "") -> Any:  # noqa: N803
    """A new tensor: `self` reduced across `group`."""
    return _ops().all_reduce.default(self, _op(reduceOp), _name(group))


def all_gather_tensor(self: Any, gather_dim: int, group: Any, tag: str = "") -> Any:
    """A new tensor: every rank's `self` concatenated along `gather_dim`."""
    out = _ops().all_gather_into_tensor.default(self.contiguous(), _size(group), _name(group))
    if gather_dim != 0:
        from pyaten.ops import ops

        out = ops.aten.cat.default(list(out.chunk(_size(group), 0)), gather_dim)
    return out


def reduce_scatter_tensor(self: Any, reduceOp: Any, scatter_dim: int, group: Any,  # noqa: N803
                          tag: str = "") -> Any:  # fmt: skip
    """A new tensor: this rank's block of `self` along `scatter_dim`, reduced across `group`."""
    size = _size(group)
    if scatter_dim != 0:
        from pyaten.ops import ops

        self = ops.aten.cat.default(list(self.chunk(size, scatter_dim)), 0)
    return _ops().reduce_scatter_tensor.default(self, _op(reduceOp), size, _name(group))


def wait_tensor(tensor: Any) -> Any:
    return _ops().wait_tensor.default(tensor)


def broadcast(self: Any, src: int, group: Any, tag: str = "") -> Any:
    return _ops().broadcast.default(self, src, _name(group))


def all_to_all_single(self: Any, output_split_sizes: Any, input_split_sizes: Any, group: Any,
                      tag: str = "") -> Any:  # fmt: skip
    outputs, inputs = list(output_split_sizes or []), list(input_split_sizes or [])
    return _ops().all_to_all_single.default(self, outputs, inputs, _name(group))
